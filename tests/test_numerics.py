"""The numerics family (np.diff, np.gradient, np.interp, np.convolve, np.cov, np.median, ...) under tracing:
the traced value is NumPy's own result, bit for bit; what NumPy rejects is rejected with NumPy's
exception; what jaccli does not support is refused by name; and replays stay valid."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaccli
from jaccli.engine.recording import Recording
from jaccli.replay import Replayable
from jaccli.errors import TracingError, UnsupportedOperationError

rng = np.random.default_rng(7)
X1 = rng.standard_normal(7)
X2 = rng.standard_normal((4, 5))
X3 = rng.standard_normal((3, 4, 5))
STEPS = rng.uniform(0.5, 1.5, 5)
COORDS = np.cumsum(STEPS)
XP = np.sort(rng.uniform(-3.0, 3.0, 8))
FP = rng.standard_normal(8)
# Query points: random, at every knot and between every two, outside on both sides, and non-finite.
XQ = np.concatenate([rng.uniform(-4.0, 4.0, 20), XP, (XP[1:] + XP[:-1]) / 2, [np.nan, np.inf, -np.inf]])
FP_INF = np.where(np.arange(8) == 3, np.inf, FP)
XP_DUPLICATE = np.where(np.arange(8) == 4, XP[3], XP)
X2_NAN = np.where(np.arange(20).reshape(4, 5) == 7, np.nan, X2)
INTS_A, INTS_V = rng.integers(-5, 6, 9).astype(float), rng.integers(-5, 6, 4).astype(float)


def _quiet(f):
    """f with NumPy's deprecation of 2-component cross products silenced."""
    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return f(*args)
    return run


def case(label, f, *args, wrt=(0,)):
    return pytest.param(f, args, wrt, id=label)


