"""How user code is traced: in-place updates, iteration, np.array of traced values, and escapes."""

from __future__ import annotations

import copy
import functools
import importlib.util
import inspect
import math
import re
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import jaccli
from jaccli.engine.recording import Recording
from jaccli.engine.tracer import FUNCTION_HANDLERS
from jaccli.errors import TracingError, UnsupportedOperationError
from tests.helpers import central_diff


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


@pytest.mark.parametrize("shape, idx, v_shape", [
    ((3,), np.s_[:2], (1, 2)), ((3,), np.s_[:2], (1, 1, 2)), ((3,), [0, 2], (1, 2)), ((3,), np.s_[1, ...], (1,)),
    ((2, 3), np.s_[:, 0], (1, 2)), ((2, 3), 1, (1, 3)), ((2, 3), np.array([True, False]), (1, 1, 3)),
    ((2, 3), ([0, 1], [1, 2]), (1, 2)), ((2, 3), np.s_[None, 0], (1, 1, 3)),
], ids=["slice", "slice-two-ones", "fancy", "0d-view", "column", "row", "mask", "pairs", "newaxis"])
def test_assigned_values_lose_leading_length_1_axes_as_in_numpy(shape, idx, v_shape):
    # NumPy drops the value's leading length-1 axes and assigns.
    n = int(np.prod(shape))

    def f(z):
        y = z[:n].reshape(shape) * 1.0
        y[idx] = z[n:].reshape(v_shape) ** 2
        return y

    z = np.random.default_rng(0).normal(size=n + int(np.prod(v_shape)))
    fd = central_diff(f, z)
    np.testing.assert_allclose(jacobian(f, z).reshape(fd.shape), fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, z, mode="forward")), fd, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("idx, v_shape, message", [
    (np.s_[:2], (3, 2), "could not broadcast input array from shape (3,2) into shape (2,)"),
    (np.s_[:2], (2, 1), "could not broadcast input array from shape (2,1) into shape (2,)"),
    (1, (1,), "setting an array element with a sequence."),
], ids=["leading-3", "trailing-1", "one-element"])
def test_assigned_values_numpy_refuses_raise_numpys_error(idx, v_shape, message):
    want = None
    try:
        np.zeros(3)[idx] = np.ones(v_shape)
    except ValueError as exc:
        want = str(exc)
    assert want == message  # NumPy refuses these too

    def f(x):
        y = x * 1.0
        y[idx] = np.broadcast_to(x[0], v_shape)
        return y

    with pytest.raises(ValueError, match=re.escape(message)):
        jaccli.jacobian(f, np.array([0.3, 0.7, 1.5]))


def test_writing_rows_into_a_large_traced_array_takes_memory_of_the_rows_not_the_array():
    import tracemalloc

    x = np.random.default_rng(0).normal(size=(1000, 1000))
    peaks = []

    def f(x):
        y = x * 1.0
        w = x[0] * 2.0
        # (the first writes copy y, and count its non-finite entries once: y's size, once)
        for i, (idx, v) in enumerate([(0, w), (1, w), (2, w), (3, w[None]), (np.s_[4:6, :2], w[:2]),
                                      (np.s_[6, ...], w), (7, w[None, None])]):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            y[idx] = v * i
            peaks.append(tracemalloc.get_traced_memory()[1] - before)
        return y

    tracemalloc.start()
    try:
        value, _ = jaccli.vjp(f, x, np.ones(x.shape))
    finally:
        tracemalloc.stop()
    assert_array_equal(value, f(x))
    assert max(peaks[2:7]) < x.nbytes / 50, peaks


