"""Linear algebra against closed forms: determinants, inverses, spectra, and the norm at zero."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import jaccli
from jaccli.engine.recording import Recording
from jaccli.errors import UnsupportedOperationError

TIGHT = dict(rtol=1e-10, atol=1e-12)  # AD against a closed form: only rounding differs
numpy2 = pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0", reason="NumPy 2 API")


def _jacobian(f, x):
    """Every row of the Jacobian in one reverse sweep (a block of identity seeds)."""
    rec = Recording(f, (x,), (0,))
    out_shape = np.shape(rec.outputs[0])
    n_out = int(np.prod(out_shape))
    seeds = np.eye(n_out).reshape((n_out,) + out_shape)
    block = rec.vjp([seeds])[0]
    if block is None:
        return np.zeros(out_shape + np.shape(x))
    return np.asarray(block).reshape(out_shape + np.shape(x))


def _forward_jacobian(f, x):
    """Every column of the Jacobian in one forward sweep."""
    rec = Recording(f, (x,), (0,))
    n = x.size
    block = np.asarray(rec.jvp([np.eye(n).reshape((n,) + x.shape)])[0])
    return np.moveaxis(block, 0, -1).reshape(np.shape(rec.outputs[0]) + x.shape)


def _hessian(f, x):
    """Forward over reverse: the gradient's recording, pushed along every coordinate at once."""
    def grad(y):
        return Recording(f, (y,), (0,)).vjp([np.ones((1,))])[0][0]
    return _forward_jacobian(grad, x)


@pytest.fixture
def a(rng):
    """An invertible, non-symmetric matrix with a negative determinant."""
    m = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    return m if np.linalg.det(m) < 0 else m[[1, 0, 2, 3]]  # a row swap flips the sign


@pytest.fixture
def s(rng):
    """A symmetric positive definite matrix with distinct eigenvalues."""
    m = rng.standard_normal((4, 4))
    return m @ m.T + 4 * np.eye(4)


# ---------------------------------------------------------------------------
# Determinants and inverses
# ---------------------------------------------------------------------------
def test_logdet_gradient_is_the_inverse_transpose(a):
    assert_allclose(_jacobian(lambda x: np.linalg.slogdet(x)[1], a), np.linalg.inv(a).T, **TIGHT)


def test_det_gradient_is_det_times_inverse_transpose(a):
    expected = np.linalg.det(a) * np.linalg.inv(a).T
    assert_allclose(_jacobian(np.linalg.det, a), expected, **TIGHT)
    assert_allclose(_forward_jacobian(np.linalg.det, a), expected, **TIGHT)


def _mixed_differences(f, a, h=0.5):
    """The Hessian of f by central differences: exact (to rounding) for det, which is linear in
    each entry, whatever h."""
    n, e = a.size, np.eye(a.size).reshape((a.size,) + a.shape) * h
    return np.array([[(f(a + e[i] + e[j]) - f(a + e[i] - e[j]) - f(a - e[i] + e[j]) + f(a - e[i] - e[j]))
                      / (4 * h * h) for j in range(n)] for i in range(n)]).reshape(a.shape + a.shape)


_N = np.array([1.0, 2.0, 2.0]) / 3.0


@pytest.mark.parametrize("point", [np.zeros((2, 2)), np.zeros((3, 3)), np.diag([1.0, 1.0, 0.0]),
                                   np.diag([2.0, 0.0, 0.0, 3.0]), np.array([[1.0, 2.0], [2.0, 4.0]]),
                                   np.eye(3) - np.outer(_N, _N)],
                         ids=["zero-2x2", "zero-3x3", "diag-1-1-0", "rank-2-of-4", "rank-1-2x2", "projector"])
def test_det_hessian_at_singular_matrices_is_finite_and_exact(point):
    # The SVD's derivative divides by the differences of the singular values.
    expected = _mixed_differences(np.linalg.det, point)
    assert_allclose(_hessian(np.linalg.det, point), expected, rtol=1e-12, atol=1e-12)
    assert_allclose(_jacobian(np.linalg.det, point), _jacobian_by_minors(point), rtol=1e-12, atol=1e-12)


