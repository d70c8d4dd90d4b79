"""Rules for the np.linalg decompositions: cholesky, eigh, eigvalsh, qr, svd and svdvals.

NumPy's symmetric-input functions (cholesky, eigh, eigvalsh) read one triangle of A (UPLO; cholesky's
upper=True reads the upper one): jaccli differentiates that function, the decomposition of the triangle
mirrored, so finite differences of NumPy's function agree along any direction (a step in the triangle
not read changes nothing). Inside `jaccli.symmetric_derivatives()` they are differentiated as JAX and
PyTorch do, as functions of a symmetric matrix: at a symmetric A the derivative is that of f((A + A^T)/2),
a perturbation's antisymmetric part is ignored, and the gradient of a scalar is symmetric (for eigenvalue
i it is outer(v_i, v_i)).
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..facts import MAY_FAIL, NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES, allow_in_expressions
from ..structure import Dense
from ..registry import family, primitive, register
from ..thread_state import ThreadSlot
from .linalg import diag_embed, diag_part, inv, mT, result_type_of, solve, sym

family("linalg")

# True (per thread) inside jaccli.symmetric_derivatives(): the symmetric-part convention of JAX and PyTorch.
SYMMETRIC_PART = ThreadSlot()


def _as_read(a, upper):
    """The matrix NumPy's eigh, eigvalsh or cholesky decomposes: a's lower (upper) triangle mirrored, so that
    the derivative is that of NumPy's function; a itself under the symmetric-part convention."""
    if SYMMETRIC_PART.v:
        return a
    if upper:
        return np.triu(a) + mT(np.triu(a, 1))
    return np.tril(a) + mT(np.tril(a, -1))


