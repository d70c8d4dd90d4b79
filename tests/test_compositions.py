"""Property tests: random compositions of primitives, random shapes and broadcasting, against FD."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
import jaccli.api.sweep_seeds

from contextlib import contextmanager


@contextmanager
def seed_form(form):
    """Run with structured identity seeds ("structured") or the size-based default ("default")."""
    saved = jaccli.api.sweep_seeds.DENSE_SEED_ELEMENTS
    jaccli.api.sweep_seeds.DENSE_SEED_ELEMENTS = 0 if form == "structured" else saved
    try:
        yield
    finally:
        jaccli.api.sweep_seeds.DENSE_SEED_ELEMENTS = saved

# Smooth building blocks, each defined on all of R (or guarded), so FD is valid everywhere.
UNARY = {
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "exp_small": lambda x: np.exp(0.3 * x),
    "square": np.square, "softplus": lambda x: np.log1p(np.exp(x)), "atan": np.arctan,
    "sqrt1p": lambda x: np.sqrt(1.0 + x * x), "cube": lambda x: x ** 3, "sinh": lambda x: np.sinh(0.5 * x),
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": lambda a, b: a / (1.5 + np.tanh(b)), "hypot1": lambda a, b: np.hypot(a, 1.0 + b * b),
    "logaddexp": np.logaddexp,
}
REDUCE = {
    "sum": lambda x, ax: np.sum(x, axis=ax, keepdims=True),
    "mean": lambda x, ax: np.mean(x, axis=ax, keepdims=True),
    "prod": lambda x, ax: np.prod(1.0 + 0.1 * x, axis=ax, keepdims=True),
}


@st.composite
def programs(draw):
    """A random program over two inputs x (shape sx) and y (broadcastable shape sy)."""
    nd = draw(st.integers(1, 3))
    sx = tuple(draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd)))
    sy = tuple(n if draw(st.booleans()) else 1 for n in sx[draw(st.integers(0, nd - 1)):])
    steps = draw(st.lists(st.tuples(st.sampled_from(["u", "b", "r", "m", "i"]),
                                    st.sampled_from(sorted(UNARY)), st.sampled_from(sorted(BINARY)),
                                    st.sampled_from(sorted(REDUCE)), st.integers(0, 10)),
                          min_size=1, max_size=6))
    return sx, sy, steps


def build(steps):
    def f(x, y):
        vals = [x, y]
        for kind, un, bi, red, k in steps:
            a = vals[k % len(vals)]
            b = vals[(k + 1) % len(vals)]
            if kind == "u":
                out = UNARY[un](a)
            elif kind == "b":
                out = BINARY[bi](a, b)
            elif kind == "r":
                out = REDUCE[red](a, k % np.ndim(a)) if np.ndim(a) else a
            elif kind == "m" and np.ndim(a) >= 1 and np.ndim(b) >= 1:
                # a matrix product over the last axis, kept broadcast-compatible with x
                w = np.cos(np.arange(np.shape(a)[-1] * np.shape(a)[-1]).reshape(np.shape(a)[-1], -1))
                out = a @ w
            elif kind == "i" and np.ndim(a) >= 1:
                out = a[..., ::-1] * 0.5 + a[..., :1]
            else:
                out = UNARY[un](a)
            vals.append(out)
        return vals[-1] + 0.0 * x
    return f


def fd_jacobian(f, args, j, h=1e-6):
    base = [np.array(a, dtype=float) for a in args]
    out_shape = np.shape(f(*base))
    cols = []
    for k in range(base[j].size):
        plus = [a.copy() for a in base]
        minus = [a.copy() for a in base]
        plus[j].reshape(-1)[k] += h
        minus[j].reshape(-1)[k] -= h
        cols.append((np.asarray(f(*plus)) - np.asarray(f(*minus))).reshape(-1) / (2 * h))
    return np.stack(cols, axis=-1).reshape(out_shape + base[j].shape)


def assert_jacobians_match_differences(g, f, x, y, mode):
    """Both Jacobians of g at (x, y) (f itself, or f recorded once) against central differences of f;
    returns them."""
    jx, jy = jaccli.jacobian(g, (x, y), mode=mode)
    np.testing.assert_allclose(np.asarray(jx), fd_jacobian(f, (x, y), 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jy), fd_jacobian(f, (x, y), 1), rtol=1e-5, atol=1e-6)
    return jx, jy


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1), st.sampled_from(["reverse", "forward", "auto"]),
       st.sampled_from(["default", "structured"]))
def test_random_compositions_match_central_differences(program, seed, mode, form):
    sx, sy, steps = program
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
    f = build(steps)
    with seed_form(form):
        assert_jacobians_match_differences(f, f, x, y, mode)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1), st.sampled_from(["reverse", "forward"]),
       st.sampled_from(["default", "structured"]))
def test_random_composition_hessians_match_differences_of_the_gradient(program, seed, mode, form):
    sx, sy, steps = program
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
    f = build(steps)

    def loss(x):
        return np.sum(np.sin(f(x, y)))

    with seed_form(form):
        H = np.asarray(jaccli.hessian(loss, x, mode=mode))
    g = lambda x: jaccli.grad(loss, x)  # noqa: E731
    fd = fd_jacobian(g, (x,), 0)
    np.testing.assert_allclose(H, fd, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(H.reshape(x.size, x.size), H.reshape(x.size, x.size).T, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n", [4, 200])  # 200: structured seeds by size (more than 16384 seed elements)
def test_reverse_over_reverse_hessians_through_pad_match_the_closed_form(n):
    # The reverse rule of the gradient's slice (pad's transpose) sees a block axis in front.
    x = np.linspace(0.5, 1.5, n)
    A = np.arange(float(n * n)).reshape(n, n) / n ** 2
    f = lambda x: np.sum(np.pad(x, 1) ** 3) + np.sum(np.pad(A @ x, (2, 1)) * np.pad(x, (2, 1)))  # noqa: E731
    closed = np.diag(6 * x) + A + A.T
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x, mode=mode)), closed, rtol=1e-12, atol=1e-12)
