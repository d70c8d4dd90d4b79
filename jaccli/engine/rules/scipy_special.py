"""Rules for scipy.special: its ufuncs (expit, erf, gammaln, Bessel functions, ...) and its Python
functions logsumexp, softmax, log_softmax and polygamma.

SciPy is not a dependency of jaccli: these rules are installed the first time a recording meets
scipy.special (already imported by f's module), so jaccli itself never imports SciPy. Every
derivative is written with operations that have rules themselves (digamma's is polygamma's, whose
is polygamma's again), so the rules can be differentiated to any order.

The Python functions cannot be reached through NumPy's dispatch (they convert their argument with
np.asarray first): while f is recorded, `scipy.special.logsumexp` and the others are replaced by
jaccli's versions (tracer.FUNCTION_SWAPS), in the scipy.special module and in f's own globals (see
recording.intercept_numpy). For plain arguments those call SciPy's own function.
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any, Callable

import numpy as np

from ..tape import ELEMENTWISE
from ..facts import NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES
from ..structure import Normalizes, Reduces
from ..registry import family, primitive, register
from ..handlers import FUNCTION_SWAPS, UFUNC_HANDLERS
from ..tracer import holds_tracer, lift
from ._util import crossed_at_zero, expand, norm_axes, shift, unbroadcast
from .ufunc_rules import binary_ufunc, elementwise_facts, nary_ufunc, safe_product, tangent_product, unary_ufunc, where0

FAMILY = "scipy.special"
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SCALED_NOTE = "the factor exp(-|x|) has a kink at 0: derivative taken as the mean of both sides"
_IN_X = "with respect to x; the shape parameters have no derivative here"
_IN_Y = "with respect to y; the shape parameters have no derivative here"

_LOCK = threading.Lock()
_installed = [False]


def install() -> bool:
    """Register the scipy.special rules once (imports scipy.special); False when SciPy is missing."""
    if _installed[0]:
        return True
    with _LOCK:
        if _installed[0]:
            return True
        try:
            import scipy.special as sp
        except ImportError:
            return False
        _register(sp)
        _installed[0] = True
    return True


def install_for(func: Any) -> bool:
    """Install the rules when `func` (a callable no rule is registered for) belongs to scipy.special,
    or, with None (before f runs), when scipy.special has been imported; whether they were installed
    for it."""
    sp = sys.modules.get("scipy.special")
    if sp is None:
        return False
    if func is None:
        return install()
    if getattr(sp, getattr(func, "__name__", ""), None) is not func:
        return False
    return install() and func in UFUNC_HANDLERS


def _kept(value: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """A reduction's result with its reduced axes back as length 1 (for broadcasting)."""
    return value if keepdims or not axes else np.expand_dims(value, axes)


def _register(sp: Any) -> None:
    previous = family(FAMILY)
    try:
        _register_ufuncs(sp)
        _register_functions(sp)
    finally:
        family(previous)


