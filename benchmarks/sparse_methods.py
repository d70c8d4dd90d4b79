"""The methods the sparse benchmark times: jaccli (first call, its pieces, a reused pattern, record_once),
scipy's sparse finite differences given the pattern, asdex (JAX) and JAX's dense jit(jacfwd).

Each builder takes a `Problem` and returns a callable computing the derivative, or raises `Unavailable`.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from benchmarks.sparse_problems import Problem


class Unavailable(Exception):
    """The method cannot run here (library missing, size beyond memory)."""


def _jaccli_call(problem: Problem, **kw: Any) -> Any:
    import jaccli
    return (jaccli.sparse_hessian if problem.hessian else jaccli.sparse_jacobian)(problem.f, problem.x, **kw)


def _pattern(problem: Problem) -> Any:
    import jaccli
    return jaccli.sparsity(problem.f, problem.x, hessian=problem.hessian)


def jaccli_first(problem: Problem) -> Callable[[], Any]:
    """Detection, colouring, sweeps and recovery: what a user's first call pays (a fresh f each time, so no
    pattern is kept between calls: f is not a record_once)."""
    return lambda: _jaccli_call(problem)


def jaccli_reused(problem: Problem) -> Callable[[], Any]:
    """The pattern and plan of an earlier call given back (sparsity=S): recording, fingerprint, sweeps."""
    S = _pattern(problem)
    return lambda: _jaccli_call(problem, sparsity=S)


def jaccli_record_once(problem: Problem) -> Callable[[], Any]:
    """record_once(f): later calls replay the recording and reuse the pattern it keeps."""
    import jaccli
    g = jaccli.record_once(problem.f)
    call = jaccli.sparse_hessian if problem.hessian else jaccli.sparse_jacobian
    call(g, problem.x)
    return lambda: call(g, problem.x)


def jaccli_pieces(problem: Problem) -> dict[str, float]:
    """Seconds of each piece of a first call: recording f, detection, colouring (the plan), the
    compressed sweeps, recovery into CSR."""
    from jaccli.api import jacobian_hessian as jh
    from jaccli.api.sparse import _leaves, _products, _recorded_elements
    from jaccli.sparse import hessian_plan, jacobian_plan
    from jaccli.sparse.detection import detect
    from jaccli.sparse.effort import sweep_seconds

    times: dict[str, float] = {}
    t0 = time.perf_counter()
    lazy = (jh.hessian if problem.hessian else jh.jacobian)(problem.f, problem.x)
    ev = _leaves(lazy)[0]._ev
    t1 = time.perf_counter()
    found = detect(ev.rec)
    pattern = sp.csr_array(sp.block_array(found.blocks, format="csr"), dtype=bool)
    if problem.hessian:
        pattern = sp.csr_array(pattern + pattern.T, dtype=bool)
    t2 = time.perf_counter()
    # the colouring effort the library allows this recording (sparse.effort), as in a first call
    sweep_s = sweep_seconds(_recorded_elements(ev.rec))
    plan = (hessian_plan(pattern, sweep_s=sweep_s) if problem.hessian
            else jacobian_plan(pattern, sweep_s=sweep_s))
    t3 = time.perf_counter()
    ins = (tuple(problem.x.shape),)
    outs = ins if problem.hessian else (tuple(np.shape(ev.rec.outputs[0])),)
    products = []
    if plan.mode in ("forward", "symmetric", "bidirectional"):
        products.append(_products(ev, plan.forward_seeds(), ins, outs, ev.rec.jvp).T)
    if plan.mode in ("reverse", "bidirectional"):
        products.append(_products(ev, plan.reverse_seeds(), outs, ins, ev.rec.vjp))
    t4 = time.perf_counter()
    plan.recover(*products)
    t5 = time.perf_counter()
    times.update(record=t1 - t0, detect=t2 - t1, colour=t3 - t2, sweeps=t4 - t3, recover=t5 - t4)
    times["colors"] = plan.sweeps
    times["mode"] = plan.mode
    return times


def _flat(problem: Problem) -> Callable[[np.ndarray], np.ndarray]:
    if problem.hessian:
        import jaccli
        return lambda z: np.ravel(jaccli.grad(problem.f, z.reshape(problem.x.shape)))
    return lambda z: np.ravel(problem.f(z.reshape(problem.x.shape)))


def scipy_fd(problem: Problem) -> Callable[[], Any]:
    """scipy.optimize's approx_derivative given the pattern; column grouping (group_columns) timed with it.
    A Hessian differentiates the problem's closed-form gradient when it has one."""
    from scipy.optimize._numdiff import approx_derivative, group_columns

    pattern = problem.reference(problem.x) != 0
    g = problem.gradient if problem.gradient is not None else _flat(problem)
    f = (lambda z: g(z)) if problem.hessian else _flat(problem)
    x = problem.x.ravel()

    def run() -> Any:
        groups = group_columns(pattern)
        return approx_derivative(f, x, sparsity=(pattern, groups))
    return run


