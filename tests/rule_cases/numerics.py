"""Rows for the numerics family: differences, quadrature, polynomials, convolution, interpolation,
cross products, covariance and order statistics."""

import warnings

import numpy as np

from . import Case, pos, r

# Sample points for np.interp, and query points away from every knot (and, modulo 2, away from
# the knots of the periodic rows): piecewise-linear functions are smooth there.
XP = np.array([-1.0, -0.3, 0.2, 0.9, 1.5])
FP = np.array([0.4, -0.7, 1.1, 0.3, -0.2])
XQ = np.array([-1.4, -0.8, -0.1, 0.5, 1.2, 1.9])
XQ_PERIODIC = np.array([-1.4, 0.5, 1.2, 1.9, 3.35])


def _increasing(*shape):
    """Coordinates with steps between 0.5 and 2 along the last axis."""
    return np.cumsum(pos(*shape), axis=-1)


def _cross_2d(a, b):
    with warnings.catch_warnings():  # 2-component vectors: deprecated in NumPy 2, still supported
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.concatenate([np.cross(a, b).ravel(), np.cross(b, a).ravel(), np.cross(a[:, :2], b).ravel()])


def with_nans(x, *where):
    """x with NaN at the given places."""
    x = x.copy()
    for i in where:
        x[i] = np.nan
    return x