def _register_ufuncs(sp: Any) -> None:
    def unary(ufunc, deriv, **kw):
        return unary_ufunc(ufunc, deriv, name=f"scipy.special.{ufunc.__name__}", samples=NOT_SEPARABLE, **kw)

    def binary(ufunc, dx, dy, **kw):
        return binary_ufunc(ufunc, dx, dy, name=f"scipy.special.{ufunc.__name__}", samples=NOT_SEPARABLE, **kw)

    def nary(ufunc, partials, **kw):
        return nary_ufunc(ufunc, partials, name=f"scipy.special.{ufunc.__name__}", samples=NOT_SEPARABLE, **kw)

    # Logistic and error functions
    unary(sp.expit, lambda ans, x: ans * (1.0 - ans))
    unary(sp.logit, lambda ans, x: 1.0 / (x * (1.0 - x)))
    unary(sp.log_expit, lambda ans, x: sp.expit(-x))
    unary(sp.erf, lambda ans, x: _TWO_OVER_SQRT_PI * np.exp(-(x * x)))
    unary(sp.erfc, lambda ans, x: -_TWO_OVER_SQRT_PI * np.exp(-(x * x)))
    unary(sp.erfcx, lambda ans, x: 2.0 * x * ans - _TWO_OVER_SQRT_PI)
    unary(sp.erfinv, lambda ans, x: _HALF_SQRT_PI * np.exp(ans * ans), notes="infinite at -1 and 1")
    unary(sp.erfcinv, lambda ans, x: -_HALF_SQRT_PI * np.exp(ans * ans),
          notes="infinite at 0 and 2")
    unary(sp.ndtr, lambda ans, x: np.exp(-0.5 * (x * x)) / _SQRT_2PI)
    unary(sp.log_ndtr, lambda ans, x: np.exp(-0.5 * (x * x) - ans) / _SQRT_2PI,
          notes="the ratio pdf/cdf taken in log space: finite far into the left tail")
    unary(sp.ndtri, lambda ans, x: _SQRT_2PI * np.exp(0.5 * (ans * ans)), notes="infinite at 0 and 1")

    # Gamma function and relatives
    polygamma = _polygamma_primitive(sp)
    digamma = unary_ufunc(sp.digamma, lambda ans, x: polygamma(x, 1), name="scipy.special.digamma",
                          samples=NOT_SEPARABLE)
    register(sp.psi, digamma, prims=(digamma,), name="scipy.special.psi", notes="scipy.special.digamma")
    unary(sp.gammaln, lambda ans, x: sp.digamma(x), notes="log|gamma(x)|: the derivative is digamma(x)")
    unary(sp.loggamma, lambda ans, x: sp.digamma(x), notes="real arguments")
    unary(sp.gamma, lambda ans, x: ans * sp.digamma(x), notes="undefined at the poles 0, -1, -2, ...")
    binary(sp.betaln, lambda ans, a, b: sp.digamma(a) - sp.digamma(a + b),
           lambda ans, a, b: sp.digamma(b) - sp.digamma(a + b))
    binary(sp.beta, lambda ans, a, b: ans * (sp.digamma(a) - sp.digamma(a + b)),
           lambda ans, a, b: ans * (sp.digamma(b) - sp.digamma(a + b)))
    unary(sp.rgamma, lambda ans, x: -ans * sp.digamma(x),
          notes="1/gamma(x); at 0, -1, -2, ... its derivative is not computed (NaN)")
    binary(sp.poch, lambda ans, z, m: ans * (sp.digamma(z + m) - sp.digamma(z)),
           lambda ans, z, m: ans * sp.digamma(z + m))

    # Incomplete gamma and beta functions and their inverses, in x (or in y for the inverses): the
    # derivative is the density x^(a-1) e^-x / gamma(a) (x^(a-1) (1-x)^(b-1) / B(a, b)), taken in log
    # space; an inverse's is 1 / that density at its result
    def gamma_density(a, x):
        return np.exp(sp.xlogy(a - 1.0, x) - x - sp.gammaln(a))

    def beta_density(a, b, x):
        return np.exp(sp.xlogy(a - 1.0, x) + sp.xlog1py(b - 1.0, -x) - sp.betaln(a, b))

    binary(sp.gammainc, None, lambda ans, a, x: gamma_density(a, x), notes=_IN_X)
    binary(sp.gammaincc, None, lambda ans, a, x: -gamma_density(a, x), notes=_IN_X)
    binary(sp.gammaincinv, None, lambda ans, a, y: 1.0 / gamma_density(a, ans), notes=_IN_Y)
    binary(sp.gammainccinv, None, lambda ans, a, y: -1.0 / gamma_density(a, ans), notes=_IN_Y)
    nary(sp.betainc, (None, None, lambda ans, a, b, x: beta_density(a, b, x)), notes=_IN_X)
    nary(sp.betaincinv, (None, None, lambda ans, a, b, y: 1.0 / beta_density(a, b, ans)), notes=_IN_Y)
    binary(sp.chdtr, None, lambda ans, v, x: 0.5 * gamma_density(0.5 * v, 0.5 * x), notes=_IN_X)
    binary(sp.stdtr, None, lambda ans, df, t: np.exp(
        sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df) - 0.5 * np.log(np.pi * df)
        - 0.5 * (df + 1.0) * np.log1p(t * t / df)), notes="with respect to t; df has no derivative here")

    # Exponential integrals and relatives
    unary(sp.exp1, lambda ans, x: -np.exp(-x) / x, notes="x > 0")
    unary(sp.expi, lambda ans, x: np.exp(x) / x, notes="infinite at 0")
    unary(sp.erfi, lambda ans, x: _TWO_OVER_SQRT_PI * np.exp(x * x))
    unary(sp.dawsn, lambda ans, x: 1.0 - 2.0 * x * ans)

    # Box-Cox transforms, in x (y for the inverses): lambda has no derivative here
    in_lambda = "with respect to the data; lambda has no derivative here"
    binary(sp.boxcox, lambda ans, x, lmbda: np.power(x, lmbda - 1.0), None, notes=in_lambda)
    binary(sp.boxcox1p, lambda ans, x, lmbda: np.power(1.0 + x, lmbda - 1.0), None, notes=in_lambda)
    binary(sp.inv_boxcox, lambda ans, y, lmbda: np.power(ans, 1.0 - lmbda), None, notes=in_lambda)
    binary(sp.inv_boxcox1p, lambda ans, y, lmbda: np.power(1.0 + ans, 1.0 - lmbda), None, notes=in_lambda)

    # Robust losses of a residual r with scale delta
    binary(sp.huber, lambda ans, delta, r: where0(np.abs(r) > delta, np.abs(r) - delta),
           lambda ans, delta, r: np.where(np.abs(r) <= delta, r, delta * np.sign(r)),
           notes="delta >= 0; the second derivative jumps where |r| == delta")
    binary(sp.pseudo_huber,
           lambda ans, delta, r: 2.0 * delta * (np.sqrt(1.0 + (r / delta) ** 2) - 1.0)
           - r * r / (delta * np.sqrt(1.0 + (r / delta) ** 2)),
           lambda ans, delta, r: r / np.sqrt(1.0 + (r / delta) ** 2), notes="delta > 0")

    # Information theory: where x == 0 the functions are 0 for every y, so d/dy = x / (y + shift) is
    # taken as 0 also where the denominator is 0 (and 0/0 would be NaN); elsewhere it is the quotient
    # itself, whose derivative in x stays 1 / (y + shift)
    def quotient(shift, sign=1.0):
        def d(ans, x, y):
            denominator = y + shift if shift else y
            singular = (x == 0) & (denominator == 0)
            return sign * where0(~singular, x / np.where(singular, 1.0, denominator))
        return d

    binary(sp.xlogy, lambda ans, x, y: np.log(y), quotient(0.0),
           notes="d/dy is 0 where x == 0 (the function is 0 there for every y)")
    binary(sp.xlog1py, lambda ans, x, y: np.log1p(y), quotient(1.0),
           notes="d/dy is 0 where x == 0 (the function is 0 there for every y)")
    unary(sp.entr, lambda ans, x: -np.log(x) - 1.0, notes="defined for x >= 0; infinite at 0")
    binary(sp.rel_entr, lambda ans, x, y: np.log(x / y) + 1.0, quotient(0.0, -1.0),
           notes="defined for x, y > 0, and x == 0; d/dy is 0 where x == 0")
    binary(sp.kl_div, lambda ans, x, y: np.log(x / y), lambda ans, x, y: 1.0 - x / y,
           notes="defined for x, y > 0")

    # Bessel functions: with respect to x; the order v is not differentiable
    sign = np.sign
    binary(sp.iv, None, lambda ans, v, x: 0.5 * (sp.iv(v - 1, x) + sp.iv(v + 1, x)))
    binary(sp.ive, None, lambda ans, v, x: 0.5 * (sp.ive(v - 1, x) + sp.ive(v + 1, x)) - sign(x) * ans,
           kink=lambda ans, v, x: x == 0, crossed=crossed_at_zero, notes=_SCALED_NOTE)
    binary(sp.jv, None, lambda ans, v, x: 0.5 * (sp.jv(v - 1, x) - sp.jv(v + 1, x)))
    binary(sp.yv, None, lambda ans, v, x: 0.5 * (sp.yv(v - 1, x) - sp.yv(v + 1, x)), notes="x > 0")
    unary(sp.i0, lambda ans, x: sp.i1(x))
    unary(sp.i1, lambda ans, x: 0.5 * (sp.i0(x) + sp.iv(2.0, x)))
    unary(sp.i0e, lambda ans, x: sp.i1e(x) - sign(x) * ans,
          kink=lambda ans, x: x == 0, crossed=crossed_at_zero, notes=_SCALED_NOTE)
    unary(sp.i1e, lambda ans, x: 0.5 * (sp.i0e(x) + sp.ive(2.0, x)) - sign(x) * ans,
          kink=lambda ans, x: x == 0, crossed=crossed_at_zero, notes=_SCALED_NOTE)
    unary(sp.j0, lambda ans, x: -sp.j1(x))
    unary(sp.j1, lambda ans, x: 0.5 * (sp.j0(x) - sp.jv(2.0, x)))
    unary(sp.y0, lambda ans, x: -sp.y1(x), notes="x > 0")
    unary(sp.y1, lambda ans, x: 0.5 * (sp.y0(x) - sp.yv(2.0, x)), notes="x > 0")
    binary(sp.kv, None, lambda ans, v, x: -0.5 * (sp.kv(v - 1, x) + sp.kv(v + 1, x)), notes="x > 0")
    binary(sp.kve, None, lambda ans, v, x: ans - 0.5 * (sp.kve(v - 1, x) + sp.kve(v + 1, x)), notes="x > 0")
    unary(sp.k0, lambda ans, x: -sp.k1(x), notes="x > 0")
    unary(sp.k1, lambda ans, x: -0.5 * (sp.k0(x) + sp.kv(2.0, x)), notes="x > 0")
    unary(sp.k0e, lambda ans, x: ans - sp.k1e(x), notes="x > 0")
    unary(sp.k1e, lambda ans, x: ans - 0.5 * (sp.k0e(x) + sp.kve(2.0, x)), notes="x > 0")


