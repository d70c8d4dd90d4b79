"""Rules for matrix products: matmul (every block rule is one GEMM where it can be) and dot."""

from __future__ import annotations

import numpy as np

from ..registry import family, primitive, register, register_derived
from ._util import unbroadcast

family("products")


def _bmm(a, b):
    """a @ b for a stack `a` and a matrix `b`, as one GEMM over the flattened stack."""
    if type(a) is np.ndarray and type(b) is np.ndarray and b.ndim == 2 and a.ndim > 2:
        out = np.reshape(a, (-1, a.shape[-1])) @ b
        return out.reshape(a.shape[:-1] + (b.shape[-1],))
    return np.matmul(a, b)


def _swap(a):
    return np.swapaxes(a, -1, -2)


def _left(a, b):
    """a @ b for a matrix `a` and a stack `b`: (b^T a^T)^T keeps it to one GEMM."""
    if np.ndim(a) == 2 and np.ndim(b) > 2:
        return _swap(_bmm(_swap(b), _swap(a)))
    return np.matmul(a, b)


def _promote(x, first: bool):
    """Matrix view of a matmul operand: a vector is a row (first) or column (second) matrix."""
    if np.ndim(x) >= 2:
        return x
    return np.reshape(x, (1, -1)) if first else np.reshape(x, (-1, 1))


def _out2_shape(a, b) -> tuple:
    a2 = np.shape(a) if np.ndim(a) >= 2 else (1,) + np.shape(a)
    b2 = np.shape(b) if np.ndim(b) >= 2 else np.shape(b) + (1,)
    batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    return batch + (a2[-2], b2[-1])


matmul = primitive("np.matmul", np.matmul)


def _matmul_vjp_a(ans, a, b):
    out2 = _out2_shape(a, b)
    a2_shape = np.shape(a) if np.ndim(a) >= 2 else (1,) + np.shape(a)
    a_shape = np.shape(a)
    b2 = _promote(b, False)
    b2t = _swap(b2)

    def rule(g):
        k = np.shape(g)[0]
        g2 = np.reshape(g, (k,) + out2)
        da = unbroadcast(_bmm(g2, b2t), a2_shape)
        return np.reshape(da, (k,) + a_shape)
    return rule


def _matmul_vjp_b(ans, a, b):
    out2 = _out2_shape(a, b)
    b2_shape = np.shape(b) if np.ndim(b) >= 2 else np.shape(b) + (1,)
    b_shape = np.shape(b)
    a2 = _promote(a, True)

    def rule(g):
        k = np.shape(g)[0]
        g2 = np.reshape(g, (k,) + out2)
        db = unbroadcast(_swap(_bmm(_swap(g2), a2)) if np.ndim(a2) == 2 else np.matmul(_swap(a2), g2),
                         b2_shape)
        return np.reshape(db, (k,) + b_shape)
    return rule


def _matmul_jvp_a(ans, a, b):
    out_shape = np.shape(ans)
    a2_shape = np.shape(a) if np.ndim(a) >= 2 else (1,) + np.shape(a)
    b2 = _promote(b, False)

    def rule(t):
        k = np.shape(t)[0]
        return np.reshape(_bmm(np.reshape(t, (k,) + a2_shape), b2), (k,) + out_shape)
    return rule


def _matmul_jvp_b(ans, a, b):
    out_shape = np.shape(ans)
    b2_shape = np.shape(b) if np.ndim(b) >= 2 else np.shape(b) + (1,)
    a2 = _promote(a, True)

    def rule(t):
        k = np.shape(t)[0]
        return np.reshape(_left(a2, np.reshape(t, (k,) + b2_shape)), (k,) + out_shape)
    return rule


matmul.defvjp(_matmul_vjp_a, _matmul_vjp_b)
matmul.defjvp(_matmul_jvp_a, _matmul_jvp_b)


def _matmul_handler(x1, x2, /, out=None, **kw):
    if np.ndim(x1) == 0 or np.ndim(x2) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    return matmul(x1, x2)


register(np.matmul, _matmul_handler, prims=(matmul,),
         notes="block rules are single matrix products (no loop over seeds)")


def _dot(a, b, out=None):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    if np.ndim(b) <= 2:
        return _matmul_handler(a, b)
    return np.tensordot(a, b, axes=([-1], [-2]))


register_derived(np.dot, _dot, uses=(matmul,))
