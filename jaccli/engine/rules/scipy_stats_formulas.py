"""The log-densities, probability masses and distribution functions of scipy.stats' distributions, written with
operations that have rules (NumPy's and scipy.special's), so that they differentiate to any order.

Continuous distributions are written in the standardized variable z = (x - loc) / scale (the density then
loses log(scale)); discrete ones in k - loc. Outside the support the values are SciPy's (-inf, 0 or 1)
and the derivatives 0: the formulas are evaluated at a point inside the support there (the "double
where"), so that no NaN of an unused branch reaches a derivative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)


@dataclass(frozen=True)
class Distribution:
    """One scipy.stats distribution: its shape parameters, where its support lies (in z, or in k - loc), a
    point inside it, its methods as functions of (z, *shapes) (or (k, *shapes)), and the shape parameters
    each method has no derivative in (SciPy's incomplete gamma and beta functions have none in a, b)."""

    name: str
    shapes: tuple[str, ...]
    low: float
    high: float | None  # None: a shape parameter bounds it (binom's n)
    inside: float
    methods: dict[str, Callable]
    discrete: bool = False
    no_derivative: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _continuous(name, shapes, low, high, inside, logpdf, cdf, sf, logcdf=None, logsf=None, refused=()):
    methods = {"logpdf": logpdf, "cdf": cdf, "sf": sf,
               "logcdf": logcdf or (lambda z, *s: np.log(cdf(z, *s))),
               "logsf": logsf or (lambda z, *s: np.log(sf(z, *s)))}
    no_derivative = {m: refused for m in ("cdf", "sf", "logcdf", "logsf")} if refused else {}
    return Distribution(name, shapes, low, high, inside, methods, no_derivative=no_derivative)


def distributions(sp: Any) -> dict[str, Distribution]:
    """The distributions, by scipy.stats name; `sp` is scipy.special."""

    def t_logpdf(z, df):
        return (sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df) - 0.5 * np.log(np.pi * df)
                - 0.5 * (df + 1.0) * np.log1p(z * z / df))

    def poisson_logpmf(k, mu):
        return sp.xlogy(k, mu) - mu - sp.gammaln(k + 1.0)

    def binom_logpmf(k, n, p):
        return (sp.gammaln(n + 1.0) - sp.gammaln(k + 1.0) - sp.gammaln(n - k + 1.0)
                + sp.xlogy(k, p) + sp.xlog1py(n - k, -p))

    inf = math.inf
    table = [
        _continuous("norm", (), -inf, inf, 0.0, lambda z: -0.5 * (z * z) - _HALF_LOG_2PI,
                    lambda z: sp.ndtr(z), lambda z: sp.ndtr(-z),
                    logcdf=lambda z: sp.log_ndtr(z), logsf=lambda z: sp.log_ndtr(-z)),
        _continuous("t", ("df",), -inf, inf, 0.0, t_logpdf,
                    lambda z, df: sp.stdtr(df, z), lambda z, df: sp.stdtr(df, -z), refused=("df",)),
        _continuous("expon", (), 0.0, inf, 1.0, lambda z: -z, lambda z: -np.expm1(-z), lambda z: np.exp(-z),
                    logcdf=lambda z: np.log(-np.expm1(-z)), logsf=lambda z: -z),
        _continuous("gamma", ("a",), 0.0, inf, 1.0, lambda z, a: sp.xlogy(a - 1.0, z) - z - sp.gammaln(a),
                    lambda z, a: sp.gammainc(a, z), lambda z, a: sp.gammaincc(a, z), refused=("a",)),
        _continuous("chi2", ("df",), 0.0, inf, 1.0,
                    lambda z, df: sp.xlogy(0.5 * df - 1.0, z) - 0.5 * z - sp.gammaln(0.5 * df) - 0.5 * df * _LOG_2,
                    lambda z, df: sp.gammainc(0.5 * df, 0.5 * z), lambda z, df: sp.gammaincc(0.5 * df, 0.5 * z),
                    refused=("df",)),
        _continuous("beta", ("a", "b"), 0.0, 1.0, 0.5,
                    lambda z, a, b: sp.xlogy(a - 1.0, z) + sp.xlog1py(b - 1.0, -z) - sp.betaln(a, b),
                    lambda z, a, b: sp.betainc(a, b, z), lambda z, a, b: sp.betainc(b, a, 1.0 - z),
                    refused=("a", "b")),
        # discrete: k a plain count; the distribution functions at floor(k), through the incomplete gamma
        # and beta functions in mu and p (their derivatives there are densities)
        Distribution("poisson", ("mu",), 0.0, inf, 0.0, {
            "logpmf": poisson_logpmf,
            "cdf": lambda k, mu: sp.gammaincc(k + 1.0, mu),
            "sf": lambda k, mu: sp.gammainc(k + 1.0, mu)}, discrete=True),
        Distribution("binom", ("n", "p"), 0.0, None, 0.0, {
            "logpmf": binom_logpmf,
            "cdf": lambda k, n, p: sp.betainc(n - k, k + 1.0, 1.0 - p),
            "sf": lambda k, n, p: sp.betainc(k + 1.0, n - k, p)},
            discrete=True, no_derivative={m: ("n",) for m in ("logpmf", "pmf", "cdf", "sf", "logcdf", "logsf")}),
    ]
    return {d.name: d for d in table}


