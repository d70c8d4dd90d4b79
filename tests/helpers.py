"""Independent references shared by the test modules."""

from __future__ import annotations

import numpy as np


def central_diff(f, x, h=1e-6):
    """Dense out.shape + in.shape Jacobian of f at x by central differences (float64)."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)