def _polygamma_primitive(sp: Any):
    """polygamma(x, n) (x first: the argument with a derivative), whose derivative is polygamma(x, n + 1).

    SciPy's polygamma is a Python function (np.asarray on its arguments): `SWAPS` routes it here.
    """
    prim = primitive("scipy.special.polygamma", lambda x, n: sp.polygamma(n, x))
    prim.structure = ELEMENTWISE
    elementwise_facts(prim, samples=NOT_SEPARABLE)

    def vjp(ans, x, n):
        scale = safe_product(prim(x, n + 1))
        shape = np.shape(x)
        return lambda g: unbroadcast(scale(g), shape)

    def jvp(ans, x, n):
        scale = tangent_product(prim(x, n + 1))
        shape, out_shape = np.shape(x), np.shape(ans)
        return lambda t: scale(expand(t, shape, out_shape))

    prim.defvjp(vjp)
    prim.defjvp(jvp)
    original = sp.polygamma

    def polygamma(n, x):
        if not holds_tracer(x):
            return original(n, x)
        if holds_tracer(n):
            from ...errors import UnsupportedOperationError

            raise UnsupportedOperationError("scipy.special.polygamma: the order n must be a plain integer "
                                            "(it has no derivative); see 'jaccli ops'")
        return prim(lift(x), np.asarray(n))

    _swap(sp, "polygamma", original, polygamma)
    register(polygamma, polygamma, prims=(prim,), name="scipy.special.polygamma",
             notes="n a plain integer; the derivative is polygamma(n + 1, x)")
    return prim


