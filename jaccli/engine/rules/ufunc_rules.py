"""How the rules of an elementwise NumPy function (a ufunc) are made: its primitive, its reverse and
forward rules from its partial derivatives, and its facts (kink, sample independence). The tables of
rules/elementwise.py, piecewise.py, composed_ufuncs.py, bessel.py and scipy_special.py call these builders.

The products of a cotangent or a tangent with a factor keep a structural zero exactly 0 where the
factor is inf or NaN (safe_product, tangent_product); engine/limits.py tells such a zero from a value.
"""

from __future__ import annotations

import numpy as np

from ..tape import ELEMENTWISE
from ..facts import KINK_CROSSINGS, NO_KINK, SAMPLE_RULES
from ..registry import primitive, register_primitive
from ..sample_independence import elementwise as samples_apart
from ..seed_ops import scaled_at_entries
from ..seeds import TRACED_PARTS, SparseBlock
from ..limits import SWEEP
from ..tracer import Tracer, guarded
from ._util import all_finite, expand, negated, no_zero, passed, shape_of, unbroadcast

def finite_factor(d) -> bool:
    if type(d) is not Tracer:  # a plain factor: nothing to guard
        return all_finite(d)
    return guarded(all_finite, d)


def _met(g, factor) -> np.ndarray:
    """Where a zero of g meets a non-finite factor (g's shape, its block axis first)."""
    g = g.todense() if type(g) is SparseBlock else g
    return np.asarray((g == 0) & ~np.isfinite(factor))


def safe_product(factor, argnum: int = 0):
    """g -> g * factor, where a zero entry of g that is structural gives exactly 0 even if factor is
    inf or NaN there, and a zero value gives NaN (engine/limits.py tells them apart).

    A zero cotangent is what a masked-out branch of np.where sends back; 0 * inf would otherwise
    turn a structural zero into NaN (JAX's "double where" problem). A zero that is a value
    (-sin(0) before sqrt'(0) = inf) leaves a derivative that exists only as a limit.
    """
    if finite_factor(factor):
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
        return all(p is None or all_finite(p) for p in (t.val, t.u, t.v))
    return finite_factor(t)


def tangent_product(factor, argnum: int = 0):
    """t -> t * factor for a forward rule: safe_product's, and its dual, where a factor that is
    exactly 0 gives exactly 0 even if the tangent is inf or NaN there.

    Forward mode meets the dual where a branch not taken has an infinite derivative: the factor
    of np.maximum(np.sqrt(x), 1) for sqrt(x) at 0, or, forward over reverse, the zero cotangent
    that np.where sent back to the rule g * factor of the branch not taken, whose tangent holds
    the infinite derivative of factor (1.5 x**0.5 at 0). Reverse mode's zero cotangent already
    gives 0 there; 0 * inf would leak NaN into the forward Jacobian or the default Hessian.
    """
    scale = safe_product(factor, argnum)
    if no_zero(factor) if type(factor) is not Tracer else guarded(no_zero, factor):
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


def elementwise_facts(prim, *, kink=None, crossed=NO_KINK, samples=samples_apart):
    """Declare an elementwise primitive's kink (its mask, and how a step crosses it; none by default)
    and its sample-independence rule (facts)."""
    if (kink is None) != (crossed is NO_KINK):
        raise ValueError(f"{prim.name}: a kink needs both its mask and its crossing")
    prim.kink = kink
    KINK_CROSSINGS[prim] = crossed
    SAMPLE_RULES[prim] = samples


def unary_ufunc(ufunc, deriv, *, notes: str = "", kink=None, crossed=NO_KINK, name=None, samples=samples_apart):
    """A one-argument ufunc whose derivative is the elementwise factor deriv(ans, x).

    Its Jacobian is diagonal, so the reverse and forward rules are the same product (the forward one
    also keeps a zero factor times a non-finite tangent at 0: tangent_product).
    """
    prim = unary_ufunc_primitive(name or f"np.{ufunc.__name__}", ufunc, deriv, kink=kink, crossed=crossed,
                                 samples=samples)
    register_primitive(ufunc, prim, notes=notes, name=name)
    return prim