EXACT = [
    # diff and ediff1d
    case("diff", np.diff, X1),
    case("diff-n2-axis0", lambda a: np.diff(a, 2, axis=0), X2),
    case("diff-n0-is-the-input", lambda a: np.diff(a, 0), X1),
    case("diff-n-past-the-length", lambda a: np.diff(a, 9), X1),
    case("diff-scalar-ends", lambda a: np.diff(a, prepend=0.5, append=[[1.0]] * 4), X2),
    case("diff-traced-prepend", lambda a, p: np.diff(a, prepend=p, axis=0), X2, X2[:2], wrt=(0, 1)),
    case("diff-only-prepend-traced", lambda p: np.diff(X2, prepend=p, axis=0), X2[:2]),
    case("ediff1d", np.ediff1d, X2),
    case("ediff1d-ends", lambda a: np.ediff1d(a, to_begin=[1.0, 2.0], to_end=3.0), X2),
    case("ediff1d-traced-end", lambda e: np.ediff1d(X1, to_end=e), X1[:2]),
    case("ediff1d-float32", lambda a: np.ediff1d(a, to_begin=np.float64(0.1)), X1.astype(np.float32)),
    # gradient
    *[case(f"gradient-{label}-edge{order}", lambda f, g=g, order=order: g(f, order), arg)
      for order in (1, 2)
      for label, g, arg in [
          ("3d", lambda f, o: np.gradient(f, edge_order=o), X3),
          ("step", lambda f, o: np.gradient(f, 0.3, edge_order=o), X2),
          ("int-step", lambda f, o: np.gradient(f, 2, edge_order=o), X2),
          ("steps", lambda f, o: np.gradient(f, 0.3, 2.0, edge_order=o), X2),
          ("coordinates", lambda f, o: np.gradient(f, COORDS, axis=1, edge_order=o), X2),
          ("int-coordinates", lambda f, o: np.gradient(f, [0, 1, 3, 4], axis=0, edge_order=o), X2),
          ("uniform-coordinates", lambda f, o: np.gradient(f, np.arange(5.0) * 0.1, axis=-1, edge_order=o), X2),
          ("axes-in-order", lambda f, o: np.gradient(f, 2.0, [0.0, 1.0, 3.5], axis=(2, 0), edge_order=o), X3),
          ("float32", lambda f, o: np.gradient(f, COORDS[:4], axis=0, edge_order=o), X2.astype(np.float32)),
      ]],
    case("gradient-traced-coordinates", lambda x, f: np.gradient(f, x, axis=1), COORDS, X2, wrt=(0, 1)),
    case("gradient-traced-step", lambda h, f: np.gradient(f, h, edge_order=2), np.float64(0.7), X1, wrt=(0, 1)),
    case("gradient-0d", np.gradient, np.float64(2.0)),
    # trapezoid
    case("trapezoid", np.trapezoid, X2),
    case("trapezoid-x-axis0", lambda y: np.trapezoid(y, x=np.arange(4.0) ** 1.5, axis=0), X2),
    case("trapezoid-2d-x", lambda y: np.trapezoid(y, x=X2 * 2.0), X2),
    case("trapezoid-dx", lambda y: np.trapezoid(y, dx=0.1, axis=1), X3),
    case("trapezoid-traced-x", lambda x: np.trapezoid(X1[:5], x), COORDS),
    # polynomials
    case("polyval-traced-p", lambda p: np.polyval(p, X2), X1),
    case("polyval-traced-x", lambda x: np.polyval(X1, x), X2),
    case("polyval-both", np.polyval, X1[:3], 0.7 * X2, wrt=(0, 1)),
    case("vander", np.vander, X1),
    case("vander-N-increasing", lambda x: np.vander(x, 3, increasing=True), X1),
    case("vander-N0", lambda x: np.vander(x, 0), X1),
    case("vander-N1", lambda x: np.vander(x, 1), X1),
    case("vander-float32", np.vander, X1.astype(np.float32)),
    # convolve and correlate: exact for integer-valued data in every mode, and for 'valid' with short kernels
    *[case(f"{name}-{mode}-{la}-{lv}", lambda a, v, g=g, mode=mode: g(a, v, mode), INTS_A[:la], INTS_V[:lv],
           wrt=(0, 1))
      for name, g in (("convolve", np.convolve), ("correlate", np.correlate))
      for mode in ("full", "same", "valid", 0, 1, 2)
      for la, lv in ((9, 4), (4, 9), (4, 4), (1, 3))],
    *[case(f"{name}-valid-random-{la}-{lv}", lambda a, v, g=g: g(a, v, "valid"), rng.standard_normal(la),
           rng.standard_normal(lv), wrt=(0, 1))
      for name, g in (("convolve", np.convolve), ("correlate", np.correlate))
      for la, lv in ((20, 11), (8, 15), (6, 6))],
    case("convolve-scalar", lambda a: np.convolve(a, 2.0), X1),
    # interp
    case("interp", lambda x: np.interp(x, XP, FP), XQ),
    case("interp-left-right", lambda x: np.interp(x, XP, FP, left=-7, right=np.float64(9.5)), XQ),
    case("interp-traced-samples", np.interp, XQ, XP, FP, wrt=(0, 1, 2)),
    case("interp-scalar-query", lambda fp: np.interp(0.3, XP, fp), FP),
    case("interp-list-query", lambda fp: np.interp([0.3, 9.0], list(XP), fp), FP),
    case("interp-2d-query", lambda x: np.interp(x, XP, FP), X2),
    case("interp-one-sample", lambda x: np.interp(x, [0.5], [2.0]), XQ),
    case("interp-infinite-fp", lambda x: np.interp(x, XP, FP_INF), XQ),
    case("interp-duplicate-knot", lambda x: np.interp(x, XP_DUPLICATE, FP), XQ),
    case("interp-period", lambda x: np.interp(x, XP, FP, period=2.5), XQ),
    case("interp-negative-period", lambda fp: np.interp(XQ, XP, fp, period=-2.5), FP),
    case("interp-traced-left", lambda x, lo: np.interp(x, XP, FP, left=lo), XQ, np.float64(-3.0), wrt=(0, 1)),
    # cross
    case("cross-3-3", np.cross, X2[:, :3], X1[:3], wrt=(0, 1)),
    case("cross-2-3", _quiet(np.cross), X2[:, :2], X1[:3], wrt=(0, 1)),
    case("cross-3-2", _quiet(np.cross), X2[:, :3], X1[:2], wrt=(0, 1)),
    case("cross-2-2", _quiet(np.cross), X2[:, :2], X1[:2], wrt=(0, 1)),
    case("cross-axes", lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), X2[:3, :4], X2[:, 1:4], wrt=(0, 1)),
    case("cross-axis", lambda a, b: np.cross(a, b, axis=0), X2[:3], X2[1:], wrt=(0, 1)),
    case("cross-broadcast", np.cross, X3[:, :, :3], X2[:, 2:], wrt=(0, 1)),
    case("linalg-cross", np.linalg.cross, X2[:, :3], X1[:3], wrt=(0, 1)),
    case("linalg-cross-axis", lambda a, b: np.linalg.cross(a, b, axis=0), X2[:3], X2[1:], wrt=(0, 1)),
    # cov and corrcoef
    case("cov", np.cov, X2),
    case("cov-rowvar", lambda m: np.cov(m, rowvar=False), X2),
    case("cov-bias", lambda m: np.cov(m, bias=True), X2),
    case("cov-ddof", lambda m: np.cov(m, ddof=2), X2),
    case("cov-1d", np.cov, X1),
    case("cov-y", np.cov, X2, X1[:5], wrt=(0, 1)),
    case("cov-y-rowvar", lambda m, y: np.cov(m, y, rowvar=False), X2, X2[:, :2], wrt=(0, 1)),
    case("cov-fweights", lambda m: np.cov(m, fweights=[1, 2, 1, 3, 1]), X2),
    case("cov-aweights", lambda m: np.cov(m, aweights=STEPS), X2),
    case("cov-both-weights", lambda m: np.cov(m, fweights=[1, 2, 1, 3, 1], aweights=STEPS), X2),
    case("cov-both-weights-ddof0", lambda m: np.cov(m, ddof=0, fweights=[1, 2, 1, 3, 1], aweights=STEPS), X2),
    case("cov-traced-aweights", lambda w: np.cov(X2, aweights=w), STEPS),
    case("cov-float32", lambda m: np.cov(m, dtype=np.float32), X2),
    case("cov-float32-weights", lambda m: np.cov(m, aweights=STEPS, dtype=np.float32), X2),
    case("corrcoef-float32", np.corrcoef, X2.astype(np.float32)),
    case("corrcoef", np.corrcoef, X2),
    case("corrcoef-1d", np.corrcoef, X1),
    case("corrcoef-x-y", np.corrcoef, X1, X1 ** 2, wrt=(0, 1)),
    case("corrcoef-rowvar", lambda m: np.corrcoef(m, rowvar=False), X2),
    # median, percentile, quantile
    *[case(f"{label}-axis{axis}-keepdims{keep}", lambda a, g=g, axis=axis, keep=keep: g(a, axis, keep), x)
      for axis, x in ((None, X2), (0, X2), (1, X2), (-1, X3), ((0, 2), X3), ((1, 0), X2))
      for keep in (False, True)
      for label, g in [
          ("median", lambda a, axis, keep: np.median(a, axis=axis, keepdims=keep)),
          ("median-odd", lambda a, axis, keep: np.median(a[..., :-2], axis=axis, keepdims=keep)),
          ("percentile", lambda a, axis, keep: np.percentile(a, 37.5, axis=axis, keepdims=keep)),
          ("percentiles", lambda a, axis, keep: np.percentile(a, [0, 10, 50, 99, 100], axis=axis, keepdims=keep)),
          ("percentiles-2d", lambda a, axis, keep: np.percentile(a, [[5.0, 95.0]], axis=axis, keepdims=keep)),
          ("quantiles", lambda a, axis, keep: np.quantile(a, [0.1, 0.5, 0.99], axis=axis, keepdims=keep)),
          ("quantile-int", lambda a, axis, keep: np.quantile(a, 1, axis=axis, keepdims=keep)),
          ("quantiles-int", lambda a, axis, keep: np.quantile(a, [0, 1], axis=axis, keepdims=keep)),
      ]],
    case("percentile-traced-q", lambda q: np.percentile(X2, q, axis=0), np.array([12.5, 61.0])),
    case("percentile-float32", lambda a: np.percentile(a, 30.0), X2.astype(np.float32)),
    case("median-nan", lambda a: np.median(a, axis=0), X2_NAN),
    case("median-nan-all", np.median, X2_NAN),
    case("percentile-nan", lambda a: np.percentile(a, [30, 70], axis=0), X2_NAN),
    case("quantile-nan", lambda a: np.quantile(a, 0.3), X2_NAN),
]

