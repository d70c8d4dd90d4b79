"""Record a user's function once at a point, then answer any number of block sweeps over it."""

from __future__ import annotations

import copy
import linecache
import math
import re
import sys
import time
from contextlib import nullcontext
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import TracingError, UserFunctionError
from . import rules  # noqa: F401  (fills the registry)
from .freezer import COLLECTOR_PAUSED, FREEZER, Freezer, frozen_constants
from .guards import current_errstate
from .sweep_plans import plan_form, plan_reverse as _plan_reverse, renewed_plan
from .sweeps import MONITOR, forward, reverse
from .tape import ELEMENTWISE, INPUT, Node, Trace, rewritable, value_size
from .user_sites import is_internal, user_site
from .views import stale_error, write_in_place
from .seeds import dense
from .intercept import intercept_numpy
from .numpy_proxies import primal_nested
from .tape import sever
from .tracer import Tracer, holds_tracer

def as_float(x: Any) -> Any:
    """Inputs are differentiated in floating point: integers and booleans become float64. Anything
    that is not an array of real numbers is refused, rather than differentiated as something else."""
    if type(x) is Tracer:
        return x
    # numpy.ma, not np.ma: the attribute would import numpy.ma (~5 ms of the CLI's start-up), and no masked
    # array exists before it is imported.
    masked = sys.modules.get("numpy.ma")
    if masked is not None and isinstance(x, masked.MaskedArray):
        raise TypeError("a masked array is not supported as an input to differentiate: jaccli would see "
                        "the masked entries too; pass x.filled(value) or x.compressed(), or the mask as data")
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError("complex inputs are not supported by jaccli: split them into real and imaginary parts")
    if kind not in "biuf":
        what = "None" if x is None else f"an array of dtype {arr.dtype}"
        raise TypeError(f"an input to differentiate is {what}, not real numbers; pass an array of floats "
                        "(np.asarray(x, dtype=float) converts numbers held as objects or strings)")
    if kind != "f":
        return arr.astype(np.float64)
    return arr


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------
class Recording:
    """f evaluated once at `args` with the inputs in `wrt` traced.

    Attributes:
        outputs: the primal outputs (a tuple, even when f returns one array).
        out_is_tuple: whether f returned a tuple.
        inputs: the arguments as passed to f (floats; traced ones replaced by their values).
    """

    def __init__(self, f: Callable, args: Sequence[Any], wrt: Sequence[int], replayable: bool = False) -> None:
        self.trace = Trace()
        self.wrt = tuple(wrt)
        call_args = list(args)
        if replayable:
            # Data arguments as they were, for replay() to compare against; f gets copies of its
            # own, so that the recording's constants do not change when the caller's arrays do.
            self._data = _snapshot(args, self.wrt)
            self._errstate = current_errstate()
            for i, snap in self._data.items():
                if type(snap) is not _Unique:  # comparable, so copied: f gets a copy of its own too
                    call_args[i] = _private(args[i])
                # else f gets the object itself (a random Generator that f draws from, a module, a
                # file): it is never the same as the snapshot (`_same`), so every call records afresh
        else:
            self._data = None
            self.trace.guards = None  # only a replay reads guards: none are collected for nothing
            for i, a in enumerate(args):
                if type(a) is np.ndarray and i not in self.wrt:
                    # f gets a copy of an array passed as data, as it gets one of each input: the
                    # sweeps read it later, and the caller may refill it meanwhile (a minibatch buffer)
                    call_args[i] = _private(a)
        self.in_nodes = []
        for i in self.wrt:
            t = self.trace.new_input(_private_float(args[i]))
            call_args[i] = t
            self.in_nodes.append(t._node)
        self.inputs = tuple(primal_value(a, self.trace) for a in call_args)
        with COLLECTOR_PAUSED, intercept_numpy(f), frozen_constants(Freezer(keep_all=replayable)):
            out = _call_user(f, call_args)
        self.out_is_tuple, outs, self.out_refs = _outputs(out, self.trace)
        self.outputs = tuple(o if r is None else o._value for o, r in zip(outs, self.out_refs))
        self._live = tuple(r is not None for r in self.out_refs)  # which outputs a sweep can reach
        self._outs_at = tuple(None if r is None else (r[0].index, r[1]) for r in self.out_refs)
        self.sweeps = 0
        # Constant outputs as recorded, for replays to hand out copies of (the caller owns these).
        self._consts = tuple(None if r is not None else _private(v) for r, v in zip(self.out_refs, self.outputs)) \
            if replayable else ()
        # Closed: what a later sweep computes is not part of this recording.
        self.guards = self.trace.guards if replayable else None
        self.trace.guards = None
        self.kept: dict[str, tuple] = {}
        self._traced_constants: bool | None = None  # computed by the first replay
        # What the structure and shapes alone decide, shared with the replays (the tape is closed):
        # (output, input) -> elementwise(), ("prims", names) -> records(), shared()'s values
        self._structure: dict[tuple, Any] = {}
        # A replayable recording's compiled sweeps, shared with its replays (engine/programs.py):
        # request -> Program, or False where the sweep cannot be one. A replay records them.
        self._programs: dict | None = {} if replayable else None
        self._replayed = False
        # ... and its replays' compiled form (engine/replayed.py): [Forward, None if not made yet,
        # or False where a replay runs node by node]
        self._forward: list | None = [None] if replayable else None

    def __getattr__(self, name: str) -> Any:
        # A replay's nodes are made when first read (engine/replayed.py): so are these lists of them.
        if name in ("in_nodes", "out_refs") and "_forward" in self.__dict__:
            fw = self._forward[0]
            nodes = self.trace.nodes
            self.in_nodes = [nodes[k] for k in fw.in_at]
            self.out_refs = [None if at is None else (nodes[at[0]], at[1]) for at in self._outs_at]
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def detach(self) -> None:
        """Make plain every value that an enclosing differentiation traces (``create_graph=False``).

        f may close over a variable of a function that is itself being differentiated; then its
        operations took traced values, and sweeps over them would carry that outer derivative.
        Without create_graph a result carries none (torch's rule, as for traced arguments): the
        recorded values become their plain values. A replay of this recording stays refused, as
        for any recording that took another recording's traced values.
        """
        self._has_traced_constants()
        site = user_site()
        for node in self.trace.nodes:
            sever((node.args, tuple(node.kwargs.values())), site, own=self.trace)
        for node in self.trace.nodes:
            node.value = primal_nested(node.value)
            node.args = tuple(primal_nested(a) for a in node.args)
            if node.kwargs:
                node.kwargs = {k: primal_nested(v) for k, v in node.kwargs.items()}
        self.outputs = primal_nested(self.outputs)
        self.kept = {name: (ref[0], primal_nested(ref[1])) if ref[0] == "const" else ref
                     for name, ref in self.kept.items()}

    def keep(self, name: str, value: Any) -> None:
        """Remember a value that f's recording produced (traced here or constant), for `kept`."""
        while type(value) is Tracer and value._trace is not self.trace:
            value = value._value
        if type(value) is Tracer:
            self.kept[name] = ("node", value._node.index, value._idx)
        else:
            self.kept[name] = ("const", value)

    def kept_value(self, name: str) -> Any:
        ref = self.kept[name]
        if ref[0] == "const":
            return _private(ref[1])
        value = self.trace.value_at(ref[1])
        return value if ref[2] is None else value[ref[2]]

    def replay(self, args: Sequence[Any]) -> "Recording | None":
        """The same recording at new values of the traced inputs, without calling f; None if it can't be.

        A replay runs each recorded operation again on the new values and checks every guard
        (the plain results that f or a rule derived from traced values: comparisons, masks,
        branches, permutations) where it was taken. It returns None, and the caller records f
        afresh, when a traced input changed shape or dtype, a data argument changed, a guard
        gives a different result, or an operation fails: the fresh recording then takes the
        branch f takes and reports errors as usual. Constants that f captured (globals,
        closures, random draws) are replayed as they were recorded.
        """
        if self.guards is None or len(args) != len(self.inputs) or current_errstate() != self._errstate:
            return None
        new_in = []
        try:
            for i in self.wrt:
                a = args[i]
                if type(a) is Tracer:
                    return None
                a = _private_float(a)
                old = self.inputs[i]
                if a.shape != old.shape or a.dtype != old.dtype:
                    return None
                new_in.append(a)
            for i, snap in self._data.items():
                if not _same(args[i], snap):
                    return None
        except Exception:  # noqa: BLE001 - an argument that cannot be read or compared: record afresh
            return None
        if self._has_traced_constants():
            return None
        fw = self._forward[0]
        if fw is None:
            try:
                fw = replayed.compile_forward(self.trace, self.guards, self.in_nodes) or False
            except Exception:  # noqa: BLE001 - a recording that cannot be written out replays node by node
                fw = False
            self._forward[0] = fw
        if fw is False:
            return self._replay_nodes(args, new_in)
        with _pause_for(self.trace):
            vals = fw.values(new_in)
        if vals is None:
            return None
        return self._replayed_as(replayed.ReplayTrace(vals, fw, self.trace), args, [vals[k] for k in fw.in_at], vals)

    def _replay_nodes(self, args: Sequence[Any], new_in: list) -> "Recording | None":
        """replay() node by node, for a recording whose replay writes in place as f did."""
        new_in = {node.index: a for node, a in zip(self.in_nodes, new_in)}
        errstates = self.trace.errstates
        old_nodes = self.trace.nodes
        trace = Trace()
        trace.guards = None
        vals: list = [None] * len(old_nodes)
        nodes: list = [None] * len(old_nodes)
        guards, g = self.guards, 0
        largest = 1
        pause = _pause_for(self.trace)
        pause.__enter__()
        run = ErrstateRun()
        try:
            # under the caller's error state, as when f was recorded (checked above), or the one
            # an operation was recorded under (f's own np.errstate blocks, a sweep's)
            for k, node in enumerate(old_nodes):
                g = guards_hold(guards, g, k, vals, run)
                if g is None:
                    return None
                run.set(errstates.get(k))
                if node.prim is INPUT:
                    value, finite = new_in.get(k, node.value), None
                    args_k = ()
                else:
                    args_k = _substituted(node.args, node.parents, vals) if node.parents else node.args
                    written = nodes[node.parents[0][1].index] if node.in_place else None
                    if written is not None and rewritable(written):
                        # written into its argument's memory when recorded: again, so that a loop
                        # of y[i] = v keeps one array in the replay too
                        value, finite = write_in_place(node.prim, written, args_k, node.kwargs, trace.nonfinite)
                    else:
                        value, finite = node.prim.impl(*args_k, **node.kwargs), None
                new = Node(node.prim, args_k, node.kwargs,
                           tuple((a, nodes[p.index], i) for a, p, i in node.parents), value, node.deps, node.site)
                new.index = k
                if finite is not None:
                    new.in_place, new.finite = True, finite
                nodes[k] = new
                vals[k] = value
                size = getattr(value, "size", 1)
                if type(size) is int and size > largest:
                    largest = size
            if guards_hold(guards, g, None, vals, run) is None:
                return None
        except Exception:  # noqa: BLE001 - recording f afresh reports the failure properly
            return None
        finally:
            run.close()
            pause.__exit__(None, None, None)
        trace.nodes = nodes
        trace.errstates = errstates
        trace.inputs = [nodes[n.index] for n in self.trace.inputs]
        trace.largest = largest
        trace.cuts = self.trace.cuts  # the same structure: the same operations cut the same inputs
        # The sweep plans depend on the structure only: the same nodes, renewed. (A copy: a sweep in
        # another thread may be adding a plan to this recording's trace meanwhile.)
        for key, plan in self.trace._plans.copy().items():
            trace._plans[key] = renewed_plan(plan_form(plan), nodes)
        rec = self._replayed_as(trace, args, [nodes[n.index].value for n in self.in_nodes], vals)
        rec.in_nodes = [nodes[n.index] for n in self.in_nodes]
        rec.out_refs = [None if r is None else (nodes[r[0].index], r[1]) for r in self.out_refs]
        return rec

    def _replayed_as(self, trace: Trace, args: Sequence[Any], in_values: list, vals: list) -> "Recording":
        """The replay with `trace` (its nodes' values `vals`; `in_values`: the inputs' in `wrt` order)."""
        rec = object.__new__(Recording)
        rec.trace = trace
        rec.wrt = self.wrt
        inputs = list(args)
        for i, value in zip(self.wrt, in_values):
            inputs[i] = value
        rec.inputs = tuple(inputs)
        rec.out_is_tuple = self.out_is_tuple
        rec.outputs = tuple(_private(c) if at is None else vals[at[0]] if at[1] is None else vals[at[0]][at[1]]
                            for c, at in zip(self._consts, self._outs_at))
        rec._outs_at = self._outs_at
        rec._live = self._live
        rec._consts = self._consts
        rec.sweeps = 0
        rec.guards = self.guards
        rec.kept = self.kept
        rec._data = self._data
        rec._errstate = self._errstate
        rec._traced_constants = False
        rec._structure = self._structure  # the same structure and sizes: the same answers
        rec._programs = self._programs
        rec._forward = self._forward
        rec._replayed = True
        return rec

    def _has_traced_constants(self) -> bool:
        """Whether a recorded operation took a traced value of another recording as a constant."""
        if self._traced_constants is None:
            self._traced_constants = any(
                type(a) is Tracer for node in self.trace.nodes for a in node.args) or any(
                type(v) is Tracer for node in self.trace.nodes for v in node.kwargs.values())
        return self._traced_constants

    def out_shape(self, i: int) -> tuple:
        return np.shape(self.outputs[i])

    def in_shape(self, j: int) -> tuple:
        return np.shape(self.inputs[self.wrt[j]])

    def connected(self, i: int, j: int) -> bool:
        """Whether output i structurally depends on differentiated input j (a path in the tape)."""
        ref = self.out_refs[i]
        return ref is not None and bool(ref[0].deps & self.in_nodes[j].deps)

    def cut(self, j: int) -> tuple[str, tuple | None] | None:
        """For an input that no output depends on: the first operation that used it with an integer
        or boolean result (``x.astype(int)``, ``x > 0``), as (op name, (file, line)); else None."""
        bit = self.in_nodes[j].deps
        if any(self.connected(i, j) for i in range(len(self.outputs))):
            return None
        return next(((name, site) for deps, name, site in self.trace.cuts if deps & bit), None)

    def swept(self) -> set[int]:
        """Indices of the nodes a reverse sweep from some output visits: those on a path from a
        differentiated input to an output. A shift that cancels out of every output (the max in
        logsumexp's c + log(sum(exp(z - c)))) is not on one: no derivative goes through it."""
        wrt_mask = 0
        for node in self.in_nodes:
            wrt_mask |= node.deps
        out: set[int] = set()
        for ref in self.out_refs:
            if ref is not None:
                out.update(n.index for n in _plan_reverse(self.trace, (ref,), wrt_mask))
        return out

    def elementwise(self, i: int, j: int) -> bool:
        """Whether output i is an elementwise function of input j, which makes d out_i / d in_j diagonal.

        True when both have the same number of elements and every operation on a path from the
        input to the output maps element k to element k (ufuncs and np.where whose traced
        arguments have the result's size; other inputs count as constants). The check reads
        the recording's structure only, never the values.
        """
        return self.shared((i, j), lambda: self._is_elementwise(i, j))

    def compiles(self) -> bool:
        """Whether this recording's sweeps may be compiled (engine/programs.py): a replay's are."""
        return self._replayed and self._programs is not None

    def shared(self, key: tuple, make: Callable[[], Any]) -> Any:
        """make()'s value, made once for this recording and its replays: something that its
        structure and shapes decide (not its values), under a `key` that says what it is."""
        known = self._structure.get(key)
        if known is None:
            known = self._structure[key] = make()
        return known

    def records(self, names: frozenset) -> bool:
        """Whether an operation of one of these names (Primitive.name) was recorded."""
        return self.shared(("prims", names), lambda: any(n.prim.name in names for n in self.trace.nodes))

    def _is_elementwise(self, i: int, j: int) -> bool:
        ref = self.out_refs[i]
        start = self.in_nodes[j]
        if ref is None or ref[1] is not None or not ref[0].deps & start.deps:
            return False
        size = value_size(start.value)
        if value_size(ref[0].value) != size:
            return False
        for node in _plan_reverse(self.trace, (ref,), start.deps):
            if node is start:
                continue
            if node.prim.structure != ELEMENTWISE or value_size(node.value) != size:
                return False
            for _, parent, pidx in node.parents:
                # A traced argument of the result's size broadcasts only over length-1 axes:
                # element k still meets element k.
                if parent.deps & start.deps and (pidx is not None or value_size(parent.value) != size):
                    return False
        return True

    def vjp(self, seeds: Sequence[Any | None], wrt: Sequence[int] | None = None, structured: bool = False,
            program_seeds: Sequence[Any | None] | None = None) -> list:
        """One reverse sweep: a block of cotangents per output -> a block per differentiated input.

        With `structured`, results may be `SparseBlock`s (cheaper to scatter into a matrix).
        `program_seeds`: the same seeds in the form a compiled sweep runs best on (see _programmed).
        """
        wrt = range(len(self.wrt)) if wrt is None else wrt
        # which outputs are seeded is part of the request: two outputs of one shape have seeds of one form
        seeded = tuple(i for i, (live, s) in enumerate(zip(self._live, seeds)) if live and s is not None)
        if not seeded:
            return [None] * len(wrt)
        self.sweeps += 1
        seeds = tuple(seeds[i] for i in seeded)
        alt = None if program_seeds is None else tuple(program_seeds[i] for i in seeded)

        def where() -> tuple[tuple, tuple]:  # (the nodes a program may not need)
            return tuple(self.out_refs[i] for i in seeded), tuple(self.in_nodes[j] for j in wrt)

        def sweep() -> list:
            starts, ends = where()
            with _pause_for(self.trace):
                return reverse(self.trace, starts, seeds, ends)
        out = sweep() if self._programs is None else self._programmed(
            "reverse", (seeded, tuple(wrt)), seeds, where, sweep, alt)
        return out if structured else [dense(o) for o in out]

    def jvp(self, tangents: Sequence[Any | None], wrt: Sequence[int] | None = None,
            structured: bool = False, program_seeds: Sequence[Any | None] | None = None) -> list:
        """One forward sweep: a block of tangents per differentiated input -> a block per output
        (`structured`, `program_seeds`: as vjp's)."""
        wrt = range(len(self.wrt)) if wrt is None else wrt
        pairs = [(j, t) for j, t in zip(wrt, tangents) if t is not None]
        if not pairs or not any(self._live):
            return [None] * len(self._live)
        self.sweeps += 1
        seeds = tuple(t for _, t in pairs)
        alt = None if program_seeds is None else tuple(a for t, a in zip(tangents, program_seeds) if t is not None)

        def where() -> tuple[tuple, tuple]:
            return tuple(self.in_nodes[j] for j, _ in pairs), tuple(r for r in self.out_refs if r is not None)

        def sweep() -> list:
            starts, ends = where()
            with _pause_for(self.trace):
                return forward(self.trace, starts, seeds, ends)
        got = iter(sweep() if self._programs is None else self._programmed(
            "forward", tuple(j for j, _ in pairs), seeds, where, sweep, alt))
        out = [next(got) if live else None for live in self._live]
        return out if structured else [dense(o) for o in out]

    def _programmed(self, kind: str, wrt: tuple, seeds: tuple, where: Callable[[], tuple[tuple, tuple]],
                    sweep: Callable[[], list], alt: tuple | None = None) -> list:
        """The sweep's results: from its compiled program (engine/programs.py) where there is one.

        The first replay that makes a request sweeps as usual, then records the sweep as a program
        and runs that once: the program is kept if it ran faster than the usual sweep (it is not
        when it densifies what the usual sweep keeps structured), else the request is marked to be
        swept as usual. Later replays run the program; one whose guard fails is swept as usual.
        The recording that f made itself, which may never be replayed, records none. `where()`
        gives the sweep's (starts, ends).

        `alt`: the seeds in another form, which the program is recorded and run with while it is
        worth keeping: a small block of identity seeds is swept faster dense as usual, but as a
        structured block once compiled, where the bookkeeping is done when it is recorded (P3's
        tridiagonal Hessian, n = 100). The usual sweep keeps `seeds`, so that a first replay gives
        what a fresh recording gives, to the last bit.
        """
        key = None if MONITOR.v is not None else programs.key_of(kind, wrt, seeds)  # (diagnostics watch each rule)
        if key is not None and alt is not None:
            alt_key = programs.key_of(kind, wrt, alt)
            if alt_key is not None and self._programs.get(alt_key) is not False:
                key, seeds = alt_key, alt  # (the program's seeds from here on; the usual sweep keeps its own)
        prog = None if key is None else self._programs.get(key)
        if prog:
            with _pause_for(self.trace):
                if prog.trials:  # its first runs amid the caller's work: timed again
                    start = time.thread_time()
                    out = prog.run(self.trace.values(), seeds)
                    prog.trials -= 1
                    if out is not None and not programs.worth_keeping(time.thread_time() - start, prog.usual):
                        self._programs[key] = False  # slower here than on the warm cache it was timed on
                else:
                    out = prog.run(self.trace.values(), seeds)
            if out is not None:
                return out
        if prog is not None or key is None or not self._replayed or len(self._programs) >= programs.MAX_PROGRAMS:
            return sweep()
        # CPU time of this thread, not wall time: other processes' load slows both ways alike, and
        # BLAS threads spinning after a call are not counted. The usual sweep as each replay pays
        # it (it makes the nodes it reads and their rules), the program's best of two runs (its
        # second finds nothing cached that a replay would not); a kept program is timed again in
        # its first runs on later replays (Program.trials)
        start = time.thread_time()
        out = sweep()
        usual = time.thread_time() - start
        compiled = math.inf
        try:
            with _pause_for(self.trace):
                prog = programs.record(self.trace, kind, *where(), seeds)
                for _ in range(2 if prog is not None else 0):
                    start = time.thread_time()
                    got = prog.run(self.trace.values(), seeds)
                    took = time.thread_time() - start
                    if got is None or not programs.agrees(got, out):
                        compiled = math.inf
                        break
                    compiled = min(compiled, took)
        except Exception:  # noqa: BLE001 - a sweep that cannot be recorded as a program is swept as usual
            compiled = math.inf
        if prog is not None and compiled < math.inf and programs.worth_keeping(compiled, usual):
            prog.usual, prog.trials = usual, programs.TRIALS
            self._programs[key] = prog
        else:
            self._programs[key] = False
        return out