def _rank_deficient(n, rank, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, rank)) @ rng.standard_normal((rank, n))


@pytest.mark.parametrize("point", [
    np.array([[-1.0, 3.0, -2.0], [-3.0, 3.0, 4.0], [-7.0, 9.0, 6.0]]),  # row 3 = row 1 + 2 row 2
    _rank_deficient(4, 3, 0), _rank_deficient(6, 5, 1), _rank_deficient(6, 4, 2), _rank_deficient(8, 7, 3),
    _rank_deficient(9, 8, 4), _rank_deficient(10, 8, 5),
    np.array([[-1.0, 3.0, -2.0], [-3.0, 3.0, 4.0], [-7.0, 9.0, 6.0 + 1e-12]]),  # nonsingular, cond ~1e14
], ids=["3x3-rows", "rank-3-of-4", "rank-5-of-6", "rank-4-of-6", "rank-7-of-8", "rank-8-of-9", "rank-8-of-10",
        "nearly-singular"])
def test_det_hessian_at_singular_matrices_whose_computed_det_is_not_zero(point):
    # LU's rounding gives det ~1e-14 for most singular matrices. Before: det(A) A^-T was used there,
    # and its derivative cancelled terms ~1e16 times larger: Hessian entries off by up to 8 (of 9).
    assert np.linalg.det(point) != 0
    expected = _mixed_differences(np.linalg.det, point)
    scale = np.abs(expected).max()
    for mode in ("forward", "reverse"):
        got = np.asarray(jaccli.hessian(np.linalg.det, point, mode=mode))
        assert_allclose(got, expected, rtol=0, atol=1e-10 * scale)
    # cofactors are sums of products of one more entry than the Hessian's (rank n - 2: all zero)
    assert_allclose(_jacobian(np.linalg.det, point), _jacobian_by_minors(point), rtol=0,
                    atol=1e-10 * scale * np.abs(point).max())


def _with_singular_values(s, seed):
    rng = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((len(s), len(s))))
    q2, _ = np.linalg.qr(rng.standard_normal((len(s), len(s))))
    return q1 @ np.diag(s) @ q2.T


def test_det_hessian_of_a_large_ill_conditioned_matrix_with_repeated_singular_values_is_finite():
    # 10 x 10, cond 1e7, nine singular values 1: the SVD's derivative would be inf; A^-1's is fine here
    point = _with_singular_values([1.0] * 9 + [1e-7], 0)
    expected = _mixed_differences(np.linalg.det, point)
    got = np.asarray(jaccli.hessian(np.linalg.det, point))
    assert_allclose(got, expected, rtol=0, atol=1e-8 * np.abs(expected).max())


@pytest.mark.parametrize("n", [3, 10])
def test_each_matrix_of_a_stack_takes_its_own_way_to_det_cofactors(n):
    # A singular matrix beside the identity: the identity's Hessian stays finite and exact (before, one
    # singular matrix sent the whole stack through the SVD, whose derivative is NaN at the identity)
    singular = _with_singular_values(list(np.linspace(1.0, 2.0, n - 1)) + [0.0], 1)
    stack = np.stack([np.eye(n), singular])
    H = np.asarray(jaccli.hessian(lambda a: np.linalg.det(a).sum(), stack))
    for k, point in enumerate(stack):
        expected = _mixed_differences(np.linalg.det, point)
        assert_allclose(H[k, :, :, k], expected, rtol=0, atol=1e-9 * np.abs(expected).max())
    assert (H[0, :, :, 1] == 0).all() and (H[1, :, :, 0] == 0).all()


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_det_of_empty_matrices_and_stacks(shape):
    a = np.zeros(shape)
    assert_allclose(np.asarray(jaccli.jacobian(np.linalg.det, a)), np.zeros(np.shape(np.linalg.det(a)) + shape))
    assert np.asarray(jaccli.hessian(lambda a: np.linalg.det(a).sum(), a)).shape == shape + shape


