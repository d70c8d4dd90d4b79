"""Complex inputs and outputs of jacobian, hessian and grad, by JAX's conventions (docs/complex.md).

What JAX refuses with a TypeError is refused with an UnsupportedOperationError (a TypeError too).

A Jacobian with complex entries is that of f seen as a function of real arrays: a complex input
becomes its real and imaginary parts stacked on a new last axis (only its real part, with
holomorphic=True: f'(z) is the derivative along it), a complex output the same; the real blocks
the engine computes are put back together as complex arrays.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.engine import Tracer, is_complex
from jaccli.errors import UnsupportedOperationError


def complex_arg(a: Any) -> bool:
    """Whether an argument of f is complex (an array, a number, a traced value)."""
    if type(a) is np.ndarray:  # (np.iscomplexobj's answer, without its conversions: every call asks)
        return a.dtype.kind == "c"
    return is_complex(a) if type(a) is Tracer else np.iscomplexobj(a)


def refuse_complex_inputs(args: tuple, wrt_idx: tuple, name: str) -> None:
    """name (hvp, vhp, hessian without holomorphic=True) takes real inputs only, as JAX's jacfwd."""
    if any(complex_arg(args[k]) for k in wrt_idx):
        hint = "holomorphic=True (for a holomorphic f), or " if name == "hessian" else ""
        raise UnsupportedOperationError(f"{name} of a function of complex inputs needs {hint}the real and imaginary "
                                        "parts passed as real inputs, as JAX's jacfwd (docs/complex.md)")


def refuse_complex_value(value: Any, name: str) -> None:
    """name (hessian, hvp, vhp, grad without holomorphic=True) needs f real-valued, as JAX's grad."""
    if any(is_complex(v) for v in (value if isinstance(value, tuple) else (value,))):
        raise UnsupportedOperationError(f"{name} needs a real-valued f, but f returns complex values: differentiate "
                                        "np.real(f) or np.abs(f) ** 2, or pass holomorphic=True for a holomorphic f of "
                                        "complex inputs (docs/complex.md)")


def holomorphic_error(name: str, what: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(f"{name} with holomorphic=True needs complex {what}, as JAX's; give them a "
                                     "complex dtype (x.astype(complex)), or leave holomorphic out (docs/complex.md)")


class Embedding:
    """f as a function of real arrays: g(*real_args), with complex inputs and outputs split into parts."""

    def __init__(self, f: Callable, args: tuple, wrt_idx: tuple, holomorphic: bool, name: str) -> None:
        self.f, self.holomorphic, self.name = f, holomorphic, name
        self.split = tuple(k for k in wrt_idx if complex_arg(args[k]))
        if holomorphic and len(self.split) < len(wrt_idx):
            raise holomorphic_error(name, "inputs")
        real_args = list(args)
        self.imag = {}
        for k in self.split:
            z = np.asarray(args[k])
            if holomorphic:
                real_args[k], self.imag[k] = z.real.copy(), z.imag.copy()
            else:
                real_args[k] = np.stack([z.real, z.imag], axis=-1)
        self.args = tuple(real_args)
        self.out_complex: tuple[bool, ...] = ()
        self.out_is_tuple = False

    def g(self, *args: Any) -> Any:
        args = list(args)
        for k in self.split:
            args[k] = args[k] + 1j * self.imag[k] if self.holomorphic else args[k][..., 0] + 1j * args[k][..., 1]
        out = self.f(*args)
        self.out_is_tuple = is_tuple = isinstance(out, (tuple, list))
        outs = tuple(out) if is_tuple else (out,)
        self.out_complex = tuple(is_complex(o) or np.iscomplexobj(o) for o in outs)
        parts = tuple(np.stack([np.real(o), np.imag(o)], axis=-1) if c else o for o, c in zip(outs, self.out_complex))
        return parts if is_tuple else parts[0]

    def check(self) -> None:
        """Refuse what JAX refuses: complex outputs of complex inputs without holomorphic=True, and
        real outputs with it."""
        if self.holomorphic and not all(self.out_complex):
            raise holomorphic_error(self.name, "outputs")
        if self.split and not self.holomorphic and any(self.out_complex):
            raise UnsupportedOperationError(
                f"{self.name} of a function with complex inputs and complex outputs needs holomorphic=True (for a "
                "holomorphic f, as JAX's); otherwise differentiate the real and imaginary parts of the output, or use "
                "jaccli.jvp/jaccli.vjp (docs/complex.md)")

    def block(self, A: Any, i: int, k: int, out_ndim: int) -> np.ndarray:
        """The complex block of output i and input k from the real one A of g."""
        A = np.asarray(A)
        if self.out_complex[i]:
            A = np.take(A, 0, axis=out_ndim) + 1j * np.take(A, 1, axis=out_ndim)
        if k in self.split and not self.holomorphic:
            A = A[..., 0] - 1j * A[..., 1]  # JAX's gradient: d/dx - i d/dy
        return A


def complex_jacobian(jacobian: Callable, f: Callable, args: tuple, wrt_idx: tuple, in_tuple: bool,
                     holomorphic: bool, batch: bool, **options: Any) -> Any:
    """jacobian(f, ...) with complex inputs or outputs: complex NumPy arrays, nested as jacobian's."""
    emb = Embedding(f, args, wrt_idx, holomorphic, "jacobian")
    J = jacobian(emb.g, emb.args, wrt=wrt_idx if in_tuple else wrt_idx[0], **options)
    emb.check()
    rows = J if emb.out_is_tuple else (J,)
    blocks = []
    for i, row in enumerate(rows):
        row = row if in_tuple else (row,)
        # the axis of g's output i that holds the parts: its last, before the input's axes
        blocks.append([emb.block(Jij, i, k, np.ndim(Jij) - np.ndim(emb.args[k]) - 1 + batch)
                       for Jij, k in zip(row, wrt_idx)])
    if emb.out_is_tuple and in_tuple:
        return tuple(tuple(r) for r in blocks)
    if emb.out_is_tuple:
        return tuple(r[0] for r in blocks)
    return tuple(blocks[0]) if in_tuple else blocks[0][0]


def holomorphic_hessian(hessian: Callable, f: Callable, args: tuple, wrt_idx: tuple, in_tuple: bool,
                        **options: Any) -> Any:
    """f''(z) of a holomorphic scalar f: the Hessians of its real and imaginary parts along the real axes."""
    emb = Embedding(f, args, wrt_idx, True, "hessian")
    wrt = wrt_idx if in_tuple else wrt_idx[0]
    def part(p):
        def f_part(*a):
            out = emb.g(*a)
            if not all(emb.out_complex):
                raise holomorphic_error("hessian", "outputs")
            return np.take(out, p, axis=-1)
        return f_part

    re, im = (hessian(part(p), emb.args, wrt=wrt, **options) for p in (0, 1))
    if in_tuple:
        return tuple(tuple(np.asarray(a) + 1j * np.asarray(b) for a, b in zip(ra, rb)) for ra, rb in zip(re, im))
    return np.asarray(re) + 1j * np.asarray(im)
