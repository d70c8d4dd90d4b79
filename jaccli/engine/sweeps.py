"""The sweeps: reverse and forward passes of a block of K seeds over a recorded trace.

Every rule receives its seed with a leading block axis of length K.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .block_memory import fresh
from .cotangent_sums import _PendingSum, _accumulate, _add, _taken
from .facts import REAL_COTANGENTS, SELF_PAIRED
from .seeds import SparseBlock
from .sweep_plans import first_sweep_order, plan_forward, plan_reverse
from .tape import Node, Trace, is_complex, no_rule_error, real_cotangent
from .thread_state import ThreadSlot
from .traced_in_place import column_order, program_add, program_pull, pull_in_place
from .limits import SWEEP, Probe
from .tracer import Tracer, memory_root, peek
from .user_sites import RULE_SITE, attributed_to


_UNMADE = object()  # a rule not made yet (None is a made rule: a zero cotangent)


def _get(store: dict, node: Node, idx: int | None) -> Any:
    value = store.get(node)
    if value is None or idx is None:
        return value
    return value[idx]


# A structured cotangent reaching a write (y[i] = v) is made dense when it has at most this many elements
# per recorded operation: a loop of n writes then costs one dense block and O(K) per write, not a
# structured block's dozen NumPy calls per write; the block costs about what the sweep's visits of
# the nodes cost, so a single write into a large array keeps its cotangent structured.
_DENSE_PER_NODE = 2000


# Called as MONITOR.v(node, argnum, value, "reverse" | "forward") for every value a rule
# produces, when set (diagnostics: where did the first NaN or inf appear).
MONITOR = ThreadSlot()


def reverse(trace: Trace, outputs: tuple, seeds: tuple, wrt: tuple, traced: bool = False,
            probe_at: tuple | None = None, first: bool = False) -> Any:
    """Pull a block of cotangents back from `outputs` to the input nodes `wrt`.

    Args:
        trace: the recording.
        outputs: ``(node, output_index)`` pairs; the index is None for single-output nodes.
        seeds: one block of cotangents per output, shape ``(K,) + output.shape``, or None.
        wrt: input nodes to pull back to.
        traced: the trace is still open and the sweep is recorded on it: the rules are made from
            the nodes' values as traced arrays of `trace`, so the cotangents are traced functions
            of its inputs (a gradient that can be differentiated again, on one level).
        first: the recording's first sweep (a plain call's only one): sweep_plans.first_sweep_order.

    Returns:
        One cotangent block per `wrt` node, shape ``(K,) + input.shape``, or None where no
        path leads from the input to a seeded output (a structural zero). With `probe_at`
        (values, node): the cotangent that reaches node, the rules made from `values` (limits.py).
    """
    if probe_at is None:
        outer = SWEEP.v
        SWEEP.v = Probe(lambda values, node, argnum: reverse(trace, outputs, tuple(map(_plain_seed, seeds)), wrt,
                                                             False, (values, node)), trace, "cotangent")
        try:
            return reverse(trace, outputs, seeds, wrt, traced, (), first)
        finally:
            SWEEP.v = outer
    probe, monitor = SWEEP.v, MONITOR.v  # (neither changes while the sweep runs)
    values, capture = probe_at or (None, None)
    wrt_mask = 0
    for node in wrt:
        wrt_mask |= node.deps
    store: dict = {}
    owned: dict = {}  # id -> array: the sums this sweep made and may still add to in place
    for (node, idx), seed in zip(outputs, seeds):
        if seed is not None and node.deps & wrt_mask:
            _accumulate(store, node, idx, len(node.value) if idx is not None else 0, seed, owned)
    wanted = set(map(id, wrt))
    results: dict = {}
    # What a node's makers and rules record (and the sums of what they send back) belongs to the
    # user's line of that node: set once per node, and the caller's site is back when the sweep ends.
    plain = not traced and values is None and monitor is None
    with attributed_to(RULE_SITE.v):
        plan = (first_sweep_order if first else plan_reverse)(trace, tuple(outputs), wrt_mask)
        cut, site = plan.cut, RULE_SITE.v
        for node in plan:
            g = store.pop(node, None)
            if g is None:
                if node is capture:
                    return g
                continue
            if type(g) is np.ndarray:  # (_taken's common case, inline)
                mine = owned.pop(id(g), None) is g if owned else False
            else:
                g, mine = _taken(g, owned)
            if node is capture:
                return g
            if not node.parents:
                if id(node) in wanted:
                    results[id(node)] = g
                continue
            if node.site is not site:  # (consecutive nodes mostly come from one line)
                RULE_SITE.v = site = node.site
            if probe is not None:
                probe.node = node
            prim = node.prim
            if plain and prim.vjp_in_place is not None and type(g) in (np.ndarray, SparseBlock):
                if type(g) is SparseBlock and g.size <= _DENSE_PER_NODE * len(trace.nodes) and not g.traced:
                    g, mine = g.todense(column_order(node)), True  # (see _DENSE_PER_NODE)
                pull_in_place(node, g, mine, store, owned, wrt_mask, _accumulate, _add)  # (never a cut c's consumer)
                continue
            retraced = _retraced(node, trace) if traced else _probed(node, values) if values is not None else None
            if traced and prim.vjp_in_place is not None \
                    and program_pull(node, g, mine, retraced, store, owned, wrt_mask, _traced_rule, _accumulate, _add):
                continue
            joint = None if prim.vjp_joint is None else _joint_cotangents(node, g, retraced)
            paired = prim in SELF_PAIRED and retraced is None and node.args[1] is node.args[0]  # x * x
            # (a node with a joint rule, an update into a sum, x * x or a monitor: the common one takes none
            # of their steps, one test an argument)
            special = joint is not None or prim.vjp_into is not None or paired or monitor is not None
            twin = None  # (parent, its index, argument 0's cotangent) of x * x (facts.SELF_PAIRED)
            rules = node._vjps
            for argnum, parent, pidx in node.parents:
                if not parent.deps & wrt_mask or (cut and parent.index in cut):
                    continue
                if special:
                    if joint is not None:
                        ct = joint[argnum]
                        if ct is not None:
                            if monitor is not None:
                                monitor(node, argnum, ct, "reverse")
                            _accumulate(store, parent, pidx, len(parent.value) if pidx is not None else 0, ct, owned)
                        continue
                    if prim.vjp_into is not None and argnum == 0 and pidx is None and monitor is None \
                            and values is None:
                        acc = store.get(parent)
                        if retraced is not None and program_add(node, g, retraced, acc, parent, store, owned,
                                                                _traced_rule, _accumulate):
                            continue
                        if acc is None and retraced is None and prim.vjp_add is not None and type(g) is np.ndarray:
                            # the first part sent back is fresh (Primitive.vjp_add): the sweep owns it, the next
                            # add into it
                            rule = node.vjp(0)
                            ct = None if rule is None else rule(g)
                            if type(ct) is np.ndarray and fresh(ct):
                                store[parent] = owned[id(ct)] = ct
                            elif ct is not None:
                                _accumulate(store, parent, pidx, 0, ct, owned)
                            continue
                        if acc is not None and type(acc) not in (SparseBlock, _PendingSum) \
                                and type(g) is not SparseBlock:
                            args = node.args if retraced is None else retraced[1]
                            if retraced is None and prim.vjp_add is not None and owned.get(id(acc)) is acc \
                                    and prim.vjp_add(acc, g, *args[1:], **node.kwargs):
                                continue  # added in place into the sum the sweep owns
                            store[parent] = out = prim.vjp_into(acc, g, *args[1:], **node.kwargs)
                            if type(out) is np.ndarray:
                                owned[id(out)] = out
                            continue
                    if twin is not None and twin[0] is parent and twin[1] == pidx:
                        # argument 1 is argument 0: its cotangent is argument 0's, added to the sum argument 0 began
                        if monitor is not None:
                            monitor(node, argnum, twin[2], "reverse")
                        _accumulate(store, parent, pidx, len(parent.value) if pidx is not None else 0, twin[2], owned)
                        continue
                if retraced is not None:
                    rule = _traced_rule(node, argnum, retraced)
                else:
                    rule = _UNMADE if rules is None else rules.get(argnum, _UNMADE)
                    if rule is _UNMADE:
                        rule, rules = _made_rule(node, prim, argnum), node._vjps
                if rule is None:
                    continue
                ct = rule(g)
                if ct is None:
                    continue
                if special:
                    if paired and argnum == 0:
                        twin = (parent, pidx, ct)
                    if monitor is not None:
                        monitor(node, argnum, ct, "reverse")
                if pidx is None and parent not in store:  # the first part sent back: nothing to add to
                    store[parent] = ct
                    continue
                _accumulate(store, parent, pidx, len(parent.value) if pidx is not None else 0, ct, owned)
    return None if capture is not None else [results.get(id(n)) for n in wrt]


def _made_rule(node: Node, prim: Any, argnum: int) -> Callable | None:
    """node's reverse rule for one argument, made and cached on it: Node.vjp's work for a sweep that has
    found no rule made yet (a sweep makes most rules once; a float result, the common one, is read as
    real without is_complex; a complex one's real argument gets Node._rule's real_cotangent)."""
    maker = prim.vjps.get(argnum)
    if maker is None or prim.zero_grad:
        return node.vjp(argnum)
    value = node.value
    rule = maker(value, *node.args, **node.kwargs)
    if rule is not None and type(value) is not np.float64 and (
            value.dtype.kind == "c" if type(value) is np.ndarray else is_complex(value)):
        arg = node.args[argnum]
        if not (arg.dtype.kind == "c" if type(arg) is np.ndarray else is_complex(arg)) and prim not in REAL_COTANGENTS:
            rule = real_cotangent(rule)
    if node._vjps is None:
        node._vjps = {argnum: rule}
    else:
        node._vjps[argnum] = rule
    return rule


def _joint_cotangents(node: Node, g: Any, retraced: tuple[Any, list] | None) -> list:
    """Every argument's cotangent from node's joint reverse rule (Primitive.vjp_joint), made once per
    node and cached as its forward counterpart is (made from traced or probed values: never cached)."""
    if retraced is not None:
        cts = node.prim.vjp_joint(retraced[0], *retraced[1], **node.kwargs)(g)
    else:
        if node._vjps is None:
            node._vjps = {}
        rule = node._vjps.get(-1)
        if rule is None:
            rule = node._vjps[-1] = node.prim.vjp_joint(node.value, *node.args, **node.kwargs)
        cts = rule(g)
    if is_complex(node.value):  # a real argument's cotangent is real (as Node._rule's real_cotangent)
        cts = [ct if ct is None or not is_complex(ct) or is_complex(a) else np.real(ct) for ct, a in zip(cts, node.args)]
    return cts


def _retraced(node: Node, trace: Trace) -> tuple[Any, list]:
    """node's result and arguments as traced arrays of `trace`, as the recorded code had them."""
    args = list(node.args)
    for argnum, parent, pidx in node.parents:
        value = parent.value if pidx is None else parent.value[pidx]
        args[argnum] = Tracer(value, parent, pidx, trace)
    if node.prim.multi_out:
        return tuple(Tracer(v, node, k, trace) for k, v in enumerate(node.value)), args
    return Tracer(node.value, node, None, trace), args


