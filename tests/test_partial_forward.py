"""A record_once replay that makes first the values its steady call's sweep reads, and the rest when something
reads them (replay/partial_forward.py, issue 44 items 2 and 4), and the fact it needs, facts.MAY_FAIL.
References: the plain call's bits, closed forms, f itself.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import jaccli
from jaccli.engine import MAY_FAIL
from jaccli.engine.registry import PRIMITIVES


def _stencil(x):
    g = int(round(x.shape[0] ** 0.5))
    u = x.reshape(g, g)
    p = np.pad(u, 1, mode="constant")
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u + u ** 3).reshape(-1)


def _stencil_rows(x, rows):
    """Rows of _stencil's Jacobian in closed form: the 5-point Laplacian's, plus 3 u^2 on the diagonal."""
    g = int(round(x.size ** 0.5))
    J = np.zeros((rows, x.size))
    for r in range(rows):
        i, j = divmod(r, g)
        J[r, r] = -4.0 + 3.0 * x[r] ** 2
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= i + di < g and 0 <= j + dj < g:
                J[r, (i + di) * g + j + dj] = 1.0
    return J


RNG = np.random.default_rng(7)
W1, B1, W2, B2 = RNG.standard_normal((40, 30)), RNG.standard_normal(40), RNG.standard_normal((25, 40)), \
    RNG.standard_normal(25)


def _network(x):
    return W2 @ np.tanh(W1 @ x + B1) + B2


def _network_rows(x, rows):
    t = np.tanh(W1 @ x + B1)
    return (W2[:rows] * (1.0 - t * t)) @ W1


def _steady_rows(f, x, rows, calls=8):
    """g = record_once(f) after `calls` calls of its first `rows` Jacobian rows at moved points (its Split made)."""
    g = jaccli.record_once(f)
    for k in range(calls):
        np.asarray(jaccli.jacobian(g, x + 1e-3 * (k + 1))[:rows])
    return g


def _forward(g):
    (rec,) = g._cache.values()
    return rec._forward[0]


CASES = [(_stencil, _stencil_rows, np.linspace(0.1, 1.0, 400)), (_network, _network_rows, np.linspace(-1, 1, 30))]


@pytest.mark.parametrize("f, closed, x", CASES, ids=["stencil", "network"])
def test_steady_rows_make_only_the_values_their_sweep_reads_with_the_plain_calls_bits(f, closed, x):
    g = _steady_rows(f, x, 10)
    fw = _forward(g)
    (split,) = [s for s in fw.parts.values() if s]
    assert fw.reads and split.left and max(split.left) == len(fw.structure) - 1  # (f's output is left for later)
    J = jaccli.jacobian(g, x)
    got = np.asarray(J[:10])
    rec = J._ev.rec
    assert rec.trace._rest is not None and "outputs" not in rec.__dict__  # (nothing else was made)
    np.testing.assert_array_equal(got, np.asarray(jaccli.jacobian(f, x)[:10]))
    np.testing.assert_allclose(got, closed(x, 10), rtol=1e-13, atol=1e-14)
    assert (g.records, g.misses) == (1, 0)


@pytest.mark.parametrize("f, closed, x", CASES, ids=["stencil", "network"])
def test_what_else_is_read_of_a_split_replay_is_made_then_with_fs_bits(f, closed, x):
    g = _steady_rows(f, x, 10)
    plain = jaccli.jacobian(f, x)
    J = jaccli.jacobian(g, x)
    np.asarray(J[:10])
    rec = J._ev.rec
    np.testing.assert_array_equal(rec.outputs[0], f(x))  # (made when read)
    assert rec.trace._rest is None
    np.testing.assert_array_equal(np.asarray(J[10:14]), np.asarray(plain[10:14]))  # (another request: a usual sweep)
    K = jaccli.jacobian(g, x)
    np.testing.assert_array_equal(np.asarray(K), np.asarray(plain))  # (the whole block: its nodes, then their sweeps)
    L = jaccli.jacobian(g, x)
    np.asarray(L[:10])
    np.testing.assert_array_equal(np.asarray(jaccli.vjp(g, x, np.ones(f(x).shape))[1]),
                                  np.asarray(jaccli.vjp(f, x, np.ones(f(x).shape))[1]))


def test_threads_reading_a_split_replays_outputs_at_once_make_the_rest_once(monkeypatch):
    from jaccli.replay import partial_forward

    x = np.linspace(-1, 1, 30)
    g = _steady_rows(_network, x, 10)
    J = jaccli.jacobian(g, x)
    np.asarray(J[:10])
    rec = J._ev.rec
    made, real = [], partial_forward.completed
    monkeypatch.setattr(partial_forward, "completed", lambda *a: (made.append(1), real(*a))[1])
    got, barrier = [], threading.Barrier(4)

    def read():
        barrier.wait()
        got.append(rec.trace.values()[-1])

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1] and len(got) == 4 and all(v is got[0] for v in got)
    np.testing.assert_array_equal(got[0], _network(x))


def _inverted(x):
    np.linalg.inv(np.diag(x[:3]))  # (its value is read by nothing: a check f makes, which raises where x[:3] holds 0)
    return np.sin(x)


def test_an_operation_that_may_raise_is_made_where_nothing_reads_it_and_raises_as_f_does(monkeypatch):
    x = np.linspace(0.5, 1.5, 6)
    g = _steady_rows(_inverted, x, 2)
    (split,) = [s for s in _forward(g).parts.values() if s]
    inv = next(k for k, row in enumerate(_forward(g).structure) if row[0] is PRIMITIVES["np.linalg.inv"])
    assert inv in split.made
    at = x.copy()
    at[1] = 0.0
    with pytest.raises(np.linalg.LinAlgError) as plain:
        np.asarray(jaccli.jacobian(_inverted, at)[:2])
    with pytest.raises(np.linalg.LinAlgError) as replayed:
        np.asarray(jaccli.jacobian(g, at)[:2])
    assert str(replayed.value) == str(plain.value) and g.misses == 1  # (the replay failed: f recorded afresh)
    # Without the fact, the replay leaves the inverse out, and the call gives rows where f raises
    monkeypatch.setattr("jaccli.replay.partial_forward.MAY_FAIL", set())
    h = _steady_rows(_inverted, x, 2)
    assert np.asarray(jaccli.jacobian(h, at)[:2]).shape == (2, 6) and h.misses == 0


def test_a_value_left_for_later_warns_when_it_is_made_under_the_replays_error_state():
    x = np.linspace(0.5, 1.5, 6)
    g = _steady_rows(lambda x: np.log(x) * 2.0, x, 2)  # (rows read 1 / x: log's value is left for later)
    at = x - 1.0  # (log of a negative number: NaN, and NumPy's warning where f runs)
    with pytest.warns(RuntimeWarning, match="invalid value encountered in log"):
        plain = np.asarray(jaccli.jacobian(lambda x: np.log(x) * 2.0, at)[:2])
    J = jaccli.jacobian(g, at)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the rows need no log: no warning)
        np.testing.assert_array_equal(np.asarray(J[:2]), plain)
    with np.errstate(all="ignore"):  # (the rest is made under the state f was replayed under, not this one)
        with pytest.warns(RuntimeWarning, match="invalid value encountered in log"):
            out = J._ev.rec.outputs[0]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, np.log(at) * 2.0)


def test_a_recording_under_an_error_state_that_raises_is_replayed_whole():
    x = np.linspace(0.5, 1.5, 6)
    with np.errstate(divide="raise"):
        g = _steady_rows(lambda x: 1.0 / x + x, x, 2)
    assert _forward(g).steps is None and not any(_forward(g).parts.values())


# ---------------------------------------------------------------- the fact


def _linalg_primitives():
    import scipy.linalg

    jaccli.jacobian(lambda a: scipy.linalg.expm(a.reshape(2, 2)), np.eye(2).ravel())  # (installs SciPy's rules)
    return [p for name, p in PRIMITIVES.items() if name.startswith(("np.linalg.", "scipy.linalg."))]


def _raises_somewhere(prim) -> bool:
    """Whether prim's implementation raises at a singular, a NaN or an infinite 3 x 3 matrix, or one with a
    negative eigenvalue."""
    for a in (np.zeros((3, 3)), np.full((3, 3), np.nan), np.full((3, 3), np.inf), -np.eye(3)):
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prim.impl(a, np.ones(3)) if prim.name == "np.linalg.solve" else prim.impl(a)
        except Exception:  # noqa: BLE001 - any exception is what the fact is about
            return True
    return False


def test_every_linear_algebra_primitive_that_may_raise_is_marked_and_only_those():
    prims = _linalg_primitives()
    assert len(prims) >= 15
    for prim in prims:
        assert (prim in MAY_FAIL) == _raises_somewhere(prim), prim.name
