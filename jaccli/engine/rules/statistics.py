"""Rules for statistics of samples: cov, corrcoef, and the order statistics median, percentile and
quantile, composed of other supported operations, step by step as NumPy computes them (see numerics)."""

from __future__ import annotations

import warnings

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..registry import family, register_derived
from ..tracer import Tracer, guarded
from ._util import as_scalar, dtype_of
from .indexing import gather
from .numerics import _arr, _axes, _cast
from .piecewise import where
from .products import matmul
from .reductions import sum_

family("numerics")


# ---------------------------------------------------------------------------
# cov and corrcoef
# ---------------------------------------------------------------------------
def _all_integral(w) -> bool:
    return bool(np.all(w == np.around(w)))


def _any_negative(w) -> bool:
    return bool(np.any(w < 0))


def _any_zero(w) -> bool:
    return bool(np.any(w == 0.0))


def _observation_weights(w, name: str, count: int, integral: bool = False):
    """fweights or aweights, checked as NumPy checks them (a traced one is checked on its values)."""
    w = _cast(_arr(w), np.dtype(np.float64))
    if integral and not guarded(_all_integral, w):
        raise TypeError("fweights must be integer")
    if np.ndim(w) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if np.shape(w)[0] != count:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if guarded(_any_negative, w):
        raise ValueError(f"{name} cannot be negative")
    return w


def _at_least_2d(m, dtype):
    """np.array(m, ndmin=2, dtype=dtype)."""
    return _cast(np.reshape(m, (1,) * (2 - np.ndim(m)) + np.shape(m)), dtype)


