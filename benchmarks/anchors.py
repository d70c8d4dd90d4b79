"""Anchor adapters: torch (autograd.functional and torch.func), JAX (eager and jit), HIPS autograd.

Each library is imported only when one of its methods is built, so the benchmark runs without
the `bench` extra. Every adapter writes the instance's f once, in the library's own namespace,
from the same data as problems.py; a builder returns (run, compile seconds or None).
"""
from __future__ import annotations

import importlib
import time
from typing import Callable

import numpy as np

from benchmarks import problems
from benchmarks.instances import Instance


class Unavailable(Exception):
    """The library behind a method is not installed or does not import."""


_LIBS: dict[str, object] = {}


def import_lib(lib: str):
    """Import and configure an anchor library once: float64 for JAX, default threads for torch."""
    if lib in _LIBS:
        mod = _LIBS[lib]
        if isinstance(mod, Unavailable):
            raise mod
        return mod
    try:
        if lib == "torch":
            mod = importlib.import_module("torch")
            mod.set_num_threads(mod.get_num_threads())   # the machine default, stated explicitly
            importlib.import_module("torch.func")
            importlib.import_module("torch.autograd.functional")
        elif lib == "jax":
            mod = importlib.import_module("jax")
            mod.config.update("jax_enable_x64", True)
            importlib.import_module("jax.numpy")
        elif lib == "autograd":
            mod = importlib.import_module("autograd")
            importlib.import_module("autograd.numpy")
            importlib.import_module("autograd.scipy.special")
        else:
            raise KeyError(lib)
    except ImportError as exc:
        err = Unavailable(f"missing ({exc})")
        _LIBS[lib] = err
        raise err from None
    _LIBS[lib] = mod
    return mod


# ----------------------------------------------------------------------------------------------
# the instance's function in each library's namespace
# ----------------------------------------------------------------------------------------------
def make_f(inst: Instance, xp, lse: Callable, const: Callable) -> Callable:
    """f for one sample (P4: one row), or for rows 0..r-1 only (P5: the anchors slice f)."""
    prob = inst.prob
    if prob == "P1":
        return lambda x: xp.sin(x) * xp.exp(x) + x ** 2
    if prob in ("P2", "P5"):
        W1, b1, W2, b2 = (const(a) for a in inst.params)
        if prob == "P5":
            r = inst.rows
            return lambda x: (W2 @ xp.tanh(W1 @ x + b1) + b2)[:r]
        return lambda x: W2 @ xp.tanh(W1 @ x + b1) + b2
    if prob == "P3":
        return lambda x: xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    if prob == "P4":
        A = const(inst.params[0])
        return lambda x: xp.tanh(x @ A)
    if prob == "P6":
        y = problems.P6_LABEL
        return lambda z: lse(z) - z[y]
    raise KeyError(prob)


def _sum_trick(f: Callable) -> Callable:
    """P4 without vmap: samples do not interact, so d sum_b f(X)[b] / dX holds every block."""
    return lambda X: f(X).sum(0)


# ----------------------------------------------------------------------------------------------
# torch
# ----------------------------------------------------------------------------------------------
def _torch_methods(kind: str) -> list[str]:
    if kind == "hess":
        return ["taf.hessian rev", "taf.hessian rev vec", "taf.hessian fwd-over-rev vec",
                "func.hessian", "func.jacrev(jacrev)"]
    if kind == "batch":
        return ["taf.jacobian rev (sum trick)", "taf.jacobian rev vec (sum trick)",
                "taf.jacobian fwd vec (sum trick)", "func.vmap(jacrev)", "func.vmap(jacfwd)"]
    return ["taf.jacobian rev", "taf.jacobian rev vec", "taf.jacobian fwd vec",
            "func.jacrev", "func.jacfwd"]


