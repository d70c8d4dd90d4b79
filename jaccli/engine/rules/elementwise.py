"""Rules for elementwise NumPy functions (ufuncs), with the conventions at their kinks."""

from __future__ import annotations

import math

import numpy as np

from ..core import ELEMENTWISE
from ..facts import KINK_CROSSINGS, NO_KINK, SAMPLE_RULES, SHIFT_FORMS, allow_in_expressions
from ..registry import family, primitive, register, register_derived, register_primitive
from ..sample_independence import elementwise as samples_apart
from ..seeds import SparseBlock
from ..tracer import Tracer, guarded
from ._util import crossed_at_zero, expand, in_dtype, loop_dtypes, refuse_where, sign_change, unbroadcast

family("elementwise")


def _all_finite(value) -> bool:
    if isinstance(value, (float, int)):
        return math.isfinite(value)
    return bool(np.isfinite(value).all())


def _finite(d) -> bool:
    if type(d) is not Tracer:  # a plain factor: nothing to guard
        return _all_finite(d)
    return guarded(_all_finite, d)


def _safe_product(factor):
    """g -> g * factor, where a zero entry of g gives exactly 0 even if factor is inf or NaN there.

    A zero cotangent is what a masked-out branch of np.where sends back; 0 * inf would otherwise
    turn a structural zero into NaN (JAX's "double where" problem).
    """
    if _finite(factor):
        return lambda g: g * factor

    def rule(g):
        with np.errstate(invalid="ignore"):
            return np.where(g == 0, 0.0, g * factor)
    return rule


def _no_zero(value) -> bool:
    if type(value) is np.ndarray:
        return bool(value.all())  # a float is true unless it is 0 (NaN is true): no temporary
    if isinstance(value, (float, int)):
        return value != 0
    return bool(np.all(value != 0))


def _finite_tangent(t) -> bool:
    """Whether a tangent block is all finite; a structured one is read through its parts."""
    if type(t) is SparseBlock:
        return all(p is None or _all_finite(p) for p in (t.val, t.u, t.v))
    return _finite(t)


def _tangent_product(factor):
    """t -> t * factor for a forward rule: _safe_product's, and its dual, where a factor that is
    exactly 0 gives exactly 0 even if the tangent is inf or NaN there.

    Forward mode meets the dual where a branch not taken has an infinite derivative: the factor
    of np.maximum(np.sqrt(x), 1) for sqrt(x) at 0, or, forward over reverse, the zero cotangent
    that np.where sent back to the rule g * factor of the branch not taken, whose tangent holds
    the infinite derivative of factor (1.5 x**0.5 at 0). Reverse mode's zero cotangent already
    gives 0 there; 0 * inf would leak NaN into the forward Jacobian or the default Hessian.
    """
    scale = _safe_product(factor)
    if _no_zero(factor) if type(factor) is not Tracer else guarded(_no_zero, factor):
        return scale
    zero = factor == 0

    def rule(t):
        out = scale(t)
        if _finite_tangent(t):  # the factor is finite: only a non-finite tangent can leak
            return out
        # Only where the product is 0 * inf or 0 * NaN: elsewhere it stays a product, whose
        # derivative in the factor (a zero of x in prod's rules) a higher order needs.
        leak = zero & ~np.isfinite(out)
        return np.where(leak, 0.0, out) if leak.any() else out
    return rule


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
    prim = primitive(name or f"np.{ufunc.__name__}", ufunc)
    prim.structure = ELEMENTWISE
    prim.defvjp(lambda ans, x, **kw: _scale(deriv(ans, x)))
    prim.defjvp(lambda ans, x, **kw: _tangent_product(deriv(ans, x)))
    _facts(prim, kink=kink, crossed=crossed, samples=samples)
    register_primitive(ufunc, prim, notes=notes, name=name)
    return prim


