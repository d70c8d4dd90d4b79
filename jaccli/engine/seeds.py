"""Sparse seed blocks: identity rows (and what elementwise rules make of them) without dense eye().

A `SparseBlock` of shape ``(K,) + S`` holds, for each seed k, a few entries: flat positions
``idx[k, t]`` in S with values ``val[k, t]`` (repeated positions add up). Sweeps start from
identity seeds in this form; the operations rules apply to it keep it sparse where that is
cheap (scaling, sums over axes, reshapes, transposes, basic slicing, gathers, matrix products),
and anything else turns it into a dense array first, so every rule stays correct unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_DENSE_FRACTION = 0.25  # densify when a seed holds more than this share of its entries


def _is_plain(x: Any) -> bool:
    return isinstance(x, (np.ndarray, float, int, np.floating, np.integer))


class SparseBlock:
    """A block of K seeds with a few non-zero entries each (see the module docstring)."""

    __slots__ = ("shape", "idx", "val")
    __array_priority__ = 500.0

    def __init__(self, shape: tuple, idx: np.ndarray, val: np.ndarray) -> None:
        self.shape = tuple(shape)
        self.idx = idx
        self.val = val

    @classmethod
    def one_hot(cls, k_positions: np.ndarray, shape: tuple, dtype: Any, per_seed: np.ndarray | None = None):
        """Seeds e_{p_k}: one entry per seed (or the given positions per seed, e.g. all samples)."""
        idx = k_positions[:, None] if per_seed is None else per_seed
        return cls((len(idx),) + tuple(shape), idx.astype(np.intp, copy=False),
                   np.ones(idx.shape, dtype=dtype))

    @property
    def dtype(self) -> np.dtype:
        return self.val.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def inner(self) -> tuple:
        return self.shape[1:]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def todense(self) -> np.ndarray:
        k = self.shape[0]
        n = math.prod(self.inner)
        out = np.zeros((k, n), dtype=self.val.dtype)
        rows = np.broadcast_to(np.arange(k)[:, None], self.idx.shape)
        if self.idx.shape[1] == 1:
            out[rows[:, 0], self.idx[:, 0]] = self.val[:, 0]
        else:
            np.add.at(out, (rows, self.idx), self.val)
        return out.reshape(self.shape)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        d = self.todense()
        return d if dtype is None else d.astype(dtype)

    def _maybe_dense(self) -> "SparseBlock | np.ndarray":
        if self.idx.shape[1] > max(1, _DENSE_FRACTION * math.prod(self.inner)):
            return self.todense()
        return self

    def _coords(self) -> tuple[np.ndarray, ...]:
        return np.unravel_index(self.idx, self.inner) if self.inner else ()

    def _with(self, shape: tuple, idx: np.ndarray, val: np.ndarray) -> "SparseBlock":
        return SparseBlock(shape, idx, val)

    # -- elementwise scaling ----------------------------------------------------
    def _factor_at(self, d: Any) -> Any | None:
        """The entries of d (broadcast over the seed shape) at this block's positions, or None."""
        if np.ndim(d) == 0:
            return d
        d = np.asarray(d)
        if d.ndim > len(self.inner) or np.broadcast_shapes(d.shape, self.inner) != self.inner:
            return None
        if d.shape == self.inner:
            return d.reshape(-1)[self.idx]
        coords = self._coords()
        lead = len(self.inner) - d.ndim
        return d[tuple(c if n != 1 else 0 for c, n in zip(coords[lead:], d.shape))]

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            return _dense_call(getattr(ufunc, method), inputs, kwargs)
        if ufunc is np.negative:
            return self._with(self.shape, self.idx, -self.val)
        if ufunc in (np.multiply, np.true_divide) and len(inputs) == 2:
            a, b = inputs
            if type(a) is SparseBlock and type(b) is not SparseBlock and _is_plain(b):
                f = self._factor_at(b)
                if f is not None:
                    return self._with(self.shape, self.idx, ufunc(self.val, f))
            if ufunc is np.multiply and type(b) is SparseBlock and type(a) is not SparseBlock and _is_plain(a):
                f = b._factor_at(a)
                if f is not None:
                    return b._with(b.shape, b.idx, a * b.val if np.ndim(a) == 0 else f * b.val)
        if ufunc in (np.add, np.subtract) and len(inputs) == 2:
            a, b = inputs
            if type(a) is SparseBlock and type(b) is SparseBlock and a.shape == b.shape:
                vb = b.val if ufunc is np.add else -b.val
                return SparseBlock(a.shape, np.concatenate([a.idx, b.idx], axis=1),
                                   np.concatenate([a.val, vb], axis=1))._maybe_dense()
        if ufunc is np.matmul and len(inputs) == 2 and type(inputs[0]) is SparseBlock and _is_plain(inputs[1]) \
                and np.ndim(inputs[1]) == 2 and self.ndim >= 3:
            return inputs[0]._matmul(np.asarray(inputs[1]))
        return _dense_call(ufunc, inputs, kwargs)

    def __add__(self, o): return np.add(self, o)
    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.true_divide(self, o)
    def __neg__(self): return np.negative(self)
    def __matmul__(self, o): return np.matmul(self, o)

    def _matmul(self, m: np.ndarray) -> np.ndarray:
        """(K, ..., a, p) @ (p, q): each entry adds val * m[col] to its row; one gather, no loop."""
        *lead, a, p = self.inner
        k = self.shape[0]
        rows = self.idx // p
        cols = self.idx % p
        n_rows = math.prod(lead) * a
        if rows.shape[1] == n_rows and (rows == np.arange(n_rows)).all() and (cols == cols[:, :1]).all():
            # Every seed touches each row once in order, all in one column (a batched identity
            # seed): the product is an outer product per seed, one broadcast multiply.
            out = self.val[..., None] * m[cols[:, 0]][:, None, :]
            return out.reshape((k, *lead, a, m.shape[1]))
        out = np.zeros((k, n_rows, m.shape[1]), dtype=np.result_type(self.val, m))
        contrib = self.val[..., None] * m[cols]
        kk = np.broadcast_to(np.arange(k)[:, None], rows.shape)
        key = kk * n_rows + rows
        if np.unique(key).size == key.size:
            out[kk, rows] = contrib
        else:
            np.add.at(out, (kk, rows), contrib)
        return out.reshape((k, *lead, a, m.shape[1]))

    # -- functions that keep the block sparse -------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is not None and type(args[0]) is SparseBlock:
            out = handler(*args, **kwargs)
            if out is not NotImplemented:
                return out
        return _dense_call(func, args, kwargs)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape)

    def __getitem__(self, idx):
        return self.todense()[idx]


