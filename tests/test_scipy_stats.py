"""scipy.stats, scipy.linalg and scipy.signal in f: whole likelihoods against their hand-written derivatives,
SciPy's own values, the refusals that name a function and its argument, how they are reached (f's globals,
the modules, f itself), and that jaccli imports none of them unless f's module does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.signal as sg
import scipy.special as sp
import scipy.stats as st
from click.testing import CliRunner
from numpy.testing import assert_allclose

import jaccli
from jaccli.cli.main import cli
from jaccli.engine.recording import Recording
from jaccli.errors import UnsupportedOperationError

DATA = np.array([0.3, -1.2, 2.1, 0.8, 1.5, -0.4])


def _gaussian_loglik(theta):
    return np.sum(st.norm.logpdf(DATA, loc=theta[0], scale=np.exp(theta[1])))


def test_gaussian_log_likelihood_has_the_hand_written_gradient_and_hessian():
    theta = np.array([0.4, -0.2])
    mu, s = theta[0], np.exp(theta[1])
    r = DATA - mu
    n = DATA.size
    # l = -n log s - sum r^2 / (2 s^2) - n/2 log 2 pi, in (mu, log s)
    grad = np.array([np.sum(r) / s ** 2, -n + np.sum(r ** 2) / s ** 2])
    hess = np.array([[-n / s ** 2, -2.0 * np.sum(r) / s ** 2],
                     [-2.0 * np.sum(r) / s ** 2, -2.0 * np.sum(r ** 2) / s ** 2]])
    assert_allclose(jaccli.grad(_gaussian_loglik, theta), grad, rtol=1e-12)
    assert_allclose(np.asarray(jaccli.hessian(_gaussian_loglik, theta)), hess, rtol=1e-12)
    # the frozen distribution is the same function
    frozen = jaccli.hessian(lambda t: np.sum(st.norm(t[0], np.exp(t[1])).logpdf(DATA)), theta)
    assert_allclose(np.asarray(frozen), hess, rtol=1e-12)


@pytest.mark.parametrize("call", [
    lambda x: st.norm.logpdf(x, 0.3, 1.7), lambda x: st.norm.logsf(x), lambda x: st.t.cdf(x, 3.5, scale=2.0),
    lambda x: st.expon.pdf(x, loc=-0.5), lambda x: st.gamma.logcdf(x, 2.5), lambda x: st.beta.sf(x / 3.0, 2.0, 3.0),
    lambda x: st.gamma.logpdf(x, 0.7)], ids=["norm.logpdf", "norm.logsf", "t.cdf", "expon.pdf", "gamma.logcdf",
                                             "beta.sf", "gamma.logpdf"])
def test_values_are_scipys_inside_and_outside_the_support(call):
    x = np.array([-1.0, -0.25, 0.0, 0.5, 1.7, 2.9, 3.5])
    assert_allclose(Recording(call, (x,), (0,)).outputs[0], call(x), rtol=1e-12, atol=1e-300)
    # finite off the support's edge (at 0, gamma(0.7)'s log-density has slope -inf): 0 outside it
    assert np.isfinite(np.diag(np.asarray(jaccli.jacobian(call, x)))[x != 0.0]).all()


def test_outside_the_support_the_derivative_is_zero_not_nan():
    x = np.array([-1.0, 0.5, 2.0])
    J = np.asarray(jaccli.jacobian(lambda x: st.gamma.logpdf(x, 2.5) + st.beta.cdf(x, 2.0, 3.0), x))
    assert_allclose(np.diag(J)[0], 0.0)
    assert_allclose(J[1, 1], 1.5 / 0.5 - 1.0 + st.beta.pdf(0.5, 2.0, 3.0), rtol=1e-10)
    assert_allclose(J[2, 2], 1.5 / 2.0 - 1.0, rtol=1e-10)  # beta's cdf is 1 beyond 1


def test_discrete_distributions_at_non_integers_and_beyond_n_are_scipys():
    k = np.array([-1.0, 0.0, 2.5, 3.0, 7.0])
    p = np.full(5, 0.4)
    for fn in (lambda p: st.binom.logpmf(k, 6, p), lambda p: st.binom.cdf(k, 6, p), lambda p: st.binom.sf(k, 6, p),
               lambda p: st.poisson.logpmf(k, 10 * p), lambda p: st.poisson.cdf(k, 10 * p)):
        assert_allclose(Recording(fn, (p,), (0,)).outputs[0], fn(p), rtol=1e-12)
        assert np.isfinite(np.asarray(jaccli.jacobian(fn, p))).all()


@pytest.mark.parametrize("call, message", [
    (lambda a: st.gamma.cdf(1.5, a), "scipy.stats.gamma.cdf has no derivative with respect to its shape parameter a"),
    (lambda df: st.t.sf(0.5, df), "scipy.stats.t.sf has no derivative with respect to its shape parameter df"),
    (lambda b: st.beta(2.0, b).logcdf(0.3), "scipy.stats.beta.logcdf has no derivative with respect to its shape "
                                            "parameter b"),
    (lambda n: st.binom.pmf(2, n, 0.3), "scipy.stats.binom.pmf has no derivative with respect to its shape parameter n"),
    (lambda k: st.poisson.logpmf(k, 2.0), "scipy.stats.poisson.logpmf: k is an integer"),
    (lambda m: st.norm(m).rvs(), r"scipy.stats.norm\(...\).rvs with traced parameters is not differentiable"),
    (lambda a: sl.sqrtm(-a * np.eye(2)), "scipy.linalg.sqrtm of this matrix is complex"),
])
def test_a_derivative_without_a_closed_form_is_refused_naming_the_function_and_argument(call, message):
    with pytest.raises(UnsupportedOperationError, match=message):
        jaccli.jacobian(call, np.array(3.0))


def test_scipy_functions_passed_as_f_are_jaccli_versions(rng):
    x = rng.standard_normal(4)
    assert_allclose(jaccli.grad(sp.logsumexp, x), sp.softmax(x), rtol=1e-12)
    assert_allclose(np.asarray(jaccli.jacobian(st.norm.logpdf, x)), np.diag(-x), rtol=1e-12)
    assert_allclose(np.asarray(jaccli.jacobian(sl.expm, np.zeros((2, 2)))).reshape(4, 4), np.eye(4), atol=1e-12)


def test_expm_and_sqrtm_match_their_closed_forms():
    # expm of t [[0, 1], [-1, 0]] is the rotation by t; sqrtm(A)^2 = A gives X dX + dX X = dA
    t = 0.7
    J = np.asarray(jaccli.jacobian(lambda t: sl.expm(t * np.array([[0.0, 1.0], [-1.0, 0.0]])), t))
    assert_allclose(J, [[-np.sin(t), np.cos(t)], [-np.cos(t), -np.sin(t)]], rtol=1e-12)
    a = np.array([[4.0, 1.0], [0.5, 3.0]])
    x = sl.sqrtm(a)
    e = np.array([[0.3, -0.2], [0.1, 0.5]])
    dx = jaccli.jvp(sl.sqrtm, (a,), (e,))[1]
    assert_allclose(x @ dx + dx @ x, e, rtol=1e-10, atol=1e-12)


def test_convolve_adjoint_is_the_correlation(rng):
    a, b, g = rng.standard_normal(6), rng.standard_normal(3), rng.standard_normal(8)
    ga, gb = jaccli.vjp(lambda a, b: sg.convolve(a, b), (a, b), g)[1]
    assert_allclose(ga, np.correlate(g, b, mode="valid"), rtol=1e-12)
    assert_allclose(gb, np.correlate(g, a, mode="valid"), rtol=1e-12)


def test_module_forms_and_helper_modules_reach_the_stand_ins(user_module, rng):
    helpers = user_module("""
        from scipy.stats import multivariate_normal
        from scipy import linalg

        def loglik(x, mean, cov):
            chol = linalg.cho_solve((linalg.cholesky(cov, lower=True), True), x - mean)
            return multivariate_normal.logpdf(x, mean, cov) + 0.0 * chol[0]
    """, name="stats_helpers")
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    x = np.array([0.4, -0.3])
    g = jaccli.grad(lambda m: helpers.loglik(x, m, cov), np.zeros(2))
    assert_allclose(g, np.linalg.solve(cov, x), rtol=1e-12)
    assert type(st.norm) is type(st.distributions.norm)  # left as it was after the recording


def test_ops_lists_the_new_scipy_families():
    result = CliRunner().invoke(cli, ["ops", "--format", "text"])
    assert result.exit_code == 0, result.output
    names = {line.split()[0] for line in result.output.splitlines()[1:] if line.strip()}
    for name in ("scipy.stats.norm.logpdf", "scipy.stats.binom.logpmf", "scipy.stats.multivariate_normal.logpdf",
                 "scipy.linalg.expm", "scipy.linalg.cho_solve", "scipy.signal.convolve"):
        assert name in names


def test_numpy_only_f_leaves_scipy_unimported_and_a_stats_f_installs_it(tmp_path):
    (tmp_path / "plain.py").write_text("import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x))\n")
    (tmp_path / "likelihood.py").write_text(
        "import numpy as np\nfrom scipy.stats import norm\n\n"
        "def f(theta):\n    return np.sum(norm.logpdf(np.array([0.1, 0.5]), theta[0], np.exp(theta[1])))\n")
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import jaccli
        sys.path.insert(0, {str(tmp_path)!r})
        import plain
        np.asarray(jaccli.hessian(plain.f, np.array([0.2, 0.4])))
        assert "scipy" not in sys.modules, "jaccli imported scipy"
        import likelihood
        print(float(jaccli.grad(likelihood.f, np.array([0.0, 0.0]))[0]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(0.6, rel=1e-12)


def test_distributions_frozen_before_f_runs_are_stood_in_for(user_module):
    model = user_module("""
        import numpy as np
        from scipy import stats

        prior = stats.norm(1.0, 2.0)
        likelihood = stats.multivariate_normal(np.zeros(2), np.eye(2))

        def make():
            weights = stats.dirichlet(np.array([2.0, 3.0]))
            return lambda x: prior.logpdf(x).sum() + likelihood.logpdf(x) + weights.logpdf(np.array([0.3, 0.7])) * x[0]
    """, name="frozen_model")
    x = np.array([0.4, 1.5])
    expected = -(x - 1.0) / 4.0 - x + np.array([st.dirichlet.logpdf([0.3, 0.7], [2.0, 3.0]), 0.0])
    assert_allclose(jaccli.grad(model.make(), x), expected, rtol=1e-12)
    assert type(model.prior).__name__ == "rv_continuous_frozen"  # put back after the recording
