"""A recording whose steps repeat (a Python loop) is compiled as a loop: its compiled forms keep
code of one iteration, not of every one (issue 44), and give the plain call's derivatives."""

import tracemalloc

import numpy as np
import pytest

import jaccli
from jaccli.replay import codegen, compiled_sweeps, replay_trace
from tests.helpers import central_diff


def rk4_lv(steps: int, h: float = 0.01):
    def rhs(z):
        return np.stack([1.5 * z[0] - z[0] * z[1], -3.0 * z[1] + z[0] * z[1]])

    def run(z):
        for _ in range(steps):
            k1 = rhs(z)
            k2 = rhs(z + h / 2 * k1)
            k3 = rhs(z + h / 2 * k2)
            k4 = rhs(z + h * k3)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return z
    return run


def _kept_by_compiling(steps: int) -> dict[str, int]:
    """Bytes each compiled form (the forward replay, the sweep) keeps, over record_once's replays."""
    kept: dict[str, int] = {}

    def measured(compile_steps):
        def run(steps_, loads, results, name="steps"):
            tracemalloc.start()
            try:
                fn = compile_steps(steps_, loads, results, name)
                kept[name] = tracemalloc.get_traced_memory()[0]
            finally:
                tracemalloc.stop()
            return fn
        return run

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(replay_trace, "compile_steps", measured(replay_trace.compile_steps))
        mp.setattr(compiled_sweeps, "compile_steps", measured(compiled_sweeps.compile_steps))
        f = rk4_lv(steps)
        once = jaccli.record_once(f)
        for k in range(6):
            z = np.array([1.0, 1.5]) * (1 + 0.01 * k)
            np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, z)), np.asarray(jaccli.jacobian(f, z)),
                                       rtol=1e-12, atol=1e-12)
    return kept


def test_a_loop_s_compiled_forms_do_not_grow_with_its_iterations():
    short, long = _kept_by_compiling(40), _kept_by_compiling(160)
    assert set(short) == set(long) == {"replay", "sweep"}
    for name in short:  # written out line by line, 160 iterations kept 4x the code of 40
        assert long[name] < 1.3 * short[name], (name, short[name], long[name])


def damped(steps: int):
    def run(z):  # guards in the loop: the signs abs reads, whether sqrt's factor is finite
        for _ in range(steps):
            z = z - 0.01 * np.abs(z) * z / np.sqrt(1.0 + z * z) + 0.002 * z[::-1]
        return z
    return run


@pytest.mark.parametrize("make, steps", [(rk4_lv, 6), (rk4_lv, 40), (damped, 300)])
def test_compiled_loops_give_the_plain_call_s_derivatives_at_new_points(make, steps):
    f = make(steps)
    once = jaccli.record_once(f)
    for k in range(8):
        z = np.array([1.0, 1.5]) * (1 + 0.05 * k) * (-1 if k == 6 else 1)  # (a sign flips: a guard fails)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, z)), np.asarray(jaccli.jacobian(f, z)),
                                   rtol=1e-12, atol=1e-12)
        u = np.array([0.3, -1.0])
        np.testing.assert_allclose(jaccli.vjp(once, z, u), jaccli.vjp(f, z, u), rtol=1e-12, atol=1e-12)


def _peak(f, z):
    """The peak of the memory Python and NumPy allocate during jacobian(f, z)."""
    tracemalloc.start()
    try:
        np.asarray(jaccli.jacobian(f, z))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_what_the_replays_of_an_integrator_keep_for_themselves_stays_small():
    # issue 44: the replays of an RK4 loop keep a forward replay's per-node structure and, from the
    # replay that traces a sweep to the one that compiles it, the sweep's steps: a tuple of
    # arguments per step, thousands of equal ones (1.88x a plain call's peak with a replay's own
    # allocations on top, 1.75x with them shared). Measured from before the first replay, what
    # they hold included.
    f = rk4_lv(60)
    g = jaccli.record_once(f)
    z0 = np.array([1.0, 1.5])
    jaccli.jacobian(g, z0)  # the recording
    plain = min(_peak(f, z0) for _ in range(2))
    points = [z0 * (1 + 0.01 * k) for k in range(6)]
    tracemalloc.start()
    try:
        got = [np.asarray(jaccli.jacobian(g, z)) for z in points]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    for z, J in zip(points, got):
        np.testing.assert_allclose(J, central_diff(f, z), rtol=1e-6, atol=1e-8)
    assert peak <= 1.8 * plain, peak / plain


def test_the_steps_of_a_loop_share_their_equal_argument_tuples(monkeypatch):
    # issue 44: a 60-step RK4 loop records ~2400 operations with a handful of different argument
    # lists (None where a value is filled in, a float, an index): one tuple each, not one per step
    kept = []
    monkeypatch.setattr(compiled_sweeps.Traced, "compiled", _spy(compiled_sweeps.Traced.compiled, kept))
    g = jaccli.record_once(rk4_lv(60))
    z = np.array([1.0, 1.5])
    for k in range(5):  # the recording, then the replays: the third traces the sweep, the fourth compiles it
        np.asarray(jaccli.jacobian(g, z * (1 + 0.01 * k)))
    [traced] = kept
    args = [st[2] for st in traced.steps if codegen._args_key(st[2]) is not None]  # (no arrays)
    assert len(args) > 2000
    assert len({id(a) for a in args}) == len({codegen._args_key(a) for a in args}) < 40
    assert codegen._args_key([1]) != codegen._args_key([1.0]) != codegen._args_key([True])
    assert codegen._args_key([-0.0]) != codegen._args_key([0.0])
    assert codegen._args_key([(1,)]) is not None and codegen._args_key([(True,)]) is None


def _spy(method, kept):
    def spied(self):
        kept.append(self)
        return method(self)
    return spied