# Sweeps and replays of recordings from this many operations on pause the garbage collector (see
# COLLECTOR_PAUSED); below it, a collection is rare and short, and the pause would cost more.
_PAUSE_FROM = 1000


def _pause_for(trace: Trace) -> Any:
    """The context a sweep or replay of `trace` runs in: the collector paused if the trace is large."""
    return COLLECTOR_PAUSED if trace.size() >= _PAUSE_FROM else nullcontext()


def _private(a: Any) -> Any:
    """A copy of `a` that nobody else holds (arrays and containers; immutable values as they are)."""
    if type(a) is np.ndarray:
        return a.copy(order="K")  # in its memory layout, which ravel(order="K") reads
    if a is None or isinstance(a, (bool, int, float, complex, str, bytes, np.generic)):
        return a
    try:
        return copy.deepcopy(a)
    except Exception:  # noqa: BLE001 - an argument that can't be copied can't be compared either
        return _Unique()


def _private_float(a: Any) -> Any:
    """as_float(a), never the caller's own array: a lazy result must not see later changes to it."""
    arr = as_float(a)
    if type(arr) is Tracer:
        return arr
    if arr is a or (isinstance(a, np.ndarray) and np.may_share_memory(arr, a)):
        arr = arr.copy(order="K")
    return arr