@pytest.mark.parametrize("make", [
    lambda x: np.zeros_like(x, shape=(2, x.size)),
    lambda x: np.ones_like(x, shape=(2, x.size)),
    lambda x: np.full_like(x, 7.0, shape=(2, x.size)),
    lambda x: np.empty_like(x, shape=(2, x.size)),
], ids=["zeros_like", "ones_like", "full_like", "empty_like"])
def test_a_buffer_like_x_of_another_shape_can_be_assigned_into(make):
    def f(x):
        y = make(x)
        y[0] = x ** 2
        y[1] = np.sin(x)
        return y

    x = np.array([0.5, 1.0, 2.0])
    J = np.asarray(jaccli.jacobian(f, x))
    assert J.shape == (2, 3, 3)
    np.testing.assert_allclose(J, np.stack([np.diag(2 * x), np.diag(np.cos(x))]), rtol=1e-13, atol=0)
    np.testing.assert_allclose(J, central_diff(f, x), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("kw, slope", [({}, 1.0), ({"shape": (2,)}, 1.0), ({"dtype": np.float32}, 1.0),
                                       ({"dtype": np.float32, "shape": (2, 2)}, 1.0), ({"dtype": np.int64}, 0.0),
                                       ({"dtype": np.int64, "shape": (2,)}, 0.0)])
def test_a_traced_fill_value_is_cast_to_full_likes_dtype(kw, slope):
    def f(x):
        return np.full_like(x, x[0], **kw)

    x = np.array([-2.7, 0.5, 1.0])
    value, tangent = jaccli.jvp(f, x, np.array([1.0, 0.0, 0.0]))
    assert_array_equal(value, f(x))
    assert np.asarray(value).dtype == f(x).dtype
    assert_array_equal(tangent, np.full(np.shape(f(x)), slope))


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


LISTS_OF_TRACED_VALUES = {
    "np.max of a list": "np.max([x[0] * x[1], np.sin(x[2]), 0.1])",
    "np.concatenate with a nested list": "np.concatenate([x, [x.sum(), 2.0]])",
    "np.linalg.norm of a list": "np.linalg.norm([x[0] - x[1], x[2]])",
    "np.full with a traced fill value": "np.full((2, 3), x[0] ** 2)",
    "np.full with a traced row": "np.full((2, 3), [x[0], x[1], 1.0])",
    "np.sum of a list": "np.sum([x[0], 2.0 * x[1]])",
    "np.dot of two lists": "np.dot([x[0], x[1]], [x[2], 1.0])",
    "np.where with a list branch": "np.where(x > 0.5, x, [1.0, x[0], x[1] ** 2])",
    "a ufunc of a list": "np.exp([x[0], x[1] * x[2]])",
    "a ufunc method on a list": "np.maximum.reduce([x[0], x[1], x[2] ** 2])",
    "np.outer of a list and x": "np.outer([x[0], x[1]], x)",
    "a traced array plus a list": "x + [x[0], x[1], 1.0]",
    "np.stack of lists": "np.stack([[x[0], 1.0], [x[1], x[2]]])",
    "np.array with a plain row": "np.array([[x[0], x[1]], [1.0, 2.0]]) @ np.asarray([x[2], 3.0])",
    # Named tuples, as NumPy converts them (before: the generic "converting to a plain array" error)
    "np.array of slogdet's named tuple": "np.array(np.linalg.slogdet(np.outer(x, x) + np.eye(3)))",
    "np.sum of slogdet's named tuple": "np.sum(np.linalg.slogdet(np.diag(x ** 2 + 1)))",
    "np.stack of named tuples": "np.stack([np.linalg.slogdet(np.diag(x + 2)), np.linalg.slogdet(np.diag(x + 3))])",
    # Functions NumPy dispatches on some arguments only (before: a list there was a tracing error)
    "np.interp with a list fp": "np.interp(0.5, [-2.0, 2.0], [x[0], x[1] ** 2]) * x",
    "np.interp with a list xp": "np.interp(0.1, [x[1], x[0] + 1.0], [0.0, 1.0]) * x",
    "np.polyint of a list": "np.polyint([x[0], x[1], x[2]])",
    "np.full_like of a list, traced fill": "np.full_like([0.0, 0.0], x[0] * x[1])",
}


@pytest.mark.parametrize("expr", LISTS_OF_TRACED_VALUES.values(), ids=LISTS_OF_TRACED_VALUES.keys())
def test_lists_holding_traced_values_given_to_numpy_are_traced_arrays(user_module, expr):
    module = user_module(f"""
        import numpy as np

        def f(x):
            return {expr}
    """)
    x = np.array([0.7, -1.3, 0.4])
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(jaccli.jacobian(module.f, x, mode=mode), central_diff(module.f, x),
                                   rtol=1e-7, atol=1e-8)
    assert module.np is np


def test_a_list_of_traced_values_assigned_into_a_traced_array_is_traced(user_module):
    module = user_module("""
        import numpy as np

        def f(x):
            y = x * 1.0
            y[:2] = [x[1], x[0] ** 2]  # before: a tracing error about converting to a plain array
            y[[2, 0]] += (x[2], 3.0)
            return y
    """)
    _both_modes_match_differences(module.f, np.array([0.7, -1.3, 0.4]))


def test_numpy_seen_through_f_keeps_its_types_constants_and_ufunc_methods(user_module):
    module = user_module("""
        import numpy as np

        def f(x):
            assert isinstance(np.ones(1), np.ndarray) and issubclass(np.float64, np.floating)
            assert np.newaxis is None and np.pi > 3 and np.sum.__name__ == "sum"
            return np.add.reduce(np.stack([x, x])) + np.linalg.norm(x) * np.pi
    """)
    x = np.array([0.7, -1.3, 0.4])
    np.testing.assert_allclose(jacobian(module.f, x), central_diff(module.f, x), rtol=1e-7, atol=1e-8)


def _both_modes_match_differences(f, x):
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(jaccli.jacobian(f, x, mode=mode), central_diff(f, x), rtol=1e-7, atol=1e-8)


def test_lists_in_the_users_helper_modules_are_traced_arrays_too(user_module):
    deep = user_module("""
        import numpy as np

        def pair(x):
            return np.array([x[2], x[0] * x[1]])
    """, "helper_deep")
    helper = user_module("""
        import numpy as np
        import helper_deep

        def build(x):
            return np.array([2.0 * x[0], np.sin(x[1])]) + helper_deep.pair(x)
    """, "helper_mid")
    classes = user_module("""
        import numpy as np

        class Model:
            def __call__(self, x):
                return np.asarray([np.max([x[0], x[2]]), np.linalg.norm([x[1], 1.0])])
    """, "helper_classes")
    user = user_module("""
        import numpy as np
        from helper_mid import build
        from helper_classes import Model

        def f(x):
            return np.concatenate([build(x), Model()(x)])
    """, "user_main")
    _both_modes_match_differences(user.f, np.array([0.7, -1.3, 0.4]))
    assert helper.np is np and deep.np is np and classes.np is np  # each module's numpy is put back


def test_numpy_functions_imported_by_name_see_lists_of_traced_values(user_module):
    user = user_module("""
        from numpy import array, max as largest, sin
        from numpy.linalg import norm
        from numpy import linalg

        def f(x):
            return array([largest([x[0], x[1] ** 2]), norm([x[0], x[2]]), linalg.norm([x[1], 2.0]), sin(x[2])])
    """)
    _both_modes_match_differences(user.f, np.array([0.7, -1.3, 0.4]))
    assert (user.array, user.largest, user.norm, user.linalg, user.sin) == \
        (np.array, np.max, np.linalg.norm, np.linalg, np.sin)


def test_a_closure_reaches_the_module_it_closes_over(user_module):
    helper = user_module("""
        import numpy as np

        def loss(x, data):
            return np.array([np.sum(data * x), x[0] * x[1]])
    """, "helper_closed")
    data = np.array([1.0, 2.0, 3.0])

    def make():
        mod = helper  # a module held in a closure cell, as after a local import
        return lambda x: mod.loss(x, data)

    _both_modes_match_differences(make(), np.array([0.7, -1.3, 0.4]))


def test_numpy_held_in_defaults_and_closures_is_the_same_module_as_fs_np(user_module):
    helper = user_module("""
        import numpy as np

        class Backend:
            def apply(self, x, xp=np, *, norm=np.linalg):
                assert xp is np and norm is np.linalg
                return xp.array([norm.norm([x[0], x[1]]), x[2]])
    """, "helper_backend")
    user = user_module("""
        import numpy as np
        from helper_backend import Backend

        def f(x, xp=np, *, lib=np):
            if xp is np and lib is np:
                return np.concatenate([np.sin(x) * x[0], Backend().apply(x)])
            return x * 0.0

        def make():
            import numpy as xp  # a local import: numpy held in the closure's cell

            def g(x):
                return xp.array([x[0] * x[1], x[2]]) if xp is np else x * 0.0
            return g
    """, "user_backend")
    x = np.array([0.7, -1.3, 0.4])
    g = user.make()
    lam = lambda x, xp=np: xp.array([x[0] ** 2, x[1]]) if xp is np else x  # noqa: E731 - f as a lambda
    for fn in (user.f, g, lam):
        _both_modes_match_differences(fn, x)
    np.testing.assert_allclose(jaccli.hessian(lambda x, xp=np: xp.sum(np.array([x[0] ** 3, x[1] * x[2]]))
                                              if xp is np else 0.0 * x[0], x),
                               [[6 * x[0], 0, 0], [0, 0, 1], [0, 1, 0]], atol=1e-12)
    # Everything is put back after the calls
    assert user.f.__defaults__ == (np,) and user.f.__kwdefaults__ == {"lib": np}
    assert helper.Backend.apply.__defaults__[0] is np and helper.Backend.apply.__kwdefaults__["norm"] is np.linalg
    assert g.__closure__[0].cell_contents is np and lam.__defaults__[0] is np


def test_numpy_held_behind_decorators_partials_nested_closures_and_objects_is_swapped_too(user_module):
    user = user_module("""
        import functools
        import numpy as np

        def deco(fn):
            @functools.wraps(fn)
            def wrapper(*a, **k):
                return fn(*a, **k)
            return wrapper

        @deco
        def decorated(x, xp=np):
            return xp.sin(x) if xp is np else -xp.sin(x)

        @functools.lru_cache
        def cached_lib(xp=np):
            return xp is np

        def make():
            import numpy as xp

            def inner(x):
                return xp.sin(x) if xp is np else -xp.sin(x)

            def middle(x):
                return inner(x)

            class Model:
                def __call__(self, x, xp=np):
                    return middle(x) + (xp.cos(x) if xp is np else -xp.cos(x))
            return functools.partial(lambda x, scale: scale * middle(x), scale=2.0), Model()

        def f(x):
            return decorated(x) + (x if cached_lib() else -x)
    """, "user_wrapped")
    x = np.array([0.3, 0.7])
    partial, model = user.make()
    user.cached_lib.cache_clear()
    np.testing.assert_allclose(jaccli.jacobian(user.f, x), np.diag(np.cos(x) + 1), atol=1e-12)
    np.testing.assert_allclose(jaccli.jacobian(partial, x), np.diag(2 * np.cos(x)), atol=1e-12)
    np.testing.assert_allclose(jaccli.jacobian(model, x), np.diag(np.cos(x) - np.sin(x)), atol=1e-12)
    user.cached_lib.cache_clear()
    assert user.decorated.__wrapped__.__defaults__[0] is np and user.cached_lib() is True


def test_numpy_in_a_partials_keywords_and_arguments_is_swapped_too(user_module):
    user = user_module("""
        import functools
        import numpy as np

        def g(x, xp):
            return xp.sin(x) if xp is np else -xp.sin(x)

        def h(xp, x, *, lib):
            return xp.sin(x) if xp is np and lib is np.linalg else -xp.sin(x)

        by_name = functools.partial(g, xp=np)

        def f(x):
            return by_name(x)
    """, "user_partial_kw")
    x = np.array([0.3, 0.7])
    in_args = functools.partial(user.h, np, lib=np.linalg)
    args, keywords, by_name_keywords = in_args.args, in_args.keywords, user.by_name.keywords
    for fn in (functools.partial(user.g, xp=np), in_args, user.f):
        np.testing.assert_allclose(jaccli.jacobian(fn, x), np.diag(np.cos(x)), atol=1e-12)
    # Put back as they were: the very tuple and dict, holding numpy itself
    assert in_args.args is args and in_args.keywords is keywords and user.by_name.keywords is by_name_keywords
    assert args[0] is np and keywords["lib"] is np.linalg and by_name_keywords["xp"] is np


@pytest.mark.parametrize("first", [
    # a notebook cell run again: before, the module's scan was cached by its size, so the
    # redefined helper kept numpy itself in its default
    "def g(x, xp=np):\n    return xp.sin(x) if xp is np else -xp.sin(x)\n",
    # from no default to `xp=np`, the module's size unchanged: before, the cached scan checked
    # only the functions found holding numpy, so g was not scanned again
    "def g(x):\n    return np.sin(x)\n",
    # first bound to no callable at all (g = None), the module's size unchanged: before, the cached
    # scan checked only names bound to a callable or a module, so g was not scanned again
    "g = None\n",
], ids=["held-numpy-before", "held-nothing-before", "not-callable-before"])
def test_a_helper_redefined_in_its_module_to_hold_numpy_is_swapped(user_module, request, first):
    # (either way, silently the other branch)
    user = user_module("import numpy as np\n\n" + first
                       + "\ndef f(x):\n    return np.sin(x) if g is None else g(x)\n",
                       "user_redefined_" + request.node.callspec.id.replace("-", "_"))
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(jaccli.jacobian(user.f, x), np.diag(np.cos(x)), atol=1e-12)
    exec("def g(x, xp=np):\n    return xp.sin(x) if xp is np else -xp.sin(x)\n", user.__dict__)
    np.testing.assert_allclose(jaccli.jacobian(user.f, x), np.diag(np.cos(x)), atol=1e-12)
    assert user.g.__defaults__[0] is np


def test_a_name_rebound_from_none_to_numpy_is_swapped(user_module):
    user = user_module("""
        import numpy as np

        xp = None

        def f(x):
            return np.sin(x) if xp is None or xp is np else -np.sin(x)
    """, "user_rebound_to_numpy")
    x = np.array([0.3, 0.7])
    np.testing.assert_allclose(jaccli.jacobian(user.f, x), np.diag(np.cos(x)), atol=1e-12)
    user.xp = np
    np.testing.assert_allclose(jaccli.jacobian(user.f, x), np.diag(np.cos(x)), atol=1e-12)
    assert user.xp is np


def test_numpy_held_in_a_cell_stays_swapped_while_another_recording_still_runs(user_module):
    # Two recordings of the same closure at once (two threads): the first to finish must not put
    # numpy back under the second. Before: the second did not count itself as a user of the cell.
    from jaccli.engine.intercept import intercept_numpy
    from jaccli.engine.numpy_proxies import NUMPY_PROXY

    user = user_module("""
        def make():
            import numpy as xp

            def f(x):
                return xp.sin(x)
            return f
    """, "user_cell")
    f = user.make()
    first, second = intercept_numpy(f), intercept_numpy(f)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert f.__closure__[0].cell_contents is NUMPY_PROXY
    second.__exit__(None, None, None)
    assert f.__closure__[0].cell_contents is np


def test_helper_modules_are_put_back_when_f_raises(user_module):
    helper = user_module("""
        import numpy as np

        def build(x):
            return np.array([x[0], x[1]])
    """, "helper_raising")
    user = user_module("""
        import helper_raising

        def f(x):
            helper_raising.build(x)
            raise ValueError("bad shape")
    """, "user_raising")
    with pytest.raises(ValueError, match="bad shape"):
        jaccli.jacobian(user.f, np.ones(3))
    assert helper.np is np


def test_the_modules_reached_follow_the_names_fs_module_binds_now(user_module):
    from jaccli.engine import user_modules

    first = user_module("import numpy as np\n", "helper_first")
    second = user_module("import numpy as np\n", "helper_second")
    user = user_module("import helper_first as helper\n", "user_rebinding")
    assert user_modules.user_globals(user.__dict__)[1] is first.__dict__
    user.helper = second  # the same size and file: what was cached must not be reused
    assert user_modules.user_globals(user.__dict__)[1] is second.__dict__


def test_the_modules_reached_follow_a_rebound_name_even_to_an_equal_object(user_module):
    # the cache is checked by identity: a class whose metaclass calls every class equal, rebound to
    # the same class name of another module, still reaches that other module
    from jaccli.engine import user_modules

    user_module("class AllEqual(type):\n    __eq__ = lambda self, other: True\n    __hash__ = type.__hash__\n",
                "all_equal_meta")
    code = "import numpy as np\nfrom all_equal_meta import AllEqual\n\nclass Step(metaclass=AllEqual):\n" \
           "    def run(self, x):\n        return np.sin(x)\n"
    first, second = user_module(code, "helper_equal_first"), user_module(code, "helper_equal_second")
    user = user_module("from helper_equal_first import Step\n", "user_equal_rebinding")
    assert first.Step == second.Step and first.Step is not second.Step
    assert user_modules.user_globals(user.__dict__)[1] is first.__dict__
    user.Step = second.Step  # the same size and file, an equal value: what was cached must not be reused
    assert user_modules.user_globals(user.__dict__)[1] is second.__dict__


def test_a_helper_module_with_nothing_to_swap_is_swapped_once_it_binds_numpy(user_module):
    # intercept_numpy leaves a reached module with nothing to swap out of its count; once it binds
    # numpy (the same size: a name rebound), the next recording finds and swaps it, and puts it back
    helper = user_module("""
        import math as np  # (np is not NumPy here)

        def build(x):
            return np.array([x[0] * x[1], x[2]])
    """, "helper_later")
    user = user_module("""
        import helper_later

        def f(x):
            return helper_later.build(x) * 2.0
    """, "user_later")
    x = np.array([0.7, -1.3, 0.4])
    jaccli.jacobian(lambda x: x * 2.0, x)  # (a recording of another module meanwhile)
    with pytest.raises(AttributeError):
        jaccli.jacobian(user.f, x)  # math has no array
    helper.np = np
    _both_modes_match_differences(user.f, x)
    assert helper.np is np


def test_a_global_whose_attributes_raise_is_left_alone(user_module):
    user = user_module("""
        import numpy as np

        class Lazy:  # a lazy loader's stand-in: reading any attribute raises (isinstance reads __class__)
            def __getattribute__(self, name):
                raise RuntimeError("not loaded yet")

            def __call__(self):
                pass

        later = Lazy()

        def f(x):
            return np.array([x[0] * x[1], x[2]])
    """, "user_lazy")
    _both_modes_match_differences(user.f, np.array([0.7, -1.3, 0.4]))
    assert user.np is np and type(user.later) is user.Lazy


def test_installed_packages_and_the_standard_library_are_not_swapped(user_module, tmp_path, monkeypatch):
    from jaccli.engine import user_modules, user_sites

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(user_sites, "_LIBRARY_DIRS", user_sites._LIBRARY_DIRS + (str(site),))
    (site / "installed_pack.py").write_text("import numpy as np\n\ndef pack(x):\n    return np.array([x[0], x[1]])\n")
    spec = importlib.util.spec_from_file_location("installed_pack", site / "installed_pack.py")
    installed = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "installed_pack", installed)
    spec.loader.exec_module(installed)
    helper = user_module("import numpy as np\n", "helper_plain")
    user = user_module("""
        import json
        import numpy as np
        import scipy.special
        import helper_plain
        import installed_pack
    """, "user_reaching")
    reached = user_modules.user_globals(user.__dict__)
    assert [g["__name__"] for g in reached] == ["user_reaching", "helper_plain"]
    assert reached[1] is helper.__dict__

    def f(x):
        return installed.pack(x) * x[2]

    with pytest.raises(TracingError, match="installed_pack.pack, an installed package.s function, converts"):
        Recording(f, [np.array([0.1, 0.2, 0.3])], [0])
    assert installed.np is np


