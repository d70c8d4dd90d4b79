"""Rules for scipy.stats' distributions that likelihoods are written with: norm, t, expon, gamma, beta, poisson,
binom, chi2 (logpdf/pdf or logpmf/pmf, cdf, logcdf, sf, logsf), dirichlet and multivariate_normal (logpdf, pdf).

SciPy's distribution objects convert their arguments with np.asarray before any dispatch, so while f is
recorded `scipy.stats.norm` and the others are replaced by stand-ins (handlers.FUNCTION_SWAPS: in the
scipy.stats module and wherever f's modules bound them by name), as scipy.special.logsumexp is. A stand-in's
methods compute with the formulas of scipy_stats_formulas, written with operations that have rules, when
a traced value is among their arguments, and call SciPy's own method otherwise; calling it freezes it
(`norm(loc, scale).logpdf(x)`) as SciPy's does. Everything else (rvs, fit, mean, ...) is SciPy's.
The rules are installed when a recording starts after f's module has imported scipy.stats.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...errors import UnsupportedOperationError
from ..handlers import STAND_IN_HOOKS
from ..registry import register
from ..tracer import holds_tracer, lift, peek
from ..user_sites import user_site
from . import scipy_special
from .scipy_special import _swap
from .scipy_stats_formulas import (Distribution, continuous_method, dirichlet_logpdf, discrete_method, distributions,
                                   multivariate_normal_logpdf)

_CONTINUOUS_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
_DISCRETE_METHODS = ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf")


def _refuse(message: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(message, user_site(2))


def _plain(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(o) for o in obj) if type(obj) in (list, tuple) else obj
    return peek(obj)


def _checked_by_scipy(method: Callable, x: Any, args: tuple, kwds: dict) -> None:
    """SciPy's own method on the plain values, for its errors only: a call of the wrong form (an unknown
    keyword, too many arguments) and values it refuses (x off the simplex, cov not positive definite)
    raise SciPy's exceptions, with its words."""
    with np.errstate(all="ignore"):
        method(_plain(x), *_plain(args), **{k: _plain(v) for k, v in kwds.items()})


def _bind(call: str, names: tuple[str, ...], defaults: dict, args: tuple, kwds: dict) -> dict:
    """SciPy's binding of a method's arguments after x: the shape parameters, then loc (and scale)."""
    if len(args) > len(names):
        raise TypeError(f"{call} takes at most {len(names)} parameters after x ({', '.join(names)})")
    values = dict(defaults)
    values.update(zip(names, args))
    for k, v in kwds.items():
        if k not in names:
            raise TypeError(f"{call} got an unexpected keyword argument {k!r}")
        values[k] = v
    missing = [n for n in names if n not in values]
    if missing:
        raise TypeError(f"{call} is missing the shape parameter(s) {', '.join(missing)}")
    return {k: lift(v) for k, v in values.items()}


def _method(call_name: str, original_method: Callable, names: tuple, defaults: dict, compute: Callable) -> Callable:
    """A stand-in's method: SciPy's own for plain arguments; else, after SciPy has checked the call on the
    plain values, compute(x, {parameter: value}) with jaccli's formulas."""
    def call(x, *args, **kwds):
        if not (holds_tracer(x) or holds_tracer(args) or holds_tracer(tuple(kwds.values()))):
            return original_method(x, *args, **kwds)
        _checked_by_scipy(original_method, x, args, kwds)
        return compute(lift(x), _bind(call_name, names, defaults, args, kwds))

    call.__name__ = call.__qualname__ = original_method.__name__
    return call


def _univariate(dist: Distribution, method: str, original: Any) -> Callable:
    call_name = f"scipy.stats.{dist.name}.{method}"
    names = dist.shapes + (("loc",) if dist.discrete else ("loc", "scale"))
    defaults = {"loc": 0.0} if dist.discrete else {"loc": 0.0, "scale": 1.0}
    refused = dist.no_derivative.get(method, ())
    why = ("it is an integer; pass it as a plain value" if dist.discrete else
           "SciPy's incomplete gamma and beta functions have none in it; pass it as a plain value (the logpdf "
           "differentiates in every parameter)")

    def compute(x, v):
        shapes = tuple(v[s] for s in dist.shapes)
        for name in refused:
            if holds_tracer(v[name]):
                raise _refuse(f"{call_name} has no derivative with respect to its shape parameter {name} in jaccli: "
                              f"{why}")
        if dist.discrete:
            for name, value in (("k", x), ("loc", v["loc"])):
                if holds_tracer(value):
                    raise _refuse(f"{call_name}: {name} is an integer, with no derivative; pass it as a plain value")
            return discrete_method(dist, method, x, shapes, v["loc"])
        return continuous_method(dist, method, x, shapes, v["loc"], v["scale"])

    return _method(call_name, getattr(original, method), names, defaults, compute)