if hasattr(np, "trapz"):  # removed in NumPy 2.4
    EXACT.append(case("trapz", lambda y: np.trapz(y, COORDS), X1[:5]))


def _traced(f, args, wrt):
    rec = Recording(f, args, wrt)
    return rec.outputs if rec.out_is_tuple else rec.outputs[0]


def _parts(value):
    return value if isinstance(value, tuple) else (value,)


@pytest.mark.parametrize("f, args, wrt", EXACT)
def test_the_traced_value_is_numpys_own(f, args, wrt):
    with np.errstate(all="ignore"):
        expected, got = f(*args), _traced(f, args, wrt)
    assert len(_parts(got)) == len(_parts(expected))
    for e, g in zip(_parts(expected), _parts(got)):
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("la, lv", [(7, 3), (3, 7), (30, 12), (12, 30), (16, 16)])
def test_convolution_agrees_with_numpy_to_rounding(name, mode, la, lv):
    # NumPy sums the edges and kernels wider than 11 taps with BLAS (fused multiply-adds).
    f = lambda a, v: getattr(np, name)(a, v, mode)  # noqa: E731
    a, v = rng.standard_normal(la), rng.standard_normal(lv)
    np.testing.assert_allclose(_traced(f, (a, v), (0, 1)), f(a, v), rtol=1e-13, atol=1e-14)


