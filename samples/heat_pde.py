"""Residual of the steady 1-D heat equation with temperature-driven heat release (Bratu problem)."""

import numpy as np

# Heat release strength; solutions exist for LAMBDA below about 3.51.
LAMBDA = 1.0


def f(u):
    """Residual r (n,) of u'' + LAMBDA exp(u) = 0 on (0, 1) with u = 0 at both ends.

    u (n,) holds the temperatures at the n interior points of a uniform grid.
    """
    h = 1.0 / (u.shape[0] + 1)
    padded = np.concatenate([np.zeros(1), u, np.zeros(1)])
    laplacian = (padded[:-2] - 2.0 * u + padded[2:]) / h**2
    return laplacian + LAMBDA * np.exp(u)
