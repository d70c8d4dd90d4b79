"""Rows for the diagonals family: diag, diagonal, tril and triu."""

import numpy as np

from . import Case, r

CASES = [
    Case("np.diag", lambda x: np.diag(x) @ np.diag(x) ** 2, (r(3),), order=3, id="diag-vector"),
    Case("np.diag", lambda x: np.sin(np.diag(x, 2)), (r(3),), id="diag-vector-above"),
    Case("np.diag", lambda x: np.diag(x, k=-1) ** 2, (r(3),), id="diag-vector-below"),
    Case("np.diag", lambda x: np.diag(x) ** 2, (r(3, 4),), id="diag-matrix"),
    Case("np.diag", lambda x: np.diag(x @ x.T, -1) ** 2, (r(3, 2),), id="diag-matrix-below"),
    Case("np.diagonal", lambda x: np.diagonal(x) ** 2, (r(3, 4),)),
    Case("np.diagonal", lambda x: x.diagonal(1) * x[0, :3], (r(3, 4),), id="diagonal-offset-method"),
    Case("np.diagonal", lambda x: np.sin(np.diagonal(x, -1, 2, 0)), (r(3, 2, 4),), id="diagonal-axes"),
    Case("np.tril", lambda x: np.sin(np.tril(x) @ x.T), (r(3, 3),), order=3),
    Case("np.tril", lambda x: np.tril(x, -1) ** 2, (r(2, 3, 4),), id="tril-batched-k"),
    Case("np.tril", lambda x: np.tril(x) * x, (r(3),), id="tril-vector"),
    Case("np.triu", lambda x: np.triu(x) ** 2, (r(3, 4),)),
    Case("np.triu", lambda x: np.sin(np.triu(x, 1)), (r(2, 4, 3),), id="triu-batched-k"),
]
