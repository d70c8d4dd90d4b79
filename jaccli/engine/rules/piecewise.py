"""Rules for piecewise elementwise functions: maximum, minimum and clip (ties split evenly), where (a
masked cotangent), remainders, step functions (sign, floor, round, heaviside: derivative 0) and
comparisons (no derivative)."""

from __future__ import annotations

import numpy as np

from ..tape import ELEMENTWISE
from ..facts import CONDITION_ARGUMENTS, allow_in_expressions
from ..registry import family, primitive, register, register_derived
from ..sample_independence import elementwise as samples_apart
from ..tracer import Tracer, guarded
from ._util import _WEAK, expand, in_dtype, loop_dtypes, refuse_where, sign_change, unbroadcast
from .ufunc_rules import binary_ufunc, elementwise_facts, nondiff_ufunc, zero_derivative_ufunc

family("elementwise")


# ---------------------------------------------------------------------------
# Maximum, minimum, clip: ties split the derivative evenly
# ---------------------------------------------------------------------------


def _pick(first_wins, tie):
    return np.where(first_wins, 1.0, np.where(tie, 0.5, 0.0))


_TIE = {"kink": lambda ans, x, y: x == y, "crossed": sign_change(lambda ans, x, y: np.subtract(x, y))}
maximum = binary_ufunc(np.maximum, lambda ans, x, y: _pick(x > y, x == y), lambda ans, x, y: _pick(y > x, x == y),
                       notes="ties split evenly: 1/2 to each argument", **_TIE)
minimum = binary_ufunc(np.minimum, lambda ans, x, y: _pick(x < y, x == y), lambda ans, x, y: _pick(y < x, x == y),
                       notes="ties split evenly: 1/2 to each argument", **_TIE)
fmax = binary_ufunc(np.fmax, lambda ans, x, y: _pick((x > y) | np.isnan(y), x == y),
                    lambda ans, x, y: _pick((y > x) | np.isnan(x), x == y),
                    notes="ties split evenly; a NaN argument gets 0", **_TIE)
fmin = binary_ufunc(np.fmin, lambda ans, x, y: _pick((x < y) | np.isnan(y), x == y),
                    lambda ans, x, y: _pick((y < x) | np.isnan(x), x == y),
                    notes="ties split evenly; a NaN argument gets 0", **_TIE)


def _clip(x, lo=None, hi=None):
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


class _PublicClip:
    """np.clip in the place of its ufunc for loop_dtypes: np.clip(a, lo, hi, **kw) is that ufunc's call
    when both bounds are given."""

    signature, nout, __name__ = None, 1, "clip"

    def __call__(self, a, lo, hi, **kw):
        # np.clip would make a Python number `a` an array (no longer weak, NEP 50); the ufunc's loop is
        # the same whichever operand comes first, so an operand that is not a Python number takes its place
        if type(a) in _WEAK:
            a, lo, hi = (lo, a, hi) if type(lo) not in _WEAK else (hi, lo, a) if type(hi) not in _WEAK else (a, lo, hi)
        return np.clip(a, lo, hi, **kw)


# np.clip's ufunc is private (NumPy 2: np._core.umath.clip; 1.x: np.core.umath.clip); a NumPy without it
# gets the loop np.clip itself picks
_CLIP = getattr(getattr(getattr(np, "_core", None), "umath", None), "clip", None) \
    or getattr(getattr(getattr(np, "core", None), "umath", None), "clip", None) or _PublicClip()


def _clip_handler(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue, **kw):
    refuse_where(kw, "np.clip(x, lo, hi)")
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    if not kw:
        return _clip(a, lo, hi)
    # NumPy passes the other keywords (dtype=, casting=, ...) to the ufunc that its bounds call for:
    # its loop's dtype for them, or its error (an unknown keyword)
    ufunc = np.positive if lo is None and hi is None else np.minimum if lo is None else \
        np.maximum if hi is None else _CLIP
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
elementwise_facts(where, samples=_samples_where)
CONDITION_ARGUMENTS[where] = 0
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
# Remainders: x - y q with the quotient q = floor(x / y) (fmod: trunc(x / y)) piecewise constant, so
# the derivatives are 1 in x and -q in y (q has derivative 0: floor_divide and trunc are steps)
# ---------------------------------------------------------------------------
mod = binary_ufunc(np.remainder, lambda ans, x, y: np.ones_like(ans), lambda ans, x, y: -np.floor_divide(x, y),
                   notes="derivative 1 w.r.t. x1 and -floor(x1 / x2) w.r.t. x2; both jump where x1 / x2 is an integer")
register(np.mod, mod, prims=(mod,), name="np.mod") if np.mod is not np.remainder else None
fmod = binary_ufunc(np.fmod, lambda ans, x, y: np.ones_like(ans), lambda ans, x, y: -np.trunc(x / y),
                    notes="derivative 1 w.r.t. x1 and -trunc(x1 / x2) w.r.t. x2; both jump where x1 / x2 is an integer")

# ---------------------------------------------------------------------------
# Piecewise constant (derivative 0) and boolean-valued (no derivative)
# ---------------------------------------------------------------------------
for _uf in (np.sign, np.floor, np.ceil, np.rint, np.trunc, np.floor_divide):
    zero_derivative_ufunc(_uf)
allow_in_expressions("sign", "floor", "ceil")

# np.heaviside(x1, x2) is a step in x1 and x2 itself where x1 == 0: a step with 0 at 0 (a piecewise
# constant primitive, so check still sees the step) and x2 taken where x1 == 0.
heaviside_step = primitive("np.heaviside", np.heaviside, zero_grad=True)
heaviside_step.structure = ELEMENTWISE
elementwise_facts(heaviside_step)


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
    nondiff_ufunc(_uf)


# np.round and np.fix are functions, not ufuncs (np.round takes `decimals`): piecewise constant too.
def _zero_function(name: str, impl):
    prim = primitive(name, impl, zero_grad=True)
    prim.structure = ELEMENTWISE
    elementwise_facts(prim)
    return prim


round_ = _zero_function("np.round", lambda x, decimals=0: np.round(x, decimals))
fix = _zero_function("np.fix", np.fix)
for _func in {np.round, np.around}:
    register(_func, lambda a, decimals=0, out=None: round_(a, decimals), prims=(round_,), kind="zero",
             name=f"np.{_func.__name__}", notes="piecewise constant: derivative 0")
register(np.fix, lambda x, out=None: fix(x), prims=(fix,), kind="zero", notes="piecewise constant: derivative 0")
