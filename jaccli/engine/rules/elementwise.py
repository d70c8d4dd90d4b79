"""Rules for elementwise NumPy functions (ufuncs), with the conventions at their kinks."""

from __future__ import annotations

import math
import operator

import numpy as np

from ..tape import ELEMENTWISE, SCALAR_FORMS
from ..facts import (CONVENTION_WORDS, CREATE_GRAPH_FORMS, FINITE_ON_FINITE, KINK_CROSSINGS, LIMIT_WORDS, NO_KINK,
                     SAMPLE_RULES, SECOND_ORDER_FORMS, SELF_PAIRED, SHIFT_FORMS, allow_in_expressions)
from ..registry import family, primitive, register, register_primitive
from ..sample_independence import elementwise as samples_apart
from ..seed_ops import scaled_at_entries
from ..seeds import TRACED_PARTS, SparseBlock
from ..limits import PROBING, SWEEP
from ..tracer import Tracer, guarded, peek
from ._util import all_finite, crossed_at_zero, expand, negated, no_zero, passed, shape_of, unbroadcast

family("elementwise")

# (the guards every rule of a sweep checks its factor with, by counting: _util.py)
_all_finite, _no_zero = all_finite, no_zero


def _finite(d) -> bool:
    if type(d) is not Tracer:  # a plain factor: nothing to guard
        return _all_finite(d)
    return guarded(_all_finite, d)


def _met(g, factor) -> np.ndarray:
    """Where a zero of g meets a non-finite factor (g's shape, its block axis first)."""
    g = g.todense() if type(g) is SparseBlock else g
    return np.asarray((g == 0) & ~np.isfinite(factor))


def _safe_product(factor, argnum: int = 0):
    """g -> g * factor, where a zero entry of g that is structural gives exactly 0 even if factor is
    inf or NaN there, and a zero value gives NaN (engine/limits.py tells them apart).

    A zero cotangent is what a masked-out branch of np.where sends back; 0 * inf would otherwise
    turn a structural zero into NaN (JAX's "double where" problem). A zero that is a value
    (-sin(0) before sqrt'(0) = inf) leaves a derivative that exists only as a limit.
    """
    if _finite(factor):
        return lambda g: g * factor

    def rule(g):
        with np.errstate(invalid="ignore"):
            prod = g * factor
            out = np.where(g == 0, 0.0, prod)
        probe = SWEEP.v
        if probe is None:
            return out
        meet = guarded(_met, g, factor) if type(g) is Tracer or type(factor) is Tracer else _met(g, factor)
        if not meet.any():
            return out
        zeros = probe.value_zeros(meet, argnum)
        return np.where(zeros, prod, out) if zeros.any() else out  # (prod: 0 * inf, NaN, at any order)
    return rule


def _finite_tangent(t) -> bool:
    """Whether a tangent block is all finite; a structured one is read through its parts."""
    if type(t) is SparseBlock:
        return all(p is None or _all_finite(p) for p in (t.val, t.u, t.v))
    return _finite(t)


def _tangent_product(factor, argnum: int = 0):
    """t -> t * factor for a forward rule: _safe_product's, and its dual, where a factor that is
    exactly 0 gives exactly 0 even if the tangent is inf or NaN there.

    Forward mode meets the dual where a branch not taken has an infinite derivative: the factor
    of np.maximum(np.sqrt(x), 1) for sqrt(x) at 0, or, forward over reverse, the zero cotangent
    that np.where sent back to the rule g * factor of the branch not taken, whose tangent holds
    the infinite derivative of factor (1.5 x**0.5 at 0). Reverse mode's zero cotangent already
    gives 0 there; 0 * inf would leak NaN into the forward Jacobian or the default Hessian.
    """
    scale = _safe_product(factor, argnum)
    if _no_zero(factor) if type(factor) is not Tracer else guarded(_no_zero, factor):
        return scale
    zero = factor == 0

    def rule(t):
        out = scale(t)
        if _finite_tangent(t):  # the factor is finite: only a non-finite tangent can leak
            return out
        # Only where the product is 0 * inf or 0 * NaN: elsewhere it stays a product, whose
        # derivative in the factor (a zero of x in prod's rules) a higher order needs. A zero
        # factor that is a value (x's, in x * sqrt(x) at 0) leaves NaN there (engine/limits.py).
        leak = zero & ~np.isfinite(out)
        if not leak.any():
            return out
        probe = SWEEP.v
        if probe is not None:
            met = guarded(_leaks, factor, out) if type(out) is Tracer or type(factor) is Tracer else _leaks(factor, out)
            zeros = probe.value_zeros(met, argnum)
            if zeros.any():
                return np.where(leak & ~zeros, 0.0, out)
        return np.where(leak, 0.0, out)
    return rule


