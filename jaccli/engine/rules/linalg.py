"""Rules for np.linalg: inverses, solves, determinants, powers, pseudo-inverses and chained products.

Matrices may be stacked: every rule works on the last two axes and broadcasts over the rest, the
leading block axis of seeds included, so a block of K seeds costs one batched product or solve.
The decompositions live in linalg_decomp.py and the norms in linalg_norm.py.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..facts import MAY_FAIL, NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES, allow_in_expressions
from ..structure import Dense
from ..registry import family, primitive, register, register_derived
from ..tape import is_complex
from ..tracer import guarded
from ._util import unbroadcast
from .products import matmul

family("linalg")


# ---------------------------------------------------------------------------
# Helpers shared by the linalg modules (differentiable operations only)
# ---------------------------------------------------------------------------
def mT(x):
    """The matrix transpose of a stack."""
    return np.swapaxes(x, -1, -2)


def sym(x):
    """The symmetric part of a stack of square matrices."""
    return (x + mT(x)) * 0.5


def diag_part(x, eye):
    """The diagonals of a stack of square matrices, as a stack of vectors."""
    return np.sum(x * eye, axis=-1)


def diag_embed(v, eye):
    """A stack of vectors as a stack of diagonal matrices."""
    return np.expand_dims(v, -1) * eye


def lift(t, arg_shape: tuple, batch_ndim: int):
    """A block (K,) + arg_shape with singleton batch axes added, so that its batch has batch_ndim axes.

    Needed before combining a block with a matrix whose batch is longer than the argument's:
    otherwise broadcasting would align the block axis K with a batch axis.
    """
    missing = batch_ndim - (len(arg_shape) - 2)
    if missing <= 0:
        return t
    return np.reshape(t, (np.shape(t)[0],) + (1,) * missing + tuple(arg_shape))


def result_type_of(func, *example):
    """The namedtuple class NumPy returns from func (SlogdetResult, EighResult, ...)."""
    out = func(*example)
    return type(out) if isinstance(out, tuple) and hasattr(out, "_fields") else None


# ---------------------------------------------------------------------------
# inv
# ---------------------------------------------------------------------------
inv = primitive("np.linalg.inv", np.linalg.inv)
STRUCTURES[inv] = Dense()
MAY_FAIL.add(inv)  # (raises LinAlgError at some values: facts.MAY_FAIL)


def _inv_vjp(ans, a):
    ans_t = mT(ans)
    return lambda g: -(ans_t @ g @ ans_t)


def _inv_jvp(ans, a):
    return lambda t: -(ans @ t @ ans)


inv.defvjp(_inv_vjp)
inv.defjvp(_inv_jvp)
SAMPLE_RULES[inv] = NOT_SEPARABLE
register(np.linalg.inv, lambda a: inv(a), prims=(inv,), notes="needs an invertible matrix")


# ---------------------------------------------------------------------------
# solve: the primitive always takes a stack of right-hand-side matrices (..., M, N)
# ---------------------------------------------------------------------------
def _solve_impl(a, b):
    # b gets at least a's number of axes, so NumPy 1 cannot mistake it for a stack of vectors.
    if np.ndim(b) < np.ndim(a):
        b = np.reshape(b, (1,) * (np.ndim(a) - np.ndim(b)) + np.shape(b))
    return np.linalg.solve(a, b)


solve = primitive("np.linalg.solve", _solve_impl)
STRUCTURES[solve] = Dense()
MAY_FAIL.add(solve)


def _solve_vjp_a(ans, a, b):
    a_t = mT(a)
    ans_t = mT(ans)
    a_shape = np.shape(a)
    return lambda g: unbroadcast(-(solve(a_t, g) @ ans_t), a_shape)


def _solve_vjp_b(ans, a, b):
    a_t = mT(a)
    b_shape = np.shape(b)
    return lambda g: unbroadcast(solve(a_t, g), b_shape)


def _solve_jvp_a(ans, a, b):
    a_shape, batch = np.shape(a), np.ndim(ans) - 2
    return lambda t: -solve(a, lift(t, a_shape, batch) @ ans)


def _solve_jvp_b(ans, a, b):
    b_shape, batch = np.shape(b), np.ndim(ans) - 2
    return lambda t: solve(a, lift(t, b_shape, batch))


solve.defvjp(_solve_vjp_a, _solve_vjp_b)
solve.defjvp(_solve_jvp_a, _solve_jvp_b)
SAMPLE_RULES[solve] = NOT_SEPARABLE


_NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _solve_handler(a, b):
    # NumPy 2 reads b as one vector only when it is 1-D; NumPy 1 as a stack of vectors when
    # it has one axis fewer than a. Vectors become one-column matrices for the primitive.
    if np.ndim(b) == 1 or (not _NUMPY2 and np.ndim(b) == np.ndim(a) - 1):
        x = solve(a, np.expand_dims(b, -1))
        return np.reshape(x, np.shape(x)[:-1])
    return solve(a, b)


register(np.linalg.solve, _solve_handler, prims=(solve,),
         notes="b is a vector when 1-D, else a stack of matrices (NumPy 2); a and b stacks broadcast")


# ---------------------------------------------------------------------------
# det and slogdet: d log|det A| = tr(A^-1 dA)
# ---------------------------------------------------------------------------
det = primitive("np.linalg.det", np.linalg.det)
STRUCTURES[det] = Dense()


# Up to this size, the cofactors of a singular matrix are the determinants of its minors; past it,
# they come from the SVD (see _cofactor).
_MINORS_UP_TO = 8


def _division_free(a, ans):
    """Per matrix of the stack `a`: whether det's cofactors there must be computed without A^-1.

    det(A) A^-T is right wherever A is invertible, but its derivative (det's second) cancels
    terms cond(A) times larger than itself, losing cond(A) * eps; past a 1-norm condition number
    of eps^-1/2 / 100 (6.7e5 in float64, 29 in float32) the minors' determinants are used up to
    8 x 8 (exact). Past 8 x 8 the alternative, the SVD, has a derivative of its own that is not
    finite where singular values repeat: it is used past eps^-3/4 only (5.7e11 in float64), where
    A^-1's is off by more than 1e-4. A determinant too small for a normal float (a well-conditioned
    but tiny A, whose inverse overflows) takes the minors too.
    """
    a = np.asarray(a)
    if a.size == 0:
        return np.zeros(a.shape[:-2], dtype=bool)
    dtype = np.result_type(a, np.float32)
    eps = np.finfo(dtype).eps
    n = a.shape[-1]
    with np.errstate(all="ignore"):
        cond = np.linalg.cond(a, 1)
        if n > _MINORS_UP_TO:
            return ~(cond <= eps ** -0.75)
        return ~(cond <= eps ** -0.5 / 100) | ~(np.abs(ans) >= np.finfo(dtype).tiny)


def _orientation(u, vt):
    return np.linalg.det(u) * np.linalg.det(vt)  # each +-1: piecewise constant


def _cofactor(ans, a):
    """d det(A) / dA, the cofactor matrix: det(A) A^-T where A is well-conditioned.

    Where A is singular (A^-1 does not exist, the derivative does) or ill-conditioned (see
    `_division_free`), up to 8 x 8 its entries are (-1)^(i+j) det(A without row i and column j):
    a polynomial in A, computed without division, so that its derivatives (det's second and
    third) are exact too. Larger, they are det(U) det(V) U diag(prod_{j != i} s_j) V^T from
    A = U diag(s) V^T, also without division; the SVD's own derivative, though, divides by
    differences of singular values, so det's second derivative at a larger singular A with
    repeated singular values is not finite. Whether A is singular cannot be read off det(A): LU's
    rounding makes it 1e-14 rather than 0 for most singular matrices. In a stack, each matrix
    takes its own way.
    """
    n = np.shape(a)[-1]
    if n == 1:
        return np.ones_like(a)  # det [a] = a
    free = guarded(_division_free, a, ans)
    if not free.any():
        return mT(inv(a)) * np.expand_dims(ans, (-2, -1))
    if free.all():
        return _cofactor_without_division(a, n)
    # Each way on stand-ins where the other is taken: the identity is inverted, diag(1, ..., n)
    # (distinct singular values) decomposed, so that neither gives a value or derivative that
    # is not finite where it is not used.
    mask = np.expand_dims(free, (-2, -1))
    free_way = _cofactor_without_division(np.where(mask, a, np.diag(np.arange(1.0, n + 1))), n)
    inverse_way = mT(inv(np.where(mask, np.eye(n), a))) * np.expand_dims(ans, (-2, -1))
    return np.where(mask, free_way, inverse_way)


def _cofactor_without_division(a, n):
    if n <= _MINORS_UP_TO:
        keep = np.array([[k for k in range(n) if k != i] for i in range(n)])
        minors = a[..., keep[:, None, :, None], keep[None, :, None, :]]  # (..., i, j, n-1, n-1)
        return (-1.0) ** np.add.outer(np.arange(n), np.arange(n)) * np.linalg.det(minors)
    u, s, vt = np.linalg.svd(a)
    others = np.stack([np.prod(s[..., [j for j in range(n) if j != i]], axis=-1) for i in range(n)], axis=-1)
    sign = guarded(_orientation, u, vt)
    return matmul(u * np.expand_dims(others * np.expand_dims(sign, -1), -2), vt)


def _det_vjp(ans, a):
    cof = _cofactor(ans, a)
    return lambda g: np.expand_dims(g, (-2, -1)) * cof


def _det_jvp(ans, a):
    cof = _cofactor(ans, a)
    return lambda t: np.sum(cof * t, axis=(-2, -1))


det.defvjp(_det_vjp)
det.defjvp(_det_jvp)
SAMPLE_RULES[det] = NOT_SEPARABLE
register(np.linalg.det, lambda a: det(a), prims=(det,),
         notes="the derivative is the cofactor matrix det(A) A^-T; at a singular or ill-conditioned A, the "
               "minors' determinants (up to 8 x 8; larger, from the SVD)")

slogdet = primitive("np.linalg.slogdet", np.linalg.slogdet, multi_out=True)
STRUCTURES[slogdet] = Dense()
_SlogdetResult = result_type_of(np.linalg.slogdet, np.eye(1))


def _slogdet_vjp(ans, a):
    inv_t = mT(inv(a))
    turns = is_complex(a)  # a complex sign moves on the unit circle: d sign = sign i Im tr(A^-1 dA)

    def rule(g):
        coef = g[1]  # a real sign is piecewise constant: its cotangent is dropped
        if turns and g[0] is not None:
            spin = 1j * np.imag(g[0] * ans[0])
            coef = spin if coef is None else coef + spin
        return None if coef is None else np.expand_dims(coef, (-2, -1)) * inv_t
    return rule


def _slogdet_jvp(ans, a):
    inv_t = mT(inv(a))
    if is_complex(a):  # d log|det| = Re tr(A^-1 dA), d sign = sign i Im tr(A^-1 dA)
        def rule(t):
            s = np.sum(inv_t * t, axis=(-2, -1))
            return ans[0] * (1j * np.imag(s)), np.real(s)
        return rule
    return lambda t: (None, np.sum(inv_t * t, axis=(-2, -1)))


slogdet.defvjp(_slogdet_vjp)
slogdet.defjvp(_slogdet_jvp)
SAMPLE_RULES[slogdet] = NOT_SEPARABLE


def _slogdet_handler(a):
    sign, logabsdet = slogdet(a)
    return _SlogdetResult(sign, logabsdet) if _SlogdetResult else (sign, logabsdet)


register(np.linalg.slogdet, _slogdet_handler, prims=(slogdet,),
         notes="a real sign has derivative 0, a complex one turns with the phase; logabsdet's rule uses A^-1 (A must "
               "be invertible)")
allow_in_expressions("linalg.inv", "linalg.det", "linalg.solve", "linalg.slogdet")


# ---------------------------------------------------------------------------
# pinv: the derivative for a locally constant rank (Golub and Pereyra, 1973)
# ---------------------------------------------------------------------------
pinv = primitive("np.linalg.pinv", np.linalg.pinv)
STRUCTURES[pinv] = Dense()
MAY_FAIL.add(pinv)


def _pinv_parts(ans, a):
    m, n = np.shape(a)[-2:]
    p_t = mT(ans)
    return p_t, np.eye(m) - a @ ans, np.eye(n) - ans @ a, ans @ p_t, p_t @ ans


def _pinv_vjp(ans, a, **kw):
    p_t, left, right, ppt, ptp = _pinv_parts(ans, a)
    shape = np.shape(a)

    def rule(g):
        g_t = mT(g)
        return unbroadcast(-(p_t @ g @ p_t) + left @ g_t @ ppt + ptp @ g_t @ right, shape)
    return rule


def _pinv_jvp(ans, a, **kw):
    _, left, right, ppt, ptp = _pinv_parts(ans, a)

    def rule(t):
        t_t = mT(t)
        return -(ans @ t @ ans) + ppt @ t_t @ left + right @ t_t @ ptp
    return rule


pinv.defvjp(_pinv_vjp)
pinv.defjvp(_pinv_jvp)
SAMPLE_RULES[pinv] = NOT_SEPARABLE


def _pinv_handler(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    kw = {"hermitian": hermitian}
    if rcond is not None:
        kw["rcond"] = rcond
    if rtol is not np._NoValue:
        kw["rtol"] = rtol
    return pinv(a, **kw)


register(np.linalg.pinv, _pinv_handler, prims=(pinv,),
         notes="differentiable where the rank is locally constant; singular values cut off by rcond "
               "count as exact zeros")


# ---------------------------------------------------------------------------
# matrix_power and multi_dot: compositions of products
# ---------------------------------------------------------------------------
def _matrix_power(a, n):
    n = operator.index(n)
    if n == 0:
        return np.zeros_like(a) + np.eye(np.shape(a)[-1])
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else result @ a
        n >>= 1
        if n:
            a = a @ a
    return result


register_derived(np.linalg.matrix_power, _matrix_power, uses=(matmul, inv),
                 notes="binary powering with matmul; negative powers go through inv")


def _chain_order(shapes: list) -> list:
    """split[i][j]: where the cheapest product of arrays i..j splits (the matrix chain problem)."""
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    n = len(shapes)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multi_dot(arrays, *, out=None):
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    for i, x in enumerate(arrays):
        if np.ndim(x) != 2 and not (np.ndim(x) == 1 and i in (0, len(arrays) - 1)):
            raise ValueError(f"{np.ndim(x)}-dimensional array given. Array must be two-dimensional")
    # As NumPy does: a 1-D first array is a row, a 1-D last array a column.
    shapes = [np.shape(x) if np.ndim(x) == 2 else ((1,) + np.shape(x) if i == 0 else np.shape(x) + (1,))
              for i, x in enumerate(arrays)]
    split = _chain_order(shapes)

    def product(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return np.matmul(product(i, k), product(k + 1, j))

    return product(0, len(arrays) - 1)


register_derived(np.linalg.multi_dot, _multi_dot, uses=(matmul,), notes="matmul in the cheapest order")


def _tensorsolve(a, b, axes=None):
    """NumPy's steps: a's axes moved, a reshaped to a square matrix, solve, the result reshaped."""
    an = np.ndim(a)
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        a = np.transpose(a, order)
    old = np.shape(a)[-(an - np.ndim(b)):]
    n = math.prod(old)
    if np.size(a) != n ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return np.reshape(np.linalg.solve(np.reshape(a, (n, n)), np.reshape(b, (-1,))), old)


def _tensorinv(a, ind=2):
    shape = np.shape(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    return np.reshape(np.linalg.inv(np.reshape(a, (math.prod(shape[ind:]), -1))), shape[ind:] + shape[:ind])


register_derived(np.linalg.tensorsolve, _tensorsolve, uses=(solve,),
                 notes="a reshaped to a square matrix and solve, as in NumPy; a and b may be traced")
register_derived(np.linalg.tensorinv, _tensorinv, uses=(inv,), notes="a reshaped to a square matrix and inv")
