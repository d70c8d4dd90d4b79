"""Rules for the moments: mean, average, var and std, and nanmean, nanvar and nanstd."""

from __future__ import annotations

import numpy as np

from ..facts import allow_in_expressions
from ..registry import family, register_derived
from ._util import dtype_of, in_dtype, norm_axes, reduction_dtype
from .reductions import _NAN_NOTES, _count, _mask, _nan_mask, _sum_handler, cast_first, sum_

family("reductions")


def _mean_handler(a, axis=None, dtype=None, out=None, keepdims=False, where=np._NoValue):
    axes = norm_axes(axis, np.ndim(a))
    mask = _mask(where, a)
    if mask is not None:  # the mean of the entries the mask keeps; NaN where it keeps none, as NumPy
        return _masked_mean(a, ~mask, axes, bool(keepdims))
    return _sum_handler(a, axis=axes, keepdims=keepdims) / float(max(_count(np.shape(a), axes), 1))  # as NumPy


def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is None:
        avg = _mean_handler(a, axis, keepdims=keepdims)
        scale = np.full(np.shape(avg), float(_count(np.shape(a), norm_axes(axis, np.ndim(a)))))
    else:
        w = weights
        if np.shape(w) != np.shape(a):
            # 1-D weights along `axis`, as NumPy allows.
            ax = int(axis) % np.ndim(a)
            w = np.reshape(w, tuple(-1 if i == ax else 1 for i in range(np.ndim(a))))
        scale = np.sum(w, axis=axis, keepdims=keepdims)
        avg = _sum_handler(a * w, axis=axis, keepdims=keepdims) / scale
        scale = np.broadcast_to(scale, np.shape(avg))
    return (avg, scale) if returned else avg


def _var_handler(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
                 mean=np._NoValue, correction=np._NoValue):
    if correction is not np._NoValue:
        ddof = correction
    mask = _mask(where, a)
    return _variance(a, None if mask is None else ~mask, norm_axes(axis, np.ndim(a)), bool(keepdims), ddof, mean,
                     _moment_dtype("np.var", np.var, a, dtype))


def _std_handler(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    var = _var_handler(a, axis, dtype, ddof=ddof, keepdims=keepdims, **kw)
    plain = all(kw.get(k, np._NoValue) is np._NoValue for k in ("where", "mean", "correction"))
    if plain and ddof == 0 and _count(np.shape(a), norm_axes(axis, np.ndim(a))) == 1:
        # One entry per slice deviates from its mean by a - a: the variance is 0 (NaN where a is not finite)
        # whatever a is, and so is the std, with derivative 0 in both modes; its root would give sqrt'(0) * 0,
        # NaN in reverse mode.
        _refuse_root(var)
        return var
    return _root(var)


register_derived(np.mean, _mean_handler, uses=(sum_,))
register_derived(np.average, _average, uses=(sum_,))
register_derived(np.var, _var_handler, uses=(sum_,))
register_derived(np.std, _std_handler, uses=(sum_,),
                 notes="the derivative is infinite where the standard deviation is 0 (as for sqrt at 0)")
allow_in_expressions("mean", "var", "std")


# ---------------------------------------------------------------------------
# Means and variances of the entries a plain mask leaves in: NaN-ignoring (nanmean, nanvar), or a where= mask
# ---------------------------------------------------------------------------
def _denominator(count, dtype):
    """Counts as divisors in dtype (float32 stays float32); NaN where a slice has none."""
    return np.where(count > 0, count, np.nan).astype(np.result_type(dtype, np.float32))


def _masked_mean(a, mask, axes, keepdims):
    """The mean of a's entries outside `mask` (NaNs, entries a where= leaves out): one plain mask
    serves the sum and the count."""
    count = np.sum(~mask, axis=axes, keepdims=keepdims)
    with np.errstate(invalid="ignore", divide="ignore"):  # an all-NaN slice gives NaN, as NumPy
        return _sum_handler(np.where(mask, 0.0, a), axis=axes, keepdims=keepdims) / _denominator(count, dtype_of(a))


def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
    return _masked_mean(a, _nan_mask(a, where), norm_axes(axis, np.ndim(a)), bool(keepdims))


def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
            mean=np._NoValue, correction=np._NoValue):
    if dtype_of(a).kind not in "fc":  # no entry can be NaN: NumPy's np.var
        return _var_handler(a, axis, dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean, correction=correction)
    if correction is not np._NoValue:
        ddof = correction
    return _variance(a, _nan_mask(a, where), norm_axes(axis, np.ndim(a)), bool(keepdims), ddof, mean,
                     _moment_dtype("np.nanvar", np.nanvar, a, dtype), nan=True)