def _leaks(factor, out) -> np.ndarray:
    out = out.todense() if type(out) is SparseBlock else out
    return np.asarray((factor == 0) & ~np.isfinite(out))


def _scale(d):
    return _safe_product(d)


def _facts(prim, *, kink=None, crossed=NO_KINK, samples=samples_apart):
    """Declare an elementwise primitive's kink (its mask, and how a step crosses it; none by default)
    and its sample-independence rule (facts)."""
    if (kink is None) != (crossed is NO_KINK):
        raise ValueError(f"{prim.name}: a kink needs both its mask and its crossing")
    prim.kink = kink
    KINK_CROSSINGS[prim] = crossed
    SAMPLE_RULES[prim] = samples


def _unary(ufunc, deriv, *, notes: str = "", kink=None, crossed=NO_KINK, name=None, samples=samples_apart):
    """A one-argument ufunc whose derivative is the elementwise factor deriv(ans, x).

    Its Jacobian is diagonal, so the reverse and forward rules are the same product (the forward one
    also keeps a zero factor times a non-finite tangent at 0: _tangent_product).
    """
    prim = _unary_primitive(name or f"np.{ufunc.__name__}", ufunc, deriv, kink=kink, crossed=crossed, samples=samples)
    register_primitive(ufunc, prim, notes=notes, name=name)
    return prim


def _unary_primitive(name, impl, deriv, *, kink=None, crossed=NO_KINK, samples=samples_apart):
    """_unary's primitive, not routed to from NumPy (a form of one that is: SECOND_ORDER_FORMS)."""
    prim = primitive(name, impl)
    prim.structure = ELEMENTWISE
    prim.defvjp(lambda ans, x, **kw: scaled_at_entries(deriv, ans, (x,), 0, lambda: _scale(deriv(ans, x)), _finite)
                if type(ans) is Tracer and TRACED_PARTS.v is True else _scale(deriv(ans, x)))
    prim.defjvp(lambda ans, x, **kw: _tangent_product(deriv(ans, x)))
    _facts(prim, kink=kink, crossed=crossed, samples=samples)
    return prim


def _binary(ufunc, dx, dy, **kw):
    """A two-argument broadcasting ufunc with partial derivatives dx(ans, x, y), dy(ans, x, y).

    A partial given as None means the function is not differentiable in that argument.
    """
    return _nary(ufunc, (dx, dy), **kw)


def _nary(ufunc, partials, *, notes: str = "", kink=None, crossed=NO_KINK, name=None, samples=samples_apart,
          route: bool = True):
    """A broadcasting ufunc of len(partials) arguments; partial k is d(ans, *args) (None: not
    differentiable in argument k). route=False: not routed to from NumPy (a SECOND_ORDER_FORMS row)."""
    prim = primitive(name or f"np.{ufunc.__name__}", ufunc)
    prim.structure = ELEMENTWISE
    makers_v, makers_j = [], []
    for pos, d in enumerate(partials):
        if d is None:
            makers_v.append(None)
            makers_j.append(None)
            continue

        def vjp_maker(ans, *args, _d=d, _pos=pos, **kw):
            return scaled_at_entries(_d, ans, args, _pos, lambda: _usual_vjp(_d, ans, args, _pos), _finite) \
                if type(ans) is Tracer and TRACED_PARTS.v is True else _usual_vjp(_d, ans, args, _pos)

        def jvp_maker(ans, *args, _d=d, _pos=pos, **kw):
            scale, shape, out_shape = _tangent_product(_d(ans, *args), _pos), shape_of(args[_pos]), shape_of(ans)
            return lambda t: scale(expand(t, shape, out_shape))

        makers_v.append(vjp_maker)
        makers_j.append(jvp_maker)
    prim.defvjp(*makers_v)
    prim.defjvp(*makers_j)
    _facts(prim, kink=kink, crossed=crossed, samples=samples)
    if route:
        register_primitive(ufunc, prim, notes=notes, name=name)
    return prim


