"""A loop whose iterations differ only in int constants that count (y[i] = x[i] * x[i + 1]) is
compiled as a loop that computes them from its counter (step_loops, issue 44): its programs give
bit for bit what the straight-line programs give, and what a plain call gives."""

import numpy as np
import pytest

import jaccli
from benchmarks.workloads import element_loop_numpy as _wrapped  # (its last (i + 1) % n breaks the progression)
from jaccli.engine import SparseBlock
from jaccli.replay import codegen, compiled_sweeps, replay_trace, step_loops


def _negative(x):
    n = x.shape[0]
    y = np.zeros_like(x)
    for i in range(n):
        y[-i - 1] = x[i - 3] * x[-i - 1]
    return y


def _stacked(x):
    return np.stack([x[i] * x[i + 1] for i in range(x.shape[0] - 1)])


def _sliced(x):
    return np.stack([np.sin(x[i:i + 3]) * x[i] for i in range(x.shape[0] - 2)])


def _dense(v):
    return v.todense() if isinstance(v, SparseBlock) else v


def _checked_against_straight(monkeypatch, counted):
    """compile_steps of the replays and sweeps made twice, as step_loops writes them and all
    straight; each run of the first checked bit for bit against the second."""
    real_find = step_loops.find

    def find(*args):
        runs = real_find(*args)
        counted.extend(runs)
        return runs

    def both(compile_steps):
        def compiled(steps, loads, results, name="steps"):
            with monkeypatch.context() as m:
                m.setattr(step_loops, "find", lambda *a: [])
                straight = compile_steps(steps, loads, results, name)
            with monkeypatch.context() as m:
                m.setattr(step_loops, "find", find)
                looped = compile_steps(steps, loads, results, name)

            def run(vals, seeds=()):
                got, want = looped(vals, seeds), straight(vals, seeds)
                assert (got is None) == (want is None)
                if got is not None:
                    assert len(got) == len(want)
                    for g, w in zip(got, want):
                        g, w = _dense(g), _dense(w)
                        assert type(g) is type(w)
                        if isinstance(w, np.ndarray):
                            assert g.dtype == w.dtype
                            np.testing.assert_array_equal(g, w)
                        else:
                            assert g == w or (g != g and w != w)
                return got
            return run
        return compiled

    monkeypatch.setattr(replay_trace, "compile_steps", both(replay_trace.compile_steps))
    monkeypatch.setattr(compiled_sweeps, "compile_steps", both(compiled_sweeps.compile_steps))
    monkeypatch.setattr(codegen, "CHUNK", 8)  # (small recordings go through the driver of parts and loops)
    monkeypatch.setattr(step_loops, "MIN_STEPS", 4)


@pytest.mark.parametrize("f, n", [(_wrapped, 9), (_negative, 10), (_stacked, 9), (_sliced, 8), (_wrapped, 3)])
def test_a_loop_of_counted_constants_gives_the_straight_line_program_s_values(monkeypatch, f, n):
    counted = []
    monkeypatch.setattr(step_loops, "MIN_REPS", 2 if n == 3 else 4)  # (n = 3: a run of 2 iterations)
    _checked_against_straight(monkeypatch, counted)
    g = jaccli.record_once(f)
    for k in range(6):
        x = np.linspace(0.5, 1.5, n) * (1 + 0.01 * k) + 0.001 * k ** 2
        J = jaccli.jacobian(g, x)
        np.testing.assert_array_equal(np.asarray(J), np.asarray(jaccli.jacobian(f, x)))
        np.testing.assert_array_equal(g(x), f(x))
    assert any(r.counted for r in counted), "no run of counted constants was found"
    if f is _stacked:  # (its sweep reads the parts of the stack's cotangent, made before the loop, one by one)
        assert any(r.far for r in counted)
    if n == 3:
        assert any(r.reps == 2 and r.counted for r in counted), [(r.period, r.reps) for r in counted]


def test_a_progression_that_breaks_is_cut_before_the_iteration_that_breaks_it():
    counts = [2 if j == 9 else j for j in range(12)]
    steps = [(j + 1, np.add, (None, c), ((0, 0, None),), {}, None, codegen.STEP) for j, c in enumerate(counts)]
    loads, results = {0: ("vals", 0)}, [("slot", j + 1, None) for j in range(12)]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(step_loops, "MIN_STEPS", 4)
        m.setattr(codegen, "CHUNK", 4)
        runs = step_loops.find(steps, loads, {}, {j + 1 for j in range(12)}, codegen.STEP)
        assert [(r.a, r.period, r.reps) for r in runs] == [(0, 1, 9)]
        assert runs[0].counted == {(0, 1): {(): (0, 1)}}
        got = codegen.compile_steps(steps, loads, results)([np.float64(0.5)])
    assert got == [0.5 + c for c in counts]
    assert [type(v) for v in got] == [np.float64] * 12


def _programs_found(f, n):
    """The runs step_loops finds in f's compiled forward replay and sweep, by program."""
    found = {}
    real_find = step_loops.find

    def spy(compile_steps):
        def compiled(steps, loads, results, name="steps"):
            with pytest.MonkeyPatch.context() as m:
                m.setattr(step_loops, "find", lambda *a: found.setdefault(name, (len(steps), real_find(*a)))[1])
                return compile_steps(steps, loads, results, name)
        return compiled

    with pytest.MonkeyPatch.context() as m:
        m.setattr(replay_trace, "compile_steps", spy(replay_trace.compile_steps))
        m.setattr(compiled_sweeps, "compile_steps", spy(compiled_sweeps.compile_steps))
        g = jaccli.record_once(f)
        for k in range(6):
            np.asarray(jaccli.jacobian(g, np.linspace(0.5, 1.5, n) + 0.01 * k))
    return found


@pytest.mark.parametrize("f", [_wrapped, _stacked])
def test_an_element_loop_s_and_a_stack_s_replay_and_sweep_compile_as_loops(f):
    found = _programs_found(f, 300)
    assert set(found) == {"replay", "sweep"}
    for name, (n, runs) in found.items():  # (all but a few steps: the first and the wrapped last iterations)
        assert sum(r.period * r.reps for r in runs) > 0.98 * n, (name, n, [(r.a, r.period, r.reps) for r in runs])
    # a stack's sweep reads the parts of its cotangent, made at once before the loop, one by one
    assert (f is _stacked) == any(r.far for r in found["sweep"][1])