def _snapshot(args: Sequence[Any], wrt: Sequence[int]) -> dict[int, Any]:
    """Copies of the arguments that are not differentiated: a replay needs them unchanged."""
    return {i: _private(a) if _comparable(a) else _Unique() for i, a in enumerate(args) if i not in wrt}


class _Unique:
    """Equal to nothing: a replay compared against it records afresh."""

    def __eq__(self, other: Any) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def _same(a: Any, b: Any) -> bool:
    """Whether two plain values are the same: type, shape, dtype and every bit (so -0.0 is not 0.0).

    Arrays of objects, array subclasses (masked arrays) and objects without a plain equality
    are never the same: a replay compared against them records afresh.
    """
    if type(a) is not type(b):
        return False
    if type(a) is np.ndarray or isinstance(a, np.generic):
        a, b = np.asarray(a), np.asarray(b)
        # and in the same layout, which ravel(order="K") reads: Fortran order, or not
        return a.dtype == b.dtype and a.dtype.kind != "O" and a.shape == b.shape and a.tobytes() == b.tobytes() \
            and _fortran(a) == _fortran(b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:  # in order: f may iterate over it
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is float:
        return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (a != a and b != b))
    if a is None or isinstance(a, _EQUAL) or a is Ellipsis:
        return a == b
    return False


