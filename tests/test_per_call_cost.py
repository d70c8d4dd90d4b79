"""What a record_once call keeps from the calls before it (issue 44, item 4): whatever the shapes,
dtypes and options decide (the blocks' layout and dtypes, the diagonal tangent, where a structured
Hessian's entries go) is made once per recording and reused by its replays, and a call with new
shapes, dtypes or options never takes what an earlier one kept. Each result is checked against a
closed form and against a plain call at points other than the recorded one.
"""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from tests.helpers import rosen_hess as _rosenbrock_hessian, rosenbrock as _rosenbrock
from tests.test_replay import softmax_ce as _logsumexp, softmax_hessian as _softmax_hessian


def _elementwise(x):
    return np.sin(x) * np.exp(x) + x ** 2


def _elementwise_jacobian(x):
    return np.diag(np.exp(x) * (np.sin(x) + np.cos(x)) + 2.0 * x)


def _replay_of(g):
    return g._cache[next(reversed(g._cache))]


def test_a_banded_hessian_replayed_is_the_closed_form_and_the_plain_call():
    g = jaccli.record_once(_rosenbrock)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.uniform(-2, 2, 40)
        H = np.asarray(jaccli.hessian(g, x))
        np.testing.assert_allclose(H, _rosenbrock_hessian(x), rtol=1e-13, atol=1e-12)
        np.testing.assert_array_equal(H, np.asarray(jaccli.hessian(_rosenbrock, x)))
        np.testing.assert_array_equal(H, H.T)
    assert g.records == 1 and g.replays == 4


@pytest.mark.parametrize("n", [40, 30])
def test_a_new_size_gets_its_own_entry_places(n):
    g = jaccli.record_once(_rosenbrock)
    rng = np.random.default_rng(1)
    for size in (n, n, n, 25, 25, 25, n):
        x = rng.uniform(-2, 2, size)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(g, x)), _rosenbrock_hessian(x), rtol=1e-13, atol=1e-12)
    assert g.records == 2


def test_the_layout_and_dtypes_follow_a_new_dtype_and_shape():
    g = jaccli.record_once(_elementwise)
    rng = np.random.default_rng(2)
    for x in (rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6), rng.uniform(-1, 1, 6).astype(np.float32),
              rng.uniform(-1, 1, 6).astype(np.float32), rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, 6)):
        J = jaccli.jacobian(g, x)
        A = np.asarray(J)
        assert J.dtype == x.dtype and A.dtype == x.dtype and A.shape == x.shape + x.shape
        want = _elementwise_jacobian(x.astype(np.float64).ravel()).reshape(x.shape + x.shape)
        np.testing.assert_allclose(A, want, rtol=1e-5 if x.dtype == np.float32 else 1e-13, atol=1e-6)
    assert g.records == 3
    kept = _replay_of(g).structure
    assert kept[("layout", False)] == ([(6,)], [(6,)], [6], [6]) and kept[("block dtype", 0, 0)] == np.float64


def test_the_kept_diagonal_tangent_cannot_be_written():
    g = jaccli.record_once(_elementwise)
    x = np.linspace(-1, 1, 5)
    for _ in range(3):
        np.asarray(jaccli.jacobian(g, x))
    tangents = [v for k, v in _replay_of(g).structure.items() if k[0] == "diagonal tangent"]
    assert len(tangents) == 1 and not tangents[0].flags.writeable


def test_options_are_not_taken_from_an_earlier_call():
    g = jaccli.record_once(_elementwise)
    x = np.linspace(-1, 1, 5)
    for _ in range(3):
        np.asarray(jaccli.jacobian(g, x))
    Jb = jaccli.jacobian(g, x.reshape(5, 1), batch_axis=0)
    assert Jb.shape == (5, 1, 1)
    np.testing.assert_allclose(np.asarray(Jb)[:, 0, 0], np.diag(_elementwise_jacobian(x)), rtol=1e-13)
    Jr = jaccli.jacobian(g, x, mode="reverse")
    np.testing.assert_allclose(np.asarray(Jr), _elementwise_jacobian(x), rtol=1e-13)
    assert Jr.stats["sweeps"] == 1 and Jr.stats["rows_evaluated"] == 5  # rows, as asked: not the diagonal
    with pytest.raises(ValueError, match="mode should be one of"):
        jaccli.jacobian(g, x, mode="sideways")