CASES = [
    # diff and ediff1d
    Case("np.diff", lambda x: np.diff(x) ** 2, (r(6),), order=3),
    Case("np.diff", lambda x: np.sin(np.diff(x, n=2, axis=0)), (r(5, 3),), id="diff-n2-axis0"),
    Case("np.diff", lambda x, p, a: np.diff(x ** 2, prepend=p, append=a), (r(3, 4), r(3, 1), r(3, 2)),
         wrt=(0, 1, 2), id="diff-traced-prepend-append"),
    Case("np.diff", lambda x: np.diff(np.exp(x), axis=0, prepend=0.5, append=[[1.0, 2.0]]), (r(2, 2),),
         id="diff-scalar-prepend"),
    Case("np.ediff1d", lambda x, b: np.ediff1d(x ** 2, to_begin=b, to_end=[1.0, 2.0]), (r(2, 3), r(2)),
         wrt=(0, 1)),
    Case("np.ediff1d", lambda x: np.sin(np.ediff1d(x)), (r(5),), id="ediff1d-no-ends"),
    # gradient
    Case("np.gradient", lambda f: np.gradient(f ** 3), (r(6),), order=3),
    Case("np.gradient", lambda f: np.stack(np.gradient(np.sin(f), 0.5, edge_order=2)), (r(4, 5),),
         id="gradient-2d-edge-order-2"),
    Case("np.gradient", lambda f, h: np.stack(np.gradient(f ** 2, h, 2.0)), (r(3, 4), pos()), wrt=(0, 1),
         id="gradient-traced-step"),
    Case("np.gradient", lambda f, x: np.gradient(f ** 2, x, edge_order=2), (r(5), _increasing(5)), wrt=(0, 1),
         order=3, id="gradient-traced-coordinates-edge-order-2"),
    Case("np.gradient", lambda f, x: np.gradient(f, x, axis=1), (r(3, 5), _increasing(5)), wrt=(0, 1),
         id="gradient-traced-coordinates-axis"),
    Case("np.gradient", lambda f: np.stack(np.gradient(f, [0.0, 1.0, 2.5], 0.5, axis=(0, -1), edge_order=2)),
         (r(3, 4),), id="gradient-plain-coordinates-axes"),
    # trapezoid
    Case("np.trapezoid", lambda y: np.trapezoid(np.sin(y)), (r(6),), order=3),
    Case("np.trapezoid", lambda y, x: np.trapezoid(y ** 2, x, axis=0), (r(4, 3), _increasing(4)), wrt=(0, 1),
         id="trapezoid-x-axis0"),
    Case("np.trapezoid", lambda y, x: np.trapezoid(y, x), (r(2, 4), _increasing(2, 4)), wrt=(0, 1),
         id="trapezoid-2d-x"),
    Case("np.trapezoid", lambda y, dx: np.trapezoid(y, dx=dx, axis=1), (r(2, 4, 2), pos()), wrt=(0, 1),
         id="trapezoid-traced-dx"),
    # polynomials
    Case("np.polyval", np.polyval, (r(4), r(2, 3)), wrt=(0, 1), order=3),
    Case("np.polyval", lambda x: np.polyval([1.5, -2.0, 0.5], x), (r(4),), id="polyval-plain-p"),
    Case("np.vander", lambda x: np.vander(x), (r(4),), order=3),
    Case("np.vander", lambda x: np.vander(x, 3, increasing=True), (r(5),), id="vander-N-increasing"),
    Case("np.polyder", lambda p: np.polyder(p, 2), (r(5),), order=3),
    Case("np.polyder", lambda p: np.polyder(p, 0) * p, (r(3),), id="polyder-order-0"),
    Case("np.polyint", lambda p, k: np.polyint(p, 2, k), (r(3), r(2)), wrt=(0, 1), order=3),
    Case("np.polyint", lambda k: np.polyint(np.array([1.5, -2.0]), 3, k), (r(),), id="polyint-scalar-k-only"),
    # least squares: distinct abscissae (steps of 0.5 to 2), weights and ordinates all traced
    Case("np.polyfit", lambda x, y, w: np.polyfit(x, y, 2, w=w), (_increasing(7), r(7), pos(7)), wrt=(0, 1, 2)),
    Case("np.polyfit", lambda x, y: np.polyfit(x, y, 1), (_increasing(5), r(5, 2)), wrt=(0, 1), id="polyfit-2d-y"),
    Case("np.polyfit", lambda x, y: np.concatenate([np.polyfit(x, y, 2, full=True)[k] for k in (0, 1, 3)]),
         (_increasing(6), r(6)), wrt=(0, 1), id="polyfit-full-residuals-singular-values"),
    Case("np.polyfit", lambda x, y: np.polyfit(x, y, 2, cov=True)[1], (_increasing(6), r(6)), wrt=(0, 1),
         id="polyfit-cov"),
    # convolve and correlate
    Case("np.convolve", np.convolve, (r(6), r(3)), wrt=(0, 1), order=3),
    Case("np.convolve", lambda a, v: np.convolve(a, v, mode="same"), (r(3), r(6)), wrt=(0, 1),
         id="convolve-same-swapped"),
    Case("np.convolve", lambda a, v: np.convolve(a, v, "valid"), (r(7), r(4)), wrt=(0, 1), id="convolve-valid"),
    Case("np.convolve", lambda a, v: np.convolve(a ** 2, v, "same"), (r(14), r(12)), wrt=(0, 1),
         id="convolve-wide-kernel"),
    Case("np.correlate", np.correlate, (r(6), r(3)), wrt=(0, 1), order=3),
    Case("np.correlate", lambda a, v: np.correlate(a, v, "full"), (r(3), r(5)), wrt=(0, 1),
         id="correlate-full-swapped"),
    Case("np.correlate", lambda a, v: np.correlate(a, v, mode="same"), (r(5), r(4)), wrt=(0, 1),
         id="correlate-same"),
    # interp
    Case("np.interp", np.interp, (XQ, XP, FP), wrt=(0, 1, 2)),
    Case("np.interp", lambda x, lr: np.interp(x, XP, FP, left=lr[0], right=lr[1]), (XQ, r(2)), wrt=(0, 1),
         id="interp-traced-left-right"),
    Case("np.interp", lambda fp: np.interp(0.35, XP, fp ** 2), (FP,), id="interp-scalar-query"),
    Case("np.interp", lambda x, fp: np.interp(x.reshape(2, 3), XP, fp, left=-1.0), (XQ, FP), wrt=(0, 1),
         id="interp-2d-query"),
    Case("np.interp", lambda x, xp, fp: np.interp(x, xp, fp, period=2.0), (XQ_PERIODIC, XP, FP), wrt=(0, 1, 2),
         id="interp-period"),
    # cross
    Case("np.cross", np.cross, (r(4, 3), r(3)), wrt=(0, 1), order=3),
    Case("np.cross", lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), (r(3, 2), r(2, 3)), wrt=(0, 1),
         id="cross-axes"),
    Case("np.cross", _cross_2d, (r(2, 3), r(2, 2)), wrt=(0, 1), id="cross-2-component"),
    Case("np.linalg.cross", lambda a, b: np.linalg.cross(a, b, axis=0), (r(3, 2), r(3, 1)), wrt=(0, 1)),
    # cov and corrcoef
    Case("np.cov", np.cov, (r(3, 5),), order=3),
    Case("np.cov", lambda m, y: np.cov(m, y, rowvar=False, bias=True), (r(5, 2), r(5)), wrt=(0, 1),
         id="cov-y-rowvar-bias"),
    Case("np.cov", lambda m, w: np.cov(m, fweights=[1, 2, 1, 3, 1], aweights=w), (r(2, 5), pos(5)), wrt=(0, 1),
         id="cov-weights"),
    Case("np.corrcoef", np.corrcoef, (r(3, 6),)),
    Case("np.corrcoef", np.corrcoef, (r(6), r(6)), wrt=(0, 1), id="corrcoef-x-y"),
    # order statistics (random entries: distinct, so the sort is smooth)
    Case("np.median", np.median, (r(7),), order=3),
    Case("np.median", lambda x: np.median(x ** 3, axis=0, keepdims=True), (r(4, 3),), id="median-even-axis"),
    Case("np.median", lambda x: np.median(x, axis=(0, 2)), (r(3, 2, 3),), id="median-axes"),
    Case("np.percentile", lambda x: np.percentile(x, [10, 37.5, 90]), (r(9),), order=3),
    Case("np.percentile", lambda x, q: np.percentile(x, q, axis=1), (r(3, 6), np.array([23.0, 65.0])), wrt=(0, 1),
         id="percentile-traced-q"),
    Case("np.quantile", lambda x: np.quantile(x, [0.3, 0.9], axis=-1, keepdims=True), (r(2, 5),)),
    Case("np.quantile", lambda x: np.quantile(x, 0.55, axis=(0, 1)), (r(2, 3, 2),), id="quantile-axes"),
    # the NaN-ignoring order statistics: NaN entries sit at fixed places in the input (never a whole slice)
    Case("np.nanmedian", np.nanmedian, (with_nans(r(8), 2, 5),), order=3),
    Case("np.nanmedian", lambda x: np.nanmedian(x, axis=0) ** 2, (with_nans(r(5, 3), (0, 1), (3, 1), (4, 2)),),
         id="nanmedian-axis-0"),
    Case("np.nanmedian", lambda x: np.nanmedian(x ** 3, axis=(0, 2), keepdims=True),
         (with_nans(r(3, 2, 3), (0, 0, 1), (2, 1, 0)),), id="nanmedian-axes-keepdims"),
    Case("np.nanpercentile", lambda x: np.nanpercentile(x, [10, 37.5, 90]), (with_nans(r(9), 0, 4),), order=3),
    Case("np.nanpercentile", lambda x, q: np.nanpercentile(x, q, axis=1), (with_nans(r(3, 6), (0, 2), (2, 5)),
         np.array([23.0, 65.0])), wrt=(0, 1), id="nanpercentile-traced-q"),
    Case("np.nanpercentile", lambda x: np.nanpercentile(x, 40, axis=-1, keepdims=True), (with_nans(r(2, 5), (1, 0)),),
         id="nanpercentile-scalar-keepdims"),
    Case("np.nanquantile", lambda x: np.nanquantile(x, [0.3, 0.9], axis=-1, keepdims=True),
         (with_nans(r(2, 5), (0, 3), (1, 1), (1, 4)),)),
    Case("np.nanquantile", lambda x, q: np.nanquantile(x, q, axis=(0, 1)), (with_nans(r(2, 3, 2), (1, 2, 0)),
         np.float64(0.55)), wrt=(0, 1), id="nanquantile-axes-traced-q"),
]

if hasattr(np, "trapz"):  # removed in NumPy 2.4
    CASES.append(Case("np.trapz", lambda y, x: np.trapz(y, x), (r(5), _increasing(5)), wrt=(0, 1)))
