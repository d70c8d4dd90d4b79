"""Rules for reductions along axes: sum, prod, max and min (and their nan* forms), log-sum-exp and segment
sums; the shared pieces that the moments (mean, var, std) and the running sums and products build on."""

from __future__ import annotations

import math

import numpy as np

from ..facts import KINK_CROSSINGS, SAMPLE_RULES, SHIFT_FORMS, STRUCTURES, allow_in_expressions
from ..structure import Reduces
from ..registry import family, primitive, register, register_derived
from ..seeds import SparseBlock, broadcast_block
from ..handlers import FUNCTION_HANDLERS, UFUNC_HANDLERS
from ..tracer import Tracer, guarded, primal
from ._util import axis_index, dtype_of, in_dtype, in_method_dtype, norm_axes, reduction_dtype, shape_of, shift
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


def _samples_reduce(node, B) -> bool:
    """A reduction keeps samples apart when it leaves axis 0 alone (facts.SAMPLE_RULES)."""
    axes = node.args[1]
    return np.shape(node.args[0])[:1] == (B,) and 0 not in axes and np.shape(node.value)[:1] == (B,)


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


# ---------------------------------------------------------------------------
# sum
# ---------------------------------------------------------------------------
def _sum_impl(x, axes, keepdims):
    if type(x) is np.ndarray:  # what np.sum calls, without its dispatch (replays and sweeps run many)
        return np.add.reduce(x, axis=axes, keepdims=keepdims)
    return np.sum(x, axis=axes, keepdims=keepdims)


sum_ = primitive("np.sum", _sum_impl)
STRUCTURES[sum_] = Reduces(axes_at=1)


def _sum_vjp(ans, x, axes, keepdims):
    shape = np.shape(x)
    kept = _kept_shape(shape, axes)
    return lambda g: _spread(g, kept, shape)


def _sum_jvp(ans, x, axes, keepdims):
    block_axes = shift(axes)
    return lambda t: np.sum(t, axis=block_axes, keepdims=keepdims)


sum_.defvjp(_sum_vjp)
sum_.defjvp(_sum_jvp)
SAMPLE_RULES[sum_] = _samples_reduce
SHIFT_FORMS[sum_] = "sum"


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


register(np.sum, _sum_handler, prims=(sum_,))
register((np.add, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue,
         where=np._NoValue: _sum_handler(a, axis=axis, keepdims=keepdims, initial=initial, where=where),
         prims=(sum_,), kind="derived")


# ---------------------------------------------------------------------------
# prod: each entry's derivative is the product of the others, formed without dividing by x
# (so it stays right with one or several zeros) from exclusive prefix and suffix products.
# ---------------------------------------------------------------------------
def _prod_impl(x, axes, keepdims):
    return np.prod(x, axis=axes, keepdims=keepdims)


prod = primitive("np.prod", _prod_impl)
STRUCTURES[prod] = Reduces(axes_at=1)


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
SAMPLE_RULES[prod] = _samples_reduce


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


def _extreme_at(pick, ans, x, axes, keepdims):
    """Which entry of each reduced slice is the max (min)."""
    x = np.asarray(x)
    kept = [a for a in range(x.ndim) if a not in axes]
    at = pick(np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1]), axis=-1)
    return np.expand_dims(at, tuple(axes)) if keepdims else at


def _swapped(pick):
    """The kink crossing of a max (min) reduction: crossed where another entry is the max (min) a step
    away."""
    def crossed(at, moved):
        return _extreme_at(pick, *at) != _extreme_at(pick, *moved)
    return crossed


def _extreme(name, np_func):
    def impl(x, axes, keepdims):
        return np_func(x, axis=axes, keepdims=keepdims)

    prim = primitive(name, impl)
    STRUCTURES[prim] = Reduces(axes_at=1)

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
    KINK_CROSSINGS[prim] = _swapped(np.argmax if np_func is np.max else np.argmin)
    SAMPLE_RULES[prim] = _samples_reduce
    SHIFT_FORMS[prim] = "extreme"

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
allow_in_expressions("sum", "prod", "max", "min", "amax", "amin")


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
register_derived(np.nanmax, _nan_extreme(_max_handler, -np.inf), uses=(max_,), notes=_NAN_NOTES + "; ties split")
register_derived(np.nanmin, _nan_extreme(_min_handler, np.inf), uses=(min_,), notes=_NAN_NOTES + "; ties split")


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
# entry first; dtype=np.float32 sums in float32). Every handler given to cast_first takes dtype third.
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


def cast_first(*targets) -> None:
    """Give the handlers of `targets` (NumPy functions, or (ufunc, method) pairs) NumPy's dtype=."""
    for target in targets:
        if isinstance(target, tuple):
            ufunc, method = target
            UFUNC_HANDLERS[target] = _cast_first(UFUNC_HANDLERS[target], f"np.{ufunc.__name__}.{method}",
                                                 getattr(ufunc, method))
        else:
            FUNCTION_HANDLERS[target] = _cast_first(FUNCTION_HANDLERS[target], f"np.{target.__name__}", target)


cast_first(np.sum, np.prod, np.nansum, np.nanprod, (np.add, "reduce"), (np.multiply, "reduce"))
