"""NumPy functions that call the user's functions on parts of a traced array: apply_along_axis, piecewise."""

from __future__ import annotations

import collections.abc

import numpy as np

from ..registry import family, register_derived
from ..handlers import INTERNAL
from ..tracer import Tracer, guarded, lift, peek
from ._util import axis_index, dtype_of

family("functional")


def _as_result(res):
    """What func1d returned as an array: traced values stay traced (a list of them is stacked)."""
    res = lift(res)
    return res if type(res) is Tracer else np.asanyarray(res)


def _apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d on every 1-D slice along `axis`, stacked: the slices' results replace that axis, as in NumPy."""
    arr = lift(arr)
    if type(arr) is not Tracer:
        arr = np.asanyarray(arr)
    axis = axis_index(axis, np.ndim(arr))
    moved = np.moveaxis(arr, axis, -1)
    outer = np.shape(moved)[:-1]
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = []
    for ind in np.ndindex(outer):
        res = _as_result(func1d(moved[ind + (Ellipsis,)], *args, **kwargs))
        if results and np.shape(res) != np.shape(results[0]):
            # NumPy writes each result into a buffer shaped like the first one: broadcast, or its error.
            try:
                res = np.broadcast_to(res, np.shape(results[0]))
            except ValueError:
                raise ValueError(f"could not broadcast input array from shape {np.shape(res)} into shape "
                                 f"{np.shape(results[0])}") from None
        results.append(res)
    res_shape = np.shape(results[0])
    stacked = np.reshape(np.stack(results), outer + res_shape)
    # The result's axes take the place of `axis`; the other axes keep their order.
    nd, rd = len(outer) + len(res_shape), len(res_shape)
    return np.transpose(stacked, list(range(axis)) + list(range(nd - rd, nd)) + list(range(axis, nd - rd)))


register_derived(np.apply_along_axis, _apply_along_axis,
                 notes="func1d is traced on each slice; the slices' results are stacked")


def _plain_conditions(condlist):
    """The conditions as plain booleans (a traced condition counts by its value, as in NumPy)."""
    if type(condlist) is Tracer:  # only its truth is a guard: a replay holds while that is unchanged
        return guarded(lambda c: np.asarray(c, dtype=bool), condlist)
    if type(condlist) is list or type(condlist) is tuple:
        return type(condlist)(_plain_conditions(c) for c in condlist)
    return condlist


def _piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's piecewise: each function sees x[cond] only, so the derivative flows through its own branch."""
    x = lift(x)
    if type(x) is not Tracer:
        x = np.asanyarray(x)
    condlist = _plain_conditions(condlist)
    n2 = len(funclist)
    # As NumPy: a single condition is promoted to a list of one condition.
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray)) and np.ndim(x) != 0):
        condlist = [condlist]
    condlist = np.asarray(condlist, dtype=bool)
    n = len(condlist)
    if n == n2 - 1:  # the "otherwise" function: where no condition holds
        condlist = np.concatenate([condlist, ~np.any(condlist, axis=0, keepdims=True)], axis=0)
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = np.zeros(np.shape(x), dtype=x.dtype)
    # Later conditions win: each write replaces what an earlier one put there.
    for cond, func in zip(condlist, funclist):
        if not isinstance(func, collections.abc.Callable):
            y = INTERNAL["setitem"](y, lift(func), cond)
        else:
            vals = x[cond]
            if np.size(vals) > 0:
                y = INTERNAL["setitem"](y, lift(func(vals, *args, **kw)), cond)
    # NumPy writes into zeros_like(x): the values are cast to x's dtype (float32 stays float32).
    y = y if dtype_of(y) == x.dtype else y.astype(x.dtype)
    return np.copy(y) if np.ndim(y) == 0 and type(peek(y)) is not np.ndarray else y  # a 0-d array, as NumPy's


register_derived(np.piecewise, _piecewise,
                 notes="conditions are plain values; each function is traced on its own part of x")
