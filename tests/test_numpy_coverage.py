"""NumPy functions built from other supported operations: their values are NumPy's own, and what
they refuse, NumPy refuses too (their derivatives are checked by the rules table)."""

from __future__ import annotations

import numpy as np
import pytest

from jaccli.engine.recording import Recording


def _traced_value(f, x):
    return Recording(f, [x], [0]).outputs[0]


PAD_WIDTHS = [1, (2,), (1, 3), [(0, 2), (3, 1)], ((4, 0),), {1: (5, 2)}, {0: 3, -1: (0, 1)}]


@pytest.mark.parametrize("mode", ["edge", "reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("width", PAD_WIDTHS, ids=str)
def test_pad_copy_modes_give_numpys_values(mode, width):
    x = np.arange(6.0).reshape(2, 3) ** 1.5
    f = lambda a: np.pad(a, width, mode=mode)  # noqa: E731
    np.testing.assert_array_equal(_traced_value(f, x), f(x))


@pytest.mark.parametrize("call", [
    lambda a: np.pad(a[:0], 1, mode="reflect"),              # an empty axis cannot be reflected
    lambda a: np.pad(a, 1, mode="edge", constant_values=0),  # a keyword the mode does not take
    lambda a: np.pad(a, -1, mode="wrap"),
], ids=["empty-axis", "keyword", "negative-width"])
def test_pad_copy_modes_refuse_what_numpy_refuses(call):
    x = np.arange(3.0)
    with pytest.raises(ValueError) as numpy_error:
        call(x)
    with pytest.raises(ValueError) as traced_error:
        _traced_value(call, x)
    assert str(traced_error.value) == str(numpy_error.value)


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
    with pytest.raises(ValueError) as numpy_error:
        f(x)
    with pytest.raises(ValueError) as traced_error:
        _traced_value(f, x)
    assert str(traced_error.value) == str(numpy_error.value)


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
    with pytest.raises(ValueError) as numpy_error:
        func(x)
    with pytest.raises(ValueError) as traced_error:
        _traced_value(func, x)
    assert str(traced_error.value) == str(numpy_error.value)
