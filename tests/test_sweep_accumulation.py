"""Reverse sweeps gather one cotangent per consumer of a value: the sums must be right and linear.

A value read by many operations (x[i] in a loop, the pieces of a long np.stack) gets many
cotangents. The sweep adds them into a sum it made itself, in place, and joins entry-sparse
blocks once; these tests check the values against closed forms and finite differences, that a
sum handed to a rule is never changed afterwards, and that no block is made dense per piece.
"""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.check.diagnostics import first_nonfinite_primal
from jaccli.engine.tracer import memory_root
from jaccli.engine.recording import Recording
from tests.helpers import central_diff, densified_blocks


def _pairs(x):
    n = len(x)
    return np.stack([x[i] * x[i + 1] for i in range(n - 1)])


def _pairs_jacobian(x):
    n = len(x)
    J = np.zeros((n - 1, n))
    i = np.arange(n - 1)
    J[i, i] = x[1:]
    J[i, i + 1] = x[:-1]
    return J


@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
def test_jacobian_of_a_long_stack_of_scalar_pieces(mode):
    x = np.random.default_rng(0).standard_normal(60)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(_pairs, x, mode=mode)), _pairs_jacobian(x),
                               rtol=0, atol=1e-15)


def test_reverse_through_a_long_stack_never_densifies_a_block_per_piece(monkeypatch):
    # Each piece's cotangent is a slice of the identity seed, and each reaches x as one entry per
    # seed. Made dense per piece, that is O(n) dense K x n blocks: O(n^3) time for n pieces.
    calls = densified_blocks(monkeypatch)
    x = np.random.default_rng(1).standard_normal(200)
    J = np.asarray(jaccli.jacobian(_pairs, x, mode="reverse"))
    np.testing.assert_allclose(J, _pairs_jacobian(x), rtol=0, atol=1e-15)
    assert len(calls) <= 4, f"{len(calls)} dense blocks made for 199 pieces"


def _shared_then_read_again(x):
    # s's cotangent is a sum (s is read twice); the add rule hands that same array to a and b.
    # c, recorded after b, sends a's second part afterwards: were it added into the shared sum
    # in place, b (swept last) would see it too.
    a = np.sin(x)
    b = np.cos(x)
    c = a * 3.0
    s = a + b
    return s + 2.0 * s + c


def _shared_then_read_again_jacobian(x):
    return np.diag(3.0 * np.cos(x) - 3.0 * np.sin(x) + 3.0 * np.cos(x))


def test_a_sum_handed_to_a_rule_is_not_changed_afterwards():
    x = np.linspace(-1.0, 1.0, 7)
    v = np.arange(1.0, 8.0)
    np.testing.assert_allclose(jaccli.vjp(_shared_then_read_again, x, v)[1],
                               v @ _shared_then_read_again_jacobian(x), rtol=1e-14, atol=1e-14)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(_shared_then_read_again, x, mode=mode)),
                                   _shared_then_read_again_jacobian(x), rtol=1e-14, atol=1e-14)


def _element_loop(x):
    # x[i] read twice per step, and each read's cotangent scattered back into x's.
    s = 0.0
    for i in range(len(x) - 1):
        s = s + x[i] * x[i + 1] + np.sin(x[i])
    return s


def test_gradient_and_hessian_of_an_element_loop_match_finite_differences():
    x = np.random.default_rng(2).standard_normal(30)
    g = jaccli.grad(_element_loop, x)
    expected = np.cos(x)
    expected[-1] = 0.0
    expected[:-1] += x[1:]
    expected[1:] += x[:-1]
    np.testing.assert_allclose(g, expected, rtol=1e-14, atol=1e-14)
    H = np.asarray(jaccli.hessian(_element_loop, x))
    np.testing.assert_allclose(H, central_diff(lambda y: jaccli.grad(_element_loop, y), x), rtol=1e-6, atol=1e-7)


def test_two_joins_with_the_same_number_of_pieces_keep_their_own_offsets():
    # The offsets of one join's pieces are computed once for all its rules; another join of as
    # many pieces (other sizes) must not reuse them.
    def f(x):
        return np.concatenate([x[:2], x[2:]]) * np.concatenate([x[:5], x[5:]]) + np.stack([x[:4], x[4:]]).sum(0)[0]

    x = np.random.default_rng(3).standard_normal(8)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), central_diff(f, x),
                                   rtol=1e-7, atol=1e-8)


