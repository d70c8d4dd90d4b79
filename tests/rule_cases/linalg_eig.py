"""Rows for np.linalg.eig and eigvals: real matrices with real or complex eigenvalues, complex
matrices (z = x + iy); eigenvalues distinct, eigenvectors as NumPy normalises them."""

import numpy as np

from . import Case, r
from .complex_values import of_z, parts

L = "np.linalg."


def with_real_eigenvalues(*values):
    """A non-symmetric matrix with the given distinct real eigenvalues."""
    basis = r(len(values), len(values)) + 2 * np.eye(len(values))
    return basis @ np.diag(values) @ np.linalg.inv(basis)


_ROTATING = np.array([[0.3, -1.2, 0.4], [1.1, 0.2, -0.3], [0.2, 0.5, 0.9]])  # a complex pair and a real one

CASES = [
    Case(L + "eigvals", lambda a: parts(np.linalg.eigvals(a)), (_ROTATING,), id="eigvals-complex-pair"),
    Case(L + "eigvals", lambda a: np.linalg.eigvals(a), (with_real_eigenvalues(0.5, -1.0, 2.0),),
         id="eigvals-real"),
    Case(L + "eigvals", of_z(np.linalg.eigvals), (r(3, 3), r(3, 3)), wrt=(0, 1), id="eigvals-of-complex"),
    Case(L + "eig", lambda a: np.linalg.eig(a)[1], (with_real_eigenvalues(0.5, -1.0, 2.0),), id="eig-real-vectors"),
    Case(L + "eig", lambda a: (lambda w, v: parts(v * w))(*np.linalg.eig(a)), (_ROTATING,),
         id="eig-complex-vectors"),
    Case(L + "eig", of_z(lambda a: (lambda w, v: v @ np.diag(w) + v)(*np.linalg.eig(a))), (r(3, 3), r(3, 3)),
         wrt=(0, 1), id="eig-of-complex"),
    Case(L + "eig", lambda a: np.abs(np.linalg.eig(a)[0]) ** 2, (r(2, 4, 4),), id="eig-batched-moduli"),
]
