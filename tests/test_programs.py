"""Compiled sweeps (jaccli/replay/compiled_sweeps.py): a replay's sweep recorded once, then rerun at new points.

Each test keeps every program it can (`worth_keeping` -> True, so the choice does not depend on
the results' form) and checks that the programs really ran, then compares against an independent
reference at points other than the one the program was recorded at: a closed form, central
differences, or a fresh recording (no record_once) at the same point.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
from jaccli.replay import compiled_sweeps as programs
from jaccli.replay import result_checks
from jaccli.engine.seeds import SparseBlock
from tests.helpers import central_diff, rosen_hess, rosenbrock
from tests.test_compositions import assert_jacobians_match_differences, build, seed_form
from tests.test_compositions import programs as random_programs
from tests.test_replay import softmax_ce, softmax_hessian


@pytest.fixture
def ran(monkeypatch):
    """Keep every program; the list of results of each program run (None: a guard failed)."""
    monkeypatch.setattr(programs, "worth_keeping", lambda *results: True)
    results = []
    run = programs.Program.run

    def counted(self, nodes, seeds):
        out = run(self, nodes, seeds)
        results.append(out is not None)
        return out
    monkeypatch.setattr(programs.Program, "run", counted)
    return results


def test_a_whole_jacobian_of_an_mlp_from_a_program_matches_the_closed_form(ran):
    rng = np.random.default_rng(0)
    W1, b1, W2 = rng.standard_normal((16, 6)) / 3, rng.standard_normal(16), rng.standard_normal((5, 16))

    def mlp(x):
        return W2 @ np.tanh(W1 @ x + b1)

    g = jaccli.record_once(mlp)
    for _ in range(9):
        x = rng.standard_normal(6)
        h = np.tanh(W1 @ x + b1)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), (W2 * (1 - h * h)) @ W1, rtol=1e-12, atol=1e-13)
    assert ran.count(True) >= 3  # recorded on the first replay, run on the later ones


def test_a_vjp_program_takes_its_vector_as_an_input_not_as_a_constant(ran):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((4, 3))
    f = jaccli.record_once(lambda x: np.sin(A @ x))
    x = rng.standard_normal(3)
    for _ in range(9):
        v = rng.standard_normal(4)
        _, got = jaccli.vjp(f, x, v)
        np.testing.assert_allclose(got, (v * np.cos(A @ x)) @ A, rtol=1e-13, atol=1e-14)
    assert ran.count(True) >= 3


def test_a_jvp_program_takes_its_tangent_as_an_input(ran):
    f = jaccli.record_once(lambda x: np.exp(x) * np.sin(x) + x ** 2)
    rng = np.random.default_rng(2)
    for _ in range(9):
        x, v = rng.uniform(-2, 2, 7), rng.standard_normal(7)
        _, got = jaccli.jvp(f, x, v)
        np.testing.assert_allclose(got, (np.exp(x) * (np.sin(x) + np.cos(x)) + 2 * x) * v, rtol=1e-13)
    assert ran.count(True) >= 3


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_hessian_programs_match_the_closed_forms(ran, mode):
    rng = np.random.default_rng(3)
    rosen, ce = jaccli.record_once(rosenbrock), jaccli.record_once(softmax_ce)
    for _ in range(8):
        x, z = rng.uniform(-2, 2, 12), 2 * rng.standard_normal(9)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(rosen, x, mode=mode)), rosen_hess(x), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(ce, z, mode=mode)), softmax_hessian(z), atol=1e-14)
    assert ran.count(True) >= 4


def test_lazy_rows_in_the_same_blocks_run_one_program_per_block(ran):
    rng = np.random.default_rng(4)
    W = rng.standard_normal((30, 8))
    f = jaccli.record_once(lambda x: np.tanh(W @ x))
    for _ in range(8):
        x = rng.standard_normal(8)
        want = (1 - np.tanh(W @ x) ** 2)[:, None] * W
        J = jaccli.jacobian(f, x)
        np.testing.assert_allclose(J[2:5], want[2:5], rtol=1e-13)
        np.testing.assert_allclose(J[[7, 0]], want[[7, 0]], rtol=1e-13)
    assert ran.count(True) >= 4


def test_rows_of_two_outputs_of_one_shape_are_two_programs(ran):
    # the seeds of output 0's rows and of output 1's have one form: which output is seeded is
    # part of the request, or output 1's rows would come from output 0's program
    def f(x):
        return np.sin(x[:2] * x[2:4]), np.cos(x[1:3]) * x[4]

    g = jaccli.record_once(f)
    rng = np.random.default_rng(6)
    for _ in range(8):
        x = rng.uniform(-1, 1, 5)
        J = jaccli.jacobian(g, x, mode="reverse")
        for i in range(2):
            np.testing.assert_allclose(np.asarray(J[i]), central_diff(lambda t: f(t)[i], x), rtol=1e-7, atol=1e-9)
    assert ran.count(True) >= 4


def test_hessian_blocks_of_two_inputs_of_one_shape_are_two_programs(ran):
    def f(x, y):
        return np.sum(np.sin(x) * y ** 2) + np.sum(np.exp(y) * x)

    g = jaccli.record_once(f)
    rng = np.random.default_rng(7)
    for _ in range(8):
        x, y = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        H = jaccli.hessian(g, (x, y), mode="reverse")
        # closed form: d2f/dx2 = -sin(x) y^2, d2f/dxdy = 2 y cos(x) + exp(y), d2f/dy2 = 2 sin(x) + exp(y) x
        np.testing.assert_allclose(np.asarray(H[0][0]), np.diag(-np.sin(x) * y ** 2), atol=1e-14)
        np.testing.assert_allclose(np.asarray(H[0][1]), np.diag(2 * y * np.cos(x) + np.exp(y)), rtol=1e-13)
        np.testing.assert_allclose(np.asarray(H[1][1]), np.diag(2 * np.sin(x) + np.exp(y) * x), rtol=1e-13, atol=1e-15)
    assert ran.count(True) >= 4


def test_a_guard_that_fails_in_a_program_falls_back_to_the_usual_sweep(ran):
    # sqrt'(0) is inf: at a point with a zero the rule's factor is no longer finite, which the
    # program recorded at a point without one took as given (a guard)
    f = jaccli.record_once(lambda x: np.sqrt(x) * 2.0)
    for x in ([1.0, 4.0], [9.0, 16.0], [4.0, 9.0], [1.0, 9.0], [4.0, 1.0], [9.0, 16.0], [9.0, 16.0], [0.0, 4.0]):
        x = np.array(x)
        want = np.asarray(jaccli.jacobian(lambda x: np.sqrt(x) * 2.0, x))  # a fresh recording
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(f, x)), want)
    assert True in ran and ran[-1] is False


def test_a_mask_from_where_is_a_guard_of_the_program(ran):
    def f(x):
        return np.where(x > 0, x ** 2, -np.abs(x) ** 3)

    g = jaccli.record_once(f)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(6)
    for _ in range(7):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), np.diag(central_diff(lambda t: f(t), x).diagonal()),
                                   rtol=1e-6, atol=1e-8)
    y = -x  # every branch changes
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, y)), central_diff(f, y), rtol=1e-6, atol=1e-8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_programs(), st.integers(0, 2**31 - 1), st.sampled_from(["reverse", "forward"]),
       st.sampled_from(["default", "structured"]))
def test_random_compositions_from_programs_match_central_differences(program, seed, mode, form):
    sx, sy, steps = program
    rng = np.random.default_rng(seed)
    f = build(steps)
    g = jaccli.record_once(f)
    keep = programs.worth_keeping
    programs.worth_keeping = lambda *results: True  # (a fixture does not reset per example)
    try:
        with seed_form(form):
            for _ in range(3):  # recorded, then a replay records the programs, then one runs them
                x, y = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
                assert_jacobians_match_differences(g, f, x, y, mode)
    finally:
        programs.worth_keeping = keep


def test_a_program_not_worth_keeping_is_not_kept(monkeypatch):
    monkeypatch.setattr(programs, "worth_keeping", lambda *results: False)
    runs, run = [], programs.Program.run
    monkeypatch.setattr(programs.Program, "run", lambda self, *a: runs.append(1) or run(self, *a))
    f = jaccli.record_once(lambda x: np.sin(x).sum() ** 2)
    for k in range(11):
        x = np.linspace(0, 1, 5) + k
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), 2 * np.sin(x).sum() * np.cos(x), rtol=1e-13)
    # one run when a structured program is checked (the fifth replay: see replays.COMPILE_FORWARD_AT),
    # one when the dense one is (three replays later, once the structured one was not kept); none after
    assert len(runs) == 2
    assert list(f._cache[next(iter(f._cache))]._programs.values()) == [False, False]


def test_a_program_is_kept_by_what_it_computes_not_by_a_clock():
    eye = SparseBlock.one_hot(np.arange(4), (4,), np.dtype(np.float64))
    dense = np.eye(4)
    assert programs.worth_keeping([eye], [eye], 1) and programs.worth_keeping([dense], [dense], 1)
    assert programs.worth_keeping([eye], [dense], 1)  # structured where the usual sweep is dense: kept
    assert not programs.worth_keeping([dense], [eye], 1)  # it densifies what the usual sweep keeps structured
    big = np.zeros((programs.MAX_STORED_PER_NODE + 1, 3))  # arithmetic that dwarfs 3 operations' bookkeeping
    assert programs.worth_keeping([big], [big], 4) and not programs.worth_keeping([big], [big], 3)
    assert not result_checks.agrees([dense * (1 + 1e-6)], [dense])  # results that differ are never kept


@pytest.mark.parametrize("case", ["mlp", "batched", "tridiagonal", "P4-B256-n64"])
def test_identical_calls_take_the_same_path_in_every_fresh_wrapper(case):
    # 16 fresh record_once wrappers of one function, called at the same points: each keeps the
    # same compiled sweeps and says the same path for each call (the benchmark's P2, P4 and P3;
    # P4-B256-n64 itself, whose program was kept in 1 of 16 wrappers when a clock decided, is swept
    # as usual: 2^20 numbers from 3 operations, see compiled_sweeps.worth_keeping)
    rng = np.random.default_rng(14)
    A, W1, W2 = rng.standard_normal((16, 16)) / 4, rng.standard_normal((64, 40)) / 6, rng.standard_normal((30, 64)) / 8
    A64 = rng.standard_normal((64, 64)) / 8
    f, x, call = {
        "mlp": (lambda x: W2 @ np.tanh(W1 @ x), rng.standard_normal(40), jaccli.jacobian),
        "batched": (lambda X: np.tanh(X @ A), rng.standard_normal((32, 16)),
                    lambda g, x: jaccli.jacobian(g, x, batch_axis=0)),
        "tridiagonal": (rosenbrock, rng.uniform(-2, 2, 40), jaccli.hessian),
        "P4-B256-n64": (lambda X: np.tanh(X @ A64), rng.standard_normal((256, 64)),
                        lambda g, x: jaccli.jacobian(g, x, batch_axis=0)),
    }[case]
    seen = set()
    for _ in range(16):
        g = jaccli.record_once(f)
        paths = []
        for k in range(8):
            J = call(g, x + 0.01 * k)
            np.asarray(J)
            paths.append(J.stats["path"])
        seen.add((tuple(paths), tuple(_kept_forms(g))))
    if case == "P4-B256-n64":
        assert seen == {(("recording",) + ("replay",) * 7, ())}, seen
    else:
        # replayed node by node; forward compiled; sweep traced; compiled; checked; run
        assert seen == {(("recording",) + ("replay",) * 5 + ("compiled sweep",) * 2, ((("block",),)))}, seen


def test_the_recording_f_made_itself_records_no_program(ran):
    f = jaccli.record_once(lambda x: np.tanh(x) * x)
    np.asarray(jaccli.jacobian(f, np.ones(4)))
    assert not f._cache[next(iter(f._cache))]._programs


def _kept_forms(f):
    """The seed forms of the programs f's recording keeps ('array' or 'block' per seeded input)."""
    rec = f._cache[next(iter(f._cache))]
    return [tuple(None if form is None else form[0] for form in key[2]) for key, prog in rec._programs.items()
            if type(prog) is programs.Program and prog.checked]