def _usual_vjp(d, ans, args: tuple, pos: int):
    """The reverse rule of argument `pos` of a broadcasting ufunc whose partial is d(ans, *args)."""
    factor, shape = d(ans, *args), shape_of(args[pos])
    if shape == shape_of(ans) and ((type(factor) is np.ndarray and factor.shape == shape) or type(factor) in (
            float, np.float64, int)) and _all_finite(factor):  # (a number: h * k1 of an integrator's step)
        return lambda g: g * factor  # (g * factor has g's shape: the common rule, through no helpers)
    scale = _safe_product(factor, pos)
    return lambda g: unbroadcast(scale(g), shape)


def _linear_binary(ufunc, sx: float, sy: float):
    """x + y and x - y: the cotangent passes through (times +-1), no factor needed."""
    prim = primitive(f"np.{ufunc.__name__}", ufunc)
    prim.structure = ELEMENTWISE

    def vjp(sign, pos):
        def maker(ans, x, y, **kw):
            shape = shape_of(x if pos == 0 else y)
            if shape == shape_of(ans):  # (no broadcast to undo: one rule for every node, no closure)
                return passed if sign == 1 else negated
            if sign == 1:
                return lambda g: unbroadcast(g, shape)
            return lambda g: unbroadcast(negated(g), shape)
        return maker

    def jvp(sign, pos):
        def maker(ans, x, y, **kw):
            shape = shape_of(x if pos == 0 else y)
            out_shape = shape_of(ans)
            if sign == 1:
                return lambda t: expand(t, shape, out_shape)
            return lambda t: expand(negated(t), shape, out_shape)
        return maker

    prim.defvjp(vjp(sx, 0), vjp(sy, 1))
    prim.defjvp(jvp(sx, 0), jvp(sy, 1))
    _facts(prim)
    register_primitive(ufunc, prim)
    return prim


def _zero(ufunc, notes: str = "piecewise constant: derivative 0"):
    """Connected to its input (strict mode sees a path) but with a zero derivative."""
    prim = primitive(f"np.{ufunc.__name__}", ufunc, zero_grad=True)
    prim.structure = ELEMENTWISE
    _facts(prim)
    register_primitive(ufunc, prim, kind="zero", notes=notes)
    return prim


def _nondiff(ufunc, notes: str = "boolean result: no derivative"):
    prim = primitive(f"np.{ufunc.__name__}", ufunc, nondiff=True)
    _facts(prim)
    register_primitive(ufunc, prim, kind="nondiff", notes=notes)
    return prim


def _where0(cond, value):
    """value where cond holds, else exactly 0; NaN or inf in the masked-out entries never leak."""
    return np.where(cond, value, 0.0)


# ---------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------
add = _linear_binary(np.add, 1, 1)
subtract = _linear_binary(np.subtract, 1, -1)
add.value_free = subtract.value_free = True  # x + c: the rules never read c
multiply = _binary(np.multiply, lambda ans, x, y: y, lambda ans, x, y: x)
SELF_PAIRED.add(multiply)  # x * x: each argument's rule is g * x

true_divide = _binary(np.true_divide, lambda ans, x, y: np.true_divide(1.0, y), lambda ans, x, y: -ans / y)
SCALAR_FORMS.update({add: operator.add, subtract: operator.sub, multiply: operator.mul,
                     true_divide: lambda a, b: a / b if b else math.nan})  # (0: the ufunc says what NumPy says)
negative = _unary(np.negative, lambda ans, x: -1.0)
positive = _unary(np.positive, lambda ans, x: 1.0)
SHIFT_FORMS.update({add: "add", subtract: "subtract", negative: "negative", multiply: "multiply",
                    true_divide: "divide", positive: "move"})


def _power_dx(ans, x, y):
    # y * x**(y-1), with exactly 0 where y == 0 (x**-1 would be inf at x == 0).
    if np.ndim(y) == 0 and not hasattr(y, "_node") and y == 0:
        return np.zeros_like(ans)
    if np.ndim(y) == 0 and not hasattr(y, "_node") and y == 2:
        return 2.0 * x
    with np.errstate(divide="ignore", invalid="ignore"):
        return _where0(y != 0, y * np.power(x, y - 1))


def _power_dy(ans, x, y):
    # ans * log(x), taking 0 * log(0) = 0 so that 0**y stays differentiable in y.
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_x = np.where(x == 0, 1.0, x)
        return _where0(x != 0, ans * np.log(safe_x))