def test_det_hessian_of_an_ill_conditioned_float32_matrix_is_accurate_to_float32():
    point = _with_singular_values([1.0, 0.7, 0.3, 2e-5], 2).astype(np.float32)
    expected = _mixed_differences(np.linalg.det, point.astype(np.float64))
    got = np.asarray(jaccli.hessian(np.linalg.det, point))
    assert got.dtype == np.float32
    assert_allclose(got, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("point", [np.array([[1e-300]]), 1e-160 * np.array([[1.0, 2.0], [3.0, 5.0]])],
                         ids=["1x1", "2x2"])
def test_det_hessian_of_a_tiny_well_conditioned_matrix_is_finite(point):
    n = point.shape[0]
    expected = np.zeros((1, 1, 1, 1)) if n == 1 else np.array(
        [[[[0, 0], [0, 1]], [[0, 0], [-1, 0]]], [[[0, -1], [0, 0]], [[1, 0], [0, 0]]]], dtype=float)
    assert_allclose(np.asarray(jaccli.hessian(np.linalg.det, point)), expected, rtol=0, atol=1e-12)


def _jacobian_by_minors(a):
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)]
                     for i in range(n)])


def test_logdet_hessian_has_the_negative_kron_structure(a):
    n = a.shape[0]
    inv = np.linalg.inv(a)
    hess = _hessian(lambda x: np.linalg.slogdet(x)[1], a)
    # d^2 logdet / dA_ij dA_kl = -inv[j, k] inv[l, i]: with (k, l) swapped, -kron(inv.T, inv).
    swapped = hess.transpose(0, 1, 3, 2).reshape(n * n, n * n)
    assert_allclose(swapped, -np.kron(inv.T, inv), **TIGHT)
    assert_allclose(hess.reshape(n * n, n * n), hess.reshape(n * n, n * n).T, **TIGHT)


def test_inverse_jacobian_is_minus_kron_of_inverses(a):
    n = a.shape[0]
    inv = np.linalg.inv(a)
    # d inv_ij / dA_kl = -inv[i, k] inv[l, j]
    assert_allclose(_jacobian(np.linalg.inv, a).reshape(n * n, n * n), -np.kron(inv, inv.T), **TIGHT)


def test_slogdet_unpacks_and_its_sign_has_zero_derivative(a):
    def sign_only(x):
        sign, _ = np.linalg.slogdet(x)
        return sign

    assert_allclose(_jacobian(sign_only, a), np.zeros((4, 4)), rtol=0, atol=0)
    assert Recording(sign_only, (a,), (0,)).outputs[0] == -1.0


@numpy2
def test_slogdet_result_has_numpys_named_fields(a):
    rec = Recording(lambda x: np.linalg.slogdet(x).logabsdet * np.linalg.slogdet(x).sign, (a,), (0,))
    assert_allclose(rec.outputs[0], -np.log(np.abs(np.linalg.det(a))), **TIGHT)


def test_solve_gradient_in_b_is_the_transposed_solve(a, rng):
    b = rng.standard_normal(4)
    assert_allclose(_jacobian(lambda y: np.linalg.solve(a, y), b), np.linalg.inv(a), **TIGHT)


