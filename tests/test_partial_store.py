"""Blocks too large to reserve keep only the rows and columns computed (block_stores.PartialStore).

A few rows of a 10^5 x 10^5 Jacobian must not need its 75 GiB. The property tests force every
block into a PartialStore (DENSE_STORE_LIMIT = 0) and check that any sequence of NumPy indices,
by rows, by columns or both, gives exactly what the dense cache gives, computing no more rows or
columns than there; the last tests take rows of a real 10^5-wide Jacobian and Hessian.
"""

from __future__ import annotations

import contextlib
import json
import math
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from jaccli.api import block_stores
from jaccli.cli.main import cli
from jaccli.errors import ResourceLimitError
from jaccli.api.block_stores import PartialStore
from tests.test_lazy import (SETTINGS, X6, assert_same_result, batched_problem, feature_shapes, hessian_problem,
                             numpy_indices, problems, tall, touched)


@contextlib.contextmanager
def partial_stores():
    """Every block of every evaluator made inside is a PartialStore until all of it is asked for."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(block_stores, "DENSE_STORE_LIMIT", 0)
        yield


def store_of(J):
    return J._ev.store.get((J._i, J._j))


@SETTINGS
@given(data=st.data(), problem=problems(), mode=st.sampled_from(["reverse", "forward", "auto"]))
def test_any_sequence_of_indices_reads_the_same_entries_as_the_dense_cache(data, problem, mode):
    f, x, out_shape, in_shape = problem
    dense = np.asarray(jaccli.jacobian(f, x, mode="reverse"))
    with partial_stores():
        J = jaccli.jacobian(f, x, mode=mode)
        for k in range(3):
            idx = data.draw(numpy_indices(J.shape), label=f"idx{k}")
            # rows, then columns, then whatever: later requests mix rows and columns already known
            how = mode if k == 0 else data.draw(st.sampled_from(["reverse", "forward"]), label=f"mode{k}")
            got = J._finish(J._evaluate(idx, mode=how))
            assert_same_result(got, dense[idx])
            assert_same_result(J[idx], dense[idx])
            if J.rows_evaluated + J.cols_evaluated and J.rows_evaluated < math.prod(out_shape) \
                    and J.cols_evaluated < math.prod(in_shape):
                assert type(store_of(J)) is PartialStore  # nothing dense reserved for a part
        if mode == "reverse":
            J2 = jaccli.jacobian(f, x, mode="reverse")
            idx = data.draw(numpy_indices(J2.shape), label="idx_rows")
            assert_same_result(J2[idx], dense[idx])
            assert J2.rows_evaluated == touched(J2.shape, len(out_shape), idx)[0]
        full = np.asarray(J)
        assert type(store_of(J)) is np.ndarray  # the known rows and columns moved into a dense cache
        assert_same_result(full, dense)
        assert_array_equal(J[idx], full[idx])  # and later reads come from that dense cache


@SETTINGS
@given(data=st.data(), problem=problems())
def test_matrix_view_and_evaluate_read_a_partial_store(data, problem):
    f, x, out_shape, in_shape = problem
    M, N = math.prod(out_shape), math.prod(in_shape)
    dense = np.asarray(jaccli.jacobian(f, x, mode="reverse")).reshape(M, N)
    with partial_stores():
        J = jaccli.jacobian(f, x)
        idx = data.draw(numpy_indices((M, N)), label="idx")
        assert_same_result(J.matrix[idx], dense[idx])
        rows = np.array(data.draw(st.lists(st.integers(-M, M - 1), max_size=4)), dtype=np.intp)
        cols = np.array(data.draw(st.lists(st.integers(-N, N - 1), max_size=4)), dtype=np.intp)
        assert_same_result(J.matrix.evaluate(rows, cols), dense[np.ix_(rows, cols)])


@SETTINGS
@given(data=st.data(), B=st.integers(1, 3), out_feat=feature_shapes, in_feat=feature_shapes,
       seed=st.integers(0, 2**31), mode=st.sampled_from(["reverse", "forward"]))
def test_batched_jacobian_in_a_partial_store(data, B, out_feat, in_feat, seed, mode):
    f, X, exact = batched_problem(B, out_feat, in_feat, seed)
    M, N = math.prod(out_feat), math.prod(in_feat)
    with partial_stores():
        J = jaccli.jacobian(f, X, batch_axis=0, mode=mode)
        for k in range(2):
            idx = data.draw(numpy_indices(J.shape), label=f"idx{k}")
            assert_same_result(J[idx], exact[idx], rtol=1e-12, atol=1e-12)
        assert_same_result(J.matrix.evaluate([0], [N - 1]), exact.reshape(B, M, N)[:, [0]][:, :, [N - 1]],
                           rtol=1e-12, atol=1e-12)
        assert_allclose(np.asarray(J), exact, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(data=st.data(), n=st.integers(1, 5), seed=st.integers(0, 2**31), mode=st.sampled_from(["forward", "reverse"]))
def test_hessian_in_a_partial_store_reads_missing_rows_from_the_mirror(data, n, seed, mode):
    f, x, exact = hessian_problem(n, seed)
    with partial_stores():
        H = jaccli.hessian(f, x, mode=mode)
        for k in range(3):
            idx = data.draw(numpy_indices(H.shape), label=f"idx{k}")
            assert_same_result(H[idx], exact[idx], rtol=1e-12, atol=1e-12)
        full = np.asarray(H)
    assert_allclose(full, exact, rtol=1e-12, atol=1e-12)
    assert_array_equal(full, full.T)


@pytest.mark.parametrize("idx", [(1, 2), (-1, 0), (np.int64(1), 2), (1, ...), (Ellipsis, 3),
                                 (Ellipsis, 1, 2), (1, 2, Ellipsis), (), ([1], 2), (slice(1, 2), 2)])
def test_scalar_or_0d_array_from_a_partial_store_follows_numpy(idx):
    expected = np.asarray(jaccli.jacobian(tall, X6))[idx]
    with partial_stores():
        J = jaccli.jacobian(tall, X6)
        got = J[idx]
    assert type(got) is type(expected)
    assert np.shape(got) == np.shape(expected)
    assert_allclose(got, expected, rtol=1e-12, atol=1e-13)


def test_cross_blocks_of_a_hessian_in_partial_stores():
    x, y = np.array([0.3, -0.2, 0.5]), np.array([0.7, 1.1])

    def f(x, y):
        return (np.sin(x) ** 2).sum() * (y ** 3).sum()

    sx, sy = (np.sin(x) ** 2).sum(), (y ** 3).sum()
    hxy = np.outer(2 * np.sin(x) * np.cos(x), 3 * y ** 2)
    with partial_stores():
        H = jaccli.hessian(f, (x, y))
        assert_allclose(H[1][0][:, 2], hxy[2], rtol=1e-13)  # row 2 of H[0][1], read as a column
        assert H[0][1].rows_evaluated == 1 and type(store_of(H[1][0])) is PartialStore
        assert_allclose(H[1][0][1, 0:2], hxy[0:2, 1], rtol=1e-13)
        assert_allclose(np.asarray(H[0][1]), hxy, rtol=1e-13)
        assert_allclose(np.asarray(H[0][0]), np.diag(2 * np.cos(2 * x) * sy), rtol=1e-13, atol=1e-15)
        assert_allclose(H[1][1][0], (np.diag(6 * y) * sx)[0], rtol=1e-13)


def test_the_whole_of_a_block_that_does_not_fit_says_so_and_its_rows_still_work(monkeypatch):
    def no_memory(shape, dtype):
        raise MemoryError

    monkeypatch.setattr(block_stores, "DENSE_STORE_LIMIT", 0)
    monkeypatch.setattr(block_stores, "_reserve", no_memory)
    x = np.linspace(0.1, 1.0, 6)
    J = jaccli.jacobian(lambda x: np.sin(x) * x.sum(), x)
    assert_allclose(J[2], np.cos(x[2]) * x.sum() * np.eye(6)[2] + np.sin(x[2]), rtol=1e-13)
    with pytest.raises(ResourceLimitError):
        np.asarray(J)
    assert_allclose(J[1:3, 2], np.cos(x[1:3]) * x.sum() * (np.arange(1, 3) == 2) + np.sin(x[1:3]), rtol=1e-13)


# ---------------------------------------------------------------------------
# Real sizes: no patching, a 10^5 x 10^5 block (75 GiB dense)
# ---------------------------------------------------------------------------
N_BIG = 100_000


def big_f(x):
    return np.sin(x) * np.roll(x, 1)


def big_rows(x, rows):
    """Rows of d(sin(x) * roll(x, 1))/dx in closed form: cos(x_r) x_{r-1} on the diagonal, sin(x_r) left of it."""
    out = np.zeros((len(rows), x.size))
    for k, r in enumerate(rows):
        out[k, r] += np.cos(x[r]) * x[r - 1]
        out[k, (r - 1) % x.size] += np.sin(x[r])
    return out


def test_rows_of_a_huge_jacobian_take_memory_for_those_rows_only():
    x = np.linspace(-1.0, 2.0, N_BIG)
    J = jaccli.jacobian(big_f, x)
    tracemalloc.start()
    try:
        first = J[0:2]
        point = J[7, 6]
        picked = J.matrix.evaluate([5, -1], [4, 5, 6, N_BIG - 2])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert type(store_of(J)) is PartialStore
    assert peak < 64 * 2**20  # a few rows of 0.8 MB and the sweep's temporaries, not 75 GiB
    assert_allclose(first, big_rows(x, [0, 1]), rtol=1e-13, atol=0)
    assert point == pytest.approx(np.sin(x[7]), rel=1e-13)
    assert_allclose(picked, big_rows(x, [5, N_BIG - 1])[:, [4, 5, 6, N_BIG - 2]], rtol=1e-13, atol=0)
    assert J.rows_evaluated == 5


@pytest.mark.parametrize("once", [False, True], ids=["plain", "record_once"])
def test_structured_rows_of_a_huge_jacobian_are_read_whole_and_never_shared(once):
    # A sweep's structured rows go into the store through their parts, and rows read whole come out
    # without a gather of their columns: the same entries, in a copy of the caller's own.
    f = jaccli.record_once(big_f) if once else big_f
    for x in (np.linspace(-1.0, 2.0, N_BIG), np.linspace(-2.0, 1.0, N_BIG)):
        J = jaccli.jacobian(f, x)
        rows = J[3:7]
        assert type(store_of(J)) is PartialStore
        assert_allclose(rows, big_rows(x, [3, 4, 5, 6]), rtol=1e-13, atol=0)
        rows[:] = 7.0
        assert_allclose(J[3:7], big_rows(x, [3, 4, 5, 6]), rtol=1e-13, atol=0)
        assert_allclose(J[[6, 4], 2:9], big_rows(x, [6, 4])[:, 2:9], rtol=1e-13, atol=0)
        assert J.rows_evaluated == 4
    if once:
        assert f.replays == 1


@pytest.mark.parametrize("once", [False, True], ids=["plain", "record_once"])
def test_structured_rows_read_whole_are_written_from_their_entries_not_copied(monkeypatch, once):
    # Rows that a sweep gave structured, read whole, are written from their entries into zeros:
    # the dense chunk (all N_BIG columns of each row) is not copied out, bit for bit what it gives
    f = jaccli.record_once(big_f) if once else big_f
    take = block_stores._Chunks.take
    copied: list[int] = []
    monkeypatch.setattr(block_stores._Chunks, "take",
                        lambda self, positions, *rest: copied.append(positions.size) or take(self, positions, *rest))
    for x in (np.linspace(-1.0, 2.0, N_BIG), np.linspace(-2.0, 1.0, N_BIG), np.linspace(-1.5, 1.5, N_BIG)):
        J = jaccli.jacobian(f, x)
        rows, again = J[3:7], J[3:7]
        assert copied == [] and J.rows_evaluated == 4 and store_of(J).rows.data == [None]  # (none made dense)
        assert_allclose(rows, big_rows(x, [3, 4, 5, 6]), rtol=1e-13, atol=0)
        chunk = take(store_of(J).rows, np.arange(3, 7), None, np.empty(rows.shape))
        assert_array_equal(rows, chunk) and assert_array_equal(again, chunk)
        rows[:] = 7.0  # the caller's own array, not the cache
        assert_array_equal(J[3:7], chunk)
        assert_array_equal(J[4:6], chunk[1:3])  # part of the chunk: copied from it
        assert copied == [2]
        copied.clear()
    if once:
        assert f.replays == 2


@pytest.mark.parametrize("once", [False, True], ids=["plain", "record_once"])
def test_rows_of_a_huge_jacobian_make_no_map_of_its_columns(once):
    # A store's maps of which chunk holds each row (column) are made at its first row (column): 10 rows of
    # a 10^5-column block wrote 4 maps of its 10^5 positions through on every call, the columns' never used
    f = jaccli.record_once(big_f) if once else big_f
    for x in (np.linspace(-1.0, 2.0, N_BIG), np.linspace(-2.0, 1.0, N_BIG)):
        J = jaccli.jacobian(f, x)
        assert_allclose(J[3:7], big_rows(x, [3, 4, 5, 6]), rtol=1e-13, atol=0)
        store = store_of(J)
        assert store.cols._chunk is None and store.cols._offset is None
        assert store.rows._chunk.shape == (N_BIG,) and (store.rows._chunk >= 0).sum() == 4
        column = np.zeros(N_BIG)
        column[5], column[6] = np.cos(x[5]) * x[4], np.sin(x[6])  # (big_rows' entries in column 5)
        assert_allclose(J[:, 5], column, rtol=1e-13, atol=0)  # a column: its map made then
        assert (store.cols._chunk >= 0).sum() == 1


def test_rows_and_columns_of_a_huge_hessian():
    x = np.linspace(-1.0, 2.0, N_BIG)

    def f(x):
        return np.sum(np.sin(x) * np.roll(x, 1)) + 0.5 * np.sum(x ** 2)

    H = jaccli.hessian(f, x)
    # H = I + diag(-sin(x) * roll(x, 1)) + cos terms on the first off-diagonals (and the corners)
    assert_allclose(H[3, 2:5], [np.cos(x[3]), 1 - np.sin(x[3]) * x[2], np.cos(x[4])], rtol=1e-13)
    assert_allclose(H[2:5, 3], [np.cos(x[3]), 1 - np.sin(x[3]) * x[2], np.cos(x[4])], rtol=1e-13)
    assert H.rows_evaluated == 1 and type(store_of(H)) is PartialStore


def test_cli_rows_and_columns_of_a_huge_jacobian(tmp_path):
    fn = tmp_path / "f.py"
    fn.write_text("import numpy as np\n\ndef f(x):\n    return np.sin(x) * np.roll(x, 1)\n")
    x = np.linspace(-1.0, 2.0, N_BIG)
    np.save(tmp_path / "x.npy", x)
    result = CliRunner().invoke(cli, ["jacobian", str(fn), str(tmp_path / "x.npy"), "--rows", "0:2",
                                      "--cols", "0:3", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    block = json.loads(result.stdout)["blocks"]["df_dx"]
    assert block["full_shape"] == [N_BIG, N_BIG] and block["rows_evaluated"] == 2
    got = np.array(block["data"])
    assert_allclose(got, big_rows(x, [0, 1])[:, :3], rtol=1e-13, atol=0)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_sweep_covering_a_whole_zero_or_structured_block_too_large_to_reserve(mode):
    # One sweep covers all of a block whose store would be a PartialStore: zero blocks (no path
    # from x to y ** 2, nor from y to 2 x) and diagonal ones are written whole, as in a dense store.
    x, y = np.linspace(0.5, 1.0, 4), np.linspace(-1.0, 1.0, 6)
    with partial_stores():
        J = jaccli.jacobian(lambda x, y: (x * 2, y ** 2), (x, y), mode=mode, chunk_size=6)
        assert_array_equal(np.asarray(J[0][0]), 2 * np.eye(4))
        assert_array_equal(J[1][0][2:5], np.zeros((3, 4)))
        assert_array_equal(np.asarray(J[0][1]), np.zeros((4, 6)))
        assert_array_equal(np.asarray(J[1][1]), np.diag(2 * y))


def test_a_hessian_sweep_covering_a_whole_zero_block_too_large_to_reserve():
    x, y = np.linspace(0.5, 1.0, 4), np.linspace(-1.0, 1.0, 6)
    with partial_stores():
        H = jaccli.hessian(lambda x, y: (x ** 3).sum() + (y ** 2).sum(), (x, y), chunk_size=4)
        assert_array_equal(np.asarray(H[0][0]), np.diag(6 * x))
        assert_array_equal(np.asarray(H[1][0]), np.zeros((6, 4)))
        assert_array_equal(H[0][1][1], np.zeros(6))
        assert_array_equal(np.asarray(H[1][1]), 2 * np.eye(6))


# ---------------------------------------------------------------------------
# A few lines of a block of a few MiB: only those kept (issue 44, P5), unpatched
# ---------------------------------------------------------------------------
N_MID = 1000  # a 1000 x 1000 block: 8 MB dense, at least block_stores._FEW_LINES_FROM
W_MID = np.random.default_rng(44).standard_normal((N_MID, N_MID))


def mid_f(x):
    return W_MID @ np.tanh(x)


def mid_jacobian(x, W=W_MID):
    """d(W tanh(x))/dx in closed form: W scaled by tanh's slope, column by column."""
    return W * (1.0 - np.tanh(x) ** 2)


