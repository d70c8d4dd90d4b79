"""Calls NumPy rejects are rejected under tracing too, with NumPy's error: never a silent result."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaccli
from jaccli.errors import UnsupportedOperationError
from tests.helpers import refused_as_numpy_refuses

X1 = np.array([0.1, 0.2, 0.3])
X2 = np.arange(6.0).reshape(2, 3) / 10

CASES = {
    "sum axis 5": lambda x: np.sum(x, axis=5),
    "mean axis -3": lambda x: np.mean(x, axis=-3),
    "cumsum axis 3": lambda x: np.cumsum(x, axis=3),
    "concatenate axis 4": lambda x: np.concatenate([x, x], axis=4),
    "stack axis 7": lambda x: np.stack([x, x], axis=7),
    "flip axis 3": lambda x: np.flip(x, 3),
    "moveaxis 3": lambda x: np.moveaxis(x, 3, 0),
    "swapaxes 4": lambda x: np.swapaxes(x, 0, 4),
    "transpose axis 3": lambda x: np.transpose(x, (0, 3)),
    "norm axis 4": lambda x: np.linalg.norm(x, axis=4),
    "tensordot axis 1 of a vector": lambda x: np.tensordot(x, x, axes=([0], [1])),
    # before: contracted as flattened axes, silently (the sizes' products agree)
    "tensordot axes whose sizes differ pairwise": lambda x: np.tensordot(x, x.T, axes=([0, 1], [0, 1])),
    "tensordot axes=1 of sizes that differ": lambda x: np.tensordot(x, np.ones((4, 2)), axes=1),
    "dot with a 3-D operand not aligned": lambda x: np.dot(x, np.ones((2, 5, 3))),
    "einsum too many subscripts": lambda x: np.einsum("ii", x),
    "einsum ij-> on a vector": lambda x: np.einsum("ij->", x),
    "einsum too few subscripts": lambda x: np.einsum("i", np.outer(x, x)),
    "einsum output label not in inputs": lambda x: np.einsum("i->j", x),
    "einsum lengths that do not match": lambda x: np.einsum("i,i->i", x, x[:2]),
    "max with where= but no initial=": lambda x: np.max(x, where=x > 0.15),
    "min with where= but no initial=": lambda x: np.minimum.reduce(x, axis=None, where=x > 0.15),
}


@pytest.mark.parametrize("x", [X1, X2], ids=["1-D", "2-D"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_what_numpy_rejects_jaccli_rejects_with_the_same_error(name, x):
    f = CASES[name]
    try:
        f(x.copy())
    except Exception as exc:  # noqa: BLE001 - the error NumPy gives is the reference
        expected = type(exc)
    else:
        np.asarray(jaccli.jacobian(f, x))  # NumPy accepts it here: so must jaccli
        return
    with pytest.raises(expected):
        np.asarray(jaccli.jacobian(f, x))


def test_valid_negative_axes_still_work():
    f = lambda x: np.sum(np.cumsum(x, axis=-1), axis=-2) * np.mean(x, axis=(-1, -2))  # noqa: E731
    J = np.asarray(jaccli.jacobian(f, X2))
    eps = 1e-6
    fd = np.stack([(f(X2 + eps * e.reshape(X2.shape)) - f(X2 - eps * e.reshape(X2.shape))) / (2 * eps)
                   for e in np.eye(X2.size)], axis=-1).reshape(J.shape)
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call", [
    lambda x: x + 1j,
    lambda x: np.abs(2j * x),
    lambda x: np.abs(np.exp(1j * x)),
    lambda x: np.abs(x * (1 + 1j)),
    lambda x: np.abs(np.asarray(x, dtype=complex)),
    lambda x: np.abs(x.astype(np.complex64)),
], ids=["output", "abs-of-a-product", "abs-of-exp", "abs-of-a-complex-scale", "asarray", "astype"])
def test_a_complex_value_is_refused_where_it_is_made_not_cut_to_its_real_part(call):
    # Before: a complex value inside f went through np.abs with the rules of real functions, and
    # the derivatives were wrong (d|2i x|/dx came out as -2 sign(x)) with no error.
    with pytest.raises(UnsupportedOperationError, match=r"made a complex array of a traced value: jaccli "
                                                        r"differentiates real-valued computations only") as info:
        np.asarray(jaccli.jacobian(call, X1))
    assert str(info.value).startswith(f"{__file__}:")


@pytest.mark.parametrize("call", [lambda x: np.sin(x, where=x > 0.15), lambda x: np.divide(1.0, x, where=x > 0.15)],
                         ids=["sin", "divide"])
def test_a_ufunc_called_with_where_but_no_out_is_refused_at_the_users_line(call):
    # Before: the mask went through to NumPy, whose result holds uninitialised memory outside it,
    # and the derivative was taken as if every entry had been computed (silently)
    with pytest.raises(UnsupportedOperationError, match=r"np\.\w+ with where= is not supported by jaccli") as info:
        np.asarray(jaccli.jacobian(lambda x: call(x).sum(), X1))
    assert str(info.value).startswith(f"{__file__}:")


def test_a_reduction_with_where_and_a_mask_that_masks_nothing_are_still_supported():
    mask = np.arange(np.size(X1)).reshape(np.shape(X1)) % 2 == 0
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(lambda x: np.add.reduce(x * x, axis=None, where=mask), X1)),
                               np.where(mask, 2 * X1, 0.0), rtol=1e-15)
    every = np.ones(np.shape(X1), dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (NumPy's own, on any where= without out=)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(lambda x: np.multiply(x, x, where=every), X1)),
                                   np.diag(2 * X1), rtol=1e-15)


def test_clip_with_where_is_refused_by_name():
    # NumPy leaves the entries outside the mask undefined: there is no value to differentiate
    with pytest.raises(UnsupportedOperationError, match=r"np.clip with where= is not supported"):
        jaccli.grad(lambda x: np.clip(x, 0.0, 0.25, where=x > 0.15).sum(), X1)


@pytest.mark.parametrize("call", [
    lambda x: np.matmul(x, 2.0),
    lambda x: 2.0 @ x,
    lambda x: np.trace(x),
    lambda x: np.trace(x[0], axis1=-1, axis2=0),
    lambda x: np.dot(x, np.ones((2, 5, 3))),
    lambda x: np.dot(np.ones((2, 2, 3)), x[:2]),
    lambda x: np.dot(np.outer(x, x), np.ones((2, 3))),
], ids=["matmul-by-a-scalar", "scalar-matmul", "trace-of-a-vector", "trace-of-a-number", "dot-not-aligned",
        "dot-3-d-by-a-vector-not-aligned", "dot-matrices-not-aligned"])
def test_what_numpy_rejects_jaccli_rejects_with_numpys_message(call):
    refused_as_numpy_refuses(call, X1, lambda f, x: np.asarray(jaccli.jacobian(f, x)))
