"""Rules for np.linalg.norm, vector_norm and matrix_norm: p-norms are one primitive, the rest compose."""

from __future__ import annotations

import numpy as np

from ..facts import (CREATE_GRAPH_FORMS, NOT_SEPARABLE, SAMPLE_RULES, SECOND_ORDER_FORMS, STRUCTURES,
                     allow_in_expressions)
from ..structure import Reduces
from ..registry import family, primitive, register, register_derived
from ._util import axis_index, norm_axes, shift
from ..tracer import Tracer, guarded, peek
from .linalg import inv, pinv
from .linalg_decomp import svdvals
from .elementwise import unit

family("linalg")


# ---------------------------------------------------------------------------
# The vector p-norm (p = 2 included) over any axes; at a zero vector its subgradient is 0
# ---------------------------------------------------------------------------
def _pnorm_impl(x, p, axes, keepdims):
    # The branches reproduce the code paths np.linalg.norm takes, so that values match it exactly.
    if p == 2 and len(axes) == np.ndim(x):
        return np.linalg.norm(x, keepdims=keepdims)
    if len(axes) == 1:
        return np.linalg.norm(x, ord=p, axis=axes[0], keepdims=keepdims)
    if p == 2 and len(axes) == 2:
        return np.linalg.norm(x, axis=axes, keepdims=keepdims)
    if hasattr(np.linalg, "vector_norm"):
        return np.linalg.vector_norm(x, axis=axes, keepdims=keepdims, ord=p)
    rest = [i for i in range(np.ndim(x)) if i not in axes]  # NumPy 1: flatten the axes, then norm
    flat = np.transpose(x, rest + list(axes)).reshape([np.shape(x)[i] for i in rest] + [-1])
    out = np.linalg.norm(flat, ord=p, axis=-1)
    return np.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(np.shape(x)))) if keepdims else out


pnorm = primitive("vector_norm", _pnorm_impl)
STRUCTURES[pnorm] = Reduces(axes_at=2)


def _pnorm_slope(ans, x, p, axes):
    """d norm / dx, broadcast to x's shape: sign(x) (|x| / norm)^(p-1), and exactly 0 where norm == 0."""
    kept = tuple(1 if i in axes else d for i, d in enumerate(np.shape(x)))
    norm = np.reshape(ans, kept)
    nonzero = norm != 0
    safe = np.where(nonzero, norm, 1.0)
    if p == 2:
        return np.where(nonzero, x / safe, 0.0)
    # Entries equal to 0 get slope 0; their higher derivatives, infinite when p < 2, are taken as 0 too.
    hit = nonzero & (x != 0)
    ratio = np.where(hit, np.abs(x) / safe, 1.0)
    return np.where(hit, np.sign(x) * ratio ** (p - 1), 0.0)


def _pnorm_vjp(ans, x, p, axes, keepdims, slope_of=_pnorm_slope):
    slope = slope_of(ans, x, p, axes)
    kept = tuple(1 if i in axes else d for i, d in enumerate(np.shape(x)))
    return lambda g: np.reshape(g, (np.shape(g)[0],) + kept) * slope


def _pnorm_jvp(ans, x, p, axes, keepdims, slope_of=_pnorm_slope):
    slope = slope_of(ans, x, p, axes)
    block_axes = shift(axes)
    return lambda t: np.sum(t * slope, axis=block_axes, keepdims=keepdims) if axes else t * slope


pnorm.defvjp(_pnorm_vjp)
pnorm.defjvp(_pnorm_jvp)
SAMPLE_RULES[pnorm] = NOT_SEPARABLE


def _limit_slope(ans, x, p, axes):
    """_pnorm_slope in a gradient that is differentiated again: x / norm(x) as the primitive whose
    derivative at norm == 0 is NaN and reported (elementwise.unit), never the convention's silent 0."""
    if p != 2 or type(x) is not Tracer:
        return _pnorm_slope(ans, x, p, axes)
    return unit(x, np.reshape(ans, tuple(1 if i in axes else d for i, d in enumerate(np.shape(x)))))


pnorm_limit = primitive("vector_norm (a limit at 0)", _pnorm_impl)
STRUCTURES[pnorm_limit] = STRUCTURES[pnorm]
SAMPLE_RULES[pnorm_limit] = NOT_SEPARABLE
pnorm_limit.defvjp(lambda ans, x, p, axes, keepdims: _pnorm_vjp(ans, x, p, axes, keepdims, _limit_slope))
pnorm_limit.defjvp(lambda ans, x, p, axes, keepdims: _pnorm_jvp(ans, x, p, axes, keepdims, _limit_slope))
SECOND_ORDER_FORMS[pnorm] = pnorm_limit
CREATE_GRAPH_FORMS[pnorm] = pnorm_limit


