"""Selected rows and columns of a sparse Jacobian or Hessian, in only the sweeps they need.

The pattern restricted to the selection is coloured on its own: a forward colour seeds only
columns that reach a selected row, a reverse colour only selected rows; the products are read
at the selection and recovered into a CSR array of len(rows) x len(cols).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def selected_plan(pattern: Any, rows: np.ndarray, cols: np.ndarray, mode: str, hessian: bool) -> Any:
    """The plan of pattern[rows][:, cols] (forward only for a Hessian: the selection is not symmetric)."""
    from jaccli.sparse import jacobian_plan

    sub = pattern[rows][:, cols]
    return jacobian_plan(sub, mode="forward" if hessian else mode)


def _expanded(seeds: Any, index: np.ndarray, size: int) -> Any:
    """Seeds over the selected `index` (len(index) x K) as seeds over the whole side (size x K)."""
    import scipy.sparse as sp

    coo = sp.coo_array(seeds)
    return sp.csr_array((coo.data, (index[coo.row], coo.col)), shape=(size, seeds.shape[1]))


def compute_selected(ev: Any, sparse: Any, rows: np.ndarray, cols: np.ndarray, mode: str,
                     products: Any) -> tuple[Any, Any]:
    """(the selected CSR block, its plan): `products(ev, seeds, seeded, results, sweep)` runs the
    compressed sweeps, as for the whole matrix."""
    plan = selected_plan(sparse.pattern, rows, cols, mode, sparse.hessian)
    m, n = sparse.shape
    outs = sparse.in_shapes if sparse.hessian else sparse.out_shapes
    got = []
    if plan.mode in ("forward", "bidirectional"):  # J @ S over the selected columns, read at the selected rows
        seeds = _expanded(plan.forward_seeds(), cols, n)
        got.append(products(ev, seeds, sparse.in_shapes, outs, ev.rec.jvp).T[rows])
    if plan.mode in ("reverse", "bidirectional"):  # S^T @ J over the selected rows, read at the selected columns
        seeds = _expanded(plan.reverse_seeds(), rows, m)
        got.append(products(ev, seeds, outs, sparse.in_shapes, ev.rec.vjp)[:, cols])
    return plan.recover(*got), plan


def selected_indices(spec: Any, size: int, what: str) -> np.ndarray:
    """The positions `spec` selects along an axis of `size` (`what`: "rows" or "cols", for messages), in its
    order, as NumPy indexes a 1-D array: integers (negative ones from the end), a boolean mask of the whole
    axis, a slice, or a function of the axis length giving any of these; None: every position.

    Raises:
        IndexError: an integer out of range, or a mask of another length.
        TypeError: anything else (floats, strings).
    """
    if spec is None:
        return np.arange(size)
    if callable(spec):
        spec = spec(size)
    if isinstance(spec, slice):
        return np.arange(size)[spec]
    index = np.asarray(spec)
    if index.ndim > 1:
        raise IndexError(f"{what} should be 1-D (integers, a boolean mask or a slice), not of shape {index.shape}")
    if index.dtype == bool:
        if index.shape != (size,):
            raise IndexError(f"{what}: a boolean mask of {index.size} entries for {size} {what}; give one entry per "
                             f"{what[:-1]}")
        return np.flatnonzero(index)
    if index.size and index.dtype.kind not in "iu":
        raise TypeError(f"{what} should be integers, a boolean mask or a slice, not {index.dtype} values")
    index = np.atleast_1d(index).astype(np.int64)
    bad = (index < -size) | (index >= size)
    if bad.any():
        raise IndexError(f"{what}: index {int(index[bad][0])} is out of range for {size} {what}")
    return np.where(index < 0, index + size, index)