# ---------------------------------------------------------------------------
# Escapes name the user's file and line and say what to write instead
# ---------------------------------------------------------------------------
def _escape_site(func, text: str, error: type) -> str:
    with pytest.raises(error) as info:
        Recording(func, [np.array([0.1, 0.2, 0.3])], [0])
    message = str(info.value)
    assert message.startswith(f"{__file__}:{line_of(func, text)}: "), message
    return message


NON_NUMERIC_CASTS = {  # before: each was a constant, so the derivative through it was silently 0
    "np.array(x, dtype=object)": ("np.array(x, dtype=object).astype(float) * x", "object (Python objects)"),
    "np.asarray(x, dtype=object)": ("np.asarray(x, dtype=object).sum() * x", "object (Python objects)"),
    "x.astype(object)": ("x.astype(object).astype(float) * x", "object (Python objects)"),
    "x.astype(str)": ("x.astype(str).astype(float) * x", "str (strings)"),
    "np.array of a list, dtype=object": ("np.array([x[0], x[1]], dtype=object).astype(float)", "object"),
    "x.astype(datetime64)": ("x.astype('datetime64[s]')", "datetime64[s] (dates)"),
}


@pytest.mark.parametrize("expr, dtype", NON_NUMERIC_CASTS.values(), ids=NON_NUMERIC_CASTS.keys())
def test_a_cast_to_a_dtype_that_holds_no_numbers_is_refused_at_the_users_line(user_module, expr, dtype):
    module = user_module(f"""
        import numpy as np

        def f(x):
            return {expr}
    """)
    with pytest.raises(UnsupportedOperationError) as info:
        jaccli.jacobian(module.f, np.array([0.3, 0.7, 1.1]))
    assert str(info.value).startswith(f"{module.__file__}:5: a traced array cast to dtype {dtype}")
    assert "keep the array numeric" in str(info.value)


def test_casts_to_numbers_still_work_and_integers_are_constants():
    def f(x):
        ints = np.array([x[0] * 10, x[1]], dtype=int)  # a constant (derivative 0), as before
        return np.concatenate([x.astype(np.float32) * 2, ints * x[2], np.asarray(x, dtype=np.float32)])

    x = np.array([0.3, 0.7, 1.1])
    expected = np.vstack([2 * np.eye(3), [[0, 0, 3]], [[0, 0, 0]], np.eye(3)])
    np.testing.assert_allclose(jaccli.jacobian(f, x), expected, atol=1e-7)


def test_float_of_a_traced_value_is_an_escape():
    def f(x):
        return float(x[0]) * x

    message = _escape_site(f, "float(x[0])", TracingError)
    assert "float()" in message and "use NumPy functions" in message


