"""jaccli: Jacobians and Hessians of plain NumPy functions, lazily, from its own AD engine."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp", "grad", "record_once", "Jacobian", "Hessian",
           "sparsity", "sparse_jacobian", "sparse_hessian", "check_sparse", "Sparsity", "observing",
           "symmetric_derivatives", "__version__"]

# Imported on first use, so that `jaccli --version` and `--help` do not pay for NumPy and the engine.
_LAZY = {"jacobian": "api.jacobian_hessian", "hessian": "api.jacobian_hessian", "vjp": "api.products",
         "jvp": "api.products", "hvp": "api.products", "vhp": "api.products", "grad": "api.products",
         "record_once": "replay.record_once", "Jacobian": "api.lazy", "Hessian": "api.lazy",
         "sparsity": "api.sparse", "sparse_jacobian": "api.sparse", "sparse_hessian": "api.sparse",
         "check_sparse": "api.sparse_check", "Sparsity": "api.sparse",
         "observing": "engine.progress", "symmetric_derivatives": "api.conventions"}

if TYPE_CHECKING:
    from .api.conventions import symmetric_derivatives
    from .api.jacobian_hessian import hessian, jacobian
    from .api.products import grad, hvp, jvp, vhp, vjp
    from .api.lazy import Hessian, Jacobian
    from .api.sparse import Sparsity, sparse_hessian, sparse_jacobian, sparsity
    from .api.sparse_check import check_sparse
    from .engine.progress import observing
    from .replay.record_once import record_once


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jaccli' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
