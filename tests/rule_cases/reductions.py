"""Rows for the reductions family: sums, means, spreads, products, extremes and running sums/products."""

import numpy as np

from . import Case, pos, r


def _with_nans(x, row=None):
    """x with NaN in a few entries (every entry of `row`, if given): the entries the nan-functions skip."""
    x = x.copy()
    x.flat[[1, 6]] = np.nan
    if row is not None:
        x[row] = np.nan
    return x

# Exact zeros, one and two of them: the product rules must not divide by x.
_ONE_ZERO = np.array([[0.7, 0.0, -1.3, 0.9], [1.1, -0.6, 0.8, 1.4]])
_TWO_ZEROS = np.array([[0.0, 1.2, 0.0, -0.8], [0.5, 0.0, 0.9, 0.0], [1.3, -0.7, 0.6, 1.1]])
# Exact two-way ties: central differences see the average of the two one-sided slopes, which is
# the even split, so first order is checkable (second order is not: the split jumps across the tie).
_TIES = np.array([[0.2, 0.9, 0.9, -0.4], [-0.3, -0.3, 0.5, 0.1]])

# A where= mask (each row and column keeps some entries): the left-out entries carry no derivative.
_KEEP = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])

CASES = [
    # sum, mean, average
    Case("np.sum", np.sum, (r(3, 4),), id="sum-all"),
    Case("np.sum", lambda x: np.sum(x, axis=1), (r(3, 4),), id="sum-axis1"),
    Case("np.sum", lambda x: np.sum(x, axis=-1, keepdims=True), (r(2, 3, 4),), id="sum-neg-axis-keepdims"),
    Case("np.sum", lambda x: np.sum(x, axis=(0, 2)), (r(2, 3, 4),), id="sum-axis-tuple"),
    Case("np.sum", lambda x: x.sum(axis=0) + np.sum(x, initial=2.0), (r(3, 2),), id="sum-method-initial"),
    Case("np.add.reduce", lambda x: np.add.reduce(x, axis=0), (r(3, 4),)),
    Case("np.mean", np.mean, (r(3, 4),), id="mean-all"),
    Case("np.mean", lambda x: np.mean(x, axis=(1, 2), keepdims=True), (r(2, 3, 4),), id="mean-axes-keepdims"),
    Case("np.average", lambda x: np.average(x, axis=0), (r(3, 4),), id="average-unweighted"),
    Case("np.average", lambda x, w: np.average(x, weights=w), (r(3, 4), pos(3, 4)), wrt=(0, 1),
         id="average-weighted"),
    Case("np.average", lambda x, w: np.average(x, axis=1, weights=w), (r(3, 4), pos(4)), wrt=(0, 1),
         id="average-weights-along-axis"),
    # var and std
    Case("np.var", np.var, (r(3, 4),), id="var-all"),
    Case("np.var", lambda x: np.var(x, axis=1, ddof=1, keepdims=True), (r(3, 4),), id="var-axis-ddof-keepdims"),
    Case("np.var", lambda x: x.var(axis=(0, 2)), (r(2, 3, 4),), id="var-axis-tuple"),
    Case("np.std", np.std, (r(3, 4),), order=3, id="std-all"),
    Case("np.std", lambda x: np.std(x, axis=0, ddof=1), (r(3, 4),), id="std-axis0-ddof"),
    # prod
    Case("np.prod", np.prod, (r(2, 3),), order=3, id="prod-all"),
    Case("np.prod", lambda x: np.prod(x, axis=1, keepdims=True), (r(3, 4),), id="prod-axis1-keepdims"),
    Case("np.prod", lambda x: np.prod(x, axis=(0, 2)), (r(2, 3, 4),), id="prod-axis-tuple"),
    Case("np.prod", lambda x: x.prod(axis=-1), (r(3, 5),), id="prod-neg-axis"),
    Case("np.prod", lambda x: np.prod(x, axis=1), (_ONE_ZERO,), order=3, id="prod-one-zero"),
    Case("np.prod", lambda x: np.prod(x, axis=1), (_TWO_ZEROS,), order=3, id="prod-two-zeros"),
    Case("np.prod", np.prod, (_TWO_ZEROS[:2, :2],), id="prod-two-zeros-all"),
    Case("np.multiply.reduce", lambda x: np.multiply.reduce(x, axis=0), (r(3, 4),)),
    # cumsum and cumprod
    Case("np.cumsum", np.cumsum, (r(3, 4),), id="cumsum-flat"),
    Case("np.cumsum", lambda x: np.cumsum(x, axis=1), (r(3, 4),), id="cumsum-axis1"),
    Case("np.cumsum", lambda x: x.cumsum(axis=-2), (r(2, 3, 4),), id="cumsum-neg-axis"),
    Case("np.add.accumulate", lambda x: np.add.accumulate(x, axis=0), (r(3, 2),)),
    Case("np.cumulative_sum", lambda x: np.cumulative_sum(x, axis=1, include_initial=True), (r(2, 3),)),
    Case("np.cumprod", np.cumprod, (r(3, 3),), id="cumprod-flat"),
    Case("np.cumprod", lambda x: np.cumprod(x, axis=0), (r(9, 2),), order=3, id="cumprod-long-axis0"),
    Case("np.cumprod", lambda x: x.cumprod(axis=-1), (r(2, 3, 5),), id="cumprod-neg-axis"),
    Case("np.cumprod", lambda x: np.cumprod(x, axis=1), (_ONE_ZERO,), order=3, id="cumprod-one-zero"),
    Case("np.cumprod", lambda x: np.cumprod(x, axis=1), (_TWO_ZEROS,), order=3, id="cumprod-two-zeros"),
    Case("np.multiply.accumulate", lambda x: np.multiply.accumulate(x, axis=1), (r(2, 4),)),
    Case("np.cumulative_prod", lambda x: np.cumulative_prod(x, axis=0, include_initial=True), (r(4, 2),)),
    # max and min (ties split evenly), ptp
    Case("np.max", np.max, (r(3, 4),), id="max-all"),
    Case("np.max", lambda x: np.max(x, axis=1, keepdims=True), (r(3, 4),), id="max-axis-keepdims"),
    Case("np.max", lambda x: x.max(axis=(0, 2)), (r(2, 3, 4),), id="max-axis-tuple"),
    Case("np.max", lambda x: np.max(x, axis=1), (_TIES,), order=1, id="max-ties"),
    Case("np.min", np.min, (r(3, 4),), id="min-all"),
    Case("np.min", lambda x: np.min(x, axis=0), (r(3, 4),), id="min-axis0"),
    Case("np.min", lambda x: np.min(x, axis=1), (_TIES,), order=1, id="min-ties"),
    Case("np.amax", lambda x: np.amax(x, axis=0), (r(3, 4),)),
    Case("np.amin", lambda x: np.amin(x, axis=-1), (r(3, 4),)),
    Case("np.maximum.reduce", lambda x: np.maximum.reduce(x, axis=0), (r(3, 4),)),
    Case("np.minimum.reduce", lambda x: np.minimum.reduce(x, axis=1), (r(3, 4),)),
    Case("np.ptp", lambda x: np.ptp(x, axis=1), (r(3, 4),)),
    Case("np.nansum", lambda x: np.nansum(x, axis=1) ** 2, (_with_nans(pos(3, 4)),)),
    Case("np.nanprod", lambda x: np.nanprod(x, axis=0), (_with_nans(pos(3, 4)),)),
    Case("np.nanmean", lambda x: np.nanmean(x, axis=1, keepdims=True) ** 3, (_with_nans(r(3, 4)),)),
    Case("np.nanmean", lambda x: np.sin(np.nanmean(x)), (_with_nans(r(3, 4)),), id="nanmean-all"),
    Case("np.nanvar", lambda x: np.nanvar(x, axis=0, ddof=1), (_with_nans(r(4, 3)),)),
    Case("np.nanstd", lambda x: np.nanstd(x, axis=1), (_with_nans(r(3, 4)),)),
    Case(("np.nanmax", "np.nanmin"), lambda x: np.nanmax(x, axis=1) * np.nanmin(x, axis=0).sum(), (_with_nans(r(3, 4)),),
         id="nanmax-nanmin"),
    Case("np.nanmax", lambda x: np.where(np.isnan(np.nanmax(x, axis=1)), 0.0, np.nanmax(x, axis=1)) + x[0, 0],
         (_with_nans(r(3, 4), row=1),), id="nanmax-all-nan-row"),
    Case(("np.nancumsum", "np.nancumprod"), lambda x: np.nancumsum(x, axis=1) + np.nancumprod(x, axis=0),
         (_with_nans(pos(3, 4)),), id="nancumsum-nancumprod"),
    Case(("np.logaddexp.reduce", "np.logaddexp2.reduce"),
         lambda x: np.logaddexp.reduce(x, axis=1) + np.logaddexp2.reduce(x, axis=None) + np.logaddexp.reduce(x)[:3],
         (r(3, 4),), order=3, id="log-sum-exp"),
    # where= and initial=: the entries a mask leaves out are not part of the value, nor of its derivative
    Case("np.sum", lambda x: np.sum(x ** 2, where=_KEEP) + np.sum(x, axis=1, where=_KEEP, initial=0.5),
         (r(3, 4),), id="sum-where-initial"),
    Case("np.mean", lambda x: np.mean(x ** 2, where=_KEEP) + np.mean(x, axis=0, where=_KEEP, keepdims=True),
         (r(3, 4),), id="mean-where"),
    Case(("np.var", "np.std"), lambda x: np.var(x, where=_KEEP) + np.std(x, axis=1, ddof=1, where=_KEEP),
         (r(3, 4),), id="var-std-where"),
    Case("np.var", lambda x: np.var(x, axis=1, mean=np.full((3, 1), 0.25)), (r(3, 4),), id="var-given-mean"),
    Case("np.prod", lambda x: np.prod(x, axis=1, where=_KEEP, initial=2.0), (r(3, 4),), id="prod-where-initial"),
    Case(("np.max", "np.min"), lambda x: np.max(x, axis=1, where=_KEEP, initial=-5.0) + np.min(x, where=_KEEP,
         initial=5.0), (r(3, 4),), id="max-min-where-initial"),
    Case(("np.add.reduce", "np.multiply.reduce", "np.maximum.reduce", "np.minimum.reduce"),
         lambda x: np.add.reduce(x, initial=10.0) + np.multiply.reduce(x, axis=1, where=_KEEP).sum()
         + np.maximum.reduce(x, axis=0, initial=0.1) - np.minimum.reduce(x, axis=1, where=_KEEP, initial=9.0).sum(),
         (r(3, 4),), id="ufunc-reduce-where-initial"),
    Case(("np.nansum", "np.nanmean", "np.nanvar", "np.nanmax"),
         lambda x: np.nansum(x, initial=5.0) + np.nanmean(x ** 2, where=_KEEP) + np.nanvar(x, axis=1, where=_KEEP)[:, None]
         + np.nanmax(x, axis=0, where=_KEEP, initial=-5.0),
         (_with_nans(r(3, 4)),), id="nan-where-initial"),
    Case("np.add.reduceat", lambda x: np.add.reduceat(x, [0, 3, 1, 4], axis=1) ** 2, (r(2, 5),)),
]
