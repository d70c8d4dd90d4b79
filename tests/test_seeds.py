"""Structured seed blocks (entries + low rank): every operation equals the same one on the dense form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaccli
from jaccli.engine.seed_ops import assign_on_block, getitem_on_block, scatter_on_block, scatter_add_on_block, scatter_cols, scatter_rows
from jaccli.engine.seeds import SparseBlock, dense, lowrank_product


@st.composite
def blocks(draw, min_dims=1, max_dims=3):
    inner = tuple(draw(st.lists(st.integers(1, 4), min_size=min_dims, max_size=max_dims)))
    k = draw(st.integers(1, 4))
    n = int(np.prod(inner))
    t = draw(st.integers(0, 3))
    r = draw(st.integers(0, 2))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(k, t))
    val = rng.standard_normal((k, t))
    u = rng.standard_normal((k, r)) if r else None
    v = rng.standard_normal((r,) + inner) if r else None
    return SparseBlock((k,) + inner, idx, val, u, v), rng


def same(a, b):
    np.testing.assert_allclose(dense(a), dense(b), rtol=1e-12, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(blocks())
def test_elementwise_scaling_adding_and_negation(data):
    b, rng = data
    d = rng.standard_normal(b.inner)
    row = rng.standard_normal(b.inner[-1:])
    D = dense(b)
    same(b * d, D * d)
    same(d * b, d * D)
    same(b * row, D * row)
    same(b / (2.0 + d * d), D / (2.0 + d * d))
    same(-b, -D)
    other = SparseBlock(b.shape, b.idx[:, ::-1], b.val * 2.0, b.u, b.v)
    same(b + other, D + dense(other))
    same(b - other, D - dense(other))
    broadcast = np.broadcast_to(rng.standard_normal((b.shape[0],) + (1,) * len(b.inner)), b.shape)
    same(b + broadcast, D + broadcast)
    same(broadcast - b, broadcast - D)


@settings(max_examples=80, deadline=None)
@given(blocks(), st.integers(1, 4), st.booleans())
def test_sums_of_many_blocks_and_adding_into_a_dense_sum(data, parts, fortran):
    b, rng = data
    n = b.size // b.shape[0]
    others = [SparseBlock(b.shape, rng.integers(0, n, size=b.idx.shape), rng.standard_normal(b.val.shape),
                          b.u, None if b.v is None else b.v * k) for k in range(parts)]
    same(SparseBlock.sum_of([b] + others), dense(b) + sum(dense(o) for o in others))
    acc = rng.standard_normal(b.shape)
    if fortran:  # a sum laid out column-major has no flat view: still added in place
        acc = np.asfortranarray(acc)
    expected = acc + dense(b)
    before = acc
    b.add_into(acc)
    assert acc is before
    same(acc, expected)


@settings(max_examples=80, deadline=None)
@given(blocks(), st.data())
def test_sums_reshapes_transposes_and_where(data, draw):
    b, rng = data
    D = dense(b)
    nd = b.ndim
    axes = tuple(sorted(draw.draw(st.sets(st.integers(1, nd - 1), min_size=1))))
    keep = draw.draw(st.booleans())
    same(np.sum(b, axis=axes, keepdims=keep), np.sum(D, axis=axes, keepdims=keep))
    same(np.reshape(b, (b.shape[0], -1)), np.reshape(D, (D.shape[0], -1)))
    perm = (0,) + tuple(int(a) + 1 for a in rng.permutation(nd - 1))
    same(np.transpose(b, perm), np.transpose(D, perm))
    mask = rng.random(b.inner) > 0.5
    same(np.where(mask, b, 0.0), np.where(mask, D, 0.0))


@pytest.mark.parametrize("val_dtype, m_dtype", [(np.float64, np.float64), (np.float32, np.float64),
                                                 (np.float64, np.float32), (np.float64, np.int64)])
@pytest.mark.parametrize("rows", [None, 1, 3])
@pytest.mark.parametrize("unit", [False, True])
def test_matrix_product_of_identity_like_seeds_keeps_values_and_dtype(val_dtype, m_dtype, rows, unit):
    # The gather path: each seed has one entry in every row, all in one column (identity seeds
    # pulled back through a matrix product), scaled by its value. rows=None: a block of vectors,
    # (K, p) @ (p, q), the pull through a layer W @ x; the matrix is a transposed view there.
    rng = np.random.default_rng(rows or 0)
    p, k = 5, 4
    cols = rng.integers(0, p, size=k)
    n = rows or 1
    idx = np.arange(n)[None, :] * p + cols[:, None]
    val = np.ones((k, n)) if unit else rng.standard_normal((k, n))
    b = SparseBlock((k, p) if rows is None else (k, rows, p), idx, val.astype(val_dtype))
    m = (rng.standard_normal((p, 3)) * 4).astype(m_dtype)
    if rows is None:
        m = np.ascontiguousarray(m.T).T
    got, want = np.matmul(b, m), np.matmul(dense(b), m)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert not np.shares_memory(got, m)


@settings(max_examples=80, deadline=None)
@given(blocks(min_dims=2, max_dims=2))
def test_matrix_product_with_a_constant_matrix(data):
    b, rng = data
    b3 = np.reshape(b, (b.shape[0], 1) + b.inner)
    m = rng.standard_normal((b.inner[-1], 3))
    same(np.matmul(b3, m), np.matmul(dense(b3), m))


@settings(max_examples=80, deadline=None)
@given(blocks(min_dims=1, max_dims=1))
def test_matrix_product_of_a_block_of_vectors(data):
    # (K, p) @ (p, q): repeated positions, several entries per seed and a low-rank part.
    b, rng = data
    m = rng.standard_normal((b.inner[0], 3))
    got = b @ m
    assert type(got) is np.ndarray
    same(got, dense(b) @ m)


@settings(max_examples=80, deadline=None)
@given(blocks(min_dims=2, max_dims=2), st.data())
def test_basic_indexing_and_its_transpose(data, draw):
    b, rng = data
    D = dense(b)
    n0 = b.inner[0]
    start = draw.draw(st.integers(-n0, n0))
    step = draw.draw(st.sampled_from([1, 2, -1]))
    idx = (slice(start, None, step), draw.draw(st.integers(0, b.inner[1] - 1)))
    got = getitem_on_block(b, idx)
    same(got, D[(Ellipsis,) + idx])
    if isinstance(got, SparseBlock):
        expected = np.zeros(D.shape)
        expected[(Ellipsis,) + idx] = dense(got)
        same(scatter_on_block(got, idx, b.inner), expected)


@settings(max_examples=80, deadline=None)
@given(blocks(min_dims=2, max_dims=3), st.data())
def test_zeroing_the_part_a_write_replaced(data, draw):
    # The reverse rule of y[idx] = v for y: the seed with that part zeroed, entries and low rank.
    b, rng = data
    D = dense(b)
    n0 = b.inner[-2]
    idx = (draw.draw(st.one_of(st.integers(-n0, n0 - 1),
                               st.builds(slice, st.integers(-n0, n0), st.none(), st.sampled_from([1, 2, -1])))),
           draw.draw(st.one_of(st.just(slice(None)), st.integers(0, b.inner[-1] - 1))))
    got = assign_on_block(b, 0.0, idx)
    assert isinstance(got, SparseBlock)
    expected = D.copy()
    expected[(Ellipsis,) + idx] = 0.0
    same(got, expected)
    assert assign_on_block(b, 1.5, idx) is NotImplemented  # only the zero write keeps the structure


@settings(max_examples=60, deadline=None)
@given(blocks(min_dims=1, max_dims=1), st.integers(0, 2**31 - 1))
def test_flat_scatter_adds_repeated_positions(data, seed):
    b, _ = data
    rng = np.random.default_rng(seed)
    n = 7
    flat = rng.integers(0, n, size=b.inner)
    expected = np.zeros((b.shape[0], n))
    np.add.at(expected, (slice(None), flat), dense(b))
    same(scatter_add_on_block(b, flat, n), expected)


@settings(max_examples=60, deadline=None)
@given(blocks(min_dims=1, max_dims=2))
def test_writing_rows_and_columns_of_a_result(data):
    b, rng = data
    flat = np.reshape(b, (b.shape[0], -1))
    k, n = flat.shape
    rows = rng.permutation(k + 3)[:k]
    out = rng.standard_normal((k + 3, n))
    expected = out.copy()
    expected[rows] = dense(flat)
    scatter_rows(flat, out, rows)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    out = rng.standard_normal((n, k + 3))
    expected = out.copy()
    expected[:, rows] = dense(flat).T
    scatter_cols(flat, out, rows)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k, r, n", [(7, 1, 300), (300, 1, 5), (40, 2, 60), (1, 1, 1)])
def test_low_rank_products_are_the_exact_products_whatever_the_rank(k, r, n):
    # Rank one is padded to rank two for speed; the padding adds an exact zero and nothing else.
    rng = np.random.default_rng(k + n)
    u, v = rng.standard_normal((k, r)), rng.standard_normal((r, n))
    got = lowrank_product(u, v)
    if r == 1:
        np.testing.assert_array_equal(got, u * v)  # the correctly rounded products themselves
    else:
        np.testing.assert_allclose(got, np.einsum("kr,rn->kn", u, v), rtol=1e-13, atol=1e-13)
    out = np.full((k, n), np.nan)
    assert lowrank_product(u, v, out=out) is out
    np.testing.assert_array_equal(out, got)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_softmax_hessian_stays_low_rank_and_matches_the_closed_form(mode):
    # H = diag(p) - p p^T: one-hot seeds plus a rank-one term all the way through the sweep.
    z = np.random.default_rng(3).standard_normal(200) * 2.0  # 200 x 200: above the dense-seed size

    def f(z):
        c = np.max(z)
        return c + np.log(np.sum(np.exp(z - c))) - z[3]

    p = np.exp(z - z.max())
    p /= p.sum()
    H = np.asarray(jaccli.hessian(f, z, mode=mode))
    np.testing.assert_allclose(H, np.diag(p) - np.outer(p, p), rtol=1e-10, atol=1e-14)


def test_a_product_with_a_zero_factor_keeps_a_structured_tangent_structured(monkeypatch):
    # x * mask with a 0/1 mask: the zero factor's guard against 0 * inf reads the tangent's parts,
    # not a dense copy of it (which would cost K x n per product in a forward sweep).
    from jaccli.engine.recording import Recording
    from jaccli.engine.seeds import SparseBlock

    mask = np.array([1.0, 0.0, 1.0, 0.0])
    rec = Recording(lambda x: np.tanh(x) * mask, (np.linspace(-1.0, 1.0, 4),), (0,))
    densified = []
    todense = SparseBlock.todense
    monkeypatch.setattr(SparseBlock, "todense", lambda self: densified.append(1) or todense(self))
    out = rec.jvp([SparseBlock.one_hot(np.arange(4), (4,), np.float64)], structured=True)[0]
    assert type(out) is SparseBlock and not densified
    np.testing.assert_allclose(out.todense(), np.diag(mask / np.cosh(np.linspace(-1.0, 1.0, 4)) ** 2))


@pytest.mark.parametrize("entries", [1, 2])
def test_a_real_low_rank_part_under_complex_entries_is_made_dense_complex(entries):
    # (hypothesis found it: np.real of such a block in a forward sweep through complex values)
    k, n = 3, 4
    rng = np.random.default_rng(1)
    idx = rng.integers(0, n, size=(k, entries))
    val = rng.standard_normal((k, entries)) + 1j * rng.standard_normal((k, entries))
    u, v = rng.standard_normal((k, 1)), rng.standard_normal((1, n))
    block = SparseBlock((k, n), idx, val, u, v)
    want = u @ v + 0j
    for row in range(k):
        for e in range(entries):
            want[row, idx[row, e]] += val[row, e]
    got = block.todense()
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(np.real(block), want.real, rtol=1e-15, atol=1e-15)


@settings(max_examples=80, deadline=None)
@given(blocks(min_dims=2), st.data())
def test_broadcasting_a_block_repeats_its_entries_along_the_new_axes(data, draw):
    b, rng = data
    # b's axes of length 1 grow, as x[:, None] - x[None, :] does
    shape = (b.shape[0],) + tuple(draw.draw(st.integers(1, 3)) if n == 1 else n for n in b.inner)
    out = np.broadcast_to(b, shape)
    same(out, np.broadcast_to(dense(b), shape))
    if b.idx.shape[1] * np.prod(shape[1:]) // np.prod(b.inner) <= 0.25 * np.prod(shape[1:]):
        assert type(out) is SparseBlock


def test_pairwise_differences_keep_a_row_and_a_column_per_seed():
    # The tangent of x[:, None, :] - x[None, :, :] for a seed on atom k is row k and column k of
    # the n x n x 3 block: 2n entries per seed, never a dense block (a Lennard-Jones Hessian's sweep)
    from jaccli.engine.recording import Recording

    n = 9
    x = np.random.default_rng(0).standard_normal(3 * n)
    rec = Recording(lambda x: x.reshape(-1, 3)[:, None, :] - x.reshape(-1, 3)[None, :, :], (x,), (0,))
    out = rec.jvp([SparseBlock.one_hot(np.arange(3 * n), (3 * n,), np.float64)], structured=True)[0]
    assert type(out) is SparseBlock and out.idx.shape[1] == 2 * n
    want = np.zeros((3 * n, n, n, 3))
    for k in range(n):
        for c in range(3):
            want[3 * k + c, k, :, c] += 1.0
            want[3 * k + c, :, k, c] -= 1.0
    np.testing.assert_array_equal(out.todense(), want)


@pytest.mark.parametrize("cond", [np.array(True), np.array(False), np.array([True, False, True, False, True])])
def test_where_masks_a_block_in_either_branch_and_keeps_it_structured(cond):
    b = SparseBlock((3, 5), np.array([[0, 1], [2, 2], [4, 3]]), np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]]))
    D = dense(b)
    for out, want in ((np.where(cond, b, 0.0), np.where(cond, D, 0.0)),
                      (np.where(cond, 0.0, b), np.where(cond, 0.0, D))):
        assert type(out) is SparseBlock
        np.testing.assert_array_equal(dense(out), want)


def test_blocks_at_the_same_positions_add_their_values_not_their_entries():
    b = SparseBlock.one_hot(np.arange(4), (6,), np.float64)
    total = SparseBlock.sum_of([b * 2.0, b * 3.0, -b])
    assert type(total) is SparseBlock and total.idx.shape == b.idx.shape
    np.testing.assert_array_equal(dense(total), 4.0 * dense(b))


def test_a_small_hessian_through_values_much_larger_than_x_takes_structured_seeds(monkeypatch):
    # 20 atoms: a 60 x 60 block of seeds is small enough for dense seeds, but the pairwise
    # differences are 20 x 20 x 3 per seed; structured, each seed carries a row and a column
    from benchmarks.workloads import _lj_atoms, _lj_hessian, lennard_jones
    from jaccli.engine.recording import Recording

    seeded = []
    jvp = Recording.jvp
    monkeypatch.setattr(Recording, "jvp",
                        lambda self, seeds, **kw: seeded.append(type(seeds[0])) or jvp(self, seeds, **kw))
    x = _lj_atoms(20)
    np.testing.assert_allclose(np.asarray(jaccli.hessian(lambda x: lennard_jones(np, x), x)), _lj_hessian(x),
                               rtol=1e-10, atol=1e-9)
    assert seeded == [SparseBlock]
    seeded.clear()
    np.asarray(jaccli.hessian(lambda x: np.sum(np.sin(x) ** 2), x))  # values no larger than x: dense seeds, as before
    assert seeded == [np.ndarray]
