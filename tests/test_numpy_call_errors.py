"""A call NumPy refuses for its form (an unknown keyword, too many positional arguments) is refused
under tracing with NumPy's error, naming NumPy's function: never jaccli's handler, never a silent result."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import jaccli
import jaccli.engine.rules  # noqa: F401 - fills the registry
from jaccli.engine.rules import fft, linalg_eig, linalg_norm  # noqa: F401 - and those that wait for np.fft, np.linalg
import jaccli.engine.tracer
from jaccli.engine.registry import REGISTRY

X = np.linspace(0.1, 0.9, 4).reshape(2, 2)

# Calls NumPy accepts, for the functions that no default pattern below suits (x is a 2x2 array).
_CALLS = {
    "np.add.at": lambda x: (x, (0,), 1.0), "np.multiply.at": lambda x: (x, (0,), 2.0),
    "np.subtract.at": lambda x: (x, (0,), 1.0), "np.add.reduceat": lambda x: (x, [0, 1]),
    "np.apply_along_axis": lambda x: (np.sum, 0, x), "np.astype": lambda x: (x, np.float32),
    "np.bincount": lambda x: (np.array([0, 1, 1]), x[0, :1].repeat(3)), "np.broadcast_to": lambda x: (x, (3, 2, 2)),
    "np.can_cast": lambda x: (x, np.float64), "np.choose": lambda x: (np.array([[0, 1], [1, 0]]), [x, x]),
    "np.clip": lambda x: (x, 0.2, 0.8), "np.compress": lambda x: ([True, False], x),
    "np.convolve": lambda x: (x[0], x[1]), "np.correlate": lambda x: (x[0], x[1]),
    "np.cumulative_prod": lambda x: (x[0],), "np.cumulative_sum": lambda x: (x[0],),
    "np.digitize": lambda x: (x, [0.2, 0.5]), "np.dsplit": lambda x: (x[..., None].repeat(2, -1), 2),
    "np.einsum": lambda x: ("ij->ij", x), "np.insert": lambda x: (x, 1, 0.5),
    "np.interp": lambda x: (x, [0.0, 1.0], [1.0, 2.0]), "np.full_like": lambda x: (x, 0.5),
    "np.lib.stride_tricks.sliding_window_view": lambda x: (x, (2, 2)),
    "np.linalg.cholesky": lambda x: (x @ x.T + np.eye(2),), "np.linalg.cross": lambda x: (np.ones(3), np.ones(3)),
    "np.linalg.outer": lambda x: (x[0], x[1]), "np.linalg.tensorsolve": lambda x: (x + np.eye(2), x[0]),
    "np.moveaxis": lambda x: (x, 0, 1), "np.swapaxes": lambda x: (x, 0, 1), "np.pad": lambda x: (x, 1),
    "np.polyfit": lambda x: ([0.0, 1.0, 2.0], [1.0, 0.5, 0.2], 1), "np.put": lambda x: (x, [0], [1.0]),
    "np.put_along_axis": lambda x: (x, np.zeros((2, 1), int), 1.0, 1),
    "np.take_along_axis": lambda x: (x, np.zeros((2, 1), int), 1),
    "np.ravel_multi_index": lambda x: ((np.array([0, 1]),) * 2, (2, 2)),
    "np.unravel_index": lambda x: (np.array([0, 1]), (2, 2)), "np.reshape": lambda x: (x, (4,)),
    "np.searchsorted": lambda x: ([0.0, 1.0], x), "np.select": lambda x: ([x > 0.5], [x]),
    "np.vander": lambda x: (x[0],),
    "scipy.linalg.cho_solve": lambda x: ((x + 2.0 * np.eye(2), True), x), "scipy.linalg.sqrtm": lambda x: (x @ x.T,),
    "scipy.stats.dirichlet.logpdf": lambda x: (np.array([0.2, 0.3, 0.5]), 1.0 + x[0, :1].repeat(3)),
    "scipy.stats.dirichlet.pdf": lambda x: (np.array([0.2, 0.3, 0.5]), 1.0 + x[0, :1].repeat(3)),
    "scipy.stats.multivariate_normal.logpdf": lambda x: (x[0], x[1], np.eye(2)),
    "scipy.stats.multivariate_normal.pdf": lambda x: (x[0], x[1], np.eye(2)),
}
_PATTERNS = (lambda x: (x,), lambda x: (x, x), lambda x: (x, x, x), lambda x: (x, 1), lambda x: (x, 0))


def _call(target, args, kwargs):
    return (getattr(target[0], target[1]) if isinstance(target, tuple) else target)(*args, **kwargs)


def _outcome(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - NumPy's error is the reference
        return type(exc), str(exc)
    return None, None


def _valid_call(name):
    """The arguments (from x) of a call NumPy accepts for the registered function `name`."""
    target = REGISTRY[name].target
    for pattern in (_CALLS[name],) if name in _CALLS else _PATTERNS:
        if _outcome(lambda: _call(target, pattern(X.copy()), {}))[0] is None:
            return pattern
    raise AssertionError(f"no call NumPy accepts for {name}: add one to _CALLS")


def _numpy_functions():
    return sorted(name for name, e in REGISTRY.items() if not isinstance(e.target, str))


@pytest.mark.parametrize("misuse", ["unknown-keyword", "too-many-positional"])
@pytest.mark.parametrize("name", _numpy_functions())
def test_a_call_numpy_refuses_for_its_form_is_refused_with_numpys_error(name, misuse):
    target = REGISTRY[name].target
    extra, kwargs = ((), {"bogus": 1}) if misuse == "unknown-keyword" else ((X,) * 10, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (NumPy's own, on the reference calls: arccosh(0.1), np.row_stack)
        pattern = _valid_call(name)
        expected = _outcome(lambda: _call(target, pattern(X.copy()) + extra, kwargs))
        got = []

        def f(x):
            got.append(_outcome(lambda: _call(target, pattern(x) + extra, kwargs)))
            return x
        jaccli.jacobian(f, X)
    assert got[0][0] is expected[0]
    if expected[0] is TypeError:
        assert got[0][1] == expected[1]


@pytest.mark.parametrize("call", [
    lambda x: np.full_like(x), lambda x: np.full_like(np.zeros(2), x[0], float, "K", True, None, 1),
    lambda x: np.interp(0.5, [0.0, 1.0], [1.0, 2.0], left=x[0], bogus=1),
    lambda x: np.polyint([1.0, 2.0], 1, x[:1], 4),
], ids=["full-like-no-value", "full-like-too-many", "interp-keyword", "polyint-too-many"])
def test_a_traced_argument_numpy_does_not_dispatch_on_is_checked_against_numpys_signature(call):
    # jaccli's proxy hands these to the rule itself (NumPy would convert the traced value to a float):
    # before, np.full_like(a, traced) with too many arguments gave a result, and without a fill value a KeyError
    with pytest.raises(TypeError) as numpy_error:
        call(X[0].copy())
    with pytest.raises(TypeError) as traced_error:
        jaccli.jacobian(call, X[0])
    assert str(traced_error.value) == str(numpy_error.value)


def test_clip_computes_in_the_dtype_its_keywords_ask_for_as_numpy_does():
    for lo, hi in ((0.2, 0.8), (0.2, None), (None, 0.8), (None, None)):
        expected = np.clip(X, lo, hi, dtype=np.float32)
        y, _ = jaccli.jvp(lambda x: np.clip(x, lo, hi, dtype=np.float32), (X,), (np.ones_like(X),))
        assert y.dtype == expected.dtype
        np.testing.assert_array_equal(y, expected)


_METHODS = sorted(name for cls in jaccli.engine.tracer.Tracer.__mro__[:-1] for name, value in vars(cls).items()
                  if callable(value) and not name.startswith("_") and hasattr(np.ndarray, name))


@pytest.mark.parametrize("name", _METHODS)
def test_a_traced_arrays_method_called_with_a_keyword_it_does_not_take_names_no_jaccli_function(name):
    # x.cumsum(bogus=1) on a traced x: NumPy refuses it, and so does jaccli, naming NumPy's method
    # (ndarray.cumsum) or the NumPy function the method calls (all()), never jaccli's traced type
    def f(x):
        return getattr(x, name)(bogus=1)

    with pytest.raises(TypeError):
        getattr(X.copy(), name)(bogus=1)
    with pytest.raises(TypeError) as caught:
        jaccli.jacobian(f, X)
    message = str(caught.value)
    assert "Tracer" not in message and not re.search(r"\b_\w*\(\)", message), message