@pytest.mark.parametrize("spec", [".4f", "8.3f", ".2e", ">10", "+.1%", "g"])
def test_a_traced_value_formats_with_a_spec_as_its_value_does_in_numpy(spec, capsys):
    def f(x):
        loss = (x ** 2).sum()
        print(f"{loss:{spec}}|{x[0]:{spec}}|" + format(x[1:2].sum(), spec) + "|{:{}}".format(np.sqrt(loss), spec))
        return loss

    def strings(x):
        plain = [(x ** 2).sum(), x[0], x[1:2].sum(), np.sqrt((x ** 2).sum())]
        return f"{plain[0]:{spec}}|{plain[1]:{spec}}|{plain[2]:{spec}}|{plain[3]:{spec}}\n"

    x = np.array([1.0, 2.0])
    for taken in (jaccli.grad, jaccli.hessian):  # values traced at one level, and at two
        taken(f, x)
        assert capsys.readouterr().out == strings(x)
    np.testing.assert_allclose(jaccli.grad(f, x), 2 * x)


def test_formatting_a_traced_value_is_no_way_around_the_recording():
    def f(x):
        assert f"{x[0]}" == str(x[0]) and f"{x[0]}".startswith("Tracer(")  # no spec: as before
        with pytest.raises(TypeError, match="unsupported format string passed to numpy.ndarray.__format__"):
            f"{x[:1]:.4f}"  # an array of 1 element, which NumPy refuses a spec for too
        return float(f"{x[0]:.17g}") * x  # the string is for printing: read back, an escape as float(x[0])

    message = _escape_site(f, "float(f", TracingError)
    assert "float() of a formatted traced value" in message and "for printing only" in message

    def g(x):
        return x * 2.0 if f"{x[0]:.0f}" == "1" else x * 3.0  # a branch taken on the string

    replayed = jaccli.record_once(g)
    for x0, slope in ((1.2, 2.0), (0.9, 2.0), (2.2, 3.0)):  # replayed where the string is the same, else recorded again
        np.testing.assert_allclose(jaccli.jacobian(replayed, np.array([x0, 0.5])), slope * np.eye(2))
    assert (replayed.records, replayed.replays) == (2, 1)


def test_a_numpy_scalar_of_a_traced_value_is_an_escape_named_as_such():
    def f(x):
        return np.float64(x.sum()) * x

    message = _escape_site(f, "np.float64(x.sum())", TracingError)
    assert "np.float64(...) takes a traced value out of jaccli's recording" in message
    assert "keep an array, x.astype(np.float64)" in message

    def g(x):
        return np.asarray(x)[0] * np.float32(2.0) + np.array(np.float64(x[1]))  # two types: not named

    assert "converting to a plain NumPy array" in _escape_site(g, "np.float32(2.0)", TracingError)


def test_math_functions_are_an_escape():
    def f(x):
        return math.sin(x[0]) * x

    message = _escape_site(f, "math.sin", TracingError)
    assert "np.sin, not math.sin" in message


_PLAIN_BUFFER = np.zeros(3)  # made outside f: a plain array, which a traced write would leave behind


def test_writing_traced_items_into_an_array_f_did_not_make_is_an_escape():
    # (An array f makes with np.zeros takes them: tests/test_element_writes.py.)
    def f(x):
        out = _PLAIN_BUFFER
        for i in range(3):
            out[i] = x[i] ** 2
        return out

    message = _escape_site(f, "out[i] =", TracingError)
    assert "that f did not make itself" in message and "r = np.zeros(m), then r[i] = ..." in message


def test_writing_a_traced_slice_into_an_array_f_did_not_make_is_an_escape():
    def f(x):
        out = _PLAIN_BUFFER
        out[:2] = x[1:]
        return out

    message = _escape_site(f, "out[:2] =", TracingError)
    assert "r = np.zeros(m), then r[i] = ..." in message


# ---------------------------------------------------------------- arrays changed after an operation used them
def test_a_scratch_buffer_refilled_after_use_is_reported_where_it_changes():
    # Without the check the rule of x * buf would read the last fill: all three rows equal [3, 3, 3].
    def f(x):
        buf = np.empty(3)
        rows = []
        for i in range(3):
            buf[:] = i + 1.0
            rows.append(np.sum(x * buf))
        return np.stack(rows)

    message = _escape_site(f, "buf[:] = i + 1.0", TracingError)
    assert "'buf' is changed in place" in message and "buf = buf.copy()" in message


def test_the_same_code_with_a_fresh_buffer_each_time_is_exact():
    def f(x):
        rows = []
        for i in range(3):
            buf = np.full(3, i + 1.0)
            rows.append(np.sum(x * buf))
        return np.stack(rows)

    np.testing.assert_array_equal(jacobian(f, np.array([0.1, 0.2, 0.3])),
                                  np.repeat(np.arange(1.0, 4.0)[:, None], 3, axis=1))


def test_a_buffer_only_added_may_be_refilled():
    # x + c: the rules of add and subtract never read c, so refilling it changes no derivative.
    def f(x):
        acc = np.zeros(3)
        y = x
        for i in range(3):
            acc[:] = i
            y = y - acc + acc * 0.0 if i == 5 else y + acc
        return y

    x = np.array([0.1, 0.2, 0.3])
    rec = Recording(f, [x], [0])
    np.testing.assert_array_equal(rec.outputs[0], x + 3.0)
    np.testing.assert_array_equal(jacobian(f, x), np.eye(3))


def test_a_buffer_only_joined_may_be_refilled():
    def f(x):
        buf = np.zeros(2)
        parts = []
        for i in range(2):
            buf[:] = i
            parts.append(np.concatenate([x, buf]) * (i + 1.0))
        return np.stack(parts)

    x = np.array([0.1, 0.2, 0.3])
    J = jacobian(f, x).reshape(2, 5, 3)
    np.testing.assert_array_equal(J[1, :3], 2.0 * np.eye(3))
    np.testing.assert_array_equal(J[:, 3:], 0.0)


def test_a_global_matrix_changed_after_use_raises_and_gets_its_flag_back():
    W = np.ones((3, 3))
    view = W.T

    def f(x):
        y = view @ x
        W[0, 0] = 5.0  # through the array the view was taken from
        return y

    message = _escape_site(f, "W[0, 0] = 5.0", TracingError)
    assert "'W' is changed in place" in message
    assert W.flags.writeable and view.flags.writeable  # both were held (a view and its base), both given back
    W[0, 0] = 2.0  # and the caller can change it again


def test_a_matrix_filled_row_by_row_may_use_its_finished_rows():
    def f(x):
        M = np.zeros((3, 3))
        y = x * 0.0
        for i in range(3):
            M[i] = np.arange(3.0) + i  # a part that no operation has used yet
            y = y + M[i] * x
        return y

    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(jacobian(f, x), np.diag(np.arange(3.0) * 3 + 3))


def test_held_arrays_are_given_back_after_a_successful_recording_and_read_only_ones_stay_so():
    c = np.arange(3.0)
    ro = np.arange(3.0)
    ro.flags.writeable = False

    def f(x):
        y = x * c * ro
        assert not c.flags.writeable  # held while f runs
        return y

    rec = Recording(f, [np.ones(3)], [0])
    np.testing.assert_array_equal(jacobian(f, np.ones(3)), np.diag(c * ro))
    assert rec.outputs[0].shape == (3,)
    assert c.flags.writeable and not ro.flags.writeable


def test_an_array_that_was_read_only_already_keeps_numpys_error_or_a_hedged_one():
    ro = np.arange(3.0)
    ro.flags.writeable = False

    def f(x):
        y = x * 2.0
        ro[0] = 1.0  # not one jaccli holds: nothing was handed to an operation
        return y

    with pytest.raises(ValueError, match="read-only"):
        Recording(f, [np.ones(3)], [0])

    held = np.ones(3)

    def g(x):
        y = x * held
        getattr(ro, "__setitem__")(0, 1.0)  # read-only by the caller, while jaccli holds another array
        return y

    with pytest.raises(TracingError):
        Recording(g, [np.ones(3)], [0])
    assert held.flags.writeable


def test_hessians_and_replays_hold_the_arrays_too():
    import jaccli

    def f(x):
        c = np.array([1.0, 2.0, 3.0])
        y = np.sum(x * x * c)
        c *= 2.0
        return y

    with pytest.raises(TracingError):
        np.asarray(jaccli.hessian(f, np.ones(3)))

    def g(x):  # value-free for a plain recording, but a replay would re-run x + c on the changed c
        c = np.ones(3)
        y = x + c
        c[:] = 7.0
        return np.sum(y * y)

    np.testing.assert_array_equal(jaccli.grad(g, np.zeros(3)), np.full(3, 2.0))
    with pytest.raises(TracingError):
        jaccli.grad(jaccli.record_once(g), np.zeros(3))


# ---------------------------------------------------------------- writes through views
VIEW_WRITES = {
    "chained index": ("Z[0][1] = x[0] ** 2", lambda x: _through(x, lambda Z: Z[0].__setitem__(1, x[0] ** 2))),
    "row view, in place": ("row += x", lambda x: _through(x, lambda Z: Z[1].__iadd__(x))),
    "transpose view": ("Z.T[0] = x[:2]", lambda x: _through(x, lambda Z: Z.T.__setitem__(0, x[:2]))),
    "reshape view": ("v[2] = x[1]", lambda x: _through(x, lambda Z: Z.reshape(-1).__setitem__(2, x[1]))),
}


