"""record_once on Python loops (issue 44): stacks of many small pieces and element loops that write
in place (y[i] = v) replay as compiled code and sweep by compiled programs that add and write in
place as the usual sweep does. Each replay is compared at moved points against a plain call and
the closed form, guards that fail included (an index or a branch that changes)."""

from __future__ import annotations

import numpy as np

import jaccli
from benchmarks.workloads import _loop_ref as _loop_reference
from benchmarks.workloads import _stack_ref as _stack_reference
from benchmarks.workloads import element_loop_numpy as _loop
from jaccli.replay import compiled_sweeps as programs


def _stacked(x):
    return np.stack([x[i] * x[i + 1] for i in range(x.shape[0] - 1)])


def _replay_of(g):
    return g._cache[next(iter(g._cache))]


def _replayed(f, reference, n, check=lambda g, x: None):
    """record_once(f) and nine calls at moved points, each against the closed form and a plain call;
    the wrapper, the paths the calls took, and the last point."""
    g = jaccli.record_once(f)
    paths = []
    for k in range(9):
        x = np.linspace(0.5, 1.5, n) * (1 + 0.01 * k) + 0.001 * k ** 2
        J = jaccli.jacobian(g, x)
        got = np.asarray(J)
        np.testing.assert_allclose(got, reference(x), rtol=1e-15, atol=0)
        np.testing.assert_allclose(got, np.asarray(jaccli.jacobian(f, x)), rtol=1e-15, atol=0)
        check(g, x)
        paths.append(J.stats["path"])
    return g, paths, x


def test_a_stack_of_many_products_is_swept_by_a_compiled_program_at_every_later_replay():
    # 399 products: x's cotangent (399 x 400, over LARGE_SUM) gathers 797 parts; traced, each was a
    # copy of the sum (COPIES_SUM), so the sweep was refused and every replay swept as usual
    g, paths, _ = _replayed(_stacked, _stack_reference, 400)
    assert paths[-3:] == ["compiled sweep"] * 3, paths
    assert [type(p) for p in _replay_of(g)._programs.values()] == [programs.Program]


def test_a_compiled_stack_whose_branch_changes_is_recorded_afresh_and_stays_right():
    def f(x):
        s = _stacked(x)
        return s if x[0] > 0 else np.sin(s)

    g = jaccli.record_once(f)
    base = np.linspace(0.5, 1.5, 400)
    for k in range(8):
        x = base + 0.01 * k
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), _stack_reference(x), rtol=1e-15)
    J = jaccli.jacobian(g, base + 0.1)
    np.testing.assert_allclose(np.asarray(J), _stack_reference(base + 0.1), rtol=1e-15)
    assert J.stats["path"] == "compiled sweep"
    x = base.copy()
    x[0] = -0.5  # the branch's guard fails: f is recorded again, and its new branch differentiated
    got = np.asarray(jaccli.jacobian(g, x))
    np.testing.assert_allclose(got, np.cos(_stacked(x))[:, None] * _stack_reference(x), rtol=1e-14)
    np.testing.assert_allclose(got, np.asarray(jaccli.jacobian(f, x)), rtol=1e-15, atol=0)
    assert g.misses == 1


def test_an_element_loop_that_writes_in_place_replays_compiled_and_is_swept_by_a_program_in_place():
    # y[i] = v in a loop: the replay was made node by node (a compiled replay copied y per write) and
    # swept as usual; now both are compiled, writing into y and into the cotangents in place as f did
    def vjp(g, x):
        u = np.cos(x)
        np.testing.assert_allclose(np.asarray(jaccli.vjp(g, x, u)[1]), _loop_reference(x).T @ u, rtol=1e-13)

    g, paths, x = _replayed(_loop, _loop_reference, 300, vjp)
    assert paths[-3:] == ["compiled sweep"] * 3, paths
    rec = _replay_of(g)
    assert len(rec._forward[0].in_place) == 300
    np.testing.assert_array_equal(rec.outputs[0], _loop(x))
    kinds = {type(p) for p in rec._programs.values()}
    assert kinds == {programs.Program}, rec._programs


def test_a_compiled_loop_whose_written_index_changes_is_recorded_afresh_and_stays_right():
    def f(x):
        y = _loop(x)
        j = int(np.argmax(x))  # an index read from the values: guarded
        y[j] = 3.0 * y[j]
        return y

    def reference(x):
        J = _loop_reference(x)
        J[int(np.argmax(x))] *= 3.0
        return J

    g = jaccli.record_once(f)
    base = np.linspace(0.5, 1.5, 200)
    for k in range(8):
        x = base * (1 + 0.01 * k)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), reference(x), rtol=1e-15)
    J = jaccli.jacobian(g, base * 1.1)
    np.testing.assert_allclose(np.asarray(J), reference(base * 1.1), rtol=1e-15)
    assert J.stats["path"] == "compiled sweep"
    x = base.copy()
    x[17] = 2.0  # argmax moves from the last element to x[17]: the guard fails, f is recorded again
    got = np.asarray(jaccli.jacobian(g, x))
    np.testing.assert_allclose(got, reference(x), rtol=1e-15)
    np.testing.assert_allclose(got, np.asarray(jaccli.jacobian(f, x)), rtol=1e-15, atol=0)
    assert g.misses == 1