def _traced_rule(node: Node, argnum: int, retraced: tuple[Any, list], mode: str = "reverse") -> Callable | None:
    """The rule of node for one argument, made from traced values (never cached on the node)."""
    if node.prim.zero_grad:
        return None
    maker = (node.prim.vjps if mode == "reverse" else node.prim.jvps).get(argnum)
    if maker is None:
        raise no_rule_error(node, argnum, mode)
    ans, args = retraced
    rule = maker(ans, *args, **node.kwargs)
    if mode == "reverse" and rule is not None and is_complex(node.value) and not is_complex(node.args[argnum]):
        rule = real_cotangent(rule)
    return rule


def forward(trace: Trace, inputs: tuple, tangents: tuple, outputs: tuple, traced: bool = False,
            probe_at: tuple | None = None) -> Any:
    """Push a block of tangents from input nodes to `outputs`.

    Args:
        trace: the recording.
        inputs: input nodes that are seeded.
        tangents: one block per input, shape ``(K,) + input.shape``.
        outputs: ``(node, output_index)`` pairs.
        traced: the sweep is recorded on `trace`, as reverse()'s: the rules are made from the nodes'
            values as traced arrays of `trace` (replay/compiled_sweeps.py records a sweep this way).

    Returns:
        One tangent block per output, shape ``(K,) + output.shape``, or None where the output
        does not depend on any seeded input (a structural zero). With `probe_at` (values, node):
        what node's rule for argument `argnum` makes of its tangent, the rules made from `values`
        (limits.py).
    """
    if probe_at is None:
        outer = SWEEP.v
        SWEEP.v = Probe(lambda values, node, argnum: forward(trace, inputs, tuple(map(_plain_seed, tangents)),
                                                             outputs, False, (values, node, argnum)), trace, "tangent")
        try:
            return forward(trace, inputs, tangents, outputs, traced, ())
        finally:
            SWEEP.v = outer
    probe, monitor = SWEEP.v, MONITOR.v
    values, capture, at = probe_at or (None, None, None)
    wrt_mask = 0
    for node in inputs:
        wrt_mask |= node.deps
    order, last_use, cut = plan_forward(trace, tuple(outputs), wrt_mask)
    store: dict = {}
    for node, t in zip(inputs, tangents):
        if t is not None and node.index not in cut:  # a cut input's tangent goes nowhere
            store[node] = t
    # id -> array: tangents this sweep made that no other stored tangent is a view of; one whose
    # node is used for the last time may be written in place by jvp_in_place
    owned: dict = {}
    with attributed_to(RULE_SITE.v):  # each node sets its own line, as in reverse()
        for pos, node in enumerate(order):
            if not node.parents:
                continue
            if node is capture:  # what the rule for argument `at` makes of its tangent here
                t = next((_get(store, p, i) for a, p, i in node.parents if a == at), None)
                rule = None if t is None else _traced_rule(node, at, _probed(node, values), "forward")
                return None if rule is None else rule(t)
            RULE_SITE.v = node.site
            if probe is not None:
                probe.node = node
            acc = None
            if node.prim.jvp_in_place is not None and monitor is None and not traced and values is None \
                    and _push_in_place(node, pos, store, last_use, owned):
                continue
            retraced = _retraced(node, trace) if traced else _probed(node, values) if values is not None else None
            if node.prim.jvp_joint is not None:
                ts = [None] * len(node.args)
                for argnum, parent, pidx in node.parents:
                    ts[argnum] = _get(store, parent, pidx)
                joint = node._jvps.get(-1) if node._jvps else None
                if all(t is None for t in ts):
                    pass
                elif retraced is not None:  # made from traced values: never cached on the node
                    acc = node.prim.jvp_joint(retraced[0], *retraced[1], **node.kwargs)(ts)
                elif joint is None:
                    if node._jvps is None:
                        node._jvps = {}
                    joint = node._jvps[-1] = node.prim.jvp_joint(node.value, *node.args, **node.kwargs)
                    acc = joint(ts)
                else:
                    acc = joint(ts)
            for argnum, parent, pidx in node.parents if node.prim.jvp_joint is None else ():
                t = _get(store, parent, pidx)
                if t is None:
                    continue
                rule = node.jvp(argnum) if retraced is None else _traced_rule(node, argnum, retraced, "forward")
                if rule is not None:
                    out = rule(t)
                    if out is None:
                        pass
                    elif acc is None:
                        acc = out
                    elif node.prim.multi_out:
                        acc = tuple(a if b is None else (b if a is None else a + b) for a, b in zip(acc, out))
                    else:
                        acc = acc + out
            for _, parent, _ in node.parents:
                if last_use.get(parent.index) == pos and capture is None:
                    store.pop(parent, None)
            if acc is not None:
                if monitor is not None:
                    monitor(node, -1, acc, "forward")
                if owned:
                    _disown_shared(acc, owned)
                if node.prim.jvp_in_place is not None and not traced and values is None and type(acc) is np.ndarray \
                        and acc.base is None:
                    owned[id(acc)] = acc  # jvp_joint's result is fresh (see Primitive.jvp_in_place)
                store[node] = list(acc) if node.prim.multi_out else acc
    return None if capture is not None else [_get(store, node, idx) for node, idx in outputs]


