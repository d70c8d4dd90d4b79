"""Replays as compiled code (jaccli/replay/codegen.py, replay_trace.py): a record_once function's replay
runs its recorded operations as one compiled function, and makes its nodes only when a sweep reads
them. Each test compares against an independent reference (closed form, central differences, or
NumPy running f itself) at points other than the recorded one.
"""

from __future__ import annotations

import sys
import threading
import tracemalloc

import numpy as np
import pytest

import jaccli
from jaccli.engine import COPIES_SUM, WRITES_ARGUMENT
from jaccli.engine.rules import _util
from jaccli.engine.traced_in_place import ADD_INTO, PULLED
from jaccli.replay import codegen, compiled_sweeps as programs
from jaccli.replay.replay_trace import ReplayTrace
from tests.helpers import central_diff


def _replay_of(g):
    rec = g._cache[next(iter(g._cache))]
    return rec


def _mlp():
    rng = np.random.default_rng(0)
    W1, b1, W2 = rng.standard_normal((12, 5)) / 2, rng.standard_normal(12), rng.standard_normal((4, 12))
    return (lambda x: W2 @ np.tanh(W1 @ x + b1)), (W1, b1, W2)


def test_a_replay_answered_by_a_program_makes_no_nodes(monkeypatch):
    monkeypatch.setattr(programs, "worth_keeping", lambda *results: True)
    f, (W1, b1, W2) = _mlp()
    g = jaccli.record_once(f)
    rng = np.random.default_rng(1)
    for _ in range(8):
        x = rng.standard_normal(5)
        h = np.tanh(W1 @ x + b1)
        J = jaccli.jacobian(g, x)
        np.testing.assert_allclose(np.asarray(J), (W2 * (1 - h * h)) @ W1, rtol=1e-13)
    rec = J._ev.rec  # (the replay the lazy object holds: record_once keeps one without its values)
    assert type(rec.trace) is ReplayTrace and rec.trace._pending is not None  # values only: no Node made
    np.testing.assert_array_equal(rec.outputs[0], f(x))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_the_nodes_a_usual_sweep_reads_are_made_from_the_replayed_values(monkeypatch, mode):
    monkeypatch.setattr(programs, "worth_keeping", lambda *results: False)  # every sweep the usual way

    def f(x):
        return np.sin(x[:3] * x[1:]) * np.exp(x[0]) + np.sum(x ** 2)

    g = jaccli.record_once(f)
    rng = np.random.default_rng(2)
    for _ in range(4):
        x = rng.uniform(-1, 1, 4)
        J = jaccli.jacobian(g, x, mode=mode)
        np.testing.assert_allclose(np.asarray(J), central_diff(f, x), rtol=1e-7, atol=1e-9)
    rec = J._ev.rec
    assert type(rec.trace) is ReplayTrace and rec.trace._pending is None  # made, for the usual sweep
    assert [n.index for n in rec.trace.nodes] == list(range(len(rec.trace.values())))
    for node, value in zip(rec.trace.nodes, rec.trace.values()):
        assert node.value is value
        for i, parent, index in node.parents:
            assert node.args[i] is (parent.value if index is None else parent.value[index])


def test_threads_reading_one_replay_share_one_set_of_nodes():
    def f(x):
        for _ in range(400):  # enough nodes that making them takes many thread switches
            x = np.sin(x) * 0.9
        return x

    g = jaccli.record_once(f)
    jaccli.jacobian(g, np.ones(3))
    rec = g._cache[next(iter(g._cache))].replay((np.full(3, 0.5),))
    start = threading.Barrier(8)
    seen = []

    def read():
        start.wait()
        seen.append(rec.trace.nodes)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=read) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(seen) == 8 and all(s is seen[0] for s in seen)
    assert rec.in_nodes[0] is seen[0][0] and rec.out_refs[0][0] is seen[0][-1]
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, np.full(3, 0.5), mode="reverse")),
                               central_diff(f, np.full(3, 0.5)), rtol=1e-6, atol=1e-9)