def _written_in_a_loop(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i] ** 2 + x[i - 1]  # x[-1] for i = 0
    return y


def _written_in_a_loop_jacobian(x):
    n = len(x)
    J = np.diag(2.0 * x)
    J[np.arange(n), np.arange(n) - 1] += 1.0
    return J


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_element_writes_in_a_loop(mode, monkeypatch):
    # Each write y[i] = v is one copy of y with the part replaced; its reverse rule zeroes that
    # part of the seed. Structured seeds stay structured through it: no dense block per write.
    calls = densified_blocks(monkeypatch)
    x = np.random.default_rng(4).standard_normal(120)
    J = np.asarray(jaccli.jacobian(_written_in_a_loop, x, mode=mode))
    np.testing.assert_allclose(J, _written_in_a_loop_jacobian(x), rtol=0, atol=1e-15)
    if mode == "reverse":
        assert len(calls) <= 4, f"{len(calls)} dense blocks made for 120 writes"


def _held_bytes(rec):
    """Bytes of the distinct arrays the recording's values hold (views and shared memory once)."""
    roots = {}
    for node in rec.trace.nodes:
        for v in node.value if isinstance(node.value, tuple) else (node.value,):
            if isinstance(v, np.ndarray):
                roots[id(memory_root(v))] = memory_root(v).nbytes
    return sum(roots.values())


def test_a_write_in_a_loop_writes_into_the_array_the_recording_made():
    # y is the recording's own (zeros_like), no rule reads its values and nothing else can see
    # them after the write: each y[i] = v writes into y's memory, so n writes keep one y, not n.
    n = 2000
    rec = Recording(_written_in_a_loop, [np.ones(n)], [0])
    assert sum(node.in_place for node in rec.trace.nodes) == n
    assert _held_bytes(rec) <= 4 * n * 8, f"{_held_bytes(rec) / (n * 8):.1f} arrays of y's size held"


def _read_before_the_write(x):
    y = x + 0.0              # the recording's own memory, but the rules of sin and multiply read y
    z = np.sin(y) * y
    y[1] = 5.0 * x[0]
    return z + y


def _view_read_later(x):
    y = x + 0.0
    head = y[0:2]            # a view: its values are those of y's memory
    w = head * x[1:3]        # multiply reads head's values when differentiated
    y[1] = x[2] ** 2         # head is stale from here, but w's rule still reads head's old values
    return np.concatenate([w, y])


def _copied_then_written(x):
    y = x.copy()
    old = y                  # the same array: it sees the write, as in NumPy
    y[0] = 3.0 * x[1]
    frozen = y.copy()
    y[2] = y[0] * x[2]       # y[0] is a one-element read (a copy): no view pins y
    frozen[1] = 0.0          # its own memory: y is not changed
    return y + old + frozen


@pytest.mark.parametrize("f", [_read_before_the_write, _view_read_later, _copied_then_written])
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_writes_keep_every_value_a_rule_reads(f, mode):
    x = np.array([0.3, -1.2, 0.7, 2.0])
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), central_diff(f, x),
                               rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(np.asarray(jaccli.hessian(lambda x: (f(x) ** 2).sum(), x, mode=mode)),
                               central_diff(lambda y: jaccli.grad(lambda x: (f(x) ** 2).sum(), y), x),
                               rtol=1e-6, atol=1e-6)


def test_an_input_and_a_callers_array_are_never_written_into():
    x = np.array([1.0, 2.0, 3.0])
    c = np.array([4.0, 5.0, 6.0])

    def f(x):
        x[0] = 2.0 * x[1]    # the input itself: jaccli's own copy, written functionally
        y = x + c
        y[2] = 0.0
        return y

    J = np.asarray(jaccli.jacobian(f, x))
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(c, [4.0, 5.0, 6.0])
    np.testing.assert_allclose(J, [[0, 2, 0], [0, 1, 0], [0, 0, 0]])


