"""Rows for scipy.special (installed when SciPy is, as f's module would import it): its ufuncs and
logsumexp, softmax, log_softmax and polygamma."""

import numpy as np
import scipy.special as sp

from jaccli.engine.rules import scipy_special

from . import Case, pos, r

scipy_special.install()  # what a recording does when f's module has imported scipy.special

AWAY_FROM_ZERO = np.array([-1.7, -0.6, 0.4, 1.3])
WITH_ZEROS = np.array([0.0, 0.7, 0.0, -0.4])


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
