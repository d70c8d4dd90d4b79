"""record_once on Python loops (issue 44): stacks of many small pieces and element loops that write
in place (y[i] = v) replay as compiled code and sweep by compiled programs that add and write in
place as the usual sweep does. Each replay is compared at moved points against a plain call and
the closed form, guards that fail included (an index or a branch that changes)."""

from __future__ import annotations

import numpy as np

import jaccli
from jaccli.replay import compiled_sweeps as programs


def _stacked(x):
    return np.stack([x[i] * x[i + 1] for i in range(x.shape[0] - 1)])


def _stack_reference(x):
    n = x.size
    J = np.zeros((n - 1, n))
    J[np.arange(n - 1), np.arange(n - 1)] = x[1:]
    J[np.arange(n - 1), np.arange(1, n)] += x[:-1]
    return J


def _replay_of(g):
    return g._cache[next(iter(g._cache))]


def test_a_stack_of_many_products_is_swept_by_a_compiled_program_at_every_later_replay():
    # 399 products: x's cotangent (399 x 400, over LARGE_SUM) gathers 797 parts; traced, each was a
    # copy of the sum (COPIES_SUM), so the sweep was refused and every replay swept as usual
    g = jaccli.record_once(_stacked)
    paths = []
    for k in range(9):
        x = np.linspace(0.5, 1.5, 400) * (1 + 0.01 * k) + 0.001 * k ** 2
        J = jaccli.jacobian(g, x)
        got = np.asarray(J)
        np.testing.assert_allclose(got, _stack_reference(x), rtol=1e-15, atol=0)
        np.testing.assert_allclose(got, np.asarray(jaccli.jacobian(_stacked, x)), rtol=1e-15, atol=0)
        paths.append(J.stats["path"])
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
