"""Rows for the functional family: apply_along_axis and piecewise, which call the user's functions."""

import numpy as np

from . import Case, pos, r


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
    Case("np.piecewise", lambda x: np.piecewise(x, [x < -0.3, x > 0.3], [lambda t: t ** 3, np.sin, np.exp]),
         (r(3, 4),), order=3, id="piecewise-otherwise"),
    Case("np.piecewise", lambda x: np.piecewise(x, [x < 0.2, x > -0.2], [lambda t: t ** 2, np.cos]), (r(8),),
         id="piecewise-later-condition-wins"),
    Case("np.piecewise", lambda x, c: np.piecewise(x, [x < 0, x > 0.5], [2.0, c[0] * c[1], lambda t: t * c[2]]),
         (r(3), r(3)), wrt=(0, 1), id="piecewise-constants"),
    Case("np.piecewise", lambda x: np.piecewise(x, x > 0, [lambda t: t - np.mean(t), np.exp]), (r(6),),
         id="piecewise-single-condition-sees-its-part"),
    Case("np.piecewise", lambda x: np.piecewise(x[0], [x[0] > 1], [np.log, lambda t: -t]), (pos(2),),
         id="piecewise-0d"),
    Case("np.piecewise", lambda x, p: np.piecewise(x, [x > 1.0], [lambda t, q: t ** q, 0.0], p[0]),
         (pos(2, 3), pos(1)), wrt=(0, 1), id="piecewise-args"),
    Case("np.piecewise", lambda x: np.piecewise([x[0], x[1] * x[2]], [x[:2] > 0], [np.sin, lambda t: t ** 3]),
         (r(3),), order=3, id="piecewise-list-of-traced-values"),
    Case("np.piecewise", lambda x, y: np.piecewise((x, x * y, [1.0, -2.0, 3.0, -4.0]),
                                                   [np.arange(12).reshape(3, 4) % 3 == 0], [np.exp, lambda t: t ** 2]),
         (r(4), r(4)), wrt=(0, 1), id="piecewise-tuple-of-traced-rows-and-a-plain-one"),
]