_EQUAL = (bool, int, complex, str, bytes, type, np.dtype, slice)  # compared with ==


def _fortran(a: np.ndarray) -> bool:
    return a.flags.f_contiguous and not a.flags.c_contiguous


def _comparable(a: Any) -> bool:
    """Whether `_same` can find `a` the same as a copy of it (a plain value, an array of numbers, or
    containers of them): only such a data argument is replayed, and f gets a private copy of it."""
    if type(a) is np.ndarray or isinstance(a, np.generic):
        return np.asarray(a).dtype.kind != "O"
    if type(a) in (tuple, list) or isinstance(a, tuple):
        return all(_comparable(x) for x in a)
    if type(a) is dict:
        return all(_comparable(k) and _comparable(x) for k, x in a.items())
    return a is None or a is Ellipsis or isinstance(a, (float,) + _EQUAL)


def _substituted(args: tuple, refs: tuple, vals: list) -> tuple:
    """args with the replayed values in place at `refs` ((position, node, output index) triples)."""
    args = list(args)
    for i, node, idx in refs:
        v = vals[node.index]
        args[i] = v if idx is None else v[idx]
    return tuple(args)


def _call(fn: Callable, args: tuple, kwargs: dict, errstate: dict | None) -> Any:
    """fn(*args, **kwargs), under `errstate` (np.geterr()'s form) when it is not None."""
    if errstate is None:
        return fn(*args, **kwargs)
    with np.errstate(**errstate):
        return fn(*args, **kwargs)


