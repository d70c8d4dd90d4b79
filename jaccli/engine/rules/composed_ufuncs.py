"""Rules for elementwise functions composed of others: copysign, nan_to_num, select, the two-output
ufuncs (divmod, modf, frexp), ldexp, and ufunc.outer."""

from __future__ import annotations

import numpy as np

from ..registry import family, register, register_derived
from ..tracer import guarded
from ._util import in_dtype, loop_dtypes
from .elementwise import absolute, add, arctan2, hypot, logaddexp, multiply, power, subtract, true_divide
from .ufunc_rules import binary_ufunc
from .piecewise import _truth, fmod, maximum, minimum, mod, where

family("elementwise")


# ---------------------------------------------------------------------------
# Signs, and replacing non-finite values
# ---------------------------------------------------------------------------
def _copysign(x1, x2, out=None, **kw):
    # |x1| with the sign bit of x2: the derivative in x1 is sign(x1) * (+-1), 0 at x1 = 0 (as abs)
    x1 = in_dtype(x1, loop_dtypes(np.copysign, (x1, x2), kw)[0])
    flip = guarded(np.signbit, x2)
    return np.where(flip, -np.abs(x1), np.abs(x1))


register_derived(np.copysign, _copysign, uses=(absolute, where),
                 notes="derivative sign(x1) * (+-1 by the sign bit of x2) in x1, 0 at x1 = 0 (as abs); 0 in x2")


def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    big = np.finfo(np.result_type(x, np.float32)).max
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    plain = guarded(lambda v: (np.isnan(v), np.isposinf(v), np.isneginf(v)), x)
    out = np.where(plain[0], nan, x)
    out = np.where(plain[1], posinf, out)
    return np.where(plain[2], neginf, out)


register_derived(np.nan_to_num, _nan_to_num, uses=(where,),
                 notes="derivative 1 where x is finite, 0 where a NaN or inf is replaced")


def _select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    result = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):  # the first true condition wins
        result = where(guarded(_truth, cond), choice, result)
    return result


register_derived(np.select, _select, uses=(where,), notes="nested np.where: masked cotangents, as where")


# ---------------------------------------------------------------------------
# Two-output ufuncs and exact scalings by powers of two
# ---------------------------------------------------------------------------
def _divmod(x1, x2, /, out=None, **kw):
    dtype = loop_dtypes(np.divmod, (x1, x2), kw)[0]
    x1, x2 = in_dtype(x1, dtype), in_dtype(x2, dtype)
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


def _modf(x, /, out=None, **kw):
    x = in_dtype(x, loop_dtypes(np.modf, (x,), kw)[0])
    whole = np.trunc(x)
    infinite = guarded(np.isinf, x)
    if infinite.any():  # NumPy's fraction +-0 for +-inf (fmod is NaN there, with a warning NumPy gives not)
        x = np.where(infinite, np.where(guarded(np.isneginf, x), -0.0, 0.0).astype(x.dtype), x)
    # fmod(x, 1), exact, has the sign of x as NumPy's fraction has, -0.0 at x = -2.0 included, where
    # x - trunc(x) is +0.0; its derivative in x is 1, without a mask of signs to guard
    return np.fmod(x, 1.0), whole


# ldexp is NumPy's own (kwargs, dtypes and the scaling, exact over the whole exponent range, where a
# factor 2**x2 alone would overflow or underflow); x2 is an integer, so only x1 is differentiable.
ldexp = binary_ufunc(np.ldexp, lambda ans, x1, x2: np.ldexp(np.ones((), ans.dtype), x2), None,
                     notes="derivative 2**x2 in x1; x2 is an integer")


def _frexp(x, /, out=None, **kw):
    x = in_dtype(x, loop_dtypes(np.frexp, (x,), kw)[0])
    exponent = guarded(lambda v: np.frexp(v)[1], x)
    return np.ldexp(x, -exponent), exponent


register_derived(np.divmod, _divmod, uses=(mod,), notes="(floor_divide, remainder): derivative (0, 1) in x1")
register_derived(np.modf, _modf, uses=(fmod, where), notes="fractional part: derivative 1; integer part: 0")
register_derived(np.frexp, _frexp, uses=(ldexp,), notes="mantissa: derivative 2**-exponent; exponent: integer")


# ufunc.outer(a, b) is the ufunc on a reshaped to broadcast against every axis of b.
def _outer_of(ufunc):
    def handler(a, b, /, out=None, **kw):
        if out is not None:
            raise ValueError(f"np.{ufunc.__name__}.outer(..., out=...) writes into an existing array; write "
                             f"`y = np.{ufunc.__name__}.outer(...)` instead")
        return ufunc(np.reshape(a, np.shape(a) + (1,) * np.ndim(b)), b, **kw)  # dtype=, casting=: NumPy's
    return handler


for _prim in (add, subtract, multiply, true_divide, power, maximum, minimum, hypot, arctan2, logaddexp):
    register((_prim.impl, "outer"), _outer_of(_prim.impl), prims=(_prim,), kind="derived",
             name=f"np.{_prim.impl.__name__}.outer")
