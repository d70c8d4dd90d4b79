"""Kinks and branch changes: where a derivative is a convention, or finite differences cross a jump."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .engine import core
from .engine.recording import Recording
from .engine.registry import REGISTRY
from .engine.tracer import peek
from .finite_diff import fd_step

__all__ = ["Kink", "find_kinks", "kink_masks", "branch_changes", "kink_rows", "registry_notes", "StepCrossings",
           "row_seeds", "excuse_mismatches"]


def registry_notes(prim_name: str) -> str:
    """The documented convention of the registry entry backed by a primitive ("" if none)."""
    entry = REGISTRY.get(prim_name)
    if entry is not None:
        return entry.notes
    for entry in REGISTRY.values():
        if any(p.name == prim_name for p in entry.prims):
            return entry.notes
    return ""


def _site(node: core.Node) -> tuple[str | None, int | None]:
    return node.site or (None, None)


def _where(node: core.Node) -> str:
    file, line = _site(node)
    return f"{node.prim.name} at {file}:{line}" if file else node.prim.name


@dataclass
class Kink:
    """One recorded op evaluated exactly at a kink (abs at 0, a max/min tie, a clip bound, ...).

    `mask` marks the kink elements in the op's output. `rows` and `cols` (block name -> flat
    indices) are filled in by a derivative check: the entries whose value is a convention.
    """

    op: str
    file: str | None
    line: int | None
    count: int
    node_index: int
    notes: str = ""
    mask: np.ndarray | None = field(default=None, repr=False)
    rows: dict[str, list[int]] = field(default_factory=dict)
    cols: dict[str, list[int]] = field(default_factory=dict)

    @property
    def site(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "<unknown>"

    def to_dict(self) -> dict:
        """Keys: op, file, line, site ("file:line"), count (kink elements), notes (the convention
        jaccli uses there), rows and cols (block name -> affected row / column indices)."""
        return {"op": self.op, "file": self.file, "line": self.line, "site": self.site, "count": self.count,
                "notes": self.notes, "rows": {k: [int(i) for i in v] for k, v in self.rows.items()},
                "cols": {k: [int(i) for i in v] for k, v in self.cols.items()}}


def _mask_of(node: core.Node) -> np.ndarray:
    with np.errstate(all="ignore"):
        mask = node.prim.kink(peek(node.value), *[peek(a) for a in node.args], **node.kwargs)
    return np.asarray(mask, dtype=bool)


def kink_masks(rec: Recording) -> dict[int, np.ndarray]:
    """Node index -> boolean kink mask (in the op's output shape), for every op with kinks that a
    derivative goes through (`Recording.swept`: not a shift that cancels out of the outputs)."""
    swept = rec.swept()
    return {n.index: _mask_of(n) for n in rec.trace.nodes if n.prim.kink is not None and n.index in swept}


def find_kinks(rec: Recording) -> list[Kink]:
    """The ops of `rec` evaluated exactly at a kink, where the derivative is a convention.

    >>> rec = Recording(lambda x: np.abs(x), (np.array([0.0, 1.0]),), (0,))
    >>> [(k.op, k.count) for k in find_kinks(rec)]
    [('np.absolute', 1)]
    """
    out = []
    for index, mask in kink_masks(rec).items():
        if mask.any():
            node = rec.trace.nodes[index]
            file, line = _site(node)
            out.append(Kink(node.prim.name, file, line, int(mask.sum()), index, registry_notes(node.prim.name),
                            mask))
    return out


# ---------------------------------------------------------------------------
# Comparing recordings at nearby points
# ---------------------------------------------------------------------------
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


# Decompositions of a symmetric matrix: NumPy reads one triangle of A; the derivative (JAX's and
# PyTorch's convention) is that of f((A + A.T)/2), so a step that changes A unsymmetrically (a step
# along one off-diagonal entry of A itself) sees another function than AD differentiates.
_READS_ONE_TRIANGLE = frozenset({"np.linalg.eigh", "np.linalg.eigvalsh", "np.linalg.cholesky"})


def _moves_off_symmetric(a: Any, b: Any) -> bool:
    """The change from matrix a to b has an antisymmetric part beyond rounding."""
    a, b = np.asarray(peek(a)), np.asarray(peek(b))
    if a.shape != b.shape or a.ndim < 2:
        return False
    d = b - a
    size = float(np.abs(d).max(initial=0.0))
    return size > 0 and float(np.abs(d - np.swapaxes(d, -1, -2)).max()) > 1e-3 * size


def branch_changes(base: Recording, moved: Recording, masks: dict[int, np.ndarray],
                   constants: bool = True) -> tuple[set[int], list[str]]:
    """Compare f recorded at x with f recorded at a nearby point.

    Args:
        base: f recorded at x.
        moved: f recorded at a point a finite-difference step away.
        masks: kink masks of `base` for the kinks of interest (node index -> mask).
        constants: whether a non-differentiated argument that changes is a jump. Not when f takes
            a derivative without create_graph (Trace.severed): that constant varies smoothly with x.

    Returns:
        The kinks (node indices of `masks`) whose kink elements are no longer at a kink, so the
        step moves across them; and descriptions of jumps the step crosses: a step function
        (floor, sign...) that changes value, a condition, index or other non-differentiated
        argument computed from the input that changes (np.where's condition, an argmax index),
        or Python control flow that records different operations.
    """
    a_nodes, b_nodes = base.trace.nodes, moved.trace.nodes
    if len(a_nodes) != len(b_nodes) or any(a.prim is not b.prim for a, b in zip(a_nodes, b_nodes)):
        return set(masks), ["Python control flow: f runs different operations within the step"]
    crossed = set()
    for index, mask in masks.items():
        new = _mask_of(b_nodes[index])
        if new.shape != mask.shape or (mask & ~new).any():
            crossed.add(index)
    changes = []
    for a, b in zip(a_nodes, b_nodes):
        if not a.deps:
            continue
        if a.prim.zero_grad and not _same(peek(a.value), peek(b.value)):
            changes.append(f"{_where(a)}: a step function changes value within the step")
            continue
        if a.prim.name in _READS_ONE_TRIANGLE and _moves_off_symmetric(a.args[0], b.args[0]):
            changes.append(f"{_where(a)}: the step changes its matrix unsymmetrically; NumPy reads one "
                           "triangle, and the derivative is that of the symmetric part (A + A.T)/2")
            continue
        if not constants:
            continue
        traced = {argnum for argnum, _, _ in a.parents}
        for pos, (x, y) in enumerate(zip(a.args, b.args)):
            if pos not in traced and not _same(peek(x), peek(y)):
                what = "its condition" if a.prim.name == "np.where" and pos == 0 else f"its argument {pos}"
                changes.append(f"{_where(a)}: {what} changes within the step")
                break
    return crossed, changes


def kink_rows(rec: Recording, i: int, seeds: np.ndarray, kinks: Sequence[Kink]) -> dict[int, np.ndarray]:
    """Which seeds of output i reach each kink's kink elements with a nonzero cotangent.

    One reverse sweep of the K seeds (shape ``(K,) + out.shape``) with a monitor on the
    cotangents flowing into the kink ops; a seed (a Jacobian row) whose cotangent at a kink
    element is zero does not see that kink's convention.

    Returns:
        Kink node index -> boolean array of length K.
    """
    k = len(seeds)
    hits = {kink.node_index: np.zeros(k, dtype=bool) for kink in kinks}
    masks = {kink.node_index: kink.mask for kink in kinks}
    ref = rec.out_refs[i]
    if ref is None or not k:
        return hits
    if ref[0].index in masks:
        m = np.broadcast_to(masks[ref[0].index], seeds.shape[1:])
        hits[ref[0].index] |= (seeds[:, m] != 0).any(axis=1)

    def monitor(node: core.Node, argnum: int, ct: Any, kind: str) -> None:
        for a, parent, _ in node.parents:
            if a == argnum and parent.index in masks:
                arr = np.asarray(peek(ct))
                try:
                    m = np.broadcast_to(masks[parent.index], arr.shape[1:])
                except ValueError:
                    hits[parent.index] |= True  # shapes do not line up: assume every row is affected
                    continue
                hits[parent.index] |= (arr[:, m] != 0).any(axis=1)
        if saved is not None:
            saved(node, argnum, ct, kind)

    saved = core.MONITOR.v
    core.MONITOR.v = monitor
    try:
        with np.errstate(all="ignore"):
            rec.vjp([seeds if o == i else None for o in range(len(rec.outputs))])
    finally:
        core.MONITOR.v = saved
    return hits


# ---------------------------------------------------------------------------
# What finite-difference steps cross
# ---------------------------------------------------------------------------
class StepCrossings:
    """Per input element c: what a finite-difference step along c crosses (recorded at x +- h e_c).

    f is recorded with float64 inputs, as the finite differences see it; `kinks` are those at x.
    """

    def __init__(self, f: Callable, args: tuple, wrt_idx: tuple, batch: bool) -> None:
        self.f, self.args, self.wrt_idx, self.batch = f, args, wrt_idx, batch
        with np.errstate(all="ignore"):
            self.base = Recording(f, args, wrt_idx)
        # where f takes a derivative without create_graph (a constant to AD, not to finite differences)
        self.severed = self.base.trace.severed
        self.kinks = find_kinks(self.base)
        self.masks = {k.node_index: k.mask for k in self.kinks}
        self.cache: dict[tuple[int, int], tuple[set, list]] = {}
        self.recordings = 1

    def __call__(self, j: int, c: int) -> tuple[set, list]:
        key = (j, int(c))
        if key not in self.cache:
            k = self.wrt_idx[j]
            x = np.asarray(self.args[k])
            flat = x.reshape((x.shape[0], -1) if self.batch else (-1,))
            crossed, changes = set(), []
            for sign in (1.0, -1.0):
                moved = flat.copy()
                moved[..., c] = flat[..., c] + sign * fd_step(flat[..., c])
                args = list(self.args)
                args[k] = moved.reshape(x.shape)
                self.recordings += 1
                try:
                    with np.errstate(all="ignore"):
                        rec = Recording(self.f, args, self.wrt_idx)
                except Exception as exc:  # noqa: BLE001 - f itself failing within the step is a jump too
                    crossed |= set(self.masks)
                    changes.append(f"f raises within the step ({type(exc).__name__})")
                    continue
                cr, ch = branch_changes(self.base, rec, self.masks, constants=self.severed is None)
                crossed |= cr
                changes += [t for t in ch if t not in changes]
            self.cache[key] = (crossed, changes)
        return self.cache[key]

    def describe(self, index: int) -> str:
        kink = next(k for k in self.kinks if k.node_index == index)
        return f"{kink.op} at {kink.site}: evaluated at a kink ({kink.notes or 'convention'})"


def row_seeds(out: np.ndarray, rows: np.ndarray, batch: bool) -> np.ndarray:
    """One seed per selected row (flat index per sample; every sample at once with batch)."""
    shape = np.shape(out)
    k = len(rows)
    if batch:
        seed = np.zeros((k, shape[0], int(np.prod(shape[1:]))))
        seed[np.arange(k), :, rows] = 1.0
    else:
        seed = np.zeros((k, int(np.prod(shape))))
        seed[np.arange(k), rows] = 1.0
    return seed.reshape((k,) + shape)


def excuse_mismatches(mism: np.ndarray, i: int, j: int, rows: np.ndarray, cols: np.ndarray, cross: StepCrossings,
                      order: int, hits: dict) -> tuple[np.ndarray, dict]:
    """The mismatching entries of block (i, j) whose finite-difference step crosses a kink or a jump.

    Args:
        mism: mismatch mask of the checked slice, ``(len(rows), len(cols))`` or ``(B, ...)``.
        i, j: the block: output (order 1) or row input (order 2), and column input.
        rows, cols: the flat indices of the slice.
        cross: the step crossings of f at the point.
        order: 1 (a kink counts for the rows whose cotangent reaches it, from `hits`) or 2
            (for the rows whose own step also crosses it).
        hits: order 1: output -> `kink_rows` result for `rows`.

    Returns:
        The excused mask, and a reason per excused column position.
    """
    excused = np.zeros(mism.shape, dtype=bool)
    reasons: dict[int, str] = {}
    for q in np.flatnonzero(mism.any(axis=tuple(range(mism.ndim - 1)))):
        crossed, changes = cross(j, cols[q])
        if changes:
            excused[..., q] = mism[..., q]
            reasons[q] = changes[0]
            continue
        rows_hit = np.zeros(len(rows), dtype=bool)
        for kid in crossed:
            if order == 1:
                now = hits[i][kid]
            else:  # a Hessian entry (r, c) depends on the kink when both r and c move it
                now = np.array([kid in cross(i, r)[0] for r in rows])
            if (now & ~rows_hit).any():
                reasons.setdefault(q, cross.describe(kid))
            rows_hit |= now
        excused[..., q] = mism[..., q] & rows_hit
    return excused, reasons
