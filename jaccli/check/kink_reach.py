"""Which Jacobian rows reach a kink, and which samples reach an op's elements: reverse sweeps that watch cotangents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Sequence

import numpy as np

from jaccli.engine import MONITOR, Node, Recording, peek
from .kinks import Kink
from .sample_groups import bit_groups, decode_samples

__all__ = ["RowReach", "kink_rows", "row_seeds", "sample_reach"]

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
            out |= decode_samples(seen, self.groups, k, who.shape[0])
        return out

    def who(self, index: int) -> np.ndarray:
        """(K, count) ints: the sample whose row k reaches kink element e; -1 none; -2 not one sample
        (`decode_samples` tells which then)."""
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
    `bit_groups`, each sample scaled by its own random factor so that samples do not cancel), with a
    monitor on the cotangents flowing into the kink ops; a row whose cotangent at a kink element is
    zero does not see that kink's convention. Seeds are swept in blocks of at most _SEED_BUDGET values.

    Returns:
        A RowReach.
    """
    out = rec.outputs[i]
    groups = bit_groups(np.shape(out)[0]) if batch else None
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

        def note(index: int, ct: Any, start: int = start, n: int = len(part)) -> None:
            nonzero = _at_elements(ct, masks[index])
            hit[index][:, start:start + n] |= nonzero.reshape(n, n_groups, -1).transpose(1, 0, 2)

        _sweep_watching(rec, [seeds if o == i else None for o in range(len(rec.outputs))], masks, note)
    return RowReach(hit, groups)


def sample_reach(rec: Recording, nodes: Collection[int], groups: np.ndarray,
                 structural: bool = False) -> dict[int, np.ndarray]:
    """Which sample groups' outputs reach each element of some ops' outputs with a nonzero cotangent.

    One reverse sweep of one seed per group of `groups` (`bit_groups(B)`): every output element of
    the group's samples, each with its own random weight so that nothing cancels, and none of the
    others; with a monitor on the cotangents flowing into the ops.

    Args:
        rec: f recorded with a batch axis 0 on its outputs.
        nodes: node indices of single-output ops of `rec`.
        groups: (G, B) boolean sample groups.
        structural: seed NaN instead of random weights: a derivative that is zero at x (relu off,
            a zero factor) passes NaN on, so only an element that no path reads (sliced off, the
            branch np.where did not pick) stays unreached.

    Returns:
        Node index -> (G, size) boolean: group g reaches element e (flat) of that op's output
        (`decode_samples` reads the samples off it).
    """
    masks = {index: np.ones(np.shape(peek(rec.trace.nodes[index].value)), dtype=bool) for index in nodes}
    seen = {index: np.zeros((len(groups), mask.size), dtype=bool) for index, mask in masks.items()}
    rng = np.random.default_rng(0)
    seeds = []
    for out, ref in zip(rec.outputs, rec.out_refs):
        if ref is None or np.ndim(out) == 0 or np.shape(out)[0] != groups.shape[1]:
            seeds.append(None)
            continue
        held = groups.reshape(groups.shape + (1,) * (np.ndim(out) - 1))
        seeds.append(np.where(held, np.nan, 0.0) * np.ones(np.shape(out)) if structural
                     else held * rng.uniform(0.5, 1.5, np.shape(out)))

    def note(index: int, ct: Any) -> None:
        seen[index] |= _at_elements(ct, masks[index])

    _sweep_watching(rec, seeds, masks, note)
    return seen


def _sweep_watching(rec: Recording, seeds: list, watched: Collection[int], note: Callable[[int, Any], None]) -> None:
    """One reverse sweep of `seeds` (a block per output, or None) that calls ``note(index, ct)`` with every
    block of cotangents flowing into the output of a watched node (the seed itself, for an output)."""
    for ref, seed in zip(rec.out_refs, seeds):
        if ref is not None and seed is not None and ref[0].index in watched:
            note(ref[0].index, seed)

    def monitor(node: Node, argnum: int, ct: Any, kind: str) -> None:
        for a, parent, _ in node.parents:
            if a == argnum and parent.index in watched:
                note(parent.index, ct)
        if saved is not None:
            saved(node, argnum, ct, kind)

    saved = MONITOR.v
    MONITOR.v = monitor
    try:
        with np.errstate(all="ignore"):
            rec.vjp(seeds)
    finally:
        MONITOR.v = saved


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

