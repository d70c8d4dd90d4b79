"""Sparse Jacobians and Hessians are of real functions: their lazy blocks, refused for complex inputs or outputs."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.errors import UnsupportedOperationError

from .arguments import as_args, resolve_wrt
from .complex_functions import complex_arg
from .jacobian_hessian import hessian as _lazy_hessian, jacobian as _lazy_jacobian


class RealOnlyError(UnsupportedOperationError):
    """A sparse Jacobian or Hessian asked of f with complex inputs or outputs (`what` says which)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"sparse Jacobians and Hessians are of real functions, and f has {what}; use jaccli.jacobian "
                         "(dense, docs/complex.md), or pass the real and imaginary parts as real inputs and return "
                         "them as real outputs")
        self.what = what


def real_lazy(f: Callable, inputs: Any, wrt: Any, hessian: bool) -> Any:
    """hessian's or jacobian's lazy blocks of f, refused (RealOnlyError) for complex inputs or outputs."""
    args, inputs_is_tuple = as_args(inputs)
    if any(complex_arg(args[k]) for k in resolve_wrt(f, args, wrt, inputs_is_tuple)[0]):
        raise RealOnlyError("a complex input")
    lazy = (_lazy_hessian if hessian else _lazy_jacobian)(f, inputs, wrt=wrt)
    if any(type(leaf) is np.ndarray for leaf in _nested(lazy)):  # (jacobian's result for complex outputs: dense)
        raise RealOnlyError("complex outputs")
    return lazy


def _nested(result: Any) -> list:
    """The leaves of jacobian's or hessian's nested tuples."""
    return [leaf for part in result for leaf in _nested(part)] if isinstance(result, tuple) else [result]