def _binary(ufunc, dx, dy, **kw):
    """A two-argument broadcasting ufunc with partial derivatives dx(ans, x, y), dy(ans, x, y).

    A partial given as None means the function is not differentiable in that argument.
    """
    return _nary(ufunc, (dx, dy), **kw)


def _nary(ufunc, partials, *, notes: str = "", kink=None, crossed=NO_KINK, name=None, samples=samples_apart):
    """A broadcasting ufunc of len(partials) arguments; partial k is d(ans, *args) (None: not
    differentiable in argument k)."""
    prim = primitive(name or f"np.{ufunc.__name__}", ufunc)
    prim.structure = ELEMENTWISE
    makers_v, makers_j = [], []
    for pos, d in enumerate(partials):
        if d is None:
            makers_v.append(None)
            makers_j.append(None)
            continue

        def vjp_maker(ans, *args, _d=d, _pos=pos, **kw):
            scale = _safe_product(_d(ans, *args))
            shape = np.shape(args[_pos])
            return lambda g: unbroadcast(scale(g), shape)

        def jvp_maker(ans, *args, _d=d, _pos=pos, **kw):
            scale = _tangent_product(_d(ans, *args))
            shape = np.shape(args[_pos])
            out_shape = np.shape(ans)
            return lambda t: scale(expand(t, shape, out_shape))

        makers_v.append(vjp_maker)
        makers_j.append(jvp_maker)
    prim.defvjp(*makers_v)
    prim.defjvp(*makers_j)
    _facts(prim, kink=kink, crossed=crossed, samples=samples)
    register_primitive(ufunc, prim, notes=notes, name=name)
    return prim


def _linear_binary(ufunc, sx: float, sy: float):
    """x + y and x - y: the cotangent passes through (times +-1), no factor needed."""
    prim = primitive(f"np.{ufunc.__name__}", ufunc)
    prim.structure = ELEMENTWISE

    def vjp(sign, pos):
        def maker(ans, x, y, **kw):
            shape = np.shape(x if pos == 0 else y)
            if sign == 1:
                return lambda g: unbroadcast(g, shape)
            return lambda g: unbroadcast(-g, shape)
        return maker

    def jvp(sign, pos):
        def maker(ans, x, y, **kw):
            shape = np.shape(x if pos == 0 else y)
            out_shape = np.shape(ans)
            if sign == 1:
                return lambda t: expand(t, shape, out_shape)
            return lambda t: expand(-t, shape, out_shape)
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

true_divide = _binary(np.true_divide, lambda ans, x, y: np.true_divide(1.0, y), lambda ans, x, y: -ans / y)
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
absolute = _unary(np.absolute, lambda ans, x: np.sign(x), notes="abs'(0) = 0 (the subgradient of least norm)",
                  kink=lambda ans, x: x == 0, crossed=crossed_at_zero)