class ErrstateRun:
    """A replay's error state: each operation's recorded one (None: the caller's), entered only
    where it changes from the previous operation's. A recorded sweep's operations, all under
    one state (warnings off), then cost one np.errstate, not one each. close() when done."""

    __slots__ = ("state", "ctx")

    def __init__(self) -> None:
        self.state: dict | None = None
        self.ctx: Any = None

    def set(self, state: dict | None) -> None:
        if state is self.state:
            return
        if self.ctx is not None:
            self.ctx.__exit__(None, None, None)
            self.ctx = None
        if state is not None:
            self.ctx = np.errstate(**state)
            self.ctx.__enter__()
        self.state = state

    def close(self) -> None:
        self.set(None)


def _holds(guard: Any, vals: list) -> bool:
    args = _substituted(guard.args, guard.refs, vals)
    return _same(_call(guard.fn, args, guard.kwargs, guard.errstate), guard.expected)


def guards_hold(guards: list, g: int, upto: int | None, vals: list, run: ErrstateRun) -> int | None:
    """Check guards[g:] taken before node `upto` (every one left with None) on the replayed values
    `vals`: the index of the next guard, or None when one does not hold. Under the caller's error
    state, or the guard's own: `run`, the replay's, is left first."""
    while g < len(guards) and (upto is None or guards[g].pos <= upto):
        run.set(None)
        if not _holds(guards[g], vals):
            return None
        g += 1
    return g


