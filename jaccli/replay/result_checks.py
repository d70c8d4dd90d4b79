"""A new compiled sweep's first results checked against the usual sweep's: the same numbers, to rounding."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaccli.engine import SparseBlock, dense


def agrees(got: list, want: list) -> bool:
    """Whether a new program's results are the usual sweep's, to rounding: a program is kept only
    then (a check of the recording machinery itself, once per program; the two may round
    differently: a product's traced form is not always the usual sweep's operations). `want` may
    hold Entries (compacted) in place of the usual sweep's arrays."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g is None or w is None:
            if g is not w:
                return False
            continue
        if type(w) is Entries:
            if not w.close_to(g):
                return False
            continue
        if _same_structure(g, w):
            # part by part: densifying both (a 500 x 500 softmax Hessian's diagonal plus rank one)
            # cost 4 plain calls of P6-n500 where the parts cost nothing
            if all(_close(p, q) for p, q in zip((g.val, g.u, g.v), (w.val, w.u, w.v)) if p is not None):
                continue
        if not _close(dense(g), dense(w)):
            return False
    return True


def _same_structure(g: Any, w: Any) -> bool:
    return type(g) is SparseBlock and type(w) is SparseBlock and g.shape == w.shape \
        and all((p is None) == (q is None) and (p is None or p.shape == q.shape)
                for p, q in zip((g.idx, g.val, g.u, g.v), (w.idx, w.val, w.u, w.v))) \
        and np.array_equal(g.idx, w.idx)


# Results agree to this tolerance, relative to the usual sweep's largest finite magnitude (allclose's
# rtol, and its atol times that magnitude)
_TOL = 1e-9


def _within(scale: float, apart: float) -> bool:
    """Whether a largest difference `apart` is within the tolerance of a finite largest magnitude `scale`."""
    return scale < np.inf and apart <= _TOL * scale


def _atol(w: Any) -> float:
    return _TOL * float(np.max(np.abs(w), initial=0.0, where=np.isfinite(w)))


def _close(g: Any, w: Any) -> bool:
    if np.shape(g) != np.shape(w) or np.result_type(g) != np.result_type(w):
        return False
    with np.errstate(all="ignore"):
        if np.size(w) and np.result_type(w).kind == "f":
            # within atol of each other everywhere: what allclose accepts first, in a few passes
            # without its temporaries (allclose took 5 plain calls of P2-n1000-m1000's Jacobian)
            if _within(*_largest_apart(g, w)):
                return True
        return bool(np.allclose(g, w, rtol=_TOL, atol=_atol(w), equal_nan=True))


# Elements compared at a time (_largest_apart): a difference of the whole blocks was a new array as large as
# the result, whose pages the kernel zeroes first (a 10^4 x 10^4 Jacobian checked in 6 blocks of rows: 4x a
# plain call's time, on the replay that checks its programs)
_COMPARED_AT_ONCE = 1 << 16