def test_traced_coordinates_take_the_non_uniform_formula():
    # NumPy switches to the uniform formula when the steps are exactly equal; for traced coordinates
    # the non-uniform one is kept (its derivative reaches every coordinate): equal to rounding.
    x = np.arange(5.0) * 0.3
    f = lambda x: np.gradient(X2, x, axis=1)  # noqa: E731
    np.testing.assert_allclose(_traced(f, (x,), (0,)), f(x), rtol=1e-13, atol=1e-13)
    J = np.asarray(jaccli.jacobian(f, x))
    assert np.count_nonzero(J[:, 2, :]) > 2 * 4  # an interior point depends on three coordinates


# ---------------------------------------------------------------------------------------------
# What NumPy rejects is rejected with NumPy's exception
# ---------------------------------------------------------------------------------------------
REJECTED = {
    "diff negative order": (lambda x: np.diff(x, -1), X1),
    "diff of a 0-d array": (lambda x: np.diff(x[0]), X1),
    "diff float order": (lambda x: np.diff(x, 1.0), X1),
    "diff axis out of range": (lambda x: np.diff(x, axis=2), X2),
    "diff prepend of the wrong shape": (lambda x: np.diff(x, prepend=np.zeros((2, 2))), X2),
    "ediff1d complex end": (lambda x: np.ediff1d(x, to_begin=1j), X1),
    "ediff1d float end of int ary": (lambda x: np.ediff1d(np.arange(3), to_end=x), X1),
    "gradient too short": (lambda x: np.gradient(x[:1]), X1),
    "gradient too short for edge order 2": (lambda x: np.gradient(x[:2], edge_order=2), X1),
    "gradient edge order 3": (lambda x: np.gradient(x, edge_order=3), X1),
    "gradient three spacings for two axes": (lambda x: np.gradient(x, 1.0, 2.0, 3.0), X2),
    "gradient 2-d coordinates": (lambda x: np.gradient(x, np.ones((7, 1))), X1),
    "gradient coordinates of the wrong length": (lambda x: np.gradient(x, np.arange(6.0)), X1),
    "gradient traced coordinates of the wrong length": (lambda x: np.gradient(X2, x, axis=0), X1),
    "gradient repeated axis": (lambda x: np.gradient(x, axis=(0, 0)), X2),
    "gradient axis out of range": (lambda x: np.gradient(x, axis=2), X2),
    "trapezoid axis out of range": (lambda x: np.trapezoid(x, axis=2), X2),
    "trapezoid x and axis out of range": (lambda x: np.trapezoid(x, x=np.arange(5.0), axis=2), X2),
    "polyval of 0-d coefficients": (lambda x: np.polyval(x[0], 2.0), X1),
    "vander of a matrix": (np.vander, X2),
    "vander negative N": (lambda x: np.vander(x, -1), X1),
    "vander float N": (lambda x: np.vander(x, 2.0), X1),
    "convolve matrix": (lambda x: np.convolve(x, [1.0, 2.0]), X2),
    "convolve empty": (lambda x: np.convolve(x[:0], [1.0, 2.0]), X1),
    "convolve empty kernel": (lambda x: np.convolve(x, []), X1),
    "convolve mode name": (lambda x: np.convolve(x, [1.0, 2.0], "bad"), X1),
    "convolve mode abbreviation": (lambda x: np.convolve(x, [1.0, 2.0], "v"), X1),
    "convolve mode number": (lambda x: np.convolve(x, [1.0, 2.0], 3), X1),
    "convolve mode None": (lambda x: np.convolve(x, [1.0, 2.0], None), X1),
    "correlate 0-d": (lambda x: np.correlate(x[0], [1.0, 2.0]), X1),
    "correlate matrix": (lambda x: np.correlate(x, [1.0, 2.0]), X2),
    "correlate empty first": (lambda x: np.correlate(x[:0], [1.0, 2.0]), X1),
    "correlate empty second": (lambda x: np.correlate([1.0, 2.0], x[:0]), X1),
    "interp 2-d samples": (lambda x: np.interp(0.5, x, x), X2),
    "interp 0-d fp": (lambda x: np.interp(0.5, [1.0], x[0]), X1),
    "interp no samples": (lambda x: np.interp(x, [], []), X1),
    "interp samples of different lengths": (lambda x: np.interp(0.5, [1.0, 2.0], x), X1),
    "interp left of length 1": (lambda x: np.interp(x, XP, FP, left=np.array([5.0])), X1),
    "interp traced left of length 2": (lambda x: np.interp(x, XP, FP, left=x[:2]), X1),
    "interp left not a number": (lambda x: np.interp(x, XP, FP, left="a"), X1),
    "interp period 0": (lambda x: np.interp(x, XP, FP, period=0), X1),
    "interp period with 2-d samples": (lambda x: np.interp(0.5, x, x, period=1.0), X2),
    "interp period with samples of different lengths": (lambda x: np.interp(0.5, XP, x, period=1.0), X1),
    "cross 0-d": (lambda x: np.cross(x[0], x[:3]), X1),
    "cross of 4 components": (lambda x: np.cross(x[:4], x[:3]), X1),
    "cross axisa out of range": (lambda x: np.cross(x[:3], x[:3], axisa=3), X1),
    "cross axisc out of range": (lambda x: np.cross(x[:3], x[:3], axisc=1), X1),
    "cross shapes that do not broadcast": (lambda x: np.cross(x[:, :3], np.ones((3, 3))), X2),
    "linalg.cross of 2 components": (lambda x: np.linalg.cross(x[:2], x[:3]), X1),
    "linalg.cross axis out of range": (lambda x: np.linalg.cross(x[:3], x[:3], axis=2), X1),
    "cov of 3-d": (np.cov, X3),
    "cov y of 3-d": (lambda x: np.cov(X2, x), X3),
    "cov fractional ddof": (lambda x: np.cov(x, ddof=1.5), X2),
    "cov fractional fweights": (lambda x: np.cov(x, fweights=[1, 2.5, 1, 1, 1]), X2),
    "cov negative fweights": (lambda x: np.cov(x, fweights=[1, -2, 1, 1, 1]), X2),
    "cov aweights of the wrong length": (lambda x: np.cov(x, aweights=[1.0, 2.0]), X2),
    "cov 2-d aweights": (lambda x: np.cov(x, aweights=np.ones((5, 1))), X2),
    "cov negative traced aweights": (lambda x: np.cov(X2, aweights=x[:5]), X1),
    "cov weights summing to 0": (lambda x: np.cov(x, fweights=[0, 0, 0, 0, 0]), X2),
    "median repeated axis": (lambda x: np.median(x, axis=(0, 0)), X2),
    "median axis out of range": (lambda x: np.median(x, axis=2), X2),
    "quantile out of range": (lambda x: np.quantile(x, 1.5), X1),
    "quantile NaN": (lambda x: np.quantile(x, np.nan), X1),
    "percentile out of range": (lambda x: np.percentile(x, [50, 150]), X1),
    "traced percentile out of range": (lambda x: np.percentile(X1, x * 1000), X1),
    "quantile unknown method": (lambda x: np.quantile(x, 0.5, method="nope"), X1),
    "quantile q of 3 dimensions": (lambda x: np.quantile(x, np.full((1, 1, 1), 0.5)), X1),
    "quantile weights with method linear": (lambda x: np.quantile(x, 0.5, weights=np.ones(7)), X1),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_what_numpy_rejects_is_rejected_with_numpys_exception(name):
    f, x = REJECTED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as numpy_error:  # noqa: PT011 - NumPy's own exception is the reference
            f(x.copy())
        with pytest.raises(Exception) as traced_error:  # noqa: PT011
            Recording(f, (x,), (0,))
    assert traced_error.type is numpy_error.type, traced_error.value


# ---------------------------------------------------------------------------------------------
# What jaccli does not support is refused by name; NumPy's warnings are kept
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("f", [
    lambda x: np.quantile(x, 0.5, method="nearest"),
    lambda x: np.percentile(x, 50, method="lower"),
    lambda x: np.quantile(x, 0.5, method="inverted_cdf", weights=np.ones(7)),
    lambda x: np.interp(x, XP, FP, period=x[0] + 2.0),
    lambda x: np.interp(x, XP, FP + 1j),
    lambda x: np.convolve(x, [1.0, 1j]),
    lambda x: np.polyval(x, np.poly1d([1.0, 2.0])),
])
def test_unsupported_variants_are_refused_by_name(f):
    with pytest.raises(UnsupportedOperationError):
        Recording(f, (X1,), (0,))


@pytest.mark.parametrize("f", [lambda x: np.median(x, out=np.empty(())),
                               lambda x: np.percentile(x, 50, out=np.empty(()))])
def test_out_is_refused(f):
    with pytest.raises(TracingError):
        Recording(f, (X1,), (0,))


def test_numpys_warnings_are_kept():
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        Recording(lambda a: np.cross(a[:2], a[:3]), (X1,), (0,))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"), np.errstate(divide="ignore", invalid="ignore"):
        Recording(lambda m: np.cov(m[:, :1]), (X2,), (0,))  # then 1 / 0, as in NumPy


# ---------------------------------------------------------------------------------------------
# Conventions and replays
# ---------------------------------------------------------------------------------------------
def test_interp_derivative_at_the_knots_is_the_one_of_the_interval_numpy_evaluates():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
    x = np.array([-1.0, 0.0, 1.0, 3.0, 4.0])
    dx = np.diag(np.asarray(jaccli.jacobian(lambda x: np.interp(x, xp, fp), x)))
    np.testing.assert_array_equal(dx, [0.0, 2.0, 0.5, 0.0, 0.0])  # right-hand slopes; fp[-1] at xp[-1]
    dfp = np.asarray(jaccli.jacobian(lambda fp: np.interp(x, xp, fp), fp))
    np.testing.assert_array_equal(dfp, [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]])