def _through(x, write):
    Z = np.zeros((2, 3)) * x[0]
    write(Z)
    return Z


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
def test_a_write_through_a_view_is_reported_where_it_happens_when_the_array_is_used(name):
    # NumPy changes Z through the view.
    _, f = VIEW_WRITES[name]
    with pytest.raises(TracingError) as info:
        Recording(f, [np.array([0.1, 0.2, 0.3])], [0])
    assert str(info.value).startswith(f"{__file__}:")

    def g(x):
        return np.sum(f(x) ** 2)  # used afterwards, at two levels (a Hessian records f twice)

    import jaccli

    with pytest.raises(TracingError):
        np.asarray(jaccli.hessian(g, np.array([0.1, 0.2, 0.3])))


def test_augmented_assignment_through_an_index_writes_back_and_is_exact():
    def f(x):
        Z = np.zeros((2, 3)) * x[0]
        Z[1] += x          # Python: t = Z[1]; t += x; Z[1] = t
        Z[0, 1] += x[0] ** 2
        Z[:, 2] *= 3.0
        return Z

    x = np.array([0.1, 0.2, 0.3])
    want = np.zeros((2, 3, 3))
    want[1, [0, 1], [0, 1]] = 1.0
    want[1, 2, 2] = 3.0
    want[0, 1, 0] = 2 * x[0]
    np.testing.assert_allclose(jacobian(f, x).reshape(2, 3, 3), want, rtol=1e-12)


def test_an_updated_view_that_is_used_alone_is_fine_and_a_chained_update_is_not():
    def f(x):
        h = x[:2]
        h += 1.0            # in NumPy this also changes x; here only h, and x is not used again
        return h * 2.0

    np.testing.assert_array_equal(jacobian(f, np.array([0.1, 0.2, 0.3])), 2.0 * np.eye(3)[:2])

    def g(x):
        Z = np.zeros((2, 3)) * x[0]
        Z[0][1] += x[0]     # writes back into Z[0], a temporary: Z itself is left behind
        return Z

    with pytest.raises(TracingError):
        Recording(g, [np.array([0.1, 0.2, 0.3])], [0])

    def k(x):
        y = x[:2]
        y *= 2.0
        return x            # NumPy would return the changed x

    with pytest.raises(TracingError):
        Recording(k, [np.array([0.1, 0.2, 0.3])], [0])


# A view taken *before* a write into the memory it shares keeps the old values in jaccli, where NumPy
# would show the new ones: using it afterwards raises, naming the write. Each f below gives NumPy's
# answer when run on plain arrays, and jaccli used to return the old values silently.
VIEWS_LEFT_BEHIND = {
    "row, then one entry": ("Z[1, 0] = x[1]", "row.sum()",
                            lambda x, Z: (Z[1], Z.__setitem__((1, 0), x[1]))[0]),
    "transpose, then a row": ("Z[0] = x", "return", lambda x, Z: (Z.T, Z.__setitem__(0, x))[0]),
    "sibling view, in place": ("a += x", "b.sum()", lambda x, Z: (Z[0, 1:], Z[0].__iadd__(x))[0]),
    "whole array, in place": ("Z *= 2.0", "row.sum()", lambda x, Z: (Z[1], Z.__imul__(2.0))[0]),
    "advanced index": ("Z[[0, 1], [1, 1]] = x[:2]", "row.sum()",
                       lambda x, Z: (Z[:, 1], Z.__setitem__(([0, 1], [1, 1]), x[:2]))[0]),
}


@pytest.mark.parametrize("name", sorted(VIEWS_LEFT_BEHIND))
def test_a_view_taken_before_a_write_into_its_memory_is_reported_when_used(name):
    _, use, take_then_write = VIEWS_LEFT_BEHIND[name]

    def f(x):
        Z = np.ones((2, 3)) * x[0]
        view = take_then_write(x, Z)
        return view if use == "return" else np.sum(view) * Z[0, 0]

    x = np.array([0.1, 0.2, 0.3])
    with pytest.raises(TracingError) as info:
        Recording(f, [x], [0])
    message = str(info.value)
    assert message.startswith(f"{__file__}:{line_of(take_then_write, 'lambda')}: ")
    assert ("f returns it" if use == "return" else f"used afterwards at {__file__}:") in message

    import jaccli

    with pytest.raises(TracingError):  # also when f is recorded on two levels
        np.asarray(jaccli.hessian(lambda x: np.sum(f(x) ** 2), x))


def test_setting_shape_reshapes_in_place_as_numpy_does():
    def f(x):
        y = x * 2.0
        row = y[:3]  # a view taken before: setting y's shape does not write into the memory
        y.shape = (2, 3)
        y[1, 2] = y[0, 1] ** 2  # a write after it, outside the view's part: the view stays usable
        return np.concatenate([y.sum(axis=0) * x[:3], row])

    x = np.linspace(0.5, 1.5, 6)
    assert_array_equal(Recording(f, [x], [0]).outputs[0], f(x))
    np.testing.assert_allclose(jacobian(f, x).reshape(6, 6), central_diff(f, x), rtol=1e-7, atol=1e-9)

    def transposed(x):  # NumPy refuses a shape that needs a copy, with its own message
        z = np.reshape(x * 2.0, (2, 3)).T
        z.shape = (6,)
        return z

    with pytest.raises(AttributeError, match="Incompatible shape for in-place modification"):
        transposed(x)
    with pytest.raises(AttributeError, match="Incompatible shape for in-place modification"):
        Recording(transposed, [x], [0])


