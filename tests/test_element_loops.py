"""Element loops (y[i] = x[i] * x[(i + 1) % n]): a structured cotangent reaching the writes is made dense
once (sweeps._DENSE_PER_NODE), and the first part a read x[i] sends back is scattered into zeros the
sweep owns; checked against the closed form in both modes, with blocks of seeds of any size, lazy
rows, a dense cotangent, and second order."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import jaccli
from benchmarks.workloads import _loop_ref as _ref
from benchmarks.workloads import element_loop_numpy as loop
from jaccli.engine import sweeps
from tests.helpers import densified_blocks


X = np.linspace(0.5, 1.5, 40)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("chunk", [None, 1, 6, 40])
def test_element_loop_matches_the_closed_form(mode, chunk):
    J = jaccli.jacobian(loop, X, mode=mode, chunk_size=chunk)
    assert_allclose(np.asarray(J), _ref(X), rtol=1e-15, atol=1e-15)


def test_rows_taken_lazily_and_a_dense_cotangent():
    J = jaccli.jacobian(loop, X)
    assert_allclose(np.asarray(J[5:9]), _ref(X)[5:9], rtol=1e-15)
    w = np.random.default_rng(1).normal(size=X.size)
    _, pulled = jaccli.vjp(loop, X, w)
    assert_allclose(np.asarray(pulled), w @ _ref(X), rtol=1e-13)


def test_the_structured_cotangent_is_made_dense_at_the_writes_only_where_it_pays(monkeypatch):
    made = densified_blocks(monkeypatch)
    x = np.linspace(0.5, 1.5, 200)  # (seed blocks of more than 16384 elements are structured)
    assert_allclose(np.asarray(jaccli.jacobian(loop, x)), _ref(x), rtol=1e-15)
    assert made.count((x.size, x.size)) == 1  # once, at the first write reached
    made.clear()
    monkeypatch.setattr(sweeps, "_DENSE_PER_NODE", 0)
    assert_allclose(np.asarray(jaccli.jacobian(loop, x)), _ref(x), rtol=1e-15)  # the structured way, as before
    assert (x.size, x.size) not in made


def test_second_order_through_an_element_loop():
    # d2/dx2 of sum(y): 1 at (i, i+1) and (i+1, i), cyclically
    x = X[:10]
    H = np.asarray(jaccli.hessian(lambda x: loop(x).sum(), x))
    ref = np.zeros((10, 10))
    i = np.arange(10)
    ref[i, (i + 1) % 10] += 1.0
    ref[(i + 1) % 10, i] += 1.0
    assert_allclose(H, ref, atol=1e-14)


def test_the_cotangent_of_the_writes_is_made_dense_in_column_order(monkeypatch):
    # each write y[i] = v reads and zeroes column i of its cotangent block: its K numbers one after
    # another, not a row apart (a page apart for a 10^4-vector), in the usual sweep and the compiled one
    from jaccli.engine import seeds

    made = []
    todense = seeds.SparseBlock.todense

    def counted(block, order="C"):
        out = todense(block, order)
        np.testing.assert_array_equal(out, todense(block))
        made.append((block.shape, order, out.flags.f_contiguous))
        return out

    monkeypatch.setattr(seeds.SparseBlock, "todense", counted)
    x = np.linspace(0.5, 1.5, 200)  # (seed blocks of more than 16384 elements are structured)
    assert_allclose(np.asarray(jaccli.jacobian(loop, x)), _ref(x), rtol=1e-15)
    assert made == [((200, 200), "F", True)]
    g = jaccli.record_once(loop)
    for k in range(8):  # (its sweep compiled over the first replays, one step a call)
        made.clear()
        y = x + 1e-3 * k
        assert_allclose(np.asarray(jaccli.jacobian(g, y)), _ref(y), rtol=1e-15)
        assert made and set(made) == {((200, 200), "F", True)}  # (a call that traces the sweep: twice)
    J = jaccli.jacobian(g, x)
    assert_allclose(np.asarray(J), _ref(x), rtol=1e-15)
    assert J.stats["path"] == "compiled sweep" and set(made) == {((200, 200), "F", True)}


def test_the_compiled_sweep_zeroes_the_block_it_made_without_copying_it(monkeypatch):
    # the dense cotangent of the writes (DENSE_OF) is an array of its own, which the program's first write
    # (PULLED) changes in place: a view of it was copied whole first (133 MB a block of rows of loop-10000)
    from jaccli.engine import traced_in_place

    owned = []
    pulled = traced_in_place.PULLED.impl

    def spied(g, *args, **kwargs):
        owned.append(type(g) is np.ndarray and g.base is None)
        return pulled(g, *args, **kwargs)

    monkeypatch.setattr(traced_in_place.PULLED, "impl", spied)  # (before the program is compiled: it holds the impl)
    x = np.linspace(0.5, 1.5, 200)
    g = jaccli.record_once(loop)
    for k in range(9):
        owned.clear()
        y = x + 1e-3 * k
        J = jaccli.jacobian(g, y, chunk_size=50)
        assert_allclose(np.asarray(J), _ref(y), rtol=1e-15)
    assert J.stats["path"] == "compiled sweep"
    # each block of 50 rows pulls back the writes of its own rows alone (traced_in_place._passed_on): the
    # other writes' columns are zero in its seeds (199 writes with a cotangent before them, 4 blocks)
    assert len(owned) == x.size - 1 and all(owned)


def _compiled(f, x, **kw):
    """jacobian(record_once(f), x) once its sweeps are compiled (over the first replays), at a new point."""
    g = jaccli.record_once(f)
    for k in range(9):
        np.asarray(jaccli.jacobian(g, x + 1e-3 * k, **kw))
    J = jaccli.jacobian(g, x, **kw)
    out = np.asarray(J)
    assert J.stats["path"] == "compiled sweep"
    return out


def test_a_block_of_rows_runs_the_steps_of_its_own_writes_only(monkeypatch):
    # loop-10000's rows in 6 blocks: each block's program ran all 10^4 iterations, 5/6 of them on zero columns
    from jaccli.engine.rules import ufunc_rules

    x = np.linspace(0.5, 1.5, 200)
    calls = []
    usual = ufunc_rules.usual_vjp
    monkeypatch.setattr(ufunc_rules, "usual_vjp", lambda *a: calls.append(1) or usual(*a))
    g = jaccli.record_once(loop)
    made = []
    for k in range(9):
        calls.clear()
        y = x + 1e-3 * k
        assert_allclose(np.asarray(jaccli.jacobian(g, y, chunk_size=50)), _ref(y), rtol=1e-15)
        made.append(len(calls))
    # the replay that traces the 4 blocks' sweeps (beside its usual sweep, as the one before): the multiplies'
    # rules, two for each write that a block's seeds reach, 200 writes in all (800 each, 4 x 200 writes, before)
    assert made[3] - made[2] == 2 * x.size and made[-1] == 0


def test_writes_that_read_back_earlier_writes_are_pulled_back_in_every_block():
    # y[i] = y[i - 1] * x[i]: the cotangent of y before a write also gets what y[i - 1] sends back, so a
    # column zero in the seeds is not zero there any more: those writes are pulled back as usual
    def prefix(x):
        y = np.zeros_like(x)
        y[0] = x[0]
        for i in range(1, x.size):
            y[i] = y[i - 1] * x[i]
        return y

    x = np.linspace(0.9, 1.1, 120)
    y = np.cumprod(x)
    ref = np.tril(y[:, None] / x[None, :])  # d y_i / d x_j = y_i / x_j for j <= i
    for chunk in (None, 25):
        assert_allclose(_compiled(prefix, x, chunk_size=chunk), ref, rtol=1e-13)


def test_writes_into_a_computed_array_hand_its_unwritten_rows_on():
    # y = 2 x, then its even elements written: the cotangent block passed on through the writes that a
    # block's seeds do not reach still carries the odd rows back to 2 x, in every block of rows
    def evens(x):
        y = 2.0 * x
        for i in range(0, x.size, 2):
            y[i] = x[i] * x[i + 1]
        return y

    x = np.linspace(0.5, 1.5, 100)
    ref = np.diag(np.where(np.arange(100) % 2, 2.0, 0.0))
    i = np.arange(0, 100, 2)
    ref[i, i], ref[i, i + 1] = x[i + 1], x[i]
    for chunk in (None, 30):
        assert_allclose(_compiled(evens, x, chunk_size=chunk), ref, rtol=1e-15)