def test_a_guard_that_fails_records_afresh_and_non_finite_values_are_still_reported():
    def f(x):
        return np.where(x > 0, np.sqrt(np.abs(x)), x ** 2)

    g = jaccli.record_once(f)
    x = np.array([0.5, 1.0, 2.0])
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), np.diag(0.5 / np.sqrt(x)), rtol=1e-13)
    y = np.array([-0.5, 1.0, 2.0])  # the mask changes: a guard fails, f is recorded again
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, y)), np.diag([-1.0, 0.5, 0.5 / np.sqrt(2)]),
                               rtol=1e-13)
    assert g.misses == 1 and g.records == 2
    h = jaccli.record_once(lambda x: np.log(x))
    for _ in range(3):
        np.asarray(jaccli.jacobian(h, np.array([1.0, 2.0])))
    with np.errstate(divide="ignore"):
        J = np.asarray(jaccli.jacobian(h, np.array([0.0, 2.0])))
    assert np.isinf(J[0, 0]) and J[1, 1] == 0.5


def test_a_softmax_hessian_stays_exactly_symmetric_on_replays():
    g = jaccli.record_once(_logsumexp)
    rng = np.random.default_rng(3)
    for _ in range(4):
        z = 2.0 * rng.standard_normal(40)
        H = np.asarray(jaccli.hessian(g, z))
        np.testing.assert_array_equal(H, H.T)
        np.testing.assert_allclose(H, _softmax_hessian(z), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(H, np.asarray(jaccli.hessian(_logsumexp, z)), rtol=1e-13, atol=1e-16)


def test_a_hessians_dtype_follows_the_inputs_dtype_from_call_to_call():
    g = jaccli.record_once(_rosenbrock)
    rng = np.random.default_rng(4)
    for dtype in (np.float64, np.float64, np.float64, np.float32, np.float32, np.float32, np.float64):
        x = rng.uniform(-2, 2, 30).astype(dtype)
        H = jaccli.hessian(g, x)
        A = np.asarray(H)
        assert H.dtype == dtype and A.dtype == dtype
        single = dtype == np.float32
        np.testing.assert_allclose(A, _rosenbrock_hessian(x.astype(np.float64)),
                                   rtol=1e-4 if single else 1e-13, atol=1e-3 if single else 1e-12)
    assert g.records == 2


class _Counted:
    """Calls of some methods of a class (or of classes: a tuple, each name counted over those that have it),
    while installed (monkeypatch undoes it)."""

    def __init__(self, monkeypatch, owner, *names):
        self.calls = dict.fromkeys(names, 0)
        for cls in owner if isinstance(owner, tuple) else (owner,):
            for name in names:
                original = getattr(cls, name, None)
                if original is None:
                    continue

                def counted(*args, _name=name, _original=original, **kwargs):
                    self.calls[_name] += 1
                    return _original(*args, **kwargs)
                monkeypatch.setattr(cls, name, counted)

    def reset(self):
        self.calls = dict.fromkeys(self.calls, 0)


def _wide(x):
    return np.array([np.sum(np.sin(x) * x), np.prod(np.cos(x[:3]))])


def _wide_jacobian(x):
    d0 = np.cos(x) * x + np.sin(x)
    d1 = np.zeros_like(x)
    c = np.cos(x[:3])
    for k in range(3):
        d1[k] = -np.sin(x[k]) * np.prod(np.delete(c, k))
    return np.stack([d0, d1])


def _tall(x):
    return np.concatenate([np.tanh(x), x[0] * x[1] * np.ones(3), np.exp(x[:2])])


@pytest.mark.parametrize("f, mode, want", [(_elementwise, "auto", "diagonal"), (_wide, "auto", "reverse"),
                                            (_tall, "auto", "forward"), (_elementwise, "reverse", "reverse"),
                                            (_elementwise, "forward", "forward")])
def test_a_steady_call_takes_its_blocks_route_without_deciding_it_again(monkeypatch, f, mode, want):
    from jaccli.api.diagonal_blocks import DiagonalBlocks
    from jaccli.api.evaluator import Evaluator

    routes = _Counted(monkeypatch, Evaluator, "_route", "_reverse_on_a_tie")
    diagonals = _Counted(monkeypatch, DiagonalBlocks, "is_diagonal", "diagonal_fill")
    g = jaccli.record_once(f)
    rng = np.random.default_rng(5)
    np.asarray(jaccli.jacobian(g, rng.uniform(-1, 1, 6), mode=mode))
    assert routes.calls["_route"] == 1
    for _ in range(4):
        routes.reset()
        diagonals.reset()
        x = rng.uniform(-1, 1, 6)
        J = jaccli.jacobian(g, x, mode=mode)
        A = np.asarray(J)
        # the route, the sizes' comparison and the structure's diagonal are not asked again (before:
        # is_diagonal three times, and diagonal_fill: whether the blocks sharing its rows are diagonal too)
        assert routes.calls == {"_route": 0, "_reverse_on_a_tie": 0}
        assert diagonals.calls == {"is_diagonal": 0, "diagonal_fill": 0}
        P = jaccli.jacobian(f, x, mode=mode)
        np.testing.assert_array_equal(A, np.asarray(P))  # the plain call's bits
        assert {k: v for k, v in J.stats.items() if k != "path"} == {k: v for k, v in P.stats.items() if k != "path"}
        assert J._ev.kinds == P._ev.kinds == ({"diagonal"} if want == "diagonal" else {want})
        if f is _elementwise:
            np.testing.assert_allclose(A, _elementwise_jacobian(x), rtol=1e-13)
        elif f is _wide:
            np.testing.assert_allclose(A, _wide_jacobian(x), rtol=1e-13, atol=1e-15)
        assert not A.flags.writeable
        np.testing.assert_array_equal(J[1], A[1])  # the cache answers rows as before
    assert g.records == 1 and g.replays == 4


def test_rows_asked_first_still_take_the_usual_route_and_the_whole_block_agrees(monkeypatch):
    g = jaccli.record_once(_wide)
    rng = np.random.default_rng(6)
    for _ in range(3):
        np.asarray(jaccli.jacobian(g, rng.uniform(-1, 1, 6)))
    x = rng.uniform(-1, 1, 6)
    J = jaccli.jacobian(g, x)
    first = J[1]
    assert J.stats["rows_evaluated"] == 1 and J.stats["sweeps"] == 1
    A = np.asarray(J)
    np.testing.assert_array_equal(A[1], first)  # an entry handed out never changes
    assert J.stats["rows_evaluated"] == 2 and J.stats["sweeps"] == 2
    np.testing.assert_allclose(A, _wide_jacobian(x), rtol=1e-13, atol=1e-15)


def test_a_steady_hessian_is_not_symmetrised_again(monkeypatch):
    from jaccli.api.hessian_evaluator import HessianEvaluator

    counted = _Counted(monkeypatch, HessianEvaluator, "_symmetrize")
    g = jaccli.record_once(_rosenbrock)
    rng = np.random.default_rng(7)
    steady = 0
    for _ in range(10):
        counted.reset()
        x = rng.uniform(-2, 2, 30)
        H = jaccli.hessian(g, x)
        A = np.asarray(H)
        if H.stats["path"] == "compiled sweep":
            # the block was written exactly symmetric from its structure: np.asarray(H) reads no mask
            steady += 1
            assert counted.calls["_symmetrize"] == 0
        np.testing.assert_array_equal(A, np.asarray(jaccli.hessian(_rosenbrock, x)))
        np.testing.assert_array_equal(A, A.T)
        np.testing.assert_allclose(A, _rosenbrock_hessian(x), rtol=1e-13, atol=1e-12)
        np.testing.assert_array_equal(H[3], A[3])
    assert steady >= 3


def test_a_guard_that_fails_after_steady_calls_takes_the_new_recordings_route():
    def f(x):
        return np.sin(x) * x if x.sum() > 0 else np.cumsum(x ** 2)  # elementwise, then not

    g = jaccli.record_once(f)
    x = np.linspace(0.1, 1.0, 5)
    for _ in range(4):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, x)), np.asarray(jaccli.jacobian(f, x)))
    y = -x
    J = np.asarray(jaccli.jacobian(g, y))
    np.testing.assert_array_equal(J, np.asarray(jaccli.jacobian(f, y)))
    np.testing.assert_allclose(J, np.tril(np.broadcast_to(2 * y, (5, 5))), rtol=1e-13)
    assert g.misses == 1 and g.records == 2
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, y)), J)


