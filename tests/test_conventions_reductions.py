"""Reductions at their awkward points: ties in max/min, and products with zeros, against closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import jaccli
from jaccli.engine.recording import Recording


def _jacobian(f, x):
    """Every row of the Jacobian in one reverse sweep (a block of identity seeds)."""
    rec = Recording(f, (x,), (0,))
    out_shape = np.shape(rec.outputs[0])
    n_out = int(np.prod(out_shape))
    seeds = np.eye(n_out).reshape((n_out,) + out_shape)
    return np.asarray(rec.vjp([seeds])[0]).reshape(out_shape + np.shape(x))


def _hessian(f, x):
    """Forward over reverse: the gradient's recording, pushed along every coordinate at once."""
    def grad(y):
        return Recording(f, (y,), (0,)).vjp([np.ones((1,))])[0][0]
    rec = Recording(grad, (x,), (0,))
    n = x.size
    return np.asarray(rec.jvp([np.eye(n).reshape((n,) + x.shape)])[0]).reshape(x.shape + x.shape)


def _others_product(x):
    return np.array([np.prod(np.delete(x, i)) for i in range(x.size)])


def _others_product_pairs(x):
    n = x.size
    return np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)] for i in range(n)])


def test_max_ties_split_the_gradient_evenly():
    assert_allclose(_jacobian(np.max, np.array([1.0, 3.0, 3.0])), [0.0, 0.5, 0.5], rtol=0, atol=0)


def test_min_ties_split_the_gradient_evenly_per_row():
    x = np.array([[2.0, -1.0, -1.0, -1.0], [0.5, 0.25, 4.0, 0.25]])
    expected = np.zeros((2, 2, 4))
    expected[0, 0, 1:] = 1 / 3
    expected[1, 1, [1, 3]] = 0.5
    assert_allclose(_jacobian(lambda x: np.min(x, axis=1), x), expected, rtol=0, atol=1e-15)


def test_max_without_ties_picks_the_maximum():
    assert_allclose(_jacobian(np.max, np.array([1.0, 3.0, 2.0])), [0.0, 1.0, 0.0], rtol=0, atol=0)


@pytest.mark.parametrize("x", [
    np.array([2.0, -1.5, 3.0, 0.5]),
    np.array([2.0, 0.0, 3.0, 4.0]),
    np.array([0.0, 2.0, 0.0, 4.0]),
    np.array([0.0, 0.0, 0.0]),
], ids=["no-zero", "one-zero", "two-zeros", "all-zeros"])
def test_prod_gradient_and_hessian_match_products_of_the_others(x):
    assert_allclose(_jacobian(np.prod, x), _others_product(x), rtol=1e-14, atol=0)
    assert_allclose(_hessian(np.prod, x), _others_product_pairs(x), rtol=1e-14, atol=0)


def test_prod_with_one_zero_has_one_nonzero_partial():
    assert_allclose(_jacobian(np.prod, np.array([2.0, 0.0, 3.0, 4.0])), [0.0, 24.0, 0.0, 0.0], rtol=0, atol=0)


def test_prod_with_two_zeros_has_zero_gradient_but_a_nonzero_hessian_entry():
    x = np.array([0.0, 2.0, 0.0, 4.0])
    assert_allclose(_jacobian(np.prod, x), np.zeros(4), rtol=0, atol=0)
    h = _hessian(np.prod, x)
    assert h[0, 2] == h[2, 0] == 8.0
    assert np.count_nonzero(h) == 2


def test_prod_along_an_axis_with_zeros():
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0]])
    jac = _jacobian(lambda x: np.prod(x, axis=1), x)
    assert_allclose(jac[0, 0], [6.0, 0.0, 0.0], rtol=0, atol=0)
    assert_allclose(jac[1, 1], [0.0, 0.0, 0.0], rtol=0, atol=0)
    assert_allclose(jac[0, 1], 0.0, rtol=0, atol=0)


@pytest.mark.parametrize("x", [np.array([1.5, 0.0, -2.0, 0.0, 3.0]), np.array([0.5, 2.0, -1.0, 3.0, 1.5, 0.7])],
                         ids=["two-zeros", "no-zero"])
def test_cumprod_jacobian_matches_closed_form(x):
    n = x.size
    expected = np.array([[np.prod(np.delete(x[: i + 1], k)) if k <= i else 0.0 for k in range(n)]
                         for i in range(n)])
    assert_allclose(_jacobian(np.cumprod, x), expected, rtol=1e-14, atol=0)


_OVER_NO_AXIS = {
    "sum": lambda v: np.sum(v, axis=()), "sum-initial": lambda v: np.sum(v, axis=(), initial=0.0),
    "sum-dtype": lambda v: np.sum(v, axis=(), dtype=np.float64), "x.sum": lambda v: v.sum(axis=()),
    "prod": lambda v: np.prod(v, axis=()), "add.reduce": lambda v: np.add.reduce(v, axis=()),
    "multiply.reduce": lambda v: np.multiply.reduce(v, axis=()), "nansum": lambda v: np.nansum(v, axis=()),
    "mean": lambda v: np.mean(v, axis=()), "var": lambda v: np.var(v, axis=()), "max": lambda v: np.max(v, axis=()),
    "min": lambda v: np.min(v, axis=()), "nanmax": lambda v: np.nanmax(v, axis=()),
    "maximum.reduce": lambda v: np.maximum.reduce(v, axis=()), "median": lambda v: np.median(v, axis=()),
    "logaddexp.reduce": lambda v: np.logaddexp.reduce(v, axis=()),
}


@pytest.mark.parametrize("name", sorted(_OVER_NO_AXIS))
def test_a_reduction_over_no_axis_is_a_new_array_as_numpys(name):
    from tests.helpers import central_diff

    def f(v):
        s = _OVER_NO_AXIS[name](v)
        s[0, 1] = 7.0
        return v + 2.0 * s

    x = np.array([[0.4, -1.3, 2.6], [-0.2, 3.7, 1.1]])
    assert_allclose(_jacobian(f, x), central_diff(f, x), rtol=1e-6, atol=1e-8)
    assert_allclose(Recording(f, (x,), (0,)).outputs[0], f(x.copy()), rtol=1e-15)


def test_std_over_one_entry_per_slice_has_derivative_0_in_both_modes():
    # a - mean(a) is a - a there: std is 0 whatever a is (NaN only where a is not finite)
    a = np.array([[1.0, 2.0, 3.0]])
    value, g = jaccli.vjp(lambda x: np.std(x, axis=0), a, np.ones(3))
    assert np.array_equal(value, np.zeros(3)) and np.array_equal(g, np.zeros((1, 3)))
    assert np.array_equal(jaccli.jvp(lambda x: np.std(x, axis=0), a, np.ones((1, 3)))[1], np.zeros(3))
    assert jaccli.grad(np.std, np.array(2.0)) == 0.0
    for mode in ("forward", "reverse"):
        J = np.asarray(jaccli.jacobian(lambda x: np.std(x, axis=1, keepdims=True), np.array([[1.0], [4.0]]),
                                       mode=mode))
        assert np.array_equal(J, np.zeros((2, 1, 2, 1))), mode
    nan_row = np.array([[1.0], [np.nan]])
    assert np.array_equal(jaccli.vjp(lambda x: np.std(x, axis=1), nan_row, np.ones(2))[0], [0.0, np.nan],
                          equal_nan=True)
