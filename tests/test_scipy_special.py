"""scipy.special in f: its ufuncs and logsumexp/softmax/log_softmax/polygamma, against closed forms,
SciPy's own values and central differences; how they are reached (f's globals, other modules, the
scipy.special module) and left as they were; and that jaccli itself never imports SciPy."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import scipy.special as sp
from click.testing import CliRunner
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
from jaccli.cli.main import cli
from jaccli.engine.recording import Recording
from jaccli.errors import TracingError, UnsupportedOperationError
from tests.helpers import central_diff

ORIGINALS = {name: getattr(sp, name) for name in ("logsumexp", "softmax", "log_softmax", "polygamma")}


def test_cross_entropy_hessian_with_scipy_logsumexp_is_the_closed_form(rng):
    # P6 as torch, JAX and autograd users write it: diag(p) - p p^T, independent of the target
    z = 2.0 * rng.standard_normal(50)
    H = np.asarray(jaccli.hessian(lambda z: sp.logsumexp(z) - z[3], z))
    p = np.exp(z - sp.logsumexp(z))
    np.testing.assert_allclose(H, np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-14)
    assert np.array_equal(H, H.T)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_softmax_and_log_softmax_jacobians_are_the_closed_forms(axis, rng):
    x = rng.standard_normal((3, 4))
    J = np.asarray(jaccli.jacobian(lambda x: sp.softmax(x, axis=axis), x)).reshape(12, 12)
    L = np.asarray(jaccli.jacobian(lambda x: sp.log_softmax(x, axis=axis), x)).reshape(12, 12)
    s = sp.softmax(x, axis=axis)
    # entries i and j interact when they share the reduced slice
    group = np.zeros((3, 4), dtype=int) if axis is None or axis == (0, 1) else \
        np.indices((3, 4))[1 if axis == 0 else 0]
    same = (group.reshape(-1, 1) == group.reshape(1, -1)).astype(float)
    s_flat = s.reshape(-1)
    np.testing.assert_allclose(J, np.diag(s_flat) - same * np.outer(s_flat, s_flat), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(L, np.eye(12) - same * s_flat[None, :], rtol=1e-12, atol=1e-15)


def test_logsumexp_with_b_and_return_sign_gives_scipys_values_and_derivatives(rng):
    a = rng.standard_normal((2, 3))
    b = np.array([[1.0, -3.0, 0.5], [2.0, 0.3, 0.1]])

    def f(a, b):
        lse, sign = sp.logsumexp(a, axis=1, b=b, return_sign=True)
        return np.concatenate([lse, sign])

    rec = Recording(f, (a, b), (0, 1))
    np.testing.assert_array_equal(rec.outputs[0], np.concatenate(sp.logsumexp(a, axis=1, b=b, return_sign=True)))
    Ja, Jb = jaccli.jacobian(f, (a, b))
    np.testing.assert_allclose(np.asarray(Ja).reshape(4, 6), central_diff(lambda a: f(a, b), a).reshape(4, 6),
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(np.asarray(Jb).reshape(4, 6), central_diff(lambda b: f(a, b), b).reshape(4, 6),
                               rtol=1e-7, atol=1e-9)
    assert not np.asarray(Ja)[2:].any()  # the sign is piecewise constant


def test_ufunc_values_are_scipys_and_float32_stays_float32(rng):
    x = rng.uniform(0.2, 0.8, 5).astype(np.float32)
    for fn in (sp.expit, sp.erf, sp.gammaln, sp.ndtri, sp.i0e):
        rec = Recording(lambda x: fn(x), (x,), (0,))
        np.testing.assert_array_equal(rec.outputs[0], fn(x))
        J = np.asarray(jaccli.jacobian(lambda x: fn(x), x))
        assert J.dtype == np.float32, fn.__name__


@pytest.mark.parametrize("name, fn, x", [
    ("gamma third derivative", lambda x: sp.gamma(x), np.array([0.7, 1.6, 2.9])),
    ("erfinv", lambda x: sp.erfinv(x), np.array([-0.8, 0.1, 0.6])),
    ("log_ndtr", lambda x: sp.log_ndtr(x), np.array([-8.0, -3.0, 1.5])),
])
def test_third_derivatives_through_chains_of_scipy_rules(name, fn, x):
    # gamma' = gamma digamma, digamma' = polygamma(1), polygamma(n)' = polygamma(n + 1): every
    # order differentiates rules that are themselves recorded
    d2 = lambda x: np.diagonal(jaccli.hessian(lambda x: np.sum(fn(x)), x, create_graph=True)[:])  # noqa: E731
    d3 = np.diagonal(np.asarray(jaccli.jacobian(d2, x)))
    np.testing.assert_allclose(d3, np.diagonal(central_diff(d2, x, h=1e-5)), rtol=1e-5)
    assert np.all(np.isfinite(d3))


def test_xlogy_at_zero_x_has_a_zero_y_derivative_even_where_y_is_zero():
    x = np.array([0.0, 0.5, 0.0])
    y = np.array([0.0, 2.0, 3.0])
    Jx, Jy = jaccli.jacobian(lambda x, y: sp.xlogy(x, y), (x, y))
    np.testing.assert_array_equal(np.diagonal(np.asarray(Jy)), [0.0, 0.25, 0.0])
    np.testing.assert_array_equal(np.diagonal(np.asarray(Jx)), [-np.inf, np.log(2.0), np.log(3.0)])


def test_from_import_in_fs_module_and_attribute_use_in_a_helper_module_both_work(user_module, rng):
    user_module("""
        import scipy.special as sp

        def smooth_max(x):
            return sp.logsumexp(4.0 * x) / 4.0
    """, "helper_lib")
    user = user_module("""
        import numpy as np
        from scipy.special import logsumexp, softmax
        import helper_lib

        def f(x):
            return np.stack([logsumexp(x), helper_lib.smooth_max(x), softmax(x)[0]])
    """, "user_f")
    x = rng.standard_normal(4)
    J = np.asarray(jaccli.jacobian(user.f, x))
    np.testing.assert_allclose(J, central_diff(user.f, x), rtol=1e-7, atol=1e-9)
    # everything is as it was afterwards, in scipy.special and in the user's module
    assert user.logsumexp is ORIGINALS["logsumexp"] and user.softmax is ORIGINALS["softmax"]
    for name, original in ORIGINALS.items():
        assert getattr(sp, name) is original, name


def test_a_by_name_import_in_the_users_helper_module_works(user_module, rng):
    helper = user_module("""
        from scipy.special import logsumexp

        def smooth_max(x):
            return logsumexp(x)
    """, "helper_by_name")
    f = lambda x: helper.smooth_max(x) * x  # noqa: E731 - the helper is reached through f's closure
    x = rng.standard_normal(3)
    np.testing.assert_allclose(jaccli.jacobian(f, x), central_diff(f, x), rtol=1e-7, atol=1e-9)
    assert helper.logsumexp is ORIGINALS["logsumexp"]


def test_a_by_name_import_in_an_installed_module_says_how_to_call_it(user_module, tmp_path, monkeypatch):
    from jaccli.engine import user_sites

    monkeypatch.setattr(user_sites, "_LIBRARY_DIRS", user_sites._LIBRARY_DIRS + (str(tmp_path),))  # as if installed
    helper = user_module("""
        from scipy.special import logsumexp

        def installed_max(x):
            return logsumexp(x)
    """, "installed_by_name")
    with pytest.raises(TracingError) as raised:
        Recording(lambda x: helper.installed_max(x) * x, (np.ones(3),), (0,))
    assert raised.value.site[0] == __file__  # the user's line that called into the installed module
    assert "write `import scipy.special` there and call scipy.special.logsumexp(...)" in str(raised.value)


def test_plain_calls_while_f_runs_get_scipys_own_results(rng):
    x = rng.standard_normal(5)
    seen = {}

    def f(t):
        seen["lse"] = sp.logsumexp(x)  # a plain array, while the replacement is in place
        seen["swapped"] = sp.logsumexp is not ORIGINALS["logsumexp"]
        return sp.logsumexp(t) * t

    jaccli.jacobian(f, x)
    assert seen["swapped"]
    assert seen["lse"] == ORIGINALS["logsumexp"](x) and type(seen["lse"]) is type(ORIGINALS["logsumexp"](x))


def test_recordings_in_two_threads_leave_scipy_special_restored(rng):
    x = rng.standard_normal(6)
    errors = []
    barrier = threading.Barrier(2)

    def work():
        try:
            for _ in range(20):
                barrier.wait()
                H = np.asarray(jaccli.hessian(lambda z: sp.logsumexp(z), x))
                p = sp.softmax(x)
                np.testing.assert_allclose(H, np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-15)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for name, original in ORIGINALS.items():
        assert getattr(sp, name) is original, name


def test_record_once_replays_scipy_functions_at_new_points(rng):
    def f(x):
        return sp.log_softmax(x) * sp.expit(x) + sp.polygamma(1, x * x + 1.0)

    once = jaccli.record_once(f)
    for x in (rng.standard_normal(4), rng.standard_normal(4)):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(once, x)), np.asarray(jaccli.jacobian(f, x)),
                                   rtol=1e-13, atol=1e-15)
    assert once.replays == 1


def test_unsupported_scipy_function_is_named_and_a_traced_polygamma_order_is_refused():
    x = np.array([1.5, 2.5])
    with pytest.raises(UnsupportedOperationError):
        Recording(lambda x: sp.zetac(x), (x,), (0,))
    with pytest.raises(UnsupportedOperationError):
        Recording(lambda x: sp.polygamma(x, x), (x,), (0,))
    for mode in ("reverse", "forward"):
        with pytest.raises(UnsupportedOperationError):
            np.asarray(jaccli.jacobian(lambda v: sp.iv(v, 1.5), x, mode=mode))


def test_censored_gamma_and_student_t_likelihoods_have_the_closed_form_gradient_and_hessian():
    # Censored observations contribute log P(X > c) = log gammaincc(a, c / s); a Student-t CDF enters
    # as log stdtr(df, t). d/dc log Q = -p(c) / Q with the gamma density p; d/dt log T = f(t) / T.
    a, s, df = np.array([0.8, 2.5, 4.0]), 1.7, np.array([1.0, 3.0, 12.0])
    c, t = np.array([0.4, 2.0, 5.5]), np.array([-1.3, 0.2, 2.2])

    def f(c, t):
        return np.sum(np.log(sp.gammaincc(a, c / s))) + np.sum(np.log(sp.stdtr(df, t)))

    z = c / s
    dens = np.exp((a - 1) * np.log(z) - z - sp.gammaln(a)) / s  # the density of X at c, X / s ~ Gamma(a)
    q = sp.gammaincc(a, z)
    grad_c = -dens / q
    t_dens = np.exp(sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - 0.5 * np.log(np.pi * df)
                    - (df + 1) / 2 * np.log1p(t * t / df))
    big_t = sp.stdtr(df, t)
    grad_t = t_dens / big_t
    g = jaccli.grad(f, (c, t))
    assert_allclose(g[0], grad_c, rtol=1e-12)
    assert_allclose(g[1], grad_t, rtol=1e-12)
    # second derivatives: d/dc (-p/Q) = -(p' Q + p^2) / Q^2 with p' = p ((a - 1)/z - 1) / s,
    # and d/dt (f/T) = (f' T - f^2) / T^2 with f' = -f (df + 1) t / (df + t^2)
    dp = dens * ((a - 1) / z - 1) / s
    dt = -t_dens * (df + 1) * t / (df + t * t)
    H = jaccli.hessian(f, (c, t))
    assert_allclose(np.asarray(H[0][0]), np.diag(-(dp * q + dens ** 2) / q ** 2), rtol=1e-10, atol=1e-14)
    assert_allclose(np.asarray(H[1][1]), np.diag((dt * big_t - t_dens ** 2) / big_t ** 2), rtol=1e-10, atol=1e-14)
    assert_array_equal(np.asarray(H[0][1]), np.zeros((3, 3)))


@pytest.mark.parametrize("fn", [lambda a: sp.gammainc(a, 1.5), lambda a: sp.betainc(a, 2.0, 0.3),
                                lambda lam: sp.boxcox(1.5, lam)], ids=["gammainc", "betainc", "boxcox"])
def test_a_traced_shape_parameter_is_refused_by_name(fn):
    with pytest.raises(UnsupportedOperationError):
        np.asarray(jaccli.jacobian(fn, np.array([1.2, 2.5])))


def test_ops_lists_the_scipy_family():
    result = CliRunner().invoke(cli, ["ops", "--family", "scipy.special", "--format", "text"])
    assert result.exit_code == 0, result.output
    names = [line.split()[0] for line in result.output.splitlines()[1:]]
    for name in ("scipy.special.logsumexp", "scipy.special.softmax", "scipy.special.expit", "scipy.special.psi"):
        assert name in names


def test_jaccli_never_imports_scipy_and_installs_its_rules_when_f_does(tmp_path):
    (tmp_path / "plain.py").write_text("import numpy as np\n\ndef f(x):\n    return np.sin(x)\n")
    (tmp_path / "inside.py").write_text(
        "import numpy as np\n\ndef f(x):\n    import scipy.special\n    return scipy.special.expit(x) * x\n")
    (tmp_path / "uses.py").write_text(
        "import numpy as np\nfrom scipy.special import expit, logsumexp\n\n"
        "def f(x):\n    return expit(x) * logsumexp(x)\n")
    x = np.array([0.3, -0.4, 1.1])
    np.save(tmp_path / "x.npy", x)
    script = textwrap.dedent(f"""
        import sys
        from jaccli.cli.main import main
        from jaccli.engine.registry import REGISTRY

        def run(name):
            sys.argv = ["jaccli", "jacobian", {str(tmp_path)!r} + "/" + name + ".py", {str(tmp_path / "x.npy")!r},
                        "-o", {str(tmp_path)!r} + "/" + name + ".npy"]
            try:
                main()
            except SystemExit as e:
                assert e.code in (0, None), (name, e.code)

        run("plain")
        assert "scipy" not in sys.modules, "jaccli imported scipy"
        assert not any(name.startswith("scipy.") for name in REGISTRY)
        run("inside")  # scipy.special first met by a ufunc call inside f
        run("uses")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    s = sp.expit(x)
    np.testing.assert_allclose(np.load(tmp_path / "inside.npy"), np.diag(s * (1 - s) * x + s), rtol=1e-12)
    closed = np.diag(s * (1 - s) * sp.logsumexp(x)) + np.outer(s, sp.softmax(x))
    np.testing.assert_allclose(np.load(tmp_path / "uses.npy"), closed, rtol=1e-12)
