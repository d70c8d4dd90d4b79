"""Rules for functions that reorder or copy out elements: flip, rot90, roll, sort, sliding windows."""

from __future__ import annotations

import functools

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..facts import allow_in_expressions
from ..registry import family, register, register_derived
from ..refusals import mark_read_only
from ..tracer import guarded
from ._util import axis_index, in_method_dtype, norm_axes, shape_of
from .indexing import gather, get_basic, getitem, positions, rearrange
from .shape import transpose

family("reordering")


# ---------------------------------------------------------------------------
# flip and rot90: basic slicing with negative steps (views), and a transpose
# ---------------------------------------------------------------------------
def _reversed(nd: int, axes: tuple) -> tuple:
    return tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(nd))


def _flip(m, axis=None):
    nd = np.ndim(m)
    return getitem(m, _reversed(nd, norm_axes(axis, nd)))


def _fliplr(m):
    if np.ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return _flip(m, 1)


def _flipud(m):
    if np.ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return _flip(m, 0)


def _rot90(m, k=1, axes=(0, 1)):
    nd = np.ndim(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = (axis_index(a, nd) for a in axes)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = int(k) % 4
    if k == 0:
        return getitem(m, (slice(None),) * nd)
    if k == 2:
        return getitem(m, _reversed(nd, (a0, a1)))
    # A quarter turn is a reversal of one of the two axes followed by swapping them.
    flipped = getitem(m, _reversed(nd, (a1,) if k == 1 else (a0,)))
    order = list(range(nd))
    order[a0], order[a1] = order[a1], order[a0]
    return np.transpose(flipped, order)


register_derived(np.flip, _flip, uses=(get_basic,))
register_derived(np.fliplr, _fliplr, uses=(get_basic,))
register_derived(np.flipud, _flipud, uses=(get_basic,))
register_derived(np.rot90, _rot90, uses=(get_basic, transpose))


# ---------------------------------------------------------------------------
# roll and sort: one gather of positions NumPy computes for us
# ---------------------------------------------------------------------------
def _roll(a, shift, axis=None):
    shape = shape_of(a)
    try:
        return rearrange(a, _roll_positions(shape, shift, axis))
    except TypeError:  # a shift or axis that is a list or an array: not a key, computed afresh
        return rearrange(a, np.roll(positions(shape), shift, axis))


@functools.lru_cache(maxsize=256)
def _roll_positions(shape: tuple, shift, axis) -> np.ndarray:
    """np.roll's flat positions, once per shape, shift and axis (an integrator rolls the same state at
    every step): read-only, as every recording that gathers by them shares them."""
    pos = np.roll(positions(shape), shift, axis)
    pos.flags.writeable = False
    return pos


def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise ValueError("np.sort(order=...) needs a structured array; jaccli differentiates float arrays")
    if axis is None:
        a, axis = np.reshape(a, (-1,)), -1
    # The permutation is computed once, on the plain values; a stable sort decides ties, so the
    # derivative of each tied output goes to the tied inputs in their original order.
    perm = guarded(np.argsort, a, axis=axis, kind="stable")
    return rearrange(a, np.take_along_axis(positions(np.shape(a)), perm, axis))


register_derived(np.roll, _roll, uses=(gather,))
allow_in_expressions("flip", "roll")


_WINDOWS = "np.lib.stride_tricks.sliding_window_view"


def _sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    windows = rearrange(x, np.lib.stride_tricks.sliding_window_view(positions(np.shape(x)), window_shape, axis))
    if writeable:
        # NumPy's writeable windows write through to x and to every window that overlaps.
        return mark_read_only(windows, f"a write into {_WINDOWS}(..., writeable=True) is not supported by jaccli "
                                       "(NumPy writes through to x and to the overlapping windows); write into x, "
                                       "then take the windows")
    return mark_read_only(windows, f"the windows of {_WINDOWS} are read-only, as in NumPy (they share memory); "
                                   "write into a copy instead (w = sliding_window_view(x, n).copy())")


register_derived(np.lib.stride_tricks.sliding_window_view, _sliding_window_view, uses=(gather,),
                 name=_WINDOWS, notes="a gather: overlapping windows accumulate; read-only, as in NumPy")
register_derived(np.sort, _sort, uses=(gather,),
                 notes="a gather by the stable argsort permutation: tied values keep their original order")


def _partition_perm(values, kth, axis):
    """A permutation p with values[p] == np.partition(values, kth, axis), NumPy's own arrangement."""
    want = np.partition(values, kth, axis=axis)
    source = np.argsort(values, axis=axis, kind="stable")       # the k-th smallest value is at source[k]
    rank = np.argsort(np.argsort(want, axis=axis, kind="stable"), axis=axis, kind="stable")
    return np.take_along_axis(source, rank, axis)


def _partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise ValueError("np.partition(order=...) needs a structured array; jaccli differentiates float arrays")
    if axis is None:
        a, axis = np.reshape(a, (-1,)), -1
    perm = guarded(_partition_perm, a, kth, axis)
    return rearrange(a, np.take_along_axis(positions(np.shape(a)), perm, axis))


def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
            **kw):
    if axis is not None:
        raise UnsupportedOperationError("np.unique(..., axis=...) is not supported by jaccli; unique values of a "
                                        "flattened array are (axis=None)", user_site(2))
    # NumPy computes the first occurrences (flat positions), and the inverse in its own shape.
    parts = guarded(lambda v: np.unique(v, return_index=True, return_inverse=return_inverse,
                                        return_counts=return_counts, equal_nan=equal_nan, **kw), ar)
    out = (rearrange(ar, parts[1]),) + ((parts[1],) if return_index else ()) + tuple(parts[2:])
    return out if len(out) > 1 else out[0]


