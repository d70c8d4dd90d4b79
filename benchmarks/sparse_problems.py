"""The sparse benchmark's problems (issue 38): 2-D Bratu, 2-D Brusselator, chained Rosenbrock, arrowhead.

Each function is written once against an array namespace `xp` (NumPy for jaccli and scipy, jax.numpy
for JAX and asdex), with its Jacobian (or Hessian) in closed form as a scipy.sparse CSR array, so a
result is checked entry by entry before it is timed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

LAMBDA = 6.0        # Bratu's parameter (below the fold at 6.81)
ALPHA = 10.0        # Brusselator's diffusion coefficient (as in the SciML / asdex benchmark)


def bratu(u: Any, xp: Any = np) -> Any:
    """F(u) = -Δu - λ exp(u) on the unit square, zero Dirichlet boundary (np.pad), 5-point stencil."""
    n = u.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    p = xp.pad(u, 1)
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u
    return -lap / h2 - LAMBDA * xp.exp(u)


def bratu_jacobian(u: np.ndarray) -> sp.csr_array:
    n = u.shape[0]
    h2 = (1.0 / (n + 1)) ** 2
    t = sp.diags_array([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1])
    eye = sp.eye_array(n)
    lap = (sp.kron(t, eye) + sp.kron(eye, t)) / h2
    return sp.csr_array(lap - sp.diags_array(LAMBDA * np.exp(u).ravel()))


def brusselator(y: Any, xp: Any = np) -> Any:
    """The 2-D Brusselator's right-hand side: species u = y[0], v = y[1] on an N x N periodic grid
    (np.roll), with the forcing pulse of the SciML benchmark switched on."""
    n = y.shape[1]
    dx = 1.0 / (n - 1)
    u, v = y[0], y[1]

    def lap(w: Any) -> Any:
        return (xp.roll(w, 1, 0) + xp.roll(w, -1, 0) + xp.roll(w, 1, 1) + xp.roll(w, -1, 1) - 4.0 * w) / dx ** 2

    g = np.linspace(0.0, 1.0, n)
    forcing = 5.0 * ((g[:, None] - 0.3) ** 2 + (g[None, :] - 0.6) ** 2 <= 0.1 ** 2)
    du = 1.0 + u * u * v - 4.4 * u + ALPHA * lap(u) + forcing
    dv = 3.4 * u - u * u * v + ALPHA * lap(v)
    return xp.stack([du, dv])


def brusselator_jacobian(y: np.ndarray) -> sp.csr_array:
    n = y.shape[1]
    dx = 1.0 / (n - 1)
    u, v = y[0].ravel(), y[1].ravel()
    c = sp.diags_array([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], offsets=[-1, 0, 1]).tolil()
    c[0, n - 1] = c[n - 1, 0] = 1.0
    eye = sp.eye_array(n)
    lap = ALPHA * (sp.kron(c, eye) + sp.kron(eye, c)) / dx ** 2
    return sp.csr_array(sp.block_array([[lap + sp.diags_array(2 * u * v - 4.4), sp.diags_array(u * u)],
                                        [sp.diags_array(3.4 - 2 * u * v), lap - sp.diags_array(u * u)]]))


def rosenbrock(x: Any, xp: Any = np) -> Any:
    """The chained Rosenbrock function sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 (tridiagonal Hessian)."""
    return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_gradient(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    r = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


def rosenbrock_hessian(x: np.ndarray) -> sp.csr_array:
    d = np.zeros_like(x)
    d[:-1] = 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    d[1:] += 200.0
    off = -400.0 * x[:-1]
    return sp.csr_array(sp.diags_array([off, d, off], offsets=[-1, 0, 1]))


def arrowhead(x: Any, xp: Any = np) -> Any:
    """Elementwise terms coupled to the last element (a dense column) and one total (a dense row)."""
    head = x[:-1] * x[:-1] + x[-1] * x[:-1]
    return xp.concatenate([head, xp.sum(xp.sin(x))[None]])


def arrowhead_jacobian(x: np.ndarray) -> sp.csr_array:
    n = x.size
    rows = np.concatenate([np.arange(n - 1), np.arange(n - 1), np.full(n, n - 1)])
    cols = np.concatenate([np.arange(n - 1), np.full(n - 1, n - 1), np.arange(n)])
    vals = np.concatenate([2 * x[:-1] + x[-1], x[:-1], np.cos(x)])
    return sp.csr_array(sp.coo_array((vals, (rows, cols)), shape=(n, n)))


@dataclass
class Problem:
    """One benchmark instance: f in namespace form, the point, the closed-form derivative."""

    id: str
    func: Callable[..., Any]           # func(x, xp)
    x: np.ndarray
    reference: Callable[[np.ndarray], sp.csr_array]
    hessian: bool = False
    large: bool = False                 # min of repeats instead of interleaved samples
    gradient: Callable[[np.ndarray], np.ndarray] | None = None   # closed form, for scipy's FD Hessian

    def f(self, x: Any) -> Any:
        return self.func(x, np)

    @property
    def n(self) -> int:
        return int(self.x.size)


def _bratu(n_side: int) -> Problem:
    g = np.linspace(0.0, 1.0, n_side + 2)[1:-1]
    u = 0.5 * np.sin(np.pi * g)[:, None] * np.sin(np.pi * g)[None, :]
    return Problem(f"bratu-n{n_side * n_side}", bratu, u, bratu_jacobian, large=n_side >= 500)


def _brusselator(n_side: int) -> Problem:
    g = np.linspace(0.0, 1.0, n_side)
    u = 22.0 * (g[None, :] * (1 - g[None, :])) ** 1.5 * np.ones((n_side, 1))
    v = 27.0 * (g[:, None] * (1 - g[:, None])) ** 1.5 * np.ones((1, n_side))
    return Problem(f"brusselator-N{n_side}", brusselator, np.stack([u, v]), brusselator_jacobian)


def _rosenbrock(n: int) -> Problem:
    x = np.random.default_rng(0).uniform(-1.0, 1.5, n)
    return Problem(f"rosenbrock-n{n}", rosenbrock, x, rosenbrock_hessian, hessian=True, large=n >= 100_000,
                   gradient=rosenbrock_gradient)


def _arrowhead(n: int) -> Problem:
    x = np.random.default_rng(1).uniform(0.5, 1.5, n)
    return Problem(f"arrowhead-n{n}", arrowhead, x, arrowhead_jacobian)


BUILDERS: dict[str, Callable[[], Problem]] = {
    "bratu-n10000": lambda: _bratu(100),
    "bratu-n250000": lambda: _bratu(500),
    "bratu-n1000000": lambda: _bratu(1000),
    "brusselator-N32": lambda: _brusselator(32),
    "brusselator-N256": lambda: _brusselator(256),
    "rosenbrock-n1000000": lambda: _rosenbrock(1_000_000),
    "arrowhead-n4000": lambda: _arrowhead(4_000),
}
TINY: dict[str, Callable[[], Problem]] = {
    "bratu-n100": lambda: _bratu(10),
    "brusselator-N6": lambda: _brusselator(6),
    "rosenbrock-n50": lambda: _rosenbrock(50),
    "arrowhead-n30": lambda: _arrowhead(30),
}


def load(pid: str) -> Problem:
    return {**BUILDERS, **TINY}[pid]()


def max_error(problem: Problem, result: Any) -> float:
    """Largest |result - closed form| relative to the largest closed-form entry; inf when the
    shapes differ."""
    ref = problem.reference(problem.x)
    if not sp.issparse(result) and np.size(result) != ref.shape[0] * ref.shape[1]:
        return float("inf")
    got = sp.csr_array(result) if sp.issparse(result) else sp.csr_array(np.asarray(result).reshape(ref.shape))
    if got.shape != ref.shape:
        return float("inf")
    diff = abs(got - ref)
    scale = max(abs(ref).max(), 1e-300)
    return float(diff.max() / scale) if diff.nnz else 0.0


def central_difference_check(problem: Problem, result: Any, entries: int = 8, seed: int = 0) -> float:
    """Largest relative error of `entries` random columns of a result against central differences
    of f (for a Hessian: of f's gradient, taken with jaccli.grad), for sizes too large for the
    closed form to be worth building twice."""
    import jaccli

    rng = np.random.default_rng(seed)
    res = sp.csc_array(result)
    x = problem.x.ravel()
    worst = 0.0
    g = (lambda z: np.ravel(jaccli.grad(problem.f, z.reshape(problem.x.shape)))) if problem.hessian else \
        (lambda z: np.ravel(problem.f(z.reshape(problem.x.shape))))
    for j in rng.choice(x.size, size=min(entries, x.size), replace=False):
        h = 1e-6 * max(1.0, abs(x[j]))
        xp_, xm = x.copy(), x.copy()
        xp_[j] += h
        xm[j] -= h
        col = (g(xp_) - g(xm)) / (2 * h)
        got = res[:, [j]].toarray().ravel()
        worst = max(worst, float(np.abs(col - got).max() / max(np.abs(col).max(), 1.0)))
    return worst
