"""Sweeps and replays through element writes (y[i] = v) write into the block they own.

A reverse sweep turns the cotangent of y after a write into the cotangent of y before it by
zeroing the written part in place, and a forward sweep writes the tangent of v into the tangent of
y; a replay of the recording writes into the array as the recording did. A loop of n writes then
costs O(K) per write, not a copy of the whole K-row block per write. These tests check the values
against finite differences where the in-place steps could alias (a value written twice, read
before a write, seen through a view, written in several places), and that a loop of writes makes
no block copy per write.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
from jaccli.check.diagnostics import first_nonfinite_primal
from jaccli.engine.sweep_plans import Plan
from jaccli.engine.tracer import memory_root
from jaccli.engine.recording import Recording
from jaccli.replay import Replayable
from jaccli.engine.rules import indexing
from tests.helpers import central_diff

A = np.random.default_rng(11).standard_normal(200)


def _mix(m, n):
    """A fixed dense m x n matrix: multiplying f's output by it makes every seed block dense."""
    return np.resize(A, (m, n))


def _stencil(x):
    r = np.zeros_like(x)
    for i in range(1, len(x) - 1):
        r[i] = x[i - 1] - 2.0 * x[i] + x[i + 1] + x[i] ** 3
    r[0] = x[0]
    r[-1] = x[-1]
    return r


def _stencil_jacobian(x):
    n = len(x)
    J = np.zeros((n, n))
    J[0, 0] = J[-1, -1] = 1.0
    for i in range(1, n - 1):
        J[i, i - 1] = J[i, i + 1] = 1.0
        J[i, i] = -2.0 + 3.0 * x[i] ** 2
    return J


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_loop_of_writes_copies_the_seed_block_a_bounded_number_of_times(mode, monkeypatch):
    n = 60
    M = np.random.default_rng(1).standard_normal((n, n))
    x = np.random.default_rng(2).standard_normal(n)
    J = jaccli.jacobian(lambda x: M @ _stencil(x), x, mode=mode)  # recorded here; swept below
    copies = []
    impl = indexing.assign.impl
    monkeypatch.setattr(indexing.assign, "impl", lambda a, v, idx: copies.append(np.ndim(a)) or impl(a, v, idx))
    np.testing.assert_allclose(np.asarray(J), M @ _stencil_jacobian(x), rtol=1e-12, atol=1e-12)
    blocks = sum(1 for d in copies if d > 1)
    assert blocks <= 2, f"{blocks} copies of a seed block for {n} writes"


def _written_twice(x):
    y = x * 1.0
    y[0] = x[1] ** 2
    y[0] = np.sin(x[2])            # the first write's value reaches nothing
    return y


def _one_value_in_many_places(x):
    y = np.zeros_like(x)
    v = x[0] * x[1]
    for i in range(1, len(x)):
        y[i] = v                   # v's cotangent gathers a part of y's from each write
    y[0] = v * x[3]
    return y


def _read_then_written(x):
    y = x ** 2
    for i in range(len(x) - 1):
        y[i] = y[i + 1] * x[i]     # reads y's current value just before writing it
    return y


def _view_read_before_writes(x):
    y = np.zeros_like(x)
    y[1] = x[0] * 3.0
    head = y[0:3]                  # a view of y (its tangent a view of y's tangent) ...
    scaled = head * x[3:6]         # ... read before the writes below
    y[0] = x[2] ** 2
    y[2] = np.exp(x[1])
    return np.concatenate([scaled, y])


def _blocks_and_broadcasts(x):
    Y = np.zeros((3, 3))
    Y = Y + 0.0 * x[:3]            # traced from here on
    Y[1] = x[:3] * x[3]
    Y[:, 2] = x[4]                 # one value broadcast down a column
    Y[0, 0:2] = np.cos(x[5:7])
    Y[2, :] = Y[1, :] + x[8]
    return Y.ravel()


def _two_arrays_in_turn(x):
    a = np.zeros_like(x)
    b = np.ones_like(x)
    for i in range(len(x)):
        a[i] = b[i - 1] * x[i]
        b[i] = a[i] + x[i - 1] ** 2
    return np.concatenate([a, b])


_CASES = [_written_twice, _one_value_in_many_places, _read_then_written, _view_read_before_writes,
          _blocks_and_broadcasts, _two_arrays_in_turn, _stencil]


@pytest.mark.parametrize("f", _CASES)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("mixed", [False, True])
def test_writes_swept_in_place_match_finite_differences(f, mode, mixed):
    x = np.random.default_rng(5).uniform(0.5, 1.5, 9)
    g = (lambda x: _mix(7, np.size(f(x))) @ f(x)) if mixed else f
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x, mode=mode)), central_diff(g, x),
                               rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("f", _CASES)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_hessians_through_writes_swept_in_place(f, mode):
    x = np.random.default_rng(6).uniform(0.5, 1.5, 9)
    w = np.random.default_rng(7).standard_normal(np.size(f(x)))

    def loss(x):
        return (w * f(x) ** 2).sum()

    np.testing.assert_allclose(np.asarray(jaccli.hessian(loss, x, mode=mode)),
                               central_diff(lambda y: jaccli.grad(loss, y), x), rtol=1e-6, atol=1e-6)