@pytest.mark.parametrize("once", [False, True], ids=["plain", "record_once"])
def test_a_few_rows_of_a_block_of_some_mib_reserve_those_rows_only(once):
    # 10 rows of a 1000 x 1000 block reserved all 8 MB of it, where the kernel may give the rows written
    # a 2 MB huge page (a replay's peak RSS 1.45 MB, or 3.45 MB); they keep 80 kB and the sweep's own
    f = jaccli.record_once(mid_f) if once else mid_f
    for x in (np.linspace(-1.0, 2.0, N_MID), np.linspace(-2.0, 1.0, N_MID)):
        J = jaccli.jacobian(f, x)
        tracemalloc.start()
        try:
            rows = J[0:10]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        full = mid_jacobian(x)
        assert type(store_of(J)) is PartialStore and peak < 2**20
        assert_allclose(rows, full[:10], rtol=1e-12, atol=1e-14)
        assert_allclose(J[3:5, 7], full[3:5, 7], rtol=1e-12, atol=1e-14)  # from the rows known
        assert_allclose(J[500:503], full[500:503], rtol=1e-12, atol=1e-14)  # a second chunk
        assert_allclose(J[[2, 501], 4:9], full[[2, 501], 4:9], rtol=1e-12, atol=1e-14)  # across the two
        assert J.rows_evaluated == 13
        assert_allclose(np.asarray(J), full, rtol=1e-12, atol=1e-14)  # then all of it: dense, rows moved in
        assert type(store_of(J)) is np.ndarray and J.rows_evaluated == N_MID


