"""A gradient's recorded sweep, replayed when f records the same operations again.

`hessian(f, x)` and `hvp` record f, then record the reverse sweep of f's gradient on the same
recording; the outer sweeps differentiate that. What the gradient's sweep records is decided by
f's recorded operations alone (primitives, their constants and keywords, shapes, dtypes, which
value feeds which, the user's lines) and by the plain values that rules derive from traced ones
(a mask, the ties of a maximum, whether a factor is finite), each of which the recording keeps as a
guard. So when f, called again at a new point (a Newton loop, a benchmark), records the same
operations with the same constants, the sweep need not be traced again: its operations run again
on the new values, every guard checked, the way `record_once` replays a whole recording.

Unlike `record_once`, f itself still runs and is recorded on every call: its side effects happen,
its branches are taken anew, and the constants it uses now are the ones compared. Anything that
differs (another branch, a changed constant or array, a different shape, dtype or error state, a
guard that no longer holds) makes the sweep be traced afresh, and that becomes the template.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

import numpy as np

from jaccli.engine import MAX_CUTS as _MAX_CUTS, MONITOR, Guard, Node, Trace, Tracer, errstate_token

from .guards import ErrstateRun, guards_hold, same

# Bytes of arrays a template may hold: f's constants (compared on every call, so this bounds the
# cost of a comparison to a few microseconds), the sweep's own constants and the guards' values.
# Past it the sweep is traced each time, as it costs little next to the arithmetic then anyway.
MAX_BYTES = 1 << 18

_LOCK = threading.Lock()
# f -> {(wrt, batch): _Template}; an entry goes when f does.
_TEMPLATES: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


_PARENT = object()  # in a step's arguments: the place of a recorded value, filled in by a replay


class _NotPlain(Exception):
    """A constant a template cannot copy and compare (an object of another kind)."""


class _At:
    """Stands for the node at `index` of a recording, in a guard's references: `_holds` reads the
    value at the index only, and the template must not keep the old node's values alive."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _plain_copy(obj: Any, budget: list) -> Any:
    """A copy nobody else holds of a constant made of arrays, numbers, slices and containers."""
    kind = type(obj)
    if kind is np.ndarray:
        if obj.dtype.kind == "O":
            raise _NotPlain
        return _layout_copy(obj, budget)
    if obj is None or obj is Ellipsis or kind in (bool, int, float, complex, str, slice, type) \
            or isinstance(obj, (np.generic, np.dtype)):
        if isinstance(obj, np.generic) and obj.dtype.kind == "O":
            raise _NotPlain
        return obj
    if kind is tuple or kind is list:
        return kind(_plain_copy(o, budget) for o in obj)
    if kind is dict:
        return {k: _plain_copy(v, budget) for k, v in obj.items()}
    raise _NotPlain


