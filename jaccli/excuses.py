"""Which mismatches of a derivative check a kink or a jump excuses: those whose step crosses one."""

from __future__ import annotations

import numpy as np

from .step_crossings import StepCrossings

__all__ = ["excuse_mismatches"]


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
