"""What HIPS autograd's test suite, run with jaccli as its engine, found (issue 39): nested jvp with a traced
vector, lists of arrays as outputs, operators that defer to other array types, np.r_ and np.c_, the
remainder in its divisor, np.real_if_close, and NumPy scalar types of traced values."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import jaccli
from jaccli.errors import TracingError, UnsupportedOperationError


def test_jvp_with_create_graph_differentiates_in_its_traced_vector():
    x, v = np.array([0.3, 0.5, -1.2]), np.array([1.0, 2.0, 0.5])
    J = jaccli.jacobian(lambda v: jaccli.jvp(np.sin, (x,), (v,), create_graph=True)[1], v)
    assert_allclose(np.asarray(J), np.diag(np.cos(x)), rtol=1e-14)
    # and in x and v at once: d/dx (cos(x) * x) along the diagonal
    H = jaccli.jacobian(lambda x: jaccli.jvp(np.sin, (x,), [x], create_graph=True)[1], x)
    assert_allclose(np.asarray(H), np.diag(np.cos(x) - x * np.sin(x)), rtol=1e-14)


def test_a_list_of_arrays_is_a_tuple_of_outputs_and_a_list_of_scalars_one_vector():
    x = np.arange(6.0)
    parts = jaccli.jacobian(lambda x: np.split(x, [1, 3]), x)
    assert isinstance(parts, tuple) and len(parts) == 3
    for block, rows in zip(parts, ([0], [1, 2], [3, 4, 5])):
        assert_allclose(np.asarray(block), np.eye(6)[rows])
    even = jaccli.jacobian(lambda x: np.split(x, 3), x)
    assert [np.shape(b) for b in even] == [(2, 6)] * 3
    assert_allclose(np.asarray(jaccli.jacobian(lambda x: [x[0] ** 2, x[1]], x)), np.eye(6)[:2] * [[0.0], [1.0]])
    value, ct = jaccli.vjp(lambda x: [x, x[:2] * 2.0], x, (np.ones(6), np.ones(2)))
    assert isinstance(value, tuple)
    assert_allclose(ct, [3.0, 3.0, 1.0, 1.0, 1.0, 1.0])


class _Labelled:
    """A small array type of its own, as xarray's DataArray is: no __array_ufunc__, a high priority."""

    __array_priority__ = 50.0

    def __init__(self, values):
        self.values = values

    def __mul__(self, other):
        return _Labelled(other * self.values)

    __rmul__ = __mul__

    def __radd__(self, other):
        return _Labelled(other + self.values)


class _OptsOut:
    """A type that opts out of NumPy's ufuncs (__array_ufunc__ = None)."""

    __array_ufunc__ = None

    def __rsub__(self, other):
        return "opted out"


def test_operators_defer_to_types_that_defer_as_ndarray_does():
    seen = []

    def f(x):
        product = x * _Labelled(np.array([2.0, 3.0]))
        seen.append((type(product), type(np.ones(2) * _Labelled(1.0))))
        seen.append((x - _OptsOut(), np.ones(2) - _OptsOut()))
        assert type(x + _Labelled(1.0)) is _Labelled
        return product.values
    J = jaccli.jacobian(f, np.array([1.0, 4.0]))
    assert seen[0] == (_Labelled, _Labelled)
    assert seen[1] == ("opted out", "opted out")
    assert_allclose(np.asarray(J), np.diag([2.0, 3.0]))


def test_r_and_c_join_traced_values():
    x = np.array([1.0, 2.0])
    J = np.asarray(jaccli.jacobian(lambda x: np.r_[x, 3.0, x[0], 0:2], x))
    assert_allclose(J, [[1, 0], [0, 1], [0, 0], [1, 0], [0, 0], [0, 0]])
    C = np.asarray(jaccli.jacobian(lambda x: np.c_[x, 2.0 * x], x))  # (2, 2) output, columns x and 2x
    assert_allclose(C, np.stack([np.eye(2), 2.0 * np.eye(2)], axis=1))


def test_r_with_a_directive_string_is_refused_naming_np_r():
    with pytest.raises(UnsupportedOperationError, match=r"np\.r_\[\.\.\.\] with a directive string"):
        jaccli.jacobian(lambda x: np.r_["0,2", x, x], np.ones(2))


def test_remainder_differentiates_in_its_divisor_too():
    x, y = np.array([5.3, -2.2, 0.7]), np.array([1.1, 0.9, -0.4])
    J = jaccli.jacobian(lambda y: np.mod(x, y) + x % y + np.fmod(x, y), y)
    assert_allclose(np.asarray(J), np.diag(-2.0 * np.floor_divide(x, y) - np.trunc(x / y)))


def test_real_if_close_of_a_real_array_is_the_identity():
    assert_allclose(np.asarray(jaccli.jacobian(lambda x: np.real_if_close(x) * 2.0, np.ones(3))), 2.0 * np.eye(3))


def test_a_numpy_integer_scalar_of_a_traced_value_says_it_cuts_the_derivative():
    with pytest.raises(TracingError, match=r"np\.int64\(\.\.\.\) takes a traced value out of jaccli's recording, so "
                                           r"its derivative is lost"):
        jaccli.jacobian(lambda x: np.int64(x[0]) * x, np.array([1.5, 2.0]))