def _trim_zeros(filt, trim="fb", axis=None):
    if np.ndim(filt) != 1 or axis is not None:
        raise UnsupportedOperationError("np.trim_zeros is supported by jaccli for 1-D arrays", user_site(2))

    def bounds(v):
        nonzero = np.flatnonzero(v)
        if nonzero.size == 0:
            return 0, 0
        trim_ = trim.lower()
        return (int(nonzero[0]) if "f" in trim_ else 0), (int(nonzero[-1]) + 1 if "b" in trim_ else v.size)
    start, stop = guarded(bounds, filt)
    return filt[start:stop]


register_derived(np.partition, _partition, uses=(gather,),
                 notes="a gather by a permutation giving NumPy's own arrangement; ties: in their original order")
register_derived(np.unique, _unique, uses=(gather,),
                 notes="the first occurrence of each value carries its derivative; axis=None only")
register_derived(np.trim_zeros, _trim_zeros, uses=(get_basic,), notes="1-D; the bounds are plain values")


# Running maxima and minima: a gather of the element each running value comes from.
def _running_source(values, axis, ufunc):
    """For each position along axis, the index of the element ufunc.accumulate's value there is."""
    moved = np.moveaxis(values, axis, -1)
    acc = ufunc.accumulate(moved, axis=-1)
    with np.errstate(invalid="ignore"):
        new = acc[..., 1:] != acc[..., :-1]
    new &= ~(np.isnan(acc[..., 1:]) & np.isnan(acc[..., :-1]))  # a NaN, once in, stays: no new source
    first = np.ones(moved.shape[:-1] + (1,), dtype=bool)
    steps = np.arange(moved.shape[-1]) * np.concatenate([first, new], axis=-1)
    return np.moveaxis(np.maximum.accumulate(steps, axis=-1), -1, axis)


def _running(ufunc):
    def handler(array, axis=0, dtype=None, out=None):
        if np.ndim(array) == 0:
            raise TypeError("cannot accumulate on a scalar")  # NumPy's error
        array = in_method_dtype(ufunc.accumulate, array, dtype)
        axis = axis_index(axis, np.ndim(array))
        source = guarded(_running_source, array, axis, ufunc)
        return rearrange(array, np.take_along_axis(positions(np.shape(array)), source, axis))
    return handler


_RUNNING_NOTES = "a gather of the running extreme: ties go to its first occurrence; NaN propagates as in NumPy"
register((np.maximum, "accumulate"), _running(np.maximum), prims=(gather,), kind="derived",
         name="np.maximum.accumulate", notes=_RUNNING_NOTES)
register((np.minimum, "accumulate"), _running(np.minimum), prims=(gather,), kind="derived",
         name="np.minimum.accumulate", notes=_RUNNING_NOTES)