def test_median_ties_send_the_derivative_to_the_entry_a_stable_sort_puts_there():
    x = np.array([1.0, 3.0, 3.0, 0.0])  # sorted: 0, 1, 3 (entry 1), 3 (entry 2)
    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(np.median, x)), [0.5, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("f, x", [
    (lambda x: np.interp(x, XP, FP), XQ[:20]),
    (lambda x: np.interp(XQ[:20], x, FP), XP),
    (lambda x: np.median(x, axis=0), X2),
    (lambda x: np.percentile(x, [20, 75]), X1),
])
def test_replays_follow_the_values_and_stop_where_an_interval_or_an_order_changes(f, x):
    rec = Replayable(f, (x,), (0,))
    near = x + 1e-9  # the same intervals and order
    again = rec.replay((near,))
    assert again is not None
    np.testing.assert_array_equal(again.outputs[0], f(near))
    assert rec.replay((x[::-1] * 0.5,)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["mean", "var", "std", "nanmean", "nanvar", "nanstd", "average"])
def test_mean_and_variance_match_numpy_bit_for_bit_and_keep_float32(name, dtype):
    # NumPy's mean divides by n (multiplying by 1/n differs in the last bit).
    func = getattr(np, name)
    rng = np.random.default_rng(5)
    for n in (1, 3, 7, 33):
        x = rng.standard_normal((n, 3)).astype(dtype)
        if n > 1 and name.startswith("nan"):
            x[0, 1] = np.nan
        for kw in ({}, {"axis": 0}, {"axis": 1}):
            got = Recording(lambda z: func(z, **kw), [x], [0]).outputs[0]
            want = func(x, **kw)
            assert np.result_type(got) == np.result_type(want)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum])