def _densify(x: Any) -> Any:
    if type(x) is SparseBlock:
        return x.todense()
    if isinstance(x, (list, tuple)):
        return type(x)(_densify(v) for v in x)
    return x


def _dense_call(func, args, kwargs):
    return func(*_densify(args), **{k: _densify(v) for k, v in kwargs.items()})


def _reshape(a: SparseBlock, shape, order="C", **kw):
    if order not in ("C", "A"):
        return NotImplemented
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    full = np.empty(a.shape, dtype=bool).reshape(shape).shape if -1 in shape else shape
    if full[0] != a.shape[0]:
        return NotImplemented
    return SparseBlock(full, a.idx, a.val)


def _sum(a: SparseBlock, axis=None, dtype=None, out=None, keepdims=False, **kw):
    if axis is None:
        return NotImplemented
    axes = tuple(sorted(int(x) % a.ndim for x in (axis if isinstance(axis, (tuple, list)) else (axis,))))
    if 0 in axes:
        return NotImplemented
    coords = a._coords()
    inner_axes = [x - 1 for x in axes]
    new_inner = tuple(1 if i in inner_axes else n for i, n in enumerate(a.inner)) if keepdims else \
        tuple(n for i, n in enumerate(a.inner) if i not in inner_axes)
    kept = [np.zeros_like(c) if i in inner_axes else c for i, c in enumerate(coords)] if keepdims else \
        [c for i, c in enumerate(coords) if i not in inner_axes]
    if not new_inner:
        return a.val.sum(axis=1)
    idx = np.ravel_multi_index(tuple(kept), new_inner)
    return SparseBlock((a.shape[0],) + new_inner, idx, a.val)


def _transpose(a: SparseBlock, axes=None):
    if axes is None or axes[0] != 0:
        return NotImplemented
    inner_axes = [x - 1 for x in axes[1:]]
    coords = a._coords()
    new_inner = tuple(a.inner[i] for i in inner_axes)
    idx = np.ravel_multi_index(tuple(coords[i] for i in inner_axes), new_inner) if new_inner else a.idx
    return SparseBlock((a.shape[0],) + new_inner, idx, a.val)


def _swapaxes(a: SparseBlock, axis1, axis2):
    axes = list(range(a.ndim))
    i, j = axis1 % a.ndim, axis2 % a.ndim
    axes[i], axes[j] = axes[j], axes[i]
    return _transpose(a, tuple(axes))


def _where(cond, x=None, y=None):
    if type(x) is SparseBlock and not isinstance(y, SparseBlock) and np.ndim(y) == 0 and y == 0 \
            and _is_plain(cond) and np.ndim(cond) <= len(x.inner):
        c = x._factor_at(np.asarray(cond))
        if c is not None:
            return SparseBlock(x.shape, x.idx, np.where(c, x.val, 0.0))
    return NotImplemented


def _take(a: SparseBlock, indices, axis=None, **kw):
    # gather along the last axis of a flat block: y[..., p] = a[..., flat[p]]
    if axis not in (-1, a.ndim - 1) or a.ndim != 2:
        return NotImplemented
    flat = np.asarray(indices)
    n = a.inner[0]
    pos = flat.reshape(-1)
    if np.unique(pos).size != pos.size:
        return NotImplemented
    inverse = np.full(n, -1, dtype=np.intp)
    inverse[pos] = np.arange(pos.size)
    new = inverse[a.idx]
    keep = new >= 0
    return SparseBlock((a.shape[0],) + flat.shape, np.where(keep, new, 0), np.where(keep, a.val, 0.0))


