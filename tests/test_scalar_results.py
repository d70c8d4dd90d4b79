"""What f returns is NumPy's own type: a scalar (np.float64) where NumPy gives one, a 0-d array where it gives that.

Seen as the value that vjp and jvp hand back, and that a record_once replay hands back at new inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import jaccli

X = np.array([0.3, -0.7, 1.1, 0.5])
M = np.array([[1.2, 0.3], [-0.4, 0.9]])

# name -> (f, input): each gives one number
CALLS = {
    "einsum-full-contraction": (lambda x: np.einsum("i,i->", x, x), X),
    "einsum-trace": (lambda m: np.einsum("ii", m), M),
    "einsum-optimize": (lambda x: np.einsum("i,i->", x, x, optimize=True), X),  # NumPy's path gives a 0-d array
    "einsum-one-operand-optimize": (lambda x: np.einsum("i->", x, optimize=True), X),
    "sum": (np.sum, X), "sum-keepdims": (lambda x: np.sum(x, keepdims=True)[0], X), "x.sum": (lambda x: x.sum(), X),
    "add.reduce": (lambda x: np.add.reduce(x), X), "mean": (np.mean, X), "var": (np.var, X), "std": (np.std, X),
    "prod": (np.prod, X), "max": (np.max, X), "min": (np.min, X), "ptp": (np.ptp, X), "average": (np.average, X),
    "nansum": (np.nansum, X), "nanmean": (np.nanmean, X), "nanvar": (np.nanvar, X), "nanmax": (np.nanmax, X),
    "logaddexp.reduce": (lambda x: np.logaddexp.reduce(x), X),
    "logaddexp.reduce-2-d": (lambda m: np.logaddexp.reduce(m, axis=None), M),
    "dot": (lambda x: np.dot(x, x), X), "vdot": (lambda x: np.vdot(x, x), X), "inner": (lambda x: np.inner(x, x), X),
    "matmul": (lambda x: x @ x, X), "vecdot": (lambda x: np.vecdot(x, x), X),
    "tensordot": (lambda x: np.tensordot(x, x, 1), X), "tensordot-2-d": (lambda m: np.tensordot(m, m, 2), M),
    "trace": (np.trace, M), "det": (np.linalg.det, M), "slogdet": (lambda m: np.linalg.slogdet(m)[1], M),
    "norm": (np.linalg.norm, X), "norm-2-d": (np.linalg.norm, M), "vector_norm": (np.linalg.vector_norm, X),
    "median": (np.median, X), "quantile": (lambda x: np.quantile(x, 0.3), X),
    "percentile": (lambda x: np.percentile(x, 30.0), X), "nanmedian": (np.nanmedian, X),
    "nanquantile": (lambda x: np.nanquantile(x, 0.3), X), "nanpercentile": (lambda x: np.nanpercentile(x, 30.0), X),
    "cov": (np.cov, X), "polyval": (lambda x: np.polyval(x, 0.5), X), "trapezoid": (np.trapezoid, X),
    "interp": (lambda x: np.interp(0.5, [0.0, 1.0], x[:2]), X),
    "x[0]": (lambda x: x[0], X), "m[0, 1]": (lambda m: m[0, 1], M), "x[..., 0]": (lambda x: x[..., 0], X),
    "m[..., 0, 1]": (lambda m: m[..., 0, 1], M), "sum()[()]": (lambda x: np.sum(x)[()], X),
    "sum()[...]": (lambda x: np.sum(x)[...], X), "x[0] * 2": (lambda x: x[0] * 2, X),
    "where": (lambda x: np.where(x[0] > 0, x[0], x[1]), X),
    "piecewise": (lambda x: np.piecewise(x[0], [x[0] > 0], [np.sin, lambda t: -t]), X),
}


def _check(got, expected):
    assert type(got) is type(expected)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_value_of_f_has_numpys_type(name):
    f, x = CALLS[name]
    expected = f(x.copy())
    v = np.ones(np.shape(expected))
    _check(jaccli.vjp(f, x, v)[0], expected)
    _check(jaccli.jvp(f, x, np.ones_like(x))[0], expected)
    replayed = jaccli.record_once(f)
    jaccli.vjp(replayed, x, v)
    _check(jaccli.vjp(replayed, x * 1.01, v)[0], f(x * 1.01))
