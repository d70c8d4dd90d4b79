"""Rules for reductions along axes: sum, mean, max and min (ties split evenly)."""

from __future__ import annotations

import numpy as np

from ..registry import family, primitive, register, register_derived
from ._util import norm_axes, shift

family("reductions")


def _kept_shape(shape: tuple, axes: tuple) -> tuple:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _spread(g, kept: tuple, shape: tuple):
    """A block of reduced cotangents, broadcast back over the reduced axes."""
    k = np.shape(g)[0]
    return np.broadcast_to(np.reshape(g, (k,) + kept), (k,) + tuple(shape))


# ---------------------------------------------------------------------------
# sum
# ---------------------------------------------------------------------------
def _sum_impl(x, axes, keepdims):
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


def _sum_handler(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    axes = norm_axes(axis, np.ndim(a))
    if not axes and not keepdims and np.ndim(a) > 0:
        return a
    result = sum_(a, axes, bool(keepdims))
    if initial is not np._NoValue and initial != 0:
        result = result + initial
    return result


register(np.sum, _sum_handler, prims=(sum_,))
register((np.add, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, **kw:
         _sum_handler(a, axis=axis, keepdims=keepdims), prims=(sum_,), kind="derived")


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _mean_handler(a, axis=None, dtype=None, out=None, keepdims=False, where=np._NoValue):
    axes = norm_axes(axis, np.ndim(a))
    return _sum_handler(a, axis=axes, keepdims=keepdims) * (1.0 / max(_count(np.shape(a), axes), 1))


register_derived(np.mean, _mean_handler, uses=(sum_,))
register_derived(np.average, lambda a, axis=None, weights=None, returned=False, keepdims=False:
                 _mean_handler(a, axis, keepdims=keepdims) if weights is None else
                 _sum_handler(a * weights, axis=axis, keepdims=keepdims) / np.sum(weights, axis=axis,
                                                                                  keepdims=keepdims),
                 uses=(sum_,))


# ---------------------------------------------------------------------------
# max and min: the derivative goes to the maximal entries, split evenly among ties
# ---------------------------------------------------------------------------
def _extreme(name, np_func):
    def impl(x, axes, keepdims):
        return np_func(x, axis=axes, keepdims=keepdims)

    prim = primitive(name, impl)

    def weights(ans, x, axes):
        kept = np.reshape(ans, _kept_shape(np.shape(x), axes))
        hit = np.equal(x, kept)
        return hit / np.sum(hit, axis=axes, keepdims=True)

    def vjp(ans, x, axes, keepdims):
        w = weights(ans, x, axes)
        shape = np.shape(x)
        kept = _kept_shape(shape, axes)
        return lambda g: _spread(g, kept, shape) * w

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
register((np.maximum, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, **kw:
         _max_handler(a, axis=axis, keepdims=keepdims), prims=(max_,), kind="derived")
register((np.minimum, "reduce"), lambda a, axis=0, dtype=None, out=None, keepdims=False, **kw:
         _min_handler(a, axis=axis, keepdims=keepdims), prims=(min_,), kind="derived")
