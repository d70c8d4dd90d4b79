"""Softmax cross-entropy between class scores and a target distribution."""

import numpy as np


def f(z, p):
    """Scalar -sum(p * log softmax(z)) for scores z (k,) and target probabilities p (k,)."""
    # Unshifted log-sum-exp keeps the sample to basic operations; fine for scores of moderate size.
    log_softmax = z - np.log(np.sum(np.exp(z)))
    return -np.sum(p * log_softmax)
