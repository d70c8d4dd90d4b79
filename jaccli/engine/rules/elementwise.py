"""Rules for elementwise NumPy functions (ufuncs), with the conventions at their kinks."""

from __future__ import annotations

import math
import operator

import numpy as np

from ..tape import ELEMENTWISE, SCALAR_FORMS
from ..facts import (CONVENTION_WORDS, CREATE_GRAPH_FORMS, FINITE_ON_FINITE, LIMIT_WORDS, SECOND_ORDER_FORMS,
                     SELF_PAIRED, SHIFT_FORMS, allow_in_expressions)
from ..registry import family, primitive, register, register_primitive
from ..limits import PROBING
from ..tracer import Tracer, peek
from ._util import crossed_at_zero
from .ufunc_rules import (binary_ufunc, elementwise_facts, finite_factor, linear_binary_ufunc, nary_ufunc,
                          safe_product, tangent_product, unary_ufunc, unary_ufunc_primitive, where0)

family("elementwise")

# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------
add = linear_binary_ufunc(np.add, 1, 1)
subtract = linear_binary_ufunc(np.subtract, 1, -1)
add.value_free = subtract.value_free = True  # x + c: the rules never read c
multiply = binary_ufunc(np.multiply, lambda ans, x, y: y, lambda ans, x, y: x)
SELF_PAIRED.add(multiply)  # x * x: each argument's rule is g * x

true_divide = binary_ufunc(np.true_divide, lambda ans, x, y: np.true_divide(1.0, y), lambda ans, x, y: -ans / y)
SCALAR_FORMS.update({add: operator.add, subtract: operator.sub, multiply: operator.mul,
                     true_divide: lambda a, b: a / b if b else math.nan})  # (0: the ufunc says what NumPy says)
negative = unary_ufunc(np.negative, lambda ans, x: -1.0)
positive = unary_ufunc(np.positive, lambda ans, x: 1.0)
SHIFT_FORMS.update({add: "add", subtract: "subtract", negative: "negative", multiply: "multiply",
                    true_divide: "divide", positive: "move"})


def _power_dx(ans, x, y):
    # y * x**(y-1), with exactly 0 where y == 0 (x**-1 would be inf at x == 0).
    if np.ndim(y) == 0 and not hasattr(y, "_node") and y == 0:
        return np.zeros_like(ans)
    if np.ndim(y) == 0 and not hasattr(y, "_node") and y == 2:
        return 2.0 * x
    with np.errstate(divide="ignore", invalid="ignore"):
        return where0(y != 0, y * np.power(x, y - 1))


def _power_dy(ans, x, y):
    # ans * log(x), taking 0 * log(0) = 0 so that 0**y stays differentiable in y.
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_x = np.where(x == 0, 1.0, x)
        return where0(x != 0, ans * np.log(safe_x))


power = binary_ufunc(np.power, _power_dx, _power_dy, notes="d/dx = y x**(y - 1): inf at x == 0 for y < 1, reported "
                     "as non-finite, not hidden; d/dy uses log(x): defined for x > 0; 0 at x == 0")


def _recorded_square(maker):
    """x ** 2 on a recorded sweep (the gradient a Hessian differentiates): g -> (2 g) x.

    Where the cotangent g is a constant, 2 g is plain and only the product is recorded, where
    g (2 x) records 2 x as well: one operation fewer for every square in a loss. The numbers are
    the same (doubling is exact). Plain sweeps keep the factor 2 x, made once for all seeds.
    """
    def wrapped(ans, x, y, **kw):
        if type(x) is not Tracer or np.ndim(y) != 0 or hasattr(y, "_node") or y != 2:
            return maker(ans, x, y, **kw)
        if not finite_factor(x):
            return maker(ans, x, y, **kw)  # 0 * inf guarded by the general rule
        return lambda g: (g * 2.0) * x
    return wrapped