power = _binary(np.power, _power_dx, _power_dy, notes="d/dy uses log(x): defined for x > 0; 0 at x == 0")


def _recorded_square(maker):
    """x ** 2 on a recorded sweep (the gradient a Hessian differentiates): g -> (2 g) x.

    Where the cotangent g is a constant, 2 g is plain and only the product is recorded, where
    g (2 x) records 2 x as well: one operation fewer for every square in a loss. The numbers are
    the same (doubling is exact). Plain sweeps keep the factor 2 x, made once for all seeds.
    """
    def wrapped(ans, x, y, **kw):
        if type(x) is not Tracer or np.ndim(y) != 0 or hasattr(y, "_node") or y != 2:
            return maker(ans, x, y, **kw)
        if not _finite(x):
            return maker(ans, x, y, **kw)  # 0 * inf guarded by the general rule
        return lambda g: (g * 2.0) * x
    return wrapped


power.defvjp(_recorded_square(power.vjps[0]))
power.defjvp(_recorded_square(power.jvps[0]))
float_power = _binary(np.float_power, _power_dx, _power_dy, notes="as np.power, in float64")
square = _unary(np.square, lambda ans, x: 2.0 * x)
sqrt = _unary(np.sqrt, lambda ans, x: 0.5 / ans, notes="sqrt'(0) = inf, reported as non-finite, not hidden")
cbrt = _unary(np.cbrt, lambda ans, x: 1.0 / (3.0 * ans * ans), notes="cbrt'(0) = inf")
reciprocal = _unary(np.reciprocal, lambda ans, x: -(ans * ans))


# abs at 0: abs'(0) = 0, the subgradient of least norm; a gradient that is differentiated again takes
# the slope one-sided, +1 at 0, in every factor alike, so that |u| ** 2 gets 2 (engine/second_order.py).
def _one_sided_sign(x):
    return np.sign(x) + (x == 0)  # (NaN stays NaN; a float32 x stays float32)


abs_slope_one_sided = primitive("np.absolute' (one-sided at 0)", _one_sided_sign, zero_grad=True)
abs_slope_one_sided.structure = ELEMENTWISE
_facts(abs_slope_one_sided)


def _abs_slope_one_sided(ans, x):
    return _one_sided_sign(x) if type(x) is not Tracer else abs_slope_one_sided(x)


def _at_zero(ans, x):
    return x == 0


_ABS_NOTES = "abs'(0) = 0 (the subgradient of least norm); in a Hessian or hvp one-sided at 0, so |u| ** 2 gets 2"
absolute = _unary(np.absolute, lambda ans, x: np.sign(x), notes=_ABS_NOTES, kink=_at_zero, crossed=crossed_at_zero)
register(np.abs, absolute, prims=(absolute,), name="np.abs") if np.abs is not np.absolute else None
fabs = _unary(np.fabs, lambda ans, x: np.sign(x), notes=_ABS_NOTES.replace("abs'", "fabs'"), kink=_at_zero,
              crossed=crossed_at_zero)
for _prim in (absolute, fabs):
    SECOND_ORDER_FORMS[_prim] = _unary_primitive(f"{_prim.name} (one-sided at 0)", _prim.impl, _abs_slope_one_sided,
                                                 kink=_at_zero, crossed=crossed_at_zero)


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
    slope = _unary_primitive(f"{prim.name}' (a convention at 0)", np.sign, _undefined_at_zero)
    CONVENTION_WORDS[slope] = (f"{short}'(0) = 0 is a convention: the second derivative here, of a create_graph "
                               f"gradient through {short} at 0, depends on it ({short}(u) ** 2: 0 with it, 2 "
                               f"one-sided); jaccli.hessian and hvp take {short}'s slope one-sided at 0")
    return lambda ans, x: np.sign(x) if type(x) is not Tracer else slope(x)


for _prim, _short in ((absolute, "abs"), (fabs, "fabs")):
    CREATE_GRAPH_FORMS[_prim] = _unary_primitive(f"{_prim.name} (create_graph)", _prim.impl,
                                                 _abs_slope_with_convention(_prim, _short), kink=_at_zero,
                                                 crossed=crossed_at_zero)
allow_in_expressions("power", "sqrt", "cbrt", "square", "reciprocal", "abs", "absolute")

