"""A steady record_once call's whole block (issue 44, item 4): the compiled sweep that gave it on an
earlier call is run again at once (api/steady_blocks.py; Replayable.rerun, PendingReplay.rerun), without
the route, the seeds or the request being made again; its results are the plain call's, to the bit, with
the same counts. A guard of that sweep that fails, the diagnostics and a progress observer take the usual way.
"""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.engine import observing
from tests.helpers import Recorder, rosen_hess as _rosenbrock_hessian, rosenbrock as _rosenbrock
from tests.test_per_call_cost import _Counted, _elementwise, _elementwise_jacobian, _tall, _wide, _wide_jacobian
from tests.test_replay import softmax_ce as _logsumexp, softmax_hessian as _softmax_hessian


def _counted(monkeypatch):
    from jaccli.api.evaluator import Evaluator

    return (_Counted(monkeypatch, Evaluator, "_sweep_blocks", "_seeds"),
            _Counted(monkeypatch, _REPLAYS(), "answer", "rerun"))


def _REPLAYS():
    """What reruns a steady call's kept program: a replay, or its values before it is made (a PendingReplay)."""
    from jaccli.replay.pending_replays import PendingReplay
    from jaccli.replay.replays import Replayable

    return Replayable, PendingReplay


def _patched_reruns(monkeypatch, wrap):
    """Each class of _REPLAYS() given `wrap(its rerun)` as its rerun."""
    for cls in _REPLAYS():
        monkeypatch.setattr(cls, "rerun", wrap(cls.rerun))


def _calls(g, make, seed, calls, counted):
    """(k, x, make(g, x)) for `calls` calls at random points, `counted` reset before each."""
    rng = np.random.default_rng(seed)
    for k in range(calls):
        counted.reset()
        x = rng.uniform(-1, 1, 6)
        yield k, x, make(g, x)


def _check(f, x, A):
    if f is _elementwise:
        np.testing.assert_allclose(A, _elementwise_jacobian(x), rtol=1e-13)
    elif f is _wide:
        np.testing.assert_allclose(A, _wide_jacobian(x), rtol=1e-13, atol=1e-15)
    elif f is _rosenbrock:
        np.testing.assert_allclose(A, _rosenbrock_hessian(x), rtol=1e-13, atol=1e-12)
    elif f is _logsumexp:
        np.testing.assert_allclose(A, _softmax_hessian(x), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f, hessian, mode", [(_elementwise, False, "auto"), (_wide, False, "auto"),
                                              (_tall, False, "auto"), (_elementwise, False, "reverse"),
                                              (_rosenbrock, True, "forward"), (_rosenbrock, True, "reverse"),
                                              (_logsumexp, True, "forward")])
def test_a_steady_whole_block_reruns_its_compiled_sweep_and_gives_the_plain_calls_bits(monkeypatch, f, hessian, mode):
    evaluator, replay = _counted(monkeypatch)
    g = jaccli.record_once(f)
    make = jaccli.hessian if hessian else jaccli.jacobian
    rng = np.random.default_rng(11)
    steady = 0
    for _ in range(11):  # (a recording is compiled over its first replays, one step a call)
        evaluator.reset()
        replay.reset()
        x = rng.uniform(-1, 1, 6)
        J = make(g, x, mode=mode)
        A = np.asarray(J)
        if replay.calls["rerun"] and J.stats["path"] == "compiled sweep":
            # no request made (seeds, key, the program's lookup), no route taken: the program, at once
            steady += 1
            assert evaluator.calls == {"_sweep_blocks": 0, "_seeds": 0} and replay.calls["answer"] == 0
            with monkeypatch.context() as usual:  # the same call by its route: the program through answer()
                _patched_reruns(usual, lambda rerun: lambda self, ran: None)
                U = make(g, x, mode=mode)
                np.testing.assert_array_equal(A, np.asarray(U))
                assert U.stats == J.stats
        P = make(f, x, mode=mode)
        if f is _logsumexp:  # (a compiled sweep may round otherwise than the usual one: replays.Replayable.answer)
            np.testing.assert_allclose(A, np.asarray(P), rtol=1e-13, atol=1e-16)
        else:
            np.testing.assert_array_equal(A, np.asarray(P))
        assert {k: v for k, v in J.stats.items() if k != "path"} == {k: v for k, v in P.stats.items() if k != "path"}
        assert J._ev.kinds == P._ev.kinds and not A.flags.writeable
        _check(f, x, A)
        np.testing.assert_array_equal(J[1], A[1])  # the cache answers as before
    assert steady >= 3 and g.records == 1