# ---------------------------------------------------------------------------
# var and std in NumPy's steps: the mean summed in dtype= and cast to it; the deviations in the dtype
# that a and the mean give (nanvar: in a's own); their squares summed in dtype=, divided by the degrees
# of freedom and cast to dtype=. So np.var(x, dtype=int) truncates the mean and each square, and
# dtype=bool asks whether any deviation is not 0: piecewise constant, derivative 0.
# ---------------------------------------------------------------------------
def _moment_dtype(call, numpy_fn, a, dtype):
    """The dtype a variance is computed in: dtype= (NumPy's error if it refuses it), else float64 for
    integers and booleans, or None (the floating dtype of the deviations)."""
    if dtype is not None:
        return reduction_dtype(call, numpy_fn, a, dtype)
    return None if dtype_of(a).kind == "f" else np.dtype(np.float64)


def _variance(a, mask, axes, keepdims, ddof, mean, dtype, nan=False):
    """The variance of a's entries outside `mask` (None: all), about `mean` if given, in `dtype`
    (None: the deviations' own).

    Without nan: NumPy's np.var (no degree of freedom left: a division by 0, inf or NaN); with it,
    np.nanvar (NaN there, unwarned).
    """
    def total(v, keep):
        if mask is None and dtype is None:
            return _sum_handler(v, axis=axes, keepdims=keep)
        return np.sum(v if mask is None else np.where(mask, 0, v), axis=axes, dtype=dtype, keepdims=keep)

    def in_(v):
        return v if dtype is None else in_dtype(v, dtype)

    if mask is None:
        if mean is np._NoValue:
            mean = in_(total(a, True) / float(max(_count(np.shape(a), axes), 1)))  # (an empty slice: unused)
        d = a - mean
        s = total(d * d, keepdims)
        dof = max(_count(np.shape(a), axes) - ddof, 0)  # none left: a division by 0, as NumPy
        return in_(s / (float(dof) if dof else np.zeros((), np.result_type(dtype_of(s), np.float32))))
    count, left = np.sum(~mask, axis=axes, keepdims=True), np.sum(~mask, axis=axes, keepdims=keepdims) - ddof
    with np.errstate(invalid="ignore", divide="ignore"):
        if mean is np._NoValue:
            s = total(a, True)
            mean = in_(s / _denominator(count, dtype_of(s)))
        d = a - mean
        if nan:
            d = in_dtype(d, dtype_of(a))
        s = total(d * d, keepdims)
        dt = np.result_type(dtype_of(s), np.float32)
        return in_(s / (_denominator(left, dt) if nan else np.maximum(left, 0).astype(dt)))


def _root(var):
    """np.sqrt of a variance in its dtype, as NumPy's std: into the variance's own array (NumPy's
    error where the root is not of its kind), or for one number, cast back to its dtype."""
    _refuse_root(var)
    return in_dtype(np.sqrt(var), dtype_of(var))


def _refuse_root(var):
    """NumPy's error where the root of an array of variances is not of their kind."""
    if np.ndim(var):
        dtype = dtype_of(var)
        np.sqrt(np.zeros(1, dtype), out=np.zeros(1, dtype))


register_derived(np.nanmean, _nanmean, uses=(sum_,), notes=_NAN_NOTES)
register_derived(np.nanvar, _nanvar, uses=(sum_,), notes=_NAN_NOTES)
register_derived(np.nanstd, lambda a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw:
                 _root(_nanvar(a, axis, dtype, ddof=ddof, keepdims=keepdims, **kw)), uses=(sum_,),
                 notes=_NAN_NOTES + "; infinite derivative where the deviation is 0, as std")

cast_first(np.mean, np.nanmean)