def test_a_softmax_hessian_program_keeps_diag_plus_low_rank_not_a_dense_block(ran, monkeypatch):
    # 300 x 300 identity tangents are a structured block; through the softmax, the compiled sweep
    # keeps diag(p) - p p^T as entries plus a rank-one part (its parts traced when recorded), as the
    # usual sweep does: the program's result is that structure, never a dense n x n tangent block
    results = []
    run = programs.Program.run
    monkeypatch.setattr(programs.Program, "run", lambda self, *a: results.append(run(self, *a)) or results[-1])
    ce = jaccli.record_once(softmax_ce)
    rng = np.random.default_rng(11)
    for _ in range(8):
        z = 2 * rng.standard_normal(300)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(ce, z)), softmax_hessian(z), atol=1e-15)
    assert len(results) >= 3 and all(r is not None for r in results)  # run once when checked, then by each replay
    for (block,) in results:
        assert type(block) is SparseBlock and block.rank == 1 and block.idx.shape == (300, 1)


def test_small_identity_seeds_are_dense_in_the_usual_sweep_and_structured_in_the_program(ran):
    # a small block without matrix products is swept dense (cheaper as usual), but compiled
    # structured (Rosenbrock's tridiagonal Hessian: a few entries per row); the first replay, swept
    # as usual, gives a fresh recording's result to the last bit
    rosen = jaccli.record_once(rosenbrock)
    rng = np.random.default_rng(12)
    x0, x1 = rng.uniform(-2, 2, 12), rng.uniform(-2, 2, 12)
    for k in range(5):  # recorded, then replays until its program is checked (replays.COMPILE_FORWARD_AT)
        np.asarray(jaccli.hessian(rosen, x0 + 0.01 * k))
    np.testing.assert_array_equal(np.asarray(jaccli.hessian(rosen, x1)), np.asarray(jaccli.hessian(rosenbrock, x1)))
    assert _kept_forms(rosen) == [("block",)]
    for _ in range(3):
        x = rng.uniform(-2, 2, 12)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(rosen, x)), rosen_hess(x), rtol=1e-12, atol=1e-9)
    assert ran.count(True) >= 3


