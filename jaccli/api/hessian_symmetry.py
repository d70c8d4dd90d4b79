"""Exactly symmetric Hessian blocks: a mean with the transpose in tiles, or built from a sweep's structure."""

from __future__ import annotations

import math

import numpy as np

from jaccli.engine import SparseBlock

from .block_stores import increasing


# From this order on, symmetrise in place tile by tile. Measured against the plain mean: 4.7x faster
# at 2000 and 6.3x at 2048 (cache), and at 500 the whole P6 Hessian 2.2 -> 1.4 ms, because the two
# fresh n*n temporaries of the mean are page-faulted in anew on every call; below about 300 the
# plain mean is 2% faster.
TILED_SYMMETRIZE = 384
# Tile edge for symmetrising. Not a power of two: transposing a tile whose rows are 2^k bytes apart
# maps them onto a few cache sets. Measured (in place, n = 500 / 1024 / 2048): 128 -> 310 / 1912 /
# 7573 us, 100 -> 267 / 1661 / 6493 us; a structured strip at n = 500: 128 -> 454, 100 -> 223 us.
_TILE = 100


def symmetrize_in_place(a: np.ndarray) -> None:
    """a = (a + a.T) / 2 in place, one pair of cache-sized tiles at a time.

    The plain expression reads a.T with a stride of a whole row, which misses the cache on
    every element once a row no longer fits; a pair of tiles does fit.
    """
    n = a.shape[0]
    for lo in range(0, n, _TILE):
        hi = min(lo + _TILE, n)
        d = a[lo:hi, lo:hi]
        d[...] = 0.5 * (d + d.T)
        for lo2 in range(hi, n, _TILE):
            hi2 = min(lo2 + _TILE, n)
            upper, lower = a[lo:hi, lo2:hi2], a[lo2:hi2, lo:hi]
            mean = 0.5 * (upper + lower.T)
            upper[...] = mean
            lower[...] = mean.T


def symmetric_from_structure(block: SparseBlock, rows: np.ndarray, dtype: np.dtype,
                             kept: dict | None = None) -> np.ndarray:
    """The exactly symmetric (H + H^T) / 2 of the n x n matrix H whose row rows[k] is block's seed k.

    The low-rank part U V (row rows[k] of U is u[k]) becomes (U V + V^T U^T) / 2: one outer product
    when it is symmetric already (`_symmetric_outer`), else tiled (`_symmetric_low_rank`). The
    entries are added symmetrically on top (see _symmetric_entries). `kept`: a caller's dict of what
    the rows and the entries' positions decide, filled on its first call, where every call brings
    the same rows and positions (a steady record_once call's, whose block comes from one program:
    api/steady_blocks.py), so that they are not looked up again.
    """
    n = rows.size
    in_order = increasing(rows) if kept is None else kept.get("in order")
    if in_order is None:
        in_order = kept["in order"] = increasing(rows)  # rows holds each of 0..n-1 once: in order, 0..n-1
    if block.u is None:
        out = np.zeros((n, n), dtype=dtype)
    else:
        rank = block.rank
        if in_order:
            u = block.u.astype(dtype, copy=False)
        else:
            u = np.zeros((n, rank), dtype=dtype)
            u[rows] = block.u
        v = block.v.reshape(rank, n).astype(dtype, copy=False)
        out = _symmetric_outer(u, v) if rank == 1 else None
        if out is None:
            out = _symmetric_low_rank(u, v)
    entries = _symmetric_entries(block, rows, kept)
    if entries is None:
        return out
    r, c, sym = entries
    if not out.flags.c_contiguous:  # (every `out` above is a fresh C-ordered array: never, today)
        out = np.ascontiguousarray(out)
    flat = out.reshape(-1)  # a view, indexed with one array (or a stride) instead of a pair
    if r is c:  # on the diagonal only: its strided view takes them in one pass, in place
        diagonal = flat[::n + 1]
        if in_order:
            diagonal += sym
        else:
            diagonal[r] += sym  # r holds each row once
        return out
    # r and c are the flat positions r * n + c of the entries and c * n + r of their mirrors: one
    # index array into the flat view costs less than a pair into the matrix (P3's tridiagonal Hessian)
    if block.u is not None:
        sym = flat[r] + sym  # out is exactly symmetric, so the mirror entry gets the same number
    flat[r] = sym
    flat[c] = sym
    return out


