"""Rules for numerical-methods helpers (differences, quadrature, polynomials, convolution,
interpolation, order statistics), composed of other supported operations.

Each handler follows NumPy's own implementation step by step (same formulas, same order of
operations), so that on plain values it gives NumPy's result bit for bit, and raises NumPy's
exceptions for bad arguments. Everything that depends on the values of traced arrays (an
interval, a branch, a sort order) is computed on plain values through `guarded`.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from ...errors import UnsupportedOperationError
from ..core import user_site
from ..registry import family, register_derived
from ..tracer import Tracer, guarded
from ._util import along, as_scalar, axis_index, dtype_of
from .elementwise import where
from .indexing import gather, get_basic
from .joining import concat
from .products import matmul
from .cumulative import cumprod, cumsum
from .reductions import sum_

family("numerics")


def _arr(x):
    """x as an array: a traced value as it is, anything else through np.asarray (as NumPy starts)."""
    return x if type(x) is Tracer else np.asarray(x)


def _cast(x, dtype):
    """The array x in `dtype` (a recorded cast when x is traced); x itself when it already is."""
    return x if dtype_of(x) == dtype else x.astype(dtype)


def _axes(axis, ndim: int) -> tuple[int, ...]:
    """An int or a sequence of ints as non-negative axes in the given order; NumPy's errors otherwise."""
    axes = tuple(axis_index(a, ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    return axes


# ---------------------------------------------------------------------------
# diff and ediff1d: slices and a subtraction
# ---------------------------------------------------------------------------
def _diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = _arr(a)
    nd = np.ndim(a)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis_index(axis, nd)
    shape = np.shape(a)
    end_shape = shape[:axis] + (1,) + shape[axis + 1:]  # where a scalar prepend/append is broadcast to
    parts = [a]
    if prepend is not np._NoValue:
        parts.insert(0, _diff_end(prepend, end_shape))
    if append is not np._NoValue:
        parts.append(_diff_end(append, end_shape))
    if len(parts) > 1:
        a = np.concatenate(parts, axis)
    later, earlier = along(axis, slice(1, None)), along(axis, slice(None, -1))
    for _ in range(n):
        a = a[later] - a[earlier]
    return a


def _diff_end(values, shape):
    values = _arr(values)
    return np.broadcast_to(values, shape) if np.ndim(values) == 0 else values


def _ediff1d(ary, to_end=None, to_begin=None):
    ary = np.reshape(_arr(ary), (-1,))
    steps = ary[1:] - ary[:-1]
    if to_begin is None and to_end is None:
        return steps
    dtype = dtype_of(ary)  # the result has the dtype of `ary`, whatever the ends are
    begin = _ediff1d_end(to_begin, "to_begin", dtype)
    end = _ediff1d_end(to_end, "to_end", dtype)
    return np.concatenate([p for p in (begin, steps, end) if p is not None])


def _ediff1d_end(values, name: str, dtype):
    if values is None:
        return None
    values = _arr(values)
    if not np.can_cast(dtype_of(values), dtype, casting="same_kind"):
        raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
    return _cast(np.reshape(values, (-1,)), dtype)


register_derived(np.diff, _diff, uses=(get_basic, concat), notes="prepend and append may be traced")
register_derived(np.ediff1d, _ediff1d, uses=(get_basic, concat), notes="to_begin and to_end may be traced")


# ---------------------------------------------------------------------------
# gradient: NumPy's finite-difference formulas, each edge and the interior a piece of one concatenate
# ---------------------------------------------------------------------------
def _gradient(f, *varargs, axis=None, edge_order=1):
    f = _arr(f)
    nd = np.ndim(f)
    axes = tuple(range(nd)) if axis is None else _axes(axis, nd)
    spacings = _spacings(f, varargs, axes)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = dtype_of(f)
    if not np.issubdtype(otype, np.inexact):
        if np.issubdtype(otype, np.integer):
            f = f.astype(np.float64)
        otype = np.dtype(np.float64)
    outs = []
    for ax, h in zip(axes, spacings):
        if np.shape(f)[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        edges = _first_order_edges if edge_order == 1 else _second_order_edges
        first, last = edges(f, h, ax)
        outs.append(_cast(np.concatenate([first, _interior(f, h, ax), last], axis=ax), otype))
    return outs[0] if len(axes) == 1 else tuple(outs)


def _spacings(f, varargs, axes):
    """Per axis: a scalar step or the steps between the coordinates (np.gradient's varargs).

    Like NumPy, equal steps of plain coordinates become one scalar step (the uniform formulas).
    Traced coordinates always keep their steps: the non-uniform formulas are the ones whose
    derivative reaches every coordinate (the values then agree with NumPy's to rounding).
    """
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    spacings = list(varargs)
    for i, (ax, coords) in enumerate(zip(axes, varargs)):
        coords = _arr(coords)
        if np.ndim(coords) == 0:
            continue
        if np.ndim(coords) != 1:
            raise ValueError("distances must be either scalars or 1d")
        if np.shape(coords)[0] != np.shape(f)[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        if np.issubdtype(dtype_of(coords), np.integer):
            coords = coords.astype(np.float64)
        steps = np.diff(coords)
        if type(steps) is not Tracer and (steps == steps[0]).all():
            steps = steps[0]
        spacings[i] = steps
    return spacings


def _interior(f, h, ax):
    """Second-order central differences at the interior points."""
    before, middle, after = (f[along(ax, s)] for s in (slice(None, -2), slice(1, -1), slice(2, None)))
    if np.ndim(h) == 0:
        return (after - before) / (2. * h)
    dx1, dx2 = h[:-1], h[1:]
    a = -(dx2) / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    shape = tuple(-1 if i == ax else 1 for i in range(np.ndim(f)))
    a, b, c = (np.reshape(v, shape) for v in (a, b, c))
    return a * before + b * middle + c * after


def _first_order_edges(f, h, ax):
    """One-sided first differences at both ends (each keeps the axis, with length 1)."""
    uniform = np.ndim(h) == 0
    first = (f[along(ax, slice(1, 2))] - f[along(ax, slice(0, 1))]) / (h if uniform else h[0])
    last = (f[along(ax, slice(-1, None))] - f[along(ax, slice(-2, -1))]) / (h if uniform else h[-1])
    return first, last


def _second_order_edges(f, h, ax):
    """One-sided second-order differences at both ends (each keeps the axis, with length 1)."""
    def at(i):
        return f[along(ax, slice(i, i + 1 if i != -1 else None))]

    if np.ndim(h) == 0:
        a, b, c = -1.5 / h, 2. / h, -0.5 / h
    else:
        dx1, dx2 = h[0], h[1]
        a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
        b = (dx1 + dx2) / (dx1 * dx2)
        c = - dx1 / (dx2 * (dx1 + dx2))
    first = a * at(0) + b * at(1) + c * at(2)
    if np.ndim(h) == 0:
        a, b, c = 0.5 / h, -2. / h, 1.5 / h
    else:
        dx1, dx2 = h[-2], h[-1]
        a = (dx2) / (dx1 * (dx1 + dx2))
        b = - (dx2 + dx1) / (dx1 * dx2)
        c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
    last = a * at(-3) + b * at(-2) + c * at(-1)
    return first, last


register_derived(np.gradient, _gradient, uses=(get_basic, concat),
                 notes="f and the spacings (scalars or coordinates) may be traced; traced coordinates always take "
                       "the non-uniform formulas, so their derivative reaches every coordinate")


# ---------------------------------------------------------------------------
# trapezoid (and trapz where NumPy still has it)
# ---------------------------------------------------------------------------
def _trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _arr(y)
    if x is None:
        d = dx
    else:
        x = _arr(x)
        if np.ndim(x) == 1:
            d = np.diff(x)
            shape = [1] * np.ndim(y)
            shape[axis] = np.shape(d)[0]
            d = np.reshape(d, shape)
        else:
            d = np.diff(x, axis=axis)
    nd = np.ndim(y)
    later, earlier = [slice(None)] * nd, [slice(None)] * nd
    later[axis], earlier[axis] = slice(1, None), slice(None, -1)
    return np.sum(d * (y[tuple(later)] + y[tuple(earlier)]) / 2.0, axis=axis)


if hasattr(np, "trapezoid"):
    register_derived(np.trapezoid, _trapezoid, uses=(get_basic, sum_), notes="y, x and dx may be traced")
if hasattr(np, "trapz"):
    register_derived(np.trapz, _trapezoid, uses=(get_basic, sum_), notes="y, x and dx may be traced")


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
# interp: the interval of each query point from the plain values, then the linear formula
# ---------------------------------------------------------------------------
# Which value NumPy's compiled interp gives at a query point, as in its C code.
_FORMULA, _OTHER_END, _KNOT, _LEFT, _RIGHT, _LAST, _NAN = range(7)


def _interp_branches(x, xp, fp):
    """For every query point: the interval j used and which of NumPy's branches gives its value.

    NumPy takes the interval with xp[j] <= x < xp[j+1] and evaluates slope * (x - xp[j]) + fp[j];
    a knot gives fp[j] (here the formula, which equals it, unless it is NaN), x == xp[-1] gives
    fp[-1], and a NaN from infinite data is retried from the other end of the interval. Points
    outside [xp[0], xp[-1]) use no interval: they get one of positive width, so no rule divides by 0.
    """
    n = xp.shape[0]
    if n == 1:
        branch = np.where(x < xp[0], _LEFT, np.where(x > xp[0], _RIGHT, _KNOT))
        return np.zeros(np.shape(x), dtype=np.intp), branch
    j = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, n - 2)
    with np.errstate(all="ignore"):
        slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
        failed = np.isnan(slope * (x - xp[j]) + fp[j])
        retry_failed = np.isnan(slope * (x - xp[j + 1]) + fp[j + 1])
    branch = np.select([np.isnan(x), x > xp[-1], x < xp[0], x == xp[-1],
                        failed & ((x == xp[j]) | (retry_failed & (fp[j] == fp[j + 1]))), failed & ~retry_failed],
                       [_NAN, _RIGHT, _LEFT, _LAST, _KNOT, _OTHER_END], _FORMULA)
    outside = np.isin(branch, (_NAN, _RIGHT, _LEFT, _LAST))
    return np.where(outside, np.argmax(np.diff(xp) > 0), j), branch


def _interp_core(x, xp, fp, left, right):
    """NumPy's value at every query point: the formula on the interval found on the plain values, and
    NumPy's other branches (where statements on the branch codes) where they apply."""
    j, branch = guarded(_interp_branches, x, xp, fp)
    xj, fj = xp[j], fp[j]
    if np.shape(xp)[0] == 1:
        start, result = _KNOT, fj  # a single sample point: fp[0] between left and right
    else:
        xk, fk = xp[j + 1], fp[j + 1]
        slope = (fk - fj) / (xk - xj)
        start, result = _FORMULA, slope * (x - xj) + fj
    values = {_OTHER_END: lambda: slope * (x - xk) + fk, _KNOT: lambda: fj, _LAST: lambda: fp[-1],
              _LEFT: lambda: fp[0] if left is None else left, _RIGHT: lambda: fp[-1] if right is None else right,
              _NAN: lambda: x}
    for code in np.unique(branch):
        if code != start:
            result = np.where(branch == code, values[int(code)](), result)
    return result


def _fill_value(value):
    """left or right as NumPy's C code reads it (a number, not a string); a traced one must hold one value."""
    if value is None:
        return None
    if type(value) is not Tracer:
        if not hasattr(type(value), "__float__") and not hasattr(type(value), "__index__"):
            raise TypeError(f"must be real number, not {type(value).__name__}")
        return float(value)
    float(np.zeros(np.shape(value)))  # NumPy's error (or warning) for a value that is not a scalar
    return np.reshape(value, ())


def _samples(values):
    """xp or fp as NumPy's C code takes them: float64 arrays of exactly one dimension."""
    values = _arr(values)
    if np.ndim(values) == 0:
        raise ValueError("object of too small depth for desired array")
    if np.ndim(values) > 1:
        raise ValueError("object too deep for desired array")
    return _cast(values, np.dtype(np.float64))


def _interp(x, xp, fp, left=None, right=None, period=None):
    fp = _arr(fp)
    if dtype_of(fp).kind == "c":
        raise UnsupportedOperationError("np.interp with complex fp is not supported by jaccli; interpolate the "
                                        "real and imaginary parts separately", user_site(2))
    x = _cast(_arr(x), np.dtype(np.float64))
    if period is not None:
        if type(period) is Tracer:
            raise UnsupportedOperationError("np.interp with a traced period is not supported by jaccli; pass the "
                                            "period as a plain number", user_site(2))
        if period == 0:
            raise ValueError("period must be a non-zero value")
        period = abs(period)
        left = right = None
        xp, fp = _cast(_arr(xp), np.dtype(np.float64)), _cast(_arr(fp), np.dtype(np.float64))
        if np.ndim(xp) != 1 or np.ndim(fp) != 1:
            raise ValueError("Data points must be 1-D sequences")
        if np.shape(xp)[0] != np.shape(fp)[0]:
            raise ValueError("fp and xp are not of the same length")
        # One period of samples, in order, with a copy of each end beyond the other (as NumPy).
        x, xp = x % period, xp % period
        order = guarded(np.argsort, xp)
        xp, fp = xp[order], fp[order]
        xp = np.concatenate((xp[-1:] - period, xp, xp[0:1] + period))
        fp = np.concatenate((fp[-1:], fp, fp[0:1]))
    fp, xp = _samples(fp), _samples(xp)
    if np.shape(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    if np.shape(fp)[0] != np.shape(xp)[0]:
        raise ValueError("fp and xp are not of the same length.")
    return _interp_core(x, xp, fp, _fill_value(left), _fill_value(right))


register_derived(np.interp, _interp, uses=(gather, where),
                 notes="x, xp and fp may be traced (xp increasing, as NumPy requires), and with them left and "
                       "right; at a knot xp[j] the derivative is that of the interval [xp[j], xp[j+1]) NumPy "
                       "evaluates (one-sided, from the right); at x == xp[-1] the value is fp[-1], constant in x; "
                       "a traced period is refused")


# ---------------------------------------------------------------------------
# cross: NumPy's component formulas
# ---------------------------------------------------------------------------
_NUMPY_2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"  # 2-component vectors are deprecated from 2.0


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa, axisb, axisc = (axis,) * 3
    a, b = _arr(a), _arr(b)
    if np.ndim(a) < 1 or np.ndim(b) < 1:
        raise ValueError("At least one array has zero dimension")
    a = np.moveaxis(a, axis_index(axisa, np.ndim(a)), -1)
    b = np.moveaxis(b, axis_index(axisb, np.ndim(b)), -1)
    na, nb = np.shape(a)[-1], np.shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if (na == 2 or nb == 2) and _NUMPY_2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                      "instead. (deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=3)
    shape = np.broadcast_shapes(np.shape(a)[:-1], np.shape(b)[:-1])
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        return a0 * b1 - a1 * b0
    axisc = axis_index(axisc, len(shape) + 1)
    if na == 2:
        b2 = b[..., 2]
        parts = (a1 * b2, -(a0 * b2), a0 * b1 - a1 * b0)
    elif nb == 2:
        a2 = a[..., 2]
        parts = (-(a2 * b1), a2 * b0, a0 * b1 - a1 * b0)
    else:
        a2, b2 = a[..., 2], b[..., 2]
        parts = (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
    return np.moveaxis(np.stack(parts, axis=-1), -1, axisc)


def _linalg_cross(x1, x2, /, *, axis=-1):
    n1, n2 = np.shape(x1)[axis], np.shape(x2)[axis]
    if n1 != 3 or n2 != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, "
                         f"but they are {n1} and {n2} dimensional instead.")
    return _cross(x1, x2, axis=axis)


register_derived(np.cross, _cross, uses=(get_basic, concat), notes="2- and 3-component vectors, broadcast")
if hasattr(np.linalg, "cross"):
    register_derived(np.linalg.cross, _linalg_cross, uses=(get_basic, concat), notes="3-component vectors")


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
