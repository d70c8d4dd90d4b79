"""Rules for np.i0, the modified Bessel function of order 0, and for I1, its derivative (which
NumPy lacks), computed here in NumPy to a few units in the last place."""

from __future__ import annotations

import math

import numpy as np

from ..tape import ELEMENTWISE
from ..registry import family, primitive
from .ufunc_rules import elementwise_facts, safe_product, tangent_product, unary_ufunc

family("elementwise")

# Below: the power series (x/2) sum (x^2/4)^k / (k! (k+1)!), of positive terms; above, the
# asymptotic expansion exp(x) / sqrt(2 pi x) (1 - 3/(8x) - 15/(128x^2) - ...), whose terms still
# fall below 1e-17 of the sum before they grow again. Both within 5 ulp of I1 (mpmath, 40 digits).
_SERIES_BELOW = 25.0


def _series(a):
    h = a / 2
    q = h * h
    # q's own rounding, dq, would enter the k-th term k times: the sum is corrected by
    # dq / q * sum(k t_k), with dq exact from Dekker's split of h (h * h = q + dq).
    split = 134217729.0 * h
    hi = split - (split - h)
    lo = h - hi
    dq = ((hi * hi - q) + 2 * hi * lo) + lo * lo
    term, total, slope = np.ones_like(a), np.ones_like(a), np.zeros_like(a)
    for k in range(80):  # 50 terms at most for a < 25
        term = term * q / ((k + 1) * (k + 2))
        total = total + term
        slope = slope + (k + 1) * term
        if not (term > total * 1e-17).any():
            break
    return h * (total + dq / np.where(q > 0, q, 1.0) * slope)


def _asymptotic(a):
    term, total = np.ones_like(a), np.ones_like(a)
    for k in range(1, 60):  # 40 terms at most for a >= 25
        term = term * (((2 * k - 1) ** 2 - 4) / (8 * k)) / a
        total = total + term
        if not (np.abs(term) > total * 1e-17).any():
            break
    half = np.exp(a / 2)  # exp(a) overflows from 709.8, I1 only from 714
    return (half * (total / np.sqrt(2 * np.pi * a))) * half


def bessel_i1(x):
    """The modified Bessel function of the first kind of order 1, in x's floating dtype."""
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    x = x.astype(np.float64)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(a < _SERIES_BELOW, _series(np.minimum(a, _SERIES_BELOW)),
                       _asymptotic(np.maximum(a, _SERIES_BELOW)))
    return np.copysign(np.where(a == np.inf, np.inf, out), x).astype(dtype, copy=False)  # odd


# I1'(x) = I0(x) - I1(x) / x, which does not cancel; near 0, where its own derivatives would (and x
# = 0 divides), its Taylor polynomial sum (2k+1) / (2 k! (k+1)!) (x^2/4)^k, to 1e-19 for |x| < 0.5.
_I1_NEAR = 0.5
_I1_SERIES = tuple((2 * k + 1) / (2 * math.factorial(k) * math.factorial(k + 1) * 4 ** k) for k in range(9))


def _i1_d(ans, x):
    near = np.abs(x) < _I1_NEAR
    if not near.any():
        return np.i0(x) - ans / x
    safe = np.where(near, 1.0, x)
    far = np.i0(safe) - i1(safe) / safe
    x2 = x * x
    poly = _I1_SERIES[-1]
    for c in _I1_SERIES[-2::-1]:
        poly = poly * x2 + c
    return np.where(near, poly, far)


i1 = primitive("bessel_i1", bessel_i1)
i1.structure = ELEMENTWISE
i1.defvjp(lambda ans, x: safe_product(_i1_d(ans, x)))
i1.defjvp(lambda ans, x: tangent_product(_i1_d(ans, x)))
elementwise_facts(i1)

unary_ufunc(np.i0, lambda ans, x: i1(x), notes="derivative I1(x), computed by jaccli in NumPy to a few ulp")