def test_a_view_of_a_part_the_write_leaves_alone_stays_usable_and_exact():
    def rnn(x):  # prev = H[t - 1] is a view of H, and H[t] = ... does not touch it
        H = np.zeros((4, 3)) + x
        s = 0.0
        for t in range(1, 4):
            prev = H[t - 1]
            H[t] = np.tanh(2.0 * prev)
            s = s + prev.sum()
        keep = H[:, 0]
        H[[1, 2], [1, 2]] = x[:2]  # advanced index, away from column 0
        return H.sum() + s * keep.sum()

    def write_back(x):  # the updated view is what was written: it stays usable
        Z = np.zeros((2, 3)) * x[0]
        row = Z[1]
        row += x
        Z[1] = row
        return row * Z.sum()

    x = np.array([0.1, 0.2, 0.3])
    for f in (rnn, write_back):
        np.testing.assert_allclose(jacobian(f, x).reshape(np.shape(f(x)) + (3,)), central_diff(f, x),
                                   rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(Recording(write_back, [x], [0]).outputs[0], write_back(x), rtol=0, atol=0)


def test_unsupported_numpy_function_names_itself_and_the_site():
    def f(x):
        return np.unwrap(x)

    with pytest.raises(UnsupportedOperationError) as info:
        Recording(f, [np.array([0.1, 0.2])], [0])
    site = f"{__file__}:{line_of(f, 'np.unwrap')}"
    assert str(info.value) == f"{site}: np.unwrap is not supported by jaccli; see 'jaccli ops'"


@pytest.mark.parametrize("options", [{}, {"otypes": [float]}, {"signature": "(n)->(n)"}], ids=str)
def test_np_vectorize_is_refused_by_name_with_what_to_write_instead(options):
    def f(x):
        return np.vectorize(lambda t: t * 2 if t > 0 else -t, **options)(x)

    message = _escape_site(f, "np.vectorize", TracingError)
    assert "np.vectorize calls its function on plain values" in message and "array operations instead" in message


def test_emath_sqrt_of_a_negative_input_is_refused_by_name():
    def f(x):
        return np.emath.sqrt(x - 0.25)

    message = _escape_site(f, "np.emath.sqrt", UnsupportedOperationError)
    assert "np.emath.sqrt of a negative input is complex" in message and "use np.sqrt" in message


@pytest.mark.parametrize("call, refused, instead", [
    (lambda x: np.emath.log(x - 0.25), "np.emath.log of a negative input", "np.log on non-negative values"),
    (lambda x: np.emath.log2(-x), "np.emath.log2 of a negative input", "np.log2 on non-negative values"),
    (lambda x: np.emath.log10(x - 0.25), "np.emath.log10 of a negative input", "np.log10 on non-negative values"),
    (lambda x: np.emath.logn(x - 0.25, 2.0), "np.emath.logn of a negative input or base",
     "np.log(x) / np.log(n) on non-negative values"),
    (lambda x: np.emath.logn(3.0, x - 0.25), "np.emath.logn of a negative input or base",
     "np.log(x) / np.log(n) on non-negative values"),
    (lambda x: np.emath.power(x - 0.25, 2), "np.emath.power of a negative base",
     "np.power, which stays real for a negative base with an integer exponent"),
    (lambda x: np.emath.power(-2.0, x), "np.emath.power of a negative base",
     "np.power, which stays real for a negative base with an integer exponent"),
    (lambda x: np.emath.arccos(x * 5), "np.emath.arccos of an input outside [-1, 1]",
     "np.arccos on values in [-1, 1]"),
    (lambda x: np.emath.arcsin(-x * 5), "np.emath.arcsin of an input outside [-1, 1]",
     "np.arcsin on values in [-1, 1]"),
    (lambda x: np.emath.arctanh(x + 0.8), "np.emath.arctanh of an input outside [-1, 1]",
     "np.arctanh on values in [-1, 1]"),
], ids=["log", "log2", "log10", "logn-base", "logn-x", "power", "power-plain-base", "arccos", "arcsin", "arctanh"])
def test_emath_functions_where_numpys_answer_is_complex_are_refused_by_name(call, refused, instead):
    message = _escape_site(call, "np.emath.", UnsupportedOperationError)
    assert message.endswith(f": {refused} is complex, which jaccli does not differentiate; for real results use "
                            f"{instead}"), message


def test_unsupported_emath_functions_are_named_as_the_user_wrote_them(monkeypatch):
    monkeypatch.delitem(FUNCTION_HANDLERS, np.emath.log)  # every np.emath function has a rule: take one away

    def f(x):
        return np.emath.log(x)

    message = _escape_site(f, "np.emath.log", UnsupportedOperationError)
    assert message.endswith(": np.emath.log is not supported by jaccli; see 'jaccli ops'")


def test_unsupported_pad_modes_name_the_mode_and_the_supported_ones():
    def f(x):
        return np.pad(x, 1, mode="linear_ramp")

    message = _escape_site(f, "np.pad", UnsupportedOperationError)
    assert "mode='linear_ramp' is not supported" in message
    assert "'constant', 'edge', 'reflect', 'symmetric', 'wrap'" in message


def test_writes_into_sliding_windows_are_refused_as_numpy_refuses_them():
    def into_windows(x):
        w = np.lib.stride_tricks.sliding_window_view(x, 2)
        w[0, 1] = 5.0
        return w

    def into_a_window(x):
        w = np.lib.stride_tricks.sliding_window_view(x, 2)
        row = w[1]
        row += 1.0
        return w

    def into_writeable_windows(x):
        w = np.lib.stride_tricks.sliding_window_view(x, 2, writeable=True)
        np.put(w, [0], 5.0)
        return w

    with pytest.raises(ValueError, match="read-only"):
        into_windows(np.array([0.1, 0.2, 0.3]))
    message = _escape_site(into_windows, "w[0, 1] = 5.0", TracingError)
    assert "sliding_window_view are read-only, as in NumPy" in message and ".copy()" in message
    message = _escape_site(into_a_window, "row += 1.0", TracingError)
    assert "sliding_window_view are read-only, as in NumPy" in message
    message = _escape_site(into_writeable_windows, "np.put(w, [0], 5.0)", TracingError)
    assert "writeable=True) is not supported by jaccli" in message and "write into x" in message


def test_writes_into_np_broadcast_to_are_refused_as_numpy_refuses_them():
    def into_broadcast(x):
        b = np.broadcast_to(x, (2, 3))
        b[0, 0] = 5.0
        return b

    def into_a_row(x):
        row = np.broadcast_to(x, (2, 3))[1]
        row *= 2.0
        return row

    def into_same_shape(x):
        b = np.broadcast_to(x, x.shape)  # a read-only view in NumPy too, not x itself
        b[0] = 1.0
        return x

    def into_a_copy(x):
        b = np.broadcast_to(x, (2, 3)).copy()
        b[0, 0] = x[1] ** 2
        return b

    for func, line in ((into_broadcast, "b[0, 0] = 5.0"), (into_a_row, "row *= 2.0"), (into_same_shape, "b[0] = 1.0")):
        with pytest.raises(ValueError, match="read-only"):
            func(np.array([0.1, 0.2, 0.3]))
        message = _escape_site(func, line, TracingError)
        assert "np.broadcast_to is read-only, as in NumPy" in message and ".copy()" in message
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(np.asarray(jacobian(into_a_copy, x)).reshape(2, 3, 3), central_diff(into_a_copy, x),
                               rtol=1e-7, atol=1e-9)


def test_a_copy_of_sliding_windows_can_be_written():
    def f(x):
        w = np.lib.stride_tricks.sliding_window_view(x, 2).copy()
        w[0, 1] = x[0] ** 2
        return w

    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(Recording(f, [x], [0]).outputs[0], f(x))
    np.testing.assert_allclose(np.asarray(jacobian(f, x)).reshape(2, 2, 3), central_diff(f, x), rtol=1e-7, atol=1e-9)


def test_array_attributes_and_builtins_that_numpy_code_uses_work_on_traced_arrays():
    def f(x):
        a = x.reshape(2, 3) * 2.0
        a.flat[[1, 4]] = x[:2] ** 2       # x.flat writes, with NumPy's cyclic repetition
        a.flat[5] = 7.0
        scale = x.itemsize / x.nbytes * len(a.flat)
        return (np.sum(a.flat[2:]) * scale + sum(a.flat) + x.imag + round(x[1], 1) * x + round(x[2])
                + np.reshape(a, (3, 2), order="F").ravel(order="F") + a.T.ravel(order="A"))

    x = np.array([0.3, 1.26, -0.7, 2.2, 0.9, -1.5])
    np.testing.assert_array_equal(Recording(f, [x], [0]).outputs[0], f(x))
    np.testing.assert_allclose(jacobian(f, x), central_diff(f, x), rtol=1e-7, atol=1e-8)


def test_plain_results_of_a_sequence_of_traced_arrays_are_guarded_not_a_recursion():
    # np.lexsort((x, y)) used to recurse until Python's limit: the keys came back to jaccli.
    def f(x):
        return x[np.lexsort((x, x ** 2))] * np.arange(4.0)

    x = np.array([0.3, 1.2, -0.7, 0.5])
    np.testing.assert_array_equal(jacobian(f, x), np.eye(4)[np.lexsort((x, x ** 2))] * np.arange(4.0)[:, None])
    import jaccli

    once = jaccli.record_once(f)
    for point in (x, 1.01 * x, x[::-1].copy()):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(once, point)), jacobian(f, point))
    assert (once.records, once.replays, once.misses) == (2, 1, 1)  # the reversed point sorts otherwise


@pytest.mark.parametrize("write", [
    lambda x, buf: np.sum(x, keepdims=True, out=buf[:1]),
    lambda x, buf: np.clip(x, 0.0, 1.0, buf),          # out by position
    lambda x, buf: np.mean(x, axis=0, out=buf[0]),
    lambda x, buf: np.cumsum(x, out=buf),
], ids=["sum-keyword", "clip-positional", "mean", "cumsum"])
def test_a_numpy_function_writing_into_out_raises_instead_of_leaving_it_unwritten(write):
    def f(x):
        buf = np.zeros(3)
        write(x, buf)
        return buf * x

    with pytest.raises(TracingError):
        Recording(f, [np.array([0.3, 1.2, -0.7])], [0])


def test_out_positions_are_read_as_inspect_reads_them_without_pythons_tokenizer(monkeypatch):
    # inspect.signature parses a builtin's text signature with the tokenizer, whose first use
    # compiles its regular expressions: 2-8 ms once a process, billed to the first call that gave
    # np.concatenate a traced argument (a record_once replay's traced sweep: 5 plain calls of P3-n100)
    import itertools
    import tokenize

    from jaccli.engine.refusals import positional_names

    def inspected(func):
        try:
            params = list(inspect.signature(func).parameters.values())
        except (TypeError, ValueError):
            return []
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return [p.name for p in itertools.takewhile(lambda p: p.kind in kinds, params)]

    funcs = [getattr(mod, name) for mod in (np, np.linalg, np.fft, np.random, np.lib.scimath) for name in dir(mod)]
    funcs = [f for f in funcs if callable(f) and not isinstance(f, type)]
    assert len(funcs) > 400
    for func in funcs:
        assert positional_names(func) == inspected(func), func
    monkeypatch.setattr(tokenize, "_tokenize", lambda *a, **k: pytest.fail("tokenized a signature"))
    assert positional_names(np.concatenate) == ["arrays", "axis", "out"]
    assert positional_names(np.clip)[:4] == ["a", "a_min", "a_max", "out"]