def test_a_guard_that_changes_makes_the_compiled_replay_give_way_to_a_new_recording():
    def f(x):
        return x ** 2 if x.sum() > 0 else -x ** 3

    g = jaccli.record_once(f)
    for x in ([1.0, 2.0], [0.5, 0.25], [-1.0, -3.0], [-2.0, 0.5]):
        x = np.array(x)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), central_diff(f, x), rtol=1e-7, atol=1e-9)
    assert g.records == 2 and g.misses == 1


def test_compiled_steps_check_guards_and_give_none_where_one_fails_or_a_call_raises():
    steps = [(2, np.multiply, (None, None), ((0, 0, None), (1, 1, None)), {}, None, codegen.STEP),
             (-1, np.greater, (None, 0.0), ((0, 2, None),), {}, None, np.array([True, True])),
             (3, np.sqrt, (None,), ((0, 2, None),), {}, {"invalid": "raise", "divide": "raise", "over": "raise",
                                                         "under": "ignore"}, codegen.STEP)]
    run = codegen.compile_steps(steps, {0: ("vals", 0), 1: ("seeds", 0)}, [("slot", 3, None), ("copy", np.ones(2))])
    a, b = np.array([1.0, 4.0]), np.array([9.0, 1.0])
    got = run([a], (b,))
    np.testing.assert_array_equal(got[0], np.sqrt(a * b))
    assert got[1] is not run([a], (b,))[1]  # a constant is handed out as a fresh copy
    assert run([a], (np.array([-1.0, 1.0]),)) is None  # the guard on a * b > 0 fails
    assert run([a], (np.array([1.0]),)) is not None  # broadcasting: the same guard's result
    assert run([np.array([1.0, 2.0, 3.0])], (b,)) is None  # a call raises (shapes do not broadcast)


def test_a_constant_argument_that_is_none_is_passed_as_none():
    # np.clip(x, None, 1.0) as the engine records it: the None is an argument, not a place to fill
    steps = [(1, np.clip, (None, None, 1.0), ((0, 0, None),), {}, None, codegen.STEP)]
    run = codegen.compile_steps(steps, {0: ("vals", 0)}, [("slot", 1, None)])
    np.testing.assert_array_equal(run([np.array([0.5, 2.0, -3.0])])[0], np.clip([0.5, 2.0, -3.0], None, 1.0))


@pytest.mark.parametrize("expected", [True, False, None])
def test_a_guard_of_a_singleton_holds_for_that_singleton_alone(expected):
    # a guard that gave True, False or None holds where the check gives that same object again, as
    # guards.same judges: not where it gives the other value, nor NumPy's np.True_/np.False_
    def check(v):
        return v[0] if type(v[0]) is not np.ndarray else bool(v[0].all())
    steps = [(-1, check, (None,), ((0, 0, None),), {}, None, expected)]
    run = codegen.compile_steps(steps, {0: ("vals", 0)}, [("copy", 1.0)])
    others = [True, False, None, np.True_, np.False_, 1, 0]
    for value in others:
        assert (run([[value]]) is not None) == (type(value) is type(expected) and value == expected), value


def test_a_guard_that_an_earlier_one_repeats_is_checked_once_and_one_on_other_values_is_kept():
    # A sweep checks that a factor is finite at each rule that reads it: the same function of the
    # same slot gives the same verdict, so it runs once; the same function of another slot, or
    # with another expected value, is a guard of its own.
    calls = []

    def finite(v):
        calls.append(1)
        return bool(np.isfinite(v).all())

    def guard(slot, expected=True):
        return (-1, finite, (None,), ((0, slot, None),), {}, None, expected)
    steps = [guard(0), (1, np.negative, (None,), ((0, 0, None),), {}, None, codegen.STEP), guard(0), guard(1), guard(0)]
    run = codegen.compile_steps(steps, {0: ("vals", 0)}, [("slot", 1, None)])
    np.testing.assert_array_equal(run([np.array([1.0, 2.0])])[0], [-1.0, -2.0])
    assert len(calls) == 2  # slot 0 once, slot 1 once
    assert run([np.array([1.0, np.inf])]) is None  # the guard still holds the replay back
    calls.clear()
    run = codegen.compile_steps([guard(0), guard(0, expected=False)], {0: ("vals", 0)}, [("copy", 1.0)])
    assert run([np.array([1.0])]) is None and len(calls) == 2  # a different expected value: both checked