power.defvjp(_recorded_square(power.vjps[0]))
power.defjvp(_recorded_square(power.jvps[0]))
float_power = binary_ufunc(np.float_power, _power_dx, _power_dy, notes="as np.power, in float64")
square = unary_ufunc(np.square, lambda ans, x: 2.0 * x)
sqrt = unary_ufunc(np.sqrt, lambda ans, x: 0.5 / ans, notes="sqrt'(0) = inf, reported as non-finite, not hidden")
cbrt = unary_ufunc(np.cbrt, lambda ans, x: 1.0 / (3.0 * ans * ans), notes="cbrt'(0) = inf")
reciprocal = unary_ufunc(np.reciprocal, lambda ans, x: -(ans * ans))


# abs at 0: abs'(0) = 0, the subgradient of least norm; a gradient that is differentiated again takes
# the slope one-sided, +1 at 0, in every factor alike, so that |u| ** 2 gets 2 (engine/second_order.py).
def _one_sided_sign(x):
    return np.sign(x) + (x == 0)  # (NaN stays NaN; a float32 x stays float32)


abs_slope_one_sided = primitive("np.absolute' (one-sided at 0)", _one_sided_sign, zero_grad=True)
abs_slope_one_sided.structure = ELEMENTWISE
elementwise_facts(abs_slope_one_sided)


def _abs_slope_one_sided(ans, x):
    return _one_sided_sign(x) if type(x) is not Tracer else abs_slope_one_sided(x)


def _at_zero(ans, x):
    return x == 0


_ABS_NOTES = "abs'(0) = 0 (the subgradient of least norm); in a Hessian or hvp one-sided at 0, so |u| ** 2 gets 2"
absolute = unary_ufunc(np.absolute, lambda ans, x: np.sign(x), notes=_ABS_NOTES, kink=_at_zero, crossed=crossed_at_zero)
register(np.abs, absolute, prims=(absolute,), name="np.abs") if np.abs is not np.absolute else None
fabs = unary_ufunc(np.fabs, lambda ans, x: np.sign(x), notes=_ABS_NOTES.replace("abs'", "fabs'"), kink=_at_zero,
                   crossed=crossed_at_zero)
for _prim in (absolute, fabs):
    SECOND_ORDER_FORMS[_prim] = unary_ufunc_primitive(f"{_prim.name} (one-sided at 0)", _prim.impl,
                                                      _abs_slope_one_sided, kink=_at_zero, crossed=crossed_at_zero)


# A create_graph gradient that an enclosing level differentiates keeps abs'(0) = 0, the values the user
# gets; its slope sign(u) then stands in for the one-sided +1 that |u| ** 2 = 2 |u| sign(u) needs for its
# second derivative (2 sign(0) ** 2), and a derivative through it at 0 depends on the convention. So the
# slope records as a primitive whose derivative at 0 is NaN (0 elsewhere): met by a structural zero it is
# 0 (engine/limits.py), by a value (2 |u| at 0, a seed's 1) NaN, reported in CONVENTION_WORDS' words.
def _undefined_at_zero(ans, x):
    v = np.asarray(peek(x))  # (the derivative's own derivative, 0 where defined, is taken as 0)
    dtype = v.dtype if v.dtype.kind == "f" else np.dtype(float)
    if PROBING.v:  # a probe asks whether a zero that meets the NaN is structural: the slope's derivative
        return dtype.type(1)  # near 0 is a delta at 0, so a value that meets it there is not 0
    return np.where(v == 0, dtype.type(np.nan), dtype.type(0))


def _abs_slope_with_convention(prim, short):
    slope = unary_ufunc_primitive(f"{prim.name}' (a convention at 0)", np.sign, _undefined_at_zero)
    CONVENTION_WORDS[slope] = (f"{short}'(0) = 0 is a convention: the second derivative here, of a create_graph "
                               f"gradient through {short} at 0, depends on it ({short}(u) ** 2: 0 with it, 2 "
                               f"one-sided); jaccli.hessian and hvp take {short}'s slope one-sided at 0")
    return lambda ans, x: np.sign(x) if type(x) is not Tracer else slope(x)


for _prim, _short in ((absolute, "abs"), (fabs, "fabs")):
    CREATE_GRAPH_FORMS[_prim] = unary_ufunc_primitive(f"{_prim.name} (create_graph)", _prim.impl,
                                                      _abs_slope_with_convention(_prim, _short), kink=_at_zero,
                                                      crossed=crossed_at_zero)
