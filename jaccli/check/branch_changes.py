"""Branch changes: what differs between f recorded at x and f recorded a finite-difference step away."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection

import numpy as np

from jaccli.engine import CONDITION_ARGUMENTS, ELEMENTWISE, Node, Recording, peek
from .kinks import kink_crossed, kink_mask, op_at

__all__ = ["Crossed", "crossings", "merge_flags"]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (np.ndarray, np.generic, float, int, bool)) and isinstance(b, (np.ndarray, np.generic, float,
                                                                                    int, bool)):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return True  # not comparable: nothing to say


def _changed(a: Any, b: Any) -> np.ndarray:
    """Which elements differ between two values (NaN equals NaN): element by element for arrays of one
    shape, else one flag (0-d) for the whole value."""
    kinds = (np.ndarray, np.generic, float, int, bool)
    if isinstance(a, kinds) and isinstance(b, kinds):
        x, y = np.asarray(a), np.asarray(b)
        if x.shape == y.shape and x.dtype.kind in "biufcb" and y.dtype.kind in "biufcb":
            same = x == y
            if x.dtype.kind in "fc" and y.dtype.kind in "fc":
                same |= np.isnan(x) & np.isnan(y)
            return ~np.asarray(same, dtype=bool)
    return np.array(not _same(a, b))


def merge_flags(into: dict, key: Any, flags: np.ndarray) -> None:
    """OR `flags` into ``into[key]``; flags of another shape collapse to one flag for the whole value."""
    old = into.get(key)
    if old is None:
        into[key] = flags
    elif old.shape == flags.shape:
        into[key] = old | flags
    else:
        into[key] = np.array(bool(old.any() or flags.any()))


_CONTROL_FLOW = "Python control flow: f runs different operations within the step"


@dataclass
class Crossed:
    """What a step crosses, element by element (`crossings`).

    `kinks`: kink node index -> which of its kink elements (in the order of ``mask[mask]``) the step
    moves off the kink, for the kinks it crosses. `jumps`: description of a jump -> which elements of
    the value that jumps change (a 0-d flag where elements cannot be told apart: control flow).
    `placed`: description of a jump -> node index -> which elements of that op's output the jump
    changes (flags that broadcast to the output's shape); None where some of the jump shows in no
    op's output (control flow, f raising, an index whose effect on the
    op's output `_changed_by_constants` cannot tell). `near`: node index of an op with kinks -> which
    elements of its output (in its shape) the step moves across a kink they are near but not at.
    """

    kinks: dict[int, np.ndarray] = field(default_factory=dict)
    jumps: dict[str, np.ndarray] = field(default_factory=dict)
    placed: dict[str, dict[int, np.ndarray] | None] = field(default_factory=dict)
    near: dict[int, np.ndarray] = field(default_factory=dict)

    def add_jump(self, text: str, flags: np.ndarray, index: int | None = None) -> None:
        """A jump whose `flags` change: elements of the output of node `index`, or None: unplaced."""
        merge_flags(self.jumps, text, flags)
        if index is None:
            self.placed[text] = None
        elif self.placed.setdefault(text, {}) is not None:
            merge_flags(self.placed[text], index, flags)

    def update(self, other: "Crossed") -> None:
        """OR in what another step crosses."""
        for index, flags in other.kinks.items():
            merge_flags(self.kinks, index, flags)
        for index, flags in other.near.items():
            merge_flags(self.near, index, flags)
        for text, flags in other.jumps.items():
            where = other.placed.get(text)
            if where is None:
                self.add_jump(text, flags)
            for index, elements in (where or {}).items():
                self.add_jump(text, elements, index)


def _in_output(node: Node, flags: np.ndarray) -> bool:
    """Whether `flags` (of node's value, or of an argument of an elementwise op) broadcast to node's
    output, so that they name the elements of the output that change."""
    value = peek(node.value)
    if node.prim.multi_out or not isinstance(value, (np.ndarray, np.generic, float, int)):
        return False
    try:
        return np.broadcast_shapes(flags.shape, np.shape(value)) == np.shape(value)
    except ValueError:
        return False


def _changed_by_constants(a: Node, b: Node, traced: set[int]) -> np.ndarray | None:
    """Which elements of a's output change when its arguments that are not traced take their values in
    b (an index computed from values: argmax, argsort), the traced ones held fixed: at random values, so
    that no tie among them hides a change (x[argmax] at a tie). None when that cannot be told: the op
    raises, or its output changes shape."""
    rng = np.random.default_rng(0)

    def held(x: Any) -> np.ndarray:
        like = np.asarray(peek(x))
        probe = rng.uniform(1.0, 2.0, like.shape)
        return probe.astype(like.dtype) if like.dtype.kind in "fc" else probe

    probes = {pos: held(x) for pos, x in enumerate(a.args) if pos in traced}
    try:
        with np.errstate(all="ignore"):
            before, after = (np.asarray(a.prim.impl(*[probes[pos] if pos in probes else peek(x)
                                                      for pos, x in enumerate(node.args)], **node.kwargs))
                             for node in (a, b))
    except Exception:  # noqa: BLE001 - an op that refuses the probe is left to the steps of sample groups
        return None
    if before.shape != after.shape or before.shape != np.shape(peek(a.value)):
        return None
    return _changed(before, after)


def crossings(base: Recording, moved: Recording, masks: dict[int, np.ndarray], constants: bool = True,
              kinked: Collection[int] = ()) -> Crossed:
    """Compare f recorded at x (`base`) with f recorded a finite-difference step away (`moved`).

    masks: kink masks of `base` for the kinks of interest (node index -> mask). constants: whether
    a non-differentiated argument that changes is a jump; not when f takes a derivative without
    create_graph (Trace.severed): that constant varies smoothly with x. kinked: indices of the
    ops with kinks (`kinked_nodes`) whose kinks near x the step may cross.

    Returns a `Crossed`: per kink, its elements no longer at a kink (the step moves across them);
    per op of `kinked`, its elements not at a kink whose kink the step crosses (`near`);
    and the jumps the step crosses, element by element: a step function (floor, sign...) that
    changes value, a condition, index or other non-differentiated argument computed from the
    input that changes (np.where's condition, an argmax index), or Python control flow that
    records different operations.
    """
    a_nodes, b_nodes = base.trace.nodes, moved.trace.nodes
    out = Crossed()
    if len(a_nodes) != len(b_nodes) or any(a.prim is not b.prim for a, b in zip(a_nodes, b_nodes)):
        out.kinks = {i: np.ones(int(m.sum()), dtype=bool) for i, m in masks.items()}
        out.add_jump(_CONTROL_FLOW, np.array(True))
        return out
    for index, mask in masks.items():
        new = kink_mask(b_nodes[index])
        off = np.ones(int(mask.sum()), dtype=bool) if new.shape != mask.shape else (mask & ~new)[mask]
        if off.any():
            out.kinks[index] = off
    for index in kinked:
        a, b = a_nodes[index], b_nodes[index]
        shape = np.shape(peek(a.value))
        across = kink_crossed(a, b) if np.shape(peek(b.value)) == shape else np.ones(shape, dtype=bool)
        if index in masks:
            across = across & ~masks[index]  # an element at the kink already is one of `kinks`
        if across.any():
            out.near[index] = across
    for a, b in zip(a_nodes, b_nodes):
        if not a.deps:
            continue
        if a.prim.zero_grad:
            jumped = _changed(peek(a.value), peek(b.value))
            if jumped.any():
                out.add_jump(f"{op_at(a)}: a step function changes value within the step", jumped,
                             a.index if _in_output(a, jumped) else None)
                continue
        if not constants:
            continue
        traced = {argnum for argnum, _, _ in a.parents}
        for pos, (x, y) in enumerate(zip(a.args, b.args)):
            if pos in traced:
                continue
            jumped = _changed(peek(x), peek(y))
            if jumped.any():
                what = "its condition" if CONDITION_ARGUMENTS.get(a.prim) == pos else f"its argument {pos}"
                # an elementwise op's output changes where its argument does (broadcast); an op that
                # takes an index, where the new index moves its output
                moved = jumped if a.prim.structure == ELEMENTWISE else _changed_by_constants(a, b, traced)
                placed = moved is not None and moved.any() and _in_output(a, moved)
                out.add_jump(f"{op_at(a)}: {what} changes within the step", moved if placed else jumped,
                             a.index if placed else None)
                break
    return out
