"""NumPy functions built from other supported operations: their values are NumPy's own, and what
they refuse, NumPy refuses too (their derivatives are checked by the rules table)."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli

from jaccli.engine.recording import Recording
from jaccli.errors import UnsupportedOperationError
from tests.helpers import central_diff, refused_as_numpy_refuses


def _traced_value(f, x):
    return Recording(f, [x], [0]).outputs[0]


PAD_WIDTHS = [1, (2,), (1, 3), [(0, 2), (3, 1)], ((4, 0),), {1: (5, 2)}, {0: 3, -1: (0, 1)}]


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("width", PAD_WIDTHS, ids=str)
def test_pad_copy_modes_give_numpys_values(mode, width):
    x = np.arange(6.0).reshape(2, 3) ** 1.5
    f = lambda a: np.pad(a, width, mode=mode)  # noqa: E731
    np.testing.assert_array_equal(_traced_value(f, x), f(x))


ODD_PADS = [((5,), 2), ((5,), (11, 6)), ((3,), 20), ((2,), (1, 4)), ((1, 4), ((3, 2), (9, 1))),
            ((3, 2, 2), {1: 7}), ((3, 2, 2), [(2, 5), (0, 1), (9, 0)])] + [((2, 3), w) for w in PAD_WIDTHS]


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
@pytest.mark.parametrize("shape, width", ODD_PADS, ids=str)
def test_pad_odd_reflection_gives_numpys_values(mode, shape, width):
    x = np.arange(float(np.prod(shape))).reshape(shape) ** 1.5  # widths beyond the axis reflect again
    f = lambda a: np.pad(a, width, mode=mode, reflect_type="odd")  # noqa: E731
    traced = _traced_value(f, x)
    assert np.shape(traced) == f(x).shape
    np.testing.assert_array_equal(traced, f(x))


def test_pad_odd_reflection_of_float32_stays_float32_as_in_numpy():
    x = np.linspace(-1, 2, 6, dtype=np.float32).reshape(2, 3)
    f = lambda a: np.pad(a, (4, 1), mode="symmetric", reflect_type="odd")  # noqa: E731
    traced = _traced_value(f, x)
    assert np.asarray(traced).dtype == np.float32
    np.testing.assert_array_equal(traced, f(x))


def test_pad_reflect_type_other_than_odd_is_even_as_in_numpy():
    x = np.arange(4.0) ** 1.5
    f = lambda a: np.pad(a, 5, mode="symmetric", reflect_type="Odd")  # noqa: E731
    np.testing.assert_array_equal(_traced_value(f, x), np.pad(x, 5, mode="symmetric"))
    np.testing.assert_array_equal(_traced_value(f, x), f(x))


@pytest.mark.parametrize("call", [
    lambda a: np.pad(a[:0], 1, mode="reflect"),              # an empty axis cannot be reflected
    lambda a: np.pad(a, 1, mode="edge", constant_values=0),  # a keyword the mode does not take
    lambda a: np.pad(a, -1, mode="wrap"),
    lambda a: np.pad(a[:0], 1, mode="symmetric", reflect_type="odd"),
    lambda a: np.pad(a, 1, mode="reflect", reflect_type="odd", constant_values=0),
    lambda a: np.pad(a, (1, -2), mode="reflect", reflect_type="odd"),
    lambda a: np.pad(a, 1.5),
    lambda a: np.pad(a, (1, 2.0), mode="symmetric", reflect_type="odd"),
], ids=["empty-axis", "keyword", "negative-width", "odd-empty-axis", "odd-keyword", "odd-negative-width",
        "float-width", "odd-float-width"])
def test_pad_copy_modes_refuse_what_numpy_refuses(call):
    x = np.arange(3.0)
    refused_as_numpy_refuses(call, x, _traced_value, errors=(ValueError, TypeError))


WINDOW_CALLS = {
    "int": dict(window_shape=3, axis=1),
    "tuple": dict(window_shape=(2, 2)),
    "axis": dict(window_shape=2, axis=0),
    "negative axes": dict(window_shape=(2, 3), axis=(-1, -2)),
    "axis twice": dict(window_shape=(2, 2), axis=(1, 1)),
}


@pytest.mark.parametrize("name", sorted(WINDOW_CALLS))
def test_sliding_window_view_gives_numpys_values(name):
    x = np.arange(20.0).reshape(4, 5) ** 1.5
    f = lambda a: np.lib.stride_tricks.sliding_window_view(a, **WINDOW_CALLS[name])  # noqa: E731
    np.testing.assert_array_equal(_traced_value(f, x), f(x))


def test_sliding_window_view_refuses_a_window_larger_than_the_axis_as_numpy_does():
    f = lambda a: np.lib.stride_tricks.sliding_window_view(a, 4)  # noqa: E731
    x = np.arange(3.0)
    refused_as_numpy_refuses(f, x, _traced_value)


@pytest.mark.parametrize("func", [np.triu_indices_from, np.tril_indices_from], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape, k", [((3, 3), 0), ((3, 5), 1), ((4, 2), -1), ((2, 3), 7), ((0, 0), 0)], ids=str)
def test_triangle_indices_from_a_traced_array_are_numpys_plain_arrays(func, shape, k):
    seen = []

    def f(x):
        rows, cols = func(x, k=k)
        seen.append((rows, cols))
        return x[rows, cols] ** 2

    x = np.arange(float(np.prod(shape))).reshape(shape)
    Recording(f, [x], [0])
    rows, cols = seen[0]
    want_rows, want_cols = func(x, k)
    assert type(rows) is np.ndarray and type(cols) is np.ndarray
    assert rows.dtype == want_rows.dtype and cols.dtype == want_cols.dtype
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(cols, want_cols)


@pytest.mark.parametrize("func", [np.triu_indices_from, np.tril_indices_from], ids=lambda f: f.__name__)
def test_triangle_indices_from_refuse_what_numpy_refuses(func):
    x = np.arange(3.0)
    refused_as_numpy_refuses(func, x, _traced_value)


# np.linalg's array-API functions, in the forms whose semantics differ from the np.* functions.
LINALG_CALLS = {
    "matmul": lambda x: np.linalg.matmul(x, x.mT),
    "matmul vector": lambda x: np.linalg.matmul(x[0, 0], x[1].T),
    "tensordot": lambda x: np.linalg.tensordot(x, x, axes=([1, 2], [1, 2])),
    "tensordot default": lambda x: np.linalg.tensordot(x[0], x[1]),
    "trace": lambda x: np.linalg.trace(x),
    "trace offset": lambda x: np.linalg.trace(x, offset=-1),
    "trace of a matrix": lambda x: np.linalg.trace(x[1], offset=2),
    "diagonal": lambda x: np.linalg.diagonal(x),
    "diagonal offset": lambda x: np.linalg.diagonal(x, offset=1),
    "matrix_transpose": lambda x: np.linalg.matrix_transpose(x),
    "outer": lambda x: np.linalg.outer(x[0, 0], x[1, 2]),
    "vecdot": lambda x: np.linalg.vecdot(x, x[::-1]),
    "vecdot axis": lambda x: np.linalg.vecdot(x, x, axis=0),
    "vector_norm": lambda x: np.linalg.vector_norm(x),
    "vector_norm axes": lambda x: np.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=3),
    "vector_norm inf": lambda x: np.linalg.vector_norm(x, axis=-1, ord=np.inf),
    "matrix_norm": lambda x: np.linalg.matrix_norm(x),
    "matrix_norm nuc": lambda x: np.linalg.matrix_norm(x, ord="nuc", keepdims=True),
    "matrix_norm 1": lambda x: np.linalg.matrix_norm(x, ord=1),
    "matrix_norm -2": lambda x: np.linalg.matrix_norm(x, ord=-2),
    "cross": lambda x: np.linalg.cross(x[:, :, :3], x[::-1, :, 1:]),
    "cross axis": lambda x: np.linalg.cross(x[:, :, 0].T, x[:, :, 1].T, axis=0),
    "svdvals": lambda x: np.linalg.svdvals(x),
}


@pytest.mark.parametrize("name", sorted(LINALG_CALLS))
def test_linalg_array_api_functions_give_numpys_values(name):
    x = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4))
    f = LINALG_CALLS[name]
    want = f(x)
    got = _traced_value(f, x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("call", [
    lambda x: np.linalg.trace(x[0, 0]),                  # needs at least two dimensions
    lambda x: np.linalg.diagonal(x[0, 0]),
    lambda x: np.linalg.outer(x[0], x[1, 0]),           # 1-D only, unlike np.outer
    lambda x: np.linalg.cross(x[0], x[1]),              # 3-component vectors only
    lambda x: np.linalg.matmul(x[0, 0], 2.0),          # no scalars
    lambda x: np.linalg.tensordot(x, x, 1),           # axes is keyword-only
    lambda x: np.linalg.trace(x, 1),                   # offset is keyword-only
], ids=["trace-1d", "diagonal-1d", "outer-2d", "cross-4", "matmul-scalar", "tensordot-positional-axes",
        "trace-positional-offset"])
def test_linalg_array_api_functions_refuse_what_numpy_refuses(call):
    x = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4))
    refused_as_numpy_refuses(call, x, _traced_value, (ValueError, TypeError))


def _with_nans():
    x = np.random.default_rng(0).uniform(-1, 1, (4, 5, 3))
    x[0, 1, 2] = x[1, 3, 0] = np.nan
    x[2, :, 1] = np.nan  # an all-NaN slice along axis 1
    x[:, 4, :] = np.nan  # and along axes 0 and 2
    return x


NAN_ORDER_CALLS = {
    "nanmedian": lambda a: np.nanmedian(a),
    "nanmedian axis 0": lambda a: np.nanmedian(a, axis=0),
    "nanmedian axis 1 keepdims": lambda a: np.nanmedian(a, axis=1, keepdims=True),
    "nanmedian axes": lambda a: np.nanmedian(a, axis=(0, 2)),
    "nanpercentile": lambda a: np.nanpercentile(a, [10, 50, 95], axis=1),
    "nanpercentile scalar keepdims": lambda a: np.nanpercentile(a, 33, axis=-1, keepdims=True),
    "nanquantile": lambda a: np.nanquantile(a, 0.3),
    "nanquantile ends": lambda a: np.nanquantile(a, [0.0, 0.25, 1.0], axis=(1, 2), keepdims=True),
}


@pytest.mark.filterwarnings("ignore:All-NaN slice encountered")
@pytest.mark.parametrize("name", sorted(NAN_ORDER_CALLS))
def test_nan_order_statistics_give_numpys_values_and_nan_for_all_nan_slices(name):
    x = _with_nans()
    f = NAN_ORDER_CALLS[name]
    want = f(x)
    got = _traced_value(f, x)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)  # NaN where NumPy has NaN


@pytest.mark.filterwarnings("ignore:All-NaN slice encountered")
def test_nan_entries_and_all_nan_slices_get_zero_derivative():
    x = _with_nans()
    f = lambda a: np.nanmedian(a, axis=1)  # noqa: E731
    J = np.asarray(jaccli.jacobian(f, x)).reshape(f(x).size, x.size)
    assert np.all(J[:, np.isnan(x).reshape(-1)] == 0)
    assert np.all(J[np.isnan(f(x)).reshape(-1)] == 0)
    assert np.all(np.isfinite(J))


def test_nanquantile_of_float32_stays_float32_as_in_numpy():
    x = _with_nans()[:, :4].astype(np.float32)
    for f in (lambda a: np.nanquantile(a, 0.3, axis=0), lambda a: np.nanmedian(a, axis=-1)):
        assert _traced_value(f, x).dtype == f(x).dtype == np.float32


def test_emath_sqrt_of_non_negative_inputs_gives_numpys_values():
    x = np.array([0.0, 0.25, 2.0, 9.0])
    np.testing.assert_array_equal(_traced_value(np.emath.sqrt, x), np.emath.sqrt(x))


EMATH_CALLS = {  # inputs where NumPy's answers are real, up to the ends of the domain
    "log": (np.emath.log, [1e-300, 0.25, 1.0, 9.0]),
    "log2": (np.emath.log2, [0.25, 1.0, 2.0, 1e300]),
    "log10": (np.emath.log10, [1e-5, 0.5, 1.0, 1e3]),
    "logn": (lambda a: np.emath.logn(a[0], a[1:]), [3.0, 0.5, 1.0, 27.0]),
    "logn, plain base": (lambda a: np.emath.logn(2.0, a), [0.5, 1.0, 8.0, 10.0]),
    "logn, plain x": (lambda a: np.emath.logn(a, 100.0), [0.5, 2.0, 10.0, 1e3]),
    "power": (lambda a: np.emath.power(a, a[::-1]), [0.0, 0.25, 2.0, 9.0]),
    "power, negative integer exponents": (lambda a: np.emath.power(a, np.array([-1, -2, 3, 0])), [0.5, 2.0, 3.0, 9.0]),
    "power, traced exponent": (lambda a: np.emath.power(2.0, a), [-1.5, 0.0, 0.5, 3.0]),
    "arccos": (np.emath.arccos, [-1.0, -0.5, 0.0, 1.0]),
    "arcsin": (np.emath.arcsin, [-1.0, 0.25, 0.75, 1.0]),
    "arctanh": (np.emath.arctanh, [-0.99, -0.25, 0.0, 0.5]),
}


@pytest.mark.parametrize("name", sorted(EMATH_CALLS))
def test_emath_functions_in_their_real_domain_give_numpys_values(name):
    f, x = EMATH_CALLS[name]
    x = np.array(x)
    want = f(x)
    assert want.dtype == np.float64  # NumPy's own answer is real here
    np.testing.assert_array_equal(_traced_value(f, x), want)


TRACE_DTYPE_CALLS = {
    "float32": lambda a: np.trace(a, dtype=np.float32),
    "float32 input, float64": lambda a: np.trace(a.astype(np.float32), dtype=np.float64),
    "int truncates each entry": lambda a: np.trace(a, dtype=int),
    "offset and axes": lambda a: np.trace(a[None], 1, 1, 2, np.float32),
    "method": lambda a: a.trace(dtype=np.float32),
    "method, positional": lambda a: a.trace(-1, 0, 1, np.float32),
}


@pytest.mark.parametrize("name", sorted(TRACE_DTYPE_CALLS))
def test_trace_with_dtype_gives_numpys_value_and_dtype(name):
    f = TRACE_DTYPE_CALLS[name]
    x = np.arange(12.0).reshape(3, 4) ** 1.5
    traced = _traced_value(f, x)
    assert np.asarray(traced).dtype == f(x).dtype
    np.testing.assert_array_equal(traced, f(x))


FUNC1D = {
    "scalar": lambda v: np.sum(v ** 2),
    "vector": lambda v: np.cumsum(v) * v,
    "shorter vector": lambda v: v[:2] * v[-1],
    "matrix": lambda v: np.outer(v, v[:2]),
    "3-d": lambda v: np.reshape(np.outer(v, v), (1,) + v.shape * 2) + 1,
    "list": lambda v: [v[0], v[1] * 2],
    "plain": lambda v: np.ones(3),
}


@pytest.mark.parametrize("result", sorted(FUNC1D))
@pytest.mark.parametrize("shape, axis", [((4,), 0), ((3, 4), 0), ((3, 4), -1), ((2, 3, 4), 1), ((2, 3, 4), -3),
                                         ((2, 2, 3, 2), 2), ((2, 2, 3, 2), 3)], ids=str)
def test_apply_along_axis_gives_numpys_values_and_shape(result, shape, axis):
    f = lambda a: np.apply_along_axis(FUNC1D[result], axis, a)  # noqa: E731
    x = np.arange(float(np.prod(shape))).reshape(shape) ** 1.5 + 1
    traced, want = np.asarray(_traced_value(f, x)), f(x)
    assert traced.shape == want.shape
    np.testing.assert_array_equal(traced, want)


def test_apply_along_axis_passes_extra_arguments_and_broadcasts_later_results_as_numpy_does():
    f = lambda a: np.apply_along_axis(lambda v, p, s=1.0: s * v[:1 + (v[0] > 1)] ** p, 1, a, 2, s=3.0)  # noqa: E731
    x = np.array([[2.0, 1.0, 1.0], [0.5, 1.0, 4.0]])  # the second row's result broadcasts to the first's shape
    np.testing.assert_array_equal(_traced_value(f, x), f(x))


@pytest.mark.parametrize("call, shape", [
    (lambda a: np.apply_along_axis(np.sum, 2, a), (2, 3)),
    (lambda a: np.apply_along_axis(np.sum, 1, a[:0]), (2, 3)),
    (lambda a: np.apply_along_axis(lambda v: v[:2] if v[0] < 1 else v, 1, a), (2, 3)),
], ids=["axis", "empty", "shapes"])
def test_apply_along_axis_refuses_what_numpy_refuses(call, shape):
    x = np.arange(6.0).reshape(shape)
    refused_as_numpy_refuses(call, x, _traced_value)


PIECEWISE_CALLS = {
    "constants": lambda a: np.piecewise(a, [a < 0, a >= 0], [-1, 1]),
    "abs": lambda a: np.piecewise(a, [a < 0, a >= 0], [lambda t: -t, lambda t: t]),
    "otherwise": lambda a: np.piecewise(a, [a < -1, a > 1], [lambda t: t ** 2, np.sin, lambda t: 3 * t]),
    "later condition wins": lambda a: np.piecewise(a, [a < 1, a > -1], [lambda t: t ** 2, lambda t: t ** 3]),
    "single condition": lambda a: np.piecewise(a[1], a[1] > 0, [lambda t: t ** 2, 0.5]),
    "function sees its part only": lambda a: np.piecewise(a[1], a[1] > 0, [lambda t: t - t.mean()]),
    "extra arguments": lambda a: np.piecewise(a, [a > 0], [lambda t, p, s=1: s * t ** p, lambda t, p, s=1: -t], 2, s=3),
    "no condition holds": lambda a: np.piecewise(a, [a > 10], [lambda t: t ** 2]),
    "0-d": lambda a: np.piecewise(a[0], [a[0] < 0, a[0] >= 0], [lambda t: -t, lambda t: t * 2]),
    "0-d, one condition": lambda a: np.piecewise(a[1], a[1] < 0, [lambda t: -t, lambda t: t * 2]),
    "traced constants": lambda a: np.piecewise(a, [a < 0], [a[0, 0], a[1, 1]]),
    "stacked conditions": lambda a: np.piecewise(a, np.stack([a < 0, a > 1]), [np.exp, np.log]),
    "numeric condition": lambda a: np.piecewise(a, [a + 2], [np.exp, np.sin]),
    "list of traced values": lambda a: np.piecewise([a[0, 0], a[1, 2] * 2], [[True, False]],
                                                    [np.sin, lambda t: t ** 2]),
    "tuple of traced rows": lambda a: np.piecewise((a[0], a[2] ** 2), [a[:2] < 0], [np.exp, lambda t: -t]),
    "list with a plain row": lambda a: np.piecewise([a[1], [1.0, -2.0, 3.0, -4.0]], [a[:2] > 0], [lambda t: t ** 3]),
}


@pytest.mark.parametrize("name", sorted(PIECEWISE_CALLS))
def test_piecewise_gives_numpys_values(name):
    f = PIECEWISE_CALLS[name]
    x = np.linspace(-2, 2, 12).reshape(3, 4)
    traced = _traced_value(f, x)
    assert np.shape(traced) == np.shape(f(x))
    np.testing.assert_array_equal(traced, f(x))


@pytest.mark.parametrize("name", ["abs", "constants", "no condition holds", "traced constants"])
def test_piecewise_of_float32_stays_float32_as_in_numpy(name):
    f = PIECEWISE_CALLS[name]
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    traced = _traced_value(f, x)
    assert np.asarray(traced).dtype == f(x).dtype == np.float32
    np.testing.assert_array_equal(traced, f(x))


def test_piecewise_refuses_a_wrong_number_of_functions_as_numpy_does():
    f = lambda a: np.piecewise(a, [a < 0, a > 1], [np.exp])  # noqa: E731
    x = np.arange(3.0)
    refused_as_numpy_refuses(f, x, _traced_value)


def test_piecewise_differentiates_the_branch_each_entry_takes_only():
    f = lambda a: np.piecewise(a, [a < 0, a > 1], [lambda t: t ** 2, np.log, np.sqrt])  # noqa: E731
    x = np.array([-1.0, 0.25, 4.0])  # log and sqrt are NaN at -1, which takes another branch
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), np.diag([-2.0, 1.0, 0.25]), rtol=1e-15)


def test_piecewise_replayed_where_the_conditions_change_gives_a_fresh_recordings_jacobian():
    f = jaccli.record_once(lambda a: np.piecewise(a, [a < 0], [lambda t: t ** 3, lambda t: np.sin(t)]))
    for x in (np.array([-1.0, 2.0]), np.array([-2.0, 1.0]), np.array([1.0, -2.0])):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), np.diag(np.where(x < 0, 3 * x ** 2, np.cos(x))),
                                   rtol=1e-15)
    assert f.records == 2 and f.replays == 1


def test_piecewise_with_a_numeric_traced_condition_replays_while_its_truth_is_unchanged():
    f = jaccli.record_once(lambda a: np.piecewise(a, [a - 1], [np.sin, lambda t: t ** 2]))
    for x in (np.array([0.5, 1.0, 3.0]), np.array([0.25, 1.0, 2.0])):
        want = np.diag(np.where(x - 1 != 0, np.cos(x), 2 * x))
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), want, rtol=1e-15)
    assert f.records == 1 and f.replays == 1


# ---------------------------------------------------------------------------
# dtype= of the reductions: entries cast to dtype first, the result of that dtype (as NumPy)
# ---------------------------------------------------------------------------
DTYPE_REDUCTIONS = {
    "np.sum": lambda a, d: np.sum(a, dtype=d),
    "np.sum, dtype by position": lambda a, d: np.sum(a, 1, d),
    "np.mean": lambda a, d: np.mean(a, axis=0, dtype=d),
    "np.prod": lambda a, d: np.prod(a, dtype=d),
    "np.cumsum": lambda a, d: np.cumsum(a, dtype=d),
    "np.nansum": lambda a, d: np.nansum(a, axis=1, dtype=d),
    "np.add.reduce": lambda a, d: np.add.reduce(a, 0, d),
    "np.multiply.accumulate": lambda a, d: np.multiply.accumulate(a, 1, d),
    "x.sum": lambda a, d: a.sum(dtype=d),
    "x.cumprod": lambda a, d: a.cumprod(dtype=d),
    "x.var": lambda a, d: a.var(dtype=d) if d is not int else a.var(),
}


@pytest.mark.parametrize("dtype", [int, np.float32, np.float64])
@pytest.mark.parametrize("fn", DTYPE_REDUCTIONS.values(), ids=DTYPE_REDUCTIONS.keys())
def test_reductions_honour_dtype_as_numpy_does(fn, dtype):
    x = np.arange(1.0, 7.0).reshape(2, 3) ** 1.5  # not integers: dtype=int truncates each entry first
    want = fn(x, dtype)
    got = Recording(lambda a: fn(a, dtype), [x], [0]).outputs[0]
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    J = np.asarray(jaccli.jacobian(lambda a: fn(a, dtype), x))
    if dtype is int and fn is not DTYPE_REDUCTIONS["x.var"]:
        assert not J.any()  # integer results carry no derivative
    else:
        np.testing.assert_allclose(J.reshape(np.shape(want) + x.shape), central_diff(lambda a: fn(a, np.float64), x),
                                   rtol=1e-4, atol=1e-3)


QUANTILES = {"np.quantile": (np.quantile, 0.5), "np.percentile": (np.percentile, 50.0),
             "np.nanquantile": (np.nanquantile, 0.5), "np.nanpercentile": (np.nanpercentile, 50.0)}


@pytest.mark.parametrize("name", sorted(QUANTILES))
def test_quantiles_refuse_what_numpy_refuses_and_name_what_jaccli_does_not_support(name):
    func, q = QUANTILES[name]
    x = np.arange(1.0, 7.0)
    refused_as_numpy_refuses(lambda a: func(a, q * 3), x, _traced_value)            # q out of range
    refused_as_numpy_refuses(lambda a: func(a, q, method="bogus"), x, _traced_value)
    refused_as_numpy_refuses(lambda a: func(a, q, weights=np.ones(6)), x, _traced_value)  # needs inverted_cdf
    for kwargs, what in ((dict(method="nearest"), f"{name} with method='nearest' is not supported by jaccli"),
                         (dict(method="inverted_cdf", weights=np.ones(6)), f"{name} with weights is not supported")):
        with pytest.raises(UnsupportedOperationError) as error:
            _traced_value(lambda a: func(a, q, **kwargs), x)
        assert str(error.value).startswith(f"{__file__}:") and what in str(error.value)


_MASK = np.array([[True, False, True], [True, True, False]])
METHOD_CALLS = {  # ndarray's methods take its own parameters, positional ones in its order
    "x.std(where=)": lambda x: x.std(where=_MASK),
    "x.var(where=, ddof=)": lambda x: x.var(axis=1, ddof=1, where=_MASK),
    "x.sum(axis, dtype, out, keepdims)": lambda x: x.sum(0, None, None, True),
    "x.mean(axis, dtype, out, keepdims)": lambda x: x.mean(1, None, None, True),
    "x.prod(initial=, where=)": lambda x: x.prod(axis=1, initial=2.0, where=_MASK),
    "x.max(axis, out, keepdims)": lambda x: x.max(1, None, True),
    "x.min(initial=)": lambda x: x.min(axis=0, initial=0.5),
    "x.var(axis, dtype, out, ddof)": lambda x: x.var(0, None, None, 1),
    "x.take(mode='wrap')": lambda x: x.take([0, 7, -8], mode="wrap"),
    "x.take(mode='clip')": lambda x: x.take([[0, 9]], axis=None, mode="clip"),
    "x.cumsum(axis, dtype, out)": lambda x: x.cumsum(1, None, None),
    "x.clip(min, max)": lambda x: x.clip(0.0, 1.0),
    "x.round(decimals, out)": lambda x: x.round(1, None) * x,
    "x.sort(kind=)": lambda x: _sorted(x, kind="stable"),
}


def _sorted(x, **kw):
    y = x * 1.0
    y.sort(axis=1, **kw)
    return y


@pytest.mark.parametrize("name", list(METHOD_CALLS))
def test_ndarray_methods_take_numpys_parameters(name):
    call = METHOD_CALLS[name]
    x = np.array([[0.3, 1.7, -0.4], [2.2, 0.9, 0.6]])
    np.testing.assert_array_equal(_traced_value(call, x), call(x))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(call, x)).reshape(-1, x.size),
                               central_diff(call, x).reshape(-1, x.size), rtol=1e-7, atol=1e-8)


def test_reshape_with_copy_is_a_new_array():
    if np.lib.NumpyVersion(np.__version__) < "2.1.0":
        pytest.skip("reshape's copy= is NumPy 2.1's")

    def f(x):
        y = x * 1.0
        z = y.reshape(2, 3, copy=True)
        z[0] = 0.0  # in NumPy, y is left as it was
        w = np.reshape(y, (3, 2), copy=True)
        w[1] += x[0]
        return np.concatenate([y, z.ravel(), w.ravel()])

    x = np.array([0.3, 1.7, -0.4, 2.2, 0.9, 0.6])
    np.testing.assert_array_equal(_traced_value(f, x), f(x))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), central_diff(f, x), rtol=1e-7, atol=1e-8)