def _probed(node: Node, values: dict) -> tuple[Any, list]:
    """node's result and arguments at the probe's point (limits.py), as _retraced's."""
    args = [peek(a) for a in node.args]
    for argnum, parent, pidx in node.parents:
        value = values[parent]
        args[argnum] = value if pidx is None else value[pidx]
    return values[node], args


def _plain_seed(s: Any) -> Any:
    """A seed block as the probe's plain sweep takes it: a traced one's plain value."""
    return peek(s) if type(s) is Tracer else s


def _disown_shared(acc: Any, owned: dict) -> None:
    """A tangent that is an owned one (a copy's rule hands its tangent on) or a view of it shares its
    memory: that one may no longer be written in place."""
    for a in (acc if type(acc) in (tuple, list) else (acc,)):
        if type(a) is np.ndarray:
            owned.pop(id(memory_root(a)), None)
        elif type(a) is SparseBlock:  # its parts may be views too
            for part in (a.val, a.u, a.v):
                if type(part) is np.ndarray:
                    owned.pop(id(memory_root(part)), None)


def _push_in_place(node: Node, pos: int, store: dict, last_use: dict, owned: dict) -> bool:
    """forward()'s step for a node with jvp_in_place: write into argument 0's tangent when the sweep
    owns it and nothing after this node reads it. False (nothing done) when that does not hold."""
    x_parent, ts = None, [None] * (len(node.args) - 1)
    for argnum, parent, pidx in node.parents:
        if argnum == 0:
            if pidx is not None:
                return False
            x_parent = parent
        else:
            t = _get(store, parent, pidx)
            if t is not None and type(t) is not np.ndarray:
                return False
            ts[argnum - 1] = t
    t_x = store.get(x_parent) if x_parent is not None else None
    if type(t_x) is not np.ndarray or owned.get(id(t_x)) is not t_x or last_use.get(x_parent.index) != pos:
        return False
    node.prim.jvp_in_place(t_x, ts, *node.args[1:], **node.kwargs)
    for _, parent, _ in node.parents:
        if last_use.get(parent.index) == pos:
            store.pop(parent, None)
    store[node] = t_x
    return True
