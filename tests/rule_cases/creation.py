"""Rows for the creation family: copies, casts, and arrays made like a traced one, then assigned into."""

import numpy as np

from . import Case, r

AWAY_FROM_INTEGERS = np.array([0.3, 1.4, 2.6, -1.2])


def _shifted_square(x):
    out = np.zeros_like(x)
    out[1:] = x[:-1] ** 2
    return out


def _ones_then_sin(x):
    out = np.ones_like(x)
    out[::2] = np.sin(x[::2])
    return out * x


def _full_then_first(x):
    out = np.full_like(x, 2.0)
    out[0] = x[0]
    return out * x


def _empty_then_fill_all(x):
    out = np.empty_like(x)
    out[...] = x ** 2
    return out


def _fill_then_assign(x):
    y = np.empty_like(x)
    y.fill(0.5)
    y[1] = x[1] ** 2
    return y * x


def _copy_is_independent(x):
    y = x.copy()
    y[0] = 0.0  # writing into the copy leaves x alone
    return y * x


def _astype_copy_is_independent(x):
    y = x.astype(np.float64)
    y *= 2.0
    return y * x


CASES = [
    Case("np.copy", lambda x: np.copy(x) ** 2, (r(3),)),
    Case("x.copy()", _copy_is_independent, (r(2, 3),)),
    Case("x.astype()", lambda x: (np.sin(x.astype(np.longdouble)) ** 2).astype(np.float64), (r(4),), order=3),
    Case("x.astype()", lambda x: x * x.astype(int), (AWAY_FROM_INTEGERS,), id="astype-int-is-constant"),
    Case("x.astype()", _astype_copy_is_independent, (r(3),), id="astype-same-dtype-copies"),
    Case("np.zeros_like", _shifted_square, (r(5),)),
    Case("np.ones_like", _ones_then_sin, (r(5),)),
    Case("np.full_like", _full_then_first, (r(4),)),
    Case("np.full_like", lambda x: np.full_like(x, x[0]) * x, (r(4),), id="full_like-traced-fill"),
    Case("np.empty_like", _empty_then_fill_all, (r(2, 3),)),
    Case("x.fill()", _fill_then_assign, (r(3),)),
    *([Case("np.astype", lambda x: np.astype(np.astype(x, np.longdouble), np.float64) * x + np.astype(x, np.float64, copy=False),
            (r(4),))] if hasattr(np, "astype") else []),
    Case("np.linspace", lambda x: np.linspace(x[0], x[1], 5) ** 2 + np.linspace(x[:2], x[2:], 5, endpoint=False, axis=1).sum(0),
         (r(4),)),
    Case("np.logspace", lambda x: np.logspace(x[0], x[1], 4) + np.logspace(x[:2], x[2:], 4, base=2.0, axis=1)[1], (r(4),)),
]