def test_pinv_of_an_invertible_matrix_differentiates_like_inv(a):
    assert_allclose(_jacobian(np.linalg.pinv, a), _jacobian(np.linalg.inv, a), rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------------------
# Symmetric functions: eigh, eigvalsh, cholesky. By default, the derivative of the function NumPy
# computes (one triangle read); inside jaccli.symmetric_derivatives(), that of the symmetric part.
# ---------------------------------------------------------------------------
def _lower_read(g):
    """A symmetric-part gradient as the gradient of the function of the lower triangle NumPy reads."""
    return np.tril(g + g.T) - np.diag(np.diag(g))


@pytest.mark.parametrize("f", [np.linalg.eigvalsh, lambda a: np.linalg.eigh(a)[1],
                               lambda a: np.linalg.eigh(a, UPLO="U")[0],
                               lambda a: np.linalg.cholesky(a), lambda a: np.linalg.cholesky(a, upper=True)],
                         ids=["eigvalsh", "eigh-vectors", "eigh-upper", "cholesky", "cholesky-upper"])
def test_symmetric_input_functions_have_numpys_derivative_along_unsymmetric_steps(f, s, rng):
    a = s + np.triu(rng.standard_normal((4, 4)), 1) * 0.3  # the upper triangle differs: one is read
    u = rng.standard_normal((4, 4))
    h = 1e-6
    fd = (f(a + h * u) - f(a - h * u)) / (2 * h)
    tangent = Recording(f, (a,), (0,)).jvp([u[None]])[0][0]
    assert_allclose(tangent, fd, rtol=1e-6, atol=1e-7)
    m = rng.standard_normal(np.shape(fd))
    cotangent = Recording(f, (a,), (0,)).vjp([m[None]])[0][0]
    assert_allclose(np.sum(cotangent * u), np.sum(m * fd), rtol=1e-6, atol=1e-7)


def test_eigenvalue_gradient_is_the_outer_product_of_its_eigenvector(s):
    w, v = np.linalg.eigh(s)
    for name, f in (("eigh", lambda x: np.linalg.eigh(x)[0]), ("eigvalsh", np.linalg.eigvalsh)):
        jac = _jacobian(f, s)
        with jaccli.symmetric_derivatives():
            sym = _jacobian(f, s)
        for i in range(4):
            outer = np.outer(v[:, i], v[:, i])
            assert_allclose(sym[i], outer, **TIGHT, err_msg=name)
            assert_allclose(jac[i], _lower_read(outer), **TIGHT, err_msg=name)


def test_symmetric_functions_ignore_the_antisymmetric_part_of_a_perturbation_as_an_option(s, rng):
    m = rng.standard_normal((4, 4))
    antisym = (m - m.T)[None]
    for f in (np.linalg.eigvalsh, lambda x: np.linalg.eigh(x)[1], np.linalg.cholesky):
        with jaccli.symmetric_derivatives():
            tangent = Recording(f, (s,), (0,)).jvp([antisym])[0]
        assert_allclose(tangent, np.zeros_like(tangent), rtol=0, atol=1e-12)


def test_logdet_through_cholesky_has_the_inverse_as_gradient(s):
    def logdet(x):
        chol = np.linalg.cholesky(x)
        return 2 * np.sum(np.log(np.sum(chol * np.eye(4), axis=-1)))

    with jaccli.symmetric_derivatives():
        assert_allclose(_jacobian(logdet, s), np.linalg.inv(s), **TIGHT)
    assert_allclose(_jacobian(logdet, s), _lower_read(np.linalg.inv(s)), **TIGHT)


def test_eigenvalue_gradients_of_a_stack_match_each_matrix(s, rng):
    m = rng.standard_normal((4, 4))
    stack = np.stack([s, m @ m.T + np.eye(4)])
    with jaccli.symmetric_derivatives():
        jac = _jacobian(lambda x: np.sum(np.linalg.eigvalsh(x) ** 2, axis=-1), stack)
    for k in range(2):
        assert_allclose(jac[k, k], 2 * stack[k], **TIGHT)  # d tr(A^2) / dA = 2 A for symmetric A
        assert_allclose(jac[k, 1 - k], np.zeros((4, 4)), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# Singular values and norms
# ---------------------------------------------------------------------------
def test_singular_value_gradient_is_outer_of_singular_vectors(rng):
    x = rng.standard_normal((3, 5))
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    jac = _jacobian(lambda y: np.linalg.svd(y, compute_uv=False), x)
    for i in range(3):
        assert_allclose(jac[i], np.outer(u[:, i], vh[i]), **TIGHT)
    assert_allclose(_jacobian(lambda y: np.linalg.norm(y, 2), x), np.outer(u[:, 0], vh[0]), **TIGHT)
    assert_allclose(_jacobian(lambda y: np.linalg.norm(y, "nuc"), x), u @ vh, **TIGHT)


@pytest.mark.parametrize("f", [
    np.linalg.norm,
    lambda x: np.linalg.norm(x, 2),
    lambda x: np.linalg.norm(x, axis=0),
    lambda x: np.linalg.norm(x, 3),
    pytest.param(lambda x: np.linalg.vector_norm(x, ord=1.5), marks=numpy2),
    lambda x: np.linalg.norm(np.reshape(x, (2, 2)), "fro"),
], ids=["default", "ord-2", "axis-0", "ord-3", "vector_norm-1.5", "fro"])
def test_norm_at_zero_has_an_exactly_zero_derivative(f):
    x = np.zeros(4)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        grad = _jacobian(f, x)
        tangent = _forward_jacobian(f, x)
        hess = _hessian(lambda y: np.sum(f(y)), x)
    for d in (grad, tangent, hess):
        assert np.all(d == 0), d  # exactly zero, and so never NaN


def test_norm_of_a_zero_row_is_zero_and_other_rows_are_unit_vectors():
    x = np.array([[0.0, 0.0], [3.0, -4.0]])
    jac = _jacobian(lambda y: np.linalg.norm(y, axis=1), x)
    assert_allclose(jac[0], np.zeros((2, 2)), rtol=0, atol=0)
    assert_allclose(jac[1], [[0.0, 0.0], [0.6, -0.8]], **TIGHT)


# ---------------------------------------------------------------------------
# Outputs that are not unique are refused, with what to do instead
# ---------------------------------------------------------------------------
def test_wide_qr_is_refused(rng):
    x = rng.standard_normal((2, 3))
    with pytest.raises(UnsupportedOperationError):
        Recording(lambda y: np.linalg.qr(y)[0], (x,), (0,))


# ---------------------------------------------------------------------------
# svd with full_matrices=True (NumPy's default) of non-square matrices
# ---------------------------------------------------------------------------
def _mT(x):
    return np.swapaxes(x, -1, -2)


def _complement(usv, tall):
    u, s, vh = usv
    k = s.shape[-1]
    return u[..., :, k:] if tall else _mT(vh[..., k:, :])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 6, 2), (2, 2, 4)])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_full_svd_complement_has_the_derivatives_of_its_closed_form(rng, shape, mode):
    # The projector onto the complement of A's column (row) space does not depend on the basis
    # NumPy picks for it; I - A (A^T A)^-1 A^T is the same function through other primitives.
    a = rng.standard_normal(shape)
    tall = shape[-2] > shape[-1]
    w = rng.standard_normal(shape[:-2] + 2 * (max(shape[-2:]),))

    def by_svd(y):
        b = _complement(np.linalg.svd(y), tall)
        return np.sum((b @ _mT(b)) * w) * np.sum(np.linalg.svd(y)[1])

    def closed(y):
        if tall:
            p = np.eye(shape[-2]) - y @ np.linalg.inv(_mT(y) @ y) @ _mT(y)
        else:
            p = np.eye(shape[-1]) - _mT(y) @ np.linalg.inv(y @ _mT(y)) @ y
        return np.sum(p * w) * np.sum(np.linalg.svd(y, full_matrices=False)[1])

    assert_allclose(by_svd(a), closed(a), rtol=1e-12)
    h = np.asarray(jaccli.hessian(by_svd, a, mode=mode))
    assert_allclose(h, np.asarray(jaccli.hessian(closed, a, mode=mode)), rtol=1e-11, atol=1e-11 * np.abs(h).max())
    # the Hessian's check is not circular: the closed form's is checked against differences here
    g = lambda y: jaccli.grad(closed, y)  # noqa: E731
    step = 1e-5
    e = np.zeros_like(a)
    e[(0,) * a.ndim] = step
    column = (g(a + e) - g(a - e)) / (2 * step)
    assert_allclose(h[(Ellipsis,) + (0,) * a.ndim], column, rtol=1e-6, atol=1e-6 * np.abs(column).max())
    if mode == "forward" and len(shape) == 2:
        third = np.asarray(jaccli.jacobian(lambda y: jaccli.hessian(by_svd, y, create_graph=True), a))
        ref = np.asarray(jaccli.jacobian(lambda y: jaccli.hessian(closed, y, create_graph=True), a))
        assert_allclose(third, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 2)])
