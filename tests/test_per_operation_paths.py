"""The short paths a traced operation takes in Python loops (issue 44): x[i] and y[i] = v with an int,
np.roll by positions made once, np.stack of many pieces; the results are the closed forms, in both modes."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.check.diagnostics import first_nonfinite_primal
from jaccli.engine.seed_ops import getitem_on_block
from jaccli.engine.seeds import SparseBlock
from jaccli.errors import TracingError

from .helpers import central_diff

MODES = ["reverse", "forward"]


def _recorded(f, x) -> list[str]:
    """The names of the primitives f's recording holds, in order (the input first)."""
    return [node.prim.name for node in jaccli.jacobian(f, x)._ev.rec.trace.nodes]


@pytest.mark.parametrize("mode", MODES)
def test_an_element_loop_with_int_indices_is_the_closed_form(mode):
    def f(x):
        n = x.shape[0]
        y = np.zeros(n)
        for i in range(n):
            y[i] = x[i] * x[(i + 1) % n] + x[-1 - i]  # negative ints too
        return y

    x = np.linspace(0.5, 1.5, 6)
    n = x.size
    J = np.zeros((n, n))
    for i in range(n):
        J[i, i] += x[(i + 1) % n]
        J[i, (i + 1) % n] += x[i]
        J[i, n - 1 - i] += 1.0
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), J, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(jaccli.record_once(f), x + 0.5)),
                               central_diff(f, x + 0.5), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_an_int_index_of_a_matrix_takes_a_row_and_a_row_write_replaces_one(mode):
    def f(x):
        A = np.reshape(x, (3, 4))
        B = np.zeros((3, 4))
        for i in range(3):
            B[i] = A[2 - i] * A[i][1]  # a row times an element of another row
        B[-1] = B[-1] + A[-1]
        return np.reshape(B, (-1,))

    x = np.linspace(-1.0, 2.0, 12)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), central_diff(f, x),
                               rtol=1e-7, atol=1e-8)


def _calls(monkeypatch, module, name: str) -> list:
    """The arguments of each call of module.name from here on (it still runs)."""
    calls, inner = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: calls.append(args) or inner(*args))
    return calls


def _raises_as_numpy_does(f, error):
    """jaccli.jacobian(f) at ones(3) raises NumPy's own error, word for word."""
    with pytest.raises(error) as ours:
        jaccli.jacobian(f, np.ones(3))
    with pytest.raises(error) as numpys:
        f(np.ones(3))
    assert str(ours.value) == str(numpys.value)


def test_an_int_index_out_of_range_raises_numpys_error():
    def f(x):
        return x[7]

    _raises_as_numpy_does(f, IndexError)


def test_a_traced_index_is_still_refused():
    def f(x):
        return x[x[0]]

    with pytest.raises(TracingError, match="a traced .* value was used as an index"):
        jaccli.jacobian(f, np.ones(3))


def _lorenz96_step(x):
    return x + 0.01 * ((np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x + 8.0)


def _lorenz96_step_jacobian(x):
    n = x.size
    i = np.arange(n)
    A = -np.eye(n)
    A[i, (i + 1) % n] += x[(i - 1) % n]
    A[i, (i - 2) % n] -= x[(i - 1) % n]
    A[i, (i - 1) % n] += x[(i + 1) % n] - x[(i - 2) % n]
    return np.eye(n) + 0.01 * A


@pytest.mark.parametrize("mode", MODES)
def test_rolls_repeated_across_steps_and_calls_are_the_closed_form(mode):
    def steps(x):
        for _ in range(3):
            x = _lorenz96_step(x)
        return x

    for x in (np.linspace(7.5, 8.5, 8), np.linspace(-1.0, 1.0, 8), np.linspace(0.0, 1.0, 5)):
        J = np.eye(x.size)
        z = x
        for _ in range(3):
            J = _lorenz96_step_jacobian(z) @ J
            z = _lorenz96_step(z)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(steps, x, mode=mode)), J, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("mode", MODES)