def _kept(result, shape: tuple, axes: tuple, keepdims: bool):
    if not keepdims:
        return result
    return np.reshape(result, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _vector_norm(x, ord, axes: tuple, keepdims: bool):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord is None or ord == 2:
        return pnorm(x, 2.0, axes, bool(keepdims))
    if ord == np.inf:
        return np.max(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        # The count of nonzero entries, kept connected to x with a zero derivative.
        return np.sum(np.abs(np.sign(x)), axis=axes, keepdims=keepdims)
    if ord == 1:
        return np.sum(np.abs(x), axis=axes, keepdims=keepdims)
    return pnorm(x, float(ord), axes, bool(keepdims))


def _matrix_norm(x, ord, axes: tuple, keepdims: bool):
    nd = np.ndim(x)
    row, col = (axis_index(a, nd) for a in axes)
    if row == col:
        raise ValueError("Duplicate axes given.")
    shape = np.shape(x)
    if ord in (None, "fro", "f"):
        return pnorm(x, 2.0, tuple(sorted((row, col))), bool(keepdims))
    if ord in (2, -2, "nuc"):
        s = svdvals(np.moveaxis(x, (row, col), (-2, -1)))
        reduce = np.sum if ord == "nuc" else (np.max if ord == 2 else np.min)
        result = reduce(s, axis=-1)
    elif ord in (1, -1):
        reduce = np.max if ord == 1 else np.min
        result = reduce(np.sum(np.abs(x), axis=row), axis=col - 1 if col > row else col)
    elif ord in (np.inf, -np.inf):
        reduce = np.max if ord == np.inf else np.min
        result = reduce(np.sum(np.abs(x), axis=col), axis=row - 1 if row > col else row)
    else:
        raise ValueError("Invalid norm order for matrices.")
    return _kept(result, shape, (row, col), keepdims)


def _norm_handler(x, ord=None, axis=None, keepdims=False):
    nd = np.ndim(x)
    if axis is None:
        if ord is None:
            return _vector_norm(x, None, tuple(range(nd)), keepdims)
        if nd not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        axis = (int(axis),)
    if len(axis) == 1:
        return _vector_norm(x, ord, norm_axes(axis, nd), keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


_NORM_NOTES = ("2-norm and Frobenius norm: subgradient 0 at 0 (never NaN); 1, inf, -inf: abs'(0) = 0 and "
               "ties split evenly (np.abs, np.max, np.min); ord=0 has derivative 0; other p: entries equal to 0 "
               "get slope 0; matrix 2, -2 and 'nuc': through svdvals (distinct singular values)")
register(np.linalg.norm, _norm_handler, prims=(pnorm, svdvals), notes=_NORM_NOTES)
allow_in_expressions("linalg.norm")
if hasattr(np.linalg, "vector_norm"):
    register(np.linalg.vector_norm, lambda x, *, axis=None, keepdims=False, ord=2:
             _vector_norm(x, ord, norm_axes(axis, np.ndim(x)), keepdims), prims=(pnorm,), notes=_NORM_NOTES)
    register(np.linalg.matrix_norm, lambda x, *, keepdims=False, ord="fro":
             _matrix_norm(x, ord, (-2, -1), keepdims), prims=(pnorm, svdvals), notes=_NORM_NOTES)


# ---------------------------------------------------------------------------
# cond and lstsq, composed of svdvals, norm, inv and pinv
# ---------------------------------------------------------------------------
def _cond(x, p=None):
    if p is None or p == 2 or p == -2:
        s = svdvals(x)
        big, small = s[..., 0], s[..., -1]
        return big / small if p != -2 else small / big
    return _norm_handler(x, p, axis=(-2, -1)) * _norm_handler(inv(x), p, axis=(-2, -1))


def _lstsq(a, b, rcond=None):
    """np.linalg.lstsq as the pseudo-inverse solution, with NumPy's cutoff and outputs."""
    m, n = np.shape(a)[-2:]
    if np.ndim(a) != 2 or np.ndim(b) not in (1, 2) or np.shape(b)[0] != m:
        np.linalg.lstsq(np.empty(np.shape(a)), np.empty(np.shape(b)), rcond=rcond)  # NumPy's own error
    cutoff = np.finfo(np.result_type(peek(a), np.float64)).eps * max(m, n) if rcond is None or rcond < 0 else rcond
    s = svdvals(a)
    rank = guarded(lambda v: int(np.sum(v > cutoff * v[0])) if v.size else 0, s)
    x = np.matmul(pinv(a, rcond=cutoff), b)
    if rank == n and m > n:
        r = b - np.matmul(a, x)
        residuals = np.sum(r * r, axis=0)
        residuals = np.reshape(residuals, (1,)) if np.ndim(b) == 1 else residuals
    else:
        residuals = np.zeros((0,), dtype=np.result_type(peek(a), peek(b)))
    return x, residuals, rank, s


register_derived(np.linalg.cond, _cond, uses=(svdvals, pnorm),
                 notes="p = None/2/-2 through svdvals (distinct singular values); other p: norm(x) * norm(inv(x))")
register_derived(np.linalg.lstsq, _lstsq, uses=(svdvals, pinv),
                 notes="the pseudo-inverse solution (NumPy's cutoff): differentiable where the rank is locally "
                       "constant; values agree with NumPy's to rounding")