# ---------------------------------------------------------------------------
# Evaluating a method: inside the support by the formula, outside by SciPy's constants
# ---------------------------------------------------------------------------
_OUTSIDE = {  # method -> (value below the support, value above it)
    "logpdf": (-math.inf, -math.inf), "pdf": (0.0, 0.0), "logpmf": (-math.inf, -math.inf), "pmf": (0.0, 0.0),
    "cdf": (0.0, 1.0), "logcdf": (-math.inf, 0.0), "sf": (1.0, 0.0), "logsf": (0.0, -math.inf),
}


def continuous_method(dist: Distribution, method: str, x: Any, shapes: tuple, loc: Any, scale: Any) -> Any:
    """dist.method(x, *shapes, loc=loc, scale=scale) with traced values anywhere."""
    base = "logpdf" if method == "pdf" else method
    z = (x - loc) / scale
    below, above = np.asarray(z < dist.low), np.asarray(z > dist.high)  # (plain masks, guarded for replays)
    out = _masked(dist.methods[base], z, shapes, below | above, dist.inside)
    if base == "logpdf":
        out = out - np.log(scale)
    if method == "pdf":
        out = np.exp(out)
    return _outside(out, method, below, above)


def discrete_method(dist: Distribution, method: str, k: Any, shapes: tuple, loc: Any) -> Any:
    """dist.method(k, *shapes, loc=loc) with traced shape parameters (k and loc are plain)."""
    base = {"pmf": "logpmf", "logcdf": "cdf", "logsf": "sf"}.get(method, method)
    j = np.asarray(k, dtype=float) - np.asarray(loc, dtype=float)
    high = dist.high if dist.high is not None else np.asarray(shapes[0], dtype=float)  # binom's n (plain)
    if base == "logpmf":
        below = (j < dist.low) | (j != np.floor(j))
        above = j > high
    else:  # the distribution functions are step functions of k: their value at floor(k)
        j = np.floor(j)
        below, above = j < dist.low, j >= high
    j = np.where(below | above, dist.inside, j)
    if dist.high is None:  # n - k must stay valid where the value is SciPy's constant
        shapes = (np.where(below | above, np.asarray(shapes[0]) + 1.0, shapes[0]),) + shapes[1:]
    out = dist.methods[base](j, *shapes)
    if method == "pmf":
        out = np.exp(out)
    elif method in ("logcdf", "logsf"):
        out = np.log(out)
    return _outside(out, method, below, above)


def _masked(fn: Callable, z: Any, shapes: tuple, outside: np.ndarray, inside: float) -> Any:
    if outside.any():
        z = np.where(outside, inside, z)
    return fn(z, *shapes)


def _outside(out: Any, method: str, below: np.ndarray, above: np.ndarray) -> Any:
    low, high = _OUTSIDE[method]
    if below.any():
        out = np.where(below, low, out)
    if above.any():
        out = np.where(above, high, out)
    return out


# ---------------------------------------------------------------------------
# Multivariate: dirichlet and multivariate_normal (logpdf and pdf)
# ---------------------------------------------------------------------------
def dirichlet_logpdf(sp: Any, x: Any, alpha: Any) -> Any:
    """SciPy's: x holds the K components along its first axis (the last one may be left out: 1 - the others)."""
    if np.shape(x)[0] + 1 == np.shape(alpha)[0]:
        x = np.concatenate([x, (1.0 - np.sum(x, axis=0))[None]], axis=0)
    log_beta = np.sum(sp.gammaln(alpha)) - sp.gammaln(np.sum(alpha))
    terms = sp.xlogy(np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1)) - 1.0, x)
    return np.sum(terms, axis=0) - log_beta


def multivariate_normal_logpdf(x: Any, mean: Any, cov: Any) -> Any:
    """SciPy's, with the covariance it reads: a 2-D cov's lower triangle (the upper one mirrors it), a 1-D
    cov its diagonal, a scalar cov times the identity."""
    d = np.shape(mean)[-1] if mean is not None else (np.shape(cov)[0] if np.ndim(cov) else None)
    if d is None:
        d = 1 if np.ndim(x) <= 1 else np.shape(x)[-1]
    if np.ndim(cov) == 0:
        cov = cov * np.eye(d)
    elif np.ndim(cov) == 1:
        cov = np.diag(cov)
    else:
        cov = np.tril(cov) + np.transpose(np.tril(cov, -1))
    if np.ndim(x) == 0:
        x = np.reshape(x, (1,))
    if np.ndim(x) == 1 and d == 1:
        x = np.reshape(x, (-1, 1))
    dev = x - (0.0 if mean is None else mean)
    chol = np.linalg.cholesky(cov)
    points = np.reshape(dev, (-1, d))
    white = np.linalg.solve(chol, np.transpose(points))  # (d, points)
    maha = np.sum(white * white, axis=0)
    log_det = 2.0 * np.sum(np.log(np.diagonal(chol)))
    out = -0.5 * maha - 0.5 * log_det - d * _HALF_LOG_2PI
    out = np.reshape(out, np.shape(dev)[:-1])
    return out[()] if np.ndim(out) == 0 else np.squeeze(out)