def _loop(x):
    for _ in range(700):  # 2100 recorded operations (a long recording: compiled in chunks, codegen.CHUNK)
        x = np.sin(x) * 0.9 + 0.01 * x
    return x


def _counted(monkeypatch):
    """How many times each step of compiling a recording was taken (replays.Replayable)."""
    from jaccli.replay import replay_trace, result_checks

    made = {"forward": 0, "traced": 0, "compiled": 0, "checked": 0}
    real = {"forward": replay_trace.compile_forward, "traced": programs.traced, "compiled": programs.Traced.compiled,
            "checked": result_checks.agrees}

    def counting(name):
        def run(*args, **kw):
            made[name] += 1
            return real[name](*args, **kw)
        return run
    monkeypatch.setattr(replay_trace, "compile_forward", counting("forward"))
    monkeypatch.setattr(programs, "traced", counting("traced"))
    monkeypatch.setattr(programs.Traced, "compiled", counting("compiled"))
    monkeypatch.setattr(result_checks, "agrees", counting("checked"))
    return made


@pytest.mark.parametrize("case", ["long", "short"])
def test_a_recording_is_compiled_by_its_replays_one_step_a_call(monkeypatch, case):
    # issue 43 and 44: no call may cost much more than a plain one (the first replay of a
    # Hessian cost 8-10, recording a loop's program 3.3): the first replay compiles nothing,
    # and each later one does one step of the work, for a short recording as for a long one
    from jaccli.replay import replays

    made = _counted(monkeypatch)
    f, reference = (_loop, lambda x: central_diff(_loop, x)) if case == "long" else \
        (lambda x: np.sin(x) * x, lambda x: np.diag(np.cos(x) * x + np.sin(x)))
    g = jaccli.record_once(f)
    seen, paths = [], []
    for k in range(7):
        x = np.array([0.3, -0.2, 0.5]) + 0.01 * k
        J = jaccli.jacobian(g, x, mode="forward")
        np.testing.assert_allclose(np.asarray(J), reference(x), rtol=1e-6, atol=1e-9)
        seen.append(tuple(made.values()))
        paths.append(J._ev.rec.path)
    # (forward, traced, compiled, checked) after each call: recorded; replayed node by node; forward
    # compiled; sweep traced; compiled; checked; run
    assert seen == [(0, 0, 0, 0), (0, 0, 0, 0), (1, 0, 0, 0), (1, 1, 0, 0), (1, 1, 1, 0), (1, 1, 1, 1),
                    (1, 1, 1, 1)]
    assert paths == ["recording"] + ["replay"] * 5 + [replays.COMPILED_SWEEP]


def _stacked(x):
    return np.stack([x[i] * x[i + 1] for i in range(x.shape[0] - 1)])


def _peak(f, x, **kwargs):
    """The peak of the memory Python and NumPy allocate during jacobian(f, x), and the Jacobian. No call
    starts with a zero block an earlier one gave back (rules/_util.recycle_block), made before the count
    began and so free to it: a test before this one could leave one of the right shape for the plain
    call alone (the stack's ratio read 1.70 after other tests, 1.2 on its own)."""
    _util._SPARE.v = _util._ISSUED.v = None
    tracemalloc.start()
    try:
        J = np.asarray(jaccli.jacobian(f, x, **kwargs))
        return tracemalloc.get_traced_memory()[1], J
    finally:
        tracemalloc.stop()


def _replays(f, n):
    """Six replays of record_once(f) at new points after its recording: (x, J, the replay's peak
    over a plain call's) each."""
    g = jaccli.record_once(f)
    x = np.linspace(0.5, 1.5, n)
    _peak(g, x)  # the recording
    plain = min(_peak(f, x)[0] for _ in range(2))
    for k in range(6):
        x = np.linspace(0.5, 1.5, n) + 0.01 * k
        used, J = _peak(g, x)
        yield x, J, used / plain


