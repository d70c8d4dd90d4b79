"""The 49 anchor test cases (anchors.md section 6), in jaccli's out.shape + in.shape layout.

Paddle cases use ``J.matrix`` (Paddle's flattened [M, N]) or ``batch_axis=0``.

Not applicable, or adapted (nothing here is skipped or xfailed):

* TC-27, TC-28, TC-34: Paddle's ndim limits, the ``[B, 1, N]`` shape quirk, ``J[0]`` raising
  TypeError and ``[..., 1]`` raising IndexError are deliberately not copied; those tests assert
  numpy-exact results instead (``np.asarray(J)[idx]``).
* TC-26: Paddle's index quirks (``J[0:0]`` giving everything, no clipping, negative steps
  failing, ``J[-10]`` wrapping twice, numpy ints rejected) are not copied either; the test
  asserts numpy's behaviour.
* TC-32: ``1.0 + H`` raises TypeError in Paddle (no reflected operators); jaccli supports them.
* TC-38, TC-40: dict pytrees do not exist in jaccli; the same functions are written with tuple
  inputs and outputs, and the Hessian of a vector output is a Jacobian of a Jacobian.
* TC-41 holomorphic variant, TC-44: complex numbers are out of scope; jaccli rejects them.
* TC-43: has_aux does not exist in jaccli.
* TC-45, TC-47: torch.func's argnums error texts do not apply; jaccli's ``wrt`` errors are
  checked by exception type and by naming the problem.
* TC-48: ``grad`` of a non-scalar raises ValueError in jaccli (HIPS: TypeError).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from tests.helpers import central_diff
from jaccli.errors import BatchMixingError, StrictModeError
from jaccli.engine.tracer import Tracer

EXACT = dict(rtol=1e-12, atol=1e-12)
DOC6 = dict(rtol=0, atol=5e-7)  # values the document gives to 6 decimals
FD = dict(rtol=1e-6, atol=1e-7)  # central differences, h = 1e-6


def dense(J):
    """Nested tuples of lazy blocks -> nested tuples of arrays."""
    if isinstance(J, tuple):
        return tuple(dense(b) for b in J)
    return np.asarray(J)


# ---------------------------------------------------------------------------
# 6.1 torch.autograd.functional
# ---------------------------------------------------------------------------
def exp_reducer(x):
    return np.exp(x).sum(axis=1)


def test_tc01_exp_reducer_jacobian_is_out_shape_plus_in_shape():
    x = np.array([[0.1, 0.2], [0.3, 0.4]])
    J = jaccli.jacobian(exp_reducer, x)
    assert J.shape == (2, 2, 2)
    expected = np.array([[[1.105171, 1.221403], [0, 0]], [[0, 0], [1.349859, 1.491825]]])
    assert_allclose(np.asarray(J), expected, **DOC6)
    assert_allclose(np.asarray(J), central_diff(exp_reducer, x), **FD)


def test_tc01_create_graph_gives_same_values_and_a_differentiable_result():
    x = np.array([[0.1, 0.2], [0.3, 0.4]])
    J = jaccli.jacobian(exp_reducer, x, create_graph=True)
    assert_allclose(np.asarray(J), np.asarray(jaccli.jacobian(exp_reducer, x)), **EXACT)
    seen = []

    def inner(x):
        j = jaccli.jacobian(exp_reducer, x, create_graph=True)
        seen.append(type(j))
        return j

    # d J[i, i, k] / d x[i, k] = exp(x[i, k]); everything else is zero.
    JJ = np.asarray(jaccli.jacobian(inner, x))
    assert seen == [Tracer]
    assert JJ.shape == (2, 2, 2, 2, 2)
    expected = np.zeros((2, 2, 2, 2, 2))
    for i in range(2):
        for k in range(2):
            expected[i, i, k, i, k] = np.exp(x[i, k])
    assert_allclose(JJ, expected, **EXACT)


def test_tc02_exp_adder_tuple_inputs_give_a_tuple_over_inputs():
    x, y = np.array([0.0, 1.0]), np.array([2.0, 3.0])
    J = jaccli.jacobian(lambda x, y: 2 * np.exp(x) + 3 * y, (x, y))
    assert isinstance(J, tuple) and len(J) == 2
    assert_allclose(np.asarray(J[0]), [[2, 0], [0, 5.436564]], **DOC6)
    assert_allclose(np.asarray(J[1]), 3 * np.eye(2), **EXACT)


def test_tc03_linear_model_is_block_diagonal_kron():
    W = np.array([[2.0, -1.0], [0.0, 1.0]])
    b = np.array([1.0, 0.5])
    x = np.arange(8.0).reshape(4, 2)
    J = jaccli.jacobian(lambda x: x @ W.T + b, x)
    assert J.shape == (4, 2, 4, 2)
    full = np.asarray(J)
    for i in range(4):
        for j in range(4):
            assert_array_equal(full[i, :, j, :], W if i == j else np.zeros((2, 2)))
    assert_array_equal(full.reshape(8, 8), np.kron(np.eye(4), W))
    assert J.matrix.shape == (8, 8)
    assert_array_equal(np.asarray(J.matrix), np.kron(np.eye(4), W))


def test_tc04_pow_reducer_hessian_is_out_plus_in_plus_in():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    H = jaccli.hessian(lambda x: (x ** 3).sum(), x)
    assert H.shape == (2, 2, 2, 2)
    expected = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            expected[i, j, i, j] = 6 * x[i, j]
    assert_allclose(np.asarray(H), expected, **EXACT)
    assert (H[0, 0, 0, 0], H[0, 1, 0, 1], H[1, 0, 1, 0], H[1, 1, 1, 1]) == (6, 12, 18, 24)


def pow_adder_reducer(x, y):
    return (2 * x ** 2 + 3 * y ** 2).sum()


def test_tc05_pow_adder_reducer_hessian_nests_h_i_j():
    H = jaccli.hessian(pow_adder_reducer, (np.array([1.0, 2.0]), np.array([3.0, 4.0])))
    assert isinstance(H, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in H)
    assert_allclose(np.asarray(H[0][0]), 4 * np.eye(2), **EXACT)
    assert_allclose(np.asarray(H[0][1]), np.zeros((2, 2)), **EXACT)
    assert_allclose(np.asarray(H[1][0]), np.zeros((2, 2)), **EXACT)
    assert_allclose(np.asarray(H[1][1]), 6 * np.eye(2), **EXACT)


def test_tc06_hvp_returns_value_and_product():
    value, (p0, p1) = jaccli.hvp(pow_adder_reducer, (np.array([1.0, 2.0]), np.array([3.0, 4.0])),
                                 (np.array([0.0, 0.0]), np.array([1.0, 1.0])))
    assert value == 85
    assert_allclose(p0, [0, 0], **EXACT)
    assert_allclose(p1, [6, 6], **EXACT)
    value, prod = jaccli.hvp(lambda x: (x ** 3).sum(), np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2)))
    assert value == 100
    assert_allclose(prod, [[6, 12], [18, 24]], **EXACT)


@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
@pytest.mark.parametrize("chunk_size", [None, 1])
def test_tc07_identity_jacobian_is_eye_in_every_strategy(rng, mode, chunk_size):
    x = rng.normal(size=4)
    J = jaccli.jacobian(lambda x: x.copy(), x, mode=mode, chunk_size=chunk_size)
    assert_array_equal(np.asarray(J), np.eye(4))


def test_tc08_scalar_reducer_and_expander():
    J = jaccli.jacobian(lambda x: x.sum(), np.ones((4, 4)))
    assert J.shape == (4, 4)
    assert_array_equal(np.asarray(J), np.ones((4, 4)))
    # np.repeat on a 0-d input (the rule may land later).
    J = jaccli.jacobian(lambda x: np.repeat(x[None], 4), np.array(2.0))
    assert J.shape == (4,)
    assert_array_equal(np.asarray(J), np.ones(4))


def test_tc08_hessian_of_a_sum_is_zero_including_0d():
    H = jaccli.hessian(lambda x: x.sum(), np.ones((4, 4)))
    assert H.shape == (4, 4, 4, 4)
    assert_array_equal(np.asarray(H), np.zeros((4, 4, 4, 4)))
    H0 = jaccli.hessian(lambda x: x.sum(), np.array(3.0))
    assert H0.shape == ()
    assert np.asarray(H0).shape == () and float(np.asarray(H0)) == 0.0


def test_tc09_single_element_output_of_any_shape_is_a_scalar_for_hessian():
    H = jaccli.hessian(lambda x: (x ** 2).sum().reshape(1, 1, 1), np.array([1.0, 1.0]))
    assert H.shape == (2, 2)
    assert_allclose(np.asarray(H), 2 * np.eye(2), **EXACT)
    H = jaccli.hessian(lambda x: (x ** 3).sum().reshape([1]), np.array([1.0, 2.0, 3.0]))
    assert_allclose(np.asarray(H), np.diag([6.0, 12.0, 18.0]), **EXACT)


def test_tc10_narrow_and_out_in_nesting(rng):
    a, b = rng.normal(size=4), rng.normal(size=5)
    J = jaccli.jacobian(lambda a: 3 * a[:3], a)
    assert_array_equal(np.asarray(J), 3 * np.eye(3, 4))
    J = jaccli.jacobian(lambda a, b: (b, 3 * a[:3]), (a, b))
    assert [[blk.shape for blk in row] for row in J] == [[(5, 4), (5, 5)], [(3, 4), (3, 5)]]
    assert_array_equal(np.asarray(J[0][0]), np.zeros((5, 4)))
    assert_array_equal(np.asarray(J[0][1]), np.eye(5))
    assert_array_equal(np.asarray(J[1][0]), 3 * np.eye(3, 4))
    assert_array_equal(np.asarray(J[1][1]), np.zeros((3, 5)))


def test_tc11_add_exp_reducer_two_inputs():
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    y = np.array([[0.0, 0.5], [1.0, -1.0]])
    J = jaccli.jacobian(lambda x, y: (x + np.exp(y)).sum(axis=1), (x, y))
    assert_array_equal(np.asarray(J[0]), [[[1, 1], [0, 0]], [[0, 0], [1, 1]]])
    assert_allclose(np.asarray(J[1]), [[[1, 1.648721], [0, 0]], [[0, 0], [2.718282, 0.367879]]], **DOC6)


def test_tc12_jacobian_matches_vjp_and_jvp(rng):
    def f(x):
        return x ** 3 + x.sum()

    x = np.array([1.0, 2.0, 3.0, 4.0])
    J = np.asarray(jaccli.jacobian(f, x))
    assert_allclose(J, [[4, 1, 1, 1], [1, 13, 1, 1], [1, 1, 28, 1], [1, 1, 1, 49]], **EXACT)
    v = rng.normal(size=4)
    assert_allclose(jaccli.jvp(f, x, v)[1], J @ v, **EXACT)
    assert_allclose(jaccli.vjp(f, x, v)[1], v @ J, **EXACT)


def test_tc13_hessian_matches_hvp():
    def f(a):
        return 3 * np.exp(a[:3]).sum()

    a = np.zeros(4)
    H = np.asarray(jaccli.hessian(f, a))
    assert_allclose(H, np.diag([3.0, 3, 3, 0]), **EXACT)
    v = np.array([1.0, 2, 3, 4])
    assert_allclose(jaccli.hvp(f, a, v)[1], [3, 6, 9, 0], **EXACT)
    assert_allclose(H @ v, [3, 6, 9, 0], **EXACT)


def test_tc14_multi_input_hessian_blocks(rng):
    a, b = rng.normal(size=4), rng.normal(size=5)
    H = jaccli.hessian(lambda a, b: (3 * b[:3] * a[:3]).sum(), (a, b))
    h01 = 3 * np.eye(4, 5)
    h01[3, 3] = 0
    assert_array_equal(np.asarray(H[0][0]), np.zeros((4, 4)))
    assert_allclose(np.asarray(H[0][1]), h01, **EXACT)
    assert_allclose(np.asarray(H[1][0]), h01.T, **EXACT)
    assert_array_equal(np.asarray(H[1][1]), np.zeros((5, 5)))


def test_tc15_zero_dim_mixing_shapes_and_values():
    J = jaccli.jacobian(lambda x, y: (y.sum(), x * y), (np.array(2.0), np.array([3.0])))
    assert [[blk.shape for blk in row] for row in J] == [[(), (1,)], [(1,), (1, 1)]]
    assert float(np.asarray(J[0][0])) == 0.0
    assert_array_equal(np.asarray(J[0][1]), [1])
    assert_array_equal(np.asarray(J[1][0]), [3])
    assert_array_equal(np.asarray(J[1][1]), [[2]])

    x, y = np.array([1.0, 2, 3]), np.array([4.0, 5, 6])
    J = jaccli.jacobian(lambda x, y: (x.sum(), y.sum(), x * y), (x, y))
    assert_array_equal(np.asarray(J[0][0]), np.ones(3))
    assert_array_equal(np.asarray(J[0][1]), np.zeros(3))
    assert_array_equal(np.asarray(J[1][0]), np.zeros(3))
    assert_array_equal(np.asarray(J[1][1]), np.ones(3))
    assert_array_equal(np.asarray(J[2][0]), np.diag(y))
    assert_array_equal(np.asarray(J[2][1]), np.diag(x))

    J = jaccli.jacobian(lambda x: np.stack([x, x, x]), np.array(2.0))
    assert_array_equal(np.asarray(J), [1, 1, 1])


def test_tc16_unrelated_outputs_are_zero_blocks(rng):
    x, y = rng.normal(size=2), rng.normal(size=3)
    J = jaccli.jacobian(lambda x, y: (x, y, x, y), (x, y))
    for k in (0, 2):
        assert_array_equal(np.asarray(J[k][0]), np.eye(2))
        assert_array_equal(np.asarray(J[k][1]), np.zeros((2, 3)))
        assert_array_equal(np.asarray(J[k + 1][0]), np.zeros((3, 2)))
        assert_array_equal(np.asarray(J[k + 1][1]), np.eye(3))
        assert not J[k][1].connected and J[k][0].connected


def test_tc17_hessian_with_unrelated_input_and_constant(rng):
    x, y = rng.normal(size=2), rng.normal(size=3)
    H = jaccli.hessian(lambda x, y: (x ** 2).sum(), (x, y))
    assert_allclose(np.asarray(H[0][0]), 2 * np.eye(2), **EXACT)
    assert_array_equal(np.asarray(H[0][1]), np.zeros((2, 3)))
    assert_array_equal(np.asarray(H[1][0]), np.zeros((3, 2)))
    assert_array_equal(np.asarray(H[1][1]), np.zeros((3, 3)))
    H = jaccli.hessian(lambda x, y: np.float64(1.0), (x, y))
    for (i, j), shape in {(0, 0): (2, 2), (0, 1): (2, 3), (1, 0): (3, 2), (1, 1): (3, 3)}.items():
        assert_array_equal(np.asarray(H[i][j]), np.zeros(shape))


def test_tc18_strict_output_without_path_raises_and_nonstrict_gives_zeros(rng):
    a = rng.normal(size=4)
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda a: np.ones(4), a, strict=True)
    assert_array_equal(np.asarray(jaccli.jacobian(lambda a: np.ones(4), a)), np.zeros((4, 4)))
    # Through an integer cast the path is cut (the value depends on a, the derivative cannot).
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda a: a.astype(int).astype(float), a, strict=True)
    assert_array_equal(np.asarray(jaccli.jacobian(lambda a: a.copy(), a, create_graph=True)), np.eye(4))
    # Third stage: under create_graph=True the Jacobian itself must depend on the inputs.
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda a: a.copy(), a, strict=True, create_graph=True)


def test_tc18_strict_hessian_of_a_linear_function_raises(rng):
    a = rng.normal(size=4)
    with pytest.raises(StrictModeError):
        jaccli.hessian(lambda a: (3 * a).sum(), a, strict=True)
    assert_array_equal(np.asarray(jaccli.hessian(lambda a: (3 * a).sum(), a)), np.zeros((4, 4)))


def test_tc18_strict_check_is_structural_not_numerical(rng):
    a, b = rng.normal(size=3), rng.normal(size=3)
    J = jaccli.jacobian(lambda a, b: a * 0 + b, (a, b), strict=True)
    assert_array_equal(np.asarray(J[0]), np.zeros((3, 3)))
    assert J[0].connected
    with pytest.raises(StrictModeError):
        jaccli.jacobian(lambda a, b: 2 * b, (a, b), strict=True)


def test_tc19_dtype_reverse_gives_input_dtype_forward_gives_output_dtype():
    x = np.array([1.0, 2.0], dtype=np.float32)

    def f(x):
        return (2 * x).astype(np.float64)

    for mode in ("reverse", "auto"):
        J = jaccli.jacobian(f, x, mode=mode)
        assert J.dtype == np.float32 and np.asarray(J).dtype == np.float32
        assert_array_equal(np.asarray(J), [[2, 0], [0, 2]])
    J = jaccli.jacobian(f, x, mode="forward")
    assert J.dtype == np.float64 and np.asarray(J).dtype == np.float64
    assert_array_equal(np.asarray(J), [[2, 0], [0, 2]])


ALL_STRATEGIES = [dict(mode="reverse"), dict(mode="forward"), dict(mode="auto"),
                  dict(mode="reverse", chunk_size=1), dict(mode="forward", chunk_size=4)]


@pytest.mark.parametrize("opts", ALL_STRATEGIES)
def test_tc20_high_rank_shapes_agree_across_strategies(rng, opts):
    x = rng.normal(size=(2, 3, 5))
    J = jaccli.jacobian(lambda x: 3 * x ** 2, x, **opts)
    assert J.shape == (2, 3, 5, 2, 3, 5)
    assert_allclose(np.asarray(J).reshape(30, 30), np.diag(6 * x.ravel()), **EXACT)

    x, y = rng.normal(size=(2, 3)), rng.normal(size=(3, 5))

    def g(x, y):
        return (np.cos(x) * x) @ np.sin(y)

    J = jaccli.jacobian(g, (x, y), **opts)
    assert (J[0].shape, J[1].shape) == ((2, 5, 2, 3), (2, 5, 3, 5))
    assert_allclose(np.asarray(J[0]), central_diff(lambda x_: g(x_, y), x), **FD)
    assert_allclose(np.asarray(J[1]), central_diff(lambda y_: g(x, y_), y), **FD)

    x, y = rng.normal(size=(5, 3)), rng.normal(size=(3, 5))

    def h(x, y):
        return (x * x) @ y, x @ (x.sum(1) * y), y.sum()

    J = jaccli.jacobian(h, (x, y), **opts)
    shapes = [[blk.shape for blk in row] for row in J]
    assert shapes == [[(5, 5, 5, 3), (5, 5, 3, 5)], [(5, 5, 5, 3), (5, 5, 3, 5)], [(5, 3), (3, 5)]]
    assert_array_equal(np.asarray(J[2][0]), np.zeros((5, 3)))
    assert_array_equal(np.asarray(J[2][1]), np.ones((3, 5)))
    for k in range(2):
        assert_allclose(np.asarray(J[k][0]), central_diff(lambda x_: h(x_, y)[k], x), **FD)
        assert_allclose(np.asarray(J[k][1]), central_diff(lambda y_: h(x, y_)[k], y), **FD)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_tc20_high_rank_hessian(rng, mode):
    x = rng.normal(size=(2, 3, 5))
    H = jaccli.hessian(lambda x: (3 * x ** 2).sum(), x, mode=mode)
    assert H.shape == (2, 3, 5, 2, 3, 5)
    assert_allclose(np.asarray(H).reshape(30, 30), 6 * np.eye(30), **EXACT)


# ---------------------------------------------------------------------------
# 6.2 Paddle
# ---------------------------------------------------------------------------
def test_tc21_single_output_tuple_inputs_gives_tuple_of_identities():
    x1, x2 = np.array([1.0, 2, 3]), np.array([4.0, 5, 6])
    J = jaccli.jacobian(lambda x1, x2: x1 + x2, (x1, x2))
    assert isinstance(J, tuple) and len(J) == 2
    for blk in J:
        assert blk.shape == (3, 3) and blk.matrix.shape == (3, 3)
        assert_array_equal(blk[:], np.eye(3))


def test_tc22_hessian_blocks_of_a_linear_sum_are_zero_with_shapes():
    H = jaccli.hessian(lambda x1, x2: x1.sum() + x2.sum(), (np.array([1.0, 2, 3]), np.array([1.0, 2, 3, 4])))
    assert [[blk.shape for blk in row] for row in H] == [[(3, 3), (3, 4)], [(4, 3), (4, 4)]]
    assert all(isinstance(blk, jaccli.Hessian) for row in H for blk in row)
    for row in H:
        for blk in row:
            assert_array_equal(np.asarray(blk), np.zeros(blk.shape))


def test_tc23_hessian_with_nonzero_off_diagonal_blocks():
    def f(x1, x2):
        return (x1 ** 2).sum() + x1[0] * x2[0] + (x2 ** 3).sum()

    H = jaccli.hessian(f, (np.array([1.0, 2, 3]), np.array([1.0, 2, 3, 4])))
    h01 = np.zeros((3, 4))
    h01[0, 0] = 1
    assert_allclose(np.asarray(H[0][0]), 2 * np.eye(3), **EXACT)
    assert_allclose(np.asarray(H[0][1]), h01, **EXACT)
    assert_allclose(np.asarray(H[1][0]), h01.T, **EXACT)
    assert_allclose(np.asarray(H[1][1]), np.diag([6.0, 12, 18, 24]), **EXACT)


def test_tc24_square_and_dot_and_dtype():
    J = jaccli.jacobian(lambda x: x * x, np.array([2.0, 3.0]))
    assert_array_equal(J[:], [[4, 0], [0, 6]])
    x, y = np.array([1.0, 2, 3, 4]), np.array([5.0, 6, 7, 8])
    J = jaccli.jacobian(lambda x, y: np.dot(x, y), [x, y])
    assert J[0].shape == (4,) and J[1].shape == (4,)
    assert_array_equal(J[0][:], y)
    assert_array_equal(J[1][:], x)
    assert_array_equal(np.concatenate([J[0][:], J[1][:]]), [5, 6, 7, 8, 1, 2, 3, 4])
    assert J[0].dtype == np.float64 and J[0][:].dtype == np.float64


def test_tc25_batch_first_index_set():
    X = np.array([[1.0, 2, 3], [3, 4, 3]])
    J = jaccli.jacobian(lambda x: x * x, X, batch_axis=0)
    full = np.stack([np.diag([2.0, 4, 6]), np.diag([6.0, 8, 6])])
    assert J.shape == (2, 3, 3)
    assert_array_equal(J[:, :, :], full)
    assert_array_equal(J[:, 0, :], [[2, 0, 0], [6, 0, 0]])
    assert_array_equal(J[:, :, 0], [[2, 0, 0], [6, 0, 0]])
    assert_array_equal(J[0:2, :, :], full)
    assert_array_equal(J[0:1, 0:2, :], [[[2, 0, 0], [0, 4, 0]]])
    assert_array_equal(J[0], np.diag([2.0, 4, 6]))
    assert_array_equal(J[1, 2], [0, 0, 6])
    assert J.matrix.shape == (2, 3, 3)


def paddle_tc26(x):
    return np.stack([x[0] * x[1], x[1] ** 2, x[2] * x[3], x.sum(), x[3] ** 3])


TC26_X = np.array([1.0, 2.0, 3.0, 4.0])
TC26_FULL = np.array([[2.0, 1, 0, 0], [0, 4, 0, 0], [0, 0, 4, 3], [1, 1, 1, 1], [0, 0, 0, 48]])


def test_tc26_index_results_match_the_document():
    J = jaccli.jacobian(paddle_tc26, TC26_X)
    assert_array_equal(np.asarray(J), TC26_FULL)
    J = jaccli.jacobian(paddle_tc26, TC26_X)
    assert_array_equal(J[1:4], TC26_FULL[1:4])
    assert_array_equal(J[:, 2], [0, 0, 4, 1, 0])
    assert_array_equal(J[-1], [0, 0, 0, 48])
    assert_array_equal(J[-2:], TC26_FULL[3:])
    assert_array_equal(J[::2], TC26_FULL[[0, 2, 4]])
    assert_array_equal(J[1, 1:3], [4, 0])
    assert J[1, 1] == 4 and np.ndim(J[1, 1]) == 0
    assert_array_equal(J[-3:-1], TC26_FULL[2:4])
    assert_array_equal(J[1:5:2], TC26_FULL[[1, 3]])
    assert J[:, 1:3].shape == (5, 2)
    assert_array_equal(J[:, 1:3], TC26_FULL[:, 1:3])
    assert J[-1, -1] == 48


def test_tc26_lazy_rows_are_computed_once():
    J = jaccli.jacobian(paddle_tc26, TC26_X, mode="reverse")
    assert (J.rows_evaluated, J.sweeps) == (0, 0)
    J[1:4]
    assert J.rows_evaluated == 3
    seeds = J.stats["seeds"]
    assert seeds == 3
    J[2]
    assert J.rows_evaluated == 3 and J.stats["seeds"] == 3
    assert_array_equal(J[:, 1], [1, 4, 0, 1, 0])
    assert J.rows_evaluated == 5 and J.stats["seeds"] == 5  # rows 0 and 4 only
    sweeps = J.sweeps
    assert_array_equal(J[:], TC26_FULL)
    assert J.stats["seeds"] == 5 and J.sweeps == sweeps


def test_tc26_cache_grows_by_missing_rows_only():
    J = jaccli.jacobian(paddle_tc26, TC26_X, mode="reverse")
    J[1:3]
    assert J.rows_evaluated == 2 and J.stats["seeds"] == 2
    J[2:4]
    assert J.rows_evaluated == 3 and J.stats["seeds"] == 3


def test_tc26_auto_mode_takes_a_column_request_by_forward_mode():
    J = jaccli.jacobian(paddle_tc26, TC26_X)
    assert_array_equal(J[:, 1], [1, 4, 0, 1, 0])
    assert (J.rows_evaluated, J.cols_evaluated, J.sweeps) == (0, 1, 1)


def test_tc26_paddle_index_quirks_are_not_copied_numpy_semantics_instead():
    J = jaccli.jacobian(paddle_tc26, TC26_X)
    assert J[0:0].shape == (0, 4)  # Paddle: the full matrix
    assert_array_equal(J[0:10], TC26_FULL)  # Paddle: no clipping, an error
    assert_array_equal(J[::-1], TC26_FULL[::-1])  # Paddle: ValueError
    assert_array_equal(J[..., 1], TC26_FULL[..., 1])  # Paddle: IndexError
    assert_array_equal(J[np.int64(2)], TC26_FULL[2])  # Paddle: TypeError
    assert_array_equal(J[[0, -1]], TC26_FULL[[0, -1]])
    assert_array_equal(J[np.array([True, False, True, False, False])], TC26_FULL[[0, 2]])
    with pytest.raises(IndexError):
        J[-10]  # Paddle: wraps twice to row 0
    with pytest.raises(IndexError):
        J[10]
    with pytest.raises(IndexError):
        J[0, 0, 0]


def test_tc27_zero_dim_jacobians_and_hessians():
    x0 = np.array(2.0)
    J = jaccli.jacobian(lambda x: x * x, x0)
    assert J.shape == ()
    with pytest.raises(IndexError):
        J[:]  # numpy: too many indices for a 0-d array
    assert J[()] == 4.0
    assert J + 0 == 4.0
    assert np.asarray(J).shape == () and float(np.asarray(J)) == 4.0

    J = jaccli.jacobian(lambda x: (x ** 2).sum(), np.array([1.0, 2, 3]))
    assert J.shape == (3,)
    assert_array_equal(J[:], [2, 4, 6])
    assert J[1] == 4.0 and np.ndim(J[1]) == 0
    assert_array_equal(J[0:2], [2, 4])

    J = jaccli.jacobian(lambda x1, x0: x1 * x0, (np.array([1.0, 2, 3]), x0), wrt=1)
    assert J.shape == (3,)
    assert_array_equal(J[:], [1, 2, 3])
    assert J[2] == 3.0

    H = jaccli.hessian(lambda x: x ** 3, x0)
    assert H.shape == ()
    assert H + 0 == 12.0
    with pytest.raises(IndexError):
        H[:]

    H = jaccli.hessian(lambda a, b: a * a * b, (np.array(2.0), np.array(3.0)))
    assert all(blk.shape == () for row in H for blk in row)
    assert [[float(np.asarray(b)) for b in row] for row in H] == [[6.0, 4.0], [4.0, 0.0]]


def test_tc28_batched_mixed_ranks_use_numpy_layout():
    x = np.array([1.0, 2, 3])
    J = jaccli.jacobian(lambda x: x ** 2, x, batch_axis=0)
    assert J.shape == (3,)
    assert_array_equal(J[:], [2, 4, 6])

    J = jaccli.jacobian(lambda x: np.stack([x, x ** 2], 1), x, batch_axis=0)
    assert J.shape == (3, 2)
    assert_array_equal(J[:], [[1, 2], [1, 4], [1, 6]])
    assert_array_equal(J[:, 1], [2, 4, 6])

    X = np.array([[1.0, 2, 3], [3, 4, 3]])
    J = jaccli.jacobian(lambda X: (X ** 2).sum(1), X, batch_axis=0)
    assert J.shape == (2, 3)
    assert_array_equal(J[:], [[2, 4, 6], [6, 8, 6]])  # Paddle: shape [2, 1, 3]
    assert_array_equal(J[0], [2, 4, 6])  # Paddle: TypeError
    assert_array_equal(J[:, 1], [4, 8])


def test_tc29_batch_mixing_samples_raises_instead_of_summing():
    X = np.array([[1.0, 2, 3], [3, 4, 3]])

    def f(X):
        return np.stack([X[0] * X[1], 2 * X[1]])

    with pytest.raises(BatchMixingError):
        np.asarray(jaccli.jacobian(f, X, batch_axis=0))
    # Without batch_axis the full Jacobian is well defined.
    J = np.asarray(jaccli.jacobian(f, X))
    assert J.shape == (2, 3, 2, 3)
    assert_array_equal(J[0, :, 0, :], np.diag(X[1]))
    assert_array_equal(J[0, :, 1, :], np.diag(X[0]))
    assert_array_equal(J[1, :, 1, :], 2 * np.eye(3))
    assert_array_equal(J[1, :, 0, :], np.zeros((3, 3)))


@pytest.mark.parametrize("keepdims", [False, True])
def test_tc30_batched_hessian(keepdims):
    X = np.array([[1.0, 2], [3, 4], [5, 6]])
    H = jaccli.hessian(lambda X: (X ** 3).sum(1, keepdims=keepdims), X, batch_axis=0)
    assert H.shape == (3, 2, 2)
    assert_allclose(np.asarray(H), np.stack([np.diag(6 * r) for r in X]), **EXACT)


def test_tc31_batched_hessian_with_tuple_inputs():
    XA = np.array([[1.0, 2], [3, 4]])
    XB = np.array([[1.0, 1, 1], [2, 2, 2]])

    def f(XA, XB):
        return (XA ** 2).sum(1) + XA[:, 0] * XB[:, 0] + (XB ** 3).sum(1)

    H = jaccli.hessian(f, (XA, XB), batch_axis=0)
    assert [[blk.shape for blk in row] for row in H] == [[(2, 2, 2), (2, 2, 3)], [(2, 3, 2), (2, 3, 3)]]
    h01 = np.zeros((2, 2, 3))
    h01[:, 0, 0] = 1
    assert_allclose(np.asarray(H[0][0]), np.stack([2 * np.eye(2)] * 2), **EXACT)
    assert_allclose(np.asarray(H[0][1]), h01, **EXACT)
    assert_allclose(np.asarray(H[1][0]), np.swapaxes(h01, 1, 2), **EXACT)
    assert_allclose(np.asarray(H[1][1]), np.stack([6 * np.eye(3), 12 * np.eye(3)]), **EXACT)


def test_tc32_hessian_arithmetic_evaluates_everything():
    H = jaccli.hessian(lambda x: (x * x).sum(), np.array([1.0, 2, 3, 4]))
    I = np.eye(4)
    assert_array_equal(H + 1, 2 * I + 1)
    assert_array_equal(H - 1, 2 * I - 1)
    assert_array_equal(H * 2, 4 * I)
    assert_array_equal(H / 2, I)
    assert_array_equal(H ** 3, 8 * I)
    assert_allclose(H % 1.2, 0.8 * I, **EXACT)
    assert_array_equal(H @ H, 4 * I)
    assert (H == H).all()
    assert not (H != H).any() and not (H < H).any() and not (H > H).any()
    assert (H <= H).all() and (H >= H).all()
    assert_array_equal(1.0 + H, 2 * I + 1)  # Paddle: TypeError; jaccli has reflected operators


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_tc33_sigmoid_hessian_and_its_derivative_with_create_graph():
    x = np.array([0.0, 1.0, -1.0, 2.0])
    H = jaccli.hessian(lambda x: sigmoid(x).sum(), x)
    assert_allclose(np.asarray(H), np.diag([0, -0.090858, 0.090858, -0.079963]), **DOC6)
    s = sigmoid(x)
    assert_allclose(np.asarray(H), np.diag(s * (1 - s) * (1 - 2 * s)), **EXACT)
    # The graph is kept: the Hessian can itself be differentiated (third derivative).
    T = np.asarray(jaccli.jacobian(lambda x: jaccli.hessian(lambda z: sigmoid(z).sum(), x, create_graph=True), x))
    expected = np.zeros((4, 4, 4))
    expected[np.arange(4), np.arange(4), np.arange(4)] = s * (1 - s) * (1 - 6 * s + 6 * s ** 2)
    assert_allclose(T, expected, **EXACT)


def test_tc34_error_suite_with_numpy_layout():
    x = np.ones(3)
    with pytest.raises(ValueError):
        jaccli.hessian(lambda x: x * x, x)
    # Paddle rejects a 2-d input; the numpy layout handles any rank.
    H = jaccli.hessian(lambda x: (x * x).sum(), np.ones((2, 2)))
    assert_array_equal(np.asarray(H).reshape(4, 4), 2 * np.eye(4))
    with pytest.raises(ValueError):
        jaccli.hessian(lambda x: x * x, np.ones((3, 3)), batch_axis=0)
    with pytest.raises(ValueError):
        jaccli.hessian(lambda x: (x * x).sum(), x, batch_axis=2)
    with pytest.raises(ValueError):
        jaccli.hessian(lambda x: (x * x).sum(), x, batch_axis="0")
    # Paddle rejects 4-d batched inputs; here the per-sample Hessians are (3,3,3) x (3,3,3).
    X = np.ones((3, 3, 3, 3))
    H = jaccli.hessian(lambda x: (x * x).sum((1, 2, 3)), X, batch_axis=0)
    assert H.shape == (3, 3, 3, 3, 3, 3, 3)
    assert_array_equal(np.asarray(H).reshape(3, 27, 27), np.stack([2 * np.eye(27)] * 3))
    Hd = np.asarray(H)
    assert_array_equal(H[..., 1], Hd[..., 1])  # Paddle: IndexError
    with pytest.raises(IndexError):
        jaccli.hessian(lambda x: x ** 3, np.array(1.0))[:]
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x * x, x, batch_axis=1)


def test_tc35_flattened_matrix_layout():
    X = np.ones((2, 2))
    J = jaccli.jacobian(lambda X: X @ X, X)
    assert J.matrix.shape == (4, 4)
    assert_array_equal(np.asarray(J.matrix), [[2, 1, 1, 0], [1, 2, 0, 1], [1, 0, 2, 1], [0, 1, 1, 2]])

    JX, JY = jaccli.jacobian(lambda X, Y: X @ Y, (np.ones((2, 2)), 2 * np.ones((2, 2))))
    assert_array_equal(np.asarray(JX.matrix), [[2, 2, 0, 0], [2, 2, 0, 0], [0, 0, 2, 2], [0, 0, 2, 2]])
    assert_array_equal(np.asarray(JY.matrix), [[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]])

    X = np.array([[1.0, 2], [3, 4]])
    J1, J2 = jaccli.jacobian(np.matmul, [X, X])
    both = np.hstack([np.asarray(J1.matrix), np.asarray(J2.matrix)])
    assert_array_equal(both, [[1, 3, 0, 0, 1, 0, 2, 0], [2, 4, 0, 0, 0, 1, 0, 2],
                              [0, 0, 1, 3, 3, 0, 4, 0], [0, 0, 2, 4, 0, 3, 0, 4]])


# ---------------------------------------------------------------------------
# 6.3 JAX
# ---------------------------------------------------------------------------
def jax_doc_f(x):
    return np.array([x[0], 5 * x[2], 4 * x[1] ** 2 - 2 * x[2], x[2] * np.sin(x[0])])


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_tc36_jacfwd_and_jacrev_docstring_agree(mode):
    J = np.asarray(jaccli.jacobian(jax_doc_f, np.array([1.0, 2.0, 3.0]), mode=mode))
    expected = [[1, 0, 0], [0, 0, 5], [0, 16, -2], [1.620907, 0, 0.841471]]
    assert_allclose(J, expected, **DOC6)
    assert_allclose(J[3], [3 * math.cos(1), 0, math.sin(1)], **EXACT)


def test_tc37_hessian_docstring():
    def g(x):
        return x[0] ** 3 - 2 * x[0] * x[1] - x[1] ** 6

    x = np.array([1.0, 2.0])
    assert_allclose(np.asarray(jaccli.hessian(g, x)), [[6, -2], [-2, -480]], **EXACT)
    # numdifftools-style cross-check: differentiate the gradient numerically
    assert_allclose(central_diff(lambda x: jaccli.grad(g, x), x), [[6, -2], [-2, -480]], rtol=1e-7, atol=1e-6)


def test_tc38_hessian_of_a_vector_power_as_jacobian_of_jacobian():
    # JAX's {"c": a**b} pytree, written with a tuple of inputs: H[i][j] = d/dx_j (dc/dx_i).
    a, b = np.array([1.0, 2.0]), np.array([2.0, 3.0])

    def inner(a, b):
        return jaccli.jacobian(lambda a, b: a ** b, (a, b), create_graph=True)

    H = jaccli.jacobian(inner, (a, b))
    assert [[blk.shape for blk in row] for row in H] == [[(2, 2, 2)] * 2] * 2
    Haa, Hab, Hba, Hbb = (np.asarray(H[i][j]) for i in (0, 1) for j in (0, 1))
    diag = np.zeros((2, 2, 2), dtype=bool)
    diag[[0, 1], [0, 1], [0, 1]] = True
    for blk in (Haa, Hab, Hba, Hbb):
        assert_array_equal(blk[~diag], 0)
    assert_allclose(Haa[diag], [2, 12], **EXACT)
    assert_allclose(Hab[diag], [1, 4 * (1 + 3 * math.log(2))], **EXACT)
    assert_allclose(Hab[1, 1, 1], 12.317766, **DOC6)
    assert_allclose(Hba, Hab, **EXACT)
    assert_allclose(Hbb[diag], [0, 8 * math.log(2) ** 2], **EXACT)
    assert_allclose(Hbb[1, 1, 1], 3.843624, **DOC6)


def test_tc39_second_derivative_of_a_vector_output_on_scalar_inputs():
    def inner(x0, x1):
        return jaccli.jacobian(lambda x0, x1: np.array([x0, x1]) ** 2, (x0, x1), create_graph=True)

    H = jaccli.jacobian(inner, (1.0, 2.0))
    got = [[np.asarray(blk).tolist() for blk in row] for row in H]
    assert got == [[[2, 0], [0, 0]], [[0, 0], [0, 2]]]


def test_tc40_jacobian_on_tuples():
    J = jaccli.jacobian(lambda x, y: (x, y), (0.0, 1.0), wrt=0)
    assert [float(np.asarray(b)) for b in J] == [1.0, 0.0]
    J = jaccli.jacobian(lambda x, y: (x, y), (0.0, 1.0), wrt=1)
    assert [float(np.asarray(b)) for b in J] == [0.0, 1.0]
    J = jaccli.jacobian(lambda x, y: (x, y), (0.0, 1.0), wrt=(0, 1))
    assert [[float(np.asarray(b)) for b in row] for row in J] == [[1, 0], [0, 1]]

    J = jaccli.jacobian(lambda x, y, z: (x, y), (1.0, 2.0, 3.0))
    assert [[float(np.asarray(b)) for b in row] for row in J] == [[1, 0, 0], [0, 1, 0]]

    x, y = np.array([0.5, -1.0]), np.array([1.0, 2.0, 3.0])
    Jx, Jxy = jaccli.jacobian(lambda x, y: (x, np.outer(x, y)), (x, y), wrt=0)
    assert_array_equal(np.asarray(Jx), np.eye(2))
    assert Jxy.shape == (2, 3, 2)
    assert_array_equal(np.asarray(Jxy), np.kron(np.eye(2), y[:, None]).reshape(2, 3, 2))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_tc41_quadratic_forms(rng, mode):
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    x = rng.normal(size=2)
    assert_allclose(np.asarray(jaccli.jacobian(lambda x: A @ x, x, mode=mode)), A, **EXACT)
    H = jaccli.hessian(lambda x: x @ A @ x, x, mode=mode)
    assert_allclose(np.asarray(H), [[2, 5], [5, 8]], **EXACT)


@pytest.mark.parametrize("outer_mode", ["forward", "reverse"])
def test_tc42_nested_mixed_mode_shapes(outer_mode):
    x, u = np.ones(5), np.ones(2)

    def f(x, u):
        return x @ x + u @ u

    def second(inner_wrt, outer_wrt):
        def inner(x, u):
            return jaccli.jacobian(f, (x, u), wrt=inner_wrt, create_graph=True)
        return np.asarray(jaccli.jacobian(inner, (x, u), wrt=outer_wrt, mode=outer_mode))

    assert_allclose(second(0, 0), 2 * np.eye(5), **EXACT)
    assert_allclose(second(1, 1), 2 * np.eye(2), **EXACT)
    assert second(1, 0).shape == (2, 5) and not second(1, 0).any()
    assert second(0, 1).shape == (5, 2) and not second(0, 1).any()


def test_tc44_complex_inputs_are_rejected_clearly():
    z = np.array([1 + 1j, 2 - 1j])
    with pytest.raises(TypeError):
        jaccli.jacobian(lambda z: z ** 2, z)


# ---------------------------------------------------------------------------
# 6.4 torch.func
# ---------------------------------------------------------------------------
def test_tc45_wrt_structure(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)

    def f(x, y):
        return 2 * x + 3 * y, 4 * x + 5 * y

    I = np.eye(3)
    J = jaccli.jacobian(f, (x, y), wrt=(0, 1))
    assert_array_equal(dense(J), ((2 * I, 3 * I), (4 * I, 5 * I)))
    J = jaccli.jacobian(f, (x, y), wrt=0)
    assert len(J) == 2 and not isinstance(J[0], tuple)
    assert_array_equal(dense(J), (2 * I, 4 * I))
    J = jaccli.jacobian(f, (x, y), wrt=(0,))
    assert len(J) == 2 and isinstance(J[0], tuple) and len(J[0]) == 1
    assert_array_equal(dense(J), ((2 * I,), (4 * I,)))
    assert_array_equal(np.asarray(jaccli.jacobian(np.multiply, (x, y), wrt=1)), np.diag(x))


def test_tc45_wrt_errors_name_the_problem(rng):
    x = rng.normal(size=3)
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x, (x,), wrt=())
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x, y: x * y, (x, x), wrt=(0, 0))
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x, (x,), wrt=2)
    with pytest.raises(ValueError):
        jaccli.jacobian(lambda x: x, (x,), wrt=-2)
    with pytest.raises(TypeError):
        jaccli.jacobian(lambda x: x, (x,), wrt=0.0)


def test_tc46_dimensionality_and_unrelated(rng):
    J = jaccli.jacobian(lambda x: x, np.array(3.0))
    assert J.shape == () and float(np.asarray(J)) == 1.0
    assert_array_equal(np.asarray(jaccli.jacobian(lambda x: x, np.array([3.0]))), [[1.0]])
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    Jx, Jy = jaccli.jacobian(lambda x, y: x, (x, y))
    assert_array_equal(np.asarray(Jx), np.eye(6).reshape(2, 3, 2, 3))
    assert_array_equal(np.asarray(Jy), np.zeros((2, 3, 2, 3)))
    assert Jx.connected and not Jy.connected
    c = rng.normal(size=(2, 3))
    J = jaccli.jacobian(lambda x: c, x)
    assert_array_equal(np.asarray(J), np.zeros((2, 3, 2, 3)))
    assert not J.connected


def tc47_f(x, y):
    return np.sin(x), x + y, x + 2, x.sum()


def test_tc47_chunk_sizes_give_identical_results(rng):
    x, y = rng.normal(size=(10, 2)), rng.normal(size=(1, 2))
    ref = dense(jaccli.jacobian(tc47_f, (x, y)))
    for chunk_size in (1, 2, 3, 4, 7, 10, 1000):
        for mode in ("reverse", "forward"):
            got = dense(jaccli.jacobian(tc47_f, (x, y), chunk_size=chunk_size, mode=mode))
            for r_row, g_row in zip(ref, got):
                for r, g in zip(r_row, g_row):
                    assert_allclose(g, r, **EXACT)
    assert_allclose(ref[0][0], central_diff(np.sin, x), **FD)
    assert_array_equal(ref[1][1], np.broadcast_to(np.eye(2)[None, :, None, :], (10, 2, 1, 2)))
    assert_array_equal(ref[3][0], np.ones((10, 2)))


@pytest.mark.parametrize("chunk_size", [0, -2])
def test_tc47_nonpositive_chunk_size_raises(rng, chunk_size):
    with pytest.raises(ValueError):
        jaccli.jacobian(tc47_f, (rng.normal(size=(10, 2)), rng.normal(size=(1, 2))), chunk_size=chunk_size)


# ---------------------------------------------------------------------------
# 6.5 HIPS autograd and numdifftools
# ---------------------------------------------------------------------------
def test_tc48_hips_scalar_input_vector_output():
    J = jaccli.jacobian(lambda x: np.array([x, x ** 2, x ** 3]), 2.0)
    assert_array_equal(np.asarray(J), [1, 4, 12])


def test_tc48_hips_jacobian_of_jacobian(rng):
    def fun(x):
        return np.sin(np.outer(x, x)) + np.cos(x @ x)

    x = rng.normal(size=2)
    J = jaccli.jacobian(fun, x)
    assert J.shape == (2, 2, 2)
    assert_allclose(np.asarray(J), central_diff(fun, x), **FD)
    JJ = np.asarray(jaccli.jacobian(lambda x: jaccli.jacobian(fun, x, create_graph=True), x))
    assert JJ.shape == (2, 2, 2, 2)
    Jfun = lambda x: np.asarray(jaccli.jacobian(fun, x))  # noqa: E731
    assert_allclose(JJ, central_diff(Jfun, x), **FD)


def test_tc48_hips_hvp_and_elementwise_grad():
    a = np.array([0.0, np.pi / 2, np.pi])
    _, prod = jaccli.hvp(lambda a: np.sum(np.sin(a)), a, np.ones(3))
    assert_allclose(prod, [0, -1, 0], atol=1e-12)
    _, g = jaccli.vjp(lambda x: x ** 3, np.array([1.0, 2.0]), np.ones(2))
    assert_array_equal(g, [3, 12])
    with pytest.raises(ValueError):
        jaccli.grad(lambda x: x ** 2, np.array([1.0, 2.0]))


def test_tc49_numdifftools_oracles():
    J = jaccli.jacobian(lambda x: x[0] * x[1] * x[2] ** 2, np.array([1.0, 2, 3]))
    assert_array_equal(np.asarray(J), [18, 9, 12])
    assert J.matrix.shape == (1, 3)
    assert_array_equal(np.asarray(J.matrix), [[18, 9, 12]])

    H = jaccli.hessian(lambda x: (1 - x[0]) ** 2 + 105 * (x[1] - x[0] ** 2) ** 2, np.array([1.0, 1.0]))
    assert_allclose(np.asarray(H), [[842, -420], [-420, 210]], **EXACT)
    H = jaccli.hessian(lambda v: np.cos(v[0] - v[1]), np.array([0.0, 0.0]))
    assert_allclose(np.asarray(H), [[-1, 1], [1, -1]], **EXACT)

    H = jaccli.hessian(lambda x: x[0] + x[1] ** 2 + x[2] ** 3, np.array([1.0, 2, 3]))
    assert_allclose([H[k, k] for k in range(3)], [0, 2, 18], **EXACT)
    assert H.rows_evaluated == 3
