"""What record_once keeps, measured against a plain call (issue 44.1): a replay's peak memory, the
recording and compiled programs it keeps between calls, each relative to a plain call's peak."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import jaccli
from tests.helpers import central_diff
from tests.test_step_loops import rk4_lv, rk4_lv_tangent

pytestmark = pytest.mark.xdist_group("test_replay_memory")  # (pytest -n: one worker, module fixtures made once)

CALLS = 6  # replays after the recording: they compile it one step a call (replay/replays.py), then run it
PLAIN_CALLS = 2  # plain calls after the first: each records f afresh, and peaks as the one before it


_lotka_volterra_rk4 = rk4_lv(60)


def _tangent(z):
    """_lotka_volterra_rk4's Jacobian in closed form."""
    return rk4_lv_tangent(z, 60)


@pytest.fixture(scope="module")
def lotka_volterra():
    """The 60-step RK4's calls, measured once for this file's tests: (a plain call's peak, the peaks and
    what is held after each of a record_once function's CALLS replays, the function)."""
    z = np.array([0.5, 0.5])  # (what a first call imports, assert_allclose's imports too)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(_lotka_volterra_rk4, z)), _tangent(z), rtol=1e-12)
    plain, _ = _calls(_lotka_volterra_rk4, calls=PLAIN_CALLS)
    once = jaccli.record_once(_lotka_volterra_rk4)
    peaks, held = _calls(once)
    return max(plain), peaks, held, once


def test_an_rk4_loops_replays_keep_little_of_each_other_between_calls(lotka_volterra):
    # issue 44.1, measured alike (one call before, then as many): record_once kept the last replay
    # (its values, and the nodes and rules its usual sweep made of them) beside the next one, and the
    # traced sweep's steps beside the usual sweep of the call that compiles them
    plain, _, held, once = lotka_volterra
    assert once.records == 1 and once.replays == CALLS
    # What is held between calls, the result gone, against a plain call's peak: after the replay that
    # compiles the forward replay, 0.45 (1.3 before: the replay's values, nodes and rules); at most
    # 0.96 after any replay (the traced sweep's steps, from the call that traces them to the one that
    # compiles them; 1.8 before). The bounds leave room for the allocator and Python's versions.
    assert held[1] <= 0.8 * plain, [h / plain for h in held]
    assert max(held[1:]) <= 1.25 * plain, [h / plain for h in held]


def _pair_energy(x):
    """A Lennard-Jones energy of atoms at x (3 coordinates each): its Hessian's tangents of the
    n x n x 3 differences (3n of them) are far larger than the 3n x 3n Hessian."""
    X = x.reshape(-1, 3)
    d = X[:, None, :] - X[None, :, :]
    i, j = np.triu_indices(X.shape[0], 1)
    inv6 = 1.0 / np.sum(d * d, axis=-1)[i, j] ** 3
    return np.sum(4.0 * (inv6 * inv6 - inv6))


def _pair_gradient(x):
    """The gradient in closed form: per pair, E(s) of s = |r|^2, dE/dx_i = 2 E'(s) r."""
    X = x.reshape(-1, 3)
    d = X[:, None, :] - X[None, :, :]
    s = np.sum(d * d, axis=-1) + np.eye(len(X))  # (the diagonal's r is 0: any s but 0)
    de = 4.0 * (-6.0 * s ** -7 + 3.0 * s ** -4)
    return (2.0 * de[:, :, None] * d).sum(axis=1).ravel()


