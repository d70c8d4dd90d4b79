"""A Jacobian swept in blocks of rows (issue 44): each block's result is made in its rows of the result, not
copied there, and a long concatenation's pieces away from a block's seeds are not visited; the results
are the closed forms whatever the order of rows, columns and calls."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from benchmarks.workloads import _loop_ref as _loop_jacobian
from benchmarks.workloads import element_loop_numpy as _loop
from jaccli.api import block_stores, evaluator, sweep_seeds
from jaccli.engine.block_memory import offer_block, run_offered, standing_offer, usual_sweep_only
from jaccli.engine.rules import indexing, joining
from jaccli.engine.rules._util import zero_block

N = 300


def _copies(monkeypatch) -> list:
    """The results the evaluator copies into its store (each is then given back: recycle_block)."""
    copied = []
    monkeypatch.setattr(evaluator, "recycle_block", copied.append)
    return copied


def test_each_block_of_rows_is_made_in_its_rows_of_the_result(monkeypatch):
    copied = _copies(monkeypatch)
    x1, x2 = np.linspace(0.5, 1.5, N), np.linspace(-1.0, 2.0, N)
    J1 = np.asarray(jaccli.jacobian(_loop, x1, mode="reverse", chunk_size=N // 3))
    J2 = np.asarray(jaccli.jacobian(_loop, x2, mode="reverse", chunk_size=N // 3))
    assert copied == []
    np.testing.assert_array_equal(J1, _loop_jacobian(x1))  # (the first, after the second was made)
    np.testing.assert_array_equal(J2, _loop_jacobian(x2))


def test_a_block_made_in_the_result_for_an_intermediate_value_is_overwritten_by_the_input_s(monkeypatch):
    # y's cotangent is the first zero block of the result's shape; x's, 2 y's, is another array
    def f(x):
        return _loop(2.0 * x)

    copied = _copies(monkeypatch)
    x = np.linspace(0.5, 1.5, N)
    J = np.asarray(jaccli.jacobian(f, x, mode="reverse", chunk_size=N // 3))
    assert len(copied) == 3
    np.testing.assert_allclose(J, 2.0 * _loop_jacobian(2.0 * x), rtol=1e-15)


def test_columns_known_before_the_rows_are_kept_and_blocks_are_copied(monkeypatch):
    copied = _copies(monkeypatch)
    x = np.linspace(0.5, 1.5, N)
    J = jaccli.jacobian(_loop, x, mode="reverse", chunk_size=N // 3)
    J._ev.ensure_cols(0, np.array([7, 8]))  # a forward sweep: known columns the blocks of rows must not wipe out
    assert J.stats["cols_evaluated"] == 2 and J.stats["rows_evaluated"] == 0
    column = J[:, 7:9]
    whole = np.asarray(J)
    assert len(copied) == 3
    np.testing.assert_array_equal(whole, _loop_jacobian(x))
    np.testing.assert_array_equal(np.asarray(column), _loop_jacobian(x)[:, 7:9])


@pytest.mark.parametrize("chunk", [7, 40])
def test_a_concatenation_swept_in_blocks_visits_only_the_pieces_near_each_block_s_seeds(monkeypatch, chunk):
    pieces, width = 40, 5

    def f(x):
        return np.concatenate([np.sin(x[width * i:width * i + width]) * x[width * i] for i in range(pieces)])

    # structured seeds, kept structured through the join, at these small sizes too
    monkeypatch.setattr(sweep_seeds, "DENSE_SEED_ELEMENTS", 0)
    monkeypatch.setattr(joining, "_DENSE_PER_PIECE", 0)
    sliced = []
    taken = indexing.get_basic.sparse
    monkeypatch.setattr(indexing.get_basic, "sparse", lambda g, idx: sliced.append(idx) or taken(g, idx))
    x = np.linspace(0.5, 1.5, pieces * width)
    J = np.asarray(jaccli.jacobian(f, x, mode="reverse", chunk_size=chunk))
    n = x.size
    i = np.arange(n)
    expected = np.zeros((n, n))
    expected[i, i] = np.cos(x) * x[i // width * width]
    expected[i, i // width * width] += np.sin(x)
    np.testing.assert_allclose(J, expected, rtol=1e-15, atol=1e-15)
    blocks = -(-n // chunk)
    # each block's seeds (rows) fall in at most chunk // width + 2 pieces; before, every piece in every block
    assert len(sliced) <= blocks * (chunk // width + 2) < blocks * pieces


@pytest.mark.parametrize("structured", [False, True])
def test_a_vector_read_at_ints_has_its_whole_block_made_in_column_order(monkeypatch, structured):
    # x[5 i] makes x's cotangent block in column order; the slices' parts (structured or dense) and the
    # elementwise term's whole rows (recorded first: swept last) are added into it
    pieces, width = 40, 5

    def f(x):
        squares = 0.5 * x ** 2
        return squares + np.concatenate([np.sin(x[width * i:width * i + width]) * x[width * i] for i in range(pieces)])

    if structured:
        monkeypatch.setattr(sweep_seeds, "DENSE_SEED_ELEMENTS", 0)
        monkeypatch.setattr(joining, "_DENSE_PER_PIECE", 0)
    x = np.linspace(0.5, 1.5, pieces * width)
    J = np.asarray(jaccli.jacobian(f, x, mode="reverse"))
    i = np.arange(x.size)
    expected = np.diag(x)
    expected[i, i] += np.cos(x) * x[i // width * width]
    expected[i, i // width * width] += np.sin(x)
    np.testing.assert_allclose(J, expected, rtol=1e-15, atol=1e-15)
    assert J.flags.f_contiguous and not J.flags.c_contiguous
    again = np.asarray(jaccli.jacobian(f, x, mode="reverse", chunk_size=pieces))  # in blocks: rows of a store
    np.testing.assert_allclose(again, expected, rtol=1e-15, atol=1e-15)


def _pieces(x):
    return np.concatenate([x[i:i + 3] * x[i] for i in range(0, N - 3, 3)])


def _pieces_jacobian(x):
    J = np.zeros((N - 3, N))
    for i in range(0, N - 3, 3):
        for r in range(3):
            J[i + r, i + r] += x[i]
            J[i + r, i] += x[i + r]
    return J


@pytest.mark.parametrize("f, closed_form", [(_loop, _loop_jacobian), (_pieces, _pieces_jacobian)])
def test_a_replay_makes_its_blocks_in_the_result_swept_as_usual_or_by_its_program(monkeypatch, f, closed_form):
    # A record_once function's replays: those swept as usual (the first ones, which trace, compile and check
    # the program) take the store's rows as plain calls do, and so does a checked program when it runs (its
    # tracing and its check never see that memory: a program holds none of its results' blocks), except an
    # element loop's, which makes its block in column order and has it copied (the test below): every
    # result stays its point's, calls after it made (a program that kept the rows of an earlier result
    # would overwrite them).
    copied = _copies(monkeypatch)
    g = jaccli.record_once(f)
    results, paths = [], []
    for k in range(9):
        del copied[:]
        x = np.linspace(0.5, 1.5, N) * (1 + 1e-3 * k)
        J = jaccli.jacobian(g, x, mode="reverse", chunk_size=N // 3)
        results.append((x, np.asarray(J)))
        paths.append(J.stats["path"])
        if f is _loop and paths[-1] == "compiled sweep":
            assert [c.flags.f_contiguous for c in copied] == [True] * 3
        else:
            assert copied == [], J.stats["path"]
    assert paths[1] == "replay" and paths[-1] == "compiled sweep"
    for x, A in results:
        np.testing.assert_allclose(A, closed_form(x), rtol=1e-15, atol=0)


def _concatenation(x):
    return np.concatenate([np.sin(x[5 * i:5 * i + 5]) * x[5 * i] for i in range(x.size // 5)])


def _concatenation_jacobian(x):
    i = np.arange(x.size)
    J = np.zeros((x.size, x.size))
    J[i, i] = np.cos(x) * x[i // 5 * 5]
    J[i, i // 5 * 5] += np.sin(x)
    return J


def test_a_long_concatenation_replayed_in_blocks_is_answered_by_programs_that_add_each_piece_in_place(monkeypatch):
    # Each piece's structured part of x's cotangent is added into the dense sum the program owns (one step
    # in place); traced, it made the sum a new copy per piece, and the sweep was refused for them (blocks of
    # 400 x 1000: past LARGE_SUM), every replay swept as usual. Structured seeds kept through the join, as
    # at the benchmark's sizes (a 10^4-vector of 1000 pieces).
    monkeypatch.setattr(joining, "_DENSE_PER_PIECE", 0)
    copied = _copies(monkeypatch)
    g = jaccli.record_once(_concatenation)
    n = 1000
    paths = []
    for k in range(9):
        del copied[:]
        x = np.linspace(0.5, 1.5, n) * (1 + 1e-3 * k)
        J = jaccli.jacobian(g, x, mode="reverse", chunk_size=400)
        np.testing.assert_allclose(np.asarray(J), _concatenation_jacobian(x), rtol=1e-15, atol=0)
        paths.append(J.stats["path"])
        assert copied == [], J.stats["path"]  # (the programs' blocks too: made in the result's rows)
    assert paths[-1] == "compiled sweep" and paths[1] == "replay"
    got = np.asarray(jaccli.jacobian(g, x, mode="reverse", chunk_size=400))  # (the same point again)
    np.testing.assert_array_equal(got, np.asarray(jaccli.jacobian(_concatenation, x, mode="reverse", chunk_size=400)))


def test_rows_of_a_fresh_result_are_offered_as_zeros_once(monkeypatch):
    # The result's rows come from calloc: the first sweep offered them makes its zero block there without a
    # fill (six fills of 133 MB for the 10^4 x 10^4 Jacobian of a 1000-piece concatenation); rows offered once
    # count as written, whether their sweep ended or not, and so do rows known before
    offers = []
    real = block_stores.offer_block
    monkeypatch.setattr(block_stores, "offer_block", lambda block, zeroed=False: offers.append(zeroed)
                        or real(block, zeroed))
    x = np.linspace(0.5, 1.5, N)
    J = jaccli.jacobian(_loop, x, mode="reverse", chunk_size=N // 3)
    np.testing.assert_array_equal(np.asarray(J), _loop_jacobian(x))
    assert len(offers) == 6 and not any(offers)  # (a small result's rows are np.empty's: filled when taken)
    monkeypatch.setattr(block_stores, "_CALLOC_FROM", 0)  # (as a result of 32 MiB or more)
    offers.clear()
    J = jaccli.jacobian(_loop, x, mode="reverse", chunk_size=N // 3)
    np.testing.assert_array_equal(np.asarray(J), _loop_jacobian(x))
    assert offers[::2] == [True, True, True] and not any(offers[1::2])  # (the offer withdrawn after each sweep)
    J = jaccli.jacobian(_loop, x, mode="reverse", chunk_size=N // 3)
    np.testing.assert_array_equal(np.asarray(J[:10]), _loop_jacobian(x)[:10])  # (rows 0-9 on their own)
    assert not J._ev._untouched(0, J._ev.block_store(0, 0), 0, 20)  # (rows 0-9 known)
    fresh = jaccli.jacobian(_loop, x, mode="reverse", chunk_size=N // 3)._ev
    rows = fresh.block_store(0, 0)
    assert fresh._untouched(0, rows, 20, 40) and not fresh._untouched(0, rows, 30, 50)  # (offered once: written)
    assert not fresh._untouched(0, np.zeros_like(rows), 60, 70)  # another array than that block's cache


def test_an_offer_of_zeros_is_taken_without_a_fill_and_offered_again_as_written_once_taken():
    held = np.full((4, 3), 7.0)  # (not zeros: what a fill would change)
    offer_block(held, zeroed=True)
    assert zero_block((4, 3), np.float64) is held and (held == 7.0).all()
    offer_block(held, zeroed=True)
    offer = standing_offer()
    usual = usual_sweep_only(lambda: zero_block((4, 3), np.float64))
    assert run_offered(offer, lambda: zero_block((4, 3), np.float64)) is held  # (a program took it: written)
    assert usual() is held and (held == 0.0).all()  # (so the usual sweep's zero block is filled)
    offer_block(None)


def test_a_program_adds_a_part_reaching_few_seeds_into_their_rows_alone():
    # (a compiled sweep's steps: ADD_INTO of x[i]'s part, ADD_BLOCK of a slice's structured part; each adds
    # into the span of rows its nonzero seeds reach, or their entries, what the whole add gives)
    from jaccli.engine.seeds import SparseBlock
    from jaccli.engine.traced_in_place import _add_block, _add_into

    rng = np.random.default_rng(0)
    acc, k = rng.standard_normal((100, 30)), 100
    g = np.zeros(k)
    g[[40, 47]] = [2.0, np.nan]
    want = acc.copy()
    want[:, 7] += g
    got = _add_into(acc.copy(), g, (7,), prim=indexing.get_basic, kwargs={})
    np.testing.assert_array_equal(got, want)
    val = np.zeros((k, 1))
    val[[3, 90], 0] = [1.5, np.inf]
    idx = rng.integers(0, 30, (k, 1))
    block = SparseBlock((k, 30), idx, val)
    want = acc.copy()
    block.add_into(want)
    np.testing.assert_array_equal(_add_block(acc.copy(), block.shape, idx, val, None, None), want)
    assert _add_into(acc, np.zeros(k), (3,), prim=indexing.get_basic, kwargs={}) is acc  # (no row reached)


@pytest.mark.parametrize("f, closed_form, column_order", [(_loop, _loop_jacobian, True),
                                                          (_pieces, _pieces_jacobian, False)])
def test_a_compiled_sweep_of_an_element_loop_in_blocks_of_rows_adds_columns_in_column_order(monkeypatch, f,
                                                                                           closed_form, column_order):
    # A compiled sweep of a loop's writes y[i] = v has its x[i] add into a column-ordered block (K numbers in
    # a row, not a row apart) rather than into the store's rows offered to it, and the evaluator copies it into
    # them in tiles; a sweep of pieces, which visits few columns of x, makes its result in the offered rows
    copied = _copies(monkeypatch)
    g = jaccli.record_once(f)
    for k in range(9):
        del copied[:]
        x = np.linspace(0.5, 1.5, N) * (1 + 1e-3 * k)
        J = jaccli.jacobian(g, x, mode="reverse", chunk_size=N // 3)
        A = np.asarray(J)
        np.testing.assert_array_equal(A, closed_form(x))
        assert A.flags.c_contiguous
    assert J.stats["path"] == "compiled sweep"
    if column_order:
        assert [c.flags.f_contiguous and not c.flags.c_contiguous for c in copied] == [True] * 3
    else:
        assert copied == []


@pytest.mark.parametrize("rows", [np.arange(3, 23), np.arange(0, 40, 2), np.array([5, 4, 6, 7])])
@pytest.mark.parametrize("order", ["C", "F"])
def test_copy_rows_writes_a_block_of_either_order_into_any_rows(monkeypatch, rows, order):
    monkeypatch.setattr(block_stores, "_TILE", 6)  # (tiles that do not divide the block)
    rng = np.random.default_rng(0)
    store = rng.standard_normal((40, 17))
    block = np.asarray(rng.standard_normal((rows.size, 17)), order=order)
    expected = store.copy()
    expected[rows] = block
    block_stores.copy_rows(store, rows, block)
    np.testing.assert_array_equal(store, expected)