def test_a_sweep_whose_results_are_too_many_to_keep_is_never_traced(monkeypatch):
    # issues 43 and 44: tracing a sweep costs more than the sweep; where its program would be
    # refused for the numbers its results hold (P4-B256-n64, P2-n1000-m1000: 2.1-3.6 plain calls on
    # the call that traced), the usual sweep's results say so before any tracing
    monkeypatch.setattr(programs, "MAX_STORED_PER_NODE", 2)  # 3 x 3 results of 3 operations: 9 > 6
    seeded, traced = [], programs.traced
    monkeypatch.setattr(programs, "traced", lambda *args, **kw: seeded.append(type(args[4][0])) or traced(*args, **kw))
    g = jaccli.record_once(lambda x: x * np.sum(x))
    for k in range(7):
        x = np.array([0.3, -0.2, 0.5]) + 0.01 * k
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x, mode="reverse")),
                                   np.sum(x) * np.eye(3) + np.outer(x, np.ones(3)), rtol=1e-13)
    # the identity seeds as a structured block (replays.answer's `alt`) make results of another
    # form, which only tracing tells; the dense seeds' results are the usual sweep's
    assert seeded == [programs.SparseBlock]


def test_once_a_block_of_rows_is_refused_as_a_program_the_other_blocks_are_not_traced(monkeypatch):
    # issue 44's concatenation: each of a Jacobian's six blocks of rows was traced and refused
    # on one call (0.2-1.8 s each, 3.7 plain calls); a block of another size is of the same sort
    tried = []
    monkeypatch.setattr(programs, "traced", lambda *args, **kw: tried.append(type(args[4][0])) and None)
    g = jaccli.record_once(lambda x: np.concatenate([np.sin(x), x ** 3, x[:1] * x[2:]]))
    for k in range(7):
        x = np.array([0.3, -0.2, 0.5]) + 0.01 * k
        want = np.vstack([np.diag(np.cos(x)), np.diag(3 * x ** 2), [[x[2], 0.0, x[0]]]])
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x, mode="reverse", chunk_size=3)), want, rtol=1e-13)
    # once with the identity seeds as a structured block (replays.answer's `alt`), once dense: six before
    assert sorted(t.__name__ for t in tried) == ["SparseBlock", "ndarray"]


def test_no_replay_holds_much_more_memory_than_a_plain_call():
    # 150 products stacked: a reverse sweep of 149 identity seeds makes a 149 x 150 block per
    # product, which a recorded program would keep, one local each (issue 44: 7 GB at n = 1000)
    def peak(f, x):
        return _peak(f, x, mode="reverse")

    g = jaccli.record_once(_stacked)
    x = np.linspace(0.5, 1.5, 150)
    plain, _ = peak(_stacked, x)
    for k in range(6):  # (the sixth replay runs the program)
        x = np.linspace(0.5, 1.5, 150) + 0.01 * k
        want = np.zeros((149, 150))
        want[np.arange(149), np.arange(149)] = x[1:]
        want[np.arange(149), np.arange(1, 150)] = x[:-1]
        used, J = peak(g, x)
        np.testing.assert_array_equal(J, want)
        # (a program may hold MAX_BYTES whatever the recording: harmless next to the process)
        assert used < 2 * plain + programs.MAX_BYTES, (k, used, plain)
    # compiled: its program adds each product's part into x's cotangent in place, as the usual sweep does
    assert [type(p) for p in _replay_of(g)._programs.values()] == [programs.Program]


def test_the_replays_that_compile_peak_at_most_one_and_a_half_plain_calls():
    # issue 44: record_once's replays never peak above 1.5x a plain call, the replays that compile
    # included (a stack of 399 products: Python's compiler on a forward replay of 1200 steps, and a
    # traced sweep beside the usual sweep's results, took 1.9x and 1.6x)
    n = 400
    for k, (x, J, ratio) in enumerate(_replays(_stacked, n)):
        np.testing.assert_array_equal(J[np.arange(n - 1), np.arange(n - 1)], x[1:])
        np.testing.assert_array_equal(J[np.arange(n - 1), np.arange(1, n)], x[:-1])
        assert np.count_nonzero(J) == 2 * (n - 1)
        assert ratio <= 1.5, (k + 1, ratio)