def test_more_lines_or_a_smaller_block_keep_the_dense_cache():
    # Beyond a few lines (an eighth of the block's), or in a block under 4 MiB, the rows go into a dense
    # cache as before: nothing there for a huge page to take, or most of it to be written anyway
    x = np.linspace(-1.0, 2.0, N_MID)
    J = jaccli.jacobian(mid_f, x)
    assert_allclose(J[0:N_MID // 4], mid_jacobian(x)[:N_MID // 4], rtol=1e-12, atol=1e-14)
    assert type(store_of(J)) is np.ndarray
    J = jaccli.jacobian(lambda x: W_MID[:500, :500] @ np.tanh(x), x[:500])  # 2 MB
    assert_allclose(J[0:10], mid_jacobian(x[:500], W_MID[:500, :500])[:10], rtol=1e-12, atol=1e-14)
    assert type(store_of(J)) is np.ndarray


def test_rows_of_one_sweep_are_read_without_sorting_their_chunks(monkeypatch):
    # Rows that one sweep made are one chunk: read without np.unique, whose first call in a process imports
    # numpy.ma (0.5 MB resident, which the rows' own 80 kB do not need); rows of two sweeps still sort theirs
    x = np.linspace(-1.0, 2.0, N_MID)
    unique = np.unique
    calls: list[int] = []
    monkeypatch.setattr(np, "unique", lambda a, *rest, **kw: calls.append(np.size(a)) or unique(a, *rest, **kw))
    J = jaccli.jacobian(mid_f, x)
    assert_allclose(J[0:10], mid_jacobian(x)[:10], rtol=1e-12, atol=1e-14)
    assert calls == []
    J[20:22]
    assert_allclose(J[0:22], mid_jacobian(x)[:22], rtol=1e-12, atol=1e-14)  # rows 10:20 swept then: 3 chunks
    assert calls == [22] and J.rows_evaluated == 22


def mixed_f(x):
    y = np.exp(np.sin(x) * np.roll(x, 1))
    return y * np.tanh(W_MID[:, :3] @ x[:3]) if x.size == N_MID else y


def mixed_rows(x, rows):
    """Rows of d(exp(sin(x) roll(x, 1)) t)/dx in closed form, t = tanh(W[:, :3] x[:3]) (1 where x is not N_MID long)."""
    e, n = np.exp(np.sin(x) * np.roll(x, 1)), x.size
    t = np.tanh(W_MID[:, :3] @ x[:3]) if n == N_MID else np.ones(n)
    out = np.zeros((len(rows), n))
    for k, r in enumerate(rows):
        out[k, r] += e[r] * np.cos(x[r]) * x[r - 1] * t[r]
        out[k, (r - 1) % n] += e[r] * np.sin(x[r]) * t[r]
        if n == N_MID:
            out[k, :3] += e[r] * (1.0 - t[r] ** 2) * W_MID[r, :3]
    return out


@pytest.mark.parametrize("big", [False, True], ids=["mid", "huge"])
def test_entries_handed_out_never_change_when_rows_and_columns_are_mixed_in_a_partial_store(big):
    # A column from a forward sweep and a row from a reverse sweep round differently: a row made after the
    # column keeps the column's entry, as a dense cache keeps it, read alone, with its row, or in the whole
    n = N_BIG if big else N_MID
    x = np.linspace(-1.0, 2.0, n)
    differ = 0
    for k in (1, 2, 5, 6, 7):
        J = jaccli.jacobian(mixed_f, x)
        column = np.array(J[:, k])
        assert type(store_of(J)) is PartialStore
        rows = [k - 1, k, k + 1]  # each crossing column k
        row = np.array(J[k - 1:k + 2])
        assert_array_equal(row[:, k], column[rows])
        assert_array_equal(J[k - 1:k + 2, k], column[rows])
        assert_array_equal(J[:, k], column)
        assert_allclose(row, mixed_rows(x, rows), rtol=1e-12, atol=1e-14)
        fresh = np.array(jaccli.jacobian(mixed_f, x)[k - 1:k + 2])  # the rows alone, no column known before
        differ += int((fresh[:, k] != column[rows]).sum())
        if not big:
            whole = np.asarray(J)
            assert_array_equal(whole[:, k], column)
            assert_array_equal(whole[k - 1:k + 2], row)
    assert differ  # (the two kinds of sweep do round differently here: else this test could not fail)


def _rounds_apart(x):
    # a Hessian whose row sweeps give a pair (r, c) and its mirror (c, r) different last bits
    return np.sum(np.exp(0.3 * x[:-1] * x[1:]) * np.cos(x[1:])) + np.sum(np.log1p(x ** 2) * x[::-1])


def test_a_few_rows_of_a_mid_sized_hessian_keep_only_themselves_and_never_change():
    # 1000 x 1000 (8 MB): a few rows kept only (as a Jacobian's: asked_few), each new row taking the values its
    # known mirrors were handed out with and the new rows' pairs averaged, so that they and the whole matrix
    # asked later agree to the bit
    x = np.linspace(0.1, 2.0, 1000)
    hvp_rows = np.stack([jaccli.hvp(_rounds_apart, x, e)[1] for e in np.eye(1000)[:9]])
    assert hvp_rows[3, 4] != hvp_rows[4, 3] and hvp_rows[7, 8] != hvp_rows[8, 7]  # (rows round apart there)
    H = jaccli.hessian(_rounds_apart, x)
    tracemalloc.start()
    first = np.array(H[0:4])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert type(H._ev.store[(0, 0)]) is PartialStore and peak < 2**20
    second = np.array(H[3:9])  # row 3 known; rows 4-8 new, (4, 3) a known mirror's, (7, 8) a pair among them
    assert_array_equal(second[0], first[3])
    assert second[1, 3] == first[3, 4] and second[4, 8] == second[5, 7]
    whole = np.asarray(H)
    assert_array_equal(whole[0:4], first)
    assert_array_equal(whole[3:9], second)
    assert_array_equal(whole, whole.T)
    assert_allclose(whole[:9], hvp_rows, rtol=1e-13, atol=1e-13)
    h, steps = 1e-5, np.eye(1000)[:9]  # the Hessian's first columns by central differences of the gradient
    columns = [(jaccli.grad(_rounds_apart, x + h * e) - jaccli.grad(_rounds_apart, x - h * e)) / (2 * h) for e in steps]
    assert_allclose(whole[:9], np.stack(columns), rtol=1e-6, atol=1e-6)


def test_a_quarter_of_a_hessians_rows_or_a_small_hessian_keeps_the_dense_cache():
    x = np.linspace(0.1, 2.0, 1000)
    H = jaccli.hessian(_rounds_apart, x)
    H[0:250]
    assert type(H._ev.store[(0, 0)]) is np.ndarray
    small = jaccli.hessian(_rounds_apart, x[:500])  # 2 MB
    small[0:3]
    assert type(small._ev.store[(0, 0)]) is np.ndarray