def test_a_failing_guard_of_the_steady_sweep_takes_the_usual_way(monkeypatch):
    reruns = []

    def wrap(original):
        def rerun(self, ran):
            out = original(self, ran)
            reruns.append(out is not None)
            return out
        return rerun

    _patched_reruns(monkeypatch, wrap)
    f = lambda x: np.sqrt(x) * x  # noqa: E731 - the sweep's factor 0.5 / sqrt(x) is checked finite
    g = jaccli.record_once(f)
    x = np.linspace(0.5, 2.0, 5)
    for _ in range(9):
        np.asarray(jaccli.jacobian(g, x))
    assert reruns and all(reruns)
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    reruns.clear()
    A = np.asarray(jaccli.jacobian(g, y))  # (in the caller's error state: another one is another replay)
    assert reruns == [False] and g.misses == 0  # the kept program's guard failed: the usual route then
    with np.errstate(all="ignore"):
        P = np.asarray(jaccli.jacobian(f, y))
    np.testing.assert_array_equal(A, P)  # the usual sweep's answer at 0, whatever it is: the plain call's
    np.testing.assert_allclose(A[1:, 1:], np.diag(1.5 * np.sqrt(y[1:])), rtol=1e-13)
    reruns.clear()
    z = np.linspace(1.0, 3.0, 5)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, z)), np.diag(1.5 * np.sqrt(z)), rtol=1e-13)


def test_diagnostics_and_progress_see_a_steady_call_as_any_other(monkeypatch):
    evaluator, replay = _counted(monkeypatch)
    g = jaccli.record_once(_wide)
    x = np.linspace(-1, 1, 6)
    for _ in range(9):
        np.asarray(jaccli.jacobian(g, x))
    assert replay.calls["rerun"]
    replay.reset()
    recorder = Recorder()
    with observing(recorder):
        J = jaccli.jacobian(g, x)
        np.testing.assert_allclose(np.asarray(J), _wide_jacobian(x), rtol=1e-13, atol=1e-15)
    assert replay.calls["rerun"] == 0 and ("start", "reverse sweeps (rows)", 2) in recorder.events
    replay.reset()
    seen = []
    J = jaccli.jacobian(g, x)
    J._ev.watch = seen.append  # (the command line's bound on the entries)
    np.asarray(J)
    assert replay.calls["rerun"] == 0 and len(seen) == 1


def _stencil(x):
    g = int(round(x.shape[0] ** 0.5))
    u = x.reshape(g, g)
    p = np.pad(u, 1, mode="constant")
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u + u ** 3).reshape(-1)


def _stencil_jacobian(x):
    g = int(round(x.shape[0] ** 0.5))
    J = np.diag(3 * x ** 2 - 4.0)
    for k in range(x.size):
        r, c = divmod(k, g)
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if 0 <= r + dr < g and 0 <= c + dc < g:
                J[k, (r + dr) * g + c + dc] = 1.0
    return J


@pytest.mark.parametrize("once", [False, True])
def test_a_few_rows_of_a_wide_block_look_up_their_columns_as_they_are(once):
    from jaccli.api.evaluator import _missing_among, _unique

    g = jaccli.record_once(_stencil) if once else _stencil
    rng = np.random.default_rng(12)
    for _ in range(8 if once else 1):
        x = rng.uniform(-1, 1, 144)
        want = _stencil_jacobian(x)
        J = jaccli.jacobian(g, x)
        ev = J._ev
        cols = np.arange(144)
        assert _missing_among(cols, ev.col_done[0], 144) is cols  # every column, none known: not masked
        np.testing.assert_allclose(J[:3], want[:3], rtol=1e-14)
        np.testing.assert_allclose(J[[9, 4, 9]], want[[9, 4, 9]], rtol=1e-14)
        np.testing.assert_allclose(J[140:, ::-1], want[140:, ::-1], rtol=1e-14)
        assert J.stats["rows_evaluated"] == 9 and J.stats["cols_evaluated"] == 0
        np.testing.assert_allclose(J[:, 5], want[:, 5], rtol=1e-14)  # a column now known: looked up
        assert J.stats["cols_evaluated"] == 1
        np.testing.assert_allclose(np.asarray(J), want, rtol=1e-14)
    np.testing.assert_array_equal(_unique(np.array([5, 1, 5, 3]), 8), [1, 3, 5])
    np.testing.assert_array_equal(_unique(np.array([1, 3, 5]), 8), [1, 3, 5])
    np.testing.assert_array_equal(_missing_among(np.arange(6)[::-1], np.zeros(6, dtype=bool), 6), np.arange(6))


