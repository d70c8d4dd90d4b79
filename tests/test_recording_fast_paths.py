"""The cheaper recording of a traced operation (issue 44): float64 scalars combined by their float operation,
not the ufunc, with NumPy's numbers, types, warnings and errors; and the user's line of each operation found
past the frames known to be jaccli's, still the innermost line of the user's code."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaccli
from jaccli.engine.rules import elementwise
from jaccli.engine.tape import SCALAR_FORMS


def _nodes(f, x):
    return jaccli.jacobian(f, x)._ev.rec.trace.nodes


def _counting_impls(monkeypatch) -> list:
    calls = []
    for prim in (elementwise.add, elementwise.subtract, elementwise.multiply, elementwise.true_divide):
        impl = prim.impl
        monkeypatch.setattr(prim, "impl", lambda *a, _impl=impl, **kw: calls.append(a) or _impl(*a, **kw))
    return calls


def test_scalar_arithmetic_takes_the_float_operation_with_numpys_numbers_and_types(monkeypatch):
    def f(x):
        a, b = x[0], x[1]
        return np.stack([a * b, a + 1.5, 2.0 - b, a / b, 1.0 / a, b * 3.0])

    x = np.array([0.3, 1.7])
    calls = _counting_impls(monkeypatch)
    nodes = _nodes(f, x)
    assert calls == []
    a, b = x[0], x[1]
    expected = [np.multiply(a, b), np.add(a, 1.5), np.subtract(2.0, b), np.true_divide(a, b),
                np.true_divide(1.0, a), np.multiply(b, 3.0)]
    got = [n.value for n in nodes if n.prim in SCALAR_FORMS]
    assert [type(v) for v in got] == [np.float64] * 6
    assert [v.tobytes() for v in got] == [v.tobytes() for v in expected]  # bit for bit
    J = np.asarray(jaccli.jacobian(f, x))
    np.testing.assert_allclose(J, np.array([[b, a], [1, 0], [0, -1], [1 / b, -a / b ** 2], [-1 / a ** 2, 0],
                                            [0, 3]]), rtol=1e-15)


@pytest.mark.parametrize("f, x, what", [
    (lambda x: x[0] * x[1], [1e200, 1e200], "overflow encountered in multiply"),
    (lambda x: x[0] / (x[1] - x[1]), [1.0, 2.0], "divide by zero encountered in divide"),
    (lambda x: x[0] - x[1], [np.inf, np.inf], "invalid value encountered in subtract"),
    (lambda x: x[0] * x[1], [1e-200, 1e-200], "underflow encountered in multiply"),
])
def test_scalar_arithmetic_that_numpy_reports_is_reported_in_numpys_words(f, x, what):
    with np.errstate(all="raise"), pytest.raises(FloatingPointError, match=f"^{what}$"):
        jaccli.jacobian(f, np.array(x))
    with np.errstate(all="warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jaccli.jacobian(f, np.array(x))
    assert [str(w.message) for w in caught if what in str(w.message)] == [what]


def _inner(x):
    return x[0] * x[1] + x[2]  # (the line every operation here belongs to)


_INNER_LINE = _inner.__code__.co_firstlineno + 1


def test_each_operation_belongs_to_the_innermost_line_of_the_users_code():
    def f(x):
        y = np.zeros(3)
        y[0] = _inner(x)
        y[1] = np.sum(np.roll(x, 1) * 2.0)
        return y

    nodes = _nodes(f, np.linspace(1.0, 2.0, 3))
    here = f.__code__.co_firstlineno
    lines = [(n.prim.name, n.site[1]) for n in nodes[1:]]
    assert lines[:4] == [("getitem", _INNER_LINE), ("getitem", _INNER_LINE), ("np.multiply", _INNER_LINE),
                         ("getitem", _INNER_LINE)]
    assert ("np.add", _INNER_LINE) in lines and ("assign", here + 2) in lines
    assert {line for name, line in lines if name in ("gather", "np.sum")} == {here + 3}


def test_the_operations_of_a_loop_share_each_lines_site_and_each_keeps_its_own_line():
    def f(x):
        for _ in range(3):
            x = x * 2.0 + 1.0  # two operations on one line
            x = np.sin(
                x)  # an operation whose call spans two lines
        return x

    nodes = _nodes(f, np.linspace(1.0, 2.0, 3))[1:]
    here = f.__code__.co_firstlineno
    assert [(n.prim.name, n.site[1]) for n in nodes[:3]] == [("np.multiply", here + 2), ("np.add", here + 2),
                                                            ("np.sin", here + 3)]
    assert [n.site for n in nodes] == [n.site for n in nodes[:3]] * 3
    # (the same instruction: one tuple, found once; iterations after the first, which the interpreter specializes)
    assert all(a.site is b.site for a, b in zip(nodes[3:], nodes[6:]))
    assert nodes[0].site[0] == __file__
