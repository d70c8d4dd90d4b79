"""Rules for diagonals and triangles of matrices: diag, diagonal, tril, triu."""

from __future__ import annotations

import numpy as np

from ..facts import allow_in_expressions
from ..registry import family, register_derived
from ._util import dtype_of
from .indexing import gather, positions, rearrange, scatter_flat
from .piecewise import where
from .shape import reshape

family("diagonals")


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return rearrange(a, np.diagonal(positions(np.shape(a)), offset, axis1, axis2))


def _diag(v, k=0):
    shape = np.shape(v)
    if len(shape) == 2:
        return _diagonal(v, k)
    if len(shape) != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = shape[0]
    m = n + abs(k)
    rows = np.arange(n) + max(-k, 0)
    cols = np.arange(n) + max(k, 0)
    return np.reshape(scatter_flat(v, rows * m + cols, m * m), (m, m))


register_derived(np.diagonal, _diagonal, uses=(gather,))
register_derived(np.diag, _diag, uses=(gather, scatter_flat, reshape))


# ---------------------------------------------------------------------------
# tril and triu keep a triangle of the last two axes: the cotangent is masked the same way
# ---------------------------------------------------------------------------
def _triangle(m, k, lower):
    shape = np.shape(m)
    rows, cols = shape[-2:] if len(shape) >= 2 else (shape[-1], shape[-1])
    keep = np.tri(rows, cols, k, dtype=bool)
    if not lower:
        keep = ~np.tri(rows, cols, k - 1, dtype=bool)
    # A 1-D input broadcasts against the mask into a matrix, as in NumPy.
    return np.where(keep, m, np.zeros((), dtype=dtype_of(m)))


register_derived(np.tril, lambda m, k=0: _triangle(m, int(k), True), uses=(where,))
register_derived(np.triu, lambda m, k=0: _triangle(m, int(k), False), uses=(where,))
allow_in_expressions("diag", "diagonal", "tril", "triu")
