"""Calls NumPy rejects are rejected under tracing too, with NumPy's error: never a silent result."""

from __future__ import annotations

import itertools
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
def test_a_complex_value_made_of_a_traced_one_is_differentiated_not_cut_to_its_real_part(call):
    # (these were refused while jaccli differentiated real computations only; issue 39)
    from tests.helpers import central_diff

    J = np.asarray(jaccli.jacobian(call, X1))
    # (a wide step: each is linear in x or constant, and complex64 rounds a narrow one)
    fd = (central_diff(lambda x: np.real(call(x)), X1, h=1e-2)
          + 1j * central_diff(lambda x: np.imag(call(x)), X1, h=1e-2))
    np.testing.assert_allclose(J, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [lambda x: np.sin(x, where=x > 0.15), lambda x: np.divide(1.0, x, where=x > 0.15)],
                         ids=["sin", "divide"])
def test_a_ufunc_called_with_where_but_no_out_is_refused_at_the_users_line(call):
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


_DTYPE_REDUCTIONS = {
    "sum": lambda x, d: np.sum(x, dtype=d), "mean": lambda x, d: np.mean(x, dtype=d),
    "var": lambda x, d: np.var(x, dtype=d), "std": lambda x, d: np.std(x, dtype=d),
    "prod": lambda x, d: np.prod(x, dtype=d), "cumsum": lambda x, d: np.cumsum(x, dtype=d),
    "cumprod": lambda x, d: np.cumprod(x, dtype=d), "nansum": lambda x, d: np.nansum(x, dtype=d),
    "nanmean": lambda x, d: np.nanmean(x, dtype=d), "nanvar": lambda x, d: np.nanvar(x, dtype=d),
    "nanprod": lambda x, d: np.nanprod(x, dtype=d), "nancumsum": lambda x, d: np.nancumsum(x, dtype=d),
    "add.reduce": lambda x, d: np.add.reduce(x, dtype=d),
    "multiply.reduce": lambda x, d: np.multiply.reduce(x, dtype=d),
    "add.accumulate": lambda x, d: np.add.accumulate(x, dtype=d),
    "multiply.accumulate": lambda x, d: np.multiply.accumulate(x, dtype=d),
    "add.reduceat": lambda x, d: np.add.reduceat(x, [0, 2], dtype=d),
    "maximum.reduce": lambda x, d: np.maximum.reduce(x, dtype=d),
    "minimum.accumulate": lambda x, d: np.minimum.accumulate(x, dtype=d),
    "logaddexp.reduce": lambda x, d: np.logaddexp.reduce(x, dtype=d),
    "trace": lambda x, d: np.trace(np.diag(x), dtype=d), "x.sum": lambda x, d: x.sum(dtype=d),
    "x.cumprod": lambda x, d: x.cumprod(dtype=d),
}
if hasattr(np, "cumulative_sum"):
    _DTYPE_REDUCTIONS["cumulative_sum"] = lambda x, d: np.cumulative_sum(x, dtype=d)
    _DTYPE_REDUCTIONS["cumulative_prod"] = lambda x, d: np.cumulative_prod(x, dtype=d)
_NOT_REAL = [str, "U5", "S3", object, "datetime64", "M8[s]", "timedelta64", "m8[s]", "V8", complex, np.complex64]


@pytest.mark.parametrize("dtype", _NOT_REAL, ids=str)
@pytest.mark.parametrize("name", sorted(_DTYPE_REDUCTIONS))
def test_a_reduction_to_a_dtype_without_real_numbers_fails_as_numpy_does_or_names_the_float_dtype(name, dtype):
    from tests.helpers import central_diff

    fn = lambda v: _DTYPE_REDUCTIONS[name](v, dtype)  # noqa: E731
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            want = fn(X1)
    except Exception as refusal:  # noqa: BLE001 - NumPy's error is the reference, type and message
        with pytest.raises(type(refusal)) as error:
            np.asarray(jaccli.jacobian(fn, X1))
        assert str(error.value) == str(refusal)
        return
    # object and complex sums hold no real derivative, whatever NumPy's mean then makes of them
    if np.dtype(dtype).kind in "Oc" or not isinstance(want, (np.ndarray, np.generic)) or want.dtype.kind not in "biuf":
        with pytest.raises(UnsupportedOperationError, match=r"\(\.\.\., dtype=\w+\) of a traced array is not "
                                                            r"supported by jaccli: derivatives need a real floating "
                                                            r"dtype") as info, warnings.catch_warnings():
            warnings.simplefilter("error")  # the one line, and no warning of jaccli's probe of the dtype
            np.asarray(jaccli.jacobian(fn, X1))
        assert str(info.value).startswith(f"{__file__}:")
        return
    value, _ = jaccli.vjp(fn, X1, np.ones(np.shape(want)))
    assert value.dtype == want.dtype
    np.testing.assert_allclose(value, want, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(fn, X1)), central_diff(fn, X1), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, bool], ids=str)
@pytest.mark.parametrize("name", ["trace", "cumulative_sum", "cumulative_prod"])
def test_trace_and_cumulative_sums_compute_in_their_dtype_as_numpy_does(name, dtype):
    from tests.helpers import central_diff

    if name not in _DTYPE_REDUCTIONS:
        return  # NumPy < 2.1 has no cumulative_sum
    fn = lambda v: _DTYPE_REDUCTIONS[name](v, dtype)  # noqa: E731
    x = np.array([0.4, -1.3, 2.6, -0.2])
    want = fn(x)
    value, _ = jaccli.vjp(fn, x, np.ones(np.shape(want)))
    assert value.dtype == want.dtype
    np.testing.assert_allclose(value, want, rtol=1e-6)
    fd = central_diff(lambda v: np.asarray(fn(v), dtype=np.float64), x, h=1e-3)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(fn, x)), fd, rtol=1e-3, atol=1e-9)


