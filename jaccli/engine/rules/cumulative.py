"""Rules for running sums and products: cumsum and cumprod (their nan*, cumulative_* and ufunc.accumulate forms)."""

from __future__ import annotations

import numpy as np

from ..facts import NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES, allow_in_expressions
from ..structure import Cumulates
from ..registry import family, primitive, register, register_derived
from ._util import along, axis_index, dtype_of
from .reductions import _NAN_NOTES, _without_nans, cast_first

family("reductions")


# ---------------------------------------------------------------------------
# cumsum and cumprod (axis=None flattens first)
# ---------------------------------------------------------------------------
_REVERSED = slice(None, None, -1)


def _cumsum_impl(x, axis):
    return np.cumsum(x, axis=axis)


cumsum = primitive("np.cumsum", _cumsum_impl)
STRUCTURES[cumsum] = Cumulates(axis_at=1)
# The transpose of a running sum is a running sum from the other end.
cumsum.defvjp(lambda ans, x, axis: (lambda g, flip=along(axis + 1, _REVERSED):
                                    np.cumsum(g[flip], axis=axis + 1)[flip]))
cumsum.defjvp(lambda ans, x, axis: (lambda t: np.cumsum(t, axis=axis + 1)))
SAMPLE_RULES[cumsum] = NOT_SEPARABLE


def _cumprod_impl(x, axis):
    return np.cumprod(x, axis=axis)


cumprod = primitive("np.cumprod", _cumprod_impl)
STRUCTURES[cumprod] = Cumulates(axis_at=1)

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
SAMPLE_RULES[cumprod] = NOT_SEPARABLE


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
allow_in_expressions("cumsum", "cumprod")
register((np.add, "accumulate"), lambda a, axis=0, dtype=None, out=None: _cumsum_handler(a, axis),
         prims=(cumsum,), kind="derived")
register((np.multiply, "accumulate"), lambda a, axis=0, dtype=None, out=None: _cumprod_handler(a, axis),
         prims=(cumprod,), kind="derived", notes=_CUMPROD_NOTES)
if hasattr(np, "cumulative_sum"):
    register_derived(np.cumulative_sum, _cumsum_handler, uses=(cumsum,))
    register_derived(np.cumulative_prod, _cumprod_handler, uses=(cumprod,), notes=_CUMPROD_NOTES)
register_derived(np.nancumsum, lambda a, axis=None, dtype=None, out=None:
                 _cumsum_handler(_without_nans(a, 0.0), axis), uses=(cumsum,), notes=_NAN_NOTES)
register_derived(np.nancumprod, lambda a, axis=None, dtype=None, out=None:
                 _cumprod_handler(_without_nans(a, 1.0), axis), uses=(cumprod,), notes=_NAN_NOTES)

cast_first(np.cumsum, np.cumprod, np.nancumsum, np.nancumprod, (np.add, "accumulate"), (np.multiply, "accumulate"))
if hasattr(np, "cumulative_sum"):
    cast_first(np.cumulative_sum, np.cumulative_prod)
