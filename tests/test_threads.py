"""Threads: recordings in different threads do not see each other, and a lazy result can be shared."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import jaccli
from jaccli.errors import TracingError

WAIT = 10.0  # seconds; a step that takes longer means the other thread is stuck


def _run(target, *args):
    """Start target(*args) in a thread; its result or exception lands in the returned dict."""
    box: dict = {}

    def body():
        try:
            box["result"] = target(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    box["thread"] = thread
    return box


def _finish(box):
    box["thread"].join(WAIT)
    assert not box["thread"].is_alive()
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_np_array_of_traced_values_works_while_another_thread_leaves_the_same_module():
    steps = {name: threading.Event() for name in ("a_in", "a_go", "b_in", "b_go")}

    def blocking(inside, go):
        def f(x):
            steps[inside].set()
            assert steps[go].wait(WAIT)
            return np.array([x[0], x[1] * 2.0])
        return f

    x = np.array([0.5, -1.0])
    first = _run(lambda: np.asarray(jaccli.jacobian(blocking("a_in", "a_go"), x)))
    assert steps["a_in"].wait(WAIT)
    second = _run(lambda: np.asarray(jaccli.jacobian(blocking("b_in", "b_go"), x)))
    assert steps["b_in"].wait(WAIT)
    steps["a_go"].set()
    np.testing.assert_array_equal(_finish(first), [[1.0, 0.0], [0.0, 2.0]])
    steps["b_go"].set()
    np.testing.assert_array_equal(_finish(second), [[1.0, 0.0], [0.0, 2.0]])
    assert globals()["np"] is sys.modules["numpy"]  # the module's own name is back


def test_constants_held_by_one_recording_are_not_released_by_another_thread():
    steps = {name: threading.Event() for name in ("a_in", "b_in", "b_go", "a_used", "b_out")}

    def f(x):
        c = np.ones(2)
        steps["a_in"].set()
        assert steps["b_in"].wait(WAIT)
        y = x * c
        steps["a_used"].set()
        assert steps["b_out"].wait(WAIT)
        c[:] = 5.0  # changes what the recording of x * c holds
        return y

    def g(x):
        steps["b_in"].set()
        assert steps["b_go"].wait(WAIT)
        return x * 3.0

    x = np.array([0.5, -1.0])
    first = _run(lambda: np.asarray(jaccli.jacobian(f, x)))
    assert steps["a_in"].wait(WAIT)
    second = _run(lambda: np.asarray(jaccli.jacobian(g, x)))
    assert steps["a_used"].wait(WAIT)
    steps["b_go"].set()
    np.testing.assert_array_equal(_finish(second), 3.0 * np.eye(2))
    steps["b_out"].set()
    with pytest.raises(TracingError):
        _finish(first)


def test_many_threads_differentiate_at_once_and_agree_with_one_thread():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((12, 12))

    def f(x):
        h = np.tanh(W @ x)
        return np.concatenate([h * x, np.array([h[0], h[1] * 2.0])])

    def loss(z):
        return np.sum(np.sin(W @ z) ** 2)

    xs = [rng.standard_normal(12) for _ in range(24)]
    want = [(np.asarray(jaccli.jacobian(f, x)), np.asarray(jaccli.hessian(loss, x))) for x in xs]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        with ThreadPoolExecutor(6) as pool:
            got = list(pool.map(lambda x: (np.asarray(jaccli.jacobian(f, x)), np.asarray(jaccli.hessian(loss, x))),
                                xs * 3))
    finally:
        sys.setswitchinterval(interval)
    for (J, H), (J0, H0) in zip(got, want * 3):
        np.testing.assert_array_equal(J, J0)
        np.testing.assert_allclose(H, H0, rtol=1e-13, atol=1e-13)


def test_one_lazy_hessian_indexed_from_many_threads_fills_its_cache_once_and_right():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((90, 90))

    def loss(z):
        return np.sum(np.sin(W @ z))

    x = rng.standard_normal(90)
    want = np.asarray(jaccli.hessian(loss, x))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            H = jaccli.hessian(loss, x)
            with ThreadPoolExecutor(8) as pool:
                parts = list(pool.map(lambda r: H[r:r + 7], range(0, 90, 7)))
            np.testing.assert_allclose(np.concatenate(parts), want, rtol=1e-13, atol=1e-13)
            assert H.stats["seeds"] == 90  # every Hessian-vector product once, none twice
    finally:
        sys.setswitchinterval(interval)


def test_record_once_replays_in_many_threads_at_once():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((10, 10))

    def loss(z):
        h = W @ z
        return np.sum(np.where(h > -50.0, np.tanh(h) ** 3, h))  # guards that hold at every point

    once = jaccli.record_once(loss)
    xs = [rng.standard_normal(10) for _ in range(16)]
    want = [np.asarray(jaccli.hessian(loss, x)) for x in xs]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(6) as pool:
            got = list(pool.map(lambda x: np.asarray(jaccli.hessian(once, x)), xs * 4))
    finally:
        sys.setswitchinterval(interval)
    for H, H0 in zip(got, want * 4):
        np.testing.assert_allclose(H, H0, rtol=1e-13, atol=1e-13)
    assert once.records + once.replays == len(xs) * 4 and once.replays > 0



def test_steady_calls_of_two_lanes_of_one_recording_in_many_threads_agree_with_plain_calls():
    # Lanes in forward and reverse mode replay one kept recording and keep their routes with it
    # (replay/pending_replays.route_for): threads switching every microsecond make and take them at once
    from tests.helpers import rosenbrock as loss  # (its Hessian is assembled by a steady call's plan, both modes)

    rng = np.random.default_rng(4)
    once = jaccli.record_once(loss)
    for k in range(12):  # (compiled and steady in both modes: each mode's lane and route)
        for mode in ("forward", "reverse"):
            np.asarray(jaccli.hessian(once, rng.standard_normal(40), mode=mode))
    xs = [rng.standard_normal(40) for _ in range(12)]
    jobs = [(x, mode) for x in xs for mode in ("forward", "reverse")] * 3
    want = {(id(x), mode): np.asarray(jaccli.hessian(loss, x, mode=mode)) for x, mode in jobs}
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(6) as pool:
            got = list(pool.map(lambda job: np.asarray(jaccli.hessian(once, job[0], mode=job[1])), jobs))
    finally:
        sys.setswitchinterval(interval)
    for (x, mode), H in zip(jobs, got):
        np.testing.assert_allclose(H, want[id(x), mode], rtol=1e-13, atol=1e-13)
    assert once.records == 1 and once.misses == 0
    kept = {lane.kept for lane in once.steady_lanes.values()}
    assert len(kept) == 1 and len(next(iter(kept)).__dict__["routes"]) == 2