def _layout_copy(a: np.ndarray, budget: list) -> np.ndarray:
    """A copy of `a` with a's strides (a broadcast or transposed view stays one): another memory
    layout can make NumPy and BLAS take another kernel, which rounds differently from a traced sweep."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size == 0:
        budget[0] -= a.nbytes
        if budget[0] < 0:
            raise _NotPlain
        return a.copy(order="K")
    item = a.itemsize
    if any(s % item for s in a.strides):
        raise _NotPlain
    low = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0) // item
    high = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0) // item
    budget[0] -= (high - low + 1) * item
    if budget[0] < 0:
        raise _NotPlain
    out = np.lib.stride_tricks.as_strided(np.empty(high - low + 1, a.dtype)[-low:], a.shape, a.strides)
    out[...] = a  # where strides overlap (broadcast), a's entries there are equal
    if not a.flags.writeable:
        out.flags.writeable = False
    return out


def _meta(value: Any) -> Any:
    if type(value) is np.ndarray:
        return np.ndarray, value.shape, value.dtype
    if isinstance(value, tuple):  # several outputs (a named tuple: eigh, svd, ...)
        return (type(value),) + tuple(_meta(v) for v in value)
    return type(value), np.shape(value), getattr(value, "dtype", None)


class _Step:
    """One operation of f (to compare) or of the sweep (to run again)."""

    __slots__ = ("prim", "args", "kwargs", "parents", "deps", "site", "meta", "errstate")

    def __init__(self, node: Node, budget: list, compare: bool, errstate: dict | None = None) -> None:
        self.prim = node.prim
        self.parents = tuple((a, p.index, i) for a, p, i in node.parents)
        at = {a for a, _, _ in node.parents}
        self.args = tuple(_PARENT if k in at else _plain_copy(a, budget) for k, a in enumerate(node.args))
        self.kwargs = _plain_copy(node.kwargs, budget) if node.kwargs else node.kwargs
        self.deps = node.deps
        self.site = node.site
        self.meta = _meta(node.value) if compare else None
        self.errstate = errstate

    def matches(self, node: Node) -> bool:
        """Whether f recorded `node` as it recorded this step (values aside: their kinds only)."""
        if node.prim is not self.prim or node.deps != self.deps or node.site != self.site or node.in_place:
            return False
        parents = node.parents
        if len(parents) != len(self.parents):
            return False
        for (a, p, i), (b, q, j) in zip(parents, self.parents):
            if a != b or p.index != q or i != j:
                return False
        args = node.args
        if len(args) != len(self.args):
            return False
        for a, b in zip(args, self.args):
            if b is not _PARENT and a is not b and not (same(a, b) and getattr(a, "strides", None) ==
                                                        getattr(b, "strides", None)):
                return False
        if (node.kwargs or self.kwargs) and not same(node.kwargs, self.kwargs):
            return False
        return _meta(node.value) == self.meta


class _Template:
    # plans: (node count, {key: plan by index}): the sweep plans of every recording it matches (Trace.shared_plans)
    __slots__ = ("start", "ref", "shape", "f_steps", "sweep", "guards", "cuts", "returns", "token", "errstate",
                 "plans")

    def matches(self, trace: Trace, ref: tuple, shape: tuple) -> bool:
        nodes = trace.nodes
        if len(nodes) != self.start or (ref[0].index, ref[1]) != self.ref or shape != self.shape:
            return False
        token = errstate_token()
        if token is not self.token and np.geterr() != self.errstate:
            return False
        return all(step.matches(node) for step, node in zip(self.f_steps, nodes))

    def replay(self, trace: Trace) -> tuple | None:
        """The sweep's operations run on trace's new values, appended to it; None (trace unchanged)
        when a guard does not hold or an operation fails."""
        nodes = trace.nodes
        start = self.start
        everything: list = nodes + [None] * len(self.sweep)
        vals: list = [n.value for n in nodes] + [None] * len(self.sweep)
        guards, g = self.guards, 0
        largest = trace.largest
        run = ErrstateRun()
        try:
            for k, step in enumerate(self.sweep, start):
                g = guards_hold(guards, g, k, vals, run)
                if g is None:
                    return None
                run.set(step.errstate)
                args = list(step.args)
                for a, i, idx in step.parents:
                    v = vals[i]
                    args[a] = v if idx is None else v[idx]
                args = tuple(args)
                value = step.prim.impl(*args, **step.kwargs)
                node = Node(step.prim, args, step.kwargs,
                            tuple((a, everything[i], idx) for a, i, idx in step.parents), value, step.deps, step.site)
                node.index = k
                everything[k] = node
                vals[k] = value
                size = getattr(value, "size", 1)
                if type(size) is int and size > largest:
                    largest = size
            if guards_hold(guards, g, None, vals, run) is None:
                return None
        except Exception:  # noqa: BLE001 - tracing the sweep afresh reports a failure properly
            return None
        finally:
            run.close()
        trace.nodes.extend(everything[start:])
        trace.largest = largest
        for k, step in enumerate(self.sweep, start):
            if step.errstate is not None:
                trace.errstates[k] = step.errstate
        trace.cuts.extend(self.cuts[:max(0, _MAX_CUTS - len(trace.cuts))])
        trace.shared_plans = self.plans
        return tuple(np.array(r[1]) if r[0] == "const" else
                     Tracer(vals[r[1]] if r[2] is None else vals[r[1]][r[2]], everything[r[1]], r[2], trace)
                     for r in self.returns)


def _make(trace: Trace, start: int, cuts_from: int, ref: tuple, shape: tuple, returned: tuple) -> _Template | None:
    budget = [MAX_BYTES]
    nodes = trace.nodes
    try:
        if any(n.in_place for n in nodes) or any(type(n.value) is Tracer for n in nodes):
            return None
        tpl = _Template()
        tpl.start, tpl.ref, tpl.shape = start, (ref[0].index, ref[1]), shape
        tpl.f_steps = [_Step(n, budget, True) for n in nodes[:start]]
        tpl.sweep = [_Step(n, budget, False, trace.errstates.get(n.index)) for n in nodes[start:]]
        tpl.guards = [Guard(g.pos, g.fn, _plain_copy(tuple(None if any(k == i for i, _, _ in g.refs) else a
                                                               for k, a in enumerate(g.args)), budget),
                            _plain_copy(g.kwargs, budget), tuple((i, _At(n.index), idx) for i, n, idx in g.refs),
                            _plain_copy(g.expected, budget), g.errstate)
                      for g in trace.guards]
        tpl.cuts = list(trace.cuts[cuts_from:])
        returns = []
        for r in returned:
            if type(r) is Tracer:
                if r._trace is not trace:
                    return None
                returns.append(("node", r._node.index, r._idx))
            else:
                returns.append(("const", _plain_copy(r, budget)))
        tpl.returns = tuple(returns)
    except _NotPlain:  # a constant of another kind, or more bytes than MAX_BYTES
        return None
    tpl.token = errstate_token()
    tpl.errstate = np.geterr()
    tpl.plans = (len(nodes), {})
    return tpl


def _key_of(f: Callable) -> Any:
    """What f's templates are kept under: f, or for a method its function (`model.loss` is a new
    bound method at each access; what instance it has is compared as f's recorded constants are)."""
    f = getattr(f, "__func__", f)
    try:
        weakref.ref(f)
        hash(f)
    except TypeError:
        return None
    return f