def test_full_svd_extra_vectors_are_numpys_and_move_without_rotating(rng, shape):
    a = rng.standard_normal(shape)
    t = rng.standard_normal(shape)
    tall = shape[-2] > shape[-1]
    full = Recording(lambda y: np.linalg.svd(y), (a,), (0,))
    for got, want in zip(full.outputs, np.linalg.svd(a)):
        assert_allclose(got, want, rtol=0, atol=0)  # NumPy's own values, signs and basis
    k = min(shape[-2:])
    base = _complement(np.linalg.svd(a), tall)
    thin = (np.linalg.svd(a)[0][..., :, :k] if tall else _mT(np.linalg.svd(a)[2][..., :k, :]))
    pick = lambda y: _complement(np.linalg.svd(y), tall)  # noqa: E731
    thin_of = (lambda y: np.linalg.svd(y)[0][..., :, :k]) if tall else (lambda y: _mT(np.linalg.svd(y)[2][..., :k, :]))
    _, d_extra = jaccli.jvp(pick, a, t)
    _, d_thin = jaccli.jvp(thin_of, a, t)
    # no rotation within the complement, and the complement stays orthogonal to the range
    assert_allclose(_mT(base) @ d_extra, 0.0, atol=1e-12)
    assert_allclose(_mT(thin) @ d_extra + _mT(d_thin) @ base, 0.0, atol=1e-12)
    # the same tangent from the reverse rule: <G, dU2> = <vjp(G), t> for a random G
    g = rng.standard_normal(np.shape(base))
    assert_allclose(np.sum(jaccli.vjp(pick, a, g)[1] * t), np.sum(g * d_extra), rtol=1e-12)


