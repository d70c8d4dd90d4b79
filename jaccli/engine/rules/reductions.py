"""Rules for reductions along axes (sum, mean, var, std, prod, max, min) and cumulative sums and products."""

from __future__ import annotations

import math

import numpy as np

from ..registry import family, primitive, register, register_derived
from ..seeds import SparseBlock, broadcast_block
from ..tracer import FUNCTION_HANDLERS, UFUNC_HANDLERS, Tracer, guarded, primal
from ._util import along, axis_index, dtype_of, in_dtype, in_method_dtype, norm_axes, reduction_dtype, shape_of, shift
from .indexing import gather, scatter_flat

family("reductions")


def _kept_shape(shape: tuple, axes: tuple) -> tuple:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _spread(g, kept: tuple, shape: tuple):
    """A block of reduced cotangents, broadcast back over the reduced axes."""
    gshape = shape_of(g)
    k = gshape[0]
    if k == 1 and type(g) is not SparseBlock and math.prod(gshape) == 1:
        # One number (a gradient's cotangent of a full sum): broadcast as it is, whatever its
        # axes; a reshape first would be one more operation on a recorded gradient.
        return np.broadcast_to(g, (1,) + tuple(shape))
    return broadcast_block(np.reshape(g, (k,) + kept), (k,) + tuple(shape))


def _spread_times(g, kept: tuple, shape: tuple, w):
    """_spread(g, kept, shape) * w for a w of the full shape: the product itself broadcasts g.

    One operation fewer on a recorded gradient (a Hessian sweeps it again).
    """
    return np.reshape(g, (np.shape(g)[0],) + kept) * w


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


# ---------------------------------------------------------------------------
# sum, mean, average, var, std
# ---------------------------------------------------------------------------
def _sum_impl(x, axes, keepdims):
    if type(x) is np.ndarray:  # what np.sum calls, without its dispatch (replays and sweeps run many)
        return np.add.reduce(x, axis=axes, keepdims=keepdims)
    return np.sum(x, axis=axes, keepdims=keepdims)


sum_ = primitive("np.sum", _sum_impl)


def _sum_vjp(ans, x, axes, keepdims):
    shape = np.shape(x)
    kept = _kept_shape(shape, axes)
    return lambda g: _spread(g, kept, shape)


def _sum_jvp(ans, x, axes, keepdims):
    block_axes = shift(axes)
    return lambda t: np.sum(t, axis=block_axes, keepdims=keepdims)


sum_.defvjp(_sum_vjp)
sum_.defjvp(_sum_jvp)


def _mask(where, a):
    """The plain `where=` mask of a reduction, broadcast to a's shape; None when there is none."""
    if where is np._NoValue or where is True:
        return None
    return np.broadcast_to(primal(where), np.shape(a))


def _masked(a, where, fill):
    """a with `fill` in the entries that a `where=` mask leaves out (their derivative is 0)."""
    mask = _mask(where, a)
    return a if mask is None else np.where(mask, a, fill)


