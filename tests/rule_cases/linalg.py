"""Rows for the linalg family: inverses, solves, determinants, decompositions and norms.

Domains live in the inputs: invertible and well-conditioned matrices, symmetric positive definite
ones for cholesky and logdet, distinct eigenvalues and singular values. Functions of symmetric
matrices get (A + A^T)/2 so that central differences see the same symmetric function jaccli
differentiates. Outputs with a sign freedom (eigenvectors, Q, singular vectors) are used through
gauge-invariant expressions, or with NumPy's signs frozen by a sign-fixing step.
"""

import numpy as np

from . import Case, r, spd


def wc(*shape: int) -> np.ndarray:
    """A stack of well-conditioned (diagonally dominant) square matrices; the last axis gives n."""
    n = shape[-1]
    return r(*shape[:-1], n, n) + n * np.eye(n)


def with_eigenvalues(*values: float) -> np.ndarray:
    """A symmetric matrix with the given (distinct) eigenvalues, in a random basis."""
    q, _ = np.linalg.qr(r(len(values), len(values)))
    return (q * np.asarray(values)) @ q.T


def complement_projector(usv):
    """U2 U2^T (tall) or V2 V2^T (wide) from a full SVD: the projector onto the complement of the
    column (row) space, whatever basis the extra singular vectors hold."""
    u, s, vh = usv
    k = s.shape[-1]
    b = u[..., :, k:] if u.shape[-1] > k else np.swapaxes(vh[..., k:, :], -1, -2)
    return b @ np.swapaxes(b, -1, -2)


def sy(a):
    return (a + np.swapaxes(a, -1, -2)) / 2


def spd_stack(k: int, n: int) -> np.ndarray:
    return np.stack([spd(n) for _ in range(k)])


def sign_fixed(vecs, axis=-2):
    """Vectors (columns, or rows with axis=-1) multiplied by the sign of their first entry."""
    first = vecs[..., :1, :] if axis == -2 else vecs[..., :, :1]
    return vecs * np.sign(first)


def diag(m):
    return np.sum(m * np.eye(m.shape[-1]), axis=-1)


S3 = with_eigenvalues(-1.0, 0.5, 2.0)
L = "np.linalg."
_ROW9 = np.array([1.0, -0.5, 0.25, 2.0, -1.5, 0.75, 0.5, -1.0, 1.25])