def usable(trace: Trace) -> bool:
    """Whether templates apply to this recording: a plain one (not replayable: record_once has its
    own replays; nothing traced by an enclosing differentiation) with no monitor on its sweeps."""
    return trace.guards is None and not trace.outer and MONITOR.v is None \
        and all(type(n.value) is np.ndarray for n in trace.inputs)


TEMPLATE = "sweep template"  # the path (Recording.path) of a recording whose gradient was replayed

_SEEN = object()  # f's gradient was recorded once: the next recording makes a template


def gradient(f: Callable, key: Any, trace: Trace, ref: tuple, shape: tuple, sweep: Callable[[], tuple],
             said: dict | None = None) -> tuple:
    """f's gradient on `trace`: replayed from f's template when f recorded the same operations as
    when it was made, else traced by `sweep()`. `said["path"]` becomes TEMPLATE when it is replayed.

    A template is made from the second recording of f on: a function recorded once (a lambda made
    for one call, one command-line run) costs nothing more than before.
    """
    fk = _key_of(f)
    if fk is None:
        return sweep()
    with _LOCK:
        entry = _TEMPLATES.get(fk, {}).get(key)
    if entry is None:
        with _LOCK:
            _TEMPLATES.setdefault(fk, {})[key] = _SEEN
        return sweep()
    if entry is not _SEEN and entry.matches(trace, ref, shape):
        out = entry.replay(trace)
        if out is not None:
            if said is not None:
                said["path"] = TEMPLATE
            return out
    start, cuts_from = len(trace.nodes), len(trace.cuts)
    trace.guards = []
    try:
        out = sweep()
        try:
            tpl = _make(trace, start, cuts_from, ref, shape, out)
        except Exception:  # noqa: BLE001 - no template: the next call traces the sweep, as this one did
            tpl = None
    finally:
        trace.guards = None
    if tpl is not None:
        trace.shared_plans = tpl.plans  # the outer sweeps' plans, made on this recording, serve the replays
        with _LOCK:
            _TEMPLATES.setdefault(fk, {})[key] = tpl
    return out


def clear() -> None:
    """Forget every template (tests compare replayed sweeps against traced ones)."""
    with _LOCK:
        _TEMPLATES.clear()
