"""A steady record_once call's lazy block before its evaluator (api/steady_calls.py, issue 44 item 4): the
block is the usual one (type, shape, dtype, bits, counts, cache), np.asarray of it runs the kept program
and assembles it without an evaluator, and anything else makes the evaluator the usual call makes.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import jaccli
from jaccli.engine import observing
from tests.helpers import Recorder, rosenbrock as _rosenbrock
from tests.test_per_call_cost import _Counted, _elementwise
from tests.test_replay import softmax_ce as _logsumexp
from tests.test_steady_blocks import _check

CASES = [(_elementwise, False, "auto", 6), (_elementwise, False, "auto", 300), (_rosenbrock, True, "forward", 40),
         (_rosenbrock, True, "reverse", 40), (_logsumexp, True, "forward", 9)]


def _steady(f, hessian, mode, n, calls=12, seed=3):
    """g = record_once(f) after `calls` calls at random points (compiled and kept by then), and a new point."""
    g, make = jaccli.record_once(f), (jaccli.hessian if hessian else jaccli.jacobian)
    rng = np.random.default_rng(seed)
    for _ in range(calls):
        np.asarray(make(g, rng.uniform(-1, 1, n), mode=mode))
    return g, lambda x: make(g, x, mode=mode), rng.uniform(-1, 1, n)


def _reruns(monkeypatch):
    """Counts of a kept program's reruns, by a replay or by its values before it is made (a PendingReplay)."""
    from jaccli.replay.pending_replays import PendingReplay
    from jaccli.replay.replays import Replayable

    return _Counted(monkeypatch, (Replayable, PendingReplay), "rerun")


@pytest.mark.parametrize("f, hessian, mode, n", CASES)
def test_a_steady_calls_block_is_assembled_without_an_evaluator_with_the_evaluators_bits_and_counts(
        monkeypatch, f, hessian, mode, n):
    g, make, x = _steady(f, hessian, mode, n)
    reruns = _reruns(monkeypatch)
    J = make(x)
    P = (jaccli.hessian if hessian else jaccli.jacobian)(f, x, mode=mode)
    assert J._deferred is not None and type(J) is type(P) and (J.shape, J.dtype) == (P.shape, P.dtype)
    A = np.asarray(J)
    assert "_ev" not in J.__dict__ and reruns.calls["rerun"] == 1 and not A.flags.writeable
    _check(f, x, A)
    U = make(x)
    U._ev  # noqa: B018 - the evaluator first: the usual steady way (SteadyBlocks.whole), the same program
    assert "_ev" in U.__dict__ and U._deferred.whole() is None
    np.testing.assert_array_equal(A, np.asarray(U))
    assert J.stats == U.stats and J.stats["path"] == "compiled sweep"  # (J's evaluator made now, given A)
    assert J._ev.kinds == U._ev.kinds and J._ev.store.keys() == U._ev.store.keys()
    if f is _logsumexp:  # (a compiled sweep may round otherwise than the usual one: replays.Replayable.answer)
        np.testing.assert_allclose(A, np.asarray(P), rtol=1e-13, atol=1e-16)
    else:
        np.testing.assert_array_equal(A, np.asarray(P))
    assert {k: v for k, v in J.stats.items() if k != "path"} == {k: v for k, v in P.stats.items() if k != "path"}
    reruns.reset()
    np.testing.assert_array_equal(J[1], A[1])  # the same cache: nothing swept again
    assert np.shares_memory(np.asarray(J), A) and reruns.calls["rerun"] == 0 and J.stats == U.stats
    if not hessian:
        np.testing.assert_array_equal(J._ev.diagonal(0, 0), np.diag(A))
    assert (g.records, g.misses) == (1, 0)


