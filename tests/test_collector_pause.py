"""The cyclic garbage collector waits while f is recorded and while large recordings are swept.

Recording and sweeping make many objects that live on and form no cycles; collections during
them find nothing but walk everything that survived (on a loop of 8000 element writes they took
28% of the recording and 43% of a sweep). The collector must run again afterwards, in every
case: after an error in f, after threads that overlap, and not at all if it was off before.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import jaccli
from jaccli.replay import Replayable


@pytest.fixture
def eager_collector():
    """Collections after every few allocations, so that a sweep that does not pause meets many."""
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(200, 2, 2)
    yield
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def _loop(x):
    y = np.zeros_like(x)
    for i in range(1, len(x)):
        y[i] = x[i] * x[i - 1] + np.sin(x[i])
    return y


def _collections_during(fn):
    seen = []

    def cb(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(cb)
    try:
        out = fn()
    finally:
        gc.callbacks.remove(cb)
    return out, seen


def test_f_runs_with_the_collector_paused_and_it_runs_again_after(eager_collector):
    states = []

    def f(x):
        states.append(gc.isenabled())
        return (x ** 2).sum()

    np.asarray(jaccli.hessian(f, np.ones(3)))
    assert states == [False]
    assert gc.isenabled()


def test_a_large_recording_is_swept_without_collections(eager_collector):
    x = np.linspace(0.5, 1.5, 400)  # about 2000 operations
    J, during_recording = _collections_during(lambda: jaccli.jacobian(_loop, x))
    rows, during_sweep = _collections_during(lambda: J[100:104])
    # (a collection or two may come from the allocations around them: thousands without the pause)
    assert len(during_recording) <= 2 and len(during_sweep) <= 2, (len(during_recording), len(during_sweep))
    cols, during_forward = _collections_during(lambda: np.asarray(jaccli.jacobian(_loop, x, mode="forward")))
    assert len(during_forward) <= 3, len(during_forward)
    np.testing.assert_allclose(rows[:, 99:102], [[x[100], x[99] + np.cos(x[100]), 0.0],
                                                 [0.0, x[101], x[100] + np.cos(x[101])],
                                                 [0.0, 0.0, x[102]],
                                                 [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(cols[100:104], np.asarray(J)[100:104])
    _, after = _collections_during(lambda: [[] for _ in range(500)])
    assert after, "the collector did not run again"


def test_a_large_replay_runs_without_collections(eager_collector):
    x = np.linspace(0.5, 1.5, 400)
    rec = Replayable(_loop, [x], [0])
    replayed, during = _collections_during(lambda: rec.replay([x + 1.0]))
    assert replayed is not None and len(during) <= 2, len(during)
    assert gc.isenabled()


def test_the_collector_runs_again_after_f_raises(eager_collector):
    def f(x):
        raise ValueError("boom")

    with pytest.raises(Exception):
        jaccli.jacobian(f, np.ones(2))
    assert gc.isenabled()


def test_the_collector_stays_off_when_it_was_off(eager_collector):
    gc.disable()
    np.asarray(jaccli.jacobian(_loop, np.linspace(0.5, 1.5, 300)))
    assert not gc.isenabled()


def test_overlapping_recordings_in_threads_leave_the_collector_on(eager_collector):
    inside, release = threading.Barrier(2), threading.Event()
    seen = []

    def slow(x):
        inside.wait(timeout=10)          # both recordings are open here
        release.wait(timeout=10)
        seen.append(gc.isenabled())
        return (x ** 3).sum()

    def fast(x):
        inside.wait(timeout=10)
        return (x ** 2).sum()

    t = threading.Thread(target=lambda: np.asarray(jaccli.grad(slow, np.ones(3))))
    t.start()
    np.asarray(jaccli.grad(fast, np.ones(3)))   # ends first: the other recording is still open
    assert not gc.isenabled()
    release.set()
    t.join(timeout=10)
    assert seen == [False]
    assert gc.isenabled()


class _Cycle:
    def __init__(self):
        self.me = self


def test_objects_made_while_paused_are_aged_and_a_cycle_f_made_is_still_collected(eager_collector, monkeypatch):
    # After the pause, the young objects (a recording's, and f's) go to the oldest generation unwalked;
    # a full collection before a later recording finds the cycles among them.
    from jaccli.engine import freezer

    monkeypatch.setattr(freezer, "_AGE_FROM", 100)
    monkeypatch.setattr(freezer, "_FULL_FROM", 1000)
    monkeypatch.setattr(freezer, "_aged", [0, 0, 1])
    if gc.get_freeze_count():  # (the command line's tests in this process froze their start-up's objects:
        gc.unfreeze()          # aging is then skipped, see test_objects_someone_froze_stay_frozen)
    made = []

    def f(x):
        c = _Cycle()
        made.append(weakref.ref(c))
        return _loop(x)

    x = np.linspace(0.5, 1.5, 200)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x))[5, 4:6], [x[5], x[4] + np.cos(x[5])])
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert freezer._aged[0] > 0 or freezer._aged[1] > 0  # objects were aged, or a full collection ran
    for _ in range(40):
        if all(r() is None for r in made[:-1]):
            break
        freezer._aged[1] = 0  # (as in a process of few live objects: the suite's own would make it wait long)
        np.asarray(jaccli.jacobian(f, x))
    assert all(r() is None for r in made[:-1]), "a cycle f made was never collected"


def test_a_full_collection_that_finds_nothing_waits_longer_for_the_next_and_one_that_finds_a_cycle_does_not(
        monkeypatch):
    from jaccli.engine import freezer

    monkeypatch.setattr(freezer, "_FULL_FROM", 1000)
    monkeypatch.setattr(freezer, "_aged", [0, 0, 1])
    collected = []
    monkeypatch.setattr(gc, "collect", lambda: collected.append(1) or found)
    monkeypatch.setattr(gc, "get_objects", lambda: ())  # (few live objects: the wait is _FULL_FROM's)
    found, waits = 0, []
    for _ in range(6):  # nothing found: the wait doubles, up to _WAIT_UP_TO times the usual
        freezer._aged[0] = freezer._aged[2] * 1000 + 1
        freezer._collect_aged()
        waits.append(freezer._aged[2])
    assert waits == [2, 4, 8, 16, 16, 16] and len(collected) == 6
    freezer._aged[0] = 16 * 1000  # (not past the longer wait: no collection)
    freezer._collect_aged()
    assert len(collected) == 6 and freezer._aged[0] == 16 * 1000
    found = 3  # a cycle found: the usual wait again
    freezer._aged[0] += 1
    freezer._collect_aged()
    assert len(collected) == 7 and freezer._aged[2] == 1 and freezer._aged[0] == 0


def test_objects_someone_froze_stay_frozen(eager_collector, monkeypatch):
    from jaccli.engine import freezer

    monkeypatch.setattr(freezer, "_AGE_FROM", 100, raising=False)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        np.asarray(jaccli.jacobian(_loop, np.linspace(0.5, 1.5, 200)))
        assert frozen - 100 <= gc.get_freeze_count() <= frozen  # (a few frozen objects may have died meanwhile)
    finally:
        gc.unfreeze()