def _counted_records(monkeypatch):
    from jaccli.api import jacobian_hessian

    return _Counted(monkeypatch, jacobian_hessian, "record", "gradient_recording")


@pytest.mark.parametrize("f, hessian", [(_wide, False), (_elementwise, False), (_rosenbrock, True)])
def test_a_steady_call_goes_from_its_replay_to_its_blocks(monkeypatch, f, hessian):
    records = _counted_records(monkeypatch)
    g, make = jaccli.record_once(f), jaccli.hessian if hessian else jaccli.jacobian
    for k, x, J in _calls(g, make, 13, 6, records):
        # the first call records f and checks its outputs; later ones replay it straight to the blocks
        assert sum(records.calls.values()) == (1 if k == 0 else 0)
        P = make(f, x)
        assert J.shape == P.shape and J.dtype == P.dtype and type(J) is type(P)
        A = np.asarray(J)
        np.testing.assert_allclose(A, np.asarray(P), rtol=1e-13, atol=1e-15)
        _check(f, x, A)
    assert (g.records, g.replays, g.misses) == (1, 5, 0)
    J = make(g, (x,))  # a tuple of inputs, other options: the usual way, the same recording
    block = J[0][0] if hessian else J[0]  # (H[i][j] for a tuple of inputs)
    assert type(J) is tuple and len(J) == 1 and g.replays == 6
    np.testing.assert_allclose(np.asarray(block), np.asarray(make(f, x)), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(make(g, x.astype(np.float32))), np.asarray(make(f, x)), rtol=1e-5, atol=1e-6)
    assert g.records == 2


def test_a_steady_call_whose_replay_fails_records_afresh_as_before(monkeypatch):
    def f(x):
        return np.sin(x) * x if x.sum() > 0 else np.cumsum(x ** 2)

    records = _counted_records(monkeypatch)
    g = jaccli.record_once(f)
    x = np.linspace(0.1, 1.0, 5)
    for _ in range(4):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, x)), np.asarray(jaccli.jacobian(f, x)))
    records.reset()
    y = -x
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, y)), np.tril(np.broadcast_to(2 * y, (5, 5))), rtol=1e-13)
    assert records.calls["record"] == 1 and (g.records, g.misses) == (2, 1)