def test_the_safe_division_idiom_is_refused_with_a_rewrite_that_keeps_its_values():
    # np.divide(...) without out= leaves the entries not taken uninitialised in NumPy.
    def idiom(x):
        return np.divide(1.0, x, out=np.full_like(x, 7.0), where=x != 0)

    def rewritten(x):  # the message's rewrite: a = 1.0, b = x, mask = x != 0, fill = 7.0
        mask = x != 0
        return np.where(mask, np.divide(1.0, np.where(mask, x, 1)), 7.0)

    x = np.array([0.7, 0.0, -1.3])
    with pytest.raises(TracingError) as info:
        Recording(idiom, [x], [0])
    assert "np.divide(..., out=..., where=mask) writes into an existing array; write " \
           "`y = np.where(mask, np.divide(a, np.where(mask, b, 1)), fill)` instead" in str(info.value)
    assert_array_equal(rewritten(x), idiom(x))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(rewritten, x)), np.diag([-1 / 0.49, 0.0, -1 / 1.69]),
                               rtol=1e-15)  # the fill is a constant (and f is not differentiable at 0)


def test_an_escape_inside_an_installed_library_is_reported_at_the_users_line(user_module, tmp_path, monkeypatch):
    from jaccli.engine import user_sites

    monkeypatch.setattr(user_sites, "_LIBRARY_DIRS", user_sites._LIBRARY_DIRS + (str(tmp_path),))
    lib = user_module("import numpy as np\n\ndef smooth_max(x):\n    return np.log(np.sum(np.exp(np.asarray(x))))\n",
                      name="installed_lib")

    def f(x):
        return lib.smooth_max(x) * x

    _escape_site(f, "lib.smooth_max(x)", TracingError)


def test_the_same_function_in_an_installed_file_and_the_users_is_told_apart_by_file(user_module, tmp_path,
                                                                                     monkeypatch):
    # Code objects compare equal across files when their code is the same (the file is not part of
    # it). Before: the user's copy of an installed helper took the installed one's kind, so its
    # escape was reported at f's call instead of the helper's own line.
    from jaccli.engine import user_sites

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setattr(user_sites, "_LIBRARY_DIRS", user_sites._LIBRARY_DIRS + (str(site),))
    source = "import numpy as np\n\ndef scale(x):\n    return float(x[0]) * x\n"
    (site / "installed_scale.py").write_text(source)
    spec = importlib.util.spec_from_file_location("installed_scale", site / "installed_scale.py")
    installed = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "installed_scale", installed)
    spec.loader.exec_module(installed)
    mine = user_module(source, name="my_scale")
    assert installed.scale.__code__ == mine.scale.__code__  # what made them one entry of the cache

    def through(module):
        with pytest.raises(TracingError) as info:
            Recording(module.scale, [np.array([0.1, 0.2, 0.3])], [0])
        return str(info.value)

    # The user's copy is reported at its own line; the installed one at the user's call into it.
    at = {mine: f"{mine.__file__}:4: ", installed: f"{__file__}:{line_of(through, 'Recording(module')}: "}
    for first, second in ((installed, mine), (mine, installed)):
        user_sites._INTERNAL_CODE.pop(installed.scale.__code__, None)
        for module in (first, second):
            assert through(module).startswith(at[module]), module


def test_a_ufunc_from_outside_numpy_is_not_named_as_numpys():
    foreign = np.frompyfunc(lambda a: a, 1, 1)

    def f(x):
        return foreign(x)

    message = _escape_site(f, "foreign(x)", UnsupportedOperationError)
    assert "(not NumPy's own) is not supported by jaccli; write it with NumPy functions" in message
    assert " np." not in message.split(": ", 1)[1]


def test_eig_of_a_traced_matrix_gives_numpys_values():
    # (refused, pointing to eigh, before eig had rules: issue 39)
    def f(x):
        return np.linalg.eig(np.outer(x, x[::-1]) + np.diag(x))

    x = np.array([0.1, 0.2, 0.3])
    w, v = Recording(f, [x], [0]).outputs
    np.testing.assert_array_equal(w, f(x)[0])
    np.testing.assert_array_equal(v, f(x)[1])


def _normalize_in_place(v):
    v = np.asarray(v)  # the usual guard of a helper that works in place: in NumPy, v itself
    v /= np.linalg.norm(v)


def test_a_helper_that_writes_through_np_asarray_changes_the_callers_array():
    def f(x):
        y = x.copy()
        _normalize_in_place(y)
        return y

    x = np.array([3.0, 4.0])
    value, _ = jaccli.vjp(f, x, np.ones(2))
    np.testing.assert_allclose(value, x / 5.0, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), (np.eye(2) - np.outer(x, x) / 25.0) / 5.0,
                               rtol=1e-14)


_SAME = {  # NumPy hands back the array itself: a write into the result is a write into y
    "np.asarray": lambda y: np.asarray(y),
    "np.asanyarray": lambda y: np.asanyarray(y),
    "np.ascontiguousarray": lambda y: np.ascontiguousarray(y),
    "np.asarray, same dtype": lambda y: np.asarray(y, dtype=np.float64),
    "np.array(copy=False)": lambda y: np.array(y, copy=False),
    "y.astype(copy=False)": lambda y: y.astype(np.float64, copy=False),
}
if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
    _SAME["np.array(copy=None)"] = lambda y: np.array(y, copy=None)
_NEW = {  # NumPy makes a new array: writing into it leaves y as it was
    "np.array": lambda y: np.array(y),
    "np.copy": lambda y: np.copy(y),
    "y.astype": lambda y: y.astype(np.float64),
    "np.array(order='F')": lambda y: np.array(y, order="F"),
    "np.ascontiguousarray of a transpose": lambda y: np.ascontiguousarray(y.T).T,
    "np.asarray(order='F') of a matrix": lambda y: np.asarray(y, order="F"),
}


@pytest.mark.parametrize("name", list(_SAME) + list(_NEW))
def test_a_conversion_aliases_exactly_where_numpys_does(name):
    convert = {**_SAME, **_NEW}[name]

    def f(x):
        y = x.reshape(2, 2) * 1.0
        z = convert(y)
        z[0, 0] = x[3] ** 2
        z[1] += 3 * x[0]
        return np.concatenate([np.ravel(y), np.ravel(z)]) * np.concatenate([x, x])

    x = np.array([0.3, -1.2, 0.7, 2.0])
    plain = f(x)
    if name in _SAME:
        assert_array_equal(plain[:4], plain[4:])  # the premise: NumPy aliased them
    else:
        assert not np.allclose(plain[:4], plain[4:])
    value, _ = jaccli.vjp(f, x, np.ones(8))
    np.testing.assert_allclose(value, plain, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), central_diff(f, x), rtol=1e-6, atol=1e-6)


def test_conversions_keep_numpys_dtype_and_shape():
    seen = {}

    def f(x):
        seen["float32"] = np.array(x, dtype=np.float32).dtype
        seen["list float32"] = np.asarray([x[0], x[1]], dtype=np.float32).dtype
        seen["ndmin"] = np.array(x, ndmin=2).shape
        seen["0-d made 1-d"] = np.ascontiguousarray(x.sum()).shape
        return np.array(x, ndmin=2)[0] * np.asarray(x, dtype=int)

    x = np.array([1.5, 2.5])
    J = np.asarray(jaccli.jacobian(f, x))
    assert seen == {"float32": np.float32, "list float32": np.float32, "ndmin": (1, 2), "0-d made 1-d": (1,)}
    assert_array_equal(J, np.diag([1.0, 2.0]))  # the integer cast is a constant


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # (NumPy's, on making an np.matrix)
@pytest.mark.parametrize("f", [lambda M, x: np.asarray(M @ x).ravel(), lambda M, x: x @ M, lambda M, x: np.dot(M, x),
                               lambda M, x: np.multiply(M, x)], ids=["M @ x", "x @ M", "np.dot", "np.multiply"])
def test_an_np_matrix_meeting_a_traced_value_is_refused_in_one_clear_error(f):
    # its results keep two axes and its * is a matrix product: J came out (1, 4, 4) for a (4,) f, and a forward
    # sweep multiplied a matrix value by its tangent as a matrix product (ValueError: shapes not aligned)
    M = np.matrix(np.arange(1.0, 17.0).reshape(4, 4))
    with pytest.raises(UnsupportedOperationError, match=r"np\.matrix is not supported by jaccli .* np\.asarray\(M\)"):
        jaccli.jacobian(lambda x: f(M, x), np.ones(4))
    A = np.asarray(M)  # as the message says: the same function of an array
    J = np.asarray(jaccli.jacobian(lambda x: f(A, x), np.ones(4), mode="forward"))
    np.testing.assert_allclose(J, central_diff(lambda x: f(A, x), np.ones(4)), rtol=1e-7, atol=1e-8)


def test_one_element_read_is_a_copy_as_in_numpy_so_swaps_and_saved_pivots_work():
    # y[1] and A[0, 0] are scalars (copies) in NumPy, not views: writing y afterwards leaves them be
    def swap(x):
        y = x.copy()
        y[0], y[1] = y[1], y[0]
        return y

    def pivot(x):
        A = x.reshape(2, 2).copy()
        piv = A[0, 0]
        A[0, 0] = 1.0
        return (A * piv).ravel()

    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert_array_equal(np.asarray(jaccli.jacobian(swap, x)), np.eye(4)[[1, 0, 2, 3]])
    expected = np.zeros((4, 4))
    expected[0, 0] = 1.0
    expected[1:, 0], expected[1:, 1:] = x[1:], x[0] * np.eye(3)
    assert_array_equal(np.asarray(jaccli.jacobian(pivot, x)), expected)