def _symmetric_low_rank(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(U V + V^T U^T) / 2 for an n x r U and an r x n V, exactly symmetric.

    Computed as the product [U, V^T] [V; U^T] / 2 a strip of rows at a time: right of the diagonal
    it is written straight into the result and copied, transposed, below the diagonal; a diagonal
    tile D is the product with a quarter instead of a half, so that D + D^T is its mean with its
    transpose in one pass (scaling by powers of two is exact). No pass over the whole dense matrix.
    """
    n = u.shape[0]
    left = np.concatenate([u, v.T], axis=1)
    left *= 0.5
    quarter = left * 0.5
    right = np.concatenate([v, u.T], axis=0)
    out = np.empty((n, n), dtype=u.dtype)
    buf = np.empty((min(_TILE, n),) * 2, dtype=u.dtype)
    for lo in range(0, n, _TILE):
        hi = min(lo + _TILE, n)
        w = hi - lo
        d = np.matmul(quarter[lo:hi], right[:, lo:hi], out=buf[:w, :w])
        np.add(d, d.T, out=out[lo:hi, lo:hi])
        if hi < n:
            strip = np.matmul(left[lo:hi], right[:, hi:], out=out[lo:hi, hi:])
            out[hi:, lo:hi] = strip.T
    return out


def _symmetric_outer(u: np.ndarray, v: np.ndarray) -> np.ndarray | None:
    """u v (an n x 1 times a 1 x n), to rounding, when it is symmetric in exact arithmetic: u = c v^T
    entry for entry (the Hessian of a softmax or logsumexp: c p p^T); else None.

    It is then sigma w w^T with w = sqrt(|c|) v and sigma the sign of c. Each entry is the product
    of two entries of w, the same number in (i, j) and (j, i), so one pass gives an exactly
    symmetric result with no mean of the two triangles (P6's Hessian, n = 500: the assembly took
    240 us tiled, 190 us so). The products are np.dot's of an n x 1 and a 1 x n: BLAS's gemm with
    an inner size of 1 forms each entry as one rounded product (a sum of one term, times alpha = 1,
    beta = 0), as einsum does; measured at n = 500 among the ways to write those 2 MB (thread CPU,
    OpenBLAS): np.dot 67 us, einsum 73 (its output zeroed, then added into), np.outer and
    np.multiply.outer 115, np.multiply of the two broadcast into a preallocated np.empty 110 (the
    ufunc's inner loop is a row long), np.matmul 250 (NumPy's own loop for an inner size of 1).
    For float64 blocks c and sqrt(|c|) are Python floats: the same IEEE double operations (division
    and square root correctly rounded) as NumPy's float64 scalars, without one made for each (a steady
    P6 call's); any other dtype's in its own precision, as NumPy's scalars of it.
    """
    u, v = u[:, 0], v[0]
    if v.size == 0:
        return None
    first = 0 if v[0] != 0 else int((v != 0).argmax())  # the first nonzero entry (argmax: the first True)
    if v.dtype == np.float64:
        top, bottom = u.item(first), v.item(first)
    else:
        top, bottom = u[first], v[first]
    if bottom == 0:
        return None
    with np.errstate(all="ignore"):
        c = top / bottom  # (a Python float overflows to inf quietly, as NumPy's does here)
        if np.count_nonzero(u == c * v) != u.size:  # (a NaN c, from an infinite v, is never equal; one shape)
            return None
        w = (math.sqrt(abs(c)) if type(c) is float else np.sqrt(abs(c))) * v
        # (inside: np.dot reports a product that overflows to inf, where einsum, which it replaces, did not)
        return np.dot((-w if c < 0 else w)[:, None], w[None, :])


def _symmetric_entries(block: SparseBlock, rows: np.ndarray, kept: dict | None = None) -> tuple | None:
    """Positions and values of the exactly symmetric (E + E^T) / 2 of block's entries, or None.

    Row rows[k] of E holds block's entries k. Repeated positions are summed first, so entry (r, c)
    and its mirror (c, r) are each one number, and both positions get the same 0.5 * (e_rc + e_cr).
    The positions: (rows, rows) for entries on the diagonal only, else the flat positions r * n + c
    of the distinct entries and c * n + r of their mirrors.
    """
    if block.idx.size == 0:
        return None
    diagonal = None if kept is None else kept.get("diagonal")
    if diagonal is None:
        diagonal = block.idx.shape[1] == 1 and bool((block.idx[:, 0] == rows).all())
        if kept is not None:
            kept["diagonal"] = diagonal  # (the same positions on every call: not compared again)
    if diagonal:
        # On the diagonal only (distinct rows): symmetric as it is. (The same array twice says so.)
        return rows, rows, block.val[:, 0]
    if kept is None:
        order, first, at, found, r, c = _positions(rows, block.idx)
    else:
        if "positions" not in kept:
            positions = _positions(rows, block.idx)
            # (in this order: a thread that finds the positions kept reads the other at once)
            kept["unmirrored"] = np.flatnonzero(~positions[3])
            kept["positions"] = positions
        order, first, at, found, r, c = kept["positions"]
    sums = np.add.reduceat(block.val.reshape(-1)[order], first)
    mirrored = sums[at]  # (a copy)
    if kept is None:
        mirrored = np.where(found, mirrored, 0.0)
    elif kept["unmirrored"].size:  # (none where every mirror is among the entries, as in a banded Hessian)
        mirrored[kept["unmirrored"]] = 0.0  # (what np.where gives, without its dispatch: a steady call's 2%)
    return r, c, 0.5 * (sums + mirrored)


# _positions' answers by the positions they are for: a record_once function's replays give their
# entries at the same positions on every call (P3's tridiagonal Hessian: its sorting and searching
# took a sixth of a replay at n = 100). Positions of up to _KEEP_BYTES bytes, _KEEP of them.
_KEPT: dict = {}
_KEEP = 8
_KEEP_BYTES = 1 << 17


def _positions(rows: np.ndarray, idx: np.ndarray) -> tuple:
    """For entries at rows[k], idx[k, :] of an n x n matrix (n = rows.size): the order that sorts their
    positions, where each distinct position starts in it, where each one's mirror is among them and
    whether it is there, and the flat positions of the distinct entries and of their mirrors."""
    n = rows.size
    key = None
    if idx.nbytes <= _KEEP_BYTES:
        key = (n, idx.shape, idx.dtype.str, rows.dtype.str, rows.tobytes(), idx.tobytes())
        known = _KEPT.get(key)
        if known is not None:
            return known
    r = np.repeat(rows.astype(np.int64), idx.shape[1])
    pos = r * n + idx.reshape(-1)
    order = np.argsort(pos, kind="stable")
    pos = pos[order]
    keys, first = np.unique(pos, return_index=True)
    mirror = (keys % n) * n + keys // n
    at = np.minimum(np.searchsorted(keys, mirror), keys.size - 1)
    out = (order, first, at, keys[at] == mirror, keys, mirror)
    for a in out:
        a.flags.writeable = False  # (shared by the calls that find them kept)
    if key is not None:
        if len(_KEPT) >= _KEEP:
            _KEPT.clear()
        _KEPT[key] = out
    return out
