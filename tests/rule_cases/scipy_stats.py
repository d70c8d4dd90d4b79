"""Rows for scipy.stats (installed when SciPy is, as f's module would import it): every method of every
distribution, in x, loc, scale and the shape parameters it differentiates in; frozen distributions too."""

import numpy as np
import scipy.stats as st

from jaccli.engine.rules import every_rule

from . import Case

every_rule()  # SciPy's rules: what a recording does when f's module has imported scipy.stats

# (name, x inside the support, plain shape parameters, differentiated shape parameters, which methods)
_CONTINUOUS = [
    ("norm", np.array([-1.3, 0.2, 0.9]), (), ()),
    ("t", np.array([-1.3, 0.2, 0.9]), (), (np.array([2.5, 4.0, 7.0]),)),
    ("expon", np.array([0.3, 1.1, 2.4]), (), ()),
    ("gamma", np.array([0.6, 1.5, 3.2]), (), (np.array([1.5, 2.5, 4.0]),)),
    ("beta", np.array([0.5, 0.7, 0.9]), (), (np.array([1.5, 2.5, 4.0]), np.array([2.0, 1.2, 3.0]))),
    ("chi2", np.array([0.6, 1.5, 3.2]), (), (np.array([1.5, 3.0, 5.0]),)),
]
_REFUSED_IN_CDF = {"t", "gamma", "beta", "chi2"}  # no derivative in their shape parameters: plain there
LOC, SCALE = np.array([0.1, -0.2, 0.05]), np.array([1.2, 0.8, 1.5])


def _continuous_rows():
    rows = []
    for name, x, _, shapes in _CONTINUOUS:
        # loc and scale keep z = (x - loc) / scale inside the support: x is given in z
        xs = LOC + SCALE * x
        for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
            with_shapes = shapes if (method in ("logpdf", "pdf") or name not in _REFUSED_IN_CDF) else ()
            plain = shapes if not with_shapes else ()

            def fn(x, loc, scale, *s, _n=name, _m=method, _plain=plain):  # (st.norm looked up as f runs)
                return getattr(getattr(st, _n), _m)(x, *(s or _plain), loc=loc, scale=scale)

            args = (xs, LOC, SCALE) + with_shapes
            rows.append(Case(f"scipy.stats.{name}.{method}", fn, args, wrt=tuple(range(len(args))),
                             id=f"{name}.{method}"))
    return rows


def _frozen_normal(x, loc, log_scale):
    return st.norm(loc, np.exp(log_scale)).logpdf(x) + st.gamma(2.5, scale=np.exp(log_scale)).logcdf(x * x)


def _dirichlet(alpha, x):
    return st.dirichlet.logpdf(x, alpha)


def _mvn(x, mean, cov):
    return st.multivariate_normal.logpdf(x, mean, cov)


MVN_COV = np.array([[2.0, 0.3, -0.2], [0.3, 1.5, 0.4], [-0.2, 0.4, 1.1]])
MVN_X = np.array([[0.3, -0.4, 1.1], [-0.5, 0.2, 0.0]])
COUNTS = np.array([0, 1, 3, 5])

CASES = _continuous_rows() + [
    Case("scipy.stats.norm.logpdf", _frozen_normal, (np.array([0.4, 1.3]), np.array([0.2, -0.1]), np.array([0.1, 0.3])),
         wrt=(0, 1, 2), id="frozen-norm-and-gamma"),
    Case("scipy.stats.poisson.logpmf", lambda mu: st.poisson.logpmf(COUNTS, mu), (np.array([1.5, 0.7, 2.4, 3.1]),),
         order=3),
    Case("scipy.stats.poisson.pmf", lambda mu: st.poisson.pmf(COUNTS, mu), (np.array([1.5, 0.7, 2.4, 3.1]),)),
    Case("scipy.stats.poisson.cdf", lambda mu: st.poisson.cdf(COUNTS + 0.5, mu), (np.array([1.5, 0.7, 2.4, 3.1]),)),
    Case("scipy.stats.poisson.logcdf", lambda mu: st.poisson.logcdf(COUNTS, mu), (np.array([1.5, 0.7, 2.4, 3.1]),)),
    Case("scipy.stats.poisson.sf", lambda mu: st.poisson.sf(COUNTS, mu), (np.array([1.5, 0.7, 2.4, 3.1]),)),
    Case("scipy.stats.poisson.logsf", lambda mu: st.poisson(mu, loc=-1).logsf(COUNTS), (np.array([1.5, 0.7, 2.4, 3.1]),),
         id="frozen-poisson.logsf"),
    Case("scipy.stats.binom.logpmf", lambda p: st.binom.logpmf(COUNTS, 6, p), (np.array([0.3, 0.55, 0.2, 0.7]),),
         order=3),
    Case("scipy.stats.binom.pmf", lambda p: st.binom.pmf(COUNTS, 6, p), (np.array([0.3, 0.55, 0.2, 0.7]),)),
    Case("scipy.stats.binom.cdf", lambda p: st.binom.cdf(COUNTS, 6, p), (np.array([0.3, 0.55, 0.2, 0.7]),)),
    Case("scipy.stats.binom.logcdf", lambda p: st.binom.logcdf(COUNTS, 6, p), (np.array([0.3, 0.55, 0.2, 0.7]),)),
    Case("scipy.stats.binom.sf", lambda p: st.binom.sf(COUNTS, 6, p), (np.array([0.3, 0.55, 0.2, 0.7]),)),
    Case("scipy.stats.binom.logsf", lambda p: st.binom.logsf(COUNTS, 6, p), (np.array([0.3, 0.55, 0.2, 0.7]),)),
    # x on the simplex is not differentiated (SciPy refuses any step off it); alpha is
    Case("scipy.stats.dirichlet.logpdf", lambda a: _dirichlet(a, np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])),
         (np.array([1.5, 2.0, 3.0]),), order=3),
    Case("scipy.stats.dirichlet.pdf", lambda a: st.dirichlet(a).pdf(np.array([0.2, 0.3])), (np.array([1.5, 2.0, 3.0]),)),
    # cov along every direction, unsymmetric ones too: SciPy reads its lower triangle
    Case("scipy.stats.multivariate_normal.logpdf", _mvn, (MVN_X, np.array([0.1, -0.2, 0.3]), MVN_COV),
         wrt=(0, 1, 2)),
    Case("scipy.stats.multivariate_normal.pdf", lambda cov: st.multivariate_normal(cov=cov).pdf(MVN_X[0]), (MVN_COV,)),
]
