"""Rules for scipy.signal.convolve (real N-D arrays, modes full, same and valid).

Every mode is a slice of the full convolution. Its tangent is the full convolution of the tangent with the
other operand, sliced; its cotangent is the valid convolution of the zero-padded full cotangent with the
other operand flipped on every axis. Both are the primitive again, so the rules differentiate to any order;
a block of K seeds is one convolution with an axis of length K (the other operand has length 1 there).
Swapped in while f runs (handlers.FUNCTION_SWAPS) once f's module imports scipy.signal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..facts import NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES
from ..registry import primitive, register
from ..structure import Dense
from ..tracer import holds_tracer, lift
from .scipy_special import _swap


def _mode_slices(a_shape: tuple, b_shape: tuple, mode: str) -> tuple[tuple[int, int, int], ...]:
    """(start, size, full size) per axis: where the mode's result lies in the full convolution."""
    out = []
    for na, nb in zip(a_shape, b_shape):
        full = na + nb - 1
        if mode == "full":
            out.append((0, full, full))
        elif mode == "same":
            out.append(((full - na) // 2, na, full))  # SciPy centres it
        else:  # valid
            out.append((min(na, nb) - 1, abs(na - nb) + 1, full))
    return tuple(out)


def register_rules(signal: Any) -> None:
    original = signal.convolve
    prim = primitive("scipy.signal.convolve", lambda a, b, mode: original(a, b, mode=mode))
    STRUCTURES[prim] = Dense()
    SAMPLE_RULES[prim] = NOT_SEPARABLE

    def jvp(pos):
        def maker(ans, a, b, mode):
            where = (slice(None),) + tuple(slice(s, s + n) for s, n, _ in _mode_slices(np.shape(a), np.shape(b), mode))
            other = (b if pos == 0 else a)[None]
            return lambda t: prim(t, other, mode="full")[where]
        return maker

    def vjp(pos):
        def maker(ans, a, b, mode):
            pads = [(0, 0)] + [(s, full - s - n) for s, n, full in _mode_slices(np.shape(a), np.shape(b), mode)]
            other = np.flip(b if pos == 0 else a)[None]
            return lambda g: prim(np.pad(g, pads), other, mode="valid")
        return maker

    prim.defjvp(jvp(0), jvp(1))
    prim.defvjp(vjp(0), vjp(1))

    def convolve(in1, in2, mode="full", method="auto"):
        if not (holds_tracer(in1) or holds_tracer(in2)):
            return original(in1, in2, mode=mode, method=method)
        a, b = lift(in1), lift(in2)
        if np.ndim(a) != np.ndim(b):
            raise ValueError("scipy.signal.convolve: in1 and in2 should have the same dimensionality")
        if mode not in ("full", "same", "valid"):
            raise ValueError("scipy.signal.convolve: acceptable mode flags are 'valid', 'same', or 'full'")
        if mode == "valid" and not (all(p >= q for p, q in zip(np.shape(a), np.shape(b)))
                                    or all(q >= p for p, q in zip(np.shape(a), np.shape(b)))):
            raise ValueError("scipy.signal.convolve: for 'valid' mode, one must be at least as large as the other "
                             "in every dimension")
        a = a if holds_tracer(a) else np.asarray(a, dtype=float)
        b = b if holds_tracer(b) else np.asarray(b, dtype=float)
        return prim(a, b, mode=mode)

    convolve.__doc__ = original.__doc__
    _swap(signal, "convolve", original, convolve)
    register(convolve, convolve, prims=(prim,), name="scipy.signal.convolve",
             notes="real arrays of the same number of dimensions; modes full, same and valid")