def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _arr(m)
    if np.ndim(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _arr(y)
        if np.ndim(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(*(dtype_of(v) for v in (m, y) if v is not None), np.float64)
    X = _at_least_2d(m, np.dtype(dtype))  # variables by observations
    if not rowvar and np.ndim(m) != 1:
        X = np.transpose(X)
    if np.shape(X)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = _at_least_2d(y, np.dtype(dtype))
        if not rowvar and np.shape(y)[0] != 1:
            y = np.transpose(y)
        X = np.concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    count = np.shape(X)[1]
    w = None
    if fweights is not None:
        w = _observation_weights(fweights, "fweights", count, integral=True)
    if aweights is not None:
        aweights = _observation_weights(aweights, "aweights", count)
        w = aweights if w is None else w * aweights
    if w is None:
        avg = np.sum(X, axis=1) / count  # np.average without weights: np.mean
        fact = count - ddof
    else:
        wgt = np.reshape(w, (1, -1))
        w_sum = np.sum(wgt, axis=1)
        if guarded(_any_zero, w_sum):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        avg = np.sum(X * wgt, axis=1) / w_sum
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            # NumPy uses Python's sum() here: a running sum, in order.
            fact = w_sum - ddof * np.cumsum(w * aweights)[-1] / w_sum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    # NumPy updates X and c in place: they keep their dtype.
    X = _cast(X - avg[:, None], dtype_of(X))
    c = np.dot(X, np.transpose(X if w is None else X * w))
    return np.squeeze(_cast(c * np.true_divide(1, fact), dtype_of(c)))


def _corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = _cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 0:
        return c / c  # NumPy's answer for a single variable: 1, or NaN
    stddev = np.sqrt(np.diag(c))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    # NumPy clips to [-1, 1] against rounding. A where on the plain comparison does the same without
    # a max/min tie (and its half derivative) on the diagonal, where the value is exactly 1.
    over, under = c > 1, c < -1
    if np.any(over) or np.any(under):
        c = np.where(over, 1.0, np.where(under, -1.0, c))
    return c


register_derived(np.cov, _cov, uses=(sum_, matmul),
                 notes="m, y, fweights and aweights may be traced")
register_derived(np.corrcoef, _corrcoef, uses=(sum_, matmul, where),
                 notes="values clipped to [-1, 1] as in NumPy, by a where (the diagonal is no tie)")


# ---------------------------------------------------------------------------
# median, percentile, quantile: np.sort, then NumPy's interpolation between order statistics
# ---------------------------------------------------------------------------
def _sorted_first(a, axis):
    """a sorted along its reduced axes, flattened into a new first axis (as NumPy's _ureduce and
    _quantile lay it out), and the shape keepdims=True gives the result."""
    nd, shape = np.ndim(a), np.shape(a)
    if axis is None:
        flat, kept = np.reshape(a, (-1,)), (1,) * nd
    else:
        axes = _axes(axis, nd)
        rest = tuple(i for i in range(nd) if i not in axes)
        moved = np.transpose(a, tuple(sorted(axes)) + rest)
        flat = np.reshape(moved, (-1,) + tuple(shape[i] for i in rest))
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    return np.sort(flat, axis=0), kept


def _nan_last(s, result):
    """NumPy's answer for a slice holding a NaN is NaN: sorted, it is the slice's last entry."""
    last = s[-1]
    has_nan = guarded(np.isnan, last)
    return np.where(has_nan, last, result) if np.any(has_nan) else result


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    s, kept = _sorted_first(_arr(a), axis)
    n = np.shape(s)[0]
    half = n // 2
    middle = s[half:half + 1] if n % 2 else s[half - 1:half + 1]
    result = _nan_last(s, np.sum(middle, axis=0) / np.shape(middle)[0])  # NumPy takes their mean
    return np.reshape(result, kept) if keepdims else result


def _in_unit_interval(q) -> bool:
    return bool(np.all((0 <= q) & (q <= 1)))


def _bracket(virtual, n: int):
    """NumPy's _get_indexes: the order statistics below and above each virtual index."""
    below = np.floor(virtual)
    above = below + 1
    for cond, index in ((virtual >= n - 1, -1), (virtual < 0, 0), (np.isnan(virtual), -1)):
        below, above = np.where(cond, index, below), np.where(cond, index, above)
    return below.astype(np.intp), above.astype(np.intp)


def _lerp(a, b, t):
    """NumPy's _lerp: a + (b - a) t, and b - (b - a)(1 - t) from t = 0.5 on (exact at both ends)."""
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


def checked_quantile_args(name: str, percent: bool, a, q, method: str, weights) -> tuple:
    """(a, q as a fraction, whether q was a Python number) for the quantile functions, or NumPy's error.

    Raises as NumPy does for complex a, q out of range and weights without method='inverted_cdf';
    jaccli's own error for weights. Called by the handler itself, so user_site(3) is the user's line.
    """
    a = _arr(a)
    if dtype_of(a).kind == "c":
        raise TypeError("a must be an array of real numbers")
    weak_q = type(q) in (int, float)  # a Python number: the result keeps the dtype of a
    q = _arr(q)
    if percent:
        q = np.true_divide(q, 100)
        q = q if type(q) is Tracer else np.asarray(q)
    if not guarded(_in_unit_interval, q):
        raise ValueError("Percentiles must be in the range [0, 100]" if percent
                         else "Quantiles must be in the range [0, 1]")
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
        raise UnsupportedOperationError(f"{name} with weights is not supported by jaccli", user_site(3))
    return a, q, weak_q


def check_quantile_method(name: str, method: str) -> None:
    """NumPy's error for a method it does not know; jaccli's for one other than 'linear'."""
    np.quantile(np.zeros(1), 0.5, method=method)
    if method != "linear":
        raise UnsupportedOperationError(f"{name} with method={method!r} is not supported by jaccli; only "
                                        "method='linear' is; see 'jaccli ops'", user_site(3))


def _order_statistic(name: str, percent: bool):
    def handler(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
        a, q, weak_q = checked_quantile_args(name, percent, a, q, method, weights)
        s, kept = _sorted_first(a, axis)
        if np.ndim(q) > 2:
            raise ValueError("q must be a scalar or 1d")
        check_quantile_method(name, method)
        virtual = (np.shape(s)[0] - 1) * q
        if np.issubdtype(dtype_of(virtual), np.integer):
            result = s[virtual]  # integer q: the order statistics themselves
        else:
            below, above = guarded(_bracket, virtual, np.shape(s)[0])
            gamma = virtual - below
            gamma = float(gamma) if weak_q else np.reshape(gamma, np.shape(q) + (1,) * (np.ndim(s) - 1))
            result = _lerp(s[below], s[above], gamma)
        result = _nan_last(s, result)
        return np.reshape(result, np.shape(q) + kept) if keepdims else as_scalar(result)
    return handler


_TIES = "with tied values the derivative goes to the entry a stable sort puts at that rank"
_QUANTILE_NOTES = f"np.sort, then NumPy's method='linear' (the only one supported); q may be traced; {_TIES}"
register_derived(np.median, _median, uses=(gather, sum_), notes=f"np.sort, then the mean of the middle; {_TIES}")
register_derived(np.percentile, _order_statistic("np.percentile", True), uses=(gather, where), notes=_QUANTILE_NOTES)
register_derived(np.quantile, _order_statistic("np.quantile", False), uses=(gather, where), notes=_QUANTILE_NOTES)
