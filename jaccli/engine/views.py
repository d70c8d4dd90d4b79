"""Traced views and in-place writes: what a result shares memory with, and when a write may reuse it."""

from __future__ import annotations

import cmath
import math
import weakref
from typing import Any

import numpy as np

from ..errors import TracingError
from .tracer import REPLACING, Tracer, memory_root


def writable(x: Any, top: Any) -> bool:
    """Whether an update of traced `x` may write into x's memory: f is writing into x (which then
    stands for the result: nothing can use its old value afterwards), no recorded rule reads x's
    values, no view shares them, and the memory is the recording's own (no input, constant or
    argument of f, which the caller may still hold)."""
    if x is not REPLACING.v or x._trace is not top or x._idx is not None:
        return False
    node, value = x._node, x._value
    return (not node.pinned and type(value) is np.ndarray and value.base is None and value.flags.writeable
            and value.dtype.kind in "fc" and (node.in_place or not any(a is value for a in node.args)))


def write_in_place(prim: Any, node: Any, vals: list, kwargs: dict, nonfinite: dict) -> tuple[Any, bool]:
    """prim applied in place into the memory of vals[0], node's value; returns (result, whether the
    result is all finite).

    The value node had is gone afterwards: only whether it was finite is kept, for the diagnostics
    (`nonfinite`: a running count of the non-finite entries per array, O(size written) a write).
    """
    value = vals[0]
    before = nonfinite.get(id(value))
    if before is None:
        before = int(np.count_nonzero(~np.isfinite(value)))
    part, values = prim.in_place(*vals, **kwargs)
    old = _nonfinite(part)
    part[...] = values
    after = nonfinite[id(value)] = before - old + _nonfinite(part)
    if node.finite is None:
        node.finite = before == 0
    return value, after == 0


def _nonfinite(part: np.ndarray) -> int:
    """How many entries of part (float or complex) are not finite; one element without NumPy's
    reductions, which cost microseconds on it (a loop of y[i] = v writes one at a time)."""
    if part.ndim == 0:
        v = part.item()
        return 0 if (math.isfinite(v) if type(v) is float else cmath.isfinite(v)) else 1
    return int(np.count_nonzero(~np.isfinite(part)))


def note_view(out: Any, args: tuple, top: Any) -> None:
    """Link `out` to the traced argument it is a NumPy view of, if any, and remember it as a view."""
    base = _view_of(out._value, args, top)
    if base is not None:
        base._node.pinned = True  # the view shows what a write into base's memory would change
        out._base = base
        top.views.setdefault(id(memory_root(out._value)), []).append(weakref.ref(out))


def _view_of(ans: Any, args: tuple, top: Any) -> Any:
    """The traced argument whose memory `ans` is a NumPy view of (on this level), or None."""
    if type(ans) is np.ndarray:
        if ans.base is None:
            return None
        for a in args:
            if type(a) is Tracer and a._trace is top and type(a._value) is np.ndarray \
                    and np.may_share_memory(ans, a._value):
                return a
    elif type(ans) is Tracer and ans._base is not None:  # nested: the level below knows
        for a in args:
            if type(a) is Tracer and a._trace is top and a._value is ans._base:
                return a
    return None


def stale_error(a: Any, use: tuple | None) -> Exception:
    """The error for using an array that a write left behind (reported where the write is)."""
    then = f", and it is used afterwards at {use[0]}:{use[1]}" if use else ", and f returns it"
    if a._stale[2] == "view":
        return TracingError(
            f"an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) keeps its "
            f"old values in jaccli{then}: take the view after the write, or copy it before "
            "(row = Z[1].copy()) if the old values are meant", a._stale[0])
    return TracingError(
        f"an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v){then}; "
        "jaccli does not carry such writes back to the array: write into it with one index "
        "(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())", a._stale[0])
