"""Rules for matrix products: matmul (block rules are single GEMMs), dot, tensordot and relatives, kron, trace."""

from __future__ import annotations

import math

import numpy as np

from ..facts import MATRIX_PRODUCTS, SAMPLE_RULES, STRUCTURES, allow_in_expressions
from ..structure import Contracts
from ..registry import family, primitive, register, register_derived
from ..sample_independence import traced_args
from ..tracer import Tracer
from ._util import axis_index, in_dtype, loop_dtypes, reduction_dtype, refuse_core_axes, unbroadcast

family("products")


_DENSE = (np.ndarray, Tracer)


def _bmm(a, b):
    """a @ b for a stack `a` and a matrix `b`, as one GEMM over the flattened stack.

    Traced operands too (a sweep being recorded for a higher derivative), unless the stack holds
    one matrix: NumPy loops over the stack's matrices, K small products for a block of K rows.
    """
    shape = np.shape(a)
    if type(b) in _DENSE and np.ndim(b) == 2 and len(shape) > 2 and (
            type(a) is np.ndarray or (type(a) is Tracer and math.prod(shape[:-2]) > 1)):
        out = np.matmul(np.reshape(a, (math.prod(shape[:-1]), shape[-1])), b)  # not -1: the inner size may be 0
        return np.reshape(out, shape[:-1] + (np.shape(b)[-1],))
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
    batch = () if len(a2) == len(b2) == 2 else np.broadcast_shapes(a2[:-2], b2[:-2])
    return batch + (a2[-2], b2[-1])


matmul = primitive("np.matmul", np.matmul)
STRUCTURES[matmul] = Contracts()


def _matrix(x) -> bool:
    return type(x) is np.ndarray and x.ndim == 2


def _vector(x) -> bool:
    """A plain or traced vector (a traced one when the sweep itself is recorded: replay/compiled_sweeps.py)."""
    return (type(x) is np.ndarray or type(x) is Tracer) and x.ndim == 1


def _matmul_vjp_a(ans, a, b):
    if _vector(a) and _matrix(b):
        # x @ W, the common layer: a block (K, q) of cotangents pulls back as one GEMM, g @ W^T
        # (identity rows, a SparseBlock, as a gather of W^T's rows: SparseBlock._matmul).
        bt = b.T
        return lambda g: g @ bt
    return _matmul_vjp_a_general(a, b)


def _matmul_vjp_a_general(a, b):
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
    if _matrix(a) and _vector(b):
        # W @ x, the common layer: a block (K, p) of cotangents pulls back as one GEMM, g @ W.
        return lambda g: g @ a
    return _matmul_vjp_b_general(a, b)


def _matmul_vjp_b_general(a, b):
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


def _padded(shape2: tuple, out2: tuple) -> tuple:
    """A tangent's matrix shape with length-1 batch axes, so that its block axis stays in front."""
    return (1,) * (len(out2) - len(shape2)) + tuple(shape2)


def _matmul_jvp_a(ans, a, b):
    if type(a) is np.ndarray and a.ndim == 1 and _matrix(b):  # x @ W: t @ W, one GEMM
        return lambda t: t @ b
    return _matmul_jvp_a_general(ans, a, b)


def _matmul_jvp_a_general(ans, a, b):
    out_shape = np.shape(ans)
    a2_shape = _padded(np.shape(a) if np.ndim(a) >= 2 else (1,) + np.shape(a), _out2_shape(a, b))
    b2 = _promote(b, False)

    def rule(t):
        k = np.shape(t)[0]
        return np.reshape(_bmm(np.reshape(t, (k,) + a2_shape), b2), (k,) + out_shape)
    return rule


def _matmul_jvp_b(ans, a, b):
    if _matrix(a) and _vector(b):  # W @ x: t @ W^T, one GEMM
        at = a.T
        return lambda t: t @ at
    return _matmul_jvp_b_general(ans, a, b)


def _matmul_jvp_b_general(ans, a, b):
    out_shape = np.shape(ans)
    b2_shape = _padded(np.shape(b) if np.ndim(b) >= 2 else np.shape(b) + (1,), _out2_shape(a, b))
    a2 = _promote(a, True)

    def rule(t):
        k = np.shape(t)[0]
        return np.reshape(_left(a2, np.reshape(t, (k,) + b2_shape)), (k,) + out_shape)
    return rule


matmul.defvjp(_matmul_vjp_a, _matmul_vjp_b)
matmul.defjvp(_matmul_jvp_a, _matmul_jvp_b)


def _samples_matmul(node, B) -> bool:
    """x @ W keeps samples apart for a traced x of samples by rows and a constant matrix W."""
    a, b = node.args[0], node.args[1]
    return traced_args(node) == [0] and np.ndim(a) == 2 and np.shape(a)[0] == B and np.ndim(b) == 2


SAMPLE_RULES[matmul] = _samples_matmul
MATRIX_PRODUCTS.add(matmul)


def _matmul_handler(x1, x2, /, out=None, **kw):
    if np.ndim(x1) == 0 or np.ndim(x2) == 0:
        np.matmul(np.zeros(np.shape(x1)), np.zeros(np.shape(x2)))  # raises NumPy's own error
    if kw:  # dtype=, casting=, signature=: NumPy's loop (its inputs' dtype is its output's), or its error
        refuse_core_axes(kw, "matmul")
        dtype = loop_dtypes(np.matmul, (x1, x2), kw)[0]
        x1, x2 = in_dtype(x1, dtype), in_dtype(x2, dtype)
    return matmul(x1, x2)


register(np.matmul, _matmul_handler, prims=(matmul,),
         notes="block rules are single matrix products (no loop over seeds)")