def _sum_handler(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    axes = norm_axes(axis, np.ndim(a))
    a = _masked(a, where, 0.0)
    result = sum_(a, axes, bool(keepdims))
    if initial is not np._NoValue and initial != 0:
        result = result + initial
    return result


def _mean_handler(a, axis=None, dtype=None, out=None, keepdims=False, where=np._NoValue):
    axes = norm_axes(axis, np.ndim(a))
    mask = _mask(where, a)
    if mask is not None:  # the mean of the entries the mask keeps; NaN where it keeps none, as NumPy
        return _masked_mean(a, ~mask, axes, bool(keepdims))
    return _sum_handler(a, axis=axes, keepdims=keepdims) / float(max(_count(np.shape(a), axes), 1))  # as NumPy


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is None:
        avg = _mean_handler(a, axis, keepdims=keepdims)
        scale = np.full(np.shape(avg), float(_count(np.shape(a), norm_axes(axis, np.ndim(a)))))
    else:
        w = weights
        if np.shape(w) != np.shape(a):
            # 1-D weights along `axis`, as NumPy allows.
            ax = int(axis) % np.ndim(a)
            w = np.reshape(w, tuple(-1 if i == ax else 1 for i in range(np.ndim(a))))
        scale = np.sum(w, axis=axis, keepdims=keepdims)
        avg = _sum_handler(a * w, axis=axis, keepdims=keepdims) / scale
        scale = np.broadcast_to(scale, np.shape(avg))
    return (avg, scale) if returned else avg


def _var_handler(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
                 mean=np._NoValue, correction=np._NoValue):
    if correction is not np._NoValue:
        ddof = correction
    mask = _mask(where, a)
    return _variance(a, None if mask is None else ~mask, norm_axes(axis, np.ndim(a)), bool(keepdims), ddof, mean,
                     _moment_dtype("np.var", np.var, a, dtype))


def _std_handler(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    return _root(_var_handler(a, axis, dtype, ddof=ddof, keepdims=keepdims, **kw))


register(np.sum, _sum_handler, prims=(sum_,))
register((np.add, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=np._NoValue: _sum_handler(a, axis=axis, keepdims=keepdims, initial=initial, where=where),
         prims=(sum_,), kind="derived")
register_derived(np.mean, _mean_handler, uses=(sum_,))
register_derived(np.average, _average, uses=(sum_,))
register_derived(np.var, _var_handler, uses=(sum_,))
register_derived(np.std, _std_handler, uses=(sum_,),
                 notes="the derivative is infinite where the standard deviation is 0 (as for sqrt at 0)")


# ---------------------------------------------------------------------------
# prod: each entry's derivative is the product of the others, formed without dividing by x
# (so it stays right with one or several zeros) from exclusive prefix and suffix products.
# ---------------------------------------------------------------------------
def _prod_impl(x, axes, keepdims):
    return np.prod(x, axis=axes, keepdims=keepdims)


prod = primitive("np.prod", _prod_impl)


def _exclusive_cumprod(y):
    """[1, y0, y0*y1, ...] along the last axis: the product of the entries before each one."""
    ones = np.ones(np.shape(y)[:-1] + (1,), dtype=dtype_of(y))
    return np.concatenate([ones, np.cumprod(y[..., :-1], axis=-1)], axis=-1)


def _others_product(x, axes):
    """For each entry of x, the product of the other entries along `axes`."""
    shape = np.shape(x)
    n = _count(shape, axes)
    if n <= 1:
        return np.ones(shape, dtype=dtype_of(x))
    rest = [a for a in range(len(shape)) if a not in axes]
    perm = rest + list(axes)
    moved_shape = tuple(shape[a] for a in perm)
    xm = np.reshape(np.transpose(x, perm), moved_shape[: len(rest)] + (n,))
    w = _exclusive_cumprod(xm) * _exclusive_cumprod(xm[..., ::-1])[..., ::-1]
    return np.transpose(np.reshape(w, moved_shape), tuple(int(i) for i in np.argsort(perm)))


def _prod_vjp(ans, x, axes, keepdims):
    w = _others_product(x, axes)
    shape = np.shape(x)
    kept = _kept_shape(shape, axes)
    return lambda g: _spread_times(g, kept, shape, w)


def _prod_jvp(ans, x, axes, keepdims):
    w = _others_product(x, axes)
    block_axes = shift(axes)
    return lambda t: np.sum(t * w, axis=block_axes, keepdims=keepdims)


prod.defvjp(_prod_vjp)
prod.defjvp(_prod_jvp)


def _prod_handler(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    axes = norm_axes(axis, np.ndim(a))
    a = _masked(a, where, 1.0)
    result = prod(a, axes, bool(keepdims))
    if initial is not np._NoValue and initial != 1:
        result = result * initial
    return result


_PROD_NOTES = "division-free rule: exact with one or several zeros"
register(np.prod, _prod_handler, prims=(prod,), notes=_PROD_NOTES)
register((np.multiply, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=np._NoValue: _prod_handler(a, axis=axis, keepdims=keepdims, initial=initial, where=where),
         prims=(prod,), kind="derived", notes=_PROD_NOTES)


# ---------------------------------------------------------------------------
# max and min: the derivative goes to the maximal entries, split evenly among ties
# ---------------------------------------------------------------------------
def _tie_weights(ans, x, axes):
    """1/(number of ties) where x equals its reduced extreme `ans`, else 0."""
    hit = np.equal(x, np.reshape(ans, _kept_shape(np.shape(x), axes)))
    return hit / np.sum(hit, axis=axes, keepdims=True)


def _extreme(name, np_func):
    def impl(x, axes, keepdims):
        return np_func(x, axis=axes, keepdims=keepdims)

    prim = primitive(name, impl)

    def weights(ans, x, axes):
        # Piecewise constant in x: computed on the plain values, one guard for a replay, and
        # nothing recorded (a traced reshape of ans would be a dead operation of the recording).
        return guarded(_tie_weights, ans, x, axes)

    def vjp(ans, x, axes, keepdims):
        w = weights(ans, x, axes)
        shape = np.shape(x)
        kept = _kept_shape(shape, axes)
        return lambda g: _spread_times(g, kept, shape, w)

    def jvp(ans, x, axes, keepdims):
        w = weights(ans, x, axes)
        block_axes = shift(axes)
        return lambda t: np.sum(t * w, axis=block_axes, keepdims=keepdims)

    prim.defvjp(vjp)
    prim.defjvp(jvp)
    prim.kink = lambda ans, x, axes, keepdims: np.sum(
        np.equal(x, np.reshape(ans, _kept_shape(np.shape(x), axes))), axis=axes, keepdims=keepdims) > 1

    def handler(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        axes = norm_axes(axis, np.ndim(a))
        if _mask(where, a) is not None:
            if initial is np._NoValue:  # NumPy's own rule
                raise ValueError(f"reduction operation '{'maximum' if np_func is np.max else 'minimum'}' does not "
                                 "have an identity, so to use a where mask one has to specify 'initial'")
            a = _masked(a, where, initial)
        result = prim(a, axes, bool(keepdims))
        if initial is not np._NoValue:
            result = (np.maximum if np_func is np.max else np.minimum)(result, initial)
        return result

    notes = "ties split the derivative evenly among the tied entries"
    register(np_func, handler, prims=(prim,), notes=notes)
    return prim, handler


max_, _max_handler = _extreme("np.max", np.max)
min_, _min_handler = _extreme("np.min", np.min)
if np.amax is not np.max:
    register_derived(np.amax, _max_handler, uses=(max_,), name="np.amax")
    register_derived(np.amin, _min_handler, uses=(min_,), name="np.amin")
register((np.maximum, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=np._NoValue: _max_handler(in_method_dtype(np.maximum.reduce, a, dtype), axis=axis, keepdims=keepdims,
                                         initial=initial, where=where),
         prims=(max_,), kind="derived")
register((np.minimum, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=np._NoValue: _min_handler(in_method_dtype(np.minimum.reduce, a, dtype), axis=axis, keepdims=keepdims,
                                         initial=initial, where=where),
         prims=(min_,), kind="derived")
register_derived(np.ptp, lambda a, axis=None, out=None, keepdims=False:
                 _max_handler(a, axis, keepdims=keepdims) - _min_handler(a, axis, keepdims=keepdims),
                 uses=(max_, min_), notes="ties split the derivative evenly among the tied entries")


# ---------------------------------------------------------------------------
# cumsum and cumprod (axis=None flattens first)
# ---------------------------------------------------------------------------
_REVERSED = slice(None, None, -1)


def _cumsum_impl(x, axis):
    return np.cumsum(x, axis=axis)


cumsum = primitive("np.cumsum", _cumsum_impl)
# The transpose of a running sum is a running sum from the other end.
cumsum.defvjp(lambda ans, x, axis: (lambda g, flip=along(axis + 1, _REVERSED):
                                    np.cumsum(g[flip], axis=axis + 1)[flip]))
cumsum.defjvp(lambda ans, x, axis: (lambda t: np.cumsum(t, axis=axis + 1)))


def _cumprod_impl(x, axis):
    return np.cumprod(x, axis=axis)


cumprod = primitive("np.cumprod", _cumprod_impl)

# With P_k the product of the entries before k, d(cumprod)_i/dx_k = P_k * x_{k+1} ... x_i for k <= i.
# So the tangent z = J t solves z_i = x_i z_{i-1} + P_i t_i, and the cotangent is P_k h_k where
# h_k = g_k + x_{k+1} h_{k+1}. Both recurrences are solved by recursive doubling: log2(n) steps of
# multiplies, slices and concatenations (no division, so zeros are exact; all differentiable).


def _doubling_factors(coef, axis: int) -> list:
    """For the recurrence z_i = c_i z_{i-1} + b_i, given coef = c_1..c_{n-1} along `axis`:
    at step s (d = 2**s) the products c_{i-d+1} ... c_i for i = d..n-1."""
    n = np.shape(coef)[axis] + 1
    factors = []
    d = 1
    while d < n:
        factors.append(coef)
        if 2 * d < n:
            coef = coef[along(axis, slice(d, None))] * coef[along(axis, slice(None, n - 2 * d))]
        d *= 2
    return factors


def _solve(b, factors: list, axis: int):
    """z with z_i = c_i z_{i-1} + b_i along `axis` of a block b (the factors lack the block axis)."""
    n = np.shape(b)[axis]
    d = 1
    for f in factors:
        head = b[along(axis, slice(None, d))]
        tail = b[along(axis, slice(d, None))] + f * b[along(axis, slice(None, n - d))]
        b = np.concatenate([head, tail], axis=axis)
        d *= 2
    return b


def _before(ans, axis: int):
    """The product of the entries before each one: cumprod shifted by one, starting at 1."""
    shape = np.shape(ans)
    ones = np.ones(shape[:axis] + (1,) + shape[axis + 1:], dtype=dtype_of(ans))
    return np.concatenate([ones, ans[along(axis, slice(None, -1))]], axis=axis)


def _cumprod_jvp(ans, x, axis):
    before = _before(ans, axis)
    factors = _doubling_factors(x[along(axis, slice(1, None))], axis)
    return lambda t: _solve(t * before, factors, axis + 1)


def _cumprod_vjp(ans, x, axis):
    before = _before(ans, axis)
    factors = _doubling_factors(x[along(axis, slice(None, 0, -1))], axis)
    flip = along(axis + 1, _REVERSED)
    return lambda g: _solve(g[flip], factors, axis + 1)[flip] * before


cumprod.defjvp(_cumprod_jvp)
cumprod.defvjp(_cumprod_vjp)


def _cumulative(prim, empty):
    def handler(a, axis=None, dtype=None, out=None, *, include_initial=False):
        if axis is None:
            a = np.reshape(a, (-1,))
            axis = 0
        nd = np.ndim(a)
        axis = axis_index(axis, nd)
        result = prim(a, axis) if np.shape(a)[axis] > 0 else a
        if include_initial:
            shape = np.shape(a)
            start = np.full(shape[:axis] + (1,) + shape[axis + 1:], empty, dtype=dtype_of(a))
            result = np.concatenate([start, result], axis=axis)
        return result
    return handler


_cumsum_handler = _cumulative(cumsum, 0.0)
_cumprod_handler = _cumulative(cumprod, 1.0)
_CUMPROD_NOTES = "division-free rule: exact with zeros"
register(np.cumsum, lambda a, axis=None, dtype=None, out=None: _cumsum_handler(a, axis), prims=(cumsum,))
register(np.cumprod, lambda a, axis=None, dtype=None, out=None: _cumprod_handler(a, axis), prims=(cumprod,),
         notes=_CUMPROD_NOTES)
register((np.add, "accumulate"), lambda a, axis=0, dtype=None, out=None: _cumsum_handler(a, axis),
         prims=(cumsum,), kind="derived")
register((np.multiply, "accumulate"), lambda a, axis=0, dtype=None, out=None: _cumprod_handler(a, axis),
         prims=(cumprod,), kind="derived", notes=_CUMPROD_NOTES)
if hasattr(np, "cumulative_sum"):
    register_derived(np.cumulative_sum, _cumsum_handler, uses=(cumsum,))
    register_derived(np.cumulative_prod, _cumprod_handler, uses=(cumprod,), notes=_CUMPROD_NOTES)


# ---------------------------------------------------------------------------
# NaN-ignoring reductions: NaN entries are replaced by the operation's neutral value (their
# derivative is 0); the mask is a plain value derived from the input, hence guarded.
# ---------------------------------------------------------------------------
def _nan_mask(a, where=np._NoValue):
    """Entries to leave out: NaNs, and those a `where=` mask leaves out."""
    mask = guarded(np.isnan, a)
    kept = _mask(where, a)
    return mask if kept is None else mask | ~kept


def _without_nans(a, fill, mask=None):
    return np.where(_nan_mask(a) if mask is None else mask, fill, a)


def _denominator(count, dtype):
    """Counts as divisors in dtype (float32 stays float32); NaN where a slice has none."""
    return np.where(count > 0, count, np.nan).astype(np.result_type(dtype, np.float32))


def _masked_mean(a, mask, axes, keepdims):
    """The mean of a's entries outside `mask` (NaNs, entries a where= leaves out): one plain mask
    serves the sum and the count."""
    count = np.sum(~mask, axis=axes, keepdims=keepdims)
    with np.errstate(invalid="ignore", divide="ignore"):  # an all-NaN slice gives NaN, as NumPy
        return _sum_handler(np.where(mask, 0.0, a), axis=axes, keepdims=keepdims) / _denominator(count, dtype_of(a))


def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
    return _masked_mean(a, _nan_mask(a, where), norm_axes(axis, np.ndim(a)), bool(keepdims))


def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
            mean=np._NoValue, correction=np._NoValue):
    if dtype_of(a).kind not in "fc":  # no entry can be NaN: NumPy's np.var
        return _var_handler(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean, correction=correction)
    if correction is not np._NoValue:
        ddof = correction
    return _variance(a, _nan_mask(a, where), norm_axes(axis, np.ndim(a)), bool(keepdims), ddof, mean,
                     _moment_dtype("np.nanvar", np.nanvar, a, dtype), nan=True)


# ---------------------------------------------------------------------------
# var and std in NumPy's steps: the mean summed in dtype= and cast to it; the deviations in the dtype
# that a and the mean give (nanvar: in a's own); their squares summed in dtype=, divided by the degrees
# of freedom and cast to dtype=. So np.var(x, dtype=int) truncates the mean and each square, and
# dtype=bool asks whether any deviation is not 0: piecewise constant, derivative 0.
# ---------------------------------------------------------------------------
def _moment_dtype(call, numpy_fn, a, dtype):
    """The dtype a variance is computed in: dtype= (NumPy's error if it refuses it), else float64 for
    integers and booleans, or None (the floating dtype of the deviations)."""
    if dtype is not None:
        return reduction_dtype(call, numpy_fn, a, dtype)
    return None if dtype_of(a).kind == "f" else np.dtype(np.float64)


def _variance(a, mask, axes, keepdims, ddof, mean, dtype, nan=False):
    """The variance of a's entries outside `mask` (None: all), about `mean` if given, in `dtype`
    (None: the deviations' own).

    Without nan: NumPy's np.var (no degree of freedom left: a division by 0, inf or NaN); with it,
    np.nanvar (NaN there, unwarned).
    """
    def total(v, keep):
        if mask is None and dtype is None:
            return _sum_handler(v, axis=axes, keepdims=keep)
        return np.sum(v if mask is None else np.where(mask, 0, v), axis=axes, dtype=dtype, keepdims=keep)

    def in_(v):
        return v if dtype is None else in_dtype(v, dtype)

    if mask is None:
        if mean is np._NoValue:
            mean = in_(total(a, True) / float(max(_count(np.shape(a), axes), 1)))  # (an empty slice: unused)
        d = a - mean
        s = total(d * d, keepdims)
        dof = max(_count(np.shape(a), axes) - ddof, 0)  # none left: a division by 0, as NumPy
        return in_(s / (float(dof) if dof else np.zeros((), np.result_type(dtype_of(s), np.float32))))
    count, left = np.sum(~mask, axis=axes, keepdims=True), np.sum(~mask, axis=axes, keepdims=keepdims) - ddof
    with np.errstate(invalid="ignore", divide="ignore"):
        if mean is np._NoValue:
            s = total(a, True)
            mean = in_(s / _denominator(count, dtype_of(s)))
        d = a - mean
        if nan:
            d = in_dtype(d, dtype_of(a))
        s = total(d * d, keepdims)
        dt = np.result_type(dtype_of(s), np.float32)
        return in_(s / (_denominator(left, dt) if nan else np.maximum(left, 0).astype(dt)))


def _root(var):
    """np.sqrt of a variance in its dtype, as NumPy's std: into the variance's own array (NumPy's
    error where the root is not of its kind), or for one number, cast back to its dtype."""
    dtype = dtype_of(var)
    if np.ndim(var):
        np.sqrt(np.zeros(1, dtype), out=np.zeros(1, dtype))
    return in_dtype(np.sqrt(var), dtype)


def _nan_extreme(handler, fill):
    def nan_handler(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        axes = norm_axes(axis, np.ndim(a))
        mask = _nan_mask(a)
        result = handler(_without_nans(a, fill, mask), axes, keepdims=keepdims, initial=initial, where=where)
        all_nan = np.all(mask, axis=axes, keepdims=bool(keepdims))
        return np.where(all_nan, np.nan, result) if np.any(all_nan) else result
    return nan_handler


_NAN_NOTES = "NaN entries are left out (derivative 0 there); an all-NaN slice gives NaN, as in NumPy"
register_derived(np.nansum, lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
                 where=np._NoValue: _sum_handler(_without_nans(a, 0.0), axis=axis, keepdims=keepdims,
                                                 initial=initial, where=where), uses=(sum_,), notes=_NAN_NOTES)
register_derived(np.nanprod, lambda a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
                 where=np._NoValue: _prod_handler(_without_nans(a, 1.0), axis=axis, keepdims=keepdims,
                                                  initial=initial, where=where), uses=(prod,), notes=_NAN_NOTES)
register_derived(np.nanmean, _nanmean, uses=(sum_,), notes=_NAN_NOTES)
register_derived(np.nanvar, _nanvar, uses=(sum_,), notes=_NAN_NOTES)
register_derived(np.nanstd, lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
                 _root(_nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, **kw)), uses=(sum_,),
                 notes=_NAN_NOTES + "; infinite derivative where the deviation is 0, as std")
register_derived(np.nanmax, _nan_extreme(_max_handler, -np.inf), uses=(max_,), notes=_NAN_NOTES + "; ties split")
register_derived(np.nanmin, _nan_extreme(_min_handler, np.inf), uses=(min_,), notes=_NAN_NOTES + "; ties split")
register_derived(np.nancumsum, lambda a, axis=None, dtype=None, out=None:
                 _cumsum_handler(_without_nans(a, 0.0), axis), uses=(cumsum,), notes=_NAN_NOTES)
register_derived(np.nancumprod, lambda a, axis=None, dtype=None, out=None:
                 _cumprod_handler(_without_nans(a, 1.0), axis), uses=(cumprod,), notes=_NAN_NOTES)


# ---------------------------------------------------------------------------
# logaddexp.reduce (log-sum-exp) and add.reduceat (segment sums)
# ---------------------------------------------------------------------------
def _log_sum_exp(ufunc, log, exp):
    def handler(array, axis=0, dtype=None, out=None, keepdims=False, **kw):
        array = in_method_dtype(ufunc.reduce, array, dtype)
        axes = norm_axes(axis, np.ndim(array))

        def shift(v):  # a constant shift: finite, so that an all -inf slice stays -inf
            top = np.max(v, axis=axes, keepdims=True) if v.size else np.zeros(_kept_shape(v.shape, axes))
            return np.where(np.isfinite(top), top, 0.0)
        m = guarded(shift, array)
        # the sum drops the axes (all of them: a scalar, as NumPy's reduce gives), and so does the shift added back
        m_out = m if keepdims else np.reshape(m, tuple(n for i, n in enumerate(np.shape(m)) if i not in axes))
        with np.errstate(divide="ignore"):  # an all -inf slice: log(0) = -inf, as NumPy gives, unwarned
            return log(_sum_handler(exp(array - m), axis=axes, keepdims=keepdims)) + m_out
    return handler


_LSE_NOTES = "m + log(sum(exp(x - m))) with a constant shift m: the derivative is the softmax; values agree " \
             "with NumPy's pairwise reduction to rounding"
register((np.logaddexp, "reduce"), _log_sum_exp(np.logaddexp, np.log, np.exp), prims=(sum_,), kind="derived",
         name="np.logaddexp.reduce", notes=_LSE_NOTES)
register((np.logaddexp2, "reduce"), _log_sum_exp(np.logaddexp2, np.log2, np.exp2), prims=(sum_,), kind="derived",
         name="np.logaddexp2.reduce", notes=_LSE_NOTES)


def _reduceat(array, indices, axis=0, dtype=None, out=None):
    if dtype is not None:
        dtype = reduction_dtype("np.add.reduceat", np.add.reduceat, array, dtype, [0])
        array = in_dtype(array, dtype)
    axis = axis_index(axis, np.ndim(array))
    length = np.shape(array)[axis]
    starts = np.asarray(indices, dtype=np.intp).reshape(-1)
    if starts.size and (starts.min() < 0 or starts.max() >= length):
        raise IndexError(f"index {starts[(starts < 0) | (starts >= length)][0]} out-of-bounds in add.reduceat "
                         f"[0, {length})")
    # Segment k sums elements starts[k]:starts[k+1] (to the end for the last); an empty or backward
    # segment is the single element starts[k], as in NumPy. Elements may serve several segments.
    stops = np.append(starts[1:], length)
    spans = [np.arange(a, b) if a < b else np.array([a]) for a, b in zip(starts, stops)]
    source = np.concatenate(spans) if spans else np.zeros(0, dtype=np.intp)
    segment = np.repeat(np.arange(starts.size), [s.size for s in spans])
    moved = np.moveaxis(array, axis, -1)
    summed = np.moveaxis(scatter_flat(gather(moved, source), segment, starts.size), -1, axis)
    return summed if dtype is None else in_dtype(summed, dtype)  # integer entries: NumPy's integer sums


register((np.add, "reduceat"), _reduceat, prims=(gather, scatter_flat), kind="derived", name="np.add.reduceat",
         notes="segment sums as one gather and one scatter-add; values agree with NumPy's to rounding")


# ---------------------------------------------------------------------------
# dtype=: NumPy casts the entries to dtype and reduces in it (np.sum(x, dtype=int) truncates each
# entry first; dtype=np.float32 sums in float32). Every handler above takes dtype third.
# ---------------------------------------------------------------------------
def _cast_first(handler, call: str, numpy_fn):
    def with_dtype(a, *args, **kwargs):
        if len(args) >= 2:
            dtype, args = args[1], (args[0], None) + args[2:]
        else:
            dtype = kwargs.pop("dtype", None)
        if dtype is None:
            return handler(a, *args, **kwargs)
        dtype = reduction_dtype(call, numpy_fn, a, dtype)
        out = handler(in_dtype(a if type(a) is Tracer else np.asarray(a), dtype), *args, **kwargs)
        return out if dtype_of(out) == dtype else out.astype(dtype)  # an integer mean: NumPy's cast too
    return with_dtype


for _f in (np.sum, np.mean, np.prod, np.cumsum, np.cumprod,
           np.nansum, np.nanprod, np.nanmean, np.nancumsum, np.nancumprod):
    FUNCTION_HANDLERS[_f] = _cast_first(FUNCTION_HANDLERS[_f], f"np.{_f.__name__}", _f)
if hasattr(np, "cumulative_sum"):
    for _f in (np.cumulative_sum, np.cumulative_prod):
        FUNCTION_HANDLERS[_f] = _cast_first(FUNCTION_HANDLERS[_f], f"np.{_f.__name__}", _f)
for _ufunc, _method in ((np.add, "reduce"), (np.multiply, "reduce"), (np.add, "accumulate"),
                        (np.multiply, "accumulate")):
    UFUNC_HANDLERS[_ufunc, _method] = _cast_first(UFUNC_HANDLERS[_ufunc, _method], f"np.{_ufunc.__name__}.{_method}",
                                                  getattr(_ufunc, _method))
