"""Rules for polynomials (polyval, polyder, polyint, polyfit, vander) and for convolve and correlate,
composed of other supported operations, step by step as NumPy computes them (see numerics)."""

from __future__ import annotations

import operator
import sys
import threading
import warnings
from typing import Any

import numpy as np

from ...errors import UnsupportedOperationError
from ..handlers import FUNCTION_SWAPS
from ..tracer import holds_tracer, lift
from ..user_sites import user_site
from ..registry import family, register_derived
from ._util import dtype_of
from .cumulative import cumprod, cumsum
from .indexing import gather
from .joining import concat
from .numerics import _arr, _cast
from .piecewise import where
from .reductions import sum_

family("numerics")


# ---------------------------------------------------------------------------
# Polynomials: Horner's scheme and running products
# ---------------------------------------------------------------------------
def _polyval(p, x):
    if isinstance(x, np.poly1d):
        raise UnsupportedOperationError("np.polyval of a np.poly1d x (a composition of polynomials) is not supported "
                                        "by jaccli; evaluate at an array of points", user_site(2))
    p, x = _arr(p), _arr(x)
    y = np.zeros(np.shape(x), dtype=dtype_of(x))  # NumPy starts from zeros_like(x)
    for pv in p:
        y = y * x + pv
    return y


def _vander(x, N=None, increasing=False):
    x = _arr(x)
    if np.ndim(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = np.shape(x)[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = np.promote_types(dtype_of(x), int)
    columns = [np.ones((n, min(N, 1)), dtype=dtype)]
    if N > 1:
        # Column k is x**k as NumPy forms it: the running product x * x * ... (multiply.accumulate).
        columns.append(np.cumprod(np.broadcast_to(np.reshape(_cast(x, dtype), (n, 1)), (n, N - 1)), axis=1))
    v = np.concatenate(columns, axis=1) if len(columns) > 1 else columns[0]
    return v if increasing else v[:, ::-1]


def _no_poly1d(p, name: str) -> None:
    if isinstance(p, np.poly1d):
        raise UnsupportedOperationError(f"{name} of a np.poly1d is not supported by jaccli; pass its coefficients "
                                        "(p.coeffs), an array", user_site(3))


def _polyder(p, m=1):
    _no_poly1d(p, "np.polyder")
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _arr(p)
    for _ in range(m):  # NumPy's recursion, unrolled: one step per order
        n = np.shape(p)[0] - 1
        p = p[:-1] * np.arange(n, 0, -1)
    return p


def _polyint(p, m=1, k=None):
    _no_poly1d(p, "np.polyint")
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = np.zeros(m, float) if k is None else _arr(k)
    k = np.reshape(k, (1,)) if np.ndim(k) == 0 else k
    if np.shape(k)[0] == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if np.shape(k)[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _arr(p)
    for i in range(m):
        p = np.concatenate((p / np.arange(np.shape(p)[0], 0, -1), np.reshape(k[i], (1,))))
    return p


def _polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's least-squares fit step by step (a scaled Vandermonde matrix, lstsq), in traced operations."""
    order = int(deg) + 1
    x, y = _arr(x) + 0.0, _arr(y) + 0.0
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if np.ndim(x) != 1:
        raise TypeError("expected 1D vector for x")
    if np.size(x) == 0:
        raise TypeError("expected non-empty vector for x")
    if np.ndim(y) < 1 or np.ndim(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if np.shape(x)[0] != np.shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = np.shape(x)[0] * np.finfo(dtype_of(x)).eps
    lhs, rhs = np.vander(x, order), y
    if w is not None:
        w = _arr(w) + 0.0
        if np.ndim(w) != 1:
            raise TypeError("expected a 1-d array for weights")
        if np.shape(w)[0] != np.shape(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, np.newaxis]
        rhs = rhs * (w[:, np.newaxis] if np.ndim(rhs) == 2 else w)
    scale = np.sqrt(np.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=3)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        vbase = np.linalg.inv(np.dot(lhs.T, lhs)) / np.outer(scale, scale)
        if cov == "unscaled":
            fac = 1
        else:
            if np.shape(x)[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the covariance matrix")
            fac = resids / (np.shape(x)[0] - order)
        return (c, vbase * fac) if np.ndim(y) == 1 else (c, vbase[:, :, np.newaxis] * fac)
    return c


register_derived(np.polyval, _polyval, notes="Horner's scheme, as in NumPy; p and x may be traced")
register_derived(np.polyder, _polyder, notes="coefficients times their powers, m times")
register_derived(np.polyint, _polyint, notes="coefficients over their powers, m times; p and k may be traced")
register_derived(np.polyfit, _polyfit,
                 notes="NumPy's steps (scaled Vandermonde matrix, lstsq); x, y and w may be traced: differentiable "
                       "where the fit's rank is locally constant; values agree with NumPy's to rounding")
register_derived(np.vander, _vander, uses=(cumprod, concat), notes="powers are running products, as in NumPy")


# ---------------------------------------------------------------------------
# convolve and correlate (real 1-D): one gather of precomputed positions, a product, a sum over taps
# ---------------------------------------------------------------------------
def _correlate_mode(mode) -> int:
    """NumPy's own reading of `mode` (and its errors) as 0 (valid), 1 (same) or 2 (full)."""
    return np.correlate(np.zeros(3), np.zeros(2), mode).size - 2


def _vector(x, name: str, ndmin_one: bool):
    x = _arr(x)
    if dtype_of(x).kind == "c":
        raise UnsupportedOperationError(f"{name} of complex arrays is not supported by jaccli; "
                                        "split them into real and imaginary parts", user_site(3))
    if ndmin_one and np.ndim(x) == 0:
        x = np.reshape(x, (1,))
    if np.ndim(x) > 1:
        raise ValueError("object too deep for desired array")
    if np.ndim(x) == 0:
        raise ValueError("object of too small depth for desired array")
    return x


def _sliding(a, v, mode: int):
    """NumPy's correlation core for len(a) >= len(v): out[o] = sum_j a[o - left + j] * v[j] over the
    positions inside a, as a gather of a (one row of taps per output) times v."""
    n1, n2 = np.shape(a)[0], np.shape(v)[0]
    left = (0, n2 // 2, n2 - 1)[mode]
    length = (n1 - n2 + 1, n1, n1 + n2 - 1)[mode]
    pos = np.arange(length)[:, None] - left + np.arange(n2)
    terms = a[np.clip(pos, 0, n1 - 1)] * v
    inside = (pos >= 0) & (pos < n1)
    if not inside.all():
        terms = np.where(inside, terms, 0.0)  # not 0 * v: an inf or NaN in v stays out of the edges
    # NumPy adds kernels of up to 11 taps one after the other (wider ones go to BLAS): a running
    # sum gives those bit for bit.
    if n2 <= 11:
        return np.cumsum(terms, axis=1)[:, -1]
    return np.sum(terms, axis=1)


def _convolve(a, v, mode="full"):
    a, v = _vector(a, "np.convolve", True), _vector(v, "np.convolve", True)
    if np.shape(a)[0] == 0:
        raise ValueError("a cannot be empty")
    if np.shape(v)[0] == 0:
        raise ValueError("v cannot be empty")
    if np.shape(v)[0] > np.shape(a)[0]:
        a, v = v, a
    return _sliding(a, v[::-1], _correlate_mode(mode))


def _correlate(a, v, mode="valid"):
    mode = _correlate_mode(mode)
    a, v = _vector(a, "np.correlate", False), _vector(v, "np.correlate", False)
    if np.shape(a)[0] == 0:
        raise ValueError("first array argument cannot be empty")
    if np.shape(v)[0] == 0:
        raise ValueError("second array argument cannot be empty")
    if np.shape(a)[0] < np.shape(v)[0]:
        return _sliding(v, a, mode)[::-1]  # NumPy swaps the arguments and reverses the result
    return _sliding(a, v, mode)


_SLIDING_NOTES = ("real 1-D inputs, both may be traced; kernels of up to 11 taps sum in NumPy's order, wider ones "
                  "and the edges of 'same'/'full' may differ from NumPy's BLAS sums in the last bit")
register_derived(np.convolve, _convolve, uses=(gather, cumsum, sum_, where), notes=_SLIDING_NOTES)
register_derived(np.correlate, _correlate, uses=(gather, cumsum, sum_, where), notes=_SLIDING_NOTES)


# ---------------------------------------------------------------------------
# numpy.polynomial's classes: Chebyshev(c)(x) maps x to the window with np.asanyarray first
# ---------------------------------------------------------------------------
_POLYUTILS = "numpy.polynomial.polyutils"
_polyutils_swapped = [False]
_SWAP_LOCK = threading.Lock()


def install_for(func: Any) -> bool:
    """With None (before f runs), once numpy.polynomial is imported: swap in a polyutils.mapdomain
    that maps a traced x with operations that have rules (the classes' __call__ then evaluates it
    with chebval, polyval, ..., which are NumPy code jaccli records). Never a rule for `func`."""
    if func is not None or _polyutils_swapped[0]:
        return False
    pu = sys.modules.get(_POLYUTILS)
    if pu is None:
        return False
    with _SWAP_LOCK:  # once: a second thread here would find the first's replacement as the original
        if not _polyutils_swapped[0]:
            _swap_mapdomain(pu)
    return False


def _swap_mapdomain(pu: Any) -> None:
    original = pu.mapdomain

    def mapdomain(x, old, new):
        if not holds_tracer(x):
            return original(x, old, new)
        off, scl = pu.mapparms(old, new)
        return off + scl * lift(x)

    mapdomain.__wrapped__ = original
    FUNCTION_SWAPS.append((pu, "mapdomain", original, mapdomain))
    _polyutils_swapped[0] = True