def test_a_hessian_whose_intermediates_outweigh_its_results_gets_its_compiled_sweep():
    # issue 44.2: the traced sweep's room (compiled_sweeps.sweep_room) counted the results only, and
    # the 3n tangents of the differences (108 x 36 x 36 x 3, 3.4 MB each, beside a 108 x 108 Hessian)
    # refused the program at their first product: the usual sweep holds as many, so no trap
    from jaccli.replay import replays

    grid = np.stack(np.meshgrid(np.arange(4), np.arange(3), np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    x0 = (1.1 * grid + 0.05 * np.random.default_rng(0).standard_normal(grid.shape)).ravel()
    g = jaccli.record_once(_pair_energy)
    paths = []
    for k in range(8):
        x = x0 * (1 + 1e-3 * k)
        H = jaccli.hessian(g, x)
        got = np.asarray(H)
        paths.append(H.stats["path"])
        np.testing.assert_allclose(got, np.asarray(jaccli.hessian(_pair_energy, x)), rtol=1e-10, atol=1e-9)
        if k in (0, 7):
            np.testing.assert_allclose(got, central_diff(_pair_gradient, x), rtol=1e-6, atol=1e-5)
    assert paths[-1] == replays.COMPILED_SWEEP, paths



def _calls(f, x0=np.array([1.0, 1.5]), reference=_tangent, peaks=None, calls=CALLS):
    """tracemalloc from before f's first call: each of the `calls` calls' peak after it (into `peaks`,
    a list, as they come), and what is held after each of them with its result gone; every Jacobian
    checked."""
    gc.collect()
    tracemalloc.start()
    try:
        np.asarray(jaccli.jacobian(f, x0))  # the warm-up; record_once's recording
        gc.collect()
        peaks, held = [] if peaks is None else peaks, []
        for k in range(calls):
            tracemalloc.reset_peak()
            z = x0 * (1 + 1e-3 * (k + 1))
            J = np.asarray(jaccli.jacobian(f, z))
            peaks.append(tracemalloc.get_traced_memory()[1])  # (before the check's own temporaries)
            np.testing.assert_allclose(J, reference(z), rtol=1e-12)
            del J
            gc.collect()  # (a plain call's recording goes with the collector: its nodes and tracers refer to each other)
            held.append(tracemalloc.get_traced_memory()[0])
        return peaks, held
    finally:
        tracemalloc.stop()


def _element_loop(x):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        y[i] = x[i] * x[(i + 1) % x.shape[0]]
    return y


def _element_loop_jacobian(x):
    """Closed form: row i holds x[i+1] at i and x[i] at i+1 (mod n)."""
    n = x.shape[0]
    J = np.zeros((n, n))
    i = np.arange(n)
    J[i, i] += np.roll(x, -1)
    J[i, (i + 1) % n] += x
    return J


def test_the_replay_that_checks_a_program_holds_a_mostly_zero_result_by_its_entries(monkeypatch):
    # issue 44.1: the replay that checks a new program held the usual sweep's result beside the
    # program's making of its own: one Jacobian more than any other call (an element loop's, n = 1000:
    # 1.25x a plain call's peak traced, 1.4-1.6x in RSS). Its 2n entries are kept instead meanwhile.
    from jaccli.replay import replays, result_checks

    x0 = np.linspace(0.5, 1.5, 1000)  # (an 8 MB Jacobian of 2000 entries)
    checks, calls, peaks, agrees = [], [], [], result_checks.agrees

    def counted(got, want):
        checks.append([type(w) for w in want])
        calls.append(len(peaks))  # (this call's index in peaks)
        return agrees(got, want)
    monkeypatch.setattr(result_checks, "agrees", counted)
    np.asarray(jaccli.jacobian(_element_loop, x0))  # (what a first call imports)
    plain = max(_calls(_element_loop, x0, _element_loop_jacobian, calls=PLAIN_CALLS)[0])
    once = jaccli.record_once(_element_loop)
    _calls(once, x0, _element_loop_jacobian, peaks)
    assert checks == [[result_checks.Entries]], checks
    J = jaccli.jacobian(once, x0)
    np.testing.assert_allclose(np.asarray(J), _element_loop_jacobian(x0), rtol=1e-12)
    assert J.stats["path"] == replays.COMPILED_SWEEP  # (the program checked is kept)
    assert peaks[calls[0]] <= 1.1 * plain, [p / plain for p in peaks]


def test_the_first_replays_of_an_rk4_loop_do_not_hold_the_rules_of_the_recording_they_replay(lotka_volterra):
    # issue 44.1: record_once keeps the recording (then the first replay, made node by node) until the
    # next replay, which makes nodes and rules of its own: the rules that the kept one's sweeps made
    # stayed beside them (a 200-step RK4's first two replays: 1.23x and 1.39x a plain call's peak by
    # them alone; 60 steps: 1.52x and 1.66x, 1.22x and 1.35x without them)
    plain, peaks, _, once = lotka_volterra
    assert once.records == 1
    assert max(peaks[:2]) <= 1.45 * plain, [p / plain for p in peaks]


def test_a_sweep_traced_as_a_program_becomes_its_steps_without_a_second_index_of_them():
    # issue 44.1: the traced sweep's nodes became steps (compiled_sweeps._program) beside a sorted list of
    # (position, order, step) entries, its sort keys and a set of every step's slot: 220 bytes a step above
    # what the nodes held when it began (a 200-step RK4's replay that traces its sweep: 23.0 MB against a
    # plain call's 16.2; 20.7 without them). Without them, 15 bytes a step.
    from jaccli.replay import compiled_sweeps

    made = []
    program = compiled_sweeps._program

    def measured(ext, n, *args):
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        got = program(ext, n, *args)
        made.append(((tracemalloc.get_traced_memory()[1] - before) / (len(ext.nodes) - n), got is not None))
        return got

    once = jaccli.record_once(_lotka_volterra_rk4)
    tracemalloc.start()
    compiled_sweeps._program = measured
    try:
        for k in range(4):  # (the recording, a replay node by node, the forward compiled, the sweep traced)
            z = np.array([1.0, 1.5]) * (1 + 1e-3 * k)
            np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, z)), _tangent(z), rtol=1e-12)
    finally:
        compiled_sweeps._program = program
        tracemalloc.stop()
    assert len(made) == 1 and made[0][1], made
    assert made[0][0] <= 64, made