def test_rolls_of_long_axes_swept_as_two_slices_are_the_closed_form(mode, monkeypatch):
    # n = 80: a block of 80 seeds is past indexing._ROTATE_FROM, so the sweep rotates by slices
    from jaccli.engine.rules import indexing

    rotations = _calls(monkeypatch, indexing, "_rotated")
    x = np.linspace(-1.0, 2.0, 80)
    J = _lorenz96_step_jacobian(_lorenz96_step(x)) @ _lorenz96_step_jacobian(x)
    got = np.asarray(jaccli.jacobian(lambda x: _lorenz96_step(_lorenz96_step(x)), x, mode=mode))
    np.testing.assert_allclose(got, J, rtol=1e-13, atol=1e-13)
    assert len(rotations) == 6  # two steps of three rolls
    A = np.reshape(np.linspace(0.5, 1.5, 160), (2, 80))  # a flat rotation of a matrix; one along axis 1 is not
    for shift, axis in ((7, None), (-3, None), (5, 1)):
        f = lambda a, shift=shift, axis=axis: np.roll(a, shift, axis) * a  # noqa: E731
        np.testing.assert_allclose(np.reshape(jaccli.jacobian(f, A, mode=mode), (160, 160)),
                                   np.reshape(central_diff(f, A), (160, 160)), rtol=1e-8, atol=1e-8)


def test_a_roll_of_a_vector_is_one_gather():
    assert _recorded(lambda x: np.roll(x, 1) * 2.0, np.ones(4)) == ["input", "gather", "np.multiply"]


@pytest.mark.parametrize("shift, axis", [(1, None), (-2, 0), ((1, -1), (0, 1)), ([1, 2], [0, 1]),
                                         (np.int64(3), 1), (np.array([1, 1]), (0, 1))])
def test_rolls_of_a_matrix_by_every_kind_of_shift_are_numpys(shift, axis):
    def f(x):
        return np.reshape(np.roll(np.reshape(x, (3, 4)), shift, axis) * np.reshape(x, (3, 4)), (-1,))

    x = np.linspace(0.5, 2.0, 12)
    pos = np.roll(np.arange(12).reshape(3, 4), shift, axis).reshape(-1)
    J = np.diag(x[pos])
    J[np.arange(12), pos] += x
    for _ in range(2):  # the second call takes the positions the first made
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), J, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(f, x, mode="forward")), J)


def test_a_roll_by_a_float_shift_is_numpys():
    J = np.asarray(jaccli.jacobian(lambda x: np.roll(x, 1.5), np.arange(4.0)))
    np.testing.assert_array_equal(J, np.eye(4)[np.roll(np.arange(4), 1.5)])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("mode", MODES)
def test_a_stack_of_many_pieces_is_the_closed_form(axis, mode):
    def f(x):
        pieces = [x[i] * x[i + 1] for i in range(x.shape[0] - 1)]
        rows = np.stack([np.stack([p, 2.0 * p]) for p in pieces], axis=axis)  # 1-D pieces too
        return np.reshape(rows, (-1,))

    x = np.linspace(0.5, 1.5, 7)
    n = x.size
    d = np.zeros((n - 1, n))
    d[np.arange(n - 1), np.arange(n - 1)] = x[1:]
    d[np.arange(n - 1), np.arange(1, n)] += x[:-1]
    both = np.stack([d, 2.0 * d], axis=1)  # (piece, which, input)
    J = (both if axis == 0 else np.swapaxes(both, 0, 1)).reshape(-1, n)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), J, rtol=1e-14, atol=1e-14)


def test_a_stack_of_plain_numbers_and_traced_pieces_is_numpys():
    def f(x):
        return np.stack([x[0], 1.0, x[1] * x[2]])

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), [[1, 0, 0], [0, 0, 0], [0, 3, 2]])


@pytest.mark.parametrize("pieces", [lambda x: [x, x[:2]], lambda x: [x[:2], np.ones(3)], lambda x: []])
def test_a_stack_of_pieces_of_different_shapes_raises_numpys_error(pieces):
    def f(x):
        return np.stack(pieces(x))

    _raises_as_numpy_does(f, ValueError)


