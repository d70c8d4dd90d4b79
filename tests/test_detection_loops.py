"""Sparsity detection of functions written element by element (the row table, jaccli.sparse.rowtable):
the pattern equals the dense derivative's nonzeros at a random point and the pattern of detection's
scipy path alone, and such a recording builds a few scipy matrices, not one per operation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import jaccli
from jaccli.engine.recording import Recording
from jaccli.sparse import detection
from jaccli.sparse.detection import detect
from tests.helpers import constructions


def assigned(x):
    n = x.size
    r = np.empty(n)
    r[0] = x[0]
    for i in range(1, n - 1):
        r[i] = x[i - 1] - 2 * x[i] + x[i + 1] + x[i] ** 3
    r[n - 1] = x[n - 1]
    return r


def stacked(x):
    n = x.size
    return np.stack([x[i] * x[(i + 1) % n] - np.sin(x[i - 1]) for i in range(n)])


def products(x):
    n = x.size
    out = np.zeros(n)
    for i in range(n):
        for j in (i - 2, i + 3, n - 1 - i):
            if 0 <= j < n:
                out[i] = out[i] + x[i] * x[j]
    return out


def added_in_place(x):
    n = x.size
    y = np.zeros(n)
    for i in range(n):
        y[i] += x[i] ** 2
        if i + 1 < n:
            y[i + 1] += np.exp(x[i])
    y[::3] *= 1.5
    return y


def vectorised_then_written(x):
    y = np.sin(x) * np.roll(x, 1)      # scipy patterns, then element writes into them
    for i in range(0, x.size, 2):
        y[i] = y[i] + x[(i + 5) % x.size] * y[i - 1]
    y[1:4] = y[4:7] * x[:3]
    return np.concatenate([y, np.array([x[0] * x[-1], 2.0]), y[::-1][:20] * x[3]])


def ode(y, k):
    n = y.shape[0]
    dy = np.zeros(n)
    dy[0] = -k[0] * y[0] + k[1] * y[1]
    for i in range(1, n - 1):
        dy[i] = k[0] * y[i - 1] - (k[0] + k[1]) * y[i] + k[1] * y[i + 1] - 0.1 * y[i] ** 2
    dy[n - 1] = k[0] * y[n - 2] - k[1] * y[n - 1]
    dy[::3] *= 1.5
    return dy


FUNCTIONS = [assigned, stacked, products, added_in_place, vectorised_then_written]


def _scipy_path_only(monkeypatch, rec):
    """The pattern detection's scipy path gives alone (every operation a CSR matrix, as before the table)."""
    with monkeypatch.context() as m:
        m.setattr(detection._Propagation, "tabled_pattern", lambda self, node, decl: None)
        return detect(rec)


def _blocks_equal(a, b) -> bool:
    return all(p.shape == q.shape and (p != q).nnz == 0 for ra, rb in zip(a.blocks, b.blocks) for p, q in zip(ra, rb))


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [7, 60])
def test_element_loop_pattern_is_the_dense_jacobians_nonzeros_and_the_scipy_paths(f, n, monkeypatch):
    x = np.random.default_rng(n).uniform(0.5, 1.5, n)
    dense = np.asarray(jaccli.jacobian(f, x)).reshape(-1, n) != 0
    rec = Recording(f, [x], (0,))
    found = detect(rec)
    pattern = found.blocks[0][0]
    assert pattern.shape == dense.shape
    np.testing.assert_array_equal(pattern.toarray(), dense)
    assert _blocks_equal(found, _scipy_path_only(monkeypatch, rec))
    assert not found.dense_ops


def test_two_inputs_ode_pattern(monkeypatch):
    y, k = np.random.default_rng(3).uniform(0.5, 1.5, 40), np.array([0.7, 0.3])
    rec = Recording(ode, [y, k], (0, 1))
    found = detect(rec)
    J = jaccli.jacobian(ode, (y, k))
    for j, block in enumerate(J):
        np.testing.assert_array_equal(found.blocks[0][j].toarray(), np.asarray(block).reshape(40, -1) != 0)
    assert _blocks_equal(found, _scipy_path_only(monkeypatch, rec))


@pytest.mark.parametrize("f", [assigned, products, added_in_place], ids=lambda f: f.__name__)
def test_element_loop_hessian_pattern(f, monkeypatch):
    x = np.random.default_rng(5).uniform(0.5, 1.5, 12)
    g = (lambda x: np.sum(f(x) ** 2))
    found = jaccli.sparsity(g, x, hessian=True).pattern
    dense = np.asarray(jaccli.hessian(g, x)) != 0
    assert not (dense & ~found.toarray()).any()
    with monkeypatch.context() as m:
        m.setattr(detection._Propagation, "tabled_pattern", lambda self, node, decl: None)
        before = jaccli.sparsity(g, x, hessian=True).pattern
    assert (found != before).nnz == 0


def test_element_loop_detection_builds_few_scipy_matrices(monkeypatch):
    """One CSR matrix per recorded operation was what made detection of element loops slow."""
    x = np.random.default_rng(0).uniform(0.5, 1.5, 300)
    rec = Recording(assigned, [x], (0,))
    assert len(rec.trace.nodes) > 2500
    made = constructions(monkeypatch, sp.csr_array)
    found = detect(rec)
    assert len(made) < 20, len(made)
    assert found.blocks[0][0].nnz == 3 * 298 + 2