# ---------------------------------------------------------------------------
# Exponentials and logarithms
# ---------------------------------------------------------------------------
exp = _unary(np.exp, lambda ans, x: ans)
exp2 = _unary(np.exp2, lambda ans, x: ans * np.log(2.0))
expm1 = _unary(np.expm1, lambda ans, x: ans + 1.0)
log = _unary(np.log, lambda ans, x: 1.0 / x)
log2 = _unary(np.log2, lambda ans, x: 1.0 / (x * np.log(2.0)))
log10 = _unary(np.log10, lambda ans, x: 1.0 / (x * np.log(10.0)))
log1p = _unary(np.log1p, lambda ans, x: 1.0 / (1.0 + x))
logaddexp = _binary(np.logaddexp, lambda ans, x, y: np.exp(x - ans), lambda ans, x, y: np.exp(y - ans))
logaddexp2 = _binary(np.logaddexp2, lambda ans, x, y: np.exp2(x - ans), lambda ans, x, y: np.exp2(y - ans))
SHIFT_FORMS.update({exp: "exp", log: "log"})
allow_in_expressions("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp")

# ---------------------------------------------------------------------------
# Trigonometric and hyperbolic
# ---------------------------------------------------------------------------
sin = _unary(np.sin, lambda ans, x: np.cos(x))
cos = _unary(np.cos, lambda ans, x: -np.sin(x))
tan = _unary(np.tan, lambda ans, x: 1.0 + ans * ans)
arcsin = _unary(np.arcsin, lambda ans, x: 1.0 / np.sqrt(1.0 - x * x))
arccos = _unary(np.arccos, lambda ans, x: -1.0 / np.sqrt(1.0 - x * x))
arctan = _unary(np.arctan, lambda ans, x: 1.0 / (1.0 + x * x))
arctan2 = _binary(np.arctan2, lambda ans, y, x: x / (x * x + y * y), lambda ans, y, x: -y / (x * x + y * y))
sinh = _unary(np.sinh, lambda ans, x: np.cosh(x))
cosh = _unary(np.cosh, lambda ans, x: np.sinh(x))
tanh = _unary(np.tanh, lambda ans, x: 1.0 - ans * ans)
arcsinh = _unary(np.arcsinh, lambda ans, x: 1.0 / np.sqrt(x * x + 1.0))
arccosh = _unary(np.arccosh, lambda ans, x: 1.0 / np.sqrt(x * x - 1.0))
arctanh = _unary(np.arctanh, lambda ans, x: 1.0 / (1.0 - x * x))
deg2rad = _unary(np.deg2rad, lambda ans, x: np.pi / 180.0)
rad2deg = _unary(np.rad2deg, lambda ans, x: 180.0 / np.pi)
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
            return _where0(ans != 0, (x if which == 0 else y) / safe)
    return d


_EPS = float(np.finfo(np.float64).eps)


def _through_origin(at, moved):
    """hypot's kink is the point (0, 0): crossed where the step's segment passes through it (collinear
    with it, on both sides), as along x with y = 0. Leaving an axis (from (1, 0) to (1, h)) is not."""
    (_, x0, y0), (_, x1, y1) = at, moved
    turn = x0 * y1 - x1 * y0
    return (np.abs(turn) <= 4 * _EPS * (np.abs(x0 * y1) + np.abs(x1 * y0))) & (x0 * x1 + y0 * y1 < 0)


hypot = _binary(np.hypot, _hypot_d(0), _hypot_d(1), notes="0 subgradient at (0, 0); in a Hessian, NaN there (a limit)",
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


unit = _nary(_unit_impl, (_unit_partial(lambda ans: 1.0), _unit_partial(lambda ans: -ans)),
             name="x / norm(x)", route=False)
LIMIT_WORDS[unit] = "the gradient x / norm(x) of hypot or norm has no derivative at 0"


def _hypot_unit(which):
    plain = _hypot_d(which)

    def d(ans, x, y):
        if type(ans) is not Tracer:
            return plain(ans, x, y)
        return unit(x if which == 0 else y, ans)
    return d


SECOND_ORDER_FORMS[hypot] = _nary(np.hypot, (_hypot_unit(0), _hypot_unit(1)), name="np.hypot (a limit at 0)",
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
sinc_prim.defvjp(lambda ans, x: _scale(_sinc_d(ans, x)))
sinc_prim.defjvp(lambda ans, x: _tangent_product(_sinc_d(ans, x)))
_facts(sinc_prim)
register_primitive(np.sinc, sinc_prim)
allow_in_expressions("sinc")