def test_running_extremes_are_numpys_values_with_ties_and_nan(ufunc):
    x = np.array([[0.5, 0.2, 0.5, np.nan, 0.9, 0.1], [0.3, 0.3, -0.1, 0.7, 0.7, 0.2]])
    for axis in (0, 1, -1):
        got = Recording(lambda z: ufunc.accumulate(z, axis=axis), [x], [0]).outputs[0]
        np.testing.assert_array_equal(got, ufunc.accumulate(x, axis=axis))
    # Ties: the derivative goes to the first occurrence of the running extreme.
    J = np.asarray(jaccli.jacobian(lambda z: ufunc.accumulate(z), np.array([0.5, 0.5, 0.5])))
    np.testing.assert_array_equal(J, [[1, 0, 0], [1, 0, 0], [1, 0, 0]])
    with pytest.raises(TypeError):
        Recording(lambda z: ufunc.accumulate(z[0]), [np.array([1.0])], [0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_real_parts_of_real_arrays_are_numpys_values_and_dtype(dtype):
    x = np.array([0.3, -1.2, np.inf, -np.inf, -0.0, 0.0], dtype=dtype)
    for func in (np.angle, lambda z: np.angle(z, deg=True), np.real, np.imag, np.conj):
        got = Recording(func, [x], [0]).outputs[0]
        want = func(x)
        assert np.result_type(got) == np.result_type(want)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd", "nanmax", "nanmin", "nansum"])
def test_nan_reductions_with_inf_and_all_nan_slices_match_numpy(name):
    func = getattr(np, name)
    x = np.array([[1.0, np.inf, 2.0, np.nan], [np.nan, np.nan, np.nan, np.nan], [0.5, -1.0, np.nan, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": 1, "keepdims": True}):
            got = Recording(lambda z: func(z, **kw), [x], [0]).outputs[0]
            want = func(x, **kw)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_array_equal(got, want)


def test_an_error_state_that_raises_is_for_fs_arithmetic_not_for_the_sweeps():
    # sqrt'(0) = inf is the documented convention: under np.errstate(all="raise") the rules neither
    # fail inside jaccli nor warn (the inf is in the result; the CLI reports it); f's own
    # operations still raise.
    x = np.array([0.0, 4.0])
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        jac = np.asarray(jaccli.jacobian(np.sqrt, x))
        tangent = np.asarray(jaccli.jacobian(np.sqrt, x, mode="forward"))
        hess = np.asarray(jaccli.hessian(lambda y: np.sum(np.sqrt(y)), x))
        with pytest.raises(FloatingPointError):
            jaccli.jacobian(np.log, np.array([-1.0]))
        assert np.geterr()["divide"] == "raise"
    np.testing.assert_array_equal(jac, [[np.inf, 0.0], [0.0, 0.25]])
    np.testing.assert_array_equal(tangent, jac)
    np.testing.assert_array_equal(hess, [[-np.inf, 0.0], [0.0, -1 / 32]])


def _coulomb(x):
    # Pair distances include each point's own (r = 0), which the user's errstate lets 1 / r divide
    # by and np.where masks: the rules meet sqrt'(0) = inf and 1 / 0 under the masked branch.
    p = x.reshape(4, 3)
    r = np.sqrt(((p[:, None] - p[None]) ** 2).sum(-1))
    with np.errstate(divide="ignore"):
        inv = np.where(r > 0, 1 / r, 0.0)
    return inv.sum()


def _coulomb_grad(x):
    p = x.reshape(4, 3)
    d = p[:, None] - p[None]
    r = np.sqrt((d ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)
    return (-2.0 * (d / r[..., None] ** 3).sum(1)).ravel()  # each pair appears twice in the sum


@pytest.mark.parametrize("once", [False, True])
def test_the_rules_warn_of_nothing_where_fs_own_error_state_is_quiet(once):
    # The results are finite, and f silences its own division.
    f = jaccli.record_once(_coulomb) if once else _coulomb
    points = np.random.default_rng(19).normal(size=(3, 12)) * 1.5
    # Recorded, not raised: a replay that raised would fall back to recording afresh, unseen.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in points:  # a replay (record_once), and the recorded gradient's sweep replayed
            g = jaccli.grad(f, x)
            t = np.asarray(jaccli.jacobian(f, x, mode="forward"))
            h = np.asarray(jaccli.hessian(f, x))
            np.testing.assert_allclose(g, _coulomb_grad(x), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(t, _coulomb_grad(x), rtol=1e-12, atol=1e-12)
            step = 1e-5
            fd = np.array([(_coulomb_grad(x + step * e) - _coulomb_grad(x - step * e)) / (2 * step)
                           for e in np.eye(12)])
            np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
    assert [str(w.message) for w in caught] == []
