"""The n-dimensional Rosenbrock function, a classic test problem for optimisers."""

import numpy as np


def f(x):
    """Scalar sum of 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2; its minimum is 0 at x = 1."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
