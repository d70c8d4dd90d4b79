"""Rules for scipy.linalg: solve_triangular and cho_solve (composed of NumPy's solve and the triangle SciPy
reads), expm and sqrtm (primitives whose derivatives are their own values at a block matrix).

A primary matrix function f has, for any E, f([[A, E], [0, A]]) = [[f(A), L(A, E)], [0, f(A)]], where
L(A, E) is its Fréchet derivative at A along E (Higham, Functions of Matrices, 3.2); its adjoint along G is
L(A^T, G). Both are f itself at a matrix twice the size, so the rules are differentiable to any order, and a
block of K seeds is one call of f on K stacked matrices. Like NumPy's solve, SciPy's functions are
swapped in while f runs (handlers.FUNCTION_SWAPS); they are installed once f's module imports scipy.linalg.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnsupportedOperationError
from ..facts import MAY_FAIL, NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES
from ..registry import primitive, register
from ..structure import Dense
from ..tracer import holds_tracer, lift, peek
from ..user_sites import user_site
from .scipy_special import _swap


def _block_value(prim: Any, a: Any, e: Any) -> Any:
    """The upper right block of prim([[a, e], [0, a]]), a broadcast to e's leading (seed) axes."""
    n = np.shape(a)[-1]
    a = np.broadcast_to(a, np.shape(e))
    zero = np.zeros(np.shape(e))
    big = np.concatenate([np.concatenate([a, e], axis=-1), np.concatenate([zero, a], axis=-1)], axis=-2)
    return prim(big)[..., :n, n:]


def _matrix_function(name: str, fn: Any) -> Any:
    prim = primitive(f"scipy.linalg.{name}", fn)
    STRUCTURES[prim] = Dense()
    SAMPLE_RULES[prim] = NOT_SEPARABLE
    prim.defjvp(lambda ans, a: lambda t: _block_value(prim, a, t))
    prim.defvjp(lambda ans, a: lambda g: _block_value(prim, np.swapaxes(a, -1, -2), g))
    return prim


def _real_sqrtm(sl: Any) -> Any:
    def sqrtm(a):
        out = sl.sqrtm(a)
        if np.iscomplexobj(out):
            if np.any(np.imag(out) != 0):
                raise UnsupportedOperationError(
                    "scipy.linalg.sqrtm of this matrix is complex (it has negative or complex eigenvalues); jaccli "
                    "differentiates real square roots only: pass a matrix whose eigenvalues are positive",
                    user_site(2))
            out = np.real(out)
        return out
    return sqrtm


def _triangle(a: Any, lower: bool, unit_diagonal: bool = False) -> Any:
    """The matrix SciPy reads of a: its lower or upper triangle, with ones on the diagonal if unit_diagonal."""
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        eye = np.eye(np.shape(a)[-1])
        t = t * (1.0 - eye) + eye
    return t


def register_rules(sl: Any) -> None:
    expm_prim = _matrix_function("expm", sl.expm)
    sqrtm_prim = _matrix_function("sqrtm", _real_sqrtm(sl))
    MAY_FAIL.add(sqrtm_prim)  # (a matrix with a negative eigenvalue has no real square root: _real_sqrtm raises)
    originals = {name: getattr(sl, name) for name in ("expm", "sqrtm", "solve_triangular", "cho_solve")}

    def expm(A):
        if not holds_tracer(A):
            return originals["expm"](A)
        return expm_prim(lift(A))

    def sqrtm(A, *args, **kwargs):
        if not holds_tracer(A):
            return originals["sqrtm"](A, *args, **kwargs)
        if args or kwargs:
            originals["sqrtm"](peek(A), *args, **kwargs)  # SciPy's error for a call of the wrong form
            raise UnsupportedOperationError("scipy.linalg.sqrtm with disp or blocksize (deprecated by SciPy) is not "
                                            "differentiable in jaccli; call sqrtm(A)", user_site(2))
        return sqrtm_prim(lift(A))

    def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
        if not (holds_tracer(a) or holds_tracer(b)):
            return originals["solve_triangular"](a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                                                 overwrite_b=overwrite_b, check_finite=check_finite)
        t = _triangle(lift(a), lower, unit_diagonal)
        if trans in (1, 2, "T", "C"):
            t = np.swapaxes(t, -1, -2)
        elif trans not in (0, "N"):
            raise ValueError(f"scipy.linalg.solve_triangular: incorrect value for trans: {trans!r}")
        return np.linalg.solve(t, lift(b))

    def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
        if not holds_tracer(c_and_lower) and not holds_tracer(b):
            return originals["cho_solve"](c_and_lower, b, overwrite_b=overwrite_b, check_finite=check_finite)
        c, lower = c_and_lower
        low = _triangle(lift(c), lower)
        if not lower:
            low = np.swapaxes(low, -1, -2)  # c = U with A = U^T U: L = U^T
        return np.linalg.solve(np.swapaxes(low, -1, -2), np.linalg.solve(low, lift(b)))

    notes = {
        "expm": "real square matrices (and stacks of them); the derivative is expm of a block matrix",
        "sqrtm": "real square matrices with real square roots; the derivative is sqrtm of a block matrix",
        "solve_triangular": "a (its lower or upper triangle, as SciPy reads it) and b; trans, unit_diagonal",
        "cho_solve": "c (its triangle, as SciPy reads it) and b",
    }
    prims = {"expm": (expm_prim,), "sqrtm": (sqrtm_prim,)}
    for fn in (expm, sqrtm, solve_triangular, cho_solve):
        name = fn.__name__
        fn.__doc__ = originals[name].__doc__
        _swap(sl, name, originals[name], fn)
        register(fn, fn, prims=prims.get(name, ()), kind="primitive" if name in prims else "derived",
                 name=f"scipy.linalg.{name}", notes=notes[name])

