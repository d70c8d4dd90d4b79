"""Hand-written NumPy floors: closed form, hand loop and hand batched (anchor-baseline.md).

* closed form: the derivative written out by hand, the fastest NumPy can go;
* hand batched: a hand-written forward pass that keeps what its backward needs, then ONE
  VJP (or JVP; a Hessian-vector product for Hessians) seeded with the identity, i.e. what a
  row-vectorised AD engine can approach. Local partials are combined while they are still
  vectors (P1's e(s + c) + 2x, P3's tridiagonal coefficients, P6's p), so each product makes
  as few passes over the [K, n] seed block as a careful engine could;
* hand loop: the same forward pass, then one seed row at a time.

The products take a block of K seeds as rows: vjp(G[K, m]) -> [K, n], jvp(T[K, n]) -> [K, m],
hvp(V[K, n]) -> [K, n]. The seed is a real identity matrix: the engine would not know it is one.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from benchmarks.instances import Instance


# ----------------------------------------------------------------------------------------------
# closed forms
# ----------------------------------------------------------------------------------------------
def _diag_matrix(d: np.ndarray) -> np.ndarray:
    n = d.shape[0]
    out = np.zeros((n, n))
    out.flat[:: n + 1] = d
    return out


def _closed_p1(x):
    return _diag_matrix(np.exp(x) * (np.sin(x) + np.cos(x)) + 2.0 * x)


def _closed_p2(x, W1, b1, W2, b2, rows=None):
    h = np.tanh(W1 @ x + b1)
    W2r = W2 if rows is None else W2[:rows]
    return (W2r * (1.0 - h * h)) @ W1


def _closed_p3(x):
    n = x.shape[0]
    x0 = x[:-1]
    H = np.zeros((n, n))
    diag = np.full(n, 200.0)
    diag[0] = 0.0
    diag[:-1] += 1200.0 * x0 * x0 - 400.0 * x[1:] + 2.0
    H.flat[:: n + 1] = diag
    H.flat[1 :: n + 1] = -400.0 * x0
    H.flat[n :: n + 1] = -400.0 * x0
    return H


def _closed_p4(X, A):
    Y = np.tanh(X @ A)
    return (1.0 - Y * Y)[:, :, None] * A.T[None, :, :]


def _closed_p6(z):
    e = np.exp(z - np.max(z))
    p = e / e.sum()
    # n x 1 times 1 x n: gemm with an inner size of 1, each entry one product; at n = 500 ~6% faster
    # than einsum("i,j->ij") and ~1.6x than np.outer (the least work is the fastest of them)
    H = np.dot((-p)[:, None], p[None, :])
    H.flat[:: z.shape[0] + 1] += p
    return H


def f_then_rows(inst: Instance) -> Callable[[], np.ndarray]:
    """P5's least work for an engine that evaluates f (as a lazy J must, to know its shape): f's
    forward pass, then the requested rows in closed form from its hidden layer (computed once)."""
    x, (W1, b1, W2, b2) = inst.x, inst.params
    r = inst.rows

    def run():
        h = np.tanh(W1 @ x + b1)
        W2 @ h + b2                                  # f's value: the lazy J has it
        return (W2[:r] * (1.0 - h * h)) @ W1
    return run


def closed_form(inst: Instance) -> Callable[[], np.ndarray]:
    x, prm = inst.x, inst.params
    return {
        "P1": lambda: _closed_p1(x),
        "P2": lambda: _closed_p2(x, *prm),
        "P3": lambda: _closed_p3(x),
        "P4": lambda: _closed_p4(x, *prm),
        "P5": lambda: _closed_p2(x, *prm, rows=inst.rows),
        "P6": lambda: _closed_p6(x),
    }[inst.prob]


# ----------------------------------------------------------------------------------------------
# hand-written forward passes returning their linearisation
# ----------------------------------------------------------------------------------------------
def _lin_p1(x):
    s, e = np.sin(x), np.exp(x)
    y = s * e + x * x
    dy = e * (s + np.cos(x)) + 2.0 * x     # local partials combined while they are vectors

    def vjp(G):                            # one pass over the [K, n] block
        return G * dy
    return y, vjp


def _lin_p2(x, W1, b1, W2, b2):
    h = np.tanh(W1 @ x + b1)
    dh = 1.0 - h * h
    y = W2 @ h + b2

    def vjp(G):                       # G [K, m] -> [K, n]
        return ((G @ W2) * dh) @ W1

    def jvp(T):                       # T [K, n] -> [K, m]
        return ((T @ W1.T) * dh) @ W2.T
    return y, vjp, jvp


def _lin_p3(x):
    """Rosenbrock: the forward pass keeps the tridiagonal coefficients; hvp(V) = V @ H."""
    x0, x1 = x[:-1], x[1:]
    a = 1200.0 * x0 * x0 - 400.0 * x1 + 2.0     # d2f/dx_i^2 from the i-th term
    off = -400.0 * x0                           # d2f/dx_i dx_{i+1}

    def hvp(V):
        V0, V1 = V[:, :-1], V[:, 1:]
        out = np.empty_like(V)
        np.multiply(V0, a, out=out[:, :-1])
        out[:, -1] = 0.0
        out[:, :-1] += V1 * off
        out[:, 1:] += 200.0 * V1
        out[:, 1:] += V0 * off
        return out
    return hvp


def _lin_p4(X, A):
    Y = np.tanh(X @ A)
    dY = 1.0 - Y * Y

    def vjp(G):                       # G [..., B, m] -> [..., B, n]
        return (G * dY) @ A.T
    return Y, vjp


def _lin_p6(z):
    """logsumexp(z) - z[y]: gradient p - e_y, so H v = p * v - p (p . v)."""
    e = np.exp(z - np.max(z))             # the shift is derivative-neutral (problems.md)
    p = e / e.sum()

    def hvp(V):
        out = V * p
        out -= np.einsum("i,j->ij", V @ p, p)
        return out
    return hvp


# ----------------------------------------------------------------------------------------------
# hand batched / hand loop
# ----------------------------------------------------------------------------------------------
def _p2_use_forward(inst: Instance) -> bool:
    """Fewer inputs than outputs: n JVPs beat m VJPs (P2-n50-m4000)."""
    return inst.prob == "P2" and inst.p["n"] < inst.p["m"]


def mode_note(inst: Instance) -> str:
    return "JVP" if _p2_use_forward(inst) else ""


def hand_batched(inst: Instance) -> Callable[[], np.ndarray]:
    x, prm = inst.x, inst.params
    if inst.prob == "P1":
        return lambda: _lin_p1(x)[1](np.eye(x.shape[0]))
    if inst.prob in ("P2", "P5"):
        if _p2_use_forward(inst):
            return lambda: _lin_p2(x, *prm)[2](np.eye(x.shape[0])).T
        m = inst.rows or inst.p["m"]
        return lambda: _lin_p2(x, *prm)[1](np.eye(inst.p["m"])[:m])
    if inst.prob == "P3":
        return lambda: _lin_p3(x)(np.eye(x.shape[0]))
    if inst.prob == "P4":
        def run():
            Y, vjp = _lin_p4(x, *prm)
            seeds = np.broadcast_to(np.eye(Y.shape[1])[:, None, :], (Y.shape[1],) + Y.shape)
            return vjp(seeds).transpose(1, 0, 2)
        return run
    if inst.prob == "P6":
        return lambda: _lin_p6(x)(np.eye(x.shape[0]))
    raise KeyError(inst.prob)


def _loop_rows(product, count: int, size: int | None = None) -> np.ndarray:
    """`count` products, one unit seed e_i of length `size` (default `count`) at a time, as rows."""
    size = count if size is None else size
    rows = []
    for i in range(count):
        seed = np.zeros((1, size))
        seed[0, i] = 1.0
        rows.append(product(seed)[0])
    return np.stack(rows)


def hand_loop(inst: Instance) -> Callable[[], np.ndarray]:
    x, prm = inst.x, inst.params
    n = x.shape[0]
    if inst.prob == "P1":
        return lambda: _loop_rows(_lin_p1(x)[1], n)
    if inst.prob in ("P2", "P5"):
        m = inst.p["m"]
        if _p2_use_forward(inst):
            return lambda: _loop_rows(_lin_p2(x, *prm)[2], n).T  # one JVP per column
        return lambda: _loop_rows(_lin_p2(x, *prm)[1], inst.rows or m, m)
    if inst.prob in ("P3", "P6"):
        lin = _lin_p3 if inst.prob == "P3" else _lin_p6
        return lambda: _loop_rows(lin(x), n)
    if inst.prob == "P4":
        def run_p4():
            Y, vjp = _lin_p4(x, *prm)
            B, m = Y.shape
            out = np.empty((B, m, x.shape[1]))
            for i in range(m):         # one output index at a time, all samples together
                seed = np.zeros((B, m))
                seed[:, i] = 1.0
                out[:, i, :] = vjp(seed)
            return out
        return run_p4
    raise KeyError(inst.prob)
