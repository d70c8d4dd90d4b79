"""Rules for numerical-methods helpers (differences, gradients, quadrature, interpolation, cross
products), composed of other supported operations; polynomials and statistics have modules of their own.

Each handler follows NumPy's own implementation step by step (same formulas, same order of
operations), so that on plain values it gives NumPy's result bit for bit, and raises NumPy's
exceptions for bad arguments. Everything that depends on the values of traced arrays (an
interval, a branch, a sort order) is computed on plain values through `guarded`.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..registry import family, register_derived
from ..tracer import Tracer, guarded
from ._util import along, axis_index, dtype_of
from .indexing import gather, get_basic
from .joining import concat
from .piecewise import where
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