def test_complex_outputs_never_take_the_steady_way():
    f = lambda x: np.exp(1j * x) * x  # noqa: E731
    g = jaccli.record_once(f)
    x = np.linspace(-1.0, 1.0, 4)
    for _ in range(5):
        J = jaccli.jacobian(g, x)
        assert np.iscomplexobj(J)
        np.testing.assert_allclose(J, np.diag(np.exp(1j * x) * (1 + 1j * x)), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("f, hessian", [(_wide, False), (_tall, False), (_rosenbrock, True)])
def test_a_whole_block_asked_in_another_order_is_never_kept_for_the_next_calls(f, hessian):
    g = jaccli.record_once(f)
    make = jaccli.hessian if hessian else jaccli.jacobian
    rng = np.random.default_rng(14)
    for k in range(14):
        x = rng.uniform(-1, 1, 6)
        J, P = make(g, x), np.asarray(make(f, x))
        # every row (column) in reverse order: a whole block, swept with its seeds in that order
        got = J[::-1, ::-1] if k < 10 else np.asarray(J)
        np.testing.assert_allclose(got, P[::-1, ::-1] if k < 10 else P, rtol=1e-13, atol=1e-15)


def test_small_replays_share_one_context_that_pauses_nothing():
    import gc

    from jaccli.engine.recording import pause_for

    g = jaccli.record_once(_elementwise)
    for _ in range(3):
        J = jaccli.jacobian(g, np.linspace(-1, 1, 5))
    trace = J._ev.rec.trace
    assert pause_for(trace) is pause_for(trace)  # (not a new nullcontext for each sweep and replay)
    with pause_for(trace):
        assert gc.isenabled()


@pytest.mark.parametrize("f, hessian", [(_elementwise, False), (_wide, False), (_rosenbrock, True),
                                        (_logsumexp, True)])
def test_a_steady_whole_block_decides_no_route_and_makes_no_positions(monkeypatch, f, hessian):
    from jaccli.api.evaluator import Evaluator
    from jaccli.api.hessian_evaluator import HessianEvaluator

    routes = _Counted(monkeypatch, HessianEvaluator if hessian else Evaluator, "ensure")
    make = jaccli.hessian if hessian else jaccli.jacobian
    for k, x, J in _calls(jaccli.record_once(f), make, 15, 12, routes):
        A = np.asarray(J)
        _check(f, x, A)
        if k >= 9:  # (compiled and checked over the first replays: then the kept program, at once)
            assert routes.calls["ensure"] == 0 and J.stats["path"] == "compiled sweep"
            P = make(f, x)
            np.testing.assert_allclose(A, np.asarray(P), rtol=1e-13, atol=1e-16)
            assert {k: v for k, v in J.stats.items() if k != "path"} == \
                {k: v for k, v in P.stats.items() if k != "path"}
            np.testing.assert_array_equal(J[1], A[1])


def test_a_failing_guard_of_the_steady_sweep_runs_its_program_once(monkeypatch):
    reruns = _Counted(monkeypatch, _REPLAYS(), "rerun")
    g = jaccli.record_once(lambda x: np.sqrt(x) * x)  # (0.5 / sqrt(x) is checked finite)
    for _ in range(9):
        np.asarray(jaccli.jacobian(g, np.linspace(0.5, 2.0, 5)))
    reruns.reset()
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    A = np.asarray(jaccli.jacobian(g, y))  # (sqrt(0) warns of nothing: the caller's error state, replayed)
    assert g.misses == 0 and reruns.calls["rerun"] == 1  # the guard fails once: the usual route then, not the program again
    np.testing.assert_allclose(A[1:, 1:], np.diag(1.5 * np.sqrt(y[1:])), rtol=1e-13)


def test_steady_lazy_rows_rerun_their_compiled_sweep_and_give_the_plain_calls_bits(monkeypatch):
    # 10 rows of a stencil Jacobian at each new point (issue 44's stencil300-rows10, on an 8 x 8 grid)
    from benchmarks.workloads import _stencil_rows_ref, stencil

    evaluator, replay = _counted(monkeypatch)
    f = lambda x: stencil(np, x)  # noqa: E731
    g = jaccli.record_once(f)
    rng = np.random.default_rng(5)
    steady = 0
    for _ in range(11):
        evaluator.reset()
        replay.reset()
        x = rng.uniform(0.1, 1.0, 64)
        J = jaccli.jacobian(g, x)
        R = J[:10]
        if replay.calls["rerun"]:
            steady += 1  # no rows looked up, no seeds, no request: the program, at once
            assert evaluator.calls == {"_sweep_blocks": 0, "_seeds": 0} and replay.calls["answer"] == 0
        P = jaccli.jacobian(f, x)
        np.testing.assert_array_equal(R, P[:10])
        np.testing.assert_allclose(R, _stencil_rows_ref(x, 10), rtol=1e-13)
        assert J.stats == {**P.stats, "path": J.stats["path"]} and J._ev.kinds == P._ev.kinds
        np.testing.assert_array_equal(J[3:5], P[3:5])  # the cache answers as before
        np.testing.assert_array_equal(J[20:23], P[20:23])  # other rows: the usual way
        np.testing.assert_array_equal(np.asarray(J), np.asarray(P))
    assert steady >= 3 and g.records == 1
    x = rng.uniform(0.1, 1.0, 64)
    for rows in (np.s_[12:2:-3], np.s_[5:9]):  # rows in another order, other rows: the usual way, right
        np.testing.assert_array_equal(jaccli.jacobian(g, x)[rows], jaccli.jacobian(f, x)[rows])


@pytest.mark.parametrize("f, df", [(lambda x: np.sqrt(x) + np.roll(x, 1), lambda x: 0.5 / np.sqrt(x)),
                                   (lambda x: x ** 0.5 * 3.0 - np.roll(x, 1), lambda x: 1.5 * x ** -0.5)])
def test_lazy_rows_compiled_sweep_computes_the_partials_at_their_entries_alone(f, df):
    # sqrt'(0) = inf outside the rows asked for: a partial computed over the whole array fails its
    # check there, at the entries alone it holds (and each run costs the entries, not the array)
    g = jaccli.record_once(f)
    rng = np.random.default_rng(3)
    for _ in range(8):
        x = rng.uniform(0.5, 2.0, 6000)  # (3 rows of 6000: structured seeds, dense ones are small)
        R = jaccli.jacobian(g, x)[:3]
        np.testing.assert_array_equal(R, jaccli.jacobian(f, x)[:3])
    x[[10, 5000]] = 0.0
    J = jaccli.jacobian(g, x)
    R = J[:3]
    np.testing.assert_array_equal(R, jaccli.jacobian(f, x)[:3])
    ref = np.eye(3, 6000) * df(x[:3])[:, None]
    ref[[0, 1, 2], [5999, 0, 1]] = R[0, 5999]  # (np.roll's +-1, the same in each row)
    np.testing.assert_allclose(R, ref, rtol=1e-14)
    assert abs(R[0, 5999]) == 1.0
    assert J.stats["path"] == "compiled sweep" and g.records == 1

def test_a_steady_reverse_block_makes_a_vectors_cotangent_in_column_order_as_its_route_does(monkeypatch):
    # The usual route keeps a reverse block's rows whole as the sweep makes them (BlockStores._kept_whole),
    # so x[i]'s cotangent block may be in column order: a stack of x[i] * x[i+1] adds a contiguous column
    # per piece. The steady call's program must make it so too (a row apart per element: 2.5x slower).
    from jaccli.engine.rules import indexing

    layouts = []
    add = indexing.get_basic.vjp_add

    def watched(acc, g, idx):
        layouts.append(acc.flags.f_contiguous)
        return add(acc, g, idx)

    monkeypatch.setattr(indexing.get_basic, "vjp_add", watched)
    f = jaccli.record_once(lambda x: np.stack([x[i] * x[i + 1] for i in range(x.size - 1)]))
    x = np.linspace(0.5, 1.5, 40)
    steady = 0
    for k in range(10):
        layouts.clear()
        xk = x * (1 + 0.01 * k)
        J = jaccli.jacobian(f, xk, mode="reverse")
        A = np.asarray(J)
        want = np.zeros((39, 40))
        want[np.arange(39), np.arange(39)] = xk[1:]
        want[np.arange(39), np.arange(1, 40)] = xk[:-1]
        np.testing.assert_array_equal(A, want)
        assert layouts and all(layouts), (k, J.stats["path"])
        steady += J.stats["path"] == "compiled sweep"
    assert steady >= 2


def test_a_steady_diagonal_block_is_written_at_once_with_the_usual_counts(monkeypatch):
    # (P1-n100: the positions, the round of blocks sharing the rows, the fancy-indexed masks: 3 us of 35)
    from jaccli.api.evaluator import Evaluator

    usual = _Counted(monkeypatch, Evaluator, "_ensure_diagonal")
    for k, x, J in _calls(jaccli.record_once(_elementwise), jaccli.jacobian, 17, 12, usual):
        A = np.asarray(J)
        _check(_elementwise, x, A)
        if k >= 9:
            assert usual.calls["_ensure_diagonal"] == 0 and J.stats["path"] == "compiled sweep"
            P = jaccli.jacobian(_elementwise, x)
            np.testing.assert_array_equal(A, np.asarray(P))
            assert {k: v for k, v in J.stats.items() if k != "path"} == \
                {k: v for k, v in P.stats.items() if k != "path"}
            assert J._ev.kinds == P._ev.kinds and not A.flags.writeable
            np.testing.assert_array_equal(J[2], A[2])
            np.testing.assert_array_equal(J._ev.diagonal(0, 0), np.diag(A))


def test_a_steady_hessian_block_is_assembled_with_its_kept_positions(monkeypatch):
    # (P3-n100: the positions' bytes were hashed and looked up, and np.where ran, on every call)
    from jaccli.api import hessian_symmetry
    from jaccli.api.hessian_evaluator import HessianEvaluator

    counted = _Counted(monkeypatch, HessianEvaluator, "_write_rows")
    looked_up = []
    positions = hessian_symmetry._positions
    monkeypatch.setattr(hessian_symmetry, "_positions", lambda *a: looked_up.append(1) or positions(*a))
    g = jaccli.record_once(_rosenbrock)
    rng = np.random.default_rng(19)
    for k in range(12):
        counted.reset()
        looked_up.clear()
        x = rng.uniform(-1, 1, 40)  # (6 would be swept dense: its program is no structured block)
        H = jaccli.hessian(g, x)
        A = np.asarray(H)
        _check(_rosenbrock, x, A)
        if k >= 10:
            assert not looked_up and counted.calls["_write_rows"] == 0 and H.stats["path"] == "compiled sweep"
            P = jaccli.hessian(_rosenbrock, x)
            np.testing.assert_array_equal(A, np.asarray(P))
            assert {k: v for k, v in H.stats.items() if k != "path"} == \
                {k: v for k, v in P.stats.items() if k != "path"}
            assert H._ev.kinds == P._ev.kinds and not A.flags.writeable and (A == A.T).all()
            np.testing.assert_array_equal(H[3], A[3])
