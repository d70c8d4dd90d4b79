"""Rules for nanmedian, nanpercentile and nanquantile: the order statistics of each slice's non-NaN entries."""

from __future__ import annotations

import numpy as np

from ..registry import family, register_derived
from ..tracer import guarded
from ._util import as_scalar, dtype_of
from .indexing import gather
from .numerics import _arr
from .piecewise import where
from .statistics import _TIES, _lerp, _sorted_first, check_quantile_method, checked_quantile_args

family("numerics")


def _count(s):
    """The non-NaN entries of each slice (np.sort puts NaN last, so they come first)."""
    return np.sum(~np.isnan(s), axis=0)


def _nan_bracket(virtual, count):
    """NumPy's _get_indexes for each slice's own length: the order statistics around each virtual index."""
    last = np.maximum(count - 1, 0)
    below = np.clip(np.floor(virtual), 0, last)
    above = np.clip(below + 1, 0, last)
    return below.astype(np.intp), above.astype(np.intp)


def _nan_order_statistic(a, q, axis, keepdims, weak_q):
    s, kept = _sorted_first(a, axis)
    count = guarded(_count, s)
    rest = np.shape(s)[1:]
    virtual = (count - 1) * np.reshape(q, np.shape(q) + (1,) * len(rest))
    below, above = guarded(_nan_bracket, virtual, count)
    gamma = virtual - below
    if weak_q:  # a Python number q: the result keeps the floating dtype of a, as in NumPy
        gamma = gamma.astype(np.result_type(dtype_of(a), np.float16))
    lead = np.shape(below)[: np.ndim(below) - len(rest)]
    stack = (-1,) + rest
    lo = np.take_along_axis(s, np.reshape(below, stack), axis=0)
    hi = np.take_along_axis(s, np.reshape(above, stack), axis=0)
    result = np.reshape(_lerp(lo, hi, np.reshape(gamma, stack)), lead + rest)
    empty = count == 0
    if np.any(empty):  # an all-NaN slice gives NaN; its entries get no derivative
        result = np.where(empty, np.nan, result)
    return np.reshape(result, np.shape(q) + kept) if keepdims else as_scalar(result)


def _nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _nan_order_statistic(_arr(a), np.asarray(0.5), axis, keepdims, True)


def _nan_quantile(name: str, percent: bool):
    def handler(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
        a, q, weak_q = checked_quantile_args(name, percent, a, q, method, weights)
        if np.ndim(q) > 1:
            raise ValueError("q must be a scalar or 1d")
        check_quantile_method(name, method)
        return _nan_order_statistic(a, q, axis, keepdims, weak_q)
    return handler


_NAN_ORDER_NOTES = f"of the non-NaN entries (NaN entries get derivative 0; an all-NaN slice gives NaN); {_TIES}"
register_derived(np.nanmedian, _nanmedian, uses=(gather, where),
                 notes=f"np.sort, then the mean of the middle {_NAN_ORDER_NOTES}")
register_derived(np.nanpercentile, _nan_quantile("np.nanpercentile", True), uses=(gather, where),
                 notes=f"np.sort, then NumPy's method='linear' (the only one supported); q may be traced; "
                       f"{_NAN_ORDER_NOTES}")
register_derived(np.nanquantile, _nan_quantile("np.nanquantile", False), uses=(gather, where),
                 notes=f"np.sort, then NumPy's method='linear' (the only one supported); q may be traced; "
                       f"{_NAN_ORDER_NOTES}")