def test_a_wide_jacobian_of_few_operations_is_not_checked_as_a_program_beside_the_usual_sweep():
    # issue 44: a program is checked once by holding its first results beside the usual sweep's; for a
    # 40 x 5000 Jacobian of a one-layer network (4 operations, results far larger than the values), that
    # second copy was the replays' peak, ~1.6x a plain call's (P2-n4000-m50). The program is refused there
    # (the usual sweep's bookkeeping of 4 operations is all it would save); a loop's programs are kept
    # (test_a_stack_of_many_products_is_swept_by_a_compiled_program_at_every_later_replay).
    rng = np.random.default_rng(3)
    W, b = rng.standard_normal((40, 5000)) / 70, rng.standard_normal(40)

    def layer(x):
        return np.tanh(W @ x + b)

    paths = []
    g = jaccli.record_once(layer)
    for k in range(7):
        x = np.linspace(-1.0, 1.0, 5000) * (1 + 0.01 * k)
        J = jaccli.jacobian(g, x, mode="reverse")
        np.testing.assert_allclose(np.asarray(J), (1 - np.tanh(W @ x + b) ** 2)[:, None] * W, rtol=1e-13, atol=1e-15)
        paths.append(J.stats["path"])
    assert paths[-1] == "replay", paths
    for k, (x, J, ratio) in enumerate(_replays(layer, 5000)):
        assert ratio <= 1.5, (k + 1, ratio)