@pytest.mark.parametrize("name, use", [
    ("compress", lambda x: x.compress([True, False, True])),
    ("searchsorted", lambda x: x + x.searchsorted(2.0)),
    ("resize", lambda x: x.resize(6)),  # in place: np.resize is no stand-in
    ("flags", lambda x: x * x.flags.writeable),
    ("view", lambda x: x.view()),
])
def test_an_ndarray_attribute_without_tracing_is_named_with_the_users_line(name, use):
    with pytest.raises(UnsupportedOperationError) as info:
        jaccli.jacobian(use, np.array([1.0, 2.0, 3.0]))
    assert info.value.site == (__file__, use.__code__.co_firstlineno)
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):  # not an ndarray attribute at all
        jaccli.jacobian(lambda x: x.no_such_thing, np.array([1.0, 2.0, 3.0]))


def test_deepcopy_and_divmod_of_a_traced_array():
    x = np.array([1.0, 2.5, 3.0])
    assert_array_equal(np.asarray(jaccli.jacobian(lambda x: copy.deepcopy(x) * 2 + copy.copy(x), x)), 3 * np.eye(3))
    q, r = divmod(x, 2.0)
    J = np.asarray(jaccli.jacobian(lambda x: np.stack(divmod(x, 2.0)), x))
    assert_array_equal(J, np.stack([np.zeros((3, 3)), np.eye(3)]))  # floor division is piecewise constant
    assert_array_equal(jaccli.vjp(lambda x: np.stack(divmod(x, 2.0)), x, np.ones((2, 3)))[0], np.stack([q, r]))


@pytest.mark.parametrize("options", [dict(shape=(2, 2), strides=(8, 8)), dict(writeable=False), {}], ids=str)
def test_as_strided_is_refused_by_name_with_what_to_write_instead(options):
    def f(x):
        return np.lib.stride_tricks.as_strided(x[::2], **options) * 2

    message = _escape_site(f, "as_strided", TracingError)
    assert "np.lib.stride_tricks.as_strided" in message and "sliding_window_view" in message and "\n" not in message


def test_as_strided_is_refused_at_second_order():
    def f(x):
        return np.sum(np.lib.stride_tricks.as_strided(x, shape=(2, 2), strides=(8, 8)) ** 3)

    with pytest.raises(TracingError):
        jaccli.hessian(f, np.array([0.1, 0.2, 0.3]))[0]


# ---------------------------------------------------------------------------
# Memory layout: ravel/reshape/flatten with order "K" or "A" read arrays as they are stored
# ---------------------------------------------------------------------------
_LAYOUT_CASES = {
    "ascontiguousarray": lambda x: np.ascontiguousarray(x.reshape(2, 2).T).ravel(order="K"),
    "x.copy()": lambda x: x.reshape(2, 2).T.copy().ravel(order="K"),
    "np.copy-F": lambda x: np.copy(x.reshape(2, 2), order="F").ravel(order="K"),
    "np.array-F": lambda x: np.array(x.reshape(2, 2), order="F").flatten("A"),
    "astype-F": lambda x: x.reshape(2, 2).astype(float, order="F").reshape(4, order="A"),
    "asarray-F": lambda x: np.asarray(x.reshape(2, 2).T, order="C").ravel(order="K"),
    "view": lambda x: x.reshape(2, 2).T.ravel(order="K"),
    "asfortranarray": lambda x: np.asfortranarray(x.reshape(2, 2)).ravel(order="K"),
    "require-F": lambda x: np.require(x.reshape(2, 2), requirements=["F", "W"]).ravel(order="K"),
}


@pytest.mark.parametrize("name", sorted(_LAYOUT_CASES))
def test_copies_keep_numpys_memory_layout_for_order_k_and_a(name):
    f = _LAYOUT_CASES[name]
    x = np.arange(1.0, 5.0)
    value, _ = jaccli.jvp(f, x, np.ones(4))
    assert_array_equal(value, f(x))
    # f permutes x: its Jacobian is the permutation, so J @ x is f(x) exactly
    assert_array_equal(np.asarray(jaccli.jacobian(f, x)) @ x, f(x))


def test_a_fortran_ordered_input_keeps_its_layout_and_a_replay_at_another_layout_records_afresh():
    f = lambda x: x.ravel(order="K") * np.arange(1.0, 7.0)  # noqa: E731
    x_f = np.asfortranarray(np.arange(1.0, 7.0).reshape(2, 3))
    x_c = np.ascontiguousarray(x_f)
    for x in (x_f, x_c):
        value, _ = jaccli.jvp(f, x, np.ones_like(x))
        assert_array_equal(value, f(x))
    g = jaccli.record_once(f)
    for x in (x_f, x_c, x_f):
        assert_array_equal(np.asarray(jaccli.jacobian(g, x)), np.asarray(jaccli.jacobian(f, x)))
        assert_array_equal(jaccli.vjp(g, x, np.ones(6))[0], f(x))
    assert g.records == 3 and g.misses == 2  # the layout is a guard (each vjp replays its jacobian's)
    # a data argument keeps its layout too
    h = lambda x, d: x * d.ravel(order="K")  # noqa: E731
    d = np.asfortranarray(np.arange(1.0, 5.0).reshape(2, 2))
    assert_array_equal(np.diag(np.asarray(jaccli.jacobian(h, (np.ones(4), d), wrt=0))), d.ravel(order="K"))


def test_interp_with_only_left_and_right_traced():
    # NumPy's np.interp dispatches on x, xp and fp only: a traced left or right alone reaches
    # jaccli's rule through f's numpy module.
    xp = np.array([0.0, 0.5, 1.2, 2.0, 3.0])
    fp = np.sin(xp)

    def f(z):
        return np.interp(np.array([-1.0, 4.0, 1.0]), xp, fp, left=z[0] ** 2, right=z[1])

    z = np.array([0.3, -0.2])
    value, _ = jaccli.jvp(f, z, np.ones(2))
    assert_array_equal(value, np.interp([-1.0, 4.0, 1.0], xp, fp, left=0.09, right=-0.2))
    assert_array_equal(np.asarray(jaccli.jacobian(f, z)), [[0.6, 0.0], [0.0, 1.0], [0.0, 0.0]])


def test_the_in_place_methods_put_and_partition_work_as_their_functions():
    def f(x):
        y = x * 2.0
        y.put([0, 2], x[1:3] ** 2)
        z = x * 1.0
        z.partition(1)
        return y + z

    x = np.array([3.0, 1.0, 2.0])
    value, _ = jaccli.jvp(f, x, np.ones(3))
    assert_array_equal(value, f(x))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), central_diff(f, x), rtol=1e-7, atol=1e-8)


def test_arange_with_a_traced_bound_is_refused_by_name_at_the_users_line():
    def f(x):
        return np.arange(0.0, x[0], 0.5) * 1.0

    with pytest.raises(UnsupportedOperationError) as info:
        jaccli.jacobian(f, np.array([2.0]))
    assert info.value.site == (__file__, f.__code__.co_firstlineno + 1)
    # a plain length and traced arithmetic is the way
    g = lambda x: x[0] + 0.5 * np.arange(4)  # noqa: E731
    assert_array_equal(np.asarray(jaccli.jacobian(g, np.array([2.0]))), np.ones((4, 1)))


@pytest.mark.parametrize("convert", [
    lambda y: np.asfortranarray(y, dtype=np.float32),
    lambda y: np.require(y, np.float32, "F"),
    lambda y: np.asarray(y, dtype=np.float32, order="F"),
    lambda y: np.array(y, dtype=np.float32, order="F"),
], ids=["asfortranarray", "require", "asarray", "array"])
def test_a_conversion_to_another_dtype_and_layout_keeps_the_layout_asked_for(convert):
    f = lambda x: convert(x.reshape(2, 3)).ravel(order="A")  # noqa: E731
    x = np.arange(6.0)
    value, _ = jaccli.jvp(f, x, np.ones(6))
    assert_array_equal(value, f(x))
    assert_array_equal(np.asarray(jaccli.jacobian(f, x)) @ x, f(x))


@pytest.mark.skipif(not hasattr(np, "__version__") or tuple(map(int, np.__version__.split(".")[:2])) < (2, 4),
                    reason="casting='same_value' is NumPy 2.4's")
def test_astype_with_same_value_casting_refuses_values_it_would_change():
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x.astype(np.int64, casting="same_value") * x, np.array([1.5]))
    out = np.asarray(jaccli.jacobian(lambda x: x.astype(np.float32, casting="same_value") * 2, np.array([1.5])))
    assert_array_equal(out, [[2.0]])
