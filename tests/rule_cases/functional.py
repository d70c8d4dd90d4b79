"""Rows for the functional family: apply_along_axis, which calls the user's functions."""

import numpy as np

from . import Case, r


def _spread(v):
    """A 1-D slice -> a (2, n) array: func1d may return an array of any shape."""
    return np.stack([np.sin(v) * v[0], np.cumsum(v) ** 2])


CASES = [
    Case("np.apply_along_axis", lambda x: np.apply_along_axis(lambda v: np.sum(v ** 3), 0, x), (r(3, 4),),
         order=3, id="apply_along_axis-scalar"),
    Case("np.apply_along_axis", lambda x: np.apply_along_axis(lambda v: v * np.prod(v), 1, x), (r(2, 3, 4),),
         id="apply_along_axis-vector-middle-axis"),
    Case("np.apply_along_axis", lambda x: np.apply_along_axis(_spread, -1, x), (r(2, 3, 4),),
         id="apply_along_axis-matrix-result"),
    Case("np.apply_along_axis", lambda x: np.apply_along_axis(_spread, 0, x), (r(3, 2),),
         id="apply_along_axis-matrix-result-first-axis"),
    Case("np.apply_along_axis", lambda x, y: np.apply_along_axis(lambda v, w, p=1: (v @ w) ** p, 1, x, y, p=2),
         (r(3, 4), r(4, 2)), wrt=(0, 1), id="apply_along_axis-args-kwargs"),
    Case("np.apply_along_axis", lambda x: np.apply_along_axis(lambda v: [v[0] * v[1], np.exp(v[2])], 0, x),
         (r(3, 2),), id="apply_along_axis-list-result"),
]