def test_the_first_non_finite_value_is_found_through_element_writes():
    # y[1] = inf is overwritten before anything reads it: the NaN's origin is np.log
    def f(x):
        y = np.zeros(4)
        y[1] = np.inf
        for i in range(4):
            y[i] = x[i] * 2.0 if i != 2 else np.log(x[i] - 5.0)
        return y

    with np.errstate(all="ignore"):
        found = first_nonfinite_primal(jaccli.jacobian(f, np.ones(4))._ev.rec)
    assert (found.op, found.line) == ("np.log", f.__code__.co_firstlineno + 4)


@pytest.mark.parametrize("chunk", [1, 3, None])
def test_a_concatenation_of_many_pieces_swept_in_blocks_is_the_closed_form(chunk):
    # blocks of a few seeds: most pieces hold none of a block's entries
    def f(x):
        return np.concatenate([np.sin(x[4 * i:4 * i + 4]) * x[4 * i] for i in range(x.shape[0] // 4)])

    x = np.linspace(0.5, 1.5, 24)
    i = np.arange(x.size)
    J = np.diag(np.cos(x) * x[i // 4 * 4])
    J[i, i // 4 * 4] += np.sin(x)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode="reverse", chunk_size=chunk)), J,
                               rtol=1e-14, atol=1e-14)


def test_a_part_of_a_seed_block_that_holds_none_of_its_entries_is_zero():
    block = SparseBlock.one_hot(np.array([0, 1, 7]), (8,), np.float64)
    part = getitem_on_block(block, (slice(2, 6),))
    assert part.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(part), np.zeros((3, 4)))
    np.testing.assert_array_equal(np.asarray(getitem_on_block(block, (slice(6, 8),))), np.eye(8)[[0, 1, 7], 6:8])


@pytest.mark.parametrize("mode", MODES)
def test_an_array_times_a_number_pulls_back_as_one_product(mode, monkeypatch):
    # h * k of an integrator's step: the reverse rule is g * h itself, no broadcast undone
    from jaccli.engine.rules import ufunc_rules

    undone = _calls(monkeypatch, ufunc_rules, "unbroadcast")
    x = np.linspace(-1.0, 2.0, 5)
    f = lambda x: 0.25 * (2 * x) * np.float64(3.0) * x  # noqa: E731  (a float, an int, a NumPy float)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), np.diag(3.0 * x), rtol=1e-14)
    if mode == "reverse":
        assert undone == []
    with np.errstate(over="ignore"):  # an infinite number still takes the product that keeps 0 * inf apart
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(lambda x: np.inf * x[:1], x, mode=mode)),
                                      [[np.inf, 0.0, 0.0, 0.0, 0.0]])


_OPERANDS = {"array": np.array([0.5, -1.0, 2.0]), "float": 0.75, "int": 3, "float64": np.float64(1.25),
             "bool": True, "list": [0.5, 0.25, -0.5]}


@pytest.mark.parametrize("other", sorted(_OPERANDS))
@pytest.mark.parametrize("mode", MODES)
def test_ufuncs_called_through_fs_module_are_numpys_with_any_operand(other, mode):
    # np here is jaccli's stand-in while f runs: a ufunc of a traced array and plain operands calls the
    # traced array's __array_ufunc__ itself, a list or a keyword takes NumPy's way there
    c = _OPERANDS[other]

    def f(x):
        return np.hypot(x, c) + np.multiply(c, x) + np.sin(x) + np.add(x, x, dtype=float)

    x = np.array([0.3, 1.1, -0.7])
    ca = np.asarray(c, dtype=float)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)),
                    np.diag(x / np.hypot(x, ca) + ca + np.cos(x) + 2.0), rtol=1e-12)
    np.testing.assert_allclose(jaccli.vjp(f, x, np.ones(3))[0], f(x), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), central_diff(f, x), rtol=1e-6, atol=1e-8)


def test_a_ufunc_called_through_fs_module_with_out_is_still_refused():
    def f(x):
        buf = np.empty(3)
        return np.sin(x, buf)

    with pytest.raises(TracingError, match=r"np.sin\(\.\.\., out=\.\.\.\) writes into an existing array"):
        jaccli.jacobian(f, np.ones(3))