def scipy_colors(problem: Problem) -> int:
    from scipy.optimize._numdiff import group_columns
    return int(group_columns(problem.reference(problem.x) != 0).max()) + 1


def _jax() -> Any:
    try:
        import jax
    except ImportError:
        raise Unavailable("jax is not installed (pip install -e '.[bench]')") from None
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    return jax


def _jax_flat(problem: Problem) -> tuple[Callable, Any]:
    jax = _jax()
    import jax.numpy as jnp
    shape = problem.x.shape
    return (lambda z: problem.func(z.reshape(shape), jnp).ravel()), jax.numpy.asarray(problem.x.ravel())


def asdex_prepared(problem: Problem) -> Callable[[], Any]:
    """asdex's one call: detection, colouring and the Jacobian (Hessian), scipy CSR out, not jitted."""
    f, x = _jax_flat(problem)
    try:
        import asdex
    except ImportError:
        raise Unavailable("asdex is not installed (pip install -e '.[bench]')") from None
    if problem.hessian:
        import jax.numpy as jnp
        def f(z: Any) -> Any:
            return problem.func(z, jnp)
    make = asdex.hessian if problem.hessian else asdex.jacobian
    return lambda: make(f, x, output_format="scipy_csr")(x)


def asdex_colors(problem: Problem) -> int:
    import asdex
    f, x = _jax_flat(problem)
    if problem.hessian:
        import jax.numpy as jnp
        return int(asdex.hessian_coloring(lambda z: problem.func(z, jnp), x).num_colors)
    return int(asdex.jacobian_coloring(f, x).num_colors)


def jax_dense(problem: Problem) -> Callable[[], Any]:
    """JAX's dense jit(jacfwd) (jit(hessian) for a Hessian), compiled before it is timed."""
    f, x = _jax_flat(problem)
    jax = _jax()
    if problem.hessian:
        import jax.numpy as jnp
        fn = jax.jit(jax.hessian(lambda z: problem.func(z, jnp)))
    else:
        fn = jax.jit(jax.jacfwd(f))
    fn(x).block_until_ready()
    return lambda: np.asarray(fn(x).block_until_ready())


def natural_greedy_colors(problem: Problem) -> int:
    """Colours of a natural-order greedy distance-2 column colouring (what ColPack, SMC and asdex do by
    default)."""
    from jaccli.sparse import greedy_columns, greedy_star
    from jaccli.sparse.star import adjacency
    pattern = problem.reference(problem.x) != 0
    if problem.hessian:
        graph = adjacency(pattern)
        return int(max(greedy_star(graph, np.arange(graph.shape[0])))) + 1
    return int(greedy_columns(pattern, "natural").max()) + 1


def least_work(problem: Problem) -> Callable[[], Any]:
    """The least any method computing this matrix in K sweeps and writing it can do: K evaluations of f
    (K: jaccli's colours; a sweep costs at least one f) and writing the result's nonzeros as an
    uncompressed .npz. Returns the closed form (so it passes the check), which it does not time."""
    import os
    import tempfile
    import weakref

    import scipy.sparse as sp
    K = _pattern(problem).colors
    J = problem.reference(problem.x)
    fd, path = tempfile.mkstemp(suffix=".npz")
    os.close(fd)

    def run() -> Any:
        for _ in range(K):
            problem.f(problem.x)
        sp.save_npz(path, J, compressed=False)
        return J
    # the file goes with the method (or at exit): each run of the benchmark left one in the temp folder
    weakref.finalize(run, os.remove, path)
    return run


BUILDERS: dict[str, Callable[[Problem], Callable[[], Any]]] = {
    "least possible work": least_work,
    "jaccli first call": jaccli_first,
    "jaccli reused pattern": jaccli_reused,
    "jaccli record_once": jaccli_record_once,
    "scipy FD (pattern given)": scipy_fd,
    "asdex prepared": asdex_prepared,
}