def _dot(a, b, out=None):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    if np.shape(a)[-1] != np.shape(b)[-2 if np.ndim(b) >= 2 else -1]:
        np.dot(np.broadcast_to(0.0, np.shape(a)), np.broadcast_to(0.0, np.shape(b)))  # raises NumPy's own error
    if np.ndim(b) <= 2:
        return _matmul_handler(a, b)
    return np.tensordot(a, b, axes=([-1], [-2]))


register_derived(np.dot, _dot, uses=(matmul,))


# ---------------------------------------------------------------------------
# tensordot, and the products built from it or from broadcasting: vdot, inner, outer, kron
# ---------------------------------------------------------------------------
def _axis_list(axes, ndim: int) -> list[int]:
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    return [axis_index(a, ndim) for a in axes]


def _tensordot(a, b, axes=2):
    """A transpose, a reshape and one matmul, so every block rule is a single GEMM."""
    na, nb = np.ndim(a), np.ndim(b)
    if isinstance(axes, (int, np.integer)):
        axes_a, axes_b = list(range(na - int(axes), na)), list(range(int(axes)))
    else:
        axes_a, axes_b = _axis_list(axes[0], na), _axis_list(axes[1], nb)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum: tensordot needs as many axes of a as of b")
    sa, sb = np.shape(a), np.shape(b)
    if any(sa[i] != sb[k] for i, k in zip(axes_a, axes_b)):
        raise ValueError(f"shape-mismatch for sum: tensordot pairs axes {axes_a} of a {sa} with axes {axes_b} of "
                         f"b {sb}, whose sizes differ")
    free_a = [i for i in range(na) if i not in axes_a]
    free_b = [i for i in range(nb) if i not in axes_b]
    n = 1
    for i in axes_a:
        n *= sa[i]
    a2 = np.reshape(np.transpose(a, free_a + axes_a), (-1, n))
    b2 = np.reshape(np.transpose(b, axes_b + free_b), (n, -1))
    return np.reshape(matmul(a2, b2), tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))


def _vdot(a, b, /):
    return matmul(np.reshape(a, (-1,)), np.reshape(b, (-1,)))


def _inner(a, b, /):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return matmul(a, b)  # one number: NumPy's scalar, not tensordot's 0-d array
    return _tensordot(a, b, ([-1], [-1]))


def _outer(a, b, out=None):
    return np.reshape(a, (-1, 1)) * np.reshape(b, (1, -1))


def _kron(a, b):
    nd = max(np.ndim(a), np.ndim(b))
    if nd == 0:
        return np.multiply(a, b)
    sa = (1,) * (nd - np.ndim(a)) + np.shape(a)
    sb = (1,) * (nd - np.ndim(b)) + np.shape(b)
    # Interleave the axes: entry (i, j) of each pair of axes lands at i * len_b + j.
    a_wide = np.reshape(a, tuple(d for n in sa for d in (n, 1)))
    b_wide = np.reshape(b, tuple(d for n in sb for d in (1, n)))
    return np.reshape(a_wide * b_wide, tuple(m * n for m, n in zip(sa, sb)))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if np.ndim(a) < 2:
        np.trace(np.zeros(np.shape(a)), offset, axis1, axis2)  # raises NumPy's own error
    if dtype is not None:
        dtype = reduction_dtype("np.trace", np.trace, a, dtype, ndim=2)
    moved = np.moveaxis(a, (axis1, axis2), (-2, -1))
    n1, n2 = np.shape(moved)[-2:]
    rows = np.arange(max(0, -offset), max(0, min(n1, n2 - offset)))
    diagonal = moved[..., rows, rows + offset]
    # NumPy sums in `dtype`: each entry is cast first (an integer dtype truncates them, a constant;
    # booleans sum to their logical or, as np.sum(..., dtype=bool) does)
    return np.sum(diagonal, axis=-1, dtype=dtype)


register_derived(np.tensordot, _tensordot, uses=(matmul,))
register_derived(np.vdot, _vdot, uses=(matmul,))
register_derived(np.inner, _inner, uses=(matmul,))
register_derived(np.outer, _outer)
register_derived(np.kron, _kron)
register_derived(np.trace, _trace)
allow_in_expressions("dot", "matmul", "outer", "inner", "tensordot", "kron", "trace")


# np.linalg.outer: np.outer for 1-D arrays only.
if hasattr(np.linalg, "outer"):
    def _linalg_outer(x1, x2, /):
        if np.ndim(x1) != 1 or np.ndim(x2) != 1:
            raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={np.ndim(x1)} and "
                             f"x2.ndim={np.ndim(x2)}.")
        return _outer(x1, x2)
    register_derived(np.linalg.outer, _linalg_outer)


# np.linalg's array-API duplicates of np.* functions act on fixed axes (trace and diagonal on the last
# two, not the first two) and take their arguments positionally or by keyword only. NumPy's own body of
# each is one call of the np.* function with those axes, which dispatches back to jaccli: running that
# body gives NumPy's semantics and argument checks exactly.
_LINALG_DUPLICATES = {"matmul": "np.matmul", "tensordot": "np.tensordot", "trace": "np.trace on the last two axes",
                      "diagonal": "np.diagonal on the last two axes", "matrix_transpose": "np.matrix_transpose"}


def numpy_body(fn):
    """NumPy's own body of a function it wraps for dispatch: its `_implementation` (private), else the
    `__wrapped__` that functools.wraps gives it (NumPy 2 sets both to the same function), else None."""
    return getattr(fn, "_implementation", None) or getattr(fn, "__wrapped__", None)


for _name, _same in _LINALG_DUPLICATES.items():
    _body = numpy_body(getattr(np.linalg, _name, None))
    if _body is not None:
        register_derived(getattr(np.linalg, _name), _body, notes=f"as {_same}")