allow_in_expressions("power", "sqrt", "cbrt", "square", "reciprocal", "abs", "absolute")

# ---------------------------------------------------------------------------
# Exponentials and logarithms
# ---------------------------------------------------------------------------
exp = unary_ufunc(np.exp, lambda ans, x: ans)
exp2 = unary_ufunc(np.exp2, lambda ans, x: ans * np.log(2.0))
expm1 = unary_ufunc(np.expm1, lambda ans, x: ans + 1.0)
log = unary_ufunc(np.log, lambda ans, x: 1.0 / x)
log2 = unary_ufunc(np.log2, lambda ans, x: 1.0 / (x * np.log(2.0)))
log10 = unary_ufunc(np.log10, lambda ans, x: 1.0 / (x * np.log(10.0)))
log1p = unary_ufunc(np.log1p, lambda ans, x: 1.0 / (1.0 + x))
logaddexp = binary_ufunc(np.logaddexp, lambda ans, x, y: np.exp(x - ans), lambda ans, x, y: np.exp(y - ans))
logaddexp2 = binary_ufunc(np.logaddexp2, lambda ans, x, y: np.exp2(x - ans), lambda ans, x, y: np.exp2(y - ans))
SHIFT_FORMS.update({exp: "exp", log: "log"})
allow_in_expressions("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp")

# ---------------------------------------------------------------------------
# Trigonometric and hyperbolic
# ---------------------------------------------------------------------------
sin = unary_ufunc(np.sin, lambda ans, x: np.cos(x))
cos = unary_ufunc(np.cos, lambda ans, x: -np.sin(x))
tan = unary_ufunc(np.tan, lambda ans, x: 1.0 + ans * ans)
arcsin = unary_ufunc(np.arcsin, lambda ans, x: 1.0 / np.sqrt(1.0 - x * x))
arccos = unary_ufunc(np.arccos, lambda ans, x: -1.0 / np.sqrt(1.0 - x * x))
arctan = unary_ufunc(np.arctan, lambda ans, x: 1.0 / (1.0 + x * x))
arctan2 = binary_ufunc(np.arctan2, lambda ans, y, x: x / (x * x + y * y), lambda ans, y, x: -y / (x * x + y * y))
sinh = unary_ufunc(np.sinh, lambda ans, x: np.cosh(x))
cosh = unary_ufunc(np.cosh, lambda ans, x: np.sinh(x))
tanh = unary_ufunc(np.tanh, lambda ans, x: 1.0 - ans * ans)
arcsinh = unary_ufunc(np.arcsinh, lambda ans, x: 1.0 / np.sqrt(x * x + 1.0))
arccosh = unary_ufunc(np.arccosh, lambda ans, x: 1.0 / np.sqrt(x * x - 1.0))
arctanh = unary_ufunc(np.arctanh, lambda ans, x: 1.0 / (1.0 - x * x))
deg2rad = unary_ufunc(np.deg2rad, lambda ans, x: np.pi / 180.0)
rad2deg = unary_ufunc(np.rad2deg, lambda ans, x: 180.0 / np.pi)
register(np.radians, deg2rad, prims=(deg2rad,), name="np.radians")
register(np.degrees, rad2deg, prims=(rad2deg,), name="np.degrees")
FINITE_ON_FINITE.update({sin, cos, tanh, arctan, arcsinh, negative, positive, absolute})
allow_in_expressions("sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh",
                     "arccosh", "arctanh")


def _hypot_d(which):
    def d(ans, x, y):
        # The subgradient of least norm at the origin is 0 (as for norm).
        with np.errstate(divide="ignore", invalid="ignore"):
            safe = np.where(ans == 0, 1.0, ans)
            return where0(ans != 0, (x if which == 0 else y) / safe)
    return d


_EPS = float(np.finfo(np.float64).eps)


