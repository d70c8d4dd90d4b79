"""A two-layer tanh multilayer perceptron with 4 inputs, 8 hidden units and 2 outputs."""

from pathlib import Path

import numpy as np

# Trained elsewhere; only the input x is differentiated.
with np.load(Path(__file__).with_name("mlp_weights.npz")) as _weights:
    W1, b1, W2, b2 = (_weights[k] for k in ("W1", "b1", "W2", "b2"))


def f(x):
    """Network output (2,) for an input x (4,)."""
    h = np.tanh(W1 @ x + b1)
    return W2 @ h + b2
