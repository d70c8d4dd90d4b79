"""Sweep plans: the nodes a sweep visits, in order, cached per trace and shared by recordings of one structure."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable

from .cancelled_shifts import cancelling, candidates
from .facts import SHIFT_FORMS as _SHIFT_FORMS
from .tape import Node, Trace


class Plan(list):
    """The nodes a reverse sweep visits, in reverse order; `cut`: indices of the nodes whose
    outgoing edges it does not follow (shifts that cancel out of the outputs, see engine/cancelled_shifts.py)."""

    __slots__ = ("cut",)


def _needed(trace: Trace, outputs: tuple, wrt_mask: int, cut: frozenset) -> Plan:
    # Marks by index, walked down from the highest output's until none is pending: a parent's index is
    # below its node's, so each needed node is met after every node that needs it. A few tens of
    # nanoseconds per index passed, a fraction of its recording, and no set, stack or sort per node
    # (a plain call's sweep makes its plan afresh each time: rk4-lv's 16,201 nodes took 8 ms by sets, 5 here).
    nodes = trace.nodes
    marked = bytearray(len(nodes))
    pending = top = 0
    for n, _ in outputs:
        if n.deps & wrt_mask and not marked[n.index]:
            marked[n.index] = 1
            pending += 1
            top = max(top, n.index)
    plan = Plan()
    plan.cut = cut
    if not pending:
        return plan
    for i in range(top, -1, -1):
        if marked[i]:
            node = nodes[i]
            plan.append(node)
            for _, parent, _ in node.parents:
                j = parent.index
                if not marked[j] and parent.deps & wrt_mask and j not in cut:
                    marked[j] = 1
                    pending += 1
            pending -= 1
            if not pending:
                break
    return plan


def _shared(trace: Trace, key: tuple) -> dict | None:
    """trace's shared plans (see Trace.shared_plans) when they cover the outputs in `key`."""
    shared = trace.shared_plans
    if shared is not None and all(i < shared[0] for i, _ in key[1]):
        return shared[1]
    return None


def renewed_plan(form: tuple, nodes: list) -> Any:
    """A plan in index form (`plan_form`) made of `nodes`, a recording of the same structure."""
    if len(form) == 2:
        plan = Plan(nodes[i] for i in form[0])
        plan.cut = form[1]
        return plan
    return [nodes[i] for i in form[0]], form[1], form[2]


def plan_form(plan: Any) -> tuple:
    """A reverse plan (a Plan) or forward plan (order, last use, cut) by node index."""
    if type(plan) is Plan:
        return tuple(n.index for n in plan), plan.cut
    return tuple(n.index for n in plan[0]), plan[1], plan[2]


def _cached_plan(trace: Trace, key: tuple, make: Callable, outputs: tuple, wrt_mask: int) -> Any:
    """The plan under `key`: trace's own, else renewed from its shared plans (Trace.shared_plans),
    else made by `make(trace, outputs, wrt_mask)` and shared."""
    plan = trace._plans.get(key)
    if plan is not None:
        return plan
    shared = _shared(trace, key)
    form = None if shared is None else shared.get(key)
    if form is not None:
        plan = renewed_plan(form, trace.nodes)
    else:
        plan = make(trace, outputs, wrt_mask)
        if shared is not None:
            shared[key] = plan_form(plan)
    trace._plans[key] = plan
    return plan


def plan_reverse(trace: Trace, outputs: tuple, wrt_mask: int) -> Plan:
    """Nodes on some path from a differentiated input to the outputs, in reverse order."""
    return _cached_plan(trace, ("rev", tuple([(n.index, i) for n, i in outputs]), wrt_mask), _make_reverse,
                        outputs, wrt_mask)


_NO_CUT = frozenset()
# Up to this many recorded operations, the first sweep visits every node from the last output's down
# (first_sweep_order): passing by the few off the paths costs less than finding them
_SCAN_UP_TO = 256


_PRIM = attrgetter("prim")
_EXP_FORMS: list = [-1, frozenset()]  # (the size of SHIFT_FORMS when read, its primitives of form "exp")


def _exp_forms() -> frozenset:
    """The primitives whose shift form is "exp", read again when the rules have added rows."""
    if _EXP_FORMS[0] != len(_SHIFT_FORMS):
        _EXP_FORMS[:] = len(_SHIFT_FORMS), frozenset(p for p, form in _SHIFT_FORMS.items() if form == "exp")
    return _EXP_FORMS[1]


def first_sweep_order(trace: Trace, outputs: tuple, wrt_mask: int) -> Plan:
    """The nodes the first reverse sweep of a recording visits, in order: for a short recording with no
    shift to cut (no exp: engine/cancelled_shifts.py), every node from the last output's down, else
    `plan_reverse`'s plan. A node off the paths gets no cotangent, and the sweep passes it by: a plain
    call's one sweep is spared making a plan it reads once (the sweeps after it read plan_reverse's)."""
    nodes = trace.nodes
    if len(nodes) > _SCAN_UP_TO or not outputs or trace.shared_plans is not None \
            or not _exp_forms().isdisjoint(map(_PRIM, nodes)):
        return plan_reverse(trace, outputs, wrt_mask)
    plan = Plan(nodes[max([n.index for n, _ in outputs]):: -1])
    plan.cut = _NO_CUT
    return plan


def _make_reverse(trace: Trace, outputs: tuple, wrt_mask: int) -> Plan:
    plan = _needed(trace, outputs, wrt_mask, frozenset())
    groups = candidates(plan)
    if groups:
        ordered = plan[::-1]
        cut = frozenset(c.index for group in groups if cancelling(ordered, group, outputs) for c in group)
        if cut:
            plan = _needed(trace, outputs, wrt_mask, cut)
    return plan


def plan_forward(trace: Trace, outputs: tuple, wrt_mask: int) -> tuple[list[Node], dict, frozenset]:
    """Nodes on a path from the seeded inputs to the outputs, in order, and each node's last use."""
    return _cached_plan(trace, ("fwd", tuple([(n.index, i) for n, i in outputs]), wrt_mask), _make_forward,
                        outputs, wrt_mask)


def _make_forward(trace: Trace, outputs: tuple, wrt_mask: int) -> tuple[list[Node], dict, frozenset]:
    reverse_order = plan_reverse(trace, outputs, wrt_mask)
    order = reverse_order[::-1]
    last_use: dict[int, int] = {}
    for pos, node in enumerate(order):
        for _, parent, _ in node.parents:
            last_use[parent.index] = pos
    for node, _ in outputs:
        last_use[node.index] = len(order)
    return order, last_use, reverse_order.cut
