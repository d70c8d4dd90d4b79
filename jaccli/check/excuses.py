"""Which mismatches of a derivative check a kink or a jump excuses: those whose step crosses one."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .step_crossings import StepCrossings

__all__ = ["excuse_mismatches"]


def excuse_mismatches(mism: np.ndarray, i: int, j: int, rows: np.ndarray, cols: np.ndarray, cross: StepCrossings,
                      order: int, reach: dict, kinked: Callable[[int], np.ndarray] | None = None
                      ) -> tuple[np.ndarray, dict]:
    """The mismatching entries of block (i, j) whose finite-difference step crosses a kink (at x or near
    it) or a jump.

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
        kinked: column position q -> the rows (``(len(rows),)`` or ``(B, len(rows))``) along whose column
            f is kinked (its one-sided differences disagree): a kink excuses only those; None: every row.

    Returns:
        The excused mask, and a reason per (sample, column position) with an excused entry (sample 0
        without a batch axis).
    """
    excused = np.zeros(mism.shape, dtype=bool)
    reasons: dict[tuple[int, int], str] = {}
    n = cross.B if cross.batch else 1
    columns = np.flatnonzero(mism.any(axis=tuple(range(mism.ndim - 1))))
    # every column's steps first: the rows that reach the kinks near x they cross take one sweep
    near = [cross.near(j, cols[q]) for q in columns]
    masks, near_reach = cross.near_rows(i, rows) if order == 1 and any(near) else ({}, None)
    for q, near_q in zip(columns, near):
        crossed, changes = cross(j, cols[q])
        if not (crossed or changes or near_q):
            continue
        m = mism[..., q].reshape(n, len(rows))
        # the samples whose own step crosses what, told apart among those with a mismatch in the column
        kink_samples, jump_samples, near_samples = cross.samples(j, cols[q], among=m.any(axis=1)) \
            if changes or order == 2 else ({}, {}, {})
        # a jump changes f itself within the step: every row of the samples whose step crosses it
        found = [(text, np.broadcast_to(s[:, None], m.shape)) for text, s in jump_samples.items()]
        # a kink excuses only where f (order 2: the gradient's row) is kinked along the column: |u| ** 2
        # at 0 is not; |x0| x1 at x0 = 0 is, in the row of x1 along x0, where a Hessian's one-sided slope
        # of abs (engine/second_order.py) differs from the central difference
        bent = True if kinked is None or not (crossed or near_q) else np.reshape(kinked(q), m.shape)
        for kid, elements in crossed.items():
            now = reach[i].entries(kid, elements) if order == 1 else _column(kink_samples[kid], m.shape)
            found.append((cross.describe(kid), now & bent))
        for index, elements in near_q.items():
            now = near_reach.entries(index, elements[masks[index]]) if order == 1 \
                else _column(near_samples[index], m.shape)
            found.append((cross.describe_near(index), now & bent))
        ok = np.zeros(m.shape, dtype=bool)
        for reason, now in found:
            for s in np.flatnonzero((now & m & ~ok).any(axis=1)):
                reasons.setdefault((int(s), int(q)), reason)
            ok |= now
        excused[..., q] = (m & ok).reshape(mism[..., q].shape)
    return excused, reasons


def _column(samples: np.ndarray, shape: tuple) -> np.ndarray:
    """(B, len(rows)) boolean: every row of the samples whose step along the column crosses the kink."""
    return np.broadcast_to(samples[:, None], shape)