def _call_user(f: Callable, args: list) -> Any:
    try:
        return f(*args)
    except Exception as raised:
        # A wrapper of f (the command line's) may have chained NumPy's error as the cause.
        exc = raised if isinstance(raised, ValueError) else raised.__cause__
        if not isinstance(exc, ValueError):
            raise
        # `out[i] = x[i]` into a plain array: NumPy replaces the TracingError raised by
        # Tracer.__float__ with "setting an array element with a sequence"; report the real cause.
        cause = exc.__cause__
        if isinstance(cause, TracingError):
            raise TracingError(
                "writing a traced value into a plain array (one made with np.zeros or np.empty) takes it out "
                "of jaccli's recording, so its derivative is lost; make the array with np.zeros_like(x) and "
                "assign into that, or collect the values in a list and np.stack them", cause.site) from None
        freezer = FREEZER.v
        if "read-only" in str(exc) and freezer is not None and freezer.arrays:
            raise _held_array_error(exc, freezer) from None
        raise


def _held_array_error(exc: ValueError, freezer: Freezer) -> TracingError:
    """The error for an in-place change of an array that f had handed to a recorded operation."""
    site, name = None, None
    tb = exc.__traceback__
    while tb is not None:  # the innermost frame of the user's code: where the change is written
        if not is_internal(tb.tb_frame.f_code):
            site, frame = (tb.tb_frame.f_code.co_filename, tb.tb_lineno), tb.tb_frame
        tb = tb.tb_next
    if site is not None:
        line = linecache.getline(*site)
        for scope in (frame.f_locals, frame.f_globals):
            for key, value in scope.items():
                if isinstance(value, np.ndarray) and id(value) in freezer.seen and \
                        re.search(rf"(?<![\w.]){re.escape(key)}\b", line):
                    name = key
                    break
            if name:
                break
    what = f"'{name}' is changed in place" if name else "an array is changed in place, and it is read-only"
    why = (" after f handed it to a NumPy operation on traced values; jaccli keeps such arrays for the "
           "derivative (as PyTorch keeps saved tensors), so they stay read-only while f runs")
    if not name:
        why += " (unless the array was read-only already)"
    fix = f"; change a copy instead ({name} = {name}.copy() before the change)" if name else \
        "; change a copy instead (a = a.copy() before the change), or make a new array"
    return TracingError(what + why + fix, site)