def test_loop_writes_replayed_and_nested():
    # record_once replays the writes; a Jacobian of a Jacobian records them on two levels.
    x = np.random.default_rng(6).standard_normal(30)
    once = jaccli.record_once(_written_in_a_loop)
    for point in (x, x + 1.0, x):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, point)), _written_in_a_loop_jacobian(point),
                                   rtol=0, atol=1e-15)
    H = np.asarray(jaccli.hessian(lambda x: _written_in_a_loop(x).sum(), x))
    np.testing.assert_allclose(H, np.diag(np.full(30, 2.0)), rtol=0, atol=1e-15)
    JJ = jaccli.jacobian(lambda x: jaccli.jacobian(_written_in_a_loop, x, create_graph=True)[3], x)
    np.testing.assert_allclose(np.asarray(JJ)[3], np.eye(30)[3] * 2.0, rtol=0, atol=1e-15)


def test_the_first_non_finite_value_is_found_through_writes_into_one_array():
    # The versions of y share one array; whether each was finite is kept at the write.
    def f(x):
        y = np.zeros_like(x)
        y[2] = np.inf                         # overwritten below: not the origin
        for i in range(len(x)):
            y[i] = x[i] ** 2 if i != 4 else np.log(x[i] - 5.0)
        y[5] = 1.0
        return y

    def g(x):
        y = x * 1.0
        y[1] = 2.0 * x[0]
        y[3] = np.nan
        y[0] = 1.0
        return y

    x = np.linspace(1.0, 2.0, 6)
    with np.errstate(all="ignore"):
        at_f = first_nonfinite_primal(Recording(f, (x,), (0,)))
        at_g = first_nonfinite_primal(Recording(g, (x,), (0,)))
    assert (at_f.op, at_f.line) == ("np.log", f.__code__.co_firstlineno + 4)
    assert (at_g.op, at_g.line, at_g.values, list(at_g.element)) == ("assign", g.__code__.co_firstlineno + 3, "nan", [3])


def test_a_write_keeps_the_arrays_dtype_as_numpy_does():
    def f(x):
        y = x * 1.0
        y[0] = 2.0 * x[1]
        y[1:] = 0.5
        return y

    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    assert f(x).dtype == np.float32
    assert Recording(f, [x], [0]).outputs[0].dtype == np.float32
    J = np.asarray(jaccli.jacobian(f, x))
    assert J.dtype == np.float32
    np.testing.assert_array_equal(J, [[0, 2, 0], [0, 0, 0], [0, 0, 0]])


@pytest.mark.parametrize("inner, axis", [((), 0), ((3,), 1), ((3,), 0), ((2, 3), 2)])
def test_a_join_hands_each_piece_a_contiguous_slice_of_its_seeds(inner, axis):
    # A vector joined takes its pieces from the seeds made dense in column order: each piece one
    # run of memory (a stack of 3000 scalars: a column of a 3000 x 3000 block each, read a page
    # apart per element in row order, was 40% of a replay). Other joins: the values.
    from jaccli.engine.rules.joining import _concat_vjp_joint
    from jaccli.engine.seeds import SparseBlock

    xs = [np.full(inner[:axis] + (1,) + inner[axis:], float(i)) for i in range(7)]
    ans = np.concatenate(xs, axis=axis)
    k = ans.size
    g = SparseBlock.one_hot(np.arange(k), ans.shape, np.float64)
    pieces = _concat_vjp_joint(ans, *xs, axis=axis)(g)
    eye = np.eye(k).reshape((k,) + ans.shape)
    for i, piece in enumerate(pieces):
        np.testing.assert_array_equal(piece, np.take(eye, [i], axis=axis + 1) if axis else eye[:, i:i + 1])
        if ans.ndim == 1:
            assert piece.flags.f_contiguous or piece.flags.c_contiguous


def _columns(x):
    X = x.reshape(4, -1)
    return np.stack([X[:, j] * X[:, j + 1] for j in range(X.shape[1] - 1)], axis=-1)


def test_stacks_and_concatenations_along_the_last_axis_replayed(monkeypatch):
    x = np.random.default_rng(3).standard_normal(24)
    joined = lambda x: np.concatenate([np.sin(x[2 * i:2 * i + 2]) * x[2 * i] for i in range(12)])  # noqa: E731
    for f in (_columns, joined):
        once = jaccli.record_once(f)
        for k in range(8):  # the recording, replays node by node, then its compiled sweep
            xk = x * (1 + 0.01 * k)
            want = central_diff(f, xk)
            for mode in ("reverse", "forward"):
                np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, xk, mode=mode)), want,
                                           rtol=1e-7, atol=1e-8)
