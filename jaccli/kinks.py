"""Kinks and branch changes: where a derivative is a convention, or finite differences cross a jump."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .engine import core
from .engine.recording import Recording
from .engine.registry import REGISTRY
from .engine.tracer import peek
from .finite_diff import fd_step

__all__ = ["Kink", "find_kinks", "kink_masks", "branch_changes", "kink_rows", "RowReach", "registry_notes",
           "StepCrossings", "row_seeds", "excuse_mismatches"]


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

    `mask` marks the kink elements in the op's output. `rows`, `cols` and `entries` (block name ->
    flat indices) are filled in by a derivative check: the rows that reach a kink element, the columns
    whose step crosses one, and the entries whose value is a convention (rows that reach a kink
    element their column's step crosses; with a batch axis, in the same sample), of which
    `entry_count` has the number and `entries` up to 20.
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
    entries: dict[str, list[dict]] = field(default_factory=dict)
    entry_count: dict[str, int] = field(default_factory=dict)

    @property
    def site(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "<unknown>"

    def to_dict(self) -> dict:
        """Keys: op, file, line, site ("file:line"), count (kink elements), notes (the convention
        jaccli uses there), rows and cols (block name -> affected row / column indices), entries
        (block name -> up to 20 convention-dependent entries, each ``row``, ``col`` and, with a batch
        axis, ``sample``) and entry_count (block name -> how many there are)."""
        return {"op": self.op, "file": self.file, "line": self.line, "site": self.site, "count": self.count,
                "notes": self.notes, "rows": {k: [int(i) for i in v] for k, v in self.rows.items()},
                "cols": {k: [int(i) for i in v] for k, v in self.cols.items()},
                "entries": {k: [dict(e) for e in v] for k, v in self.entries.items()},
                "entry_count": dict(self.entry_count)}


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


def _unsymmetric_moves(a: Any, b: Any) -> np.ndarray | None:
    """Per matrix of a stack (shape ``a.shape[:-2]``): the change from a to b has an antisymmetric part
    beyond rounding. None when a and b are not matrices of one shape."""
    a, b = np.asarray(peek(a)), np.asarray(peek(b))
    if a.shape != b.shape or a.ndim < 2:
        return None
    d = b - a
    size = np.abs(d).max(axis=(-2, -1))
    return (size > 0) & (np.abs(d - np.swapaxes(d, -1, -2)).max(axis=(-2, -1)) > 1e-3 * size)


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


def _merge(into: dict, key: Any, flags: np.ndarray) -> None:
    """OR `flags` into ``into[key]``; flags of another shape collapse to one flag for the whole value."""
    old = into.get(key)
    if old is None:
        into[key] = flags
    elif old.shape == flags.shape:
        into[key] = old | flags
    else:
        into[key] = np.array(bool(old.any() or flags.any()))


_CONTROL_FLOW = "Python control flow: f runs different operations within the step"


def _crossings(base: Recording, moved: Recording, masks: dict[int, np.ndarray],
               constants: bool = True) -> tuple[dict[int, np.ndarray], dict[str, np.ndarray]]:
    """`branch_changes` element by element.

    Returns:
        Kink node index -> which of its kink elements (in the order of ``mask[mask]``) are no longer
        at a kink, for the kinks the step crosses; and description of a jump -> which elements of the
        value that jumps change (a 0-d flag where elements cannot be told apart: control flow).
    """
    a_nodes, b_nodes = base.trace.nodes, moved.trace.nodes
    if len(a_nodes) != len(b_nodes) or any(a.prim is not b.prim for a, b in zip(a_nodes, b_nodes)):
        return {i: np.ones(int(m.sum()), dtype=bool) for i, m in masks.items()}, {_CONTROL_FLOW: np.array(True)}
    crossed = {}
    for index, mask in masks.items():
        new = _mask_of(b_nodes[index])
        off = np.ones(int(mask.sum()), dtype=bool) if new.shape != mask.shape else (mask & ~new)[mask]
        if off.any():
            crossed[index] = off
    changes: dict[str, np.ndarray] = {}
    for a, b in zip(a_nodes, b_nodes):
        if not a.deps:
            continue
        if a.prim.zero_grad:
            jumped = _changed(peek(a.value), peek(b.value))
            if jumped.any():
                _merge(changes, f"{_where(a)}: a step function changes value within the step", jumped)
                continue
        if a.prim.name in _READS_ONE_TRIANGLE:
            off_symmetric = _unsymmetric_moves(a.args[0], b.args[0])
            if off_symmetric is not None and off_symmetric.any():
                _merge(changes, f"{_where(a)}: the step changes its matrix unsymmetrically; NumPy reads one "
                       "triangle, and the derivative is that of the symmetric part (A + A.T)/2", off_symmetric)
                continue
        if not constants:
            continue
        traced = {argnum for argnum, _, _ in a.parents}
        for pos, (x, y) in enumerate(zip(a.args, b.args)):
            if pos in traced:
                continue
            jumped = _changed(peek(x), peek(y))
            if jumped.any():
                what = "its condition" if a.prim.name == "np.where" and pos == 0 else f"its argument {pos}"
                _merge(changes, f"{_where(a)}: {what} changes within the step", jumped)
                break
    return crossed, changes


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
    crossed, changes = _crossings(base, moved, masks, constants)
    return set(crossed), list(changes)


# ---------------------------------------------------------------------------
# Telling samples apart (batch_axis=0)
# ---------------------------------------------------------------------------
# Elements of a boolean block worked on at once when an item's sample cannot be read off its bits.
_BLOCK = 1 << 22


def _bit_groups(B: int) -> np.ndarray:
    """(2 * bits, B) boolean: for each bit b of the sample index, the samples whose bit b is 1, then 0.

    Any two samples differ in some bit, so the groups that see something of one sample name that
    sample (`check_batch_independence` splits the samples the same way).
    """
    bits = max(1, math.ceil(math.log2(B)))
    on = ((np.arange(B)[None, :] >> np.arange(bits)[:, None]) & 1).astype(bool)
    return np.stack([on, ~on], axis=1).reshape(2 * bits, B)


def _decode(seen: np.ndarray, groups: np.ndarray, label: np.ndarray, n_labels: int,
            every: np.ndarray | None = None) -> np.ndarray:
    """Which samples items come from, from the sample groups that see them.

    Args:
        seen: (len(groups), E) boolean: item e is seen when group g moves (or is seeded).
        groups: `_bit_groups(B)`.
        label: (E,) ints in range(n_labels): what each item belongs to (a Jacobian row).
        every: (E,) boolean, or None: the item is seen when every sample moves.

    Returns:
        (B, n_labels) boolean: some item of label l, seen, comes from sample s.

    An item of one sample is seen by exactly the groups that hold it: one of the two groups of
    every bit, which spell its index. An item seen by both groups of a bit (it comes from several
    samples) or by neither (it needs several samples to move at once) is not pinned down: it
    counts for every sample the other bits allow, so an excuse is widened then, never lost.
    """
    B = groups.shape[1]
    out = np.zeros((B, n_labels), dtype=bool)
    on, off = seen[0::2], seen[1::2]  # (bits, E)
    told = on ^ off
    found = (on | off).any(axis=0) if every is None else (on | off).any(axis=0) | every
    sample = ((on & told) * (1 << np.arange(len(on)))[:, None]).sum(axis=0)
    exact = found & told.all(axis=0) & (sample < B)
    out[sample[exact], label[exact]] = True
    rest = np.flatnonzero(found & ~exact)
    step = max(1, _BLOCK // B)
    for start in range(0, len(rest), step):
        items = rest[start:start + step]
        allowed = np.ones((len(items), B), dtype=bool)
        for b in range(len(on)):
            unknown = ~(on[b, items] | off[b, items])
            allowed &= (groups[2 * b][None, :] & (on[b, items] | unknown)[:, None]) \
                | (groups[2 * b + 1][None, :] & (off[b, items] | unknown)[:, None])
        item, s = np.nonzero(allowed)
        out[s, label[items[item]]] = True
    return out


# ---------------------------------------------------------------------------
# Which Jacobian rows see a kink
# ---------------------------------------------------------------------------
# Seed values swept at once by kink_rows (rows x sample groups x output size).
_SEED_BUDGET = 1 << 22


@dataclass
class RowReach:
    """Which rows of one output reach each kink element with a nonzero cotangent (`kink_rows`).

    `hit` maps a kink's node index to a ``(G, K, count)`` boolean: seed group g (with a batch axis, the
    rows of the samples in group g of `groups`; else G = 1, the rows themselves), row k, kink element.
    """

    hit: dict[int, np.ndarray]
    groups: np.ndarray | None = None
    _who: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def rows(self, index: int) -> np.ndarray:
        """(K,) boolean: the row reaches some kink element (of some sample)."""
        return self.hit[index].any(axis=(0, 2))

    def entries(self, index: int, elements: np.ndarray) -> np.ndarray:
        """(B, K) boolean (B = 1 without a batch axis): row k of sample s reaches one of the kink's
        `elements` (a boolean over its kink elements, such as those a step moves off the kink)."""
        if self.groups is None:
            return self.hit[index][0][:, elements].any(axis=1)[None, :]
        who = self.who(index)[:, elements]
        out = np.zeros((self.groups.shape[1], who.shape[0]), dtype=bool)
        k, e = np.nonzero(who >= 0)
        out[who[k, e], k] = True
        k, e = np.nonzero(who == -2)
        if len(k):
            seen = self.hit[index][:, k, np.flatnonzero(elements)[e]]
            out |= _decode(seen, self.groups, k, who.shape[0])
        return out

    def who(self, index: int) -> np.ndarray:
        """(K, count) ints: the sample whose row k reaches kink element e; -1 none; -2 not one sample
        (`_decode` tells which then)."""
        if index not in self._who:
            h = self.hit[index]
            on, off = h[0::2], h[1::2]
            told = on ^ off
            sample = np.zeros(h.shape[1:], dtype=np.int64)
            for b in range(len(on)):
                sample |= (on[b] & told[b]).astype(np.int64) << b
            found = (on | off).any(axis=0)
            exact = found & told.all(axis=0) & (sample < self.groups.shape[1])
            self._who[index] = np.where(exact, sample, np.where(found, -2, -1))
        return self._who[index]


def _at_elements(value: Any, mask: np.ndarray) -> np.ndarray:
    """(n, mask.sum()) boolean: which of n stacked cotangents are nonzero at the kink elements."""
    arr = np.asarray(peek(value))
    n, count = arr.shape[0], int(mask.sum())
    if arr.shape[1:] == mask.shape:
        return arr[:, mask] != 0
    # A cotangent of another shape than the kink's: its elements cannot be matched, so a seed that
    # reaches any of them (or every seed, when the shapes do not line up) counts for all of them.
    try:
        m = np.broadcast_to(mask, arr.shape[1:])
        some = (arr[:, m] != 0).any(axis=1)
    except ValueError:
        some = np.ones(n, dtype=bool)
    return np.repeat(some[:, None], count, axis=1)


def kink_rows(rec: Recording, i: int, rows: np.ndarray, kinks: Sequence[Kink], batch: bool) -> RowReach:
    """Which rows of output i reach each kink's kink elements with a nonzero cotangent.

    Reverse sweeps of one seed per selected row (with batch, per row and per sample group of
    `_bit_groups`, each sample scaled by its own random factor so that samples do not cancel), with a
    monitor on the cotangents flowing into the kink ops; a row whose cotangent at a kink element is
    zero does not see that kink's convention. Seeds are swept in blocks of at most _SEED_BUDGET values.

    Returns:
        A RowReach.
    """
    out = rec.outputs[i]
    groups = _bit_groups(np.shape(out)[0]) if batch else None
    n_groups = 1 if groups is None else len(groups)
    rows = np.asarray(rows)
    k = len(rows)
    hit = {kink.node_index: np.zeros((n_groups, k, kink.count), dtype=bool) for kink in kinks}
    masks = {kink.node_index: kink.mask for kink in kinks}
    ref = rec.out_refs[i]
    if ref is None or not k:
        return RowReach(hit, groups)
    if groups is not None:
        scale = np.random.default_rng(0).uniform(0.5, 1.5, size=groups.shape[1])
        weights = (groups * scale).reshape(groups.shape + (1,) * (np.ndim(out) - 1))
    chunk = max(1, _SEED_BUDGET // (n_groups * max(1, int(np.size(out)))))
    for start in range(0, k, chunk):
        part = rows[start:start + chunk]
        seeds = row_seeds(out, part, batch)
        if groups is not None:
            seeds = (seeds[:, None] * weights[None]).reshape((len(part) * n_groups,) + np.shape(out))

        def note(index: int, nonzero: np.ndarray, start: int = start, n: int = len(part)) -> None:
            hit[index][:, start:start + n] |= nonzero.reshape(n, n_groups, -1).transpose(1, 0, 2)

        if ref[0].index in masks:
            note(ref[0].index, _at_elements(seeds, masks[ref[0].index]))

        def monitor(node: core.Node, argnum: int, ct: Any, kind: str) -> None:
            for a, parent, _ in node.parents:
                if a == argnum and parent.index in masks:
                    note(parent.index, _at_elements(ct, masks[parent.index]))
            if saved is not None:
                saved(node, argnum, ct, kind)

        saved = core.MONITOR.v
        core.MONITOR.v = monitor
        try:
            with np.errstate(all="ignore"):
                rec.vjp([seeds if o == i else None for o in range(len(rec.outputs))])
        finally:
            core.MONITOR.v = saved
    return RowReach(hit, groups)


# ---------------------------------------------------------------------------
# What finite-difference steps cross
# ---------------------------------------------------------------------------
class StepCrossings:
    """Per input element c: what a finite-difference step along c crosses (recorded at x +- h e_c).

    f is recorded with float64 inputs, as the finite differences see it; `kinks` are those at x.
    With batch, a step moves element c of every sample at once, as the finite differences do;
    `samples` tells which samples' own steps cross what.
    """

    def __init__(self, f: Callable, args: tuple, wrt_idx: tuple, batch: bool) -> None:
        self.f, self.args, self.wrt_idx, self.batch = f, args, wrt_idx, batch
        with np.errstate(all="ignore"):
            self.base = Recording(f, args, wrt_idx)
        # where f takes a derivative without create_graph (a constant to AD, not to finite differences)
        self.severed = self.base.trace.severed
        self.kinks = find_kinks(self.base)
        self.masks = {k.node_index: k.mask for k in self.kinks}
        self.B = int(np.shape(args[wrt_idx[0]])[0]) if batch and wrt_idx else 1
        self.cache: dict[tuple[int, int], tuple[dict, dict]] = {}
        self.split: dict[tuple[int, int], tuple[dict, dict]] = {}
        self.recordings = 1

    def _step(self, j: int, c: int, which: np.ndarray | None) -> tuple[dict, dict]:
        """`_crossings` of the steps +h and -h along element c of input j, ORed; with `which`, only the
        samples it marks move."""
        k = self.wrt_idx[j]
        x = np.asarray(self.args[k])
        flat = x.reshape((x.shape[0], -1) if self.batch else (-1,))
        at = (Ellipsis, c) if which is None else (which, c)
        crossed: dict[int, np.ndarray] = {}
        changes: dict[str, np.ndarray] = {}
        for sign in (1.0, -1.0):
            moved = flat.copy()
            moved[at] = flat[at] + sign * fd_step(flat[at])
            args = list(self.args)
            args[k] = moved.reshape(x.shape)
            self.recordings += 1
            try:
                with np.errstate(all="ignore"):
                    rec = Recording(self.f, args, self.wrt_idx)
            except Exception as exc:  # noqa: BLE001 - f itself failing within the step is a jump too
                for index, mask in self.masks.items():
                    _merge(crossed, index, np.ones(int(mask.sum()), dtype=bool))
                _merge(changes, f"f raises within the step ({type(exc).__name__})", np.array(True))
                continue
            cr, ch = _crossings(self.base, rec, self.masks, constants=self.severed is None)
            for index, flags in cr.items():
                _merge(crossed, index, flags)
            for text, flags in ch.items():
                _merge(changes, text, flags)
        return crossed, changes

    def __call__(self, j: int, c: int) -> tuple[dict[int, np.ndarray], list[str]]:
        """What the step along element c of input j crosses: kink node index -> which of its kink
        elements the step moves off the kink (for the kinks it crosses); descriptions of the jumps."""
        key = (j, int(c))
        if key not in self.cache:
            self.cache[key] = self._step(j, int(c), None)
        crossed, changes = self.cache[key]
        return crossed, list(changes)

    def samples(self, j: int, c: int, among: np.ndarray | None = None) -> tuple[dict[int, np.ndarray],
                                                                             dict[str, np.ndarray]]:
        """Whose steps cross what: kink node index (description of a jump) -> (B,) boolean, the samples
        whose own step along element c of input j crosses that kink (jump); B = 1 without batch.

        With batch, found from the steps of sample groups (`_bit_groups`), taken only when the step
        of every sample crosses something: 2 * ceil(log2 n) more steps for n samples, one for one.
        `among` ((B,) boolean) limits this to the samples it marks; the others come out False.
        """
        crossed, changes = self.cache[(j, int(c))] if (j, int(c)) in self.cache else self._cached(j, c)
        if not self.batch or self.B == 1 or not (crossed or changes):
            one = np.ones(self.B, dtype=bool)
            return {index: one for index in crossed}, {text: one for text in changes}
        who = np.flatnonzero(np.ones(self.B, dtype=bool) if among is None else among)
        key = (j, int(c), who.tobytes())
        if key not in self.split:
            if len(who) <= 1:
                local = np.ones((1, len(who)), dtype=bool)
            else:
                local = _bit_groups(len(who))
            steps = []
            for g in local:
                which = np.zeros(self.B, dtype=bool)
                which[who[g]] = True
                steps.append(self._step(j, int(c), which) if which.any() else ({}, {}))
            if len(who) <= 1:  # one sample: what its own step crosses is its own
                told = ({index: np.ones(len(who), dtype=bool) for index in steps[0][0]},
                        {text: np.ones(len(who), dtype=bool) for text in steps[0][1]})
            else:
                told = (self._whose(crossed, [st[0] for st in steps], local),
                        self._whose(changes, [st[1] for st in steps], local))
            result: tuple[dict, dict] = ({}, {})
            for part, out in zip(told, result):
                for name, flags in part.items():
                    out[name] = np.zeros(self.B, dtype=bool)
                    out[name][who] = flags
            self.split[key] = result
        return self.split[key]

    def _cached(self, j: int, c: int) -> tuple[dict, dict]:
        self(j, c)
        return self.cache[(j, int(c))]

    @staticmethod
    def _whose(every: dict, by_group: list[dict], groups: np.ndarray) -> dict:
        out = {}
        for name, flags in every.items():
            seen = [g.get(name) for g in by_group]
            if any(s is not None and s.shape != flags.shape for s in seen):  # one flag for the whole value
                flags = np.array(flags.any())
                seen = [None if s is None else np.array(s.any()) for s in seen]
            rows = np.stack([np.zeros(flags.size, dtype=bool) if s is None else s.reshape(-1) for s in seen])
            out[name] = _decode(rows, groups, np.zeros(flags.size, dtype=int), 1, every=flags.reshape(-1))[:, 0]
        return out

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
                      order: int, reach: dict) -> tuple[np.ndarray, dict]:
    """The mismatching entries of block (i, j) whose finite-difference step crosses a kink or a jump.

    With a batch axis an entry is excused only by what its own sample's step crosses: a kink or a
    jump of another sample does not excuse it.

    Args:
        mism: mismatch mask of the checked slice, ``(len(rows), len(cols))`` or ``(B, ...)``.
        i, j: the block: output (order 1) or row input (order 2), and column input.
        rows, cols: the flat indices of the slice.
        cross: the step crossings of f at the point.
        order: 1 (a kink counts for the rows whose cotangent reaches the kink elements the step moves
            off the kink, from `reach`) or 2 (for the rows whose own step also crosses it).
        reach: order 1: output -> `kink_rows` result for `rows`.

    Returns:
        The excused mask, and a reason per (sample, column position) with an excused entry (sample 0
        without a batch axis).
    """
    excused = np.zeros(mism.shape, dtype=bool)
    reasons: dict[tuple[int, int], str] = {}
    n = cross.B if cross.batch else 1
    for q in np.flatnonzero(mism.any(axis=tuple(range(mism.ndim - 1)))):
        crossed, changes = cross(j, cols[q])
        if not (crossed or changes):
            continue
        m = mism[..., q].reshape(n, len(rows))
        # the samples whose own step crosses what, told apart among those with a mismatch in the column
        kink_samples, jump_samples = cross.samples(j, cols[q], among=m.any(axis=1)) \
            if changes or order == 2 else ({}, {})
        # a jump changes f itself within the step: every row of the samples whose step crosses it
        found = [(text, np.broadcast_to(s[:, None], m.shape)) for text, s in jump_samples.items()]
        for kid, elements in crossed.items():
            if order == 1:
                now = reach[i].entries(kid, elements)
            else:  # a Hessian entry (r, c) depends on the kink when the steps along both r and c cross it
                now = kink_samples[kid][:, None] & np.stack(
                    [cross.samples(i, r)[0].get(kid, np.zeros(n, dtype=bool)) for r in rows], axis=1)
            found.append((cross.describe(kid), now))
        ok = np.zeros(m.shape, dtype=bool)
        for reason, now in found:
            for s in np.flatnonzero((now & m & ~ok).any(axis=1)):
                reasons.setdefault((int(s), int(q)), reason)
            ok |= now
        excused[..., q] = (m & ok).reshape(mism[..., q].shape)
    return excused, reasons
