"""How large the terms a reverse sweep adds up are, per seeded row: the scale of its rounding error.

Reverse and forward mode add the same products in different orders, so they differ by rounding, which
is a few eps of the sum of the absolute values of the terms, not of the result: at a least-squares
optimum the gradient is a sum of large terms that cancel to almost 0, and two orders of adding them
differ by far more than eps times the gradient.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from jaccli.engine import MONITOR, Recording, peek

__all__ = ["row_term_scales"]


class _Magnitudes:
    """A MONITOR: for each of the K seeds of a sweep, the largest sum of |value| of any cotangent block
    a rule produced in it."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.largest = np.zeros(k)

    def __call__(self, node: Any, argnum: int, value: Any, kind: str) -> None:
        for part in value if isinstance(value, (tuple, list)) else (value,):
            try:
                arr = np.asarray(peek(part))
            except (TypeError, ValueError):  # a structured block that is no array: its dense form counts elsewhere
                continue
            if arr.dtype.kind not in "fc" or arr.ndim == 0 or arr.shape[0] != self.k:
                continue
            with np.errstate(all="ignore"):
                sums = np.abs(arr).reshape(self.k, -1).sum(axis=1)
            np.fmax(self.largest, np.where(np.isfinite(sums), sums, 0.0), out=self.largest)


def row_term_scales(f: Callable, args: tuple, wrt: Sequence[int], output: int, rows: np.ndarray) -> np.ndarray | None:
    """For each flat row `rows` of output `output` of f: the largest sum of absolute values of a cotangent
    its reverse sweep carries (one sweep of len(rows) seeds, every rule watched). A bound, within a
    small factor, of the sum of the absolute terms of every entry of that row of the Jacobian.

    Returns None when f cannot be recorded again or the output is not traced (a constant).

    >>> scales = row_term_scales(lambda x: np.sum(x * np.array([1e8, -1e8])), (np.ones(2),), (0,), 0, np.arange(1))
    >>> bool(scales[0] >= 2e8)
    True
    """
    try:
        rec = Recording(f, args, tuple(wrt))
    except Exception:  # noqa: BLE001 - the scale is a refinement; the check itself reports f's failures
        return None
    if output >= len(rec.live) or not rec.live[output] or not len(rows):
        return None
    shape = np.shape(rec.outputs[output])
    seeds: list[Any] = [None] * len(rec.live)
    seed = np.zeros((len(rows), int(np.prod(shape))))
    seed[np.arange(len(rows)), rows] = 1.0
    seeds[output] = seed.reshape((len(rows),) + tuple(shape))
    watch = _Magnitudes(len(rows))
    saved, MONITOR.v = MONITOR.v, watch
    try:
        rec.vjp(seeds)
    finally:
        MONITOR.v = saved
    return np.maximum(watch.largest, 1.0)
