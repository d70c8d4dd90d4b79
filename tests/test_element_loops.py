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