def test_full_svd_with_hermitian_true_of_a_non_square_matrix_raises_numpys_error(rng):
    a = rng.standard_normal((3, 2))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.svd(a, hermitian=True)
    with pytest.raises(np.linalg.LinAlgError):
        jaccli.jacobian(lambda y: np.linalg.svd(y, hermitian=True)[1], a)


@pytest.mark.parametrize("first", ["f", "symmetric_derivatives"])
def test_np_linalg_rules_load_at_f_first_call_under_the_complex_forms(first, tmp_path):
    # np.linalg's own functions' rules wait for f's first call of one (or load whole, before f runs, after
    # symmetric_derivatives imported a part): in a fresh process they differentiate as before, and the
    # complex refusals stand in front of them.
    code = f"""if True:
        import sys
        import numpy as np
        import jaccli
        import jaccli.engine.rules
        waited = "jaccli.engine.rules.linalg" not in sys.modules
        if {first!r} == "symmetric_derivatives":
            with jaccli.symmetric_derivatives():
                pass
        A = np.array([[2.0, 1.0], [1.0, 3.0]])
        f = lambda x: np.linalg.eigvalsh(A + np.outer(x, x)) + np.linalg.norm(x) * np.linalg.solve(A, x)
        x = np.array([0.3, -0.2])
        e = 1e-6
        ref = np.stack([(f(x + e * d) - f(x - e * d)) / (2 * e) for d in np.eye(2)], axis=1)
        err = float(np.abs(np.asarray(jaccli.jacobian(f, x)) - ref).max())
        try:
            jaccli.jacobian(lambda z: np.linalg.cholesky(np.eye(2) * z[0]), np.array([1 + 1j, 2.0]))
        except jaccli.errors.UnsupportedOperationError as error:
            refused = "np.linalg.cholesky of complex values is not supported" in str(error)
        print(waited, err, refused)
    """
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    waited, err, refused = done.stdout.split()
    assert waited == "True" and float(err) < 1e-7 and refused == "True"