def _multivariate(name: str, method: str, original: Any, logpdf: Callable, names: tuple, defaults: dict) -> Callable:
    def compute(x, v):
        out = logpdf(x, *(v[n] for n in names if n != "allow_singular"))
        return np.exp(out) if method == "pdf" else out

    return _method(f"scipy.stats.{name}.{method}", getattr(original, method), names, defaults, compute)


class StandIn:
    """A scipy.stats distribution while f runs: its differentiable methods are jaccli's, the rest SciPy's."""

    def __init__(self, name: str, original: Any, methods: dict[str, Callable]) -> None:
        self._name = name
        self._original = original
        self._methods = methods
        self.__dict__.update(methods)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.__dict__["_original"], attr)

    def __call__(self, *args: Any, **kwds: Any) -> Any:
        return Frozen(self, args, kwds)

    def __repr__(self) -> str:
        return repr(self._original)


class Frozen:
    """`norm(loc, scale)` while f runs: its methods are the stand-in's with these parameters."""

    def __init__(self, dist: StandIn, args: tuple, kwds: dict) -> None:
        self._dist, self._args, self._kwds = dist, args, kwds

    def __getattr__(self, attr: str) -> Any:
        dist = self.__dict__["_dist"]
        args, kwds = self.__dict__["_args"], self.__dict__["_kwds"]
        method = dist._methods.get(attr)
        if method is not None:
            return lambda x: method(x, *args, **kwds)
        if holds_tracer(args) or holds_tracer(tuple(kwds.values())):
            raise UnsupportedOperationError(
                f"scipy.stats.{dist._name}(...).{attr} with traced parameters is not differentiable in jaccli; "
                f"supported: {', '.join(dist._methods)}; see 'jaccli ops'", user_site(2))
        return getattr(dist._original(*args, **kwds), attr)


def _frozen_before(stand_ins: dict[type, StandIn]) -> Callable[[Any], Any]:
    """The hook (handlers.STAND_IN_HOOKS) that stands a Frozen in for a distribution SciPy froze before f ran
    (`prior = norm(0, 1)` at module level), with its parameters."""
    def hook(v: Any) -> Any:
        if not str(getattr(type(v), "__module__", "")).startswith("scipy.stats"):
            return None
        state = getattr(v, "__dict__", {})
        dist = state.get("dist", state.get("_dist"))
        stand_in = stand_ins.get(type(dist))
        if stand_in is None:
            return None
        if "args" in state:  # rv_frozen
            return Frozen(stand_in, tuple(state["args"]), dict(state["kwds"]))
        if "alpha" in state:  # dirichlet_frozen
            return Frozen(stand_in, (state["alpha"],), {})
        if "mean" in state:  # multivariate_normal_frozen
            return Frozen(stand_in, (state["mean"], v.cov), {})
        return None
    return hook


def register_rules(stats: Any) -> None:
    import scipy.special as sp  # (scipy.stats imports it)

    scipy_special.install()  # the formulas call scipy.special's ufuncs on traced values

    stand_ins: dict[type, StandIn] = {}
    for dist in distributions(sp).values():
        original = getattr(stats, dist.name)
        methods = {m: _univariate(dist, m, original)
                   for m in (_DISCRETE_METHODS if dist.discrete else _CONTINUOUS_METHODS)}
        for method, call in methods.items():
            refused = dist.no_derivative.get(method, ())
            if dist.discrete:
                free = ", ".join(s for s in dist.shapes if s not in refused)
                notes = f"in {free}; k, loc{''.join(', ' + r for r in refused)} plain integers"
            else:
                free = ", ".join(("x", "loc", "scale") + tuple(s for s in dist.shapes if s not in refused))
                notes = f"in {free}" + (f"; {', '.join(refused)} plain (no derivative in jaccli)" if refused else "")
            _register_method(dist.name, method, call, notes)
        stand_ins[type(original)] = StandIn(dist.name, original, methods)
        _swap(stats, dist.name, original, stand_ins[type(original)])
    for name, logpdf, names, defaults, free in (
            ("dirichlet", lambda x, alpha: dirichlet_logpdf(sp, x, alpha), ("alpha",), {}, "in x and alpha"),
            ("multivariate_normal", multivariate_normal_logpdf, ("mean", "cov", "allow_singular"),
             {"mean": None, "cov": 1.0, "allow_singular": False},
             "in x, mean and cov (of a 2-D cov, its lower triangle: the one SciPy reads)")):
        original = getattr(stats, name)
        methods = {m: _multivariate(name, m, original, logpdf, names, defaults) for m in ("logpdf", "pdf")}
        for method, call in methods.items():
            _register_method(name, method, call, free)
        stand_ins[type(original)] = StandIn(name, original, methods)
        _swap(stats, name, original, stand_ins[type(original)])
    STAND_IN_HOOKS.append(_frozen_before(stand_ins))


def _register_method(name: str, method: str, call: Callable, notes: str) -> None:
    register(call, call, kind="derived", name=f"scipy.stats.{name}.{method}",
             notes=f"{notes}; frozen too: {name}(...).{method}(x)")