register(np.abs, absolute, prims=(absolute,), name="np.abs") if np.abs is not np.absolute else None
fabs = _unary(np.fabs, lambda ans, x: np.sign(x), notes="fabs'(0) = 0", kink=lambda ans, x: x == 0,
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


hypot = _binary(np.hypot, _hypot_d(0), _hypot_d(1), notes="0 subgradient at (0, 0)",
                kink=lambda ans, x, y: ans == 0, crossed=_through_origin)
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

# ---------------------------------------------------------------------------
# Maximum, minimum, clip: ties split the derivative evenly
# ---------------------------------------------------------------------------


def _pick(first_wins, tie):
    return np.where(first_wins, 1.0, np.where(tie, 0.5, 0.0))


_TIE = {"kink": lambda ans, x, y: x == y, "crossed": sign_change(lambda ans, x, y: np.subtract(x, y))}
maximum = _binary(np.maximum, lambda ans, x, y: _pick(x > y, x == y), lambda ans, x, y: _pick(y > x, x == y),
                  notes="ties split evenly: 1/2 to each argument", **_TIE)
minimum = _binary(np.minimum, lambda ans, x, y: _pick(x < y, x == y), lambda ans, x, y: _pick(y < x, x == y),
                  notes="ties split evenly: 1/2 to each argument", **_TIE)
fmax = _binary(np.fmax, lambda ans, x, y: _pick((x > y) | np.isnan(y), x == y),
               lambda ans, x, y: _pick((y > x) | np.isnan(x), x == y),
               notes="ties split evenly; a NaN argument gets 0", **_TIE)
fmin = _binary(np.fmin, lambda ans, x, y: _pick((x < y) | np.isnan(y), x == y),
               lambda ans, x, y: _pick((y < x) | np.isnan(x), x == y),
               notes="ties split evenly; a NaN argument gets 0", **_TIE)


def _clip(x, lo=None, hi=None):
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


_UMATH = getattr(getattr(np, "_core", None), "umath", None) or np.core.umath  # (NumPy 1.x: np.core)


def _clip_handler(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue, **kw):
    refuse_where(kw, "np.clip(x, lo, hi)")
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    if not kw:
        return _clip(a, lo, hi)
    # NumPy passes the other keywords (dtype=, casting=, ...) to the ufunc that its bounds call for:
    # its loop's dtype for them, or its error (an unknown keyword)
    ufunc = np.positive if lo is None and hi is None else np.minimum if lo is None else \
        np.maximum if hi is None else _UMATH.clip
    dtype = loop_dtypes(ufunc, (a,) + tuple(b for b in (lo, hi) if b is not None), kw)[0]
    return in_dtype(_clip(in_dtype(a, dtype), lo, hi), dtype)


register_derived(np.clip, _clip_handler, uses=(maximum, minimum),
                 notes="maximum then minimum: at a bound the derivative is split evenly (1/2)")
allow_in_expressions("maximum", "minimum", "clip")

# ---------------------------------------------------------------------------
# where: the cotangent is masked, never multiplied by the mask
# ---------------------------------------------------------------------------


def _where_impl(cond, x, y):
    return np.where(cond, x, y)


def _samples_where(node, B):
    """where keeps samples apart as an elementwise function does, with a condition that does not
    broadcast along the sample axis."""
    return samples_apart(node, B) and np.ndim(node.args[0]) <= len(np.shape(node.value))


where = primitive("np.where", _where_impl)
where.structure = ELEMENTWISE
_facts(where, samples=_samples_where)
where.defvjp(
    None,
    lambda ans, c, x, y: (lambda g: unbroadcast(np.where(c, g, 0.0), np.shape(x))),
    lambda ans, c, x, y: (lambda g: unbroadcast(np.where(c, 0.0, g), np.shape(y))),
)
where.defjvp(
    None,
    lambda ans, c, x, y: (lambda t: np.where(c, expand(t, np.shape(x), np.shape(ans)), 0.0)),
    lambda ans, c, x, y: (lambda t: np.where(c, 0.0, expand(t, np.shape(y), np.shape(ans)))),
)


def _truth(condition):
    return np.asarray(condition, dtype=bool)


def _where_handler(condition, x=None, y=None):
    if x is None and y is None:
        return guarded(np.nonzero, condition)
    return where(guarded(_truth, condition), x, y)


register(np.where, _where_handler, prims=(where,),
         notes="the cotangent is masked with where(c, g, 0): NaN or inf in the branch not taken never leaks")
allow_in_expressions("where")

# ---------------------------------------------------------------------------
# Remainders: differentiable in the first argument
# ---------------------------------------------------------------------------
mod = _binary(np.remainder, lambda ans, x, y: np.ones_like(ans), None,
              notes="derivative 1 w.r.t. the first argument; not differentiable w.r.t. the second")
register(np.mod, mod, prims=(mod,), name="np.mod") if np.mod is not np.remainder else None
fmod = _binary(np.fmod, lambda ans, x, y: np.ones_like(ans), None,
               notes="derivative 1 w.r.t. the first argument; not differentiable w.r.t. the second")

# ---------------------------------------------------------------------------
# Piecewise constant (derivative 0) and boolean-valued (no derivative)
# ---------------------------------------------------------------------------
for _uf in (np.sign, np.floor, np.ceil, np.rint, np.trunc, np.floor_divide):
    _zero(_uf)
allow_in_expressions("sign", "floor", "ceil")

# np.heaviside(x1, x2) is a step in x1 and x2 itself where x1 == 0: a step with 0 at 0 (a piecewise
# constant primitive, so check still sees the step) and x2 taken where x1 == 0.
heaviside_step = primitive("np.heaviside", np.heaviside, zero_grad=True)
heaviside_step.structure = ELEMENTWISE
_facts(heaviside_step)


def _heaviside(x1, x2, out=None, **kw):
    if type(x2) is not Tracer:
        return heaviside_step(x1, x2, **kw)
    # x2 in NumPy's loop for these arguments and kwargs (dtype=, signature=): cast as NumPy casts it
    # (or refused as NumPy refuses it, casting="safe"), so the value has NumPy's dtype, as the other
    # ufuncs' values have. From the dtypes alone: nothing the recording needs to guard.
    taken = in_dtype(x2, loop_dtypes(np.heaviside, (x1, x2), kw)[0])
    return where(guarded(lambda v: np.equal(v, 0), x1), taken, heaviside_step(x1, 0.0, **kw))


register_derived(np.heaviside, _heaviside, uses=(heaviside_step, where),
                 notes="a step in x1: derivative 0; x2 where x1 == 0: derivative 1 in x2 there, 0 elsewhere")
for _uf in (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
            np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
            np.isfinite, np.isnan, np.isinf, np.signbit):
    _nondiff(_uf)


# np.round and np.fix are functions, not ufuncs (np.round takes `decimals`): piecewise constant too.
def _zero_function(name: str, impl):
    prim = primitive(name, impl, zero_grad=True)
    prim.structure = ELEMENTWISE
    _facts(prim)
    return prim


round_ = _zero_function("np.round", lambda x, decimals=0: np.round(x, decimals))
fix = _zero_function("np.fix", np.fix)
for _func in {np.round, np.around}:
    register(_func, lambda a, decimals=0, out=None: round_(a, decimals), prims=(round_,), kind="zero",
             name=f"np.{_func.__name__}", notes="piecewise constant: derivative 0")
register(np.fix, lambda x, out=None: fix(x), prims=(fix,), kind="zero", notes="piecewise constant: derivative 0")


# ---------------------------------------------------------------------------
# Real inputs seen as complex numbers, signs, and replacing non-finite values
# ---------------------------------------------------------------------------
def _of_real(name: str, x, result):
    """result, for a real x (np.real, np.imag, ... of real arrays); a complex x is refused."""
    if np.iscomplexobj(x):
        raise TypeError(f"{name} of a complex array: jaccli differentiates real-valued functions only")
    return result


def _angle(z, deg=False):
    # 0 or pi by the sign bit (as arctan2(0, z)); constants of z's dtype, connected to z
    return _of_real("np.angle", z, np.where(guarded(np.signbit, z), np.full_like(z, 180.0 if deg else np.pi),
                                            np.zeros_like(z)))


def _conjugate(x, out=None, **kw):
    taken = in_dtype(x, loop_dtypes(np.conjugate, (x,), kw)[0])
    return _of_real("np.conjugate", x, np.copy(x) if taken is x else taken)  # a new array, as NumPy's


register_derived(np.conjugate, _conjugate, notes="real inputs only: the identity")
register_derived(np.real, lambda val: _of_real("np.real", val, val), notes="real inputs only: the identity")
register_derived(np.imag, lambda val: _of_real("np.imag", val, np.zeros_like(val)),
                 notes="real inputs only: zeros, derivative 0")
register_derived(np.angle, _angle, notes="real inputs: 0 or pi (180) by the sign bit, derivative 0")


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
ldexp = _binary(np.ldexp, lambda ans, x1, x2: np.ldexp(np.ones((), ans.dtype), x2), None,
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