CASES = [
    # inv, solve
    Case(L + "inv", np.linalg.inv, (wc(3),), order=3),
    Case(L + "inv", np.linalg.inv, (wc(2, 3),), id=L + "inv-batched"),
    Case(L + "solve", np.linalg.solve, (wc(3), r(3)), wrt=(0, 1), order=3, id=L + "solve-vector"),
    Case(L + "solve", np.linalg.solve, (wc(3), r(3, 2)), wrt=(0, 1), id=L + "solve-matrix"),
    Case(L + "solve", np.linalg.solve, (wc(2, 3), r(3)), wrt=(0, 1), id=L + "solve-batched-a-vector"),
    Case(L + "solve", np.linalg.solve, (wc(2, 3), r(3, 2)), wrt=(0, 1), id=L + "solve-batched-a-matrix"),
    Case(L + "solve", np.linalg.solve, (wc(3), r(4, 3, 2)), wrt=(0, 1), id=L + "solve-batched-b"),
    Case(L + "solve", np.linalg.solve, (wc(2, 3), r(4, 1, 3, 2)), wrt=(0, 1), id=L + "solve-broadcast-batches"),
    # det, slogdet
    Case(L + "det", np.linalg.det, (wc(3),), order=3),
    Case(L + "det", np.linalg.det, (wc(2, 3),), id=L + "det-batched"),
    # Singular: det A = 0 exactly, where A^-1 does not exist but the derivative (the cofactor matrix) does
    Case(L + "det", np.linalg.det, (np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.2, 2.0]]),),
         id=L + "det-singular"),
    Case(L + "det", lambda a: np.linalg.det(a) ** 2, (np.stack([np.array([[1.0, 2.0], [2.0, 4.0]]), wc(2)]),),
         id=L + "det-singular-in-a-batch"),
    # Singular with repeated singular values (0 twice, 1 twice): the cofactors from the minors
    Case(L + "det", np.linalg.det, (np.zeros((3, 3)),), order=3, id=L + "det-zero-matrix"),
    Case(L + "det", np.linalg.det, (np.diag([1.0, 1.0, 0.0]),), order=3, id=L + "det-repeated-singular-values"),
    # Singular past 8 x 8 (row 1 = 2 row 0, distinct singular values): the cofactors from the SVD
    Case(L + "det", np.linalg.det, (np.vstack([_ROW9, 2 * _ROW9, r(7, 9) + 3 * np.eye(7, 9, 2)]),),
         id=L + "det-singular-9x9"),
    Case(L + "slogdet", lambda a: np.linalg.slogdet(a)[1], (spd(3),), order=3, id=L + "slogdet-logdet"),
    Case(L + "slogdet", lambda a: np.linalg.slogdet(a)[1], (wc(2, 3),), id=L + "slogdet-batched"),
    Case(L + "slogdet", lambda a: (lambda s, l: s * np.exp(l))(*np.linalg.slogdet(a)), (-wc(3),),
         id=L + "slogdet-sign-times-exp"),
    # cholesky
    Case(L + "cholesky", lambda a: np.linalg.cholesky(sy(a)), (spd(3),), order=3),
    Case(L + "cholesky", lambda a: np.linalg.cholesky(sy(a)), (spd_stack(2, 3),), id=L + "cholesky-batched"),
    Case(L + "cholesky", lambda a: np.linalg.cholesky(a @ a.T + 3 * np.eye(3)), (r(3, 3),),
         id=L + "cholesky-of-gram"),
    # eigh, eigvalsh
    Case(L + "eigh", lambda a: np.linalg.eigh(sy(a))[0], (S3,), order=3, id=L + "eigh-eigenvalues"),
    Case(L + "eigh", lambda a: sign_fixed(np.linalg.eigh(sy(a))[1]), (S3,), id=L + "eigh-eigenvectors-sign-fixed"),
    Case(L + "eigh", lambda a: (lambda w, v: (v * np.exp(w)) @ v.T)(*np.linalg.eigh(sy(a))), (S3,),
         id=L + "eigh-matrix-exponential"),
    Case(L + "eigh", lambda a: sign_fixed(np.linalg.eigh(sy(a), UPLO="U")[1]), (S3,), id=L + "eigh-upper"),
    Case(L + "eigh", lambda a: (lambda w, v: w[..., None] * v ** 2)(*np.linalg.eigh(sy(a))),
         (np.stack([S3, with_eigenvalues(1.0, 2.0, 4.0)]),), id=L + "eigh-batched"),
    Case(L + "eigvalsh", lambda a: np.linalg.eigvalsh(sy(a)), (S3,), order=3),
    Case(L + "eigvalsh", lambda a: np.linalg.eigvalsh(sy(a)), (spd_stack(2, 3),), id=L + "eigvalsh-batched"),
    # qr (signs of R's diagonal are NumPy's and stay fixed under small perturbations)
    Case(L + "qr", lambda a: (lambda q, r_: q @ r_)(*np.linalg.qr(a)), (wc(3),), id=L + "qr-product"),
    Case(L + "qr", lambda a: np.linalg.qr(a)[0], (r(4, 3),), id=L + "qr-tall-q"),
    Case(L + "qr", lambda a: (lambda q, r_: q * np.sign(diag(r_))[..., None, :])(*np.linalg.qr(a)), (wc(3),),
         id=L + "qr-sign-fixed-q"),
    Case(L + "qr", lambda a: np.abs(diag(np.linalg.qr(a, mode="r"))), (r(2, 4, 3),), id=L + "qr-batched-mode-r"),
    # svd, svdvals (distinct singular values; non-square matrices need them nonzero)
    Case(L + "svd", lambda a: np.linalg.svd(a, compute_uv=False), (r(4, 3),), order=3, id=L + "svd-values"),
    Case(L + "svd", lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(*np.linalg.svd(a)), (r(3, 3),),
         id=L + "svd-reconstruct"),
    Case(L + "svd", lambda a: sign_fixed(np.linalg.svd(a)[0]), (r(3, 3),), id=L + "svd-square-u"),
    Case(L + "svd", lambda a: sign_fixed(np.linalg.svd(a, full_matrices=False)[0]), (r(3, 5),), id=L + "svd-wide-u"),
    Case(L + "svd", lambda a: sign_fixed(np.linalg.svd(a, full_matrices=False)[2], -1), (r(3, 5),),
         id=L + "svd-wide-vh"),
    Case(L + "svd", lambda a: (lambda u, s, vh: u[..., :, :1] * vh[..., :1, :] * s[..., :1, None])(
        *np.linalg.svd(a, full_matrices=False)), (r(2, 3, 4),), id=L + "svd-batched-rank-one-part"),
    # full_matrices=True of a non-square matrix (NumPy's default): the extra vectors through the
    # projector onto the complement, which does not depend on their basis; with the thin part too
    Case(L + "svd", lambda a: complement_projector(np.linalg.svd(a)), (r(4, 2),), order=3, id=L + "svd-full-tall"),
    Case(L + "svd", lambda a: complement_projector(np.linalg.svd(a)), (r(2, 4),), order=3, id=L + "svd-full-wide"),
    Case(L + "svd", lambda a: complement_projector(np.linalg.svd(a)), (r(2, 4, 3),), id=L + "svd-full-batched"),
    Case(L + "svd", lambda a: (lambda u, s, vh: (u[..., :, :3] * s[..., None, :]) @ vh)(*np.linalg.svd(a)),
         (r(5, 3),), id=L + "svd-full-tall-reconstruct"),
    Case(L + "svd", lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh[..., :2, :])(*np.linalg.svd(a)),
         (r(2, 5),), id=L + "svd-full-wide-reconstruct"),
    # norm: vector norms
    Case(L + "norm", np.linalg.norm, (r(3, 4),), order=3, id=L + "norm-flat"),
    Case(L + "norm", lambda x: np.linalg.norm(x, 2), (r(5),), id=L + "norm-2"),
    Case(L + "norm", lambda x: np.linalg.norm(x, axis=-1), (r(2, 3, 4),), id=L + "norm-axis-neg"),
    Case(L + "norm", lambda x: np.linalg.norm(x, axis=0, keepdims=True), (r(3, 4),), id=L + "norm-axis-keepdims"),
    Case(L + "norm", lambda x: np.linalg.norm(x), (np.zeros(4),), order=1, id=L + "norm-at-zero"),
    Case(L + "norm", lambda x: np.linalg.norm(x, axis=1), (np.array([[0.0, 0.0], [0.3, -0.4]]),), order=1,
         id=L + "norm-zero-row"),
    Case(L + "norm", lambda x: np.linalg.norm(x, 1), (r(5),), id=L + "norm-1"),
    Case(L + "norm", lambda x: np.linalg.norm(x, np.inf), (r(5),), id=L + "norm-inf"),
    Case(L + "norm", lambda x: np.linalg.norm(x, -np.inf, axis=1), (r(3, 4),), id=L + "norm-neg-inf"),
    Case(L + "norm", lambda x: x * np.linalg.norm(x, 0), (r(4),), id=L + "norm-0"),
    Case(L + "norm", lambda x: np.linalg.norm(x, 3, axis=0), (r(4, 2),), order=3, id=L + "norm-p3"),
    Case(L + "norm", lambda x: np.linalg.norm(x, 1.5), (r(5),), id=L + "norm-p1.5"),
    Case(L + "norm", lambda x: np.linalg.norm(x, -1), (r(4, lo=0.5, hi=2.0),), id=L + "norm-p-1"),
    # norm: matrix norms
    Case(L + "norm", lambda x: np.linalg.norm(x, "fro"), (r(3, 4),), id=L + "norm-fro"),
    Case(L + "norm", lambda x: np.linalg.norm(x, "fro", axis=(2, 0), keepdims=True), (r(3, 2, 4),),
         id=L + "norm-fro-axes"),
    Case(L + "norm", lambda x: np.linalg.norm(x, 1), (r(3, 4),), id=L + "norm-matrix-1"),
    Case(L + "norm", lambda x: np.linalg.norm(x, -1, axis=(1, 0)), (r(3, 4),), id=L + "norm-matrix-neg-1"),
    Case(L + "norm", lambda x: np.linalg.norm(x, np.inf, axis=(0, 2)), (r(3, 2, 4),), id=L + "norm-matrix-inf"),
    Case(L + "norm", lambda x: np.linalg.norm(x, -np.inf), (r(3, 4),), id=L + "norm-matrix-neg-inf"),
    Case(L + "norm", lambda x: np.linalg.norm(x, 2), (r(3, 4),), id=L + "norm-matrix-2"),
    Case(L + "norm", lambda x: np.linalg.norm(x, -2, axis=(-1, -2), keepdims=True), (r(2, 3, 3),),
         id=L + "norm-matrix-neg-2"),
    Case(L + "norm", lambda x: np.linalg.norm(x, "nuc", axis=(0, 2)), (r(3, 2, 4),), id=L + "norm-nuc"),
    # compositions: matrix_power, pinv, multi_dot
    Case(L + "matrix_power", lambda a: np.linalg.matrix_power(a, 5), (r(3, 3),)),
    Case(L + "matrix_power", lambda a: np.linalg.matrix_power(a, -2), (wc(2, 3),), id=L + "matrix_power-negative"),
    Case(L + "matrix_power", lambda a: a * np.linalg.matrix_power(a, 0), (r(3, 3),), id=L + "matrix_power-0"),
    Case(L + "pinv", np.linalg.pinv, (wc(3),)),
    Case(L + "pinv", np.linalg.pinv, (r(5, 3),), id=L + "pinv-tall"),
    Case(L + "pinv", np.linalg.pinv, (r(2, 3, 5),), id=L + "pinv-wide-batched"),
    Case(L + "pinv", lambda b, c: np.linalg.pinv(b @ c), (r(4, 2), r(2, 3)), wrt=(0, 1), id=L + "pinv-rank-deficient"),
    Case(L + "multi_dot", lambda a, b, c: np.linalg.multi_dot([a, b, c]), (r(3), r(3, 5), r(5, 2)), wrt=(0, 1, 2)),
    # tensorsolve and tensorinv: a reshaped to a square matrix (well-conditioned: wc)
    Case(L + "tensorsolve", np.linalg.tensorsolve, (np.reshape(wc(6), (3, 2, 2, 3)), r(3, 2)), wrt=(0, 1)),
    Case(L + "tensorsolve", lambda a, b: np.linalg.tensorsolve(a, b, axes=(0, 1)),
         (np.moveaxis(np.reshape(wc(6), (3, 2, 2, 3)), (2, 3), (0, 1)), r(3, 2)), wrt=(0, 1),
         id=L + "tensorsolve-axes"),
    Case(L + "tensorinv", lambda a: np.linalg.tensorinv(a, ind=1), (np.reshape(wc(6), (6, 3, 2)),)),
    Case(L + "multi_dot", lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), (r(4, 6), r(6, 2), r(2, 5), r(5)),
         wrt=(0, 1, 2, 3), id=L + "multi_dot-four"),
    Case("np.linalg.lstsq", lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], (r(5, 3), r(5, 2)), wrt=(0, 1)),
    Case("np.linalg.lstsq", lambda a: np.linalg.lstsq(a, np.arange(5.0), rcond=None)[1] * np.linalg.lstsq(a.T, a[0], rcond=None)[0].sum(),
         (r(5, 3),), id="lstsq-residuals-and-underdetermined"),
    Case("np.linalg.cond", lambda a: np.linalg.cond(a) + np.linalg.cond(a, -2) + np.linalg.cond(a, "fro")
         + np.linalg.cond(a, 1) + np.linalg.cond(a, np.inf), (spd(3) + r(3, 3),)),
]