def _off_diagonal_inverse(d, eye):
    """1 / d off the diagonal and exactly 0 on it, where d is zero.

    Off the diagonal d is a gap between eigenvalues (or squared singular values): where two
    coincide the entry is inf, and only the derivatives of the vectors use it, so the values'
    derivatives stay finite and no warning is raised for them.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return (1.0 - eye) / (d + eye)


# ---------------------------------------------------------------------------
# cholesky: dL = L Phi(L^-1 dA L^-T), Phi = lower triangle with the diagonal halved
# ---------------------------------------------------------------------------
def _cholesky_impl(a, upper):
    return np.linalg.cholesky(a, upper=True) if upper else np.linalg.cholesky(a)


cholesky = primitive("np.linalg.cholesky", _cholesky_impl)
STRUCTURES[cholesky] = Dense()
MAY_FAIL.add(cholesky)  # (raises LinAlgError at some values: facts.MAY_FAIL)


def _cholesky_parts(ans, upper):
    lower = mT(ans) if upper else ans
    n = np.shape(ans)[-1]
    phi = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)
    l_inv = inv(lower)
    return lower, l_inv, mT(l_inv), phi


def _cholesky_vjp(ans, a, upper):
    lower, l_inv, l_inv_t, phi = _cholesky_parts(ans, upper)
    lower_t = mT(lower)

    def rule(g):
        g_lower = mT(g) if upper else g
        return sym(l_inv_t @ ((lower_t @ g_lower) * phi) @ l_inv)
    return rule


def _cholesky_jvp(ans, a, upper):
    lower, l_inv, l_inv_t, phi = _cholesky_parts(ans, upper)

    def rule(t):
        d_lower = lower @ ((l_inv @ sym(t) @ l_inv_t) * phi)
        return mT(d_lower) if upper else d_lower
    return rule


cholesky.defvjp(_cholesky_vjp)
cholesky.defjvp(_cholesky_jvp)
SAMPLE_RULES[cholesky] = NOT_SEPARABLE
register(np.linalg.cholesky, lambda a, upper=False: cholesky(_as_read(a, bool(upper)), bool(upper)),
         prims=(cholesky,),
         notes="the derivative of what NumPy computes: of the lower triangle (upper=True: the upper one), mirrored; "
               "inside jaccli.symmetric_derivatives() that of cholesky((A + A.T)/2)")


# ---------------------------------------------------------------------------
# eigh and eigvalsh: dw_i = v_i^T dA v_i, dV = V (F * V^T dA V), F_ij = 1/(w_j - w_i)
# ---------------------------------------------------------------------------
eigh = primitive("np.linalg.eigh", np.linalg.eigh, multi_out=True)
STRUCTURES[eigh] = Dense()
MAY_FAIL.add(eigh)
_EighResult = result_type_of(np.linalg.eigh, np.eye(1))


def _eigh_parts(ans):
    w, v = ans
    eye = np.eye(np.shape(v)[-1])
    # Distinct eigenvalues are assumed: F is infinite where two of them coincide.
    f = _off_diagonal_inverse(np.expand_dims(w, -2) - np.expand_dims(w, -1), eye)
    return w, v, mT(v), f, eye


def _eigh_vjp(ans, a, UPLO="L"):
    w, v, v_t, f, eye = _eigh_parts(ans)

    def rule(g):
        g_w, g_v = g
        if g_v is None:
            return (v * np.expand_dims(g_w, -2)) @ v_t  # symmetric already: V diag(g_w) V^T
        inner = f * (v_t @ g_v)
        if g_w is not None:
            inner = inner + diag_embed(g_w, eye)
        return sym(v @ inner @ v_t)
    return rule


def _eigh_jvp(ans, a, UPLO="L"):
    w, v, v_t, f, eye = _eigh_parts(ans)

    def rule(t):
        p = sym(v_t @ t @ v)
        with np.errstate(invalid="ignore"):  # NaN only in the vectors' tangent at coinciding eigenvalues
            d_v = v @ (f * p)
        return diag_part(p, eye), d_v
    return rule


eigh.defvjp(_eigh_vjp)
eigh.defjvp(_eigh_jvp)
SAMPLE_RULES[eigh] = NOT_SEPARABLE


def _eigh_handler(a, UPLO="L"):
    w, v = eigh(_as_read(a, UPLO == "U"), UPLO=UPLO)
    return _EighResult(w, v) if _EighResult else (w, v)


_SYMMETRIC_NOTE = ("the derivative of what NumPy computes: of the triangle it reads (UPLO), mirrored; inside "
                   "jaccli.symmetric_derivatives() that of f((A + A.T)/2), with symmetric gradients")
register(np.linalg.eigh, _eigh_handler, prims=(eigh,),
         notes=_SYMMETRIC_NOTE + "; eigenvectors need distinct eigenvalues (1/(w_j - w_i)); their "
               "signs are NumPy's, and the derivative keeps each sign fixed")


def _eigvalsh_impl(a, UPLO="L"):
    return np.linalg.eigvalsh(a, UPLO=UPLO)


eigvalsh = primitive("np.linalg.eigvalsh", _eigvalsh_impl)
STRUCTURES[eigvalsh] = Dense()
MAY_FAIL.add(eigvalsh)


def _eigvalsh_vjp(ans, a, UPLO="L"):
    v = eigh(a, UPLO=UPLO)[1]  # recorded on a's level, so the rule can itself be differentiated
    v_t = mT(v)
    return lambda g: (v * np.expand_dims(g, -2)) @ v_t


def _eigvalsh_jvp(ans, a, UPLO="L"):
    v = eigh(a, UPLO=UPLO)[1]
    return lambda t: np.sum(v * (t @ v), axis=-2)


eigvalsh.defvjp(_eigvalsh_vjp)
eigvalsh.defjvp(_eigvalsh_jvp)
SAMPLE_RULES[eigvalsh] = NOT_SEPARABLE
register(np.linalg.eigvalsh, lambda a, UPLO="L": eigvalsh(_as_read(a, UPLO == "U"), UPLO=UPLO),
         prims=(eigvalsh,),
         notes=_SYMMETRIC_NOTE + "; higher orders need distinct eigenvalues")


# ---------------------------------------------------------------------------
# qr (reduced, m >= n, full rank): with C = Q^T dA R^-1 and O = tril(C, -1) - tril(C, -1)^T,
# dQ = Q (O - C) + dA R^-1 and dR = (C - O) R
# ---------------------------------------------------------------------------
qr = primitive("np.linalg.qr", lambda a: np.linalg.qr(a, mode="reduced"), multi_out=True)
STRUCTURES[qr] = Dense()
_QRResult = result_type_of(np.linalg.qr, np.eye(1))


def _qr_masks(n):
    strict_lower = np.tril(np.ones((n, n)), -1)
    return strict_lower, 1.0 - strict_lower


def _qr_vjp(ans, a):
    q, r = ans
    q_t, r_t = mT(q), mT(r)
    strict_lower, upper = _qr_masks(np.shape(r)[-1])

    def rule(g):
        g_q, g_r = g
        m = None if g_r is None else g_r @ r_t
        if g_q is not None:
            m = -(q_t @ g_q) if m is None else m - q_t @ g_q
        c_bar = m * upper + mT(m) * strict_lower
        d_bar = q @ c_bar if g_q is None else g_q + q @ c_bar
        return mT(solve(r, mT(d_bar)))  # d_bar R^-T
    return rule


def _qr_jvp(ans, a):
    q, r = ans
    q_t, r_t = mT(q), mT(r)
    strict_lower, _ = _qr_masks(np.shape(r)[-1])

    def rule(t):
        d = mT(solve(r_t, mT(t)))  # dA R^-1
        c = q_t @ d
        low = c * strict_lower
        omega = low - mT(low)
        return q @ (omega - c) + d, (c - omega) @ r
    return rule


qr.defvjp(_qr_vjp)
qr.defjvp(_qr_jvp)
SAMPLE_RULES[qr] = NOT_SEPARABLE


def _unsupported(message):
    return UnsupportedOperationError(message, user_site(3))


def _qr_handler(a, mode="reduced"):
    m, n = np.shape(a)[-2:]
    if m < n or mode not in ("reduced", "r", "complete") or (mode == "complete" and m != n):
        raise _unsupported(f"np.linalg.qr(mode={mode!r}) of a {m}x{n} matrix is not differentiable in jaccli; "
                           "supported: mode='reduced' or 'r' for square or tall (m >= n) full-rank matrices")
    q, r = qr(a)
    if mode == "r":
        return r
    return _QRResult(q, r) if _QRResult else (q, r)


register(np.linalg.qr, _qr_handler, prims=(qr,),
         notes="mode 'reduced' or 'r', m >= n, full rank; signs of R's diagonal are NumPy's (kept fixed)")


# ---------------------------------------------------------------------------
# svd (thin) and svdvals: dS = U^T dA V, ds = diag(dS), F_ij = 1/(s_j^2 - s_i^2)
# ---------------------------------------------------------------------------
svd = primitive("np.linalg.svd", lambda a, hermitian=False:
                np.linalg.svd(a, full_matrices=False, hermitian=hermitian), multi_out=True)
STRUCTURES[svd] = Dense()
MAY_FAIL.add(svd)
_SVDResult = result_type_of(np.linalg.svd, np.eye(1))


def _svd_parts(ans, a):
    u, s, vh = ans
    m, n = np.shape(a)[-2:]
    eye = np.eye(min(m, n))
    s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    f = _off_diagonal_inverse((s_row + s_col) * (s_row - s_col), eye)
    return u, s_row, s_col, vh, mT(u), mT(vh), f, eye, m, n


def _svd_vjp(ans, a, hermitian=False):
    u, s_row, s_col, vh, u_t, v, f, eye, m, n = _svd_parts(ans, a)

    def rule(g):
        g_u, g_s, g_vh = g
        inner = None if g_s is None else diag_embed(g_s, eye)
        if g_u is not None:
            j = f * (u_t @ g_u)
            inner = (j + mT(j)) * s_row if inner is None else inner + (j + mT(j)) * s_row
        if g_vh is not None:
            g_v = mT(g_vh)
            k = f * (vh @ g_v)
            inner = s_col * (k + mT(k)) if inner is None else inner + s_col * (k + mT(k))
        out = u @ inner @ vh
        # Columns of dA outside the span of U (or rows outside V) reach U (or V) only when
        # the matrix is not square; these terms need nonzero singular values.
        if m > n and g_u is not None:
            out = out + ((g_u - u @ (u_t @ g_u)) / s_row) @ vh
        if n > m and g_vh is not None:
            out = out + u @ mT((g_v - v @ (vh @ g_v)) / s_row)
        return out
    return rule


def _svd_jvp(ans, a, hermitian=False):
    u, s_row, s_col, vh, u_t, v, f, eye, m, n = _svd_parts(ans, a)

    def rule(t):
        p = u_t @ t @ v
        ps, sp = p * s_row, s_col * p
        with np.errstate(invalid="ignore"):  # NaN only in the vectors' tangents at coinciding values
            d_u = u @ (f * (ps + mT(ps)))
            d_v = v @ (f * (sp + mT(sp)))
        if m > n:
            tv = t @ v
            d_u = d_u + (tv - u @ (u_t @ tv)) / s_row
        if n > m:
            t_tu = mT(t) @ u
            d_v = d_v + (t_tu - v @ (vh @ t_tu)) / s_row
        return d_u, diag_part(p, eye), mT(d_v)
    return rule


svd.defvjp(_svd_vjp)
svd.defjvp(_svd_jvp)
SAMPLE_RULES[svd] = NOT_SEPARABLE


def _svdvals_impl(a):
    return np.linalg.svd(a, compute_uv=False)


svdvals = primitive("np.linalg.svdvals", _svdvals_impl)
STRUCTURES[svdvals] = Dense()
MAY_FAIL.add(svdvals)


def _svdvals_vjp(ans, a):
    u, _, vh = svd(a)  # recorded on a's level, so the rule can itself be differentiated
    return lambda g: (u * np.expand_dims(g, -2)) @ vh


def _svdvals_jvp(ans, a):
    u, _, vh = svd(a)
    v = mT(vh)
    return lambda t: np.sum(u * (t @ v), axis=-2)


svdvals.defvjp(_svdvals_vjp)
svdvals.defjvp(_svdvals_jvp)
SAMPLE_RULES[svdvals] = NOT_SEPARABLE


# ---------------------------------------------------------------------------
# svd with full_matrices=True of a non-square matrix. Its first min(m, n) vectors are the thin
# SVD's; the others (U2 for a tall A, the rows V2^T of Vh for a wide one) are a basis of the
# complement of A's column (row) space, which NumPy picks and which is not unique: any rotation
# of it is as good. jaccli moves the basis NumPy gives at the point without rotating it within
# the complement (U2^T dU2 = 0), the least change that keeps it orthonormal and orthogonal to
# A's range. With A = U1 S V1^T, U2^T A = 0 gives U2^T dU1 = U2^T dA V1 S^-1, so
#     dU2 = -U1 dU1^T U2 = -U1 S^-1 V1^T dA^T U2          (tall: m > n)
#     dV2 = -V1 S^-1 U1^T dA V2                            (wide: m < n)
# Whatever f computes from the complement without depending on its basis (the projector
# U2 U2^T = I - A A^+, norms, distances to the subspace) gets its exact derivative; the entries
# of U2 themselves get those of this convention.
# ---------------------------------------------------------------------------
svd_full = primitive("np.linalg.svd(full_matrices=True)",
                     lambda a: np.linalg.svd(a, full_matrices=True), multi_out=True)
STRUCTURES[svd_full] = Dense()
MAY_FAIL.add(svd_full)


def _full_parts(ans, a):
    """(thin u, s, thin vh), the complement basis (U2, or V2 as columns), and the sizes."""
    u, s, vh = ans
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    thin = (u[..., :, :k], s, vh[..., :k, :])
    extra = u[..., :, k:] if m > n else mT(vh[..., k:, :])
    return thin, extra, m, n, k


def _svd_full_vjp(ans, a):
    (u1, s, vh1), extra, m, n, k = _full_parts(ans, a)
    thin = _svd_vjp((u1, s, vh1), a)
    us = u1 / np.expand_dims(s, -2)  # U1 S^-1

    def rule(g):
        g_u, g_s, g_vh = g
        g_u1 = None if g_u is None else g_u[..., :, :k]
        g_vh1 = None if g_vh is None else g_vh[..., :k, :]
        out = None if g_u1 is None and g_s is None and g_vh1 is None else thin((g_u1, g_s, g_vh1))
        if m > n and g_u is not None:  # <G2, dU2> = -<U2 G2^T U1 S^-1 V1^T, dA>
            part = -(extra @ mT(g_u[..., :, k:]) @ us @ vh1)
        elif n > m and g_vh is not None:  # <G2, dV2^T> = -<U1 S^-1 V1^T G2^T V2^T, dA>
            part = -(us @ (vh1 @ mT(g_vh[..., k:, :])) @ mT(extra))
        else:
            return out
        return part if out is None else out + part
    return rule


def _svd_full_jvp(ans, a):
    (u1, s, vh1), extra, m, n, k = _full_parts(ans, a)
    thin = _svd_jvp((u1, s, vh1), a)
    s_row = np.expand_dims(s, -2)

    def rule(t):
        d_u1, d_s, d_vh1 = thin(t)
        if m > n:
            d_u2 = -((u1 / s_row) @ (vh1 @ mT(t) @ extra))
            return np.concatenate([d_u1, d_u2], axis=-1), d_s, d_vh1
        d_v2 = -((mT(vh1) / s_row) @ (mT(u1) @ t @ extra))
        return d_u1, d_s, np.concatenate([d_vh1, mT(d_v2)], axis=-2)
    return rule


svd_full.defvjp(_svd_full_vjp)
svd_full.defjvp(_svd_full_jvp)
SAMPLE_RULES[svd_full] = NOT_SEPARABLE


def _svd_handler(a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return svdvals(a)
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n and not hermitian:  # hermitian: NumPy's error (a square matrix is needed)
        u, s, vh = svd_full(a)
    else:
        u, s, vh = svd(a, hermitian=bool(hermitian))
    return _SVDResult(u, s, vh) if _SVDResult else (u, s, vh)


register(np.linalg.svd, _svd_handler, prims=(svd, svd_full, svdvals),
         notes="singular vectors need distinct singular values (and nonzero ones unless square); their "
               "signs are NumPy's, kept fixed by the derivative; full_matrices=True's extra vectors (a "
               "basis of the complement) move without rotating within it")
allow_in_expressions("linalg.cholesky", "linalg.eigh", "linalg.qr", "linalg.svd")
if hasattr(np.linalg, "svdvals"):
    register(np.linalg.svdvals, lambda x: svdvals(x), prims=(svdvals,),
             notes="the derivative of s_i is outer(u_i, v_i); higher orders need distinct singular values")
