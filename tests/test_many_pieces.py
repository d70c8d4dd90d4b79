"""Joins of many small pieces (np.stack of a list of products, np.concatenate of many slices): one reverse
rule per join for all its pieces (Primitive.vjp_joint), structured seeds made dense once for it.

Checked against closed forms and central differences, in both modes, with structured (identity rows)
and dense seed blocks, complex pieces beside real ones, and second order through the joint rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import jaccli
from benchmarks.workloads import _stack_ref


def stack_products(x):
    return np.stack([x[i] * x[i + 1] for i in range(x.shape[0] - 1)])


def concat_pieces(x):
    return np.concatenate([np.sin(x[3 * i:3 * i + 3]) * x[3 * i] for i in range(x.shape[0] // 3)])


def stack_rows(x):  # pieces of more than one element, stacked on a later axis
    return np.stack([x[i:i + 2] * x[i + 2] for i in range(x.shape[0] - 2)], axis=1)


def _concat_ref(x):
    n = x.size
    J = np.zeros((n, n))
    i = np.arange(n)
    J[i, i] = np.cos(x) * x[i // 3 * 3]
    J[i, i // 3 * 3] += np.sin(x)
    return J


def _central(f, x, h=1e-6):
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))).reshape(-1) / (2 * h))
    return np.stack(cols, axis=1)


X = np.linspace(0.5, 1.5, 60)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_stack_of_many_products_matches_the_closed_form(mode):
    assert_allclose(np.asarray(jaccli.jacobian(stack_products, X, mode=mode)), _stack_ref(X), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_concatenate_of_many_pieces_matches_the_closed_form(mode):
    assert_allclose(np.asarray(jaccli.jacobian(concat_pieces, X, mode=mode)), _concat_ref(X), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_blocks_of_seeds_of_any_size_and_rows_taken_lazily(chunk):
    J = jaccli.jacobian(stack_rows, X[:20], chunk_size=chunk)
    ref = _central(stack_rows, X[:20])
    assert_allclose(np.asarray(J).reshape(ref.shape), ref, rtol=1e-8, atol=1e-9)
    J2 = jaccli.jacobian(stack_products, X, chunk_size=chunk)
    assert_allclose(np.asarray(J2[10:14]), _stack_ref(X)[10:14], rtol=1e-14, atol=1e-14)


def test_a_dense_cotangent_block_through_the_join():
    # jaccli.vjp hands the sweep a plain (dense) cotangent, not identity rows
    rng = np.random.default_rng(3)
    w = rng.normal(size=X.size - 1)
    _, pulled = jaccli.vjp(stack_products, X, w)
    assert_allclose(np.asarray(pulled), w @ _stack_ref(X), rtol=1e-13)


def test_second_order_through_the_joint_rule():
    # H of sum(stack(x[i] * x[i+1])): 1 at (i, i+1) and (i+1, i)
    H = np.asarray(jaccli.hessian(lambda x: stack_products(x).sum(), X[:12]))
    ref = np.zeros((12, 12))
    i = np.arange(11)
    ref[i, i + 1] = ref[i + 1, i] = 1.0
    assert_allclose(H, ref, atol=1e-14)
    H2 = np.asarray(jaccli.hessian(lambda x: (concat_pieces(x) ** 2).sum(), X[:9]))
    assert_allclose(H2, _central(lambda x: np.asarray(jaccli.grad(lambda y: (concat_pieces(y) ** 2).sum(), x)), X[:9]),
                    rtol=1e-6, atol=1e-7)


def test_a_real_piece_beside_a_complex_one_gets_a_real_cotangent():
    def f(x):
        z = np.concatenate([x[:2] * (1 + 2j), x[2:] ** 2])
        return np.abs(z) ** 2

    x = np.array([0.5, -1.0, 2.0, 0.3])
    J = np.asarray(jaccli.jacobian(f, x))
    assert J.dtype.kind == "f"
    assert_allclose(J, _central(f, x), rtol=1e-8, atol=1e-9)


def test_the_join_makes_one_reverse_rule_for_all_its_pieces():
    J = jaccli.jacobian(stack_products, X)
    np.asarray(J)
    joins = [n for n in J._ev.rec.trace.nodes if n.prim.name == "np.concatenate"]
    assert len(joins) == 1 and list(joins[0]._vjps) == [-1]  # not one maker call per piece (O(n^2) arguments)
