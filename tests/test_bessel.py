"""np.i0's rules, and jaccli's own I1 (NumPy has none), against scipy.special: a reference in the
tests only, jaccli never imports SciPy."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.special as sp
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from jaccli.engine.rules.bessel import bessel_i1

_HALF = np.concatenate([np.linspace(0.0, 30.0, 30001), np.geomspace(1e-300, 1.0, 3001),
                        np.geomspace(25.0, 713.9, 3001), [0.5 - 1e-12, 0.5, 24.999999, 25.0]])
X = np.concatenate([_HALF, -_HALF])


def test_i1_agrees_with_scipy_to_a_few_ulp_over_the_real_line():
    # Power series below 25, asymptotic expansion above: both within 5 ulp of I1 (mpmath), scipy's
    # own within 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = bessel_i1(X)
    # scipy's i1 overflows from 709.8, where exp does; I1 itself from 714: there, the scaled i1e
    half = np.exp(np.abs(X) / 2)
    assert_allclose(got, np.where(np.abs(X) < 700, sp.i1(X), (sp.i1e(X) * half) * half), rtol=4e-15, atol=0)
    assert_array_equal(np.signbit(got), np.signbit(X))  # odd, -0.0 included
    with np.errstate(over="ignore"):
        beyond = np.array([714.0, -714.0, 1e5, np.inf, -np.inf, np.nan])
        assert_array_equal(bessel_i1(beyond), [np.inf, -np.inf, np.inf, np.inf, -np.inf, np.nan])
    x32 = X[::97].astype(np.float32)
    with np.errstate(over="ignore"):  # (float32 overflows from 89)
        assert bessel_i1(x32).dtype == np.float32
        assert_array_equal(bessel_i1(x32), sp.i1(x32.astype(np.float64)).astype(np.float32))


def test_i0_derivatives_are_i1_and_its_derivatives_to_rounding():
    # d/dx I0 = I1, d2 = I1' = (I0 + I2) / 2, d3 = I1'' = (3 I1 + I3) / 4: references without a
    # division by x, so that x = 0 is no special case
    x = X[(np.abs(X) < 700)][::41]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's i0 warns of nothing here: neither may its rules
        first = np.diag(np.asarray(jaccli.jacobian(np.i0, x)))
        second = np.diag(np.asarray(jaccli.hessian(lambda v: np.sum(np.i0(v)), x)))
        third = np.diag(np.asarray(jaccli.hessian(lambda v: np.sum(jaccli.grad(lambda u: np.sum(np.i0(u)), v, create_graph=True)), x)))
    assert_allclose(first, sp.i1(x), rtol=4e-15, atol=0)
    assert_allclose(second, (sp.i0(x) + sp.iv(2, x)) / 2, rtol=4e-15, atol=0)
    assert_allclose(third, (3 * sp.i1(x) + sp.iv(3, x)) / 4, rtol=1e-14, atol=0)
