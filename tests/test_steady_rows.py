"""Lazy rows of a steady record_once call before its evaluator (api/steady_calls.Deferred.rows, issue 44 item 4:
P5, 10 rows of a 1000 x 1000 Jacobian): ``J.matrix[a:b]`` or ``J[a:b]`` asked on every call runs the Steady kept
for those rows at the replay's values, with no evaluator, store or index machinery, and gives what the usual
way gives (bits, dtype, a fresh array, the stats once the evaluator is made)."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from tests.helpers import central_diff
from tests.test_steady_calls import _reruns

_RNG = np.random.default_rng(44)
_W1, _B1 = _RNG.standard_normal((16, 40)) / 6, _RNG.standard_normal(16)
_W2, _B2 = _RNG.standard_normal((30, 16)) / 4, _RNG.standard_normal(30)


def _mlp(x):
    return _W2 @ np.tanh(_W1 @ x + _B1) + _B2


def _mlp_jacobian(x):
    h = np.tanh(_W1 @ x + _B1)
    return (_W2 * (1.0 - h * h)) @ _W1


def _mlp_grid(x):
    """_mlp of a (5, 8) input: a Jacobian of shape (30, 5, 8)."""
    return _mlp(x.reshape(-1))


def _steady(f, ask, shape=(40,), calls=10):
    g = jaccli.record_once(f)
    for _ in range(calls):
        ask(jaccli.jacobian(g, _RNG.uniform(-1, 1, shape)))
    return g


@pytest.mark.parametrize("ask, rows", [(lambda J: J.matrix[2:12], slice(2, 12)), (lambda J: J[0:30:3], slice(0, 30, 3)),
                                       (lambda J: J.matrix[:1], slice(0, 1))])
def test_a_steady_calls_rows_come_from_their_program_before_any_evaluator(monkeypatch, ask, rows):
    g = _steady(_mlp, ask)
    x = _RNG.uniform(-1, 1, 40)
    reruns = _reruns(monkeypatch)
    J = jaccli.jacobian(g, x)
    got = ask(J)
    assert J._deferred is not None and "_ev" not in J.__dict__ and reruns.calls["rerun"] == 1
    plain = jaccli.jacobian(_mlp, x)
    want = ask(plain)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype == J.dtype and got.flags.writeable and got.flags.owndata
    np.testing.assert_allclose(got, _mlp_jacobian(x)[rows], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, central_diff(_mlp, x)[rows], rtol=1e-6, atol=1e-8)
    got[...] = np.nan  # (the caller's array: the rows the evaluator is given stay as they were)
    again = ask(J)  # (the evaluator now, given the rows: nothing swept again)
    np.testing.assert_array_equal(again, want)
    assert J._deferred.ev is not None and reruns.calls["rerun"] == 1
    U = jaccli.jacobian(g, x)
    U._ev  # noqa: B018 - the evaluator first: the usual way (SteadyBlocks._some_rows), the same program
    np.testing.assert_array_equal(ask(U), want)
    assert J.stats == U.stats and J.stats["path"] == "compiled sweep" and reruns.calls["rerun"] == 2
    assert J.stats["sweeps"] == plain.stats["sweeps"] == 1 and J.stats["rows_evaluated"] == want.shape[0]
    np.testing.assert_array_equal(np.asarray(J), np.asarray(plain))  # (the rest of the block, the usual way)
    assert (g.records, g.misses) == (1, 0)


def test_rows_of_a_block_with_more_input_axes_keep_their_shape():
    g = _steady(_mlp_grid, lambda J: J[4:9], shape=(5, 8))
    x = _RNG.uniform(-1, 1, (5, 8))
    J = jaccli.jacobian(g, x)
    got = J[4:9]
    assert "_ev" not in J.__dict__ and got.shape == (5, 5, 8)
    np.testing.assert_array_equal(got, jaccli.jacobian(_mlp_grid, x)[4:9])
    np.testing.assert_allclose(got.reshape(5, 40), _mlp_jacobian(x.reshape(-1))[4:9], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("other", [lambda J: J.matrix[3:13], lambda J: J.matrix[11:1:-1], lambda J: J[2:12, :5],
                                   lambda J: J[5], lambda J: J.matrix[:], lambda J: np.asarray(J)[2:12]])
def test_any_other_request_of_such_a_block_goes_the_usual_way(monkeypatch, other):
    g = _steady(_mlp, lambda J: J.matrix[2:12])
    x = _RNG.uniform(-1, 1, 40)
    J = jaccli.jacobian(g, x)
    assert J._deferred is not None
    got = other(J)
    assert J._deferred.ev is not None
    np.testing.assert_array_equal(got, other(jaccli.jacobian(_mlp, x)))
    np.testing.assert_allclose(J.matrix[2:12], _mlp_jacobian(x)[2:12], rtol=1e-12, atol=1e-14)


def test_steady_calls_that_ask_the_whole_block_after_rows_and_rows_again_get_each_the_plain_bits(monkeypatch):
    # a dense Jacobian's whole block has no plan of its own (SteadyCall: a diagonal or a symmetric assembly): each
    # such call makes its evaluator, from the replay; rows asked again are the rows' program's again
    g = _steady(_mlp, lambda J: J.matrix[2:12])
    for ask in (np.asarray,) * 4 + (lambda J: J.matrix[2:12],) * 2:
        x = _RNG.uniform(-1, 1, 40)
        J = jaccli.jacobian(g, x)
        np.testing.assert_array_equal(ask(J), ask(jaccli.jacobian(_mlp, x)))
        assert J._deferred is not None
    reruns = _reruns(monkeypatch)
    J = jaccli.jacobian(g, x)
    np.testing.assert_allclose(J.matrix[2:12], _mlp_jacobian(x)[2:12], rtol=1e-12, atol=1e-14)
    assert J._deferred.ev is None and reruns.calls["rerun"] == 1 and (g.records, g.misses) == (1, 0)


def test_a_hessians_rows_and_a_guard_that_fails_go_the_usual_way(monkeypatch):
    g = jaccli.record_once(lambda x: np.sum(np.sqrt(x) * x))  # (0.5 / sqrt(x) is checked finite)
    for _ in range(10):
        H = jaccli.hessian(g, _RNG.uniform(0.5, 2.0, 6))
        H[1:4]
    y = np.linspace(0.5, 2.0, 6)
    H = jaccli.hessian(g, y)
    np.testing.assert_allclose(H[1:4], np.diag(0.75 / np.sqrt(y))[1:4], rtol=1e-13)
    f = jaccli.record_once(lambda x: np.sqrt(x) * x[::-1])  # (not elementwise: rows by a reverse sweep)
    for _ in range(10):
        jaccli.jacobian(f, _RNG.uniform(0.5, 2.0, 6)).matrix[0:3]
    reruns = _reruns(monkeypatch)
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    J = jaccli.jacobian(f, y)
    assert J._deferred is not None
    got = J.matrix[0:3]  # (the program's guard fails at 0: the evaluator's usual way, which reports it)
    assert J._deferred.ev is not None and reruns.calls["rerun"] >= 1 and J.stats["path"] != "compiled sweep"
    np.testing.assert_array_equal(got, jaccli.jacobian(lambda x: np.sqrt(x) * x[::-1], y).matrix[0:3])
    np.testing.assert_allclose(got[1:, 1:3], np.diag(0.5 / np.sqrt(y[1:3]) * y[::-1][1:3]), rtol=1e-13)
    np.testing.assert_allclose(got[:, 3:], np.sqrt(y[:3])[:, None] * np.eye(6)[::-1][:3, 3:], rtol=1e-13)
    assert f.misses == 0


def test_threads_reading_a_steady_calls_rows_at_once_run_their_program_once(monkeypatch):
    import threading

    g = _steady(_mlp, lambda J: J.matrix[2:12])
    x = _RNG.uniform(-1, 1, 40)
    reruns = _reruns(monkeypatch)
    J = jaccli.jacobian(g, x)
    got, barrier = [], threading.Barrier(6)

    def read():
        barrier.wait()
        got.append(J.matrix[2:12])

    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = jaccli.jacobian(_mlp, x).matrix[2:12]
    assert len(got) == 6 and reruns.calls["rerun"] == 1 and J.stats["sweeps"] == 1
    for a in got:
        np.testing.assert_array_equal(a, want)
    assert len({id(a) for a in got}) == 6 and not any(np.shares_memory(a, b) for a in got for b in got if a is not b)


def test_rows_larger_than_the_bound_take_the_evaluators_way(monkeypatch):
    from jaccli.api import steady_calls

    g = _steady(_mlp, lambda J: J.matrix[2:12])
    x = _RNG.uniform(-1, 1, 40)
    monkeypatch.setattr(steady_calls, "ROWS_UP_TO", 10 * 40 * 8 - 1)  # (one byte less than the 10 rows')
    J = jaccli.jacobian(g, x)
    got = J.matrix[2:12]
    assert J._deferred.ev is not None
    monkeypatch.setattr(steady_calls, "ROWS_UP_TO", 10 * 40 * 8)
    K = jaccli.jacobian(g, x)
    np.testing.assert_array_equal(K.matrix[2:12], got)
    assert K._deferred.ev is None
    np.testing.assert_allclose(got, _mlp_jacobian(x)[2:12], rtol=1e-12, atol=1e-14)