_FUNCTIONS = {np.reshape: _reshape, np.sum: _sum, np.transpose: _transpose, np.swapaxes: _swapaxes,
              np.where: _where, np.take: _take}


def scatter_rows(block: Any, out: np.ndarray, rows: np.ndarray) -> None:
    """out[rows] = block (K rows, flattened), without densifying a sparse block first."""
    if type(block) is not SparseBlock:
        out[rows] = np.reshape(block, (len(rows), -1))
        return
    out[rows] = 0.0
    kk = np.broadcast_to(rows[:, None], block.idx.shape)
    if block.idx.shape[1] == 1:
        out[kk[:, 0], block.idx[:, 0]] += block.val[:, 0]
    else:
        np.add.at(out, (kk, block.idx), block.val)


# ---------------------------------------------------------------------------
# Sparse forms of the indexing primitives (x[basic], its transpose, flat scatter)
# ---------------------------------------------------------------------------
def _sparse_get_basic(a: SparseBlock, idx: tuple) -> Any:
    # idx covers the trailing axes (x[(Ellipsis,) + idx]); leading axes pass through.
    coords = a._coords()
    lead = len(a.inner) - sum(1 for i in idx if i is not None)
    keep = np.ones(a.idx.shape, dtype=bool)
    new_coords, new_inner = list(coords[:lead]), list(a.inner[:lead])
    axis = lead
    for i in idx:
        if i is None:
            new_coords.append(np.zeros(a.idx.shape, dtype=np.intp))
            new_inner.append(1)
            continue
        n, c = a.inner[axis], coords[axis]
        axis += 1
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            length = len(range(start, stop, step))
            d = c - start
            ok = (d % step == 0) & (d // step >= 0) & (d // step < length)
            keep &= ok
            new_coords.append(np.where(ok, d // step, 0))
            new_inner.append(length)
        else:
            keep &= c == (int(i) % n)
    val = np.where(keep, a.val, 0.0)
    if not new_inner:
        return val.sum(axis=1)
    if 0 in new_inner:
        return np.zeros((a.shape[0],) + tuple(new_inner), dtype=a.val.dtype)
    idx_new = np.ravel_multi_index(tuple(new_coords), tuple(new_inner))
    return SparseBlock((a.shape[0],) + tuple(new_inner), np.where(keep, idx_new, 0), val)


def _sparse_scatter_basic(v: SparseBlock, idx: tuple, shape: tuple) -> Any:
    coords = v._coords()
    produced = sum(1 for i in idx if i is None or isinstance(i, slice))
    lead = len(v.inner) - produced
    if lead < 0 or 0 in shape:
        return NotImplemented
    out_coords = list(coords[:lead])
    ci = lead
    for i in idx:
        if i is None:
            ci += 1
            continue
        n = shape[len(out_coords) - lead]
        if isinstance(i, slice):
            start, _, step = i.indices(n)
            out_coords.append(start + coords[ci] * step)
            ci += 1
        else:
            out_coords.append(np.full(v.idx.shape, int(i) % n, dtype=np.intp))
    full = tuple(v.inner[:lead]) + tuple(shape)
    return SparseBlock((v.shape[0],) + full, np.ravel_multi_index(tuple(out_coords), full), v.val)


def _sparse_scatter_flat(v: SparseBlock, flat: np.ndarray, n: int) -> Any:
    lead = len(v.inner) - flat.ndim
    if lead < 0:
        return NotImplemented
    m = max(flat.size, 1)
    outer, p = np.divmod(v.idx, m)
    lead_shape = tuple(v.inner[:lead])
    return SparseBlock((v.shape[0],) + lead_shape + (n,), outer * n + flat.reshape(-1)[p], v.val)


def install(primitives: dict) -> None:
    """Give the indexing primitives their sparse implementations."""
    for name, fn in (("getitem", _sparse_get_basic), ("scatter", _sparse_scatter_basic),
                     ("scatter_add", _sparse_scatter_flat)):
        prim = primitives.get(name)
        if prim is not None:
            prim.sparse = fn


def scatter_cols(block: Any, out: np.ndarray, cols: np.ndarray) -> None:
    """out[:, cols] = block.T for a block of K columns (K, M), sparse or dense."""
    if type(block) is not SparseBlock:
        out[:, cols] = np.reshape(block, (len(cols), -1)).T
        return
    out[:, cols] = 0.0
    kk = np.broadcast_to(cols[:, None], block.idx.shape)
    np.add.at(out, (block.idx, kk), block.val)


_FUNCTIONS[np.shape] = lambda a: a.shape
_FUNCTIONS[np.ndim] = lambda a: a.ndim