def primal_value(a: Any, trace: Trace) -> Any:
    if type(a) is Tracer and a._trace is trace:
        return a._value
    return a


def _outputs(out: Any, trace: Trace) -> tuple[bool, tuple, list]:
    """What f returned, checked: whether a tuple; the outputs; and each one's (node, index) on `trace`.

    A traced output stays traced (its reference is not None); any other is a checked constant.
    """
    is_tuple = isinstance(out, tuple)
    outs = []
    refs = []
    for k, o in enumerate(out if is_tuple else (out,)):
        if isinstance(o, list) and holds_tracer(o):
            o = np.stack(o)
        if type(o) is Tracer and o._stale is not None:
            raise stale_error(o, None)
        if type(o) is Tracer and o._trace is trace:  # (never complex: bind refuses those)
            refs.append((o._node, o._idx))
            outs.append(o)
        else:
            refs.append(None)
            outs.append(_check_output(o, k))
    return is_tuple, tuple(outs), refs


def call_traced(f: Callable, args: Sequence[Any], trace: Trace) -> tuple[bool, tuple, list]:
    """f called on arguments traced on the open recording `trace`, its operations recorded there.

    Returns what `_outputs` returns. No new level: the caller differentiates the result on `trace`
    itself (`core.reverse(..., traced=True)`), which costs one recording per operation where an
    inner Recording of f would record each one on two levels.
    """
    with intercept_numpy(f):
        out = _call_user(f, list(args))
    return _outputs(out, trace)


def _check_output(o: Any, k: int) -> Any:
    if type(o) is Tracer:
        return o  # traced at an outer level only: a constant here
    try:
        arr = np.asarray(o)
    except Exception:  # noqa: BLE001 - anything that is not array-like
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        what = type(o).__name__
        if isinstance(o, (list, tuple)) and o:
            what = f"a {what} of {type(o[0]).__name__}"
        elif arr is not None:
            what = f"{what} of dtype {arr.dtype}"
        raise UserFunctionError(
            f"the function returned {what} as output {k}, not an array of numbers; "
            "return a NumPy array (or a tuple of arrays)")
    return arr


from jaccli.replay import compiled_sweeps as programs, replay_trace as replayed  # noqa: E402  (they read this module's _same and ErrstateRun)