def test_a_program_whose_results_differ_from_the_usual_sweeps_is_not_kept(ran, monkeypatch):
    # a check of the machinery itself: a program is kept only if its first results are the usual
    # sweep's (to rounding); here every recorded program is made to be off by a factor 1 + 1e-6
    compiled = programs.Traced.compiled

    def off(self):
        prog = compiled(self)
        fn = prog.fn
        prog.fn = lambda vals, seeds: [None if o is None else o * (1 + 1e-6) for o in fn(vals, seeds)]
        return prog
    monkeypatch.setattr(programs.Traced, "compiled", off)
    f = jaccli.record_once(lambda x: np.tanh(x) * x.sum())
    rng = np.random.default_rng(13)
    for _ in range(8):
        x = rng.standard_normal(6)
        t = np.tanh(x)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, x)), np.diag((1 - t * t) * x.sum()) + t[:, None],
                                   rtol=1e-13)
    assert _kept_forms(f) == []


def test_a_structured_result_with_a_part_it_cannot_give_back_makes_no_program():
    # a block whose value part is another recording's traced array (or anything but a slot of the
    # sweep or a constant) cannot be rebuilt by the program: no program, rather than a block that
    # silently lacks that part
    from jaccli.engine.tape import Trace

    ext, other = Trace(), Trace()
    foreign = other.new_input(np.ones((2, 1)))
    mine = ext.new_input(np.ones((2, 1)))
    idx = np.array([[0], [1]])
    assert programs._result(SparseBlock((2, 2), idx, mine), ext) is not None
    assert programs._result(SparseBlock((2, 2), idx, foreign), ext) is None
    assert programs._result(SparseBlock((2, 2), idx, np.ones((2, 1)), np.float64(1.0) * mine[:, :1], foreign[:1]), ext) is None