_VARIANCES = {"var": np.var, "std": np.std, "nanvar": np.nanvar, "nanstd": np.nanstd}


def _as_numpy_in_its_dtype(fn, x, reference):
    """fn(x) under tracing: NumPy's refusal (type and message), or NumPy's value and dtype with the
    derivative 0 where the result is of integers or booleans, else reference's (central differences).

    Returns:
        NumPy's value and jaccli's Jacobian; (None, None) where NumPy refuses.
    """
    from tests.helpers import central_diff

    try:
        want = fn(x)
    except (TypeError, ValueError) as refusal:
        with pytest.raises(type(refusal)) as error:
            jaccli.jvp(fn, x, np.ones_like(x))
        assert str(error.value) == str(refusal)
        return None, None
    value, _ = jaccli.vjp(fn, x, np.ones(np.shape(want)))
    assert value.dtype == want.dtype
    jac = np.asarray(jaccli.jacobian(fn, x))
    if want.dtype.kind in "biu":  # piecewise constant
        np.testing.assert_array_equal(value, want)
        np.testing.assert_array_equal(jac, np.zeros(np.shape(want) + np.shape(x)))
    else:
        np.testing.assert_allclose(value, want, rtol=np.finfo(want.dtype).eps, atol=0)
        np.testing.assert_allclose(jac, central_diff(reference, x), rtol=1e-5, atol=1e-6)
    return want, jac


@pytest.mark.parametrize("ddof", [0, 1, 2.5])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, bool, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("name", sorted(_VARIANCES))
def test_a_variance_in_a_dtype_takes_numpys_steps(name, dtype, ddof):
    # NumPy sums the mean in dtype and casts it to dtype, but takes the deviations in the input's
    # dtype (nanvar) or the one it and the mean give.
    x = np.array([[0.4, -1.3, 2.6], [-0.2, 3.7, 1.1]])
    for axis, v in itertools.product((None, 1), (x, x.astype(np.float32))):
        # (float32 ones: the derivative of the same steps in float64, to float32's rounding)
        _as_numpy_in_its_dtype(lambda u: _VARIANCES[name](u, axis=axis, dtype=dtype, ddof=ddof), v,
                               lambda u: _VARIANCES[name](u, axis=axis, dtype=np.float64, ddof=ddof))


@pytest.mark.parametrize("ddof", [3, 4])
@pytest.mark.parametrize("name", ["var", "std"])
def test_a_variance_without_degrees_of_freedom_is_infinite_as_numpys(name, ddof):
    x = np.array([1.0, 2.5, 4.0])
    fn = lambda v: _VARIANCES[name](v, ddof=ddof)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own "Degrees of freedom <= 0"
        want = fn(x)
        value, _ = jaccli.jvp(fn, x, np.ones_like(x))
    assert value == want == np.inf


_PRODUCTS_WITH_DTYPE = {
    "matmul": lambda x, kw: np.matmul(x, x, **kw),
    "matmul-matrix": lambda x, kw: np.matmul(np.arange(9.0).reshape(3, 3) / 7, x, **kw),
    "einsum": lambda x, kw: np.einsum("i,i", x, x, **kw), "einsum-list": lambda x, kw: np.einsum(x, [0], x, [0], **kw),
    "einsum-outer": lambda x, kw: np.einsum("i,j->ij", x, x, **kw),
}


_PRODUCT_KWARGS = [{"dtype": np.float32}, {"dtype": np.float32, "casting": "same_kind"}, {"dtype": int},
                   {"dtype": int, "casting": "unsafe"}, {"dtype": bool, "casting": "unsafe"}, {"casting": "no"}]
_F32 = {"signature": (np.float32, np.float32, np.float32)}  # matmul's alone: a ufunc's


@pytest.mark.parametrize("name,kw", [(name, kw) for name in sorted(_PRODUCTS_WITH_DTYPE)
                                     for kw in _PRODUCT_KWARGS + ([_F32] if name.startswith("matmul") else [])],
                         ids=lambda p: ",".join(f"{k}={getattr(v, '__name__', v)}" for k, v in p.items())
                         if isinstance(p, dict) else p)
def test_a_product_computes_in_its_dtype_or_refuses_the_cast_as_numpy(name, kw):
    x = np.array([0.3, 1.7, -2.2])
    want, jac = _as_numpy_in_its_dtype(lambda v: _PRODUCTS_WITH_DTYPE[name](v, kw), x,
                                       lambda v: _PRODUCTS_WITH_DTYPE[name](v, {}))
    if want is not None and want.dtype.kind == "f":
        assert np.array_equal(jac, jac.astype(want.dtype))  # the derivative taken in the result's dtype


def test_matmul_over_other_axes_is_refused_by_name():
    a = np.arange(9.0).reshape(3, 3)
    with pytest.raises(UnsupportedOperationError, match=r"np.matmul is supported by jaccli over its default axes only"):
        jaccli.jacobian(lambda x: np.matmul(x, a, axes=[(1, 0), (0, 1), (0, 1)]), a)
