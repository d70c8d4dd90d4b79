"""How user code is traced: in-place updates, iteration, np.array of traced values, and escapes."""

from __future__ import annotations

import importlib.util
import inspect
import math
import sys
import textwrap

import numpy as np
import pytest

from jaccli.engine.recording import Recording
from jaccli.errors import TracingError, UnsupportedOperationError


def jacobian(f, x):
    """The full Jacobian of f at x by one reverse sweep with a block of identity seeds."""
    rec = Recording(f, [x], [0])
    out_shape = np.shape(rec.outputs[0])
    m = int(np.prod(out_shape, dtype=int))
    (block,) = rec.vjp([np.eye(m).reshape((m,) + out_shape)])
    return np.zeros((m, np.size(x))) if block is None else np.reshape(block, (m, np.size(x)))


def line_of(func, text: str) -> int:
    """The line number, in func's file, of the first line of func that contains `text`."""
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write source to a real module file, import it, and return the module."""
    def load(source: str, name: str = "user_functions"):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module
    return load


# ---------------------------------------------------------------------------
# In-place updates are functional updates
# ---------------------------------------------------------------------------
def test_item_assignment_replaces_the_derivative_of_that_item():
    def f(x):
        y = x * 1.0
        y[0] = x[2] ** 2
        return y

    x = np.array([1.0, 2.0, 3.0])
    expected = np.array([[0.0, 0.0, 6.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(jacobian(f, x), expected, rtol=1e-12, atol=1e-12)


def test_augmented_assignment_updates_the_traced_array():
    def f(x):
        y = x.copy()
        y += x ** 2
        y *= 2.0
        return y

    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(jacobian(f, x), np.diag(2.0 * (1.0 + 2.0 * x)), rtol=1e-12, atol=1e-12)


def test_masked_in_place_multiply_scales_only_the_masked_items():
    def f(x):
        y = x.copy()
        y[y > 0] *= 2
        return y

    x = np.array([1.0, -2.0, 0.5, -0.1])
    np.testing.assert_allclose(jacobian(f, x), np.diag([2.0, 1.0, 2.0, 1.0]), rtol=1e-12, atol=1e-12)


def test_repeated_indices_last_write_wins_and_reads_accumulate():
    def write(x):
        y = np.zeros_like(x)
        y[[0, 0]] = x[1:]
        return y

    def read(x):
        return x[[0, 0, 1]].sum(keepdims=True)

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(jacobian(write, x), [[0, 0, 1], [0, 0, 0], [0, 0, 0]], atol=0)
    np.testing.assert_allclose(jacobian(read, x), [[2, 1, 0]], atol=0)


def test_writing_into_a_copy_leaves_the_input_alone():
    def f(x):
        y = x.copy()
        y[0] = 0.0
        z = x.astype(np.float64)
        z += 1.0
        return x * 1.0

    np.testing.assert_allclose(jacobian(f, np.array([1.0, 2.0])), np.eye(2), atol=0)


# ---------------------------------------------------------------------------
# Iteration and len
# ---------------------------------------------------------------------------
def test_iterating_over_rows_and_len_follow_the_first_axis():
    def f(x):
        assert len(x) == 3
        return np.stack([row.sum() * i for i, row in enumerate(x)])

    x = np.arange(6.0).reshape(3, 2)
    expected = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 2, 2]], dtype=float)
    np.testing.assert_allclose(jacobian(f, x), expected, atol=0)


def test_split_returns_a_list_of_traced_slices():
    def f(x):
        pieces = np.split(x, [1, 3])
        assert isinstance(pieces, list) and [p.shape for p in pieces] == [(1,), (2,), (1,)]
        return pieces[1] * pieces[0]

    x = np.array([2.0, 3.0, 5.0, 7.0])
    np.testing.assert_allclose(jacobian(f, x), [[3, 2, 0, 0], [5, 0, 2, 0]], atol=0)


def test_sort_gives_tied_values_derivatives_in_their_original_order():
    x = np.array([1.0, 0.0, 1.0, 1.0])
    expected = np.eye(4)[[1, 0, 2, 3]]  # a stable argsort: the tied 1.0s keep the order 0, 2, 3
    np.testing.assert_allclose(jacobian(np.sort, x), expected, atol=0)


# ---------------------------------------------------------------------------
# np.array / np.asarray of traced values, in a real user module
# ---------------------------------------------------------------------------
def test_np_array_of_traced_values_builds_a_traced_array(user_module):
    module = user_module("""
        import numpy as np

        def f(x):
            return np.array([x[0] * x[1], np.sin(x[2]), 2.0])

        def g(x):
            m = np.asarray([[x[0], x[1]], [x[1], x[0] ** 2]])
            return m @ np.array([1.0, 2.0])
    """)
    x = np.array([2.0, 3.0, 0.5])
    np.testing.assert_allclose(jacobian(module.f, x), [[3, 2, 0], [0, 0, np.cos(0.5)], [0, 0, 0]], atol=1e-15)
    np.testing.assert_allclose(jacobian(module.g, x), [[1, 2, 0], [8, 1, 0]], atol=0)
    assert module.np is np  # the module's numpy is put back after the call


# ---------------------------------------------------------------------------
# Escapes name the user's file and line and say what to write instead
# ---------------------------------------------------------------------------
def _escape_site(func, text: str, error: type) -> str:
    with pytest.raises(error) as info:
        Recording(func, [np.array([0.1, 0.2, 0.3])], [0])
    message = str(info.value)
    assert message.startswith(f"{__file__}:{line_of(func, text)}: "), message
    return message


def test_float_of_a_traced_value_is_an_escape():
    def f(x):
        return float(x[0]) * x

    message = _escape_site(f, "float(x[0])", TracingError)
    assert "float()" in message and "use NumPy functions" in message


def test_math_functions_are_an_escape():
    def f(x):
        return math.sin(x[0]) * x

    message = _escape_site(f, "math.sin", TracingError)
    assert "np.sin, not math.sin" in message


def test_writing_traced_items_into_np_zeros_is_an_escape():
    def f(x):
        out = np.zeros(3)
        for i in range(3):
            out[i] = x[i] ** 2
        return out

    message = _escape_site(f, "out[i] =", TracingError)
    assert "np.zeros_like(x)" in message


def test_writing_a_traced_slice_into_np_zeros_is_an_escape():
    def f(x):
        out = np.zeros(3)
        out[:2] = x[1:]
        return out

    message = _escape_site(f, "out[:2] =", TracingError)
    assert "np.zeros_like(x)" in message


def test_unsupported_numpy_function_names_itself_and_the_site():
    def f(x):
        return np.fft.fft(x)

    with pytest.raises(UnsupportedOperationError) as info:
        Recording(f, [np.array([0.1, 0.2])], [0])
    site = f"{__file__}:{line_of(f, 'np.fft.fft')}"
    assert str(info.value) == f"{site}: np.fft.fft is not supported by jaccli; see 'jaccli ops'"


def test_pad_modes_other_than_constant_name_the_mode():
    def f(x):
        return np.pad(x, 1, mode="reflect")

    message = _escape_site(f, "np.pad", UnsupportedOperationError)
    assert "mode='reflect'" in message and "mode='constant'" in message
