"""NumPy functions and indexing primitives on structured seed blocks, and writing them out."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .seeds import SparseBlock, lowrank_product, zeros_for


def _reshape(a: SparseBlock, shape, order="C", **kw):
    if order not in ("C", "A"):
        return NotImplemented
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    full = np.empty(a.shape, dtype=bool).reshape(shape).shape if -1 in shape else shape
    if full[0] != a.shape[0]:
        return NotImplemented
    v = None if a.v is None else a.v.reshape((a.rank,) + tuple(full[1:]))
    return SparseBlock(full, a.idx, a.val, a.u, v)


def _sum(a: SparseBlock, axis=None, dtype=None, out=None, keepdims=False, **kw):
    if axis is None:
        return NotImplemented
    axes = tuple(sorted(int(x) % a.ndim for x in (axis if isinstance(axis, (tuple, list)) else (axis,))))
    if 0 in axes:
        return NotImplemented
    inner_axes = [x - 1 for x in axes]
    v = None if a.v is None else a.v.sum(axis=axes, keepdims=keepdims)  # v's axis 0 is the rank
    if not keepdims and set(inner_axes) == set(range(len(a.inner))):  # one number per seed: no positions left
        total = a.val.sum(axis=1)
        return total if a.u is None else total + a.u @ v
    coords = a._coords()
    if keepdims:
        new_inner = tuple(1 if i in inner_axes else n for i, n in enumerate(a.inner))
        kept = [np.zeros_like(c) if i in inner_axes else c for i, c in enumerate(coords)]
    else:
        new_inner = tuple(n for i, n in enumerate(a.inner) if i not in inner_axes)
        kept = [c for i, c in enumerate(coords) if i not in inner_axes]
    idx = np.ravel_multi_index(tuple(kept), new_inner) if a.idx.size else a.idx
    return a._with((a.shape[0],) + new_inner, idx, a.val, a.u, v)


def _transpose(a: SparseBlock, axes=None):
    if axes is None or axes[0] != 0:
        return NotImplemented
    inner_axes = [x - 1 for x in axes[1:]]
    new_inner = tuple(a.inner[i] for i in inner_axes)
    moved = [i for i in inner_axes if a.inner[i] != 1]
    if moved == sorted(moved):
        # Only length-1 axes move: every entry keeps its flat position.
        v = None if a.v is None else np.transpose(a.v, axes)
        return SparseBlock((a.shape[0],) + new_inner, a.idx, a.val, a.u, v)
    coords = a._coords()
    idx = np.ravel_multi_index(tuple(coords[i] for i in inner_axes), new_inner) \
        if new_inner and a.idx.size else a.idx
    v = None if a.v is None else np.transpose(a.v, axes)
    return SparseBlock((a.shape[0],) + new_inner, idx, a.val, a.u, v)


def _swapaxes(a: SparseBlock, axis1, axis2):
    axes = list(range(a.ndim))
    i, j = axis1 % a.ndim, axis2 % a.ndim
    axes[i], axes[j] = axes[j], axes[i]
    return _transpose(a, tuple(axes))


def _where(cond, x=None, y=None):
    if type(x) is SparseBlock and not isinstance(y, SparseBlock) and np.ndim(y) == 0 and y == 0 \
            and isinstance(cond, (np.ndarray, bool, np.bool_)) and np.ndim(cond) <= len(x.inner):
        c = x._factor_at(np.asarray(cond))
        if c is not None:
            v = None if x.v is None else np.where(cond, x.v, 0.0)
            return SparseBlock(x.shape, x.idx, np.where(c, x.val, 0.0), x.u, v)
    return NotImplemented


def distinct_positions(pos: np.ndarray, n: int) -> bool:
    """Whether positions in range(-n, n) repeat none (-1 and n-1 are one): a count, O(n), where
    np.unique sorts or hashes (1 s for a permutation of 10^6)."""
    if pos.size <= 1:
        return True
    if pos.size > n:
        return False
    return int(np.bincount(np.where(pos < 0, pos + n, pos), minlength=n).max()) <= 1


def _take(a: SparseBlock, indices, axis=None, **kw):
    # gather along the last axis of a flat block: y[..., p] = a[..., flat[p]]
    if axis not in (-1, a.ndim - 1) or a.ndim != 2:
        return NotImplemented
    flat = np.asarray(indices)
    n = a.inner[0]
    pos = flat.reshape(-1)
    if not distinct_positions(pos, n):
        return NotImplemented
    inverse = np.full(n, -1, dtype=np.intp)
    inverse[pos] = np.arange(pos.size)
    new = inverse[a.idx]
    keep = new >= 0
    v = None if a.v is None else np.take(a.v, flat, axis=-1)
    return SparseBlock((a.shape[0],) + flat.shape, np.where(keep, new, 0), np.where(keep, a.val, 0.0), a.u, v)


FUNCTIONS = {np.reshape: _reshape, np.sum: _sum, np.transpose: _transpose, np.swapaxes: _swapaxes,
             np.where: _where, np.take: _take, np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim}


# ---------------------------------------------------------------------------
# The indexing primitives: x[basic], its transpose, and the flat scatter
# ---------------------------------------------------------------------------
def _in_slice(c: np.ndarray, i: slice, n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Which coordinates c (on an axis of n) the slice i takes, their positions in it, its length."""
    start, stop, step = i.indices(n)
    length = len(range(start, stop, step))
    d = c - start
    ok = (d % step == 0) & (d // step >= 0) & (d // step < length)
    return ok, d // step, length


def _get_basic(a: SparseBlock, idx: tuple) -> Any:
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
            ok, pos, length = _in_slice(c, i, n)
            keep &= ok
            new_coords.append(np.where(ok, pos, 0))
            new_inner.append(length)
        else:
            keep &= c == (int(i) % n)
    val = np.where(keep, a.val, 0.0)
    v = None if a.v is None else a.v[(Ellipsis,) + idx]
    if not new_inner:
        total = val.sum(axis=1)
        return total if a.u is None else total + a.u @ v
    if 0 in new_inner:
        return np.zeros((a.shape[0],) + tuple(new_inner), dtype=a.dtype)
    idx_new = np.ravel_multi_index(tuple(new_coords), tuple(new_inner)) if a.idx.size else a.idx
    return SparseBlock((a.shape[0],) + tuple(new_inner), np.where(keep, idx_new, 0), val, a.u, v)


def _scatter_basic(b: SparseBlock, idx: tuple, shape: tuple) -> Any:
    coords = b._coords()
    produced = sum(1 for i in idx if i is None or isinstance(i, slice))
    lead = len(b.inner) - produced
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
            out_coords.append(np.full(b.idx.shape, int(i) % n, dtype=np.intp))
    full = tuple(b.inner[:lead]) + tuple(shape)
    v = None
    if b.v is not None:
        v = zeros_for(b.v, (b.rank,) + full, b.v.dtype)
        v[(Ellipsis,) + idx] = b.v
    idx_new = np.ravel_multi_index(tuple(out_coords), full) if b.idx.size else b.idx
    return SparseBlock((b.shape[0],) + full, idx_new, b.val, b.u, v)


def _scatter_flat(b: SparseBlock, flat: np.ndarray, n: int) -> Any:
    lead = len(b.inner) - flat.ndim
    if lead < 0:
        return NotImplemented
    m = max(flat.size, 1)
    outer, p = np.divmod(b.idx, m)
    lead_shape = tuple(b.inner[:lead])
    v = None
    if b.v is not None:
        v = zeros_for(b.v, (b.rank,) + lead_shape + (n,), b.v.dtype)
        np.add.at(v, (Ellipsis, flat.reshape(-1)), b.v.reshape((b.rank,) + lead_shape + (flat.size,)))
    return SparseBlock((b.shape[0],) + lead_shape + (n,), outer * n + flat.reshape(-1)[p], b.val, b.u, v)


def _assign(b: SparseBlock, v: Any, idx: tuple) -> Any:
    """b with b[..., idx] = 0 (the reverse rule of a write, for the array written into)."""
    if not (np.ndim(v) == 0 and v == 0) or any(i is None for i in idx):
        return NotImplemented
    coords = b._coords()
    lead = len(b.inner) - len(idx)
    inside = np.ones(b.idx.shape, dtype=bool)
    for axis, i in enumerate(idx, start=lead):
        c, n = coords[axis], b.inner[axis]
        if isinstance(i, slice):
            inside &= _in_slice(c, i, n)[0]
        else:
            inside &= c == int(i) % n
    low = None
    if b.v is not None:
        low = b.v.copy()
        low[(Ellipsis,) + idx] = 0.0
    return SparseBlock(b.shape, b.idx, np.where(inside, 0.0, b.val).astype(b.val.dtype, copy=False), b.u, low)


def install(primitives: dict) -> None:
    """Give the indexing primitives their structured implementations."""
    for name, fn in (("getitem", _get_basic), ("scatter", _scatter_basic), ("scatter_add", _scatter_flat),
                     ("assign", _assign)):
        prim = primitives.get(name)
        if prim is not None:
            prim.sparse = fn


# ---------------------------------------------------------------------------
# Writing a block of K rows or columns into a result matrix
# ---------------------------------------------------------------------------
def _entries_into(block: SparseBlock, out: np.ndarray, first: np.ndarray, transpose: bool) -> None:
    kk = np.broadcast_to(first[:, None], block.idx.shape)
    where = (block.idx, kk) if transpose else (kk, block.idx)
    if block.idx.shape[1] == 1:  # one entry per seed: the (row, column) pairs are distinct
        out[where[0][:, 0], where[1][:, 0]] += block.val[:, 0]
    elif block.idx.shape[1]:
        np.add.at(out, where, block.val)


def scatter_rows(block: Any, out: np.ndarray, rows: np.ndarray, zeroed: bool = False) -> None:
    """out[rows] = block (K rows, flattened), without densifying a structured block first.

    `zeroed`: those rows of `out` already hold zeros (fresh calloc memory, left untouched).
    """
    if type(block) is not SparseBlock:
        out[rows] = np.reshape(block, (len(rows), -1))
        return
    n = math.prod(block.inner)
    start = int(rows[0]) if rows.size else 0
    contiguous = rows.size and rows[-1] - start == rows.size - 1 and (np.diff(rows) == 1).all()
    target = out[start:start + rows.size] if contiguous else None  # a view: written in place
    if block.u is None:
        if not zeroed:
            if target is not None:
                target[...] = 0.0
            else:
                out[rows] = 0.0
    elif target is not None and target.flags.c_contiguous and target.dtype == np.result_type(block.u, block.v):
        lowrank_product(block.u, block.v.reshape(block.rank, n), out=target)
    else:
        out[rows] = lowrank_product(block.u, block.v.reshape(block.rank, n))
    _entries_into(block, out, rows, transpose=False)


def scatter_cols(block: Any, out: np.ndarray, cols: np.ndarray, zeroed: bool = False) -> None:
    """out[:, cols] = block.T for a block of K columns (K, M), structured or dense (`zeroed`: as scatter_rows)."""
    if type(block) is not SparseBlock:
        out[:, cols] = np.reshape(block, (len(cols), -1)).T
        return
    m = math.prod(block.inner)
    if block.u is None:
        if not zeroed:
            out[:, cols] = 0.0
    else:
        out[:, cols] = lowrank_product(block.u, block.v.reshape(block.rank, m)).T
    _entries_into(block, out, cols, transpose=True)
