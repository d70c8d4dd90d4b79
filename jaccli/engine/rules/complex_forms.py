"""Functions whose real rules do not hold for complex values: their complex forms, written with
supported operations, or a refusal that names them (never a silently wrong derivative).

Installed over the registered handlers once every rules module has registered its own
(rules/__init__.py), and again over np.linalg's when they load: a real argument goes straight to
the real handler.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...errors import UnsupportedOperationError
from ..handlers import FUNCTION_HANDLERS, UFUNC_HANDLERS
from ..tape import is_complex
from ..user_sites import user_site


def _complex(a: Any) -> bool:
    return is_complex(a) if hasattr(a, "_node") else (a is not None and np.iscomplexobj(a))


def _norm(real: Callable) -> Callable:
    # Every norm but the spectral ones (2, -2, nuc of a matrix) is a norm of the moduli |z|.
    def norm(x, ord=None, axis=None, keepdims=False):
        if not _complex(x):
            return real(x, ord, axis, keepdims)
        matrix = (axis is None and np.ndim(x) == 2) or (isinstance(axis, tuple) and len(axis) == 2)
        if matrix and ord in (2, -2, "nuc"):
            raise _refusal(f"np.linalg.norm(..., ord={ord!r})")
        return real(np.abs(x), ord, axis, keepdims)
    return norm


def _vector_norm(real: Callable) -> Callable:
    def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
        return real(np.abs(x) if _complex(x) else x, axis=axis, keepdims=keepdims, ord=ord)
    return vector_norm


def _matrix_norm(real: Callable) -> Callable:
    def matrix_norm(x, /, *, keepdims=False, ord="fro"):
        if _complex(x):
            if ord in (2, -2, "nuc"):
                raise _refusal(f"np.linalg.matrix_norm(..., ord={ord!r})")
            x = np.abs(x)
        return real(x, keepdims=keepdims, ord=ord)
    return matrix_norm


def _variance(real: Callable, var: Any, root: bool) -> Callable:
    # NumPy's var of complex values is the mean of |z - mean|^2: var(Re z) + var(Im z)
    def moment(a, *args, **kw):
        if not _complex(a):
            return real(a, *args, **kw)
        total = FUNCTION_HANDLERS[var](np.real(a), *args, **kw) + FUNCTION_HANDLERS[var](np.imag(a), *args, **kw)
        return np.sqrt(total) if root else total
    return moment


def _conjugating(real: Callable) -> Callable:
    """vdot and vecdot conjugate their first argument."""
    def conjugated(a, *args, **kw):
        return real(np.conjugate(a) if _complex(a) else a, *args, **kw)
    return conjugated


def _sign(real: Callable) -> Callable:
    def sign(x, *args, **kw):
        if not _complex(x):
            return real(x, *args, **kw)
        if args or any(v is not None for v in kw.values()):
            raise UnsupportedOperationError("np.sign of complex values with keywords is not supported by jaccli; call it "
                                            "without them", user_site(2))
        modulus = np.abs(x)
        return np.where(modulus == 0, 0.0, x / np.where(modulus == 0, 1.0, modulus))  # z / |z|, 0 at 0
    return sign


def _refusal(name: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(f"{name} of complex values is not supported by jaccli; its rules are those of "
                                     "real matrices: see docs/complex.md for what takes complex values", user_site(3))


def _refuse_complex(real: Callable, name: str) -> Callable:
    def refused(*args, **kw):
        if any(_complex(a) for a in args if not isinstance(a, (str, int, float, bool))):
            raise _refusal(name)
        return real(*args, **kw)
    return refused


_REAL_ONLY = {
    np.linalg.eigh: "np.linalg.eigh", np.linalg.eigvalsh: "np.linalg.eigvalsh",
    np.linalg.cholesky: "np.linalg.cholesky",
    np.linalg.qr: "np.linalg.qr", np.linalg.svd: "np.linalg.svd", np.linalg.cond: "np.linalg.cond",
    np.cov: "np.cov", np.corrcoef: "np.corrcoef",
}
if hasattr(np.linalg, "svdvals"):
    _REAL_ONLY[np.linalg.svdvals] = "np.linalg.svdvals"


_WRAPPED: set = set()  # the targets whose handlers are wrapped already (once each)


def _wrap(table: dict, target: Any, make: Callable[[Callable], Callable]) -> None:
    real = table.get(target)
    if real is None or (id(table), target) in _WRAPPED:
        return
    _WRAPPED.add((id(table), target))
    handler = make(real)
    handler.__qualname__ = getattr(real, "__qualname__", handler.__qualname__)  # NumPy's name in its errors
    table[target] = handler


def install() -> None:
    """Put the complex forms and refusals in front of the real handlers registered so far (each once)."""
    _wrap(FUNCTION_HANDLERS, np.linalg.norm, _norm)
    if hasattr(np.linalg, "vector_norm"):
        _wrap(FUNCTION_HANDLERS, np.linalg.vector_norm, _vector_norm)
        _wrap(FUNCTION_HANDLERS, np.linalg.matrix_norm, _matrix_norm)
    for var, std in ((np.var, np.std), (np.nanvar, np.nanstd)):
        _wrap(FUNCTION_HANDLERS, var, lambda real, _var=var: _variance(real, _var, False))
        _wrap(FUNCTION_HANDLERS, std, lambda real, _var=var: _variance(real, _var, True))
    _wrap(FUNCTION_HANDLERS, np.vdot, _conjugating)
    if hasattr(np, "vecdot"):
        _wrap(UFUNC_HANDLERS, np.vecdot, _conjugating)
        _wrap(FUNCTION_HANDLERS, np.linalg.vecdot, _conjugating)
    _wrap(UFUNC_HANDLERS, np.sign, _sign)
    for target, name in _REAL_ONLY.items():
        _wrap(FUNCTION_HANDLERS, target, lambda real, _name=name: _refuse_complex(real, _name))