def test_large_results_are_compared_a_part_at_a_time_and_agree_only_where_every_part_does():
    # (a 300 x 1000 result: compared in parts of 2^16 elements, no difference array as large as the result)
    want = np.linspace(-2.0, 3.0, 300 * 1000).reshape(300, 1000)
    assert result_checks.agrees([want.copy()], [want])
    assert result_checks.agrees([want * (1 + 1e-12)], [want])  # (rounding)
    for at in (0, 70_000, want.size - 1):  # (in the first, a middle and the last part)
        got = want.copy()
        got.flat[at] += 1e-6
        assert not result_checks.agrees([got], [want])
        got.flat[at] = np.nan
        assert not result_checks.agrees([got], [want])
        both = want.copy()
        both.flat[at] = np.nan
        assert result_checks.agrees([got], [both])  # (NaN where the usual sweep has NaN: allclose's equal_nan)


def _mostly_zero(order="C"):
    """A 400 x 400 banded result (1.3 MB float64, 3 entries a row) with a -0.0 and a NaN of its own payload."""
    n = 400
    want = np.zeros((n, n), order=order)
    i = np.arange(n)
    want[i, i] = np.linspace(-2.0, 3.0, n)
    want[i[:-1], i[1:]] = 0.5
    want[i[1:], i[:-1]] = -0.25
    want[3, 3] = -0.0
    bits = want.view(f"u{want.itemsize}")
    bits[5, 5] = np.array(np.nan).view(bits.dtype) | 1  # (a NaN with a payload of its own)
    return want