def _largest_apart(g: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """(max |w|, max |g - w|) of two float arrays of one shape (NaN where either holds one), a few
    thousand elements at a time through one small buffer."""
    if not (type(g) is np.ndarray and type(w) is np.ndarray and g.flags.c_contiguous and w.flags.c_contiguous
            and w.size > _COMPARED_AT_ONCE):
        d = np.subtract(g, w)
        return max(float(np.max(w)), -float(np.min(w))), float(np.max(np.abs(d, out=d)))
    g, w = g.reshape(-1), w.reshape(-1)
    buf = np.empty(_COMPARED_AT_ONCE, np.result_type(g, w))
    scale = far = 0.0
    for at in range(0, w.size, _COMPARED_AT_ONCE):
        wb = w[at:at + _COMPARED_AT_ONCE]
        d = np.subtract(g[at:at + _COMPARED_AT_ONCE], wb, out=buf[:wb.size])
        top, bottom, apart = float(np.max(wb)), float(np.min(wb)), float(np.max(np.abs(d, out=d)))
        if top != top or apart != apart:  # (a NaN: Python's max would drop it)
            return float("nan"), float("nan")
        scale, far = max(scale, top, -bottom), max(far, apart)
    return scale, far


class Entries:
    """A usual sweep's result that is mostly zeros, kept by its nonzero entries while a new program's
    first results are made (compacted): a result of its own memory would otherwise be held beside
    the program's making of its own, one result-sized array more than any other call holds (issue
    44.1: an element loop's 1000 x 1000 Jacobian of 2000 entries, its checking replay at 1.25x a
    plain call's peak, RSS 1.4-1.6x). The entries are those whose bits are not zero: -0.0 and NaN
    are kept, so restored() gives the result back bit for bit."""

    __slots__ = ("shape", "dtype", "order", "where", "values")

    def __init__(self, w: np.ndarray, order: str, at: np.ndarray) -> None:
        self.shape, self.dtype, self.order = w.shape, w.dtype, order
        self.where = np.unravel_index(at, w.shape, order=order)
        self.values = w[self.where]

    @property
    def size(self) -> int:
        """The result's number of entries (compiled_sweeps.stored reads it as a dense block's)."""
        return int(np.prod(self.shape))

    def restored(self) -> np.ndarray:
        """The usual sweep's result again, in its layout."""
        a = np.zeros(self.shape, self.dtype, order=self.order)
        a[self.where] = self.values
        return a

    def close_to(self, g: Any) -> bool:
        """_close(g, the result), without making the result: g's entries at `where` against the values,
        and g's largest magnitude elsewhere against the zeros there."""
        if type(g) is not np.ndarray or g.shape != self.shape or g.dtype != self.dtype:
            return _close(dense(g), self.restored())
        w = self.values
        elsewhere = np.ones(self.shape, bool)  # (1 byte an entry: g's largest elsewhere without a copy of g)
        elsewhere[self.where] = False
        with np.errstate(all="ignore"):
            gv = g[self.where]
            off = max(float(np.max(g, initial=0.0, where=elsewhere)), -float(np.min(g, initial=0.0, where=elsewhere)))
            del elsewhere
            if off != off:  # a NaN where the usual sweep has a zero
                return False
            scale = max(float(np.max(w, initial=0.0)), -float(np.min(w, initial=0.0)))
            if _within(scale, float(np.max(np.abs(gv - w), initial=0.0))) and _within(scale, off):
                return True
            atol = _atol(w)
            return off <= atol and bool(np.allclose(gv, w, rtol=_TOL, atol=atol, equal_nan=True))


# A result is compacted (Entries) from this many bytes, where its nonzero entries take at most a
# quarter of its bytes (8 bytes of position per dimension and the value each).
COMPACTED_FROM = 1 << 20


def compacted(out: list) -> list:
    """`out` (a usual sweep's results) with each large array of its own memory that is mostly zeros
    as its Entries: real floating dtypes, contiguous in either order, not a view (a store's rows
    offered to the sweep are kept anyway)."""
    return [_entries(w) or w for w in out]


def _entries(w: Any) -> "Entries | None":
    if type(w) is not np.ndarray or w.base is not None or w.nbytes < COMPACTED_FROM or w.dtype.kind != "f" \
            or w.dtype.itemsize not in (2, 4, 8):
        return None
    order = "C" if w.flags.c_contiguous else "F" if w.flags.f_contiguous else None
    if order is None:
        return None
    bits = w.ravel(order="K").view(f"u{w.dtype.itemsize}")
    if np.count_nonzero(bits) * (8 * w.ndim + w.dtype.itemsize) * 4 > w.nbytes:
        return None
    return Entries(w, order, np.flatnonzero(bits))


def restored(want: list) -> list:
    """compacted's inverse: the usual sweep's results, bit for bit."""
    return [w.restored() if type(w) is Entries else w for w in want]