def _build_torch(inst: Instance, name: str):
    torch = import_lib("torch")
    taf, tfunc = torch.autograd.functional, torch.func
    f = make_f(inst, torch, lambda z: torch.logsumexp(z, 0), torch.from_numpy)
    x = torch.from_numpy(inst.x.copy())
    if inst.kind == "batch" and name.startswith("taf."):
        g = _sum_trick(f)
        vec = "vec" in name
        strategy = "forward-mode" if "fwd" in name else "reverse-mode"
        return (lambda: taf.jacobian(g, x, vectorize=vec, strategy=strategy).permute(1, 0, 2)
                .detach().numpy()), None
    if name.startswith("taf.jacobian"):
        vec = "vec" in name
        strategy = "forward-mode" if "fwd" in name else "reverse-mode"
        return lambda: taf.jacobian(f, x, vectorize=vec, strategy=strategy).detach().numpy(), None
    if name.startswith("taf.hessian"):
        vec = "vec" in name
        outer = "forward-mode" if "fwd" in name else "reverse-mode"
        return (lambda: taf.hessian(f, x, vectorize=vec, outer_jacobian_strategy=outer)
                .detach().numpy()), None
    transformed = {
        "func.jacrev": lambda: tfunc.jacrev(f),
        "func.jacfwd": lambda: tfunc.jacfwd(f),
        "func.hessian": lambda: tfunc.hessian(f),
        "func.jacrev(jacrev)": lambda: tfunc.jacrev(tfunc.jacrev(f)),
        "func.vmap(jacrev)": lambda: tfunc.vmap(tfunc.jacrev(f)),
        "func.vmap(jacfwd)": lambda: tfunc.vmap(tfunc.jacfwd(f)),
    }[name]()
    return lambda: transformed(x).detach().numpy(), None


# ----------------------------------------------------------------------------------------------
# JAX
# ----------------------------------------------------------------------------------------------
def _jax_methods(kind: str) -> list[str]:
    base = {"hess": ["hessian", "jacrev(grad)"],
            "batch": ["vmap(jacrev)", "vmap(jacfwd)"]}.get(kind, ["jacrev", "jacfwd"])
    return [f"jax.{b}" for b in base] + [f"jax.jit({b})" for b in base]


def _build_jax(inst: Instance, name: str):
    jax = import_lib("jax")
    jnp = jax.numpy
    f = make_f(inst, jnp, jax.nn.logsumexp, jnp.asarray)
    jit = name.startswith("jax.jit(")
    base = name[len("jax.jit("):-1] if jit else name[len("jax."):]
    g = {
        "jacrev": lambda: jax.jacrev(f),
        "jacfwd": lambda: jax.jacfwd(f),
        "hessian": lambda: jax.hessian(f),
        "jacrev(grad)": lambda: jax.jacrev(jax.grad(f)),
        "vmap(jacrev)": lambda: jax.vmap(jax.jacrev(f)),
        "vmap(jacfwd)": lambda: jax.vmap(jax.jacfwd(f)),
    }[base]()
    x = jax.device_put(inst.x)
    if not jit:
        # block_until_ready, not np.asarray: a host copy is not part of computing the result
        return lambda: g(x).block_until_ready(), None
    t0 = time.perf_counter()
    compiled = jax.jit(g).lower(x).compile()
    compile_s = time.perf_counter() - t0
    return lambda: compiled(x).block_until_ready(), compile_s


# ----------------------------------------------------------------------------------------------
# HIPS autograd
# ----------------------------------------------------------------------------------------------
def _autograd_methods(kind: str) -> list[str]:
    if kind == "hess":
        return ["autograd.hessian"]
    if kind == "batch":
        return ["autograd.jacobian (sum trick)"]
    return ["autograd.jacobian"]


def _build_autograd(inst: Instance, name: str):
    ag = import_lib("autograd")
    f = make_f(inst, ag.numpy, ag.scipy.special.logsumexp, np.asarray)
    x = inst.x
    if inst.kind == "hess":
        h = ag.hessian(f)
        return lambda: h(x), None
    if inst.kind == "batch":
        jb = ag.jacobian(_sum_trick(f))
        return lambda: jb(x).transpose(1, 0, 2), None
    j = ag.jacobian(f)
    return lambda: j(x), None


# ----------------------------------------------------------------------------------------------
# registry
# ----------------------------------------------------------------------------------------------
ANCHOR_LIBS = ("torch", "jax", "autograd")
_LISTERS = {"torch": _torch_methods, "jax": _jax_methods, "autograd": _autograd_methods}
_BUILDERS = {"torch": _build_torch, "jax": _build_jax, "autograd": _build_autograd}


def method_names(lib: str, kind: str) -> list[str]:
    """Display names of the methods of `lib` for an instance kind (torch ones get a prefix)."""
    names = _LISTERS[lib](kind)
    return [f"torch {n}" for n in names] if lib == "torch" else names


def build(lib: str, inst: Instance, name: str):
    """(run, compile seconds or None) for the anchor method `name` on `inst`."""
    if lib == "torch":
        name = name[len("torch "):]
    return _BUILDERS[lib](inst, name)
