"""Telling samples apart (batch_axis=0): groups of samples by the bits of their index."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["bit_groups", "decode_samples"]

# Elements of a boolean block worked on at once when an item's sample cannot be read off its bits.
_BLOCK = 1 << 22


def bit_groups(B: int) -> np.ndarray:
    """(2 * bits, B) boolean: for each bit b of the sample index, the samples whose bit b is 1, then 0.

    Any two samples differ in some bit, so the groups that see something of one sample name that
    sample (`check_batch_independence` splits the samples the same way).
    """
    bits = max(1, math.ceil(math.log2(B)))
    on = ((np.arange(B)[None, :] >> np.arange(bits)[:, None]) & 1).astype(bool)
    return np.stack([on, ~on], axis=1).reshape(2 * bits, B)


def decode_samples(seen: np.ndarray, groups: np.ndarray, label: np.ndarray, n_labels: int,
                   every: np.ndarray | None = None) -> np.ndarray:
    """Which samples items come from, from the sample groups that see them.

    Args:
        seen: (len(groups), E) boolean: item e is seen when group g moves (or is seeded).
        groups: `bit_groups(B)`.
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
