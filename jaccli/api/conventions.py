"""Conventions that a caller may choose for the derivatives of functions NumPy defines on part of their input."""

from __future__ import annotations

import contextlib
from typing import Iterator

from jaccli.engine import SYMMETRIC_PART


@contextlib.contextmanager
def symmetric_derivatives() -> Iterator[None]:
    """Within the block, np.linalg.eigh, eigvalsh and cholesky are differentiated as JAX and PyTorch do, as
    functions of a symmetric matrix: the derivative is that of f((A + A.T)/2) at a symmetric A (a step's
    antisymmetric part is ignored; gradients are symmetric). Outside it (the default) the derivative is that
    of the function NumPy computes, which reads one triangle of A. It applies to the recordings made in the
    block, in this thread.

    >>> import numpy as np, jaccli
    >>> a = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> jaccli.grad(lambda a: np.linalg.eigvalsh(a)[1], a)  # NumPy reads the lower triangle
    array([[0.5, 0. ],
           [1. , 0.5]])
    >>> with jaccli.symmetric_derivatives():
    ...     jaccli.grad(lambda a: np.linalg.eigvalsh(a)[1], a)
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    before = SYMMETRIC_PART.v
    SYMMETRIC_PART.v = True
    try:
        yield
    finally:
        SYMMETRIC_PART.v = before
