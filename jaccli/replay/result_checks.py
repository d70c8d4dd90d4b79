"""A new compiled sweep's first results checked against the usual sweep's: the same numbers, to rounding."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaccli.engine import SparseBlock, dense


def agrees(got: list, want: list) -> bool:
    """Whether a new program's results are the usual sweep's, to rounding: a program is kept only
    then (a check of the recording machinery itself, once per program; the two may round
    differently: a product's traced form is not always the usual sweep's operations)."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g is None or w is None:
            if g is not w:
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


def _close(g: Any, w: Any) -> bool:
    if np.shape(g) != np.shape(w) or np.result_type(g) != np.result_type(w):
        return False
    with np.errstate(all="ignore"):
        if np.size(w) and np.result_type(w).kind == "f":
            # within atol of each other everywhere: what allclose accepts first, in a few passes
            # without its temporaries (allclose took 5 plain calls of P2-n1000-m1000's Jacobian)
            scale, far = _largest_apart(g, w)
            if scale < np.inf and far <= 1e-9 * scale:
                return True
        scale = float(np.max(np.abs(w), initial=0.0, where=np.isfinite(w)))
        return bool(np.allclose(g, w, rtol=1e-9, atol=1e-9 * scale, equal_nan=True))


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
