"""Sparsity detection, sparse Jacobians and Hessians: patterns against analytic ones and against the
dense derivatives on every rules-table row and on random compositions; reuse; the self-check."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
import tests.rule_cases as rule_cases
from jaccli.api.sparse import SparsityChangedWarning
from jaccli.engine.recording import Recording
from jaccli.errors import UsageError
from jaccli.sparse.detection import detect
from tests.test_compositions import build, programs

CASES = []
for _info in pkgutil.iter_modules(rule_cases.__path__):
    CASES.extend(importlib.import_module(f"tests.rule_cases.{_info.name}").CASES)


def _dense(J) -> np.ndarray:
    return np.asarray(J).reshape(np.shape(J)[0] if np.ndim(J) == 2 else -1, -1)


# ---------------------------------------------------------------------------------------------
# Functions with known patterns
# ---------------------------------------------------------------------------------------------
def bratu(u):
    n = int(round(np.sqrt(u.size)))
    U = u.reshape(n, n)
    P = np.pad(U, 1)
    return (P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * U + 0.1 * np.exp(U)).ravel()


def bratu_sliced(u):
    n = int(round(np.sqrt(u.size)))
    U = u.reshape(n, n)
    r = -4 * U + np.exp(U)
    r = r.copy()
    r[1:, :] += U[:-1, :]
    r[:-1, :] += U[1:, :]
    r[:, 1:] += U[:, :-1]
    r[:, :-1] += U[:, 1:]
    return r.ravel()


def periodic(u):
    n = int(round(np.sqrt(u.size)))
    U = u.reshape(n, n)
    return (np.roll(U, 1, 0) + np.roll(U, -1, 0) + np.roll(U, 1, 1) + np.roll(U, -1, 1) - 4 * U + U ** 2).ravel()


def arrowhead(x):
    return np.concatenate([[np.sum(x ** 2)], x[1:] * x[0]])


def banded(x, b=2):
    out = x ** 2
    for k in range(1, b + 1):
        out = out + np.pad(x[k:] * x[:-k], (0, k)) + np.pad(np.sin(x[:-k]), (k, 0))
    return out


def block_diagonal(x):
    X = x.reshape(-1, 3)
    return (np.tanh(X) * X.sum(axis=1, keepdims=True)).ravel()


def separable_sum(x):
    return np.sum(np.cos(x[:-1]) * np.exp(x[1:]))


def stencil_pattern(n, periodic_=False):
    idx = np.arange(n * n).reshape(n, n)
    rows, cols = [idx.ravel()], [idx.ravel()]
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        if periodic_:
            nb = np.roll(np.roll(idx, -di, 0), -dj, 1)
            rows.append(idx.ravel())
            cols.append(nb.ravel())
        else:
            i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            ok = (i + di >= 0) & (i + di < n) & (j + dj >= 0) & (j + dj < n)
            rows.append(idx[ok])
            cols.append(idx[(i + di)[ok], (j + dj)[ok]])
    m = np.zeros((n * n, n * n), bool)
    m[np.concatenate(rows), np.concatenate(cols)] = True
    return m


@pytest.mark.parametrize("f,n,expected", [
    (bratu, 36, lambda: stencil_pattern(6)),
    (bratu_sliced, 36, lambda: stencil_pattern(6)),
    (periodic, 25, lambda: stencil_pattern(5, periodic_=True)),
    (arrowhead, 7, lambda: np.eye(7, dtype=bool) | (np.arange(7) == 0)[:, None] | (np.arange(7) == 0)[None, :]),
    (banded, 9, lambda: np.abs(np.subtract.outer(np.arange(9), np.arange(9))) <= 2),
    (block_diagonal, 9, lambda: np.kron(np.eye(3, dtype=bool), np.ones((3, 3), bool))),
], ids=["bratu-pad", "bratu-slices", "periodic-roll", "arrowhead", "banded", "block-diagonal"])
def test_detected_patterns_are_the_analytic_ones(f, n, expected):
    x = np.random.default_rng(3).uniform(0.2, 0.8, n)
    S = jaccli.sparsity(f, x)
    np.testing.assert_array_equal(S.pattern.toarray(), expected())


def test_hessian_pattern_of_a_separable_sum_is_tridiagonal():
    S = jaccli.sparsity(separable_sum, np.linspace(0.1, 0.9, 8), hessian=True)
    np.testing.assert_array_equal(S.pattern.toarray(), np.abs(np.subtract.outer(np.arange(8), np.arange(8))) <= 1)
    # a tridiagonal Hessian: 3 colours read back directly, 2 by substitution (chosen: its search is cheap here)
    assert S.mode == "symmetric" and (S.colors, S.recovery) == (2, "substitution")
    direct = jaccli.sparsity(separable_sum, np.linspace(0.1, 0.9, 8), hessian=True, recovery="direct")
    assert (direct.colors, direct.recovery) == (3, "direct")


@pytest.mark.parametrize("f,n,most", [(bratu, 400, 6), (banded, 30, 5)], ids=["bratu", "banded-5"])
def test_colours_stay_near_the_optimum(f, n, most):
    S = jaccli.sparsity(f, np.random.default_rng(0).uniform(0.2, 0.8, n))
    assert S.colors <= most


@pytest.mark.parametrize("f,n", [(bratu, 900), (periodic, 400), (arrowhead, 50)], ids=["bratu", "periodic", "arrow"])
def test_never_more_sweeps_than_natural_order_greedy_colouring(f, n):
    # natural-order greedy is what SparseMatrixColorings, ColPack and asdex do by default
    from jaccli.sparse import greedy_columns, greedy_rows
    S = jaccli.sparsity(f, np.random.default_rng(0).uniform(0.2, 0.8, n))
    natural = min(greedy_columns(S.pattern).max(), greedy_rows(S.pattern).max()) + 1
    assert S.colors <= natural


def test_arrowhead_takes_three_sweeps_bidirectionally():
    S = jaccli.sparsity(arrowhead, np.linspace(0.1, 0.9, 40))
    assert (S.mode, S.colors) == ("bidirectional", 3)
    J = jaccli.sparse_jacobian(arrowhead, np.linspace(0.1, 0.9, 40))
    np.testing.assert_allclose(J.toarray(), np.asarray(jaccli.jacobian(arrowhead, np.linspace(0.1, 0.9, 40))),
                               rtol=1e-14, atol=1e-15)


def test_detection_never_builds_a_dense_matrix_and_reports_shape_and_bandwidth():
    S = jaccli.sparsity(bratu, np.full(300 * 300, 0.5))  # dense would be 8.1e9 entries
    assert S.shape == (90000, 90000) and S.nnz == 5 * 90000 - 4 * 300
    assert S.bandwidth == (300, 300) and S.density == pytest.approx(S.nnz / 90000 ** 2)


# ---------------------------------------------------------------------------------------------
# Every primitive, every rules-table row
# ---------------------------------------------------------------------------------------------
def _call(case):
    args = [np.array(a, dtype=float) if isinstance(a, np.ndarray) else a for a in case.args]
    return (lambda *xs: case.fn(*xs, **case.kw)), args


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pattern_holds_every_nonzero_and_values_equal_the_dense_jacobian(case):
    fn, args = _call(case)
    inputs = tuple(args) if len(args) > 1 else args[0]
    wrt = case.wrt if len(case.wrt) > 1 else case.wrt[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rec = Recording(fn, args, case.wrt)
        found = detect(rec)
        J = jaccli.jacobian(fn, inputs, wrt=wrt)
        sparse = jaccli.sparse_jacobian(fn, inputs, wrt=wrt)
        for i, value in enumerate(rec.outputs):
            for j in range(len(case.wrt)):
                block = J[i] if rec.out_is_tuple else J
                block = block[j] if len(case.wrt) > 1 else block
                computed = sparse[i] if rec.out_is_tuple else sparse
                computed = computed[j] if len(case.wrt) > 1 else computed
                dense = np.asarray(block).reshape(np.size(value), -1)
                outside = (dense != 0) & np.isfinite(dense) & ~found.blocks[i][j].toarray()
                assert not outside.any(), f"output {i}, input {j}: {np.argwhere(outside)[:5]}"
                np.testing.assert_allclose(computed.toarray(), dense, rtol=1e-12, atol=1e-14, equal_nan=True,
                                           err_msg=f"output {i}, input {j}")


@pytest.mark.parametrize("case", [c for c in CASES if c.order >= 2], ids=str)
def test_hessian_pattern_holds_every_nonzero_of_the_dense_hessian(case):
    fn, args = _call(case)
    j0 = case.wrt[0]

    def scalar(x):
        full = list(args)
        full[j0] = x
        out = fn(*full)
        return sum(np.sum(np.linspace(0.3, 1.7, np.size(o)).reshape(np.shape(o)) * o)
                   for o in (out if isinstance(out, tuple) else (out,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        S = jaccli.sparsity(scalar, args[j0], hessian=True)
        H = np.asarray(jaccli.hessian(scalar, args[j0])).reshape(S.shape)
    pattern = S.pattern.toarray()
    assert (pattern == pattern.T).all()
    assert not ((H != 0) & np.isfinite(H) & ~pattern).any()


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("f,n", [(bratu, 49), (periodic, 36), (arrowhead, 12), (banded, 15)],
                         ids=["bratu", "periodic", "arrowhead", "banded"])
def test_sparse_jacobian_equals_the_dense_one(f, n, mode):
    x = np.random.default_rng(1).uniform(0.2, 0.8, n)
    J = jaccli.sparse_jacobian(f, x, mode=mode)
    assert sp.issparse(J) and J.format == "csr" and J.shape == (np.size(f(x)), n)
    np.testing.assert_allclose(J.toarray(), np.asarray(jaccli.jacobian(f, x)), rtol=1e-13, atol=1e-14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2 ** 31 - 1))
def test_random_compositions_sparse_equals_dense(program, seed):
    sx, sy, steps = program
    rng = np.random.default_rng(seed)
    f = build(steps)
    x, y = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
    J = jaccli.sparse_jacobian(f, (x, y), wrt=(0, 1))
    dense = jaccli.jacobian(f, (x, y), wrt=(0, 1))
    for j in range(2):
        np.testing.assert_allclose(J[j].toarray(), np.asarray(dense[j]).reshape(J[j].shape), rtol=1e-12, atol=1e-13)


def test_several_inputs_and_outputs_give_nested_blocks():
    def f(a, b):
        return a[1:] * b[:-1], np.sum(a * b) + b
    a, b = np.linspace(0.1, 0.9, 5), np.linspace(1.0, 2.0, 5)
    J = jaccli.sparse_jacobian(f, (a, b), wrt=(0, 1))
    dense = jaccli.jacobian(f, (a, b), wrt=(0, 1))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(J[i][j].toarray(), np.asarray(dense[i][j]), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("n", [6, 40])
def test_sparse_hessian_is_exactly_symmetric_and_equals_the_dense_one(n):
    def rosenbrock(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    x = np.linspace(-1.0, 1.5, n)
    H = jaccli.sparse_hessian(rosenbrock, x)
    assert (H != H.T).nnz == 0
    np.testing.assert_allclose(H.toarray(), np.asarray(jaccli.hessian(rosenbrock, x)), rtol=1e-13, atol=1e-12)
    assert jaccli.sparsity(rosenbrock, x, hessian=True, recovery="direct").colors == 3
    assert jaccli.sparsity(rosenbrock, x, hessian=True).colors == 2  # by substitution


def _costly_chain(x):
    # a tridiagonal Hessian whose sweeps are costly: each recorded value holds 1500 x (n - 1) elements
    a = np.linspace(0.5, 1.5, 1500)[:, None]
    return np.sum(np.sin(a * (x[1:] * x[:-1])) + a * x[:-1] ** 2)


def _cheap_chain(x):
    return np.sum(np.sin(x[1:] * x[:-1]) + x[:-1] ** 2)


def test_automatic_recovery_substitutes_only_where_the_sweeps_it_saves_are_worth_it():
    x = np.linspace(-1.0, 1.5, 1000)  # the acyclic search (~0.03 s) costs more than effort.AFFORDABLE_S
    cheap, costly = (jaccli.sparsity(f, x, hessian=True) for f in (_cheap_chain, _costly_chain))
    assert (cheap.recovery, cheap.colors) == ("direct", 3)
    assert (costly.recovery, costly.colors) == ("substitution", 2)
    for f in (_cheap_chain, _costly_chain):
        dense = np.asarray(jaccli.hessian(f, x))
        for recovery in ("auto", "direct", "substitution"):
            H = jaccli.sparse_hessian(f, x, recovery=recovery)
            assert (H != H.T).nnz == 0
            np.testing.assert_allclose(H.toarray(), dense, rtol=0, atol=1e-12 * np.abs(dense).max())
    with pytest.raises(ValueError, match="recovery should be one of"):
        jaccli.sparse_hessian(_cheap_chain, x, recovery="star")


def test_a_saved_substitution_plan_loads_back_and_recovers(tmp_path):
    x = np.linspace(-1.0, 1.5, 30)
    S = jaccli.sparsity(_cheap_chain, x, hessian=True, recovery="substitution")
    S.save(tmp_path / "P.npz")
    T = jaccli.Sparsity.load(tmp_path / "P.npz")
    assert (T.recovery, T.colors) == ("substitution", 2)
    dense = np.asarray(jaccli.hessian(_cheap_chain, x * 1.1))
    np.testing.assert_allclose(jaccli.sparse_hessian(_cheap_chain, x * 1.1, sparsity=T).toarray(), dense,
                               rtol=0, atol=1e-12 * np.abs(dense).max())


# ---------------------------------------------------------------------------------------------
# Reuse and the self-check
# ---------------------------------------------------------------------------------------------
def test_a_reused_pattern_gives_the_derivative_at_a_new_point():
    x = np.full(49, 0.3)
    S = jaccli.sparsity(bratu, x)
    y = np.linspace(0.1, 0.9, 49)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        J = jaccli.sparse_jacobian(bratu, y, sparsity=S)
    np.testing.assert_allclose(J.toarray(), np.asarray(jaccli.jacobian(bratu, y)), rtol=1e-14)


def test_a_changed_control_path_is_detected_never_silently_wrong():
    def f(x):
        if x[0] > 0:
            return x[1:] * x[:-1]
        return np.cumsum(x)[1:]
    S = jaccli.sparsity(f, np.ones(5))
    assert S.compared  # f compared a traced value: the pattern holds for the path it took
    y = -np.ones(5)
    with pytest.warns(SparsityChangedWarning, match="detected again"):
        J = jaccli.sparse_jacobian(f, y, sparsity=S)
    np.testing.assert_allclose(J.toarray(), np.asarray(jaccli.jacobian(f, y)))


def test_a_pattern_for_other_shapes_is_refused():
    S = jaccli.sparsity(bratu, np.ones(16))
    with pytest.raises(UsageError):
        jaccli.sparse_jacobian(bratu, np.ones(25), sparsity=S)
    with pytest.raises(UsageError):
        jaccli.sparse_hessian(lambda x: np.sum(bratu(x)), np.ones(16), sparsity=S)


def test_record_once_keeps_the_pattern_and_plan():
    from jaccli.api import sparse as module
    calls = []
    original = module._detected
    module_detected = lambda *a, **k: calls.append(1) or original(*a, **k)  # noqa: E731
    rf = jaccli.record_once(bratu)
    try:
        module._detected = module_detected
        for k in range(3):
            x = np.linspace(0.1, 0.9, 36) + 0.01 * k
            J = jaccli.sparse_jacobian(rf, x)
            np.testing.assert_allclose(J.toarray(), np.asarray(jaccli.jacobian(bratu, x)), rtol=1e-14)
    finally:
        module._detected = original
    assert len(calls) == 1


def test_saved_patterns_load_back_and_other_files_are_refused(tmp_path):
    x = np.linspace(0.1, 0.9, 25)
    S = jaccli.sparsity(periodic, x)
    S.save(tmp_path / "P.npz")
    T = jaccli.Sparsity.load(tmp_path / "P.npz")
    assert (T.pattern != S.pattern).nnz == 0 and (T.mode, T.colors, T.fingerprint) == (S.mode, S.colors, S.fingerprint)
    np.testing.assert_allclose(jaccli.sparse_jacobian(periodic, x, sparsity=T).toarray(),
                               np.asarray(jaccli.jacobian(periodic, x)))
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "other.npz", a=x)
    for bad in ("x.npy", "other.npz"):
        with pytest.raises(UsageError):
            jaccli.Sparsity.load(tmp_path / bad)


def test_self_check_passes_on_the_result_and_finds_a_missing_entry():
    x = np.linspace(0.1, 0.9, 36)
    J = jaccli.sparse_jacobian(bratu, x)
    assert jaccli.check_sparse(bratu, x, J).passed
    broken = J.tolil()
    broken[4, 30] = 1.0  # an entry outside the pattern
    report = jaccli.check_sparse(bratu, x, broken.tocsr())
    assert not report.passed and 4 in report.rows and 30 in report.cols


def test_sparse_hessian_self_check():
    f = separable_sum
    x = np.linspace(0.1, 0.9, 10)
    assert jaccli.check_sparse(f, x, jaccli.sparse_hessian(f, x), hessian=True).passed


@pytest.mark.parametrize("call", [lambda f, x: jaccli.sparse_jacobian(f, x), lambda f, x: jaccli.sparsity(f, x),
                                  lambda f, x: jaccli.sparse_hessian(lambda z: np.sum(f(z)), x)])
def test_without_scipy_the_library_says_how_to_install_it(monkeypatch, call):
    for name in [m for m in sys.modules if m == "scipy" or m.startswith("scipy.")] + ["scipy"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(UsageError, match=r"^sparse results need scipy: pip install 'jaccli\[sparse\]'$"):
        call(periodic, np.linspace(0.1, 0.9, 6))