@pytest.mark.parametrize("order,dtype", [("C", np.float64), ("F", np.float64), ("C", np.float32)])
def test_a_mostly_zero_result_is_kept_by_its_entries_and_given_back_bit_for_bit(order, dtype):
    if dtype == np.float64:
        want = _mostly_zero(order)
    else:  # (1 MB and up: a 600 x 600 float32 diagonal)
        want = np.zeros((600, 600), dtype)
        np.fill_diagonal(want, np.linspace(1.0, 2.0, 600))
    (kept,) = result_checks.compacted([want])
    assert type(kept) is result_checks.Entries and kept.size == want.size
    back = result_checks.restored([kept])[0]
    assert back.dtype == want.dtype and back.shape == want.shape and back.flags.f_contiguous == want.flags.f_contiguous
    assert back.tobytes(order="A") == want.tobytes(order="A")
    assert result_checks.agrees([want.copy(order="A")], [kept])


def test_only_large_mostly_zero_arrays_of_their_own_memory_are_compacted():
    want = _mostly_zero()
    dense_one = np.random.default_rng(0).standard_normal((400, 400))
    small = want[:100, :100].copy()  # (80 KB: under COMPACTED_FROM)
    whole = np.zeros((2, 400, 400))
    whole[0] = want
    view = whole[0]  # (a view: a store's rows keep its memory anyway)
    ints = np.zeros((400, 400), np.int64)
    for w in (dense_one, small, view, ints, None):
        assert result_checks.compacted([w])[0] is w


def test_a_result_kept_by_its_entries_agrees_exactly_where_the_whole_result_does():
    # result_checks.Entries.close_to against _close on the whole result: the same verdict on
    # rounding, changes at an entry and at a zero, NaN and infinity where either holds one
    want = _mostly_zero()
    (kept,) = result_checks.compacted([want])
    cases = {"same": want.copy(), "rounding": want * (1 + 1e-12)}
    for name, (at, value) in {"entry changed": ((7, 7), 1.0), "zero made nonzero": ((0, 9), 1e-6),
                              "zero made tiny": ((0, 9), 1e-15), "NaN at a zero": ((0, 9), np.nan),
                              "NaN at an entry": ((7, 7), np.nan), "inf at a zero": ((0, 9), np.inf),
                              "+0.0 for -0.0": ((3, 3), 0.0)}.items():
        got = want.copy()
        got[at] = value
        cases[name] = got
    got = want.copy()
    got[5, 5] = 1.0  # (the usual sweep's NaN gone)
    cases["NaN gone"] = got
    got = want.copy()
    got[5, 5] = np.nan  # (NaN for NaN, payload aside: allclose's equal_nan)
    cases["NaN kept"] = got
    inf = want.copy()
    inf[9, 9] = np.inf
    (inf_kept,) = result_checks.compacted([inf])
    verdicts = {name: (result_checks.agrees([got], [kept]), result_checks.agrees([got], [want]))
                for name, got in cases.items()}
    verdicts["inf for inf"] = (result_checks.agrees([inf.copy()], [inf_kept]), result_checks.agrees([inf.copy()], [inf]))
    verdicts["finite for inf"] = (result_checks.agrees([want.copy()], [inf_kept]), result_checks.agrees([want.copy()], [inf]))
    assert all(a == b for a, b in verdicts.values()), verdicts
    assert {name for name, (a, _) in verdicts.items() if a} == {"same", "rounding", "zero made tiny", "NaN kept",
                                                             "inf for inf", "+0.0 for -0.0"}, verdicts
