"""The self-check of sparse results: J v against one JVP and w^T J against one VJP along random directions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .jacobian_hessian import hessian as _lazy_hessian, jacobian as _lazy_jacobian
from .lazy import _Block
from .sparse import _leaves, _scipy, _shapes

__all__ = ["SparseCheck", "check_sparse"]


@dataclass
class SparseCheck:
    """A sparse result against one JVP and one VJP along random directions.

    Attributes:
        forward_error, reverse_error: largest |J v - jvp(v)| and |w^T J - vjp(w)|, each relative
            to the sum of the absolute terms of its products (so rounding alone stays near 1e-16).
        rows, cols: rows whose J v and columns whose w^T J disagree beyond `rtol`: where an entry
            outside the pattern (or a wrong value) sits.
        passed: both errors within `rtol`.
    """

    forward_error: float
    reverse_error: float
    rows: np.ndarray
    cols: np.ndarray
    rtol: float

    @property
    def passed(self) -> bool:
        return self.forward_error <= self.rtol and self.reverse_error <= self.rtol


def check_sparse(f: Callable, inputs: Any, result: Any, *, wrt: Any = None, hessian: bool = False,
                 rtol: float = 1e-10, seed: int = 0) -> SparseCheck:
    """Check a sparse Jacobian (or Hessian) cheaply: J v against one forward sweep and w^T J
    against one reverse sweep, for random v and w; report the rows and columns that disagree.

    >>> import numpy as np, jaccli
    >>> f = lambda x: np.sin(x[1:] * x[:-1]); x = np.linspace(0.1, 1.0, 6)
    >>> jaccli.check_sparse(f, x, jaccli.sparse_jacobian(f, x)).passed
    True
    """
    sp = _scipy()
    lazy = (_lazy_hessian if hessian else _lazy_jacobian)(f, inputs, wrt=wrt)
    rec = _leaves(lazy)[0]._ev.rec
    outs, ins = _shapes(rec)
    cols = np.cumsum([0] + [math.prod(s) for s in ins])
    rows = np.cumsum([0] + [math.prod(s) for s in (ins if hessian else outs)])
    if isinstance(result, tuple) and isinstance(lazy, tuple):
        matrix = sp.csr_array(sp.block_array([[b for b in row] for row in _grid(result, lazy)], format="csr"))
    elif np.ndim(result) == 2 or sp.issparse(result):  # (the whole stacked matrix: one block, or a selection's)
        matrix = sp.csr_array(result)
    else:
        raise TypeError(f"check_sparse checks a sparse result as sparse_{'hessian' if hessian else 'jacobian'} gives "
                        f"it (a 2-D matrix, or nested tuples of them), not {type(result).__name__} of shape "
                        f"{np.shape(result)}")
    want = (int(rows[-1]), int(cols[-1]))
    if matrix.shape != want:
        m = sum(math.prod(s) for s in outs)  # (f's outputs: only a scalar f has a Hessian)
        other = (int(cols[-1]),) * 2 if not hessian else (m, int(cols[-1]))
        hint = (f"; it is the {'Hessian' if not hessian else 'Jacobian'}'s shape: give hessian={not hessian}"
                if matrix.shape == other and other != want and (hessian or m == 1) else "")
        raise ValueError(f"the result to check is {matrix.shape[0]} x {matrix.shape[1]}, and the "
                         f"{'Hessian' if hessian else 'Jacobian'} of f at these inputs is {want[0]} x {want[1]}{hint}")
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(matrix.shape[1])
    w = rng.standard_normal(matrix.shape[0])
    jv = rec.jvp([v[a:b].reshape((1,) + s) for a, b, s in zip(cols, cols[1:], ins)])
    jv = np.concatenate([np.zeros(b - a) if r is None else np.ravel(r)
                         for r, a, b in zip(jv, rows, rows[1:])])
    out_shapes = ins if hessian else outs
    wj = rec.vjp([w[a:b].reshape((1,) + s) for a, b, s in zip(rows, rows[1:], out_shapes)])
    wj = np.concatenate([np.zeros(b - a) if r is None else np.ravel(r) for r, a, b in zip(wj, cols, cols[1:])])
    scale_f = abs(matrix) @ np.abs(v) + np.abs(jv)
    scale_r = abs(matrix).T @ np.abs(w) + np.abs(wj)
    err_f = np.abs(matrix @ v - jv) / np.where(scale_f > 0, scale_f, 1.0)
    err_r = np.abs(matrix.T @ w - wj) / np.where(scale_r > 0, scale_r, 1.0)
    err_f = np.where(np.isnan(err_f), np.inf, err_f)
    err_r = np.where(np.isnan(err_r), np.inf, err_r)
    return SparseCheck(float(err_f.max(initial=0.0)), float(err_r.max(initial=0.0)),
                       np.flatnonzero(err_f > rtol), np.flatnonzero(err_r > rtol), rtol)


def _grid(result: Any, lazy: Any) -> list[list[Any]]:
    """A nested result (as sparse_jacobian returns it) as a full grid of blocks [i][j]."""
    n_out = 1 + max(b._i for b in _leaves(lazy))
    n_in = 1 + max(b._j for b in _leaves(lazy))
    grid: list[list[Any]] = [[None] * n_in for _ in range(n_out)]

    def fill(res: Any, lz: Any) -> None:
        if isinstance(lz, _Block):
            grid[lz._i][lz._j] = res
        else:
            for r, l in zip(res, lz):
                fill(r, l)
    fill(result, lazy)
    return grid
