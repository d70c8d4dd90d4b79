"""batch_axis=0: the recorded structure proves sample-wise functions; mixing is always caught."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.engine.sample_independence import separable
from jaccli.engine.recording import Recording
from jaccli.errors import BatchMixingError

B, N = 5, 6
A = np.cos(np.arange(N * 4).reshape(N, 4))
W = np.sin(np.arange(N))

SAMPLEWISE = {
    "mlp": lambda X: np.tanh(X @ A) * 2.0,
    "row-sums": lambda X: (X ** 2).sum(axis=1),
    "reversed-features": lambda X: X[:, ::-1] * W,
    "reshape-and-reduce": lambda X: X.reshape(B, 2, 3).max(axis=2),
    "relu": lambda X: np.where(X > 0, X, 0.0) + np.maximum(X, 0.1 * X),
    "transpose-inner": lambda X: np.transpose(X.reshape(B, 2, 3), (0, 2, 1)).reshape(B, N) * X,
}
MIXING = {
    "sum-over-samples": lambda X: X * X.sum(axis=0),
    "centre-over-samples": lambda X: X - X.mean(axis=0),
    "two-samples": lambda X: np.stack([X[0] * X[1]] * B),
    "gram": lambda X: X @ X.T,
    "shifted": lambda X: np.roll(X, 1, axis=0),
}


def _per_sample_fd(f, X, h=1e-6):
    out = np.asarray(f(X))
    J = np.zeros((B,) + out.shape[1:] + X.shape[1:])
    for b in range(B):
        for j in range(N):
            Xp, Xm = X.copy(), X.copy()
            Xp[b, j] += h
            Xm[b, j] -= h
            J[(b, Ellipsis, j)] = (np.asarray(f(Xp))[b] - np.asarray(f(Xm))[b]) / (2 * h)
    return J


@pytest.mark.parametrize("name", sorted(SAMPLEWISE))
def test_samplewise_functions_are_proven_from_the_structure(name, rng):
    X = rng.standard_normal((B, N))
    f = SAMPLEWISE[name]
    assert separable(Recording(f, (X,), (0,)).trace, B)
    J = jaccli.jacobian(f, X, batch_axis=0)
    np.testing.assert_allclose(np.asarray(J), _per_sample_fd(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(MIXING))
def test_functions_that_mix_samples_are_refused(name, rng):
    X = rng.standard_normal((B, N))
    f = MIXING[name]
    assert not separable(Recording(f, (X,), (0,)).trace, B)
    with pytest.raises(BatchMixingError):
        np.asarray(jaccli.jacobian(f, X, batch_axis=0))


def test_unproven_but_samplewise_functions_pass_the_numeric_probe(rng):
    # np.cumsum along the features has no structural rule: the probe has to clear it.
    X = rng.standard_normal((B, N))
    f = lambda X: np.cumsum(np.sin(X), axis=1)  # noqa: E731
    assert not separable(Recording(f, (X,), (0,)).trace, B)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, X, batch_axis=0)), _per_sample_fd(f, X),
                               rtol=1e-6, atol=1e-6)


def test_mixing_message_names_a_sample_that_really_couples(rng):
    import re

    X = rng.standard_normal((B, N))
    with pytest.raises(BatchMixingError) as info:
        np.asarray(jaccli.jacobian(lambda X: np.roll(X, 1, axis=0), X, batch_axis=0))
    victim, source = map(int, re.search(r"output 0 of sample (\d+) depends on input 0 of sample (\d+)",
                                        str(info.value)).groups())
    assert victim == (source + 1) % B  # np.roll by one: sample b reads sample b - 1
