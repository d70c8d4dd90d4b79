"""L2-regularised logistic regression loss, the mean negative log-likelihood."""

import numpy as np


def f(w, X, y, alpha=0.01):
    """Scalar loss for weights w (d,), features X (m, d) and labels y (m,) in {0, 1}."""
    z = X @ w
    # log(1 + exp(z)) - y z is -log p(y | x) with p = sigmoid(z).
    return np.mean(np.log(1.0 + np.exp(z)) - y * z) + 0.5 * alpha * np.sum(w**2)
