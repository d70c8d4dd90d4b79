"""Structured seed blocks: identity rows without dense eye(), and the structure sweeps keep.

A `SparseBlock` of shape ``(K,) + S`` stands for the dense block

    dense[k] = sum_t val[k, t] * e_{idx[k, t]}  +  sum_r u[k, r] * v[r]

a few entries per seed (flat positions ``idx`` in S, repeated positions add up) plus a
low-rank part (``u``: (K, R), ``v``: (R,) + S). Sweeps start from identity seeds, which are
pure entries; broadcasting a per-seed scalar over S (the tangent of a sum, a max, a norm fed
back elementwise) adds a rank-one term instead of a dense block. The operations rules apply
keep this form where that is cheap (elementwise scaling, sums, adds, reshapes, transposes,
basic slicing, gathers, matrix products); anything else turns the block dense first, so every
rule stays correct unchanged. A softmax Hessian, diag(p) - p p^T, is exactly this structure.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .thread_state import ThreadSlot
from .handlers import DEFERS_TO
from .tracer import Tracer

# While a sweep is recorded as a compiled one (replay/compiled_sweeps.py), a block scaled by a traced
# factor keeps its structure, its parts traced: the program then runs on the parts alone. Elsewhere
# (a sweep under an outer differentiation) such a product is dense, as before.
TRACED_PARTS = ThreadSlot()

_DENSE_FRACTION = 0.25  # densify when a seed holds more than this share of its entries
_MAX_RANK = 8  # densify when the low-rank part grows past this
_COMPARED = 4  # a sum of at most so many blocks at distinct idx arrays compares their positions


def lowrank_product(u: np.ndarray, v: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """u @ v for the factors of a low-rank part, u: (K, R), v: (R, N).

    A rank-one product is padded with a zero term to rank two: NumPy's matmul with an inner
    dimension of 1 is not a BLAS call, and measured 2.5-5x slower (500 x 500: 285 vs 91 us). The
    values are the same products u[k] * v[n], plus an exact zero.
    """
    if u.shape[1] == 1:
        u = np.concatenate([u, np.zeros_like(u)], axis=1)
        v = np.concatenate([v, np.zeros_like(v)], axis=0)
    return np.matmul(u, v, out=out)


def _is_plain(x: Any) -> bool:
    return isinstance(x, (np.ndarray, float, int, np.floating, np.integer))


def _is_factor(x: Any) -> bool:
    """A factor a block is scaled by entry by entry, keeping its structure: a plain value, or while a
    compiled sweep is recorded a traced array (TRACED_PARTS)."""
    return _is_plain(x) or (TRACED_PARTS.v is True and type(x) is Tracer)


def zeros_for(part: Any, shape: tuple, dtype: Any) -> np.ndarray:
    """Zeros of `shape` to write a block's `part` into: traced when the part is (writing a traced
    value into a plain array escapes the recording; into traced zeros it is recorded)."""
    if type(part) is Tracer:
        return np.zeros_like(part, shape=shape, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


class SparseBlock:
    """A block of K seeds: a few entries each plus a low-rank part (see the module docstring)."""

    __slots__ = ("shape", "idx", "val", "u", "v", "form")
    __array_priority__ = 500.0

    def __init__(self, shape: tuple, idx: np.ndarray, val: np.ndarray,
                 u: np.ndarray | None = None, v: np.ndarray | None = None) -> None:
        self.shape = tuple(shape)
        self.idx = idx
        self.val = val
        self.u = u
        self.v = v
        self.form = None  # its content as a compiled sweep's key (replay/compiled_sweeps.py), once asked for

    @classmethod
    def one_hot(cls, k_positions: np.ndarray, shape: tuple, dtype: Any, per_seed: np.ndarray | None = None):
        """Seeds e_{p_k}: one entry per seed (or the given positions per seed, e.g. all samples)."""
        idx = k_positions[:, None] if per_seed is None else per_seed
        return cls((len(idx),) + tuple(shape), idx.astype(np.intp, copy=False),
                   np.ones(idx.shape, dtype=dtype))

    @classmethod
    def rank_one(cls, u: np.ndarray, shape: tuple) -> "SparseBlock":
        """dense[k] = u[k] * ones(shape): a per-seed scalar broadcast over the block."""
        k = u.shape[0]
        empty = np.zeros((k, 0), dtype=np.intp)
        return cls((k,) + tuple(shape), empty, np.zeros((k, 0), dtype=u.dtype),
                   u.reshape(k, 1), np.ones((1,) + tuple(shape), dtype=u.dtype))

    @property
    def dtype(self) -> np.dtype:
        return self.val.dtype if self.u is None else np.result_type(self.val.dtype, self.u.dtype, self.v.dtype)

    @property
    def traced(self) -> bool:
        """Whether a part is a traced array (a sweep recorded as a compiled one, replay/compiled_sweeps.py)."""
        return any(type(p) is Tracer for p in (self.val, self.u, self.v))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def inner(self) -> tuple:
        return self.shape[1:]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def rank(self) -> int:
        return 0 if self.u is None else self.u.shape[1]

    def todense(self, order: str = "C") -> np.ndarray:
        """The dense block; `order` "F": in column order (a vector's block, of plain parts, entries only),
        for a sweep that reads and writes it one element of the vector at a time (see column_order)."""
        k = self.shape[0]
        n = math.prod(self.inner)
        if order == "F" and self.u is None and len(self.inner) == 1 and type(self.val) is not Tracer:
            out = np.zeros((k, n), self.dtype, order="F")
        elif self.u is not None:
            out = lowrank_product(self.u, self.v.reshape(self.rank, n))
            if type(self.val) is Tracer and type(out) is not Tracer and self.idx.shape[1]:
                out = out + zeros_for(self.val, (k, n), self.dtype)  # traced, to add the entries into
            elif self.idx.shape[1] and type(out) is np.ndarray and out.dtype != self.dtype:
                out = out.astype(self.dtype)  # a real low-rank part under complex entries
        else:
            out = zeros_for(self.val, (k, n), self.dtype)
        if self.idx.shape[1] == 1:
            out[np.arange(k), self.idx[:, 0]] += self.val[:, 0]
        elif self.idx.shape[1]:
            rows = np.broadcast_to(np.arange(k)[:, None], self.idx.shape)
            np.add.at(out, (rows, self.idx), self.val)
        # (a block of K vectors is `out` itself, not a view: a compiled sweep's PULLED writes into an array of
        # its own, and copied the whole view first, 133 MB a block of rows of loop-10000)
        return out if len(self.shape) == 2 else out.reshape(self.shape)

    def add_into(self, out: np.ndarray) -> None:
        """out += self.todense(), in place, touching only the entries (and the low-rank part)."""
        k = self.shape[0]
        if out.ndim == 2:
            flat = out
        elif not out.flags.c_contiguous:  # no flat view to write through
            out += self.todense()
            return
        else:
            flat = out.reshape(k, -1)  # a view of `out`
        if self.u is not None:
            flat += lowrank_product(self.u, self.v.reshape(self.rank, flat.shape[1]))
        if self.idx.shape[1] == 1:  # one entry per seed: the (row, position) pairs are distinct
            flat[np.arange(k), self.idx[:, 0]] += self.val[:, 0]
        elif self.idx.shape[1]:
            np.add.at(flat, (np.broadcast_to(np.arange(k)[:, None], self.idx.shape), self.idx), self.val)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        d = self.todense()
        return d if dtype is None else d.astype(dtype)

    def _with(self, shape: tuple, idx: np.ndarray, val: np.ndarray, u: Any = None, v: Any = None) -> Any:
        out = SparseBlock(shape, idx, val, u, v)
        return out.todense() if out.too_many(idx.shape[1], out.rank) else out

    def _coords(self) -> tuple[np.ndarray, ...]:
        return np.unravel_index(self.idx, self.inner) if self.inner else ()

    # -- elementwise scaling ----------------------------------------------------
    def _factor_at(self, d: Any) -> Any | None:
        """The entries of d (broadcast over the seed shape) at this block's positions, or None."""
        if not isinstance(d, np.ndarray) and type(d) is not Tracer:
            if np.ndim(d) == 0:
                return d
            d = np.asarray(d)
        if d.shape == self.inner:
            return d.reshape(-1)[self.idx]
        if d.ndim == 0:
            return d
        if d.ndim > len(self.inner) or np.broadcast_shapes(d.shape, self.inner) != self.inner:
            return None
        coords = self._coords()
        lead = len(self.inner) - d.ndim
        return d[tuple(c if n != 1 else 0 for c, n in zip(coords[lead:], d.shape))]

    def _scaled(self, ufunc, d: Any) -> Any:
        f = self._factor_at(d)
        if f is None:
            return None
        u, v = self.u, self.v
        if u is not None:
            v = ufunc(v, d)
        return SparseBlock(self.shape, self.idx, ufunc(self.val, f), u, v)  # same structure

    def _plus(self, other: "SparseBlock", sign: float) -> Any:
        return SparseBlock.sum_of([self, other if sign > 0 else -other])

    @staticmethod
    def sum_of(parts: list) -> Any:
        """The sum of same-shape blocks, joined in one pass (dense when the entries grow too many)."""
        first = parts[0]
        # Parts at the same positions (a tangent scaled twice, t * y + x * t, each a view of one block's
        # idx) add their values: the sum keeps their entries, not twice as many.
        same: dict = {}
        for p in parts:
            at = same.get(id(p.idx))
            same[id(p.idx)] = (p.idx, p.val) if at is None else (at[0], at[1] + p.val)
        if 1 < len(same) <= _COMPARED:  # equal positions made apart (the same sums of two products)
            groups: list = []
            for idx, val in same.values():
                at = next((g for g, (i, _) in enumerate(groups)
                           if i.shape == idx.shape and np.array_equal(i, idx)), None)
                if at is None:
                    groups.append((idx, val))
                else:
                    groups[at] = (groups[at][0], groups[at][1] + val)
            same = dict(enumerate(groups))
        if len(same) == 1 and len(parts) > 1:
            idx, val = next(iter(same.values()))
        else:
            idx = np.concatenate([i for i, _ in same.values()], axis=1)
            val = np.concatenate([v for _, v in same.values()], axis=1)
        low = [p for p in parts if p.u is not None]
        u = np.concatenate([p.u for p in low], axis=1) if low else None
        v = np.concatenate([p.v for p in low], axis=0) if low else None
        return first._with(first.shape, idx, val, u, v)

    def too_many(self, entries: int, rank: int) -> bool:
        """A block of this shape with so many entries per seed (or such a rank) is kept dense."""
        return entries > max(1, _DENSE_FRACTION * math.prod(self.shape[1:])) or rank > _MAX_RANK

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            return _dense_call(getattr(ufunc, method), inputs, kwargs)
        if ufunc is np.negative:
            return SparseBlock(self.shape, self.idx, -self.val, None if self.u is None else -self.u, self.v)
        if len(inputs) == 2:
            a, b = inputs
            if ufunc in (np.multiply, np.true_divide) and type(a) is SparseBlock and _is_factor(b):
                out = a._scaled(ufunc, b)
                if out is not None:
                    return out
            if ufunc is np.multiply and type(b) is SparseBlock and _is_factor(a):
                out = b._scaled(ufunc, a)
                if out is not None:
                    return out
            if ufunc in (np.add, np.subtract):
                sa, sb = as_block(a, np.shape(b)), as_block(b, np.shape(a))
                if sa is not None and sb is not None and sa.shape == sb.shape:
                    return sa._plus(sb, 1.0 if ufunc is np.add else -1.0)
            if ufunc is np.matmul and type(a) is SparseBlock and _is_plain(b) and np.ndim(b) == 2 and a.ndim >= 2:
                return a._matmul(np.asarray(b))
        return _dense_call(ufunc, inputs, kwargs)

    def __add__(self, o):
        if type(o) is SparseBlock and o.shape == self.shape:  # a sweep adding two tangents: no dispatch
            return SparseBlock.sum_of([self, o])
        return np.add(self, o)

    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.true_divide(self, o)
    def __neg__(self): return np.negative(self)
    def __matmul__(self, o): return np.matmul(self, o)

    def _matmul(self, m: np.ndarray) -> np.ndarray:
        """(K, ..., a, p) @ (p, q): each entry adds val * m[col] to its row; one gather, no loop.

        A block of vectors, (K, p) @ (p, q), is the case a = 1 with the result (K, q): the pull
        of identity rows through a layer W @ x is a gather of W's rows, not a GEMM.
        """
        k = self.shape[0]
        vectors = len(self.inner) == 1
        *lead, a, p = (1,) + self.inner if vectors else self.inner
        shape = (k, m.shape[1]) if vectors else (k, *lead, a, m.shape[1])
        rows = self.idx // p
        cols = self.idx % p
        n_rows = math.prod(lead) * a
        if self.u is None and rows.shape[1] == n_rows and (n_rows == 1 or (
                (rows == np.arange(n_rows)).all() and (cols == cols[:, :1]).all())):
            # Every seed touches each row once in order, all in one column (a batched identity
            # seed; with one row, one entry per seed says so): the product is an outer product
            # per seed, one broadcast multiply.
            out = m[cols[:, 0]]
            if n_rows == 1 and type(self.val) is Tracer:
                out = out * self.val
            elif n_rows == 1 and out.dtype == np.result_type(self.val, m):
                if not (self.val == 1).all():  # unit seeds (rows of an identity) need no pass
                    out *= self.val  # scaled in place: no second temporary
            else:
                # The same products as self.val[..., None] * out[:, None, :], a third faster: the
                # broadcast multiply runs a short inner loop per row (measured on P4: 0.93 -> 0.61 ms).
                out = np.einsum("kr,kq->krq", self.val, out)
            return out.reshape(shape)
        if self.u is not None:
            out = lowrank_product(self.u, (self.v @ m).reshape(self.rank, -1)).reshape((k, n_rows, m.shape[1]))
        else:
            out = zeros_for(self.val, (k, n_rows, m.shape[1]), np.result_type(self.val.dtype, m.dtype))
        if rows.shape[1]:
            contrib = self.val[..., None] * m[cols]
            kk = np.broadcast_to(np.arange(k)[:, None], rows.shape)
            np.add.at(out, (kk, rows), contrib)
        return out.reshape(shape)

    # -- functions that keep the structure -------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        handler = FUNCTIONS.get(func)
        if handler is not None and (type(args[0]) is SparseBlock or func is np.where):  # (where's block: x or y)
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


DEFERS_TO.add(SparseBlock)


# ---------------------------------------------------------------------------
# NumPy functions that keep a block's structure (SparseBlock.__array_function__)
# ---------------------------------------------------------------------------
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
    """where(cond, block, 0) and where(cond, 0, block): the block masked, its structure kept."""
    if type(y) is SparseBlock and _is_plain(x) and np.ndim(x) == 0 and x == 0 \
            and isinstance(cond, (np.ndarray, bool, np.bool_)):
        return _where(~np.asarray(cond, dtype=bool), y, 0.0)
    if type(x) is SparseBlock and _is_plain(y) and np.ndim(y) == 0 and y == 0 \
            and isinstance(cond, (np.ndarray, bool, np.bool_)) and np.ndim(cond) <= len(x.inner) \
            and x.u is None:  # (a low-rank part masked: u * 0 keeps u's NaN, where the dense where has 0)
        c = x._factor_at(np.asarray(cond))
        if c is not None:
            return SparseBlock(x.shape, x.idx, np.where(c, x.val, 0.0))
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
    val = a.val
    counts = np.count_nonzero(keep, axis=1)
    most = int(counts.max()) if counts.size else 0
    if most < keep.shape[1]:
        # the entries gathered first in each row, the rest dropped (the pairs i < j of a pairwise
        # block keep a seed's 37 of 76 entries), padded with zeros where a row keeps fewer
        order = np.argsort(~keep, axis=1, kind="stable")[:, :most]
        rows = np.arange(keep.shape[0])[:, None]
        new, val, keep = new[rows, order], val[rows, order], keep[rows, order]
        if (counts == most).all():
            return SparseBlock((a.shape[0],) + flat.shape, new, val, a.u, v)
    return SparseBlock((a.shape[0],) + flat.shape, np.where(keep, new, 0), np.where(keep, val, 0.0), a.u, v)


FUNCTIONS = {np.reshape: _reshape, np.sum: _sum, np.transpose: _transpose, np.swapaxes: _swapaxes,
             np.where: _where, np.take: _take, np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim}

def as_block(x: Any, shape: tuple) -> SparseBlock | None:
    """x as a SparseBlock of `shape` when it is one, or a per-seed scalar broadcast over it."""
    if type(x) is SparseBlock:
        return x
    if type(x) is not np.ndarray or len(shape) < 2 or x.ndim != len(shape) or x.shape[0] != shape[0]:
        return None
    inner = x.shape[1:]
    if math.prod(inner) == 1 or all(s == 0 for s in x.strides[1:]):
        if np.broadcast_shapes(inner, tuple(shape[1:])) != tuple(shape[1:]):
            return None
        return SparseBlock.rank_one(np.ascontiguousarray(x.reshape(x.shape[0], -1)[:, 0]), tuple(shape[1:]))
    return None


def broadcast_block(t: Any, shape: tuple) -> Any:
    """np.broadcast_to(t, shape), keeping a broadcast per-seed scalar of several seeds as a rank-one block.

    A single seed (a gradient, a recorded gradient) stays a plain array: its structure would save
    nothing, and on a recorded gradient it would become a structured constant of the recording.
    """
    if (type(t) in (np.ndarray, SparseBlock) or (TRACED_PARTS.v is True and type(t) is Tracer)) \
            and t.ndim == len(shape) and t.ndim >= 2 and t.shape[0] > 1 \
            and math.prod(t.shape[1:]) == 1 and math.prod(shape[1:]) > 1:
        return SparseBlock.rank_one(np.reshape(dense(t), (t.shape[0],)), tuple(shape[1:]))
    return np.broadcast_to(t, shape)


def _densify(x: Any) -> Any:
    if type(x) is SparseBlock:
        return x.todense()
    if isinstance(x, (list, tuple)):
        return type(x)(_densify(v) for v in x)
    return x


def _dense_call(func, args, kwargs):
    return func(*_densify(args), **{k: _densify(v) for k, v in kwargs.items()})


def dense(x: Any) -> Any:
    """A plain array for a structured block (anything else unchanged)."""
    return x.todense() if type(x) is SparseBlock else x