def test_the_memory_budget_is_read_from_the_environment_at_each_call(monkeypatch):
    from jaccli.errors import UsageError

    g = jaccli.record_once(_elementwise)
    x = np.linspace(-1, 1, 5)
    monkeypatch.delenv("JACCLI_MEMORY_BUDGET", raising=False)
    assert jaccli.jacobian(g, x)._ev.memory_budget == 512 * 2**20
    monkeypatch.setenv("JACCLI_MEMORY_BUDGET", "2M")
    assert jaccli.jacobian(g, x)._ev.memory_budget == 2 * 10**6
    monkeypatch.setenv("JACCLI_MEMORY_BUDGET", "lots")
    with pytest.raises(UsageError, match="JACCLI_MEMORY_BUDGET"):
        jaccli.jacobian(g, x)
    monkeypatch.delenv("JACCLI_MEMORY_BUDGET")
    assert jaccli.jacobian(g, x)._ev.memory_budget == 512 * 2**20



def test_the_memory_budget_follows_every_change_of_the_variable_and_a_replaced_environ(monkeypatch):
    # (read from os.environ's own mapping where it has one, os.environ.get where it is replaced)
    import os

    from jaccli.api.sweep_seeds import default_memory_budget
    from jaccli.errors import UsageError

    monkeypatch.delenv("JACCLI_MEMORY_BUDGET", raising=False)
    assert default_memory_budget() == 512 * 2**20
    for text, want in [("3M", 3 * 10**6), ("3M", 3 * 10**6), ("4MiB", 4 * 2**20), ("", 512 * 2**20),
                       ("  ", 512 * 2**20), ("5000", 5000)]:
        monkeypatch.setenv("JACCLI_MEMORY_BUDGET", text)
        assert default_memory_budget() == want, text
    os.environ["JACCLI_MEMORY_BUDGET"] = "6M"  # (monkeypatch restores it)
    assert default_memory_budget() == 6 * 10**6
    monkeypatch.setenv("JACCLI_MEMORY_BUDGET", "lots")
    for _ in range(2):  # (a bad value is not kept: every call says so)
        with pytest.raises(UsageError, match="'lots' is not a size"):
            default_memory_budget()
    monkeypatch.setattr(os, "environ", {"JACCLI_MEMORY_BUDGET": "7M"})  # (a plain dict: its get())
    assert default_memory_budget() == 7 * 10**6
    os.environ["JACCLI_MEMORY_BUDGET"] = "8M"
    assert default_memory_budget() == 8 * 10**6
    del os.environ["JACCLI_MEMORY_BUDGET"]
    assert default_memory_budget() == 512 * 2**20
    monkeypatch.undo()
    monkeypatch.setenv("JACCLI_MEMORY_BUDGET", "9M")
    assert default_memory_budget() == 9 * 10**6

def test_replays_share_what_the_recording_decides_and_keep_their_own_values_and_counts():
    # (made from one dict of the shared attributes, not twenty assignments: P1-n100, a replay per call)
    g = jaccli.record_once(_elementwise)
    xs = np.random.default_rng(2).uniform(-1, 1, (6, 5))
    Js = [jaccli.jacobian(g, x) for x in xs]
    a, b = Js[-2]._ev.rec, Js[-1]._ev.rec
    for name in ("structure", "_programs", "_forward", "_made", "guards", "kept", "wrt", "live"):
        assert getattr(a, name) is getattr(b, name), name
    assert a.trace is not b.trace and a._advanced is not b._advanced and a._nth + 1 == b._nth
    np.testing.assert_array_equal(b.inputs[0], xs[-1])
    np.testing.assert_array_equal(b.outputs[0], _elementwise(xs[-1]))
    for J, x in zip(Js, xs):
        np.testing.assert_allclose(np.asarray(J), _elementwise_jacobian(x), rtol=1e-13)
    assert a.sweeps == b.sweeps == 1