def unary_ufunc_primitive(name, impl, deriv, *, kink=None, crossed=NO_KINK, samples=samples_apart):
    """unary_ufunc's primitive, not routed to from NumPy (a form of one that is: SECOND_ORDER_FORMS)."""
    prim = primitive(name, impl)
    prim.structure = ELEMENTWISE
    prim.defvjp(lambda ans, x, **kw: scaled_at_entries(deriv, ans, (x,), 0, lambda: safe_product(deriv(ans, x)),
                                                       finite_factor)
                if type(ans) is Tracer and TRACED_PARTS.v is True else safe_product(deriv(ans, x)))
    prim.defjvp(lambda ans, x, **kw: tangent_product(deriv(ans, x)))
    elementwise_facts(prim, kink=kink, crossed=crossed, samples=samples)
    return prim


def binary_ufunc(ufunc, dx, dy, **kw):
    """A two-argument broadcasting ufunc with partial derivatives dx(ans, x, y), dy(ans, x, y).

    A partial given as None means the function is not differentiable in that argument.
    """
    return nary_ufunc(ufunc, (dx, dy), **kw)


def nary_ufunc(ufunc, partials, *, notes: str = "", kink=None, crossed=NO_KINK, name=None, samples=samples_apart,
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
            return scaled_at_entries(_d, ans, args, _pos, lambda: usual_vjp(_d, ans, args, _pos), finite_factor) \
                if type(ans) is Tracer and TRACED_PARTS.v is True else usual_vjp(_d, ans, args, _pos)

        def jvp_maker(ans, *args, _d=d, _pos=pos, **kw):
            scale, shape, out_shape = tangent_product(_d(ans, *args), _pos), shape_of(args[_pos]), shape_of(ans)
            return lambda t: scale(expand(t, shape, out_shape))

        makers_v.append(vjp_maker)
        makers_j.append(jvp_maker)
    prim.defvjp(*makers_v)
    prim.defjvp(*makers_j)
    elementwise_facts(prim, kink=kink, crossed=crossed, samples=samples)
    if route:
        register_primitive(ufunc, prim, notes=notes, name=name)
    return prim


def usual_vjp(d, ans, args: tuple, pos: int):
    """The reverse rule of argument `pos` of a broadcasting ufunc whose partial is d(ans, *args)."""
    factor, shape = d(ans, *args), shape_of(args[pos])
    if shape == shape_of(ans) and ((type(factor) is np.ndarray and factor.shape == shape) or type(factor) in (
            float, np.float64, int)) and all_finite(factor):  # (a number: h * k1 of an integrator's step)
        return lambda g: g * factor  # (g * factor has g's shape: the common rule, through no helpers)
    scale = safe_product(factor, pos)
    return lambda g: unbroadcast(scale(g), shape)


def linear_binary_ufunc(ufunc, sx: float, sy: float):
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
    elementwise_facts(prim)
    register_primitive(ufunc, prim)
    return prim


def zero_derivative_ufunc(ufunc, notes: str = "piecewise constant: derivative 0"):
    """Connected to its input (strict mode sees a path) but with a zero derivative."""
    prim = primitive(f"np.{ufunc.__name__}", ufunc, zero_grad=True)
    prim.structure = ELEMENTWISE
    elementwise_facts(prim)
    register_primitive(ufunc, prim, kind="zero", notes=notes)
    return prim


def nondiff_ufunc(ufunc, notes: str = "boolean result: no derivative"):
    prim = primitive(f"np.{ufunc.__name__}", ufunc, nondiff=True)
    elementwise_facts(prim)
    register_primitive(ufunc, prim, kind="nondiff", notes=notes)
    return prim


def where0(cond, value):
    """value where cond holds, else exactly 0; NaN or inf in the masked-out entries never leak."""
    return np.where(cond, value, 0.0)
