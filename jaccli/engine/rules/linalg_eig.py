"""Rules for the eigenvalues and eigenvectors of general square matrices: np.linalg.eig and eigvals.

With M = V^-1 dA V: dw = diag(M), and the eigenvectors move by V (F o M), F_ij = 1/(w_j - w_i)
off the diagonal (as JAX's), plus a multiple of each vector that keeps NumPy's normalisation
(LAPACK's geev): unit 2-norm and, for complex vectors, the largest entry real. That makes the
derivative the one of the function NumPy computes. Eigenvalues must be distinct: F is infinite
where two coincide (the eigenvalues' own rule diag(V^-1 dA V) stays finite there, for NumPy's V).
NumPy returns real arrays where every eigenvalue is real; the rules follow its dtypes.
"""

from __future__ import annotations

import numpy as np

from ..facts import MAY_FAIL, NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES
from ..registry import family, primitive, register
from ..structure import Dense
from ..tape import is_complex
from ..tracer import guarded
from .linalg import diag_embed, diag_part, mT, result_type_of, solve

family("linalg")

eig = primitive("np.linalg.eig", np.linalg.eig, multi_out=True)
_EigResult = result_type_of(np.linalg.eig, np.eye(1))


def _largest(v):
    """A mask of each column's largest entry (by modulus): the one LAPACK makes real."""
    v = np.asarray(v)
    mask = np.zeros(v.shape, dtype=bool)
    np.put_along_axis(mask, np.expand_dims(np.argmax(np.abs(v), axis=-2), -2), True, axis=-2)
    return mask


def _eig_parts(w, v):
    n = np.shape(v)[-1]
    eye = np.eye(n)
    with np.errstate(divide="ignore"):
        f = 1.0 / (eye + np.expand_dims(w, -2) - np.expand_dims(w, -1)) - eye
    turns = is_complex(v)  # complex vectors: their phase is fixed by the largest entry
    top = guarded(_largest, v) if turns else None
    v_top = np.sum(np.where(top, v, 0.0), axis=-2) if turns else None
    return eye, f, turns, top, v_top


def _eig_jvp(ans, a):
    w, v = ans
    eye, f, turns, top, v_top = _eig_parts(w, v)

    def rule(t):
        m = solve(v, t) @ v
        u = v @ (f * m)
        c = -np.real(np.sum(np.conjugate(v) * u, axis=-2))  # keeps each |v_j| = 1
        if turns:  # and the largest entry real
            c = c - 1j * np.imag(np.sum(np.where(top, u, 0.0), axis=-2)) / v_top
        return diag_part(m, eye), u + v * np.expand_dims(c, -2)
    return rule


def _eig_vjp(ans, a):
    w, v = ans
    eye, f, turns, top, v_top = _eig_parts(w, v)
    v_t = mT(v)

    def rule(g):
        g_w, g_v = g
        g_m = 0.0
        if g_v is not None:
            s = np.sum(g_v * v, axis=-2)  # <g_v, v c> = Re(sum_j c_j s_j)
            g_u = g_v - np.expand_dims(np.real(s), -2) * np.conjugate(v)
            if turns:
                g_u = g_u - np.where(top, np.expand_dims(1j * np.imag(s) / v_top, -2), 0.0)
            g_m = f * (v_t @ g_u)
        if g_w is not None:
            g_m = g_m + diag_embed(g_w, eye)
        return solve(mT(v), g_m @ v_t)
    return rule


eig.defvjp(_eig_vjp)
eig.defjvp(_eig_jvp)
STRUCTURES[eig] = Dense()
MAY_FAIL.add(eig)  # (raises LinAlgError at some values: facts.MAY_FAIL)
SAMPLE_RULES[eig] = NOT_SEPARABLE


def _eig_handler(a):
    w, v = eig(a)
    return _EigResult(w, v) if _EigResult else (w, v)


register(np.linalg.eig, _eig_handler, prims=(eig,),
         notes="distinct eigenvalues; eigenvectors normalised as NumPy's (unit norm, the largest entry real), "
               "and the derivative keeps that normalisation")


def _nearest(w, ans):
    """For each of NumPy's eigenvalues `ans`, the position of the nearest one in eig's `w` (the same
    LAPACK routine gives them in the same order; this makes sure)."""
    return np.argmin(np.abs(np.expand_dims(np.asarray(ans), -1) - np.expand_dims(np.asarray(w), -2)), axis=-1)


def _eig_of(ans, a):
    """eig(a), recorded on a's level (so the rules can be differentiated), in the order of ans."""
    w, v = eig(a)
    order = guarded(_nearest, w, ans)
    return np.take_along_axis(w, order, axis=-1), np.take_along_axis(v, np.expand_dims(order, -2), axis=-1)


def _eigvals_vjp(ans, a):
    rule = _eig_vjp(_eig_of(ans, a), a)
    return lambda g: rule((g, None))


def _eigvals_jvp(ans, a):
    w, v = _eig_of(ans, a)
    eye = np.eye(np.shape(v)[-1])
    return lambda t: diag_part(solve(v, t) @ v, eye)


eigvals = primitive("np.linalg.eigvals", np.linalg.eigvals)
eigvals.defvjp(_eigvals_vjp)
eigvals.defjvp(_eigvals_jvp)
STRUCTURES[eigvals] = Dense()
MAY_FAIL.add(eigvals)
SAMPLE_RULES[eigvals] = NOT_SEPARABLE
register(np.linalg.eigvals, lambda a: eigvals(a), prims=(eigvals,),
         notes="dw = diag(V^-1 dA V) with np.linalg.eig's V; distinct eigenvalues for higher orders")
