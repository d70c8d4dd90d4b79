"""Lazy Jacobian/Hessian objects: numpy-exact indexing, cost (rows, columns, sweeps), caching, dtypes.

The property tests draw random shapes (ranks 0..3, small sides), a random smooth function built
from elementwise operations, broadcasting and matmul, and random NumPy indices. The cost a
request must have is counted with numpy alone: the output (row) and input (column) flat
indices that the selected entries of ``J`` come from.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from tests.helpers import central_diff

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAME = dict(rtol=1e-12, atol=1e-13)  # one Jacobian computed in different blocks
FD = dict(rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------
shapes = npst.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)


def make_function(kind: str, out_shape: tuple, in_shape: tuple, seed: int):
    """A smooth function from in_shape to out_shape with a dense, value-dependent Jacobian."""
    rng = np.random.default_rng(seed)
    M, N = math.prod(out_shape), math.prod(in_shape)
    W = rng.normal(size=(M, N)) / math.sqrt(N)
    c = rng.uniform(0.5, 1.5, size=M)

    if kind == "matmul":
        def f(x):
            u = W @ np.reshape(x, (N,))
            return np.reshape(np.tanh(u) * c + 0.1 * u ** 2, out_shape)
    elif kind == "broadcast":
        def f(x):
            v = np.reshape(x, (1, N))
            return np.reshape((np.sin(v * W) * W).sum(axis=1) + c * np.exp(0.2 * v).sum(), out_shape)
    else:  # elementwise, then mixed
        def f(x):
            t = np.reshape(x, (N,))
            z = np.exp(0.3 * t) * np.cos(t) + t ** 2
            return np.reshape(W @ z + c * (t[0] * t[-1]), out_shape)
    return f


@st.composite
def problems(draw):
    out_shape, in_shape = draw(shapes), draw(shapes)
    kind = draw(st.sampled_from(["matmul", "broadcast", "elementwise"]))
    seed = draw(st.integers(0, 2**31))
    f = make_function(kind, out_shape, in_shape, seed)
    x = np.random.default_rng(seed + 1).uniform(-1, 1, size=in_shape)
    return f, x, out_shape, in_shape


@st.composite
def axis_component(draw, n: int, advanced: bool):
    """One index component for an axis of length n."""
    kinds = ["int", "npint", "slice"] + (["list", "intarray", "mask"] if advanced else [])
    kind = draw(st.sampled_from(kinds))
    if kind in ("int", "npint"):
        k = draw(st.integers(-n, n - 1))
        return np.int64(k) if kind == "npint" else k
    if kind == "slice":
        bound = st.none() | st.integers(-n - 2, n + 2)
        step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))
        return slice(draw(bound), draw(bound), step)
    if kind == "mask":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    ints = draw(st.lists(st.integers(-n, n - 1), min_size=0 if kind == "list" else 1, max_size=4))
    return ints if kind == "list" else np.array(ints, dtype=np.intp)


@st.composite
def numpy_indices(draw, shape: tuple):
    """Any NumPy index on an array of this shape: basic, mixed, integer arrays, boolean masks."""
    kind = draw(st.sampled_from(["basic", "mixed", "mixed", "intarrays", "fullmask"]))
    if kind == "basic":
        return draw(npst.basic_indices(shape, allow_ellipsis=True))
    if kind == "fullmask":
        return np.array(draw(st.lists(st.booleans(), min_size=math.prod(shape), max_size=math.prod(shape))),
                        dtype=bool).reshape(shape)
    if kind == "intarrays" and shape:
        result = npst.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)
        return draw(npst.integer_array_indices(shape, result_shape=result))
    # mixed: components for some leading and (after an Ellipsis) some trailing axes,
    # at most one of them advanced
    nd = len(shape)
    n_lead = draw(st.integers(0, nd))
    ellipsis = draw(st.booleans())
    n_tail = draw(st.integers(0, nd - n_lead)) if ellipsis else 0
    axes = list(range(n_lead)) + list(range(nd - n_tail, nd))
    adv_at = draw(st.integers(-1, len(axes) - 1))
    comps = [draw(axis_component(shape[a], k == adv_at)) for k, a in enumerate(axes)]
    if ellipsis:
        comps.insert(n_lead, Ellipsis)
    if len(comps) == 1 and draw(st.booleans()):
        return comps[0]
    return tuple(comps)


def touched(shape: tuple, split: int, idx) -> tuple[int, int]:
    """(rows, cols): how many distinct output / input flat indices the selected entries use."""
    out_shape, in_shape = shape[:split], shape[split:]
    rows = np.broadcast_to(np.arange(math.prod(out_shape)).reshape(out_shape + (1,) * len(in_shape)), shape)
    cols = np.broadcast_to(np.arange(math.prod(in_shape)).reshape((1,) * len(out_shape) + in_shape), shape)
    return np.unique(rows[idx]).size, np.unique(cols[idx]).size


def assert_same_result(got, expected, **tol):
    # Scalar vs 0-d array (numpy gives a 0-d array when an Ellipsis is present) is checked
    # separately in test_scalar_or_0d_array_follows_numpy, so that it does not hide other bugs.
    assert np.shape(got) == np.shape(expected)
    assert np.result_type(got) == np.result_type(expected)
    assert_allclose(got, expected, **(tol or SAME))


# ---------------------------------------------------------------------------
# Indexing is numpy-exact, and only the touched rows (or columns) are computed
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=st.data(), problem=problems())
def test_index_reverse_evaluates_exactly_the_touched_rows(data, problem):
    f, x, out_shape, in_shape = problem
    J = jaccli.jacobian(f, x, mode="reverse")
    assert J.shape == out_shape + in_shape and J.sweeps == 0
    idx = data.draw(numpy_indices(J.shape), label="idx")
    dense = np.asarray(jaccli.jacobian(f, x, mode="reverse"))
    assert_allclose(dense, central_diff(f, x), **FD)

    got = J[idx]
    assert_same_result(got, dense[idx])
    rows, _ = touched(J.shape, len(out_shape), idx)
    assert J.rows_evaluated == rows
    assert J.stats["seeds"] == rows
    assert J.cols_evaluated == 0

    sweeps = J.sweeps
    assert_same_result(J[idx], got, rtol=0, atol=0)
    assert J.sweeps == sweeps and J.rows_evaluated == rows
    # exactly the full matrix's entries, from the same cache
    assert_array_equal(np.asarray(J)[idx], got)


@SETTINGS
@given(data=st.data(), problem=problems())
def test_index_forward_evaluates_exactly_the_touched_columns(data, problem):
    f, x, out_shape, in_shape = problem
    J = jaccli.jacobian(f, x, mode="forward")
    idx = data.draw(numpy_indices(J.shape), label="idx")
    dense = np.asarray(jaccli.jacobian(f, x, mode="reverse"))

    got = J[idx]
    assert_same_result(got, dense[idx])
    _, cols = touched(J.shape, len(out_shape), idx)
    assert J.cols_evaluated == cols
    assert J.rows_evaluated == 0
    sweeps = J.sweeps
    J[idx]
    assert J.sweeps == sweeps
    assert_array_equal(np.asarray(J)[idx], got)


@SETTINGS
@given(data=st.data(), problem=problems())
def test_index_auto_takes_the_cheaper_direction(data, problem):
    f, x, out_shape, in_shape = problem
    J = jaccli.jacobian(f, x)
    idx = data.draw(numpy_indices(J.shape), label="idx")
    dense = np.asarray(jaccli.jacobian(f, x, mode="forward"))
    assert_same_result(J[idx], dense[idx])
    rows, cols = touched(J.shape, len(out_shape), idx)
    assert J.rows_evaluated + J.cols_evaluated == min(rows, cols)


@SETTINGS
@given(data=st.data(), problem=problems())
def test_matrix_view_indexes_the_flattened_jacobian_lazily(data, problem):
    f, x, out_shape, in_shape = problem
    J = jaccli.jacobian(f, x, mode="reverse")
    M, N = math.prod(out_shape), math.prod(in_shape)
    assert J.matrix.shape == (M, N)
    idx = data.draw(numpy_indices((M, N)), label="idx")
    dense = np.asarray(jaccli.jacobian(f, x, mode="reverse")).reshape(M, N)
    assert_same_result(J.matrix[idx], dense[idx])
    rows, _ = touched((M, N), 1, idx)
    assert J.rows_evaluated == rows
    # the matrix view and J share one cache
    sweeps = J.sweeps
    J.matrix[idx]
    assert J.sweeps == sweeps
    assert_array_equal(np.asarray(J.matrix), np.asarray(J).reshape(M, N))


@SETTINGS
@given(data=st.data(), problem=problems())
def test_overlapping_requests_compute_each_row_once(data, problem):
    f, x, out_shape, in_shape = problem
    J = jaccli.jacobian(f, x, mode="reverse")
    split = len(out_shape)
    rows_seen: set = set()
    grid = np.broadcast_to(np.arange(math.prod(out_shape)).reshape(out_shape + (1,) * len(in_shape)), J.shape)
    dense = np.asarray(jaccli.jacobian(f, x, mode="reverse"))
    for k in range(3):
        idx = data.draw(numpy_indices(J.shape), label=f"idx{k}")
        assert_same_result(J[idx], dense[idx])
        rows_seen |= set(np.unique(grid[idx]).tolist())
        assert J.rows_evaluated == len(rows_seen) == J.stats["seeds"]
    assert touched(J.shape, split, ...)[0] == math.prod(out_shape)


@pytest.mark.parametrize("idx", [(1, 2), (-1, 0), (np.int64(1), 2), (1, ...), (Ellipsis, 3),
                                 (Ellipsis, 1, 2), Ellipsis, (1, 2, Ellipsis), ()])
def test_scalar_or_0d_array_follows_numpy(idx):
    J = jaccli.jacobian(tall, X6)
    expected = np.asarray(jaccli.jacobian(tall, X6))[idx]
    got = J[idx]
    assert type(got) is type(expected)
    assert np.shape(got) == np.shape(expected)
    assert_allclose(got, expected, **SAME)


def test_scalar_or_0d_array_follows_numpy_for_0d_jacobians():
    J = jaccli.jacobian(lambda x: x * x, np.array(3.0))
    for idx in ((), Ellipsis):
        expected = np.asarray(6.0)[idx]
        assert type(J[idx]) is type(expected) and J[idx] == expected


# ---------------------------------------------------------------------------
# Cost on fixed problems
# ---------------------------------------------------------------------------
W_TALL = np.random.default_rng(7).normal(size=(10, 6))


def tall(x):
    return np.sin(W_TALL @ x) * x.sum()


X6 = np.linspace(-1.0, 1.0, 6)


def test_rows_1_to_4_evaluate_three_rows_and_repeat_evaluates_none():
    J = jaccli.jacobian(tall, X6)
    J[1:4]
    assert (J.rows_evaluated, J.cols_evaluated) == (3, 0)
    sweeps = J.sweeps
    J[2]
    J[1:4, 2:5]
    assert J.rows_evaluated == 3 and J.sweeps == sweeps


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 1000])
def test_chunk_sizes_give_identical_results_and_expected_sweeps(chunk_size):
    ref = np.asarray(jaccli.jacobian(tall, X6, mode="reverse"))
    assert_allclose(ref, central_diff(tall, X6), **FD)
    J = jaccli.jacobian(tall, X6, mode="reverse", chunk_size=chunk_size)
    assert_allclose(np.asarray(J), ref, **SAME)
    assert J.sweeps == math.ceil(10 / chunk_size)
    assert J.rows_evaluated == 10

    J = jaccli.jacobian(tall, X6, mode="reverse", chunk_size=chunk_size)
    J[1:4]
    assert J.sweeps == math.ceil(3 / chunk_size) and J.rows_evaluated == 3
    J[:]
    assert J.sweeps == math.ceil(3 / chunk_size) + math.ceil(7 / chunk_size)

    J = jaccli.jacobian(tall, X6, mode="forward", chunk_size=chunk_size)
    assert_allclose(np.asarray(J), ref, **SAME)
    assert J.sweeps == math.ceil(6 / chunk_size) and J.cols_evaluated == 6


def test_auto_mode_uses_forward_for_a_tall_request_and_reverse_otherwise():
    J = jaccli.jacobian(tall, X6)
    ref = np.asarray(jaccli.jacobian(tall, X6, mode="reverse"))
    assert_allclose(J[:, 1], ref[:, 1], **SAME)
    assert (J.rows_evaluated, J.cols_evaluated, J.sweeps) == (0, 1, 1)
    assert_allclose(J[2:9, 1], ref[2:9, 1], **SAME)
    assert J.sweeps == 1  # that column is known already
    assert_allclose(J[4], ref[4], **SAME)
    assert (J.rows_evaluated, J.cols_evaluated, J.sweeps) == (1, 1, 2)
    assert_allclose(J[0:8, [0, 3]], ref[0:8, [0, 3]], **SAME)
    assert (J.rows_evaluated, J.cols_evaluated, J.sweeps) == (1, 3, 3)


def test_full_evaluation_runs_in_chunks():
    J = jaccli.jacobian(tall, X6, mode="reverse", chunk_size=3)
    np.asarray(J)
    assert J.sweeps == 4 and J.rows_evaluated == 10


# ---------------------------------------------------------------------------
# Hessians
# ---------------------------------------------------------------------------
B5 = np.random.default_rng(11).normal(size=(4, 5))
A5 = np.random.default_rng(12).normal(size=(5, 5))
X5 = np.linspace(-0.5, 0.5, 5)


def quartic(x):
    return np.exp(B5 @ x).sum() + 0.5 * x @ A5 @ x


def quartic_hessian(x):
    return B5.T @ np.diag(np.exp(B5 @ x)) @ B5 + 0.5 * (A5 + A5.T)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_hessian_row_is_one_hvp_and_column_follows_by_symmetry(mode):
    H = jaccli.hessian(quartic, X5, mode=mode)
    assert (H.rows_evaluated, H.sweeps) == (0, 0)
    exact = quartic_hessian(X5)
    assert_allclose(H[2], exact[2], **SAME)
    assert (H.rows_evaluated, H.sweeps) == (1, 1)
    assert_allclose(H[:, 2], exact[:, 2], **SAME)
    assert (H.rows_evaluated, H.sweeps) == (1, 1)
    assert_array_equal(H[:, 2], H[2])


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_hessian_column_request_alone_is_one_hvp(mode):
    H = jaccli.hessian(quartic, X5, mode=mode)
    assert_allclose(H[:, 2], quartic_hessian(X5)[:, 2], **SAME)
    assert (H.rows_evaluated, H.sweeps) == (1, 1)
    H[1:3, 1:3]
    assert H.rows_evaluated == 2


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_full_hessian_equals_closed_form_and_is_symmetric(mode):
    H = np.asarray(jaccli.hessian(quartic, X5, mode=mode))
    assert_allclose(H, quartic_hessian(X5), rtol=1e-12, atol=1e-12)
    assert_allclose(H, H.T, rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------
W_B = np.random.default_rng(3).normal(size=(5, 3))
C_B = np.random.default_rng(4).normal(size=5)


def per_sample(X):
    return np.tanh(X @ W_B.T) * C_B


def per_sample_jacobians(X):
    return np.stack([np.diag(C_B * (1 - np.tanh(W_B @ x) ** 2)) @ W_B for x in X])


def test_batch_column_of_outputs_is_one_feature_for_all_samples():
    X = np.random.default_rng(5).normal(size=(4, 3))
    J = jaccli.jacobian(per_sample, X, batch_axis=0)
    assert J.shape == (4, 5, 3)
    exact = per_sample_jacobians(X)
    assert_allclose(J[:, 1], exact[:, 1], **SAME)
    assert (J.rows_evaluated, J.sweeps) == (1, 1)
    assert_allclose(J[2, 1], exact[2, 1], **SAME)
    assert J.sweeps == 1
    assert_allclose(J[:, :, 0], exact[:, :, 0], **SAME)  # few columns, many rows: forward
    assert (J.rows_evaluated, J.cols_evaluated, J.sweeps) == (1, 1, 2)
    assert_allclose(np.asarray(J), exact, **SAME)
    assert J.matrix.shape == (4, 5, 3)


def test_batched_hessian_rows_are_lazy():
    X = np.random.default_rng(6).normal(size=(4, 3))
    H = jaccli.hessian(lambda X: (np.sin(X) * X).sum(1), X, batch_axis=0)
    assert H.shape == (4, 3, 3)
    d2 = 2 * np.cos(X) - X * np.sin(X)
    assert_allclose(H[:, 1], np.stack([np.diag(r) for r in d2])[:, 1], **SAME)
    assert H.rows_evaluated == 1 and H.sweeps == 1


# ---------------------------------------------------------------------------
# What np.asarray / np.array give, and dtypes
# ---------------------------------------------------------------------------
def test_asarray_is_read_only_and_array_is_a_writable_copy():
    J = jaccli.jacobian(tall, X6)
    view = np.asarray(J)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0] = 1.0
    copy = np.array(J)
    assert copy.flags.writeable
    before = J[0, 0]
    copy[0, 0] = before + 1.0
    assert J[0, 0] == before
    row = J[0]
    row[:] = 0.0  # an index result is the caller's own array
    assert J[0, 0] == before


# ---------------------------------------------------------------------------
# The array API of the evaluated block
# ---------------------------------------------------------------------------
V6 = np.linspace(0.5, 2.0, 6)
# Each is applied to the lazy block and to the dense array of a separate call: results must agree
# in type, shape, dtype and value.
ARRAY_OPS = {
    "abs": abs, "neg": lambda A: -A, "pos": lambda A: +A, "T": lambda A: A.T, "mT": lambda A: A.mT,
    "real": lambda A: A.real, "imag": lambda A: A.imag, "flat": lambda A: list(A.flat),
    "sum": lambda A: A.sum(), "sum0": lambda A: A.sum(axis=0), "max": lambda A: A.max(),
    "min1": lambda A: A.min(axis=-1), "mean": lambda A: A.mean(), "std": lambda A: A.std(),
    "var": lambda A: A.var(ddof=1), "prod": lambda A: A.prod(), "argmax": lambda A: A.argmax(),
    "argmin": lambda A: A.argmin(axis=0), "argsort": lambda A: A.argsort(axis=0),
    "reshape": lambda A: A.reshape(-1), "ravel": lambda A: A.ravel(), "flatten": lambda A: A.flatten(),
    "copy": lambda A: A.copy(), "astype": lambda A: A.astype(np.float32), "tolist": lambda A: A.tolist(),
    "item": lambda A: A.item(3), "transpose": lambda A: A.transpose(), "swapaxes": lambda A: A.swapaxes(0, -1),
    "diagonal": lambda A: A.diagonal(), "trace": lambda A: A.trace(), "clip": lambda A: A.clip(-0.5, 0.5),
    "cumsum": lambda A: A.cumsum(), "round": lambda A: A.round(2), "take": lambda A: A.take([0, 2]),
    "nonzero": lambda A: A.nonzero(), "all": lambda A: A.all(), "any": lambda A: A.any(axis=0),
    "squeeze": lambda A: A.squeeze(), "repeat": lambda A: A.repeat(2), "conj": lambda A: A.conj(),
    "dot": lambda A: A.dot(V6) if A.shape[-1] == 6 else A.dot(np.ones(A.shape[-1])),
    "rpow": lambda A: 2.0 ** A, "rmod": lambda A: 1.0 % A, "rfloordiv": lambda A: 3.0 // A,
    "divmod": lambda A: divmod(A, 0.3), "rdivmod": lambda A: divmod(1.0, A), "mod": lambda A: A % 0.3,
    "in": lambda A: A[(0,) * A.ndim] in A, "not_in": lambda A: 1e9 in A, "tobytes": lambda A: A.tobytes(),
    "nbytes": lambda A: (A.nbytes, A.itemsize),
}
BLOCKS = {
    "jacobian": lambda: jaccli.jacobian(tall, X6),
    "batched": lambda: jaccli.jacobian(lambda X: np.tanh(X) * X.sum(axis=1, keepdims=True) ** 2,
                                       np.linspace(-1.0, 1.5, 12).reshape(3, 4), batch_axis=0),
    "hessian": lambda: jaccli.hessian(lambda x: (np.sin(x) * x.sum() ** 2).sum(), V6),
}


def _same_result(got, expected):
    assert type(got) is type(expected)
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _same_result(g, e)
    elif isinstance(expected, np.ndarray):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert_allclose(got, expected, **SAME)
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-13) if isinstance(expected, float) else got == expected


@pytest.mark.parametrize("block", sorted(BLOCKS))
@pytest.mark.parametrize("op", sorted(ARRAY_OPS))
def test_array_methods_and_operators_give_what_the_evaluated_array_gives(op, block):
    J = BLOCKS[block]()
    expected = ARRAY_OPS[op](np.array(BLOCKS[block]()))  # a separate call's dense array
    _same_result(ARRAY_OPS[op](J), expected)


def test_array_methods_evaluate_the_block_once_and_probes_compute_nothing():
    J = jaccli.jacobian(tall, X6)
    assert not hasattr(J, "no_such_attribute") and (J.nbytes, J.itemsize) == (480, 8)
    assert f"{J}".startswith("Jacobian(shape=(10, 6)")  # shows the lazy object, computes nothing
    assert (J.rows_evaluated, J.cols_evaluated, J.sweeps) == (0, 0, 0)
    J.sum()
    sweeps = J.sweeps
    assert sweeps > 0 and J.cols_evaluated == 6  # (10 x 6: by columns)
    J.T, J.max(), J.reshape(60), J.copy(), abs(J), J.tolist(), J.mean(axis=0)
    assert J.sweeps == sweeps  # everything comes from the cache
    K = jaccli.jacobian(tall, X6, mode="reverse")
    K[2:5]
    assert_allclose(K.max(), np.max(J), **SAME)
    assert K.rows_evaluated == 10 and K.stats["seeds"] == 10  # rows 2..4 were not computed again


def test_array_views_of_a_lazy_block_are_read_only_and_copies_are_writable():
    for mode in ("reverse", "forward"):  # (the cache is stored by rows, or by columns)
        J = jaccli.jacobian(tall, X6, mode=mode)
        before = np.array(J)
        cache = np.asarray(J)
        views = 0
        for got in (J.T, J.reshape(60), J.ravel(), J.transpose(), J.view(), J.squeeze(), J.diagonal()):
            if np.shares_memory(got, cache):  # a view where NumPy gives one: read-only like np.asarray(J)
                views += 1
                with pytest.raises(ValueError, match="read-only"):
                    got[0] = 1.0
            else:
                got[0] = 1.0
        assert views >= 5
        for own in (J.copy(), J.astype(np.float64), J.flatten(), abs(J), J.round(3)):
            assert own.flags.writeable and not np.shares_memory(own, cache)
            own[0] = 1.0
        assert_array_equal(np.asarray(J), before)


@pytest.mark.parametrize("kind", ["jacobian", "hessian", "batched", "0-d"])
@pytest.mark.parametrize("hand_out", [np.asarray, lambda J: J.T, lambda J: J.view(), lambda J: J.ravel(),
                                      lambda J: J.reshape(-1), lambda J: np.asarray(J).T, lambda J: np.asarray(J.matrix)],
                         ids=["asarray", "T", "view", "ravel", "reshape", "asarray.T", "matrix"])
def test_no_view_handed_out_can_be_made_writable_to_change_the_cache(kind, hand_out):
    if kind == "hessian":
        J = jaccli.hessian(lambda v: (v ** 3).sum() * v[0], np.arange(1.0, 4.0))
    elif kind == "batched":
        J = jaccli.jacobian(lambda X: np.sin(X) * 2, np.ones((2, 3)), batch_axis=0)
    elif kind == "0-d":
        J = jaccli.jacobian(lambda s: s ** 2, np.array(3.0))
    else:
        J = jaccli.jacobian(tall, X6)
    before = np.array(J)
    assert np.shares_memory(np.asarray(J), np.asarray(J))  # still the cache itself, no copy
    view = hand_out(J)
    if np.shares_memory(view, np.asarray(J)):
        with pytest.raises(ValueError, match="WRITEABLE"):
            view.setflags(write=True)
    else:  # (ravel of a cache stored by columns: a copy, the caller's own)
        view.setflags(write=True)
        view[...] = 99.0
    assert_array_equal(np.asarray(J), before)


@pytest.mark.parametrize("mutate", [lambda J: J.sort(), lambda J: J.fill(0.0), lambda J: J.resize(60),
                                    lambda J: J.put([0], [1.0]), lambda J: J.partition(2), lambda J: J.setflags(write=True),
                                    lambda J: J.__setitem__((0, 0), 1.0)])
def test_mutating_array_methods_are_refused_and_say_what_to_do(mutate):
    J = jaccli.jacobian(tall, X6)
    before = np.array(J)
    with pytest.raises(TypeError):
        mutate(J)
    assert_array_equal(np.asarray(J), before)


def test_numeric_conversions_of_a_0d_block():
    J0 = jaccli.jacobian(lambda s: s ** 2, np.array(3.0))  # 6.0
    assert float(J0) == 6.0 and type(float(J0)) is float
    assert int(J0) == 6 and type(int(J0)) is int
    assert complex(J0) == 6 + 0j
    assert round(J0) == 6 and type(round(J0)) is int and round(J0, 1) == 6.0
    assert bool(J0) and not bool(jaccli.jacobian(lambda s: s * 0.0, np.array(3.0)))
    assert f"{J0:.2f}" == "6.00" and f"{J0:>5}" == format(np.asarray(6.0), ">5")
    J = jaccli.jacobian(tall, X6)
    with pytest.raises(ValueError, match="truth value of an array with more than one element is ambiguous"):
        bool(J)
    with pytest.raises(TypeError):
        round(J)
    with pytest.raises(TypeError):
        float(J)


def test_float32_input_reverse_gives_float32_forward_gives_output_dtype():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    J = jaccli.jacobian(lambda x: (x * x).astype(np.float64), x, mode="reverse")
    assert J.dtype == np.float32
    assert J[1].dtype == np.float32 and np.asarray(J).dtype == np.float32
    assert_allclose(np.asarray(J), np.diag([2.0, 4.0, 6.0]))
    J = jaccli.jacobian(lambda x: (x * x).astype(np.float64), x, mode="forward")
    assert J.dtype == np.float64
    assert J[1].dtype == np.float64 and np.asarray(J).dtype == np.float64
    J = jaccli.jacobian(lambda x: x * x, x, mode="forward")
    assert J.dtype == np.float32 and np.asarray(J).dtype == np.float32
    assert type(J[1, 1]) is np.float32


def test_integer_inputs_are_promoted_to_float64():
    x = np.array([1, 2, 3])
    for mode in ("reverse", "forward", "auto"):
        J = jaccli.jacobian(lambda x: x ** 2, x, mode=mode)
        assert J.dtype == np.float64
        assert_array_equal(np.asarray(J), np.diag([2.0, 4.0, 6.0]))
    H = jaccli.hessian(lambda x: (x ** 3).sum(), x)
    assert np.asarray(H).dtype == np.float64
    assert_array_equal(np.asarray(H), np.diag([6.0, 12.0, 18.0]))


# ---------------------------------------------------------------------------
# More properties: batches, Hessians, blocks sharing one cache
# ---------------------------------------------------------------------------
feature_shapes = npst.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)


def batched_problem(B: int, out_feat: tuple, in_feat: tuple, seed: int):
    """(f, X, exact): f maps each of B samples on its own, exact is its per-sample Jacobian."""
    rng = np.random.default_rng(seed)
    M, N = math.prod(out_feat), math.prod(in_feat)
    W = rng.normal(size=(M, N))

    def f(X):
        U = np.reshape(X, (B, N)) @ W.T
        return np.reshape(np.tanh(U) + 0.1 * U ** 2, (B,) + out_feat)

    X = rng.uniform(-1, 1, size=(B,) + in_feat)
    U = np.reshape(X, (B, N)) @ W.T
    exact = np.stack([(1 - np.tanh(u) ** 2 + 0.2 * u)[:, None] * W for u in U]).reshape((B,) + out_feat + in_feat)
    return f, X, exact


def hessian_problem(n: int, seed: int):
    """(f, x, exact): a scalar f of x in R^n and its Hessian in closed form."""
    rng = np.random.default_rng(seed)
    B, A = rng.normal(size=(3, n)), rng.normal(size=(n, n))
    x = rng.uniform(-0.5, 0.5, size=n)

    def f(x):
        return np.exp(B @ x).sum() + 0.5 * x @ A @ x

    return f, x, B.T @ np.diag(np.exp(B @ x)) @ B + 0.5 * (A + A.T)


@SETTINGS
@given(data=st.data(), B=st.integers(1, 3), out_feat=feature_shapes, in_feat=feature_shapes,
       seed=st.integers(0, 2**31))
def test_batched_index_evaluates_the_touched_output_features_for_all_samples(data, B, out_feat, in_feat, seed):
    f, X, exact = batched_problem(B, out_feat, in_feat, seed)
    J = jaccli.jacobian(f, X, batch_axis=0, mode="reverse")
    assert J.shape == (B,) + out_feat + in_feat
    idx = data.draw(numpy_indices(J.shape), label="idx")
    assert_same_result(J[idx], exact[idx], rtol=1e-12, atol=1e-12)
    feat = np.broadcast_to(np.arange(math.prod(out_feat)).reshape((1,) + out_feat + (1,) * len(in_feat)), J.shape)
    assert J.rows_evaluated == np.unique(feat[idx]).size


@SETTINGS
@given(data=st.data(), n=st.integers(1, 5), seed=st.integers(0, 2**31), mode=st.sampled_from(["forward", "reverse"]))
def test_hessian_index_uses_symmetry_and_evaluates_the_fewest_hvps(data, n, seed, mode):
    f, x, exact = hessian_problem(n, seed)
    H = jaccli.hessian(f, x, mode=mode)
    idx = data.draw(numpy_indices(H.shape), label="idx")
    assert_same_result(H[idx], exact[idx], rtol=1e-12, atol=1e-12)
    rows, cols = touched(H.shape, 1, idx)
    assert H.rows_evaluated == min(rows, cols)
    full = np.asarray(H)
    assert H.stats["seeds"] == n  # the whole of H after idx: only the rows idx did not compute
    assert_allclose(full, exact, rtol=1e-12, atol=1e-12)
    assert_allclose(full, full.T, rtol=1e-13, atol=1e-13)


def test_blocks_of_one_call_share_sweeps():
    x, y = np.linspace(0.1, 0.5, 4), np.linspace(-1.0, 1.0, 3)

    def f(x, y):
        return np.outer(np.sin(x), y).ravel(), x.sum() * y

    J = jaccli.jacobian(f, (x, y), mode="reverse")
    J[0][0][5]
    assert J[0][0].sweeps == 1
    J[0][1][5]  # row 5 of output 0 w.r.t. y came with the same reverse sweep
    assert J[0][1].sweeps == 1 and J[0][1].rows_evaluated == 1
    J = jaccli.jacobian(f, (x, y), mode="forward")
    J[0][1][:, 2]
    J[1][1][:, 2]  # column 2 of y for output 1 came with the same forward sweep
    assert J[1][1].sweeps == 1 and J[1][1].cols_evaluated == 1
    ref = jaccli.jacobian(f, (x, y), mode="reverse")
    for i in range(2):
        for j in range(2):
            assert_allclose(np.asarray(J[i][j]), np.asarray(ref[i][j]), **SAME)


def test_hessian_blocks_share_hvps_across_inputs():
    x, y = np.array([0.3, -0.2, 0.5]), np.array([0.7, 1.1])

    def f(x, y):
        return (np.sin(x) ** 2).sum() * (y ** 3).sum()

    H = jaccli.hessian(f, (x, y))
    sx, sy = (np.sin(x) ** 2).sum(), (y ** 3).sum()
    hxy = np.outer(2 * np.sin(x) * np.cos(x), 3 * y ** 2)
    assert_allclose(H[0][1][2], hxy[2], **SAME)
    sweeps = H[0][1].sweeps
    assert sweeps == 1
    assert_allclose(H[0][0][2], np.diag(2 * np.cos(2 * x) * sy)[2], **SAME)  # same HVP
    assert_allclose(H[1][0][:, 2], hxy[2], **SAME)  # by symmetry
    assert H[0][0].sweeps == sweeps
    assert_allclose(np.asarray(H[1][1]), np.diag(6 * y) * sx, **SAME)


@pytest.mark.parametrize("idx", [slice(0, 0), (slice(None), slice(0, 0)), (slice(None), Ellipsis, slice(3, 1))])
def test_empty_selection_on_a_batched_jacobian_evaluates_nothing(idx):
    J = jaccli.jacobian(lambda X: X ** 2, np.ones((3, 4)), batch_axis=0, mode="reverse")
    assert J[idx].size == 0 and J[idx].shape == np.zeros(J.shape)[idx].shape
    assert (J.rows_evaluated, J.sweeps) == (0, 0)


def test_full_hessian_is_exactly_symmetric_including_cross_blocks():
    # Every row of H is a separate Hessian-vector product; rounding differs between H[i, j] and
    # H[j, i] unless the full matrix is symmetrised, which the lazy Hessian does once it is known.
    x = np.linspace(0.1, 1.0, 7)
    y = np.linspace(1.0, 2.0, 4)
    f = lambda x, y: np.sum(np.sin(np.outer(x, y)) * np.exp(0.3 * x)[:, None])  # noqa: E731
    H = jaccli.hessian(f, (x, y))
    Hxx = np.asarray(H[0][0])
    np.testing.assert_array_equal(Hxx, Hxx.T)
    np.testing.assert_array_equal(np.asarray(H[0][1]), np.asarray(H[1][0]).T)
    partial = jaccli.hessian(f, (x, y))[0][0]
    np.testing.assert_allclose(partial[2], Hxx[2], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("requests", [
    [(0, 3)], [(slice(0, 2),), (slice(2, 5),)], [(3,), (slice(1, 4),), (0, 4)], [(slice(None, None, 2),), (1,)],
], ids=["one-entry", "two-chunks", "overlapping", "strided"])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_hessian_entries_handed_out_never_change_and_the_whole_is_exactly_symmetric(requests, mode):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 5))
    f = lambda x: np.log(np.exp(a @ np.tanh(x)).sum()) + (np.sin(x) * x[::-1]).sum()  # noqa: E731
    x = rng.standard_normal(5)
    H = jaccli.hessian(f, x, mode=mode)
    seen = [(idx, np.array(H[idx])) for idx in requests]
    whole = np.asarray(H)
    for idx, value in seen:
        assert_array_equal(whole[idx], value)  # bit for bit
        assert_array_equal(np.asarray(H[idx]), value)
    assert_array_equal(whole, whole.T)
    assert_allclose(whole, np.asarray(jaccli.hessian(f, x)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_jacobian_entries_handed_out_never_change_when_rows_and_columns_are_mixed(out_dtype):
    # A column comes from a forward sweep and a row from a reverse sweep; they round differently
    # (and in float32 tangents, for a float32 output), so the whole J keeps what was handed out.
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6))
    f = lambda x: (np.tanh(a @ np.sin(x)) * np.exp(x)).astype(out_dtype)  # noqa: E731
    x = rng.standard_normal(6)
    for k in range(6):
        J = jaccli.jacobian(f, x)
        column, row, entry = np.array(J[:, k]), np.array(J[(k + 1) % 6]), J[(k + 3) % 6, (k + 2) % 6]
        whole = np.asarray(J)
        assert_array_equal(whole[:, k], column)
        assert_array_equal(whole[(k + 1) % 6], row)
        assert whole[(k + 3) % 6, (k + 2) % 6] == entry
    assert_allclose(whole, np.asarray(jaccli.jacobian(f, x, mode="reverse")), rtol=1e-6 if out_dtype is np.float32
                    else 1e-13, atol=1e-6 if out_dtype is np.float32 else 1e-14)


def test_an_undefined_hessian_entry_keeps_the_value_it_was_handed_out_with():
    # d2/dv0 dv2 of sqrt(v0^2 + v1^2) * v2 at v0 = v1 = 0 is 0/0: the sweep of row 0 gives 0 and
    # that of row 2 gives NaN. Once H[0, 2] is known, row 2 takes its value instead.
    g = lambda v: np.sqrt(v[0] ** 2 + v[1] ** 2) * v[2]  # noqa: E731
    x = np.array([0.0, 0.0, 1.0])
    with np.errstate(all="ignore"):
        H = jaccli.hessian(g, x)
        first = np.array(H[0])
        whole = np.asarray(H)
    assert_array_equal(whole[0], first)
    assert_array_equal(whole[:, 2], whole[2, :])


@pytest.mark.parametrize("f", [np.sin, lambda x: np.tanh(np.outer(x, x).sum(axis=0))], ids=["diagonal", "dense"])
@pytest.mark.parametrize("kind", ["jacobian", "hessian"])
def test_matrix_evaluate_and_stream_count_negative_positions_from_the_end(f, kind):
    x = np.arange(1.0, 5.0)
    g = f if kind == "jacobian" else (lambda x: np.sum(f(x) ** 3))
    dense = np.asarray(getattr(jaccli, kind)(g, x)).reshape(4, 4)
    for _ in range(3):  # each time on a fresh object, and again on the same one
        J = getattr(jaccli, kind)(g, x)
        assert_allclose(J.matrix.evaluate([-1], [-1]), dense[[3]][:, [3]], rtol=1e-14)
        assert_allclose(J.matrix.evaluate([-1], [-1]), dense[[3]][:, [3]], rtol=1e-14)
        assert_allclose(J.matrix.evaluate([0, -3]), dense[[0, 1]], rtol=1e-14)
        assert_allclose(J.matrix[-1, -1], dense[3, 3], rtol=1e-14)  # the cache holds the right entries
    streamed = np.concatenate([p for _, p in getattr(jaccli, kind)(g, x).matrix.stream([-1, -4], [-2])])
    assert_allclose(streamed, dense[[3, 0]][:, [2]], rtol=1e-14)


@pytest.mark.parametrize("rows", [[4], [-5], [0.5], [True]])
def test_matrix_evaluate_rejects_positions_outside_the_matrix(rows):
    J = jaccli.jacobian(np.sin, np.arange(1.0, 5.0))
    with pytest.raises(IndexError):
        J.matrix.evaluate(rows)
    with pytest.raises(IndexError):
        next(J.matrix.stream(rows))


def test_a_lazy_result_says_how_to_pickle_it_and_deep_copies_share_its_entries():
    import copy
    import pickle

    J = jaccli.jacobian(lambda x: np.sin(x) * x[0], np.array([1.0, 2.0]))
    with pytest.raises(TypeError):
        pickle.dumps(J)
    assert_array_equal(pickle.loads(pickle.dumps(np.asarray(J))), np.asarray(J))
    D = copy.deepcopy(J)
    assert_array_equal(np.asarray(D), np.asarray(J))
    assert D.shape == J.shape and D.dtype == J.dtype


def test_batched_hessian_entries_handed_out_never_change():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))
    f = lambda X: np.sum(np.tanh(X @ a) * np.sin(X), axis=1)  # noqa: E731 - one scalar per sample
    X = rng.standard_normal((3, 4))
    for mode in ("forward", "reverse"):
        H = jaccli.hessian(f, X, batch_axis=0, mode=mode)
        column = np.array(H[:, 1])
        row_block = np.array(H[:, :, 2])
        whole = np.asarray(H)
        assert_array_equal(whole[:, 1], column)
        assert_array_equal(whole[:, :, 2], row_block)
        assert_array_equal(whole, np.swapaxes(whole, 1, 2))


def test_iterating_gives_the_rows_and_a_0d_block_refuses_as_numpy_does():
    x = np.array([0.5, 1.5])
    J = jaccli.jacobian(lambda x: np.sin(x) * x.sum(), x)
    for row, expected in zip(J, np.asarray(jaccli.jacobian(lambda x: np.sin(x) * x.sum(), x))):
        np.testing.assert_array_equal(row, expected)
    assert len(list(J)) == 2
    for zero_d in (jaccli.jacobian(lambda s: s ** 2, np.array(3.0)), jaccli.hessian(lambda s: s ** 3, np.array(2.0))):
        with pytest.raises(TypeError):  # as NumPy: not an empty loop, which would make sum(J) == 0
            list(zero_d)


@pytest.mark.parametrize("kind", ["jacobian", "hessian", "matrix"])
def test_iterating_computes_the_rows_in_the_blocks_of_a_full_evaluation_not_one_sweep_per_row(kind):
    def make():
        if kind == "hessian":
            return jaccli.hessian(lambda x: (np.sin(x) * x.sum()).sum(), X6, mode="reverse", chunk_size=4)
        J = jaccli.jacobian(tall, X6, mode="reverse", chunk_size=4)
        return J.matrix if kind == "matrix" else J
    J, whole = make(), make()
    expected = np.asarray(whole)
    it = iter(J)
    assert J.stats["sweeps"] == 0  # nothing before the first step
    rows = list(it)
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected):
        assert_array_equal(row, want)
    assert J.stats["sweeps"] == whole.stats["sweeps"] == math.ceil(len(expected) / 4)
    with pytest.raises(ValueError, match="read-only"):  # rows of np.asarray(J), as NumPy hands them out
        rows[0][0] = 1.0


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/=", "//=", "%=", "**=", "@="])
@pytest.mark.parametrize("matrix", [False, True], ids=["J", "J.matrix"])
def test_in_place_operators_on_a_lazy_block_are_refused_and_say_what_to_write(op, matrix):
    J = jaccli.jacobian(tall, X6)
    J = J.matrix if matrix else J
    lazy, before = J, np.array(J)
    value = np.ones((6, 6)) if op == "@=" else 1.0
    scope = {"J": J, "value": value}
    with pytest.raises(TypeError):
        exec(f"J {op} value", scope)
    assert scope["J"] is lazy
    assert_array_equal(np.asarray(J), before)
    with pytest.raises(TypeError):
        np.add(before, 1.0, out=J)


def test_the_matrix_view_acts_as_the_evaluated_matrix_as_j_acts_as_its_array():
    X = np.arange(1.0, 7.0).reshape(2, 3)
    J = jaccli.jacobian(lambda X: np.sin(X) * X.sum(), X)
    M, dense = J.matrix, np.asarray(J).reshape(6, 6)
    assert M.shape == (6, 6) and M.ndim == 2 and M.size == 36 and len(M) == 6
    for got, want in ((M + 1, dense + 1), (2 * M, 2 * dense), (1 - M, 1 - dense), (M @ np.ones(6), dense @ np.ones(6)),
                      (-M, -dense), (abs(M), abs(dense)), (M.sum(axis=0), dense.sum(axis=0)), (M.T, dense.T),
                      (M.max(), dense.max()), (M == dense, np.ones((6, 6), dtype=bool)), (np.exp(M), np.exp(dense))):
        assert_array_equal(got, want)
    assert M.stats == J.stats  # one cache
    with pytest.raises(ValueError, match="WRITEABLE"):
        M.T.setflags(write=True)
    with pytest.raises(TypeError):
        M[0, 0] = 1.0
    with pytest.raises(TypeError):
        M.sort()
    copy = M.copy()
    copy[0, 0] = 99.0
    assert_array_equal(np.asarray(M), dense)


@SETTINGS
@given(n=st.integers(0, 12), start=st.none() | st.integers(-15, 15), stop=st.none() | st.integers(-15, 15),
       step=st.none() | st.integers(-4, 4).filter(bool))
def test_a_slice_of_a_vector_selects_its_positions_without_the_whole_range(n, start, stop, step):
    # (block_indices.selected: J[:10] of a 90000-output block made the 90000 positions and sliced them)
    from jaccli.api.block_indices import selected as _selected

    part = (slice(start, stop, step),)
    want = np.arange(n)[part]
    got = _selected(n, (n,), part)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(_selected(2 * n, (n, 2), part + (1,)), np.arange(2 * n).reshape(n, 2)[part + (1,)].reshape(-1))