def _through_origin(at, moved):
    """hypot's kink is the point (0, 0): crossed where the step's segment passes through it (collinear
    with it, on both sides), as along x with y = 0. Leaving an axis (from (1, 0) to (1, h)) is not."""
    (_, x0, y0), (_, x1, y1) = at, moved
    turn = x0 * y1 - x1 * y0
    return (np.abs(turn) <= 4 * _EPS * (np.abs(x0 * y1) + np.abs(x1 * y0))) & (x0 * x1 + y0 * y1 < 0)


hypot = binary_ufunc(np.hypot, _hypot_d(0), _hypot_d(1),
                     notes="0 subgradient at (0, 0); in a Hessian, NaN there (a limit)",
                     kink=lambda ans, x, y: ans == 0, crossed=_through_origin)


# The gradient x / norm(x) of hypot and of the 2-norm is 0 at 0 by the kink's convention, and its own
# derivative there has no value: in cos(norm(x)) at 0 it meets -sin(0) = 0, a zero value, so a Hessian
# through it exists only as a limit (-I there). A gradient that is differentiated again records it as
# this primitive (engine/second_order.py), whose derivative at norm == 0 is NaN, reported, as sqrt's
# of a sum of squares is, never the silent 0 of the convention.
def _unit_impl(x, n):
    nonzero = n != 0
    return np.where(nonzero, x / np.where(nonzero, n, 1.0), 0.0)


def _unit_partial(numerator):
    def d(ans, x, n):
        nonzero = n != 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(nonzero, numerator(ans) / np.where(nonzero, n, 1.0), np.nan)
    return d


unit = nary_ufunc(_unit_impl, (_unit_partial(lambda ans: 1.0), _unit_partial(lambda ans: -ans)),
                  name="x / norm(x)", route=False)
LIMIT_WORDS[unit] = "the gradient x / norm(x) of hypot or norm has no derivative at 0"


def _hypot_unit(which):
    plain = _hypot_d(which)

    def d(ans, x, y):
        if type(ans) is not Tracer:
            return plain(ans, x, y)
        return unit(x if which == 0 else y, ans)
    return d


SECOND_ORDER_FORMS[hypot] = nary_ufunc(np.hypot, (_hypot_unit(0), _hypot_unit(1)), name="np.hypot (a limit at 0)",
                                       kink=lambda ans, x, y: ans == 0, crossed=_through_origin, route=False)
CREATE_GRAPH_FORMS[hypot] = SECOND_ORDER_FORMS[hypot]
allow_in_expressions("hypot")


# sinc'(x) = sum over k >= 1 of c_k x^(2k-1), c_k = (-1)^k pi^(2k) 2k / (2k+1)!: near 0, where the
# closed form cancels (its second derivative came out 0 at x = 0 and -5.4 at 1e-8, not -pi^2/3).
# Up to k = 7, the first three derivatives of the polynomial are exact to rounding for |x| < 0.1.
_SINC_NEAR = 0.1
_SINC_SERIES = tuple((-1) ** k * math.pi ** (2 * k) * 2 * k / math.factorial(2 * k + 1) for k in range(1, 8))


def _sinc_d(ans, x):
    # d/dx sin(pi x)/(pi x) = (cos(pi x) - sinc(x)) / x away from 0, its Taylor polynomial near 0;
    # both in differentiable operations, so that the rule of the rule is right too.
    near = np.abs(x) < _SINC_NEAR
    with np.errstate(divide="ignore", invalid="ignore"):
        far = (np.cos(np.pi * x) - ans) / np.where(near, 1.0, x)
    if not near.any():
        return far
    x2 = x * x
    poly = _SINC_SERIES[-1]
    for c in _SINC_SERIES[-2::-1]:
        poly = poly * x2 + c
    return np.where(near, x * poly, far)


sinc_prim = primitive("np.sinc", np.sinc)
sinc_prim.structure = ELEMENTWISE
sinc_prim.defvjp(lambda ans, x: safe_product(_sinc_d(ans, x)))
sinc_prim.defjvp(lambda ans, x: tangent_product(_sinc_d(ans, x)))
elementwise_facts(sinc_prim)
register_primitive(np.sinc, sinc_prim)
allow_in_expressions("sinc")
