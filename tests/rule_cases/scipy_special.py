"""Rows for scipy.special (installed when SciPy is, as f's module would import it): its ufuncs and
logsumexp, softmax, log_softmax and polygamma."""

import numpy as np
import scipy.special as sp

from jaccli.engine.rules import scipy_special

from . import Case, pos, r

scipy_special.install()  # what a recording does when f's module has imported scipy.special

AWAY_FROM_ZERO = np.array([-1.7, -0.6, 0.4, 1.3])
WITH_ZEROS = np.array([0.0, 0.7, 0.0, -0.4])
SHAPE_A, SHAPE_B = np.array([0.7, 2.5, 4.0]), np.array([1.5, 0.7, 2.0])  # shape parameters (constants)
PROBABILITIES = np.array([0.2, 0.5, 0.85])
LAMBDAS = np.array([0.0, 0.5, -1.2])  # Box-Cox exponents (constants)


def _signed_logsumexp(a, b):
    lse, sign = sp.logsumexp(a, b=b, axis=1, return_sign=True)
    return lse * sign


CASES = [
    # logistic, error and normal distribution functions
    Case("scipy.special.expit", lambda x: sp.expit(x), (r(4, lo=-3, hi=3),), order=3),
    Case("scipy.special.logit", lambda x: sp.logit(x), (r(4, lo=0.1, hi=0.9),), order=3),
    Case("scipy.special.log_expit", lambda x: sp.log_expit(x), (r(4, lo=-3, hi=3),), order=3),
    Case("scipy.special.erf", lambda x: sp.erf(x), (r(4, lo=-1.5, hi=1.5),), order=3),
    Case("scipy.special.erfc", lambda x: sp.erfc(x), (r(4, lo=-1.5, hi=1.5),)),
    Case("scipy.special.erfcx", lambda x: sp.erfcx(x), (r(4, lo=-1, hi=2),), order=3),
    Case("scipy.special.erfinv", lambda x: sp.erfinv(x), (r(4, lo=-0.9, hi=0.9),), order=3),
    Case("scipy.special.erfcinv", lambda x: sp.erfcinv(x), (r(4, lo=0.1, hi=1.9),)),
    Case("scipy.special.ndtr", lambda x: sp.ndtr(x), (r(4, lo=-3, hi=3),)),
    Case("scipy.special.log_ndtr", lambda x: sp.log_ndtr(x), (r(4, lo=-3, hi=3),), order=3),
    Case("scipy.special.log_ndtr", lambda x: sp.log_ndtr(x), (np.array([-30.0, -12.5, 8.0]),),
         id="log_ndtr-tails"),
    Case("scipy.special.ndtri", lambda x: sp.ndtri(x), (r(4, lo=0.1, hi=0.9),)),
    # gamma function and relatives
    Case(("scipy.special.digamma", "scipy.special.psi"), lambda x: sp.digamma(x) * sp.psi(x + 1),
         (pos(4, lo=0.5, hi=3),), order=3),
    Case("scipy.special.polygamma", lambda x: sp.polygamma(1, x) + sp.polygamma(2, x ** 2), (pos(4),), order=3),
    Case("scipy.special.polygamma", lambda x: sp.polygamma(np.array([0, 1, 2, 3]), x), (pos(4),),
         id="polygamma-orders"),
    Case("scipy.special.gammaln", lambda x: sp.gammaln(x), (pos(4, lo=0.5, hi=4),), order=3),
    Case("scipy.special.gammaln", lambda x: sp.gammaln(x), (r(3, lo=-2.7, hi=-2.3),), id="gammaln-negative"),
    Case("scipy.special.loggamma", lambda x: sp.loggamma(x), (pos(4, lo=0.5, hi=4),)),
    Case("scipy.special.gamma", lambda x: sp.gamma(x), (pos(4, lo=0.5, hi=3),), order=3),
    Case("scipy.special.betaln", lambda a, b: sp.betaln(a, b), (pos(3), pos(3)), wrt=(0, 1)),
    # (the rows below use fixed arrays, so that the shared random stream of the other rows is unchanged)
    Case("scipy.special.beta", lambda a, b: sp.beta(a, b), (np.array([0.7, 1.3, 2.1]), np.array([1.1, 0.6, 2.4])),
         wrt=(0, 1), order=3),
    Case("scipy.special.rgamma", lambda x: sp.rgamma(x), (np.array([0.6, 1.4, 2.7, -0.5]),), order=3),
    Case("scipy.special.poch", lambda z, m: sp.poch(z, m), (np.array([0.8, 1.7, 2.2]), np.array([0.5, 1.3, -0.4])),
         wrt=(0, 1)),
    # incomplete gamma and beta functions, their inverses and the distributions built on them (in x or y)
    Case("scipy.special.gammainc", lambda x: sp.gammainc(SHAPE_A, x), (np.array([0.3, 1.2, 3.5]),), order=3),
    Case("scipy.special.gammaincc", lambda x: sp.gammaincc(SHAPE_A, x), (np.array([0.3, 1.2, 3.5]),)),
    Case("scipy.special.gammaincinv", lambda y: sp.gammaincinv(SHAPE_A, y), (PROBABILITIES,), order=3),
    Case("scipy.special.gammainccinv", lambda y: sp.gammainccinv(SHAPE_A, y), (PROBABILITIES,)),
    Case("scipy.special.betainc", lambda x: sp.betainc(SHAPE_A, SHAPE_B, x), (np.array([0.2, 0.5, 0.8]),),
         order=3),
    Case("scipy.special.betaincinv", lambda y: sp.betaincinv(SHAPE_A, SHAPE_B, y), (PROBABILITIES,)),
    Case("scipy.special.chdtr", lambda x: sp.chdtr(np.array([1.0, 3.0, 6.0]), x), (np.array([0.5, 2.0, 4.0]),)),
    Case("scipy.special.stdtr", lambda t: sp.stdtr(np.array([1.0, 3.5, 10.0]), t), (np.array([-1.2, 0.3, 2.0]),),
         order=3),
    # exponential integrals and relatives
    Case("scipy.special.exp1", lambda x: sp.exp1(x), (np.array([0.3, 1.0, 2.5]),), order=3),
    Case("scipy.special.expi", lambda x: sp.expi(x), (np.array([-1.5, 0.4, 2.0]),), order=3),
    Case("scipy.special.erfi", lambda x: sp.erfi(x), (np.array([-1.0, 0.2, 0.9]),), order=3),
    Case("scipy.special.dawsn", lambda x: sp.dawsn(x), (np.array([-2.0, 0.3, 1.5]),), order=3),
    # Box-Cox transforms (lambda 0 is the logarithm)
    Case("scipy.special.boxcox", lambda x: sp.boxcox(x, LAMBDAS), (np.array([0.5, 1.3, 2.6]),), order=3),
    Case("scipy.special.boxcox1p", lambda x: sp.boxcox1p(x, LAMBDAS), (np.array([-0.3, 0.4, 1.6]),)),
    Case("scipy.special.inv_boxcox", lambda y: sp.inv_boxcox(y, LAMBDAS), (np.array([0.3, -0.4, 0.6]),), order=3),
    Case("scipy.special.inv_boxcox1p", lambda y: sp.inv_boxcox1p(y, LAMBDAS), (np.array([0.3, -0.4, 0.6]),)),
    # robust losses (residuals inside and outside delta, away from |r| == delta)
    Case("scipy.special.huber", lambda d, r: sp.huber(d, r),
         (np.array([0.5, 1.0, 2.0, 0.8]), np.array([0.2, -1.7, 1.1, 0.9])), wrt=(0, 1)),
    Case("scipy.special.pseudo_huber", lambda d, r: sp.pseudo_huber(d, r),
         (np.array([0.5, 1.0, 2.0]), np.array([0.2, -1.7, 1.1])), wrt=(0, 1), order=3),
    # information theory
    Case("scipy.special.xlogy", lambda x, y: sp.xlogy(x, y), (r(2, 3), pos(3)), wrt=(0, 1), order=3),
    Case("scipy.special.xlogy", lambda x, y: sp.xlogy(x, y), (WITH_ZEROS, pos(4)), wrt=(0, 1),
         id="xlogy-at-zero-x"),
    Case("scipy.special.xlog1py", lambda x, y: sp.xlog1py(x, y), (WITH_ZEROS, r(4, lo=-0.5, hi=1)), wrt=(0, 1)),
    Case("scipy.special.entr", lambda x: sp.entr(x), (pos(4, lo=0.1, hi=2),), order=3),
    Case("scipy.special.rel_entr", lambda x, y: sp.rel_entr(x, y), (pos(4), pos(4)), wrt=(0, 1)),
    Case("scipy.special.kl_div", lambda x, y: sp.kl_div(x, y), (pos(4), pos(4)), wrt=(0, 1)),
    # Bessel functions (with respect to x; the order is a constant)
    Case("scipy.special.iv", lambda x: sp.iv(1.5, x) + sp.iv(np.array([0.0, 1.0, 2.5]), x), (r(3, lo=0.2, hi=2),),
         order=3),
    Case("scipy.special.ive", lambda x: sp.ive(np.array([0.0, 1.0, 2.5, 2.0]), x), (AWAY_FROM_ZERO,)),
    Case("scipy.special.jv", lambda x: sp.jv(np.array([0.5, 1.0, 3.0]), x), (r(3, lo=0.2, hi=4),)),
    Case("scipy.special.yv", lambda x: sp.yv(np.array([0.5, 1.0, 3.0]), x), (r(3, lo=0.5, hi=4),)),
    Case("scipy.special.i0", lambda x: sp.i0(x), (r(4, lo=-2, hi=2),), order=3),
    Case("scipy.special.i1", lambda x: sp.i1(x), (r(4, lo=-2, hi=2),), order=3),
    Case("scipy.special.i0e", lambda x: sp.i0e(x), (AWAY_FROM_ZERO,), order=3),
    Case("scipy.special.i1e", lambda x: sp.i1e(x), (AWAY_FROM_ZERO,), order=3),
    Case("scipy.special.j0", lambda x: sp.j0(x), (r(4, lo=-4, hi=4),), order=3),
    Case("scipy.special.j1", lambda x: sp.j1(x), (r(4, lo=-4, hi=4),), order=3),
    Case("scipy.special.y0", lambda x: sp.y0(x), (pos(4, lo=0.5, hi=4),)),
    Case("scipy.special.y1", lambda x: sp.y1(x), (pos(4, lo=0.5, hi=4),), order=3),
    Case("scipy.special.kv", lambda x: sp.kv(np.array([0.5, 1.0, 2.5]), x), (np.array([0.4, 1.2, 3.0]),), order=3),
    Case("scipy.special.kve", lambda x: sp.kve(np.array([0.5, 1.0, 2.5]), x), (np.array([0.4, 1.2, 3.0]),)),
    Case("scipy.special.k0", lambda x: sp.k0(x), (np.array([0.3, 1.1, 2.5]),), order=3),
    Case("scipy.special.k1", lambda x: sp.k1(x), (np.array([0.3, 1.1, 2.5]),), order=3),
    Case("scipy.special.k0e", lambda x: sp.k0e(x), (np.array([0.3, 1.1, 2.5]),)),
    Case("scipy.special.k1e", lambda x: sp.k1e(x), (np.array([0.3, 1.1, 2.5]),)),
    # logsumexp, softmax and log_softmax over SciPy's axes
    Case("scipy.special.logsumexp", lambda x: sp.logsumexp(x), (r(2, 3, lo=-3, hi=3),), order=3),
    Case("scipy.special.logsumexp", lambda x: sp.logsumexp(x, axis=1), (r(3, 4),), id="logsumexp-axis"),
    Case("scipy.special.logsumexp", lambda x: sp.logsumexp(x, axis=(0, 2), keepdims=True) * x,
         (r(2, 3, 2),), id="logsumexp-axes-keepdims"),
    Case("scipy.special.logsumexp", lambda a, b: sp.logsumexp(a, axis=-1, b=b), (r(2, 3), pos(3)), wrt=(0, 1),
         id="logsumexp-b"),
    Case("scipy.special.logsumexp", _signed_logsumexp, (r(2, 3), np.array([[1.0, -3.0, 0.5], [2.0, 0.3, 0.1]])),
         wrt=(0, 1), id="logsumexp-return-sign"),
    Case("scipy.special.softmax", lambda x: sp.softmax(x), (r(2, 3),), order=3),
    Case("scipy.special.softmax", lambda x: sp.softmax(x, axis=0), (r(3, 2),), id="softmax-axis"),
    Case("scipy.special.log_softmax", lambda x: sp.log_softmax(x, axis=1), (r(2, 3),), order=3),
    Case("scipy.special.log_softmax", lambda x: sp.log_softmax(x), (r(2, 3),), id="log_softmax-all-axes"),
]