@pytest.mark.parametrize("f, hessian, mode, n", CASES[:1] + CASES[2:3])
def test_a_steady_calls_views_and_threads_share_one_program_run_and_one_evaluator(monkeypatch, f, hessian, mode, n):
    g, make, x = _steady(f, hessian, mode, n)
    reruns = _reruns(monkeypatch)
    J = make(x)
    M, C = J.matrix, J.__copy__()
    got, barrier = [], threading.Barrier(6)

    def read(block):
        barrier.wait()
        got.append(np.asarray(block))

    threads = [threading.Thread(target=read, args=(b,)) for b in (J, M, C) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and reruns.calls["rerun"] == 1
    assert all(np.shares_memory(a, got[0]) for a in got)
    _check(f, x, np.asarray(J))
    assert J._ev is M._ev is C._ev and J.stats["sweeps"] == 1


@pytest.mark.parametrize("f, hessian, mode, n", CASES[:1] + CASES[2:3])
def test_a_steady_call_under_progress_or_another_memory_budget_goes_the_usual_way(monkeypatch, f, hessian, mode, n):
    g, make, x = _steady(f, hessian, mode, n)
    reruns = _reruns(monkeypatch)
    seen = []
    for h in (g, f):  # (the steady call's phases and work are the plain call's, after its recording)
        recorder = Recorder()
        with observing(recorder):
            J = (jaccli.hessian if hessian else jaccli.jacobian)(h, x, mode=mode)
            A = np.asarray(J)
        _check(f, x, A)
        seen.append(recorder.totals())
        assert "_ev" in J.__dict__
    assert seen[1][:2] == [("start", "recording f (operations)", None), "finish"]  # (the plain call records f)
    assert reruns.calls["rerun"] == 0 and seen[0] == seen[1][2:]
    monkeypatch.setenv("JACCLI_MEMORY_BUDGET", "64MiB")  # (its own Steady: the first such call keeps none)
    J = make(x)
    assert J._deferred is None
    _check(f, x, np.asarray(J))


def test_a_steady_call_whose_program_guard_fails_makes_its_evaluator_and_runs_the_program_once(monkeypatch):
    g = jaccli.record_once(lambda x: np.sqrt(x) * x)  # (0.5 / sqrt(x) is checked finite)
    for _ in range(10):
        np.asarray(jaccli.jacobian(g, np.linspace(0.5, 2.0, 5)))
    reruns = _reruns(monkeypatch)
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    J = jaccli.jacobian(g, y)
    assert J._deferred is not None
    A = np.asarray(J)  # (sqrt(0) warns of nothing: the caller's error state, replayed)
    assert reruns.calls["rerun"] == 1 and "_ev" in J.__dict__ and J.stats["path"] != "compiled sweep"
    np.testing.assert_allclose(A[1:, 1:], np.diag(1.5 * np.sqrt(y[1:])), rtol=1e-13)
    assert g.misses == 0


def test_a_block_without_an_evaluator_or_a_deferred_one_has_no_ev():
    from jaccli.api.lazy import Jacobian

    with pytest.raises(AttributeError, match="_ev"):
        object.__new__(Jacobian)._ev  # noqa: B018


def _lane_calls(monkeypatch):
    """Counts of RecordOnce's replayed (a steady call's lookup of the recording) and replayed_again (its lane)."""
    from jaccli.replay.record_once import RecordOnce

    return _Counted(monkeypatch, RecordOnce, "replayed", "replayed_again")


@pytest.mark.parametrize("f, hessian, mode, n", CASES[:1] + CASES[2:3])
def test_a_steady_call_replays_the_recording_its_last_call_replayed_without_looking_it_up(monkeypatch, f, hessian,
                                                                                         mode, n):
    g, make, x = _steady(f, hessian, mode, n)
    calls, replays = _lane_calls(monkeypatch), g.replays
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.uniform(-1, 1, n)
        J = make(x)
        A = np.asarray(J)
        assert J._deferred is not None and "_ev" not in J.__dict__
        np.testing.assert_array_equal(A, np.asarray((jaccli.hessian if hessian else jaccli.jacobian)(f, x, mode=mode)))
        _check(f, x, A)
    assert calls.calls == {"replayed": 0, "replayed_again": 3}
    assert (g.records, g.misses, g.replays - replays) == (1, 0, 3)


def _branchy(x):
    return x ** 3 if x.sum() > 0 else np.sin(x)  # (the branch taken is a guard of the recording)


def _branchy_jacobian(x):
    return np.diag(3 * x ** 2 if x.sum() > 0 else np.cos(x))


def test_a_steady_calls_lane_gives_way_when_what_it_kept_may_have_changed(monkeypatch):
    # Each change below leaves the lane (RecordOnce.replayed_again refuses, or the plan differs): the call then
    # takes the usual steady way, or records f afresh, and gives the plain call's bits
    g = jaccli.record_once(_branchy, max_signatures=2)
    rng = np.random.default_rng(7)

    def call(x, records, deferred=True):
        J = jaccli.jacobian(g, x)
        A = np.asarray(J)
        np.testing.assert_array_equal(A, np.asarray(jaccli.jacobian(_branchy, x)))
        np.testing.assert_allclose(A, _branchy_jacobian(x), rtol=1e-13)
        assert g.records == records and deferred in (None, J._deferred is not None), (g.records, J._deferred)

    def steady(n, records):
        for _ in range(9):
            call(rng.uniform(0.1, 1, n), records, deferred=None)
        call(rng.uniform(0.1, 1, n), records)

    steady(6, 1)
    lanes = _lane_calls(monkeypatch)
    call(-rng.uniform(0.1, 1, 6), 2, deferred=False)  # the guard (x.sum() > 0) fails: f is recorded afresh
    steady(6, 3)  # (and again, the other way: that recording is kept)
    call(rng.uniform(0.1, 1, 7), 4, deferred=False)  # another shape: another signature, recorded
    call(rng.uniform(0.1, 1, 6).astype(np.float32), 5, deferred=False)  # another dtype: evicts n = 6's (max 2)
    steady(6, 6)
    g.clear()
    call(rng.uniform(0.1, 1, 6), 7, deferred=False)
    steady(6, 7)
    with np.errstate(over="raise"):  # another error state: f is recorded under it
        call(rng.uniform(0.1, 1, 6), 8, deferred=False)
    steady(6, 9)  # (and again under the caller's: record_once keeps one recording per signature)
    monkeypatch.setenv("JACCLI_MEMORY_BUDGET", "64MiB")  # (the lane's plan is for the default budget)
    call(rng.uniform(0.1, 1, 6), 9, deferred=False)
    monkeypatch.delenv("JACCLI_MEMORY_BUDGET")
    call(rng.uniform(0.1, 1, 6), 9)
    # (missed: the two guards that failed, and the two changes of error state)
    assert lanes.calls["replayed_again"] >= 8 and g.misses == 4


def test_a_lane_whose_plan_is_gone_hands_its_replay_to_the_usual_steady_way(monkeypatch):
    # lane_block replays f and finds no SteadyCall under the lane's key (the structure's plan let go): the usual
    # steady way goes on from that replay, not from a second one, the usual evaluator's way, and keeps a new lane
    g, make, x = _steady(_elementwise, False, "auto", 30)
    (cls, mode), lane = next(iter(g.steady_lanes.items()))
    del lane.kept.structure[lane.plan_key]
    lanes, replays = _lane_calls(monkeypatch), g.replays
    J = make(x)
    assert J._deferred is None and g.replays == replays + 1 and lanes.calls == {"replayed": 0, "replayed_again": 1}
    np.testing.assert_array_equal(np.asarray(J), np.asarray(jaccli.jacobian(_elementwise, x)))
    assert g.steady_lanes[cls, mode] is lane  # (the evaluator keeps a plan again: the next call's lane is made)
    J = make(x * 0.5)
    assert J._deferred is not None and g.steady_lanes[cls, mode] is not lane and g.records == 1
    np.testing.assert_array_equal(np.asarray(J), np.asarray(jaccli.jacobian(_elementwise, x * 0.5)))


def test_a_steady_calls_replay_is_its_values_until_something_else_is_asked_of_it(monkeypatch):
    from jaccli.replay.replays import Replayable

    g, make, x = _steady(_elementwise, False, "auto", 50)
    made = _Counted(monkeypatch, Replayable, "_replayed_as")
    J = make(x)
    A = np.asarray(J)
    assert made.calls["_replayed_as"] == 0 and type(J._deferred.rec).__name__ == "PendingReplay"
    _check(_elementwise, x, A)
    assert J.stats["sweeps"] == 1 and J.stats["path"] == "compiled sweep"  # (the evaluator: the replay made now)
    assert made.calls["_replayed_as"] == 1
    rec = J._deferred.rec.replayable()
    assert rec is J._ev.rec and rec.sweeps == 1 and rec.inputs[0] is J._deferred.rec.vals[0]
    np.testing.assert_array_equal(rec.outputs[0], _elementwise(x))  # (f's value: the rest of the replay, made now)
    np.testing.assert_array_equal(J[3], A[3])


def test_a_steady_calls_rerun_that_reads_a_value_left_for_later_makes_the_replay_and_the_rest(monkeypatch):
    g, make, x = _steady(_elementwise, False, "auto", 50)
    J = make(x)
    pending = J._deferred.rec
    kind, prog, seeds = J._deferred.plan.steady.ran
    assert pending.split is not None and pending.vals[-1] is None  # (f's value, left for later: nothing reads it)
    monkeypatch.setattr(prog, "reads", prog.reads | {len(pending.vals) - 1})  # (as if the program read it)
    got = pending.rerun((kind, prog, seeds))
    assert pending.rec is not None and pending.rec.sweeps == 1 and all(v is not None for v in pending.vals)
    np.testing.assert_array_equal(pending.vals[-1], _elementwise(x))
    np.testing.assert_array_equal(got[0].reshape(-1), np.diag(np.asarray(jaccli.jacobian(_elementwise, x))))


def test_threads_making_steady_calls_at_once_each_get_their_own_points_block():
    g, make, _ = _steady(_elementwise, False, "auto", 40)
    rng = np.random.default_rng(9)
    points = [[rng.uniform(-1, 1, 40) for _ in range(15)] for _ in range(4)]
    got, barrier = {}, threading.Barrier(4)

    def calls(k):
        barrier.wait()
        got[k] = [np.asarray(make(x)) for x in points[k]]

    threads = [threading.Thread(target=calls, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        for x, A in zip(points[k], got[k]):
            np.testing.assert_array_equal(A, np.asarray(jaccli.jacobian(_elementwise, x)))
    assert g.records == 1 and g.misses == 0 and g.steady_lanes


@pytest.mark.parametrize("f, hessian, mode, n", CASES)
def test_a_lanes_calls_take_its_route_with_the_plain_calls_bits(monkeypatch, f, hessian, mode, n):
    # The lane's Route is made once: its replays are its Split's values and its program runs straight on them
    # (no Program.run, no replayed_by), and the block is the plain call's
    from jaccli.replay import pending_replays
    from jaccli.replay.compiled_sweeps import Program

    g, make, x = _steady(f, hessian, mode, n)
    made = _Counted(monkeypatch, pending_replays, "route_of", "replayed_by")
    runs = _Counted(monkeypatch, Program, "run")
    rng = np.random.default_rng(11)
    for _ in range(4):
        x = rng.uniform(-1, 1, n)
        J = make(x)
        assert J._deferred.rec.route is not None and J._deferred.rec.route.run is not None
        A = np.asarray(J)
        P = (jaccli.hessian if hessian else jaccli.jacobian)(f, x, mode=mode)
        if f is _logsumexp:
            np.testing.assert_allclose(A, np.asarray(P), rtol=1e-13, atol=1e-16)
        else:
            np.testing.assert_array_equal(A, np.asarray(P))
        _check(f, x, A)
        assert J.stats["path"] == "compiled sweep" and J.stats["sweeps"] == P.stats["sweeps"]
    assert made.calls == {"route_of": 0, "replayed_by": 0} and runs.calls["run"] == 0  # (made by _steady's calls)
    assert (g.records, g.misses) == (1, 0)


def test_a_route_is_made_again_when_the_programs_read_other_values():
    # Another request's program reads a value that the lane's Split leaves for later (fw.reads grows): the next
    # call makes the route again, for a Split that makes it too, and its block is still the plain call's
    from jaccli.replay import pending_replays

    g, make, x = _steady(_elementwise, False, "auto", 7)
    J = make(x)
    np.asarray(J)
    route = J._deferred.rec.route
    kept = next(iter(g.steady_lanes.values())).kept
    fw = kept._forward[0]
    left = set(range(len(J._deferred.rec.vals))) - set(route.split.made)
    assert route.split is not None and left  # (the output's own sum is left for later)
    fw.reads = fw.reads | {min(left)}
    y = x * 0.5
    U = make(y)
    new = U._deferred.rec.route
    assert new is not route and new.reads is fw.reads and min(left) in new.split.made
    assert kept.__dict__[pending_replays.ROUTES][id(route.ran)] is new
    assert U._deferred.rec.vals[min(left)] is not None
    np.testing.assert_array_equal(np.asarray(U), np.asarray(jaccli.jacobian(_elementwise, y)))


def test_a_lane_whose_replays_cannot_take_a_route_replays_them_as_before(monkeypatch):
    # A recording whose route cannot be taken keeps a Route without a run: its replays go replayed_by's way, and
    # its program Program.run's, with the plain call's bits
    from jaccli.replay import pending_replays
    from jaccli.replay.compiled_sweeps import Program

    g, make, x = _steady(_elementwise, False, "auto", 6)
    kept = next(iter(g.steady_lanes.values())).kept
    kept.__dict__.pop(pending_replays.ROUTES, None)
    made = _Counted(monkeypatch, pending_replays, "route_of", "replayed_by")
    monkeypatch.setattr(pending_replays, "route_of", _no_run(pending_replays.route_of))
    runs = _Counted(monkeypatch, Program, "run")
    for k in range(3):
        y = x * (1 + k)
        J = make(y)
        assert J._deferred.rec.route is None
        np.testing.assert_array_equal(np.asarray(J), np.asarray(jaccli.jacobian(_elementwise, y)))
    assert made.calls == {"route_of": 1, "replayed_by": 3} and runs.calls["run"] == 3


def _no_run(route_of):
    def made(kept, ran):
        route = route_of(kept, ran)
        route.run = None
        return route
    return made


def test_a_route_keeps_no_reference_to_its_recording():
    # (kept with the recording, in its __dict__: a reference back would leave it to the collector)
    import gc
    import weakref

    g, make, x = _steady(_elementwise, False, "auto", 6)
    np.asarray(make(x))
    kept = next(iter(g.steady_lanes.values())).kept
    assert kept.__dict__["routes"]
    ref = weakref.ref(kept)
    del kept
    gc.disable()
    try:
        g.clear()
        assert ref() is None
    finally:
        gc.enable()