def test_a_traced_sweep_holds_no_more_large_blocks_than_the_usual_sweep():
    # 80 pieces concatenated: traced, each piece's structured cotangent is added into x's dense
    # one in five steps of a 800 x 800 block each, where the usual sweep adds it in place
    # (issue 44: the replay that traced the sweep peaked at 1.95x a plain call)
    def pieces(x):
        return np.concatenate([np.sin(x[10 * i:10 * i + 10]) * x[10 * i] for i in range(x.shape[0] // 10)])

    n = 800
    for k, (x, J, ratio) in enumerate(_replays(pieces, n)):
        want = np.zeros((n, n))
        for i in range(n // 10):
            s = slice(10 * i, 10 * i + 10)
            want[s, s] = np.diag(np.cos(x[s]) * x[10 * i])
            want[s, 10 * i] += np.sin(x[s])
        np.testing.assert_allclose(J, want, rtol=1e-14, atol=1e-15)
        assert ratio <= 1.5, (k + 1, ratio)


def test_a_traced_sweep_adds_the_parts_of_a_large_sum_in_place_not_into_a_copy_each(monkeypatch):
    # the usual sweep adds the stack's 399 parts of x's cotangent in place; a program that copied the
    # 399 x 400 sum for each would cost O(n) per part (issue 44: 26 copies were made before the budget
    # ran out, and the sweep was refused). Traced, the parts are added in place too (sweeps.ADD_INTO)
    copies, added = [], []
    real = programs._Lean.append

    def append(self, item):
        if getattr(item, "prim", None) in COPIES_SUM:
            copies.append(item.value.nbytes)
        if getattr(item, "prim", None) in WRITES_ARGUMENT:
            added.append(1)
        return real(self, item)

    monkeypatch.setattr(programs._Lean, "append", append)
    g = jaccli.record_once(_stacked)
    for k in range(8):
        x = np.linspace(0.5, 1.5, 400) + 0.01 * k
        J = np.asarray(jaccli.jacobian(g, x, mode="reverse"))
        np.testing.assert_array_equal(np.diagonal(J, 1), x[:-1])
        np.testing.assert_array_equal(np.diagonal(J), x[1:])
    assert copies == [] and len(added) == 2 * 399 - 1  # (the first part is the sum)
    assert [type(p) for p in _replay_of(g)._programs.values()] == [programs.Program]
    assert g.replays == 7


def test_a_long_program_is_compiled_in_chunks_that_pass_values_on(monkeypatch):
    # Python's compiler holds a tree of the whole source while it compiles: a long recording is
    # written out as functions of CHUNK steps, called in turn
    monkeypatch.setattr(codegen, "CHUNK", 4)
    compiled = []
    real = codegen._Writer.compiled

    def counting(self, lines, name):
        compiled.append(name)
        return real(self, lines, name)

    monkeypatch.setattr(codegen._Writer, "compiled", counting)

    def f(x):
        for _ in range(6):
            x = np.sin(x) * 0.9 + x[::-1] * 0.05
        return x if x[0] > -10 else -x  # a guard, checked in a later chunk

    g = jaccli.record_once(f)
    for k in range(5):
        x = np.linspace(-1, 1, 4) + 0.01 * k
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), central_diff(f, x), rtol=1e-7, atol=1e-9)
    assert any(name.startswith("replay_") for name in compiled) and any(name.startswith("sweep_") for name in compiled)
    steps = [(2, np.multiply, (None, None), ((0, 0, None), (1, 1, None)), {}, None, codegen.STEP),
             (3, np.add, (None, 1.0), ((0, 2, None),), {}, None, codegen.STEP),
             (4, np.negative, (None,), ((0, 3, None),), {}, None, codegen.STEP),
             (-1, np.greater, (None, 0.0), ((0, 2, None),), {}, None, np.array([True, True])),
             (5, np.add, (None, None), ((0, 4, None), (1, 2, None)), {}, None, codegen.STEP)]
    run = codegen.compile_steps(steps, {0: ("vals", 0), 1: ("vals", 1)}, [("slot", 5, None), ("slot", 2, None)])
    a, b = np.array([1.0, 2.0]), np.array([3.0, 0.5])
    np.testing.assert_array_equal(run([a, b])[0], -(a * b + 1.0) + a * b)
    assert run([a, -b]) is None  # the guard, in the second chunk


def test_a_recording_that_writes_in_place_is_swept_by_a_program_that_writes_in_place(monkeypatch):
    # a program's traced writes copied the array at each y[i] = v (4x the usual sweep on issue 44's
    # loop), so such a recording was swept as usual; now the program zeroes the written part of the
    # cotangent in place (PULLED), as the usual sweep does, and never copies the block per write
    traced = []
    real = programs.Traced.compiled
    monkeypatch.setattr(programs.Traced, "compiled", lambda self: traced.append(self) or real(self))

    def loop(x):
        y = np.zeros_like(x)
        for i in range(x.shape[0]):
            y[i] = x[i] * x[(i + 1) % x.shape[0]]
        return y

    g = jaccli.record_once(loop)
    for k in range(7):
        x = np.linspace(0.5, 1.5, 6) + 0.1 * k
        want = np.diag(np.roll(x, -1)) + np.roll(np.diag(x), 1, axis=1)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), want, rtol=1e-14)
    [program] = traced
    fns = [st[1] for st in program.steps]
    assert fns.count(PULLED.impl) == 5 and fns.count(ADD_INTO.impl) == 11  # (the first write, the first part: fresh)
    assert not any(getattr(fn, "__name__", "") == "_assign_impl" for fn in fns)
    assert g.replays == 6 and [type(p) for p in _replay_of(g)._programs.values()] == [programs.Program]


def test_a_replays_error_state_is_entered_and_left_as_np_errstate_does():
    from jaccli.replay.guards import ErrstateRun
    quiet = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}
    loud = {"divide": "raise", "over": "warn", "under": "ignore", "invalid": "call"}
    calls = []
    with np.errstate(over="raise"):
        old = np.seterrcall(lambda kind, flag: calls.append(kind))
        try:
            before = np.geterr()
            for _ in range(2):  # (the second time from the states made the first)
                run = ErrstateRun()
                run.set(quiet)
                assert np.geterr() == quiet
                assert np.isnan(np.log(np.array(-1.0)))
                run.set(loud)
                assert np.geterr() == loud
                np.log(np.array(-1.0))  # invalid: the error call of the caller's state
                with pytest.raises(FloatingPointError):
                    np.log(np.array(0.0))
                run.close()
                assert np.geterr() == before
        finally:
            np.seterrcall(old)
    assert calls == ["invalid value"] * 2


