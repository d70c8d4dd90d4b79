"""Rules for functions that reorder elements: flip, rot90, roll and sort (views or one gather)."""

from __future__ import annotations

import numpy as np

from ..registry import family, register_derived
from ..tracer import guarded
from ._util import axis_index, norm_axes
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
    return rearrange(a, np.roll(positions(np.shape(a)), shift, axis))


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
register_derived(np.sort, _sort, uses=(gather,),
                 notes="a gather by the stable argsort permutation: tied values keep their original order")