@st.composite
def _programs(draw):
    """A random sequence of writes into y, reads of y (directly and through views), copies of y kept
    to the end, and products that make a new y."""
    steps = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["write", "write_read", "slice", "view", "copy", "scale"]))
        steps.append((kind, draw(st.integers(0, 5)), draw(st.integers(0, 5)), draw(st.integers(1, 3))))
    return steps


def _program_f(steps):
    def f(x):
        y = np.zeros_like(x) if steps[0][1] % 2 else x * 1.0
        kept = []
        for kind, i, j, w in steps:
            if kind == "write":
                y[i] = x[j] ** 2 * w
            elif kind == "write_read":
                y[i] = y[j] * x[i] + np.sin(x[j])
            elif kind == "slice":
                y[i:i + w] = x[j] * np.arange(1.0, 1.0 + len(y[i:i + w]))
            elif kind == "view":
                kept.append(y[min(i, j):max(i, j) + 1] * x[j])  # read through a view, then written
            elif kind == "copy":
                kept.append(y.copy())
            else:
                y = y * (w + 0.5)                         # a new array: later writes go into it
        z = np.concatenate([y] + kept)
        return _mix(4, z.size) @ z
    return f


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs(), st.sampled_from(["reverse", "forward"]))
def test_random_programs_of_writes_views_and_copies(steps, mode):
    x = np.random.default_rng(8).uniform(0.5, 1.5, 6)
    f = _program_f(steps)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x, mode=mode)), central_diff(f, x),
                               rtol=1e-6, atol=1e-6)


def _arrays_as_large_as(rec, nbytes):
    """How many distinct arrays of at least `nbytes` the recording's values hold (views once)."""
    return len({id(memory_root(node.value)) for node in rec.trace.nodes
                if isinstance(node.value, np.ndarray) and memory_root(node.value).nbytes >= nbytes})


def test_a_replay_writes_into_one_array_as_the_recording_did():
    n = 2000
    x = np.linspace(0.0, 1.0, n)
    rec = Replayable(_stencil, [x], [0])
    replayed = rec.replay([x + 1.0])
    assert replayed is not None
    assert sum(node.in_place for node in replayed.trace.nodes) == n
    assert _arrays_as_large_as(replayed, x.nbytes) == 2  # the input and the one y
    np.testing.assert_allclose(replayed.outputs[0], _stencil(x + 1.0), rtol=1e-15, atol=0)
    once = jaccli.record_once(_stencil)
    for point in (x[:40], x[:40] + 1.0, x[:40] - 0.5):
        for mode in ("reverse", "forward"):
            np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, point, mode=mode)), _stencil_jacobian(point),
                                       rtol=1e-13, atol=1e-13)
    assert once.replays >= 4


def test_a_replay_keeps_whether_each_overwritten_version_was_finite():
    # The versions of y share one array in the replay too: whether each was finite is kept at the
    # write, so the origin of the NaN is np.log, not y[2] = inf (overwritten before the log ran).
    def f(x):
        y = np.zeros_like(x)
        y[2] = np.inf
        for i in range(len(x)):
            y[i] = x[i] ** 2 if i != 4 else np.log(x[i] - 5.0)
        y[5] = 1.0
        return y

    with np.errstate(all="ignore"):
        rec = Replayable(f, [np.linspace(6.0, 7.0, 6)], [0])  # all finite but y[2] = inf
        replayed = rec.replay([np.linspace(1.0, 2.0, 6)])                    # log of a negative number
        found = first_nonfinite_primal(replayed)
    assert sum(node.in_place for node in replayed.trace.nodes) == 8
    assert (found.op, found.line) == ("np.log", f.__code__.co_firstlineno + 4)


class _BusyPlans(dict):
    """A recording's plans while a sweep in another thread adds one: iterating it sees the change."""

    def items(self):
        items = iter(super().items())
        first = next(items)
        self[("rev", (), len(self))] = []
        yield first
        yield from items


def test_a_replay_while_another_thread_adds_a_sweep_plan():
    x = np.linspace(0.5, 1.0, 6)
    rec = Replayable(_stencil, [x], [0])
    np.asarray(jaccli.jacobian(_stencil, x))
    plan = Plan([rec.trace.nodes[0]])
    plan.cut = frozenset()
    rec.trace._plans = _BusyPlans({("rev", ((0, None),), 1): plan})
    replayed = rec.replay([x + 1.0])
    assert replayed is not None
    np.testing.assert_allclose(replayed.outputs[0], _stencil(x + 1.0), rtol=1e-15, atol=0)