# ---------------------------------------------------------------------------
# logsumexp, softmax, log_softmax: reductions over SciPy's axis (None: every axis)
# ---------------------------------------------------------------------------
def _register_functions(sp: Any) -> None:
    _register_logsumexp(sp)
    _register_softmax(sp)


def _logsumexp_weights(ans, a, b, axes, keepdims, signed):
    """d lse / d a: b exp(a - lse) times the sign of the sum (1 unless b has negative entries);
    with b None, d lse / d b."""
    lse = ans[0] if signed else ans
    w = np.exp(a - _kept(lse, axes, keepdims))
    if b is not None:
        w = w * b
    if signed:
        w = w * _kept(ans[1], axes, keepdims)
    return w


def _logsumexp_primitive(sp: Any, signed: bool):
    if signed:
        impl = lambda a, b, axes, keepdims: sp.logsumexp(a, axis=axes, b=b, keepdims=keepdims,  # noqa: E731
                                                         return_sign=True)
        name = "scipy.special.logsumexp(return_sign=True)"
    else:
        impl = lambda a, b, axes, keepdims: sp.logsumexp(a, axis=axes, b=b, keepdims=keepdims)  # noqa: E731
        name = "scipy.special.logsumexp"
    prim = primitive(name, impl, multi_out=signed)
    STRUCTURES[prim] = Reduces(axes_at=2)
    SAMPLE_RULES[prim] = NOT_SEPARABLE

    def vjp(pos):
        def maker(ans, a, b, axes, keepdims):
            w = _logsumexp_weights(ans, a, b if pos == 0 else None, axes, keepdims, signed)
            shape = np.shape(a if pos == 0 else b)

            def rule(g):
                if signed:
                    g = g[0]  # the sign is piecewise constant: its cotangent is dropped
                    if g is None:
                        return None
                return unbroadcast(_kept(g, shift(axes), keepdims) * w, shape)
            return rule
        return maker

    def jvp(pos):
        def maker(ans, a, b, axes, keepdims):
            w = _logsumexp_weights(ans, a, b if pos == 0 else None, axes, keepdims, signed)
            shape = np.shape(a if pos == 0 else b)
            full = np.shape(w)

            def rule(t):
                out = np.sum(expand(t, shape, full) * w, axis=shift(axes), keepdims=keepdims)
                return (out, None) if signed else out
            return rule
        return maker

    prim.defvjp(vjp(0), vjp(1))
    prim.defjvp(jvp(0), jvp(1))
    return prim


