"""NumPy functions that call the user's functions on parts of a traced array: apply_along_axis."""

from __future__ import annotations

import numpy as np

from ..registry import family, register_derived
from ..tracer import Tracer, lift
from ._util import axis_index

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