def test_a_sweep_whose_constants_pass_max_bytes_stops_being_traced_at_once(monkeypatch):
    # issue 44: a stack of 999 products kept eight 999 x 1000 constant blocks (60 MB next to the
    # usual sweep's 27) before its program was refused for them; now tracing stops at the block
    # that passes MAX_BYTES, and the replay is swept as usual. (The stack's seeds are made dense at
    # each run of its program now, no constant: here a constant matrix after it passes MAX_BYTES.)
    monkeypatch.setattr(programs, "MAX_BYTES", 100 * 149 * 8)
    appended = []
    append = programs._Lean.append
    monkeypatch.setattr(programs._Lean, "append", lambda self, item: appended.append(1) or append(self, item))
    M = np.random.default_rng(3).standard_normal((149, 149))  # 149 x 149 x 8 bytes: over MAX_BYTES
    g = jaccli.record_once(lambda x: M @ _stacked(x))
    for k in range(6):
        x = np.linspace(0.5, 1.5, 150) + 0.01 * k
        want = np.zeros((149, 150))
        want[np.arange(149), np.arange(149)] = x[1:]
        want[np.arange(149), np.arange(1, 150)] = x[:-1]
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x, mode="reverse")), M @ want, rtol=1e-12, atol=1e-12)
    assert list(_replay_of(g)._programs.values()) == [False]
    assert 0 < len(appended) < 400  # stopped early: the whole sweep appends over 4000 nodes and guards


def test_a_pair_potentials_hessian_program_never_makes_a_pairwise_tangent_dense():
    # Lennard-Jones over 16 atoms (benchmarks' lj-hessian-114 at 38): each seed's tangent of the
    # n x n x 3 differences is one row and one column, kept so through the gradient's broadcasts
    # and sums; the program computes those entries alone (issue 44: 0.75x a plain call, dense)
    from benchmarks.workloads import _lj_atoms, _lj_hessian, lennard_jones

    n = 16
    g = jaccli.record_once(lambda x: lennard_jones(np, x))
    x0 = _lj_atoms(n)
    for k in range(8):
        x = x0 * (1 + 1e-3 * k)
        _util._SPARE.v = _util._ISSUED.v = None
        tracemalloc.start()
        try:
            H = np.asarray(jaccli.hessian(g, x))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        np.testing.assert_allclose(H, _lj_hessian(x), rtol=1e-10, atol=1e-9)
    # the last call runs the program: below one dense block of tangents, (3n) x n x n x 3 (295 kB;
    # 1.25 MB when they were dense, 160 kB structured)
    assert peak < 3 * n * n * n * 3 * 8, peak


@pytest.mark.parametrize("fails", [None, "guard", "raise"])
def test_a_short_programs_error_state_is_entered_and_left_by_a_token_as_np_errstate_does(fails):
    from jaccli.replay.codegen import STEP, compile_steps
    from jaccli.replay.guards import leave_state, state_entered

    quiet = {"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}
    with np.errstate(over="raise"):
        before = np.geterr()
        token = state_entered(quiet, None)
        assert np.geterr() == quiet
        token = state_entered(None, token)
        assert token is None and np.geterr() == before
        leave_state(state_entered(quiet, None))
        assert np.geterr() == before
        seen = []
        steps = [(1, np.log, (None,), ((0, 0, None),), {}, quiet, STEP),
                 (2, lambda v: seen.append(np.geterr()) or v, (None,), ((0, 1, None),), {}, quiet, STEP),
                 (0, lambda v: fails != "guard", (None,), ((0, 2, None),), {}, quiet, True),
                 (3, (lambda v: 1 / 0) if fails == "raise" else np.negative, (None,), ((0, 2, None),), {}, None, STEP)]
        run = compile_steps(steps, {0: ("vals", 0)}, [("slot", 3, None)])
        got = run([np.array([-1.0, 1.0])])
        assert seen == [quiet] and np.geterr() == before  # (left on every way out: result, guard, exception)
        if fails:
            assert got is None
        else:
            assert np.isnan(got[0][0]) and got[0][1] == 0.0
            assert "_enter" in run.__code__.co_names and "_Run" not in run.__code__.co_names