# NumPy 2: named results, cholesky(upper=True), svdvals, vector_norm and matrix_norm.
if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
    CASES += [
        Case(L + "slogdet", lambda a: np.linalg.slogdet(a).logabsdet, (-wc(3),), id=L + "slogdet-negative-det"),
        Case(L + "cholesky", lambda a: np.linalg.cholesky(sy(a), upper=True), (spd(3),), id=L + "cholesky-upper"),
        Case(L + "eigh", lambda a: np.linalg.eigh(sy(a)).eigenvectors ** 2, (S3,), id=L + "eigh-eigenvectors-squared"),
        Case(L + "qr", lambda a: np.linalg.qr(a).R, (r(4, 3),), id=L + "qr-tall-r"),
        Case(L + "svd", lambda a: sign_fixed(np.linalg.svd(a, full_matrices=False).U), (r(4, 3),), id=L + "svd-tall-u"),
        Case(L + "svd", lambda a: sign_fixed(np.linalg.svd(a, full_matrices=False).Vh, -1), (r(4, 3),),
             id=L + "svd-tall-vh"),
        Case(L + "svdvals", np.linalg.svdvals, (r(3, 4),)),
        Case(L + "svdvals", np.linalg.svdvals, (r(2, 3, 3),), id=L + "svdvals-batched"),
        Case(L + "vector_norm", lambda x: np.linalg.vector_norm(x, axis=(0, 2)), (r(3, 2, 4),)),
        Case(L + "vector_norm", lambda x: np.linalg.vector_norm(x, ord=4, keepdims=True), (r(3, 2),),
             id=L + "vector_norm-p4-keepdims"),
        Case(L + "vector_norm", lambda x: np.linalg.vector_norm(x, ord=np.inf, axis=-1), (r(3, 4),),
             id=L + "vector_norm-inf"),
        Case(L + "matrix_norm", np.linalg.matrix_norm, (r(2, 3, 4),)),
        Case(L + "matrix_norm", lambda x: np.linalg.matrix_norm(x, ord="nuc"), (r(2, 3, 4),), id=L + "matrix_norm-nuc"),
    ]