def _register_logsumexp(sp: Any) -> None:
    plain, signed = _logsumexp_primitive(sp, False), _logsumexp_primitive(sp, True)
    original = sp.logsumexp

    def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
        if not (holds_tracer(a) or holds_tracer(b)):
            return original(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
        a, b = lift(a), lift(b)
        if not holds_tracer(a):
            a = np.asarray(a, dtype=np.result_type(a, 1.0))
        axes = norm_axes(axis, np.ndim(a))
        if return_sign:
            return signed(a, b, axes=axes, keepdims=bool(keepdims))
        return plain(a, b, axes=axes, keepdims=bool(keepdims))

    _swap(sp, "logsumexp", original, logsumexp)
    register(logsumexp, logsumexp, prims=(plain, signed), name="scipy.special.logsumexp",
             notes="axis, b (differentiable too), keepdims and return_sign (the sign has derivative 0)")


def _register_softmax(sp: Any) -> None:
    softmax = primitive("scipy.special.softmax", lambda x, axes: sp.softmax(x, axis=axes))
    log_softmax = primitive("scipy.special.log_softmax", lambda x, axes: sp.log_softmax(x, axis=axes))
    STRUCTURES[softmax] = STRUCTURES[log_softmax] = Normalizes(axes_at=1)
    SAMPLE_RULES.update({softmax: NOT_SEPARABLE, log_softmax: NOT_SEPARABLE})

    def softmax_rule(ans, x, axes):
        # J = diag(s) - s s^T over the axes: symmetric, so one rule serves both sweeps
        axes1 = shift(axes)
        return lambda g: ans * (g - np.sum(g * ans, axis=axes1, keepdims=True))

    def log_softmax_vjp(ans, x, axes):
        s = np.exp(ans)
        axes1 = shift(axes)
        return lambda g: g - s * np.sum(g, axis=axes1, keepdims=True)

    def log_softmax_jvp(ans, x, axes):
        s = np.exp(ans)
        axes1 = shift(axes)
        return lambda t: t - np.sum(s * t, axis=axes1, keepdims=True)

    softmax.defvjp(softmax_rule)
    softmax.defjvp(softmax_rule)
    log_softmax.defvjp(log_softmax_vjp)
    log_softmax.defjvp(log_softmax_jvp)
    for prim, original_name in ((softmax, "softmax"), (log_softmax, "log_softmax")):
        original = getattr(sp, original_name)

        def wrapper(x, axis=None, _prim=prim, _original=original):
            if not holds_tracer(x):
                return _original(x, axis=axis)
            x = lift(x)
            return _prim(x, axes=norm_axes(axis, np.ndim(x)))

        wrapper.__name__ = wrapper.__qualname__ = original_name
        wrapper.__doc__ = original.__doc__
        _swap(sp, original_name, original, wrapper)
        register(wrapper, wrapper, prims=(prim,), name=f"scipy.special.{original_name}",
                 notes="axis None (every axis), an int or a tuple")


def _swap(module: Any, name: str, original: Callable, replacement: Callable) -> None:
    replacement.__wrapped__ = original
    FUNCTION_SWAPS.append((module, name, original, replacement))
