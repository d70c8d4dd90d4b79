"""Indexing primitives and broadcasts on structured seed blocks, elementwise partials at their entries, writing blocks into results."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .seeds import FUNCTIONS, SparseBlock, lowrank_product, zeros_for
from .tracer import peek


# ---------------------------------------------------------------------------
# Elementwise partials at a block's entries alone (a compiled sweep's rules)
# ---------------------------------------------------------------------------
def scaled_at_entries(d: Callable, ans: Any, args: tuple, pos: int, usual: Callable, finite: Callable) -> Callable:
    """A compiled sweep's reverse rule of argument `pos` of an elementwise function whose partial is
    d(ans, *args) (its values traced, seeds.TRACED_PARTS; `finite`: the rules' guarded check): for
    a structured block g of few entries (lazy rows' seeds), g times the partial d computed at g's
    entries alone, which the program then computes at each run; else `usual()`'s rule. The usual
    rule computes d over the whole array, which the block then reads at its entries: 10 rows of a
    90,000-entry stencil's Jacobian took four passes over 90,000 numbers (u ** 3's 3 u ** 2, its
    mask, its check) to read 10 (issue 44). A partial is elementwise, so the numbers are the same;
    a non-finite one at an entry takes the usual rule (its 0 * inf)."""
    # (peek: shapes and dtypes are the structure's, read without a guard)
    shape = np.shape(peek(ans))
    size = math.prod(shape)
    shapes = [np.shape(peek(a)) for a in args]
    made: list = []

    def rule(g):
        if type(g) is SparseBlock and g.u is None and type(g.idx) is np.ndarray and 4 * g.idx.size <= size \
                and shapes[pos] == shape and all(not s or s == shape for s in shapes) \
                and np.result_type(peek(ans)).kind == "f":
            flat = g.idx.reshape(-1)
            factor = d(*[a if not s else a.reshape(-1)[flat] for a, s in zip((ans, *args), [shape] + shapes)])
            if not np.shape(peek(factor)) or np.shape(peek(factor)) == flat.shape:
                if finite(factor):
                    return SparseBlock(g.shape, g.idx, g.val * (factor.reshape(g.idx.shape) if np.shape(peek(factor))
                                                                else factor))
        if not made:
            made.append(usual())
        return made[0](g)
    return rule


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


def getitem_on_block(a: SparseBlock, idx: tuple) -> Any:
    """a[..., idx] for a basic idx, kept structured (getitem's `sparse`)."""
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
    v = None if a.v is None else a.v[(Ellipsis,) + idx]
    if new_inner and 0 not in new_inner and type(a.val) is np.ndarray and not keep.any():
        # no entry falls in the part (a piece of a long concatenation, away from this block's seeds): a
        # block without entries, so that what the sweep does with it next costs nothing per seed
        none = np.zeros((a.shape[0], 0), dtype=np.intp)
        return SparseBlock((a.shape[0],) + tuple(new_inner), none, np.zeros((a.shape[0], 0), a.val.dtype), a.u, v)
    val = np.where(keep, a.val, 0.0)
    if not new_inner:
        total = val.sum(axis=1)
        return total if a.u is None else total + a.u @ v
    if 0 in new_inner:
        return np.zeros((a.shape[0],) + tuple(new_inner), dtype=a.dtype)
    idx_new = np.ravel_multi_index(tuple(new_coords), tuple(new_inner)) if a.idx.size else a.idx
    return SparseBlock((a.shape[0],) + tuple(new_inner), np.where(keep, idx_new, 0), val, a.u, v)


def scatter_on_block(b: SparseBlock, idx: tuple, shape: tuple) -> Any:
    """zeros(shape)[..., idx] = b for a basic idx, kept structured (scatter's `sparse`)."""
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


def scatter_add_on_block(b: SparseBlock, flat: np.ndarray, n: int) -> Any:
    """b summed into n flat positions at `flat`, kept structured (scatter_add's `sparse`)."""
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


def assign_on_block(b: SparseBlock, v: Any, idx: tuple) -> Any:
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


def broadcast_on_block(a: SparseBlock, shape, subok=False):
    """a broadcast over more positions: each entry repeated along the axes it is broadcast on (the
    tangent of x[:, None] - x[None, :] for a seed on x[k] is row k and column k, never a dense square)."""
    shape = tuple(shape)
    if len(shape) != a.ndim or shape[0] != a.shape[0] or any(m != n and m != 1 for m, n in zip(a.shape, shape)):
        return NotImplemented  # (NumPy's error, or axes in front of the seeds' axis: the dense call)
    k, inner, old = a.shape[0], shape[1:], a.inner
    along = [axis for axis, (m, n) in enumerate(zip(old, inner)) if m != n]
    if not along:
        return a
    copies = math.prod(inner[axis] for axis in along)
    entries = a.idx.shape[1]
    if SparseBlock(shape, a.idx, a.val).too_many(entries * copies, 0):  # (as SparseBlock._with judges a block)
        return NotImplemented
    coords = list(np.unravel_index(a.idx, old))
    # entry e's copy c: coordinate c's digits on the broadcast axes (the entries' own ones are 0 there)
    spread = np.unravel_index(np.arange(copies), tuple(inner[axis] for axis in along))
    for axis, digits in zip(along, spread):
        coords[axis] = coords[axis][:, :, None] + digits
    coords = [np.broadcast_to(c if c.ndim == 3 else c[:, :, None], (k, entries, copies)) for c in coords]
    idx = np.ravel_multi_index(tuple(coords), inner).reshape(k, entries * copies) if entries else a.idx
    val = a.val if copies == 1 or not entries else a.val[:, np.repeat(np.arange(entries), copies)]
    v = None if a.v is None else np.broadcast_to(a.v, (a.rank,) + inner)
    return SparseBlock(shape, idx, val, a.u, v)


FUNCTIONS[np.broadcast_to] = broadcast_on_block


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
