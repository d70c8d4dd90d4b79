"""Diagonal Jacobians found in the recording: elementwise functions take one sweep, not one per row."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from jaccli.engine.recording import Recording
from jaccli.engine.seeds import SparseBlock

from .helpers import central_diff, rosen_hess, rosenbrock

FD = dict(rtol=1e-6, atol=1e-8)


def p1(x):
    return np.sin(x) * np.exp(x) + x ** 2


def test_elementwise_jacobian_is_one_sweep_and_matches_the_closed_form():
    x = np.linspace(-2.0, 2.0, 40)
    J = jaccli.jacobian(p1, x)
    dense = np.asarray(J)
    assert_allclose(dense, np.diag(np.exp(x) * (np.sin(x) + np.cos(x)) + 2 * x), rtol=1e-13, atol=1e-13)
    assert_allclose(dense, central_diff(p1, x), **FD)
    assert J.stats == {"rows_evaluated": 40, "cols_evaluated": 0, "sweeps": 1, "seeds": 1, "path": "recording"}
    assert (dense[~np.eye(40, dtype=bool)] == 0.0).all()  # exact structural zeros


def test_explicit_modes_keep_their_sweeps_and_agree():
    x = np.linspace(-1.0, 1.0, 12)
    auto = np.asarray(jaccli.jacobian(p1, x))
    for mode in ("reverse", "forward"):
        J = jaccli.jacobian(p1, x, mode=mode)
        assert_allclose(np.asarray(J), auto, rtol=1e-15, atol=0)
        assert J.stats["seeds"] == 12


def test_lazy_rows_of_a_diagonal_jacobian_are_only_those_rows():
    x = np.linspace(0.5, 2.0, 30).reshape(5, 6)
    f = lambda x: np.tanh(x) / (1.0 + x * x)  # noqa: E731
    J = jaccli.jacobian(f, x)
    part = J[1:3]
    assert part.shape == (2, 6, 5, 6)
    assert_allclose(part, central_diff(f, x)[1:3], **FD)
    assert J.stats["rows_evaluated"] == 12 and J.stats["seeds"] == 1
    col = J.matrix[:, 7]
    assert_allclose(col, central_diff(f, x).reshape(30, 30)[:, 7], **FD)


def test_constants_may_broadcast_but_traced_values_must_keep_their_elements():
    x = np.array([0.3, -0.7, 1.1])
    c = np.array([[1.0], [2.0], [3.0]])
    cases = {
        "constant row": (lambda x: x * np.array([1.0, 2.0, 3.0]) + np.cos(x), True),
        "where": (lambda x: np.where(x > 0, np.sin(x), x ** 3), True),
        "two uses": (lambda x: np.maximum(x, 0.5 * x) * x, True),
        "traced scalar": (lambda x: x * x[0], False),
        "reversed": (lambda x: x * x[::-1], False),
        "reduction": (lambda x: x - np.mean(x), False),
        "outer": (lambda x: (x * c)[0], False),
        "cumsum": (lambda x: np.cumsum(x), False),
    }
    for name, (f, diagonal) in cases.items():
        rec = Recording(f, (x,), (0,))
        assert rec.elementwise(0, 0) is diagonal, name
        J = jaccli.jacobian(f, x)
        assert_allclose(np.asarray(J), central_diff(f, x), **FD, err_msg=name)
        assert (J.stats["seeds"] == 1) is diagonal, name


def test_size_preserving_broadcast_keeps_the_diagonal():
    x = np.array([0.2, 0.4, 0.6])
    f = lambda x: np.exp(x[None, :] * np.ones((1, 3)))  # noqa: E731  (shape (1, 3): same elements)
    J = jaccli.jacobian(f, x)
    assert J.shape == (1, 3, 3)
    assert_allclose(np.asarray(J), central_diff(f, x), **FD)


def test_several_inputs_and_outputs_mix_diagonal_and_dense_blocks():
    x, y = np.array([0.1, 0.5, 0.9]), np.array([1.5, -0.5, 2.0])

    def f(x, y):
        return np.exp(x) * y, np.sin(y) + np.sum(x)

    J = jaccli.jacobian(f, (x, y))
    for i in range(2):
        for j, arg in enumerate((x, y)):
            g = (lambda a: f(a, y)[i]) if j == 0 else (lambda a: f(x, a)[i])
            assert_allclose(np.asarray(J[i][j]), central_diff(g, arg), **FD, err_msg=f"block {i}, {j}")


def test_nonfinite_diagonal_entries_stay_where_they_are():
    x = np.array([0.0, 1.0, 4.0])
    with np.errstate(divide="ignore"):
        J = np.asarray(jaccli.jacobian(np.sqrt, x))
    assert np.isinf(J[0, 0]) and J[1, 1] == 0.5 and J[2, 2] == 0.25
    assert (J[~np.eye(3, dtype=bool)] == 0.0).all()  # no 0 * inf = NaN off the diagonal


def test_streamed_rows_of_a_diagonal_block():
    x = np.linspace(-1.0, 1.0, 9)
    J = jaccli.jacobian(p1, x)
    pieces = list(J.matrix.stream(chunk_size=4))
    assert [start for start, _ in pieces] == [0, 4, 8]
    streamed = np.concatenate([p for _, p in pieces])
    assert_array_equal(streamed, np.asarray(jaccli.jacobian(p1, x)))
    assert_allclose(streamed, np.asarray(jaccli.jacobian(p1, x, mode="reverse")), rtol=1e-15, atol=0)
    assert J.stats["seeds"] == 1


def test_streaming_with_an_explicit_mode_sweeps_as_asked():
    # `--mode reverse` means reverse sweeps, also when the block is diagonal and streamed.
    x = np.linspace(-1.0, 1.0, 9)
    J = jaccli.jacobian(p1, x, mode="reverse")
    streamed = np.concatenate([p for _, p in J.matrix.stream(chunk_size=4)])
    assert_allclose(streamed, np.asarray(jaccli.jacobian(p1, x)), rtol=1e-15, atol=0)
    assert J.stats["seeds"] == 9 and J.stats["sweeps"] == 3 and J._ev.kinds == {"reverse"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_result_dtype_follows_the_input(dtype):
    x = np.linspace(0.1, 1.0, 5).astype(dtype)
    J = jaccli.jacobian(np.log, x)
    assert np.asarray(J).dtype == dtype
    assert_allclose(np.asarray(J), np.diag(1.0 / x), rtol=1e-6)


# ---------------------------------------------------------------- symmetric Hessians without dense passes


@pytest.mark.parametrize("n", [200, 1500])
def test_banded_hessian_from_structured_entries_is_exact_and_symmetric(n):
    x = np.random.default_rng(n).uniform(-2, 2, n)
    H = jaccli.hessian(rosenbrock, x)
    dense = np.asarray(H)
    assert_allclose(dense, rosen_hess(x), rtol=1e-12, atol=1e-9)
    assert_array_equal(dense, dense.T)
    assert H.stats["sweeps"] == 1


def test_a_banded_hessian_sweep_stays_structured_where_slices_of_x_add_up():
    # rosenbrock's gradient adds the parts x[1:] and x[:-1] send back into one block; with one
    # structured seed per row the sweep must keep the band, never densify n x n blocks.
    from jaccli.api.recorded_functions import gradient_recording

    n = 2000
    x = np.random.default_rng(3).uniform(-2, 2, n)
    rec = gradient_recording(rosenbrock, (x,), (0,), False, False)
    out = rec.jvp([SparseBlock.one_hot(np.arange(n), (n,), np.float64)], structured=True)[0]
    assert type(out) is SparseBlock and out.u is None and out.idx.shape[1] <= 8
    assert_allclose(out.todense(), rosen_hess(x), rtol=1e-12, atol=1e-9)


def test_a_reverse_sweep_keeps_structured_rows_where_slices_of_x_add_up():
    # The rows of a stencil's Jacobian, from structured seeds: the parts u[2:], u[1:-1] and u[:-2]
    # send back must stay a banded block, not be added into a dense (K, n) one.
    n = 2000
    u = np.random.default_rng(4).standard_normal(n)

    def stencil(u):
        return u[2:] - 2.0 * u[1:-1] + u[:-2] + u[1:-1] ** 3

    rec = Recording(stencil, (u,), (0,))
    out = rec.vjp([SparseBlock.one_hot(np.arange(n - 2), (n - 2,), np.float64)], structured=True)[0]
    assert type(out) is SparseBlock and out.u is None and out.idx.shape[1] <= 8
    expected = np.zeros((n - 2, n))
    k = np.arange(n - 2)
    expected[k, k], expected[k, k + 2] = 1.0, 1.0
    expected[k, k + 1] = -2.0 + 3.0 * u[1:-1] ** 2
    assert_allclose(out.todense(), expected, rtol=1e-14)


def test_symmetric_entries_sum_repeats_and_mirror_missing_partners():
    from jaccli.api.hessian_symmetry import symmetric_from_structure

    # row 0: (0,0) twice and (0,2); row 1: (1,1); row 2: (2,0) and (2,1), whose mirror (1,2) is absent
    idx = np.array([[0, 0, 2], [1, 1, 1], [0, 1, 1]])
    val = np.array([[1.0, 2.0, 5.0], [4.0, 0.0, 0.0], [7.0, 3.0, 0.0]])
    out = symmetric_from_structure(SparseBlock((3, 3), idx, val), np.arange(3), np.dtype(np.float64))
    dense = np.zeros((3, 3))
    for k in range(3):
        np.add.at(dense[k], idx[k], val[k])
    assert_array_equal(out, 0.5 * (dense + dense.T))


def test_symmetric_entries_at_kept_positions_take_each_calls_values():
    # Positions sorted and searched once are kept for the next block with the same positions: its
    # own values must be summed and mirrored, and other positions must not find the kept ones.
    from jaccli.api import hessian_symmetry
    from jaccli.api.hessian_symmetry import symmetric_from_structure

    idx = np.array([[0, 0, 2], [1, 1, 1], [0, 1, 1]])
    rng = np.random.default_rng(5)
    hessian_symmetry._KEPT.clear()
    for positions in (idx, idx, idx[::-1].copy(), idx):
        val = rng.standard_normal((3, 3))
        out = symmetric_from_structure(SparseBlock((3, 3), positions, val), np.arange(3), np.dtype(np.float64))
        dense = np.zeros((3, 3))
        for k in range(3):
            np.add.at(dense[k], positions[k], val[k])
        assert_allclose(out, 0.5 * (dense + dense.T), rtol=1e-15, atol=1e-15)  # (repeats summed in another order)
        assert_array_equal(out, out.T)
    assert len(hessian_symmetry._KEPT) == 2


def test_replayed_banded_hessians_agree_with_the_closed_form_at_each_point():
    f = jaccli.record_once(rosenbrock)
    rng = np.random.default_rng(6)
    for n in (50, 50, 50, 80, 50):
        x = rng.uniform(-2, 2, n)
        dense = np.asarray(jaccli.hessian(f, x))
        assert_allclose(dense, rosen_hess(x), rtol=1e-12, atol=1e-9)
        assert_array_equal(dense, dense.T)
    assert f.replays >= 2


@pytest.mark.parametrize("n, rank", [(5, 1), (300, 3), (517, 2)])
def test_low_rank_plus_entries_is_symmetrised_on_the_structure(n, rank):
    from jaccli.api.hessian_symmetry import symmetric_from_structure

    rng = np.random.default_rng(n)
    rows = rng.permutation(n)  # seed k is row rows[k]
    idx = np.stack([rows, rng.integers(0, n, n)], axis=1)  # a diagonal entry and a random one per row
    val = rng.standard_normal((n, 2))
    u, v = rng.standard_normal((n, rank)), rng.standard_normal((rank, n))
    out = symmetric_from_structure(SparseBlock((n, n), idx, val, u, v), rows, np.dtype(np.float64))
    dense = np.zeros((n, n))
    dense[rows] = u @ v
    for k in range(n):
        np.add.at(dense[rows[k]], idx[k], val[k])
    assert_allclose(out, 0.5 * (dense + dense.T), rtol=1e-13, atol=1e-13)
    assert_array_equal(out, out.T)


@pytest.mark.parametrize("order", ["sorted", "permuted"])
@pytest.mark.parametrize("c", [-0.0205, 3.0, 0.0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rank_one_part_proportional_to_its_transpose_is_one_exact_outer_product(order, c, dtype):
    from jaccli.api.hessian_symmetry import symmetric_from_structure, _symmetric_outer

    n = 301
    rng = np.random.default_rng(3)
    rows = np.arange(n) if order == "sorted" else rng.permutation(n)
    v = rng.standard_normal((1, n)).astype(dtype)
    v[0, 7] = 0.0  # a zero entry: u is zero there too
    u = np.zeros((n, 1), dtype=dtype)
    u[:, 0] = dtype(c) * v[0, rows]  # seed k (row rows[k]) holds c v[rows[k]]: U = c V^T
    val = rng.standard_normal((n, 1)).astype(dtype)
    out = symmetric_from_structure(SparseBlock((n, n), rows[:, None], val, u, v), rows, np.dtype(dtype))
    assert out.dtype == dtype
    assert_array_equal(out, out.T)
    p = v[0].astype(np.float64)
    expected = c * np.outer(p, p)
    expected[rows, rows] += val[:, 0]
    tol = dict(rtol=1e-13, atol=1e-13) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-5)
    assert_allclose(out, expected, **tol)
    # the outer product is what gave it
    u_rows = np.zeros_like(u)
    u_rows[rows] = u
    assert _symmetric_outer(u_rows, v) is not None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("c", [-0.0205, 3.0, "huge"])
def test_rank_one_outer_product_is_each_entry_one_rounded_product_in_its_dtype(dtype, c):
    # np.dot of an n x 1 and a 1 x n (BLAS's gemm, inner size 1) against einsum, with c and sqrt(|c|) taken as
    # NumPy's scalars of the dtype take them (float64's as Python floats): the same numbers to the last bit
    from jaccli.api.hessian_symmetry import _symmetric_outer

    n = 257
    v = np.random.default_rng(8).standard_normal((1, n)).astype(dtype)
    v[0, 0] = 0.0  # (the scale is read at the first nonzero entry)
    c = -np.finfo(dtype).max / 8 if c == "huge" else c  # (products that overflow to inf, quietly)
    u = (dtype(c) * v[0])[:, None]
    with np.errstate(all="ignore"):
        cc = u[1, 0] / v[0, 1]
        w = np.sqrt(abs(cc)) * v[0]
        want = np.einsum("i,j->ij", -w if cc < 0 else w, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (products that overflow are inf, quietly, as einsum gave them)
        got = _symmetric_outer(u, v)
    assert got.dtype == dtype and got.flags.c_contiguous
    assert_array_equal(got.view(f"i{got.itemsize}"), want.view(f"i{want.itemsize}"))
    assert_array_equal(got, got.T)


def test_a_steady_hessians_diagonal_entries_are_found_on_the_diagonal_once(monkeypatch):
    # issue 44, item 4 (P6): a steady call's block brings its entries at the same positions on every call (one
    # program made it): that they lie on the diagonal is found on the first, kept, and not compared again
    from jaccli.api import hessian_symmetry
    from jaccli.api.hessian_symmetry import symmetric_from_structure

    n = 6
    rng = np.random.default_rng(9)
    rows = np.arange(n)
    kept: dict = {}
    for _ in range(3):
        p = rng.random(n)
        block = SparseBlock((n, n), rows[:, None].copy(), p[:, None].copy(), -p[:, None].copy(), p[None, :].copy())
        out = symmetric_from_structure(block, rows, np.dtype(np.float64), kept)
        assert_allclose(out, np.diag(p) - np.outer(p, p), rtol=1e-15, atol=1e-16)
        assert_array_equal(out, out.T)
        assert kept["diagonal"] is True
        monkeypatch.setattr(hessian_symmetry, "_positions", None)  # (entries off the diagonal would need it)
        block.idx.flags.writeable = False
    # where the positions are not all on the diagonal, that is kept too: the mean with the mirror, every call
    kept = {}
    idx = np.array([[0, 1], [1, 1], [2, 0]])
    monkeypatch.undo()
    for _ in range(2):
        val = rng.standard_normal((3, 2))
        out = symmetric_from_structure(SparseBlock((3, 3), idx, val), np.arange(3), np.dtype(np.float64), kept)
        dense = np.zeros((3, 3))
        for k in range(3):
            np.add.at(dense[k], idx[k], val[k])
        assert_allclose(out, 0.5 * (dense + dense.T), rtol=1e-15, atol=1e-15)
        assert kept["diagonal"] is False


def test_rank_one_part_not_proportional_is_symmetrised_by_the_mean():
    from jaccli.api.hessian_symmetry import symmetric_from_structure, _symmetric_outer

    n = 250
    rng = np.random.default_rng(4)
    v = rng.standard_normal((1, n))
    u = -0.3 * v.T.copy()
    u[11, 0] = np.nextafter(u[11, 0], 1.0)  # one entry off by one ulp: u v is not symmetric
    assert _symmetric_outer(u, v) is None
    assert _symmetric_outer(np.zeros((n, 1)), np.zeros((1, n))) is None  # no nonzero entry to scale by
    inf_v = v.copy()
    inf_v[0, 0] = np.inf
    assert _symmetric_outer(-0.3 * inf_v.T, inf_v) is None  # c = -inf / inf is NaN
    idx = np.zeros((n, 0), dtype=np.int64)
    out = symmetric_from_structure(SparseBlock((n, n), idx, np.zeros((n, 0)), u, v), np.arange(n),
                                    np.dtype(np.float64))
    assert_array_equal(out, out.T)
    assert_allclose(out, 0.5 * (u @ v + (u @ v).T), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hessian_of_a_masked_square_stays_zero_where_the_input_is_infinite(dtype):
    # The square's gradient on the recording is (2 g) x; np.where sends g = 0 to the entry where
    # x = inf, and 0 * inf must not turn that structural zero into NaN.
    x = np.array([1.0, -2.0, np.inf], dtype=dtype)

    def f(x):
        return np.sum(np.where(x < 5, x ** 2, 0.0))

    H = np.asarray(jaccli.hessian(f, x))
    assert H.dtype == dtype
    assert_array_equal(H, np.diag([2.0, 2.0, 0.0]))
    assert_array_equal(jaccli.grad(f, x), [2.0, -4.0, 0.0])
    # the gradient's own value, computed on a recording (an outer jvp records it)
    value, hv = jaccli.jvp(lambda x: jaccli.grad(f, x, create_graph=True), x, np.ones(3, dtype=dtype))
    assert_array_equal(value, [2.0, -4.0, 0.0])
    assert_array_equal(hv, [2.0, 2.0, 0.0])


@pytest.mark.parametrize("order", ["sorted", "permuted"])
@pytest.mark.parametrize("where", ["diagonal", "off-diagonal"])
def test_one_entry_per_row_plus_low_rank_is_symmetrised(order, where):
    from jaccli.api.hessian_symmetry import symmetric_from_structure

    n = 230
    rng = np.random.default_rng(7)
    rows = np.arange(n) if order == "sorted" else rng.permutation(n)
    cols = rows if where == "diagonal" else (rows + 1 + rng.integers(0, n - 1, n)) % n
    val = rng.standard_normal((n, 1))
    u, v = rng.standard_normal((n, 2)), rng.standard_normal((2, n))
    out = symmetric_from_structure(SparseBlock((n, n), cols[:, None], val, u, v), rows, np.dtype(np.float64))
    dense = np.zeros((n, n))
    dense[rows] = u @ v
    dense[rows, cols] += val[:, 0]
    assert_allclose(out, 0.5 * (dense + dense.T), rtol=1e-13, atol=1e-13)
    assert_array_equal(out, out.T)


@pytest.mark.parametrize("order", ["sorted", "permuted"])
@pytest.mark.parametrize("low_rank", [False, True])
def test_diagonal_entries_land_on_their_rows(order, low_rank):
    # Seed k holds one entry, on the diagonal of its row rows[k]: added through the diagonal's view.
    from jaccli.api.hessian_symmetry import symmetric_from_structure

    n = 37
    rng = np.random.default_rng(11)
    rows = np.arange(n) if order == "sorted" else rng.permutation(n)
    val = rng.standard_normal((n, 1))
    u, v = (rng.standard_normal((n, 1)), rng.standard_normal((1, n))) if low_rank else (None, None)
    out = symmetric_from_structure(SparseBlock((n, n), rows[:, None], val, u, v), rows, np.dtype(np.float64))
    dense = np.zeros((n, n))
    if low_rank:
        dense[rows] = u @ v
    dense[rows, rows] += val[:, 0]
    assert_allclose(out, 0.5 * (dense + dense.T), rtol=1e-14, atol=1e-14)
    assert_array_equal(out, out.T)


@pytest.mark.parametrize("n, dtype", [(40, np.float64), (500, np.float64), (300, np.float32)])
def test_softmax_cross_entropy_hessian_is_diag_p_minus_ppt_and_exactly_symmetric(n, dtype):
    z = (2.0 * np.random.default_rng(0).standard_normal(n)).astype(dtype)

    def f(z):
        c = np.max(z)
        return c + np.log(np.sum(np.exp(z - c))) - z[3]

    dense = np.asarray(jaccli.hessian(f, z))
    z64 = z.astype(np.float64)
    p = np.exp(z64 - z64.max()) / np.sum(np.exp(z64 - z64.max()))
    assert dense.dtype == dtype
    tol = dict(rtol=1e-12, atol=1e-15) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-6)
    assert_allclose(dense, np.diag(p) - np.outer(p, p), **tol)
    assert_array_equal(dense, dense.T)


def test_tiled_symmetrize_equals_the_plain_mean_bit_for_bit():
    from jaccli.api.hessian_symmetry import symmetrize_in_place

    a = np.random.default_rng(1).standard_normal((1100, 1100))
    expected = 0.5 * (a + a.T)
    symmetrize_in_place(a)
    assert_array_equal(a, expected)


def test_large_dense_hessian_is_symmetrised_in_tiles():
    n = 1030
    A = np.cos(np.arange(n * 3).reshape(3, n) * 0.01)
    x = np.linspace(-1, 1, n)
    f = lambda x: np.sum(np.tanh(A @ x) ** 2) + np.sum(np.sin(x))  # noqa: E731
    dense = np.asarray(jaccli.hessian(f, x))
    t = np.tanh(A @ x)
    closed = (A.T * (2 * (1 - t * t) * (1 - 3 * t * t))) @ A - np.diag(np.sin(x))
    assert_allclose(dense, closed, rtol=1e-10, atol=1e-12)
    assert_array_equal(dense, dense.T)


def test_distinct_positions_are_counted_with_negative_ones_wrapped():
    from jaccli.engine.seeds import distinct_positions as _distinct

    assert _distinct(np.array([3, 0, 2, 1]), 4) and _distinct(np.array([-1, 0]), 4)
    assert not _distinct(np.array([3, 0, 3]), 4) and not _distinct(np.array([-1, 3]), 4)
    assert not _distinct(np.arange(5) % 4, 4)  # more positions than places
    assert _distinct(np.array([], dtype=np.intp), 0) and _distinct(np.array([2]), 4)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (1, True), ((0, 1), False)])
def test_the_one_cotangent_of_a_full_sum_is_spread_by_one_broadcast(axis, keepdims):
    # On a recorded gradient (here of logsumexp over all five entries of a 1 x 5 array), the sum's
    # cotangent is one number: it is broadcast over x's shape as it is, with no reshape first.
    from jaccli.api import recorded_functions

    x = np.linspace(-1.0, 1.0, 5).reshape(1, 5)

    def f(x):
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))

    rec = recorded_functions.gradient_recording(f, (x,), (0,), False, False)
    names = [n.prim.name for n in rec.trace.nodes]
    assert names.count("broadcast_to") == 1
    assert names.count("reshape") == 1  # the gradient's own, from the sweep's block to x's shape
    assert names[-1] == "reshape"
    H = np.asarray(jaccli.hessian(f, x)).reshape(5, 5)
    p = np.exp(x.ravel()) / np.exp(x).sum()
    assert_allclose(H, np.diag(p) - np.outer(p, p), rtol=1e-14, atol=1e-16)
    assert_array_equal(H, H.T)


def test_a_recorded_block_rule_of_a_matrix_product_is_one_matrix_product():
    # A sweep recorded for a higher derivative (create_graph) applies matmul's block rule to
    # traced values: it must stay one product of matrices, not a loop over the K seeds' matrices.
    rng = np.random.default_rng(3)
    W = rng.standard_normal((7, 5))
    V = rng.standard_normal((4, 7))
    x = rng.standard_normal(5)

    def f(x):
        return V @ np.tanh(W @ x)

    def jac(x):
        return jaccli.jacobian(f, x, create_graph=True)

    rec = Recording(jac, (x,), (0,))
    products = [n for n in rec.trace.nodes if n.prim.name == "np.matmul"]
    assert len(products) == 3  # f's two, and the sweep's one (V @ ... is a constant: not recorded)
    assert all(np.ndim(a) <= 2 for n in products for a in n.args)
    assert_allclose(rec.outputs[0], central_diff(f, x), **FD)
    h = np.tanh(W @ x)
    assert_allclose(rec.outputs[0], (V * (1 - h * h)) @ W, rtol=1e-13, atol=1e-13)
