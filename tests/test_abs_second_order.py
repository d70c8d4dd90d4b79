"""abs at 0 in a Hessian: a gradient keeps abs'(0) = 0, a gradient differentiated again takes abs's slope
one-sided at 0 in every factor, so that smooth compositions (|u| ** 2, |u| * |u|, a least-squares loss
of |r| ** 2) get their second derivatives in every Hessian path; |u| itself stays a kink that check
excuses, |u| ** 2 is no kink (issue 43, item 2). References: closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli

from .test_cli import invoke, make_runner, write

A = np.array([[1.0, 2.0, 0.0, -1.0], [0.5, -1.0, 3.0, 0.0], [2.0, 0.0, 1.0, 1.0]])
X = np.array([0.0, 1.5, -2.0, 0.0])  # some components 0, some not
B = A @ X - np.array([0.0, 0.7, 0.0])  # the residual A x - b is 0 in rows 0 and 2 at X


def _abs_squared(x):
    return np.sum(np.abs(x) ** 2)


def _abs_times_abs(x):
    return np.sum(np.abs(x) * np.abs(x))


def _abs_cubed(x):
    return np.sum(np.abs(x) ** 3)


def _fabs_squared(x):
    return np.sum(np.fabs(x) ** 2)


def _loss(x):
    return np.sum(np.abs(A @ x - B) ** 2)


# f -> its Hessian in closed form, of the smooth function it equals (|u| ** 3: 6 |u| on the diagonal)
CASES = [(_abs_squared, lambda x: 2.0 * np.eye(x.size)), (_abs_times_abs, lambda x: 2.0 * np.eye(x.size)),
         (_fabs_squared, lambda x: 2.0 * np.eye(x.size)), (_abs_cubed, lambda x: np.diag(6.0 * np.abs(x))),
         (_loss, lambda x: 2.0 * A.T @ A)]
POINTS = [np.zeros(4), X]


@pytest.mark.parametrize("x", POINTS, ids=["zero", "mixed"])
@pytest.mark.parametrize("f, closed", CASES, ids=[f.__name__ for f, _ in CASES])
def test_dense_hessians_in_both_modes_and_in_blocks_of_seeds_are_the_closed_forms(f, closed, x):
    for mode in ("forward", "reverse"):
        for chunk in (None, 3):
            H = np.asarray(jaccli.hessian(f, x, mode=mode, chunk_size=chunk))
            np.testing.assert_allclose(H, closed(x), rtol=1e-12, atol=1e-12, err_msg=f"{mode}, chunk {chunk}")


@pytest.mark.parametrize("f, closed", CASES, ids=[f.__name__ for f, _ in CASES])
def test_hvp_sparse_hessian_and_record_once_replays_are_the_closed_forms(f, closed):
    v = np.array([1.0, -2.0, 0.5, 3.0])
    replayed = jaccli.record_once(f)
    for x in POINTS + [np.array([0.3, -0.2, 1.0, 2.0])] + POINTS:  # fresh, replayed, and back at 0
        _, hv = jaccli.hvp(f, x, v)
        np.testing.assert_allclose(hv, closed(x) @ v, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(jaccli.sparse_hessian(f, x).toarray(), closed(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(replayed, x)), closed(x), rtol=1e-12, atol=1e-12)
        _, hv = jaccli.hvp(replayed, x, v)
        np.testing.assert_allclose(hv, closed(x) @ v, rtol=1e-12, atol=1e-12)


def test_first_order_keeps_abs_prime_of_zero_equal_to_zero_and_abs_itself_has_a_zero_hessian():
    x = np.array([0.0, -1.0, 2.0])
    np.testing.assert_array_equal(jaccli.grad(lambda u: np.sum(np.abs(u)), x), np.sign(x))
    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(np.abs, x)), np.diag(np.sign(x)))
    np.testing.assert_array_equal(np.asarray(jaccli.hessian(lambda u: np.sum(np.abs(u)), x)), 0.0)
    # the gradient a Hessian call returns beside it is the same one
    _, hv = jaccli.hvp(lambda u: np.sum(np.abs(u)), x, np.ones(3))
    np.testing.assert_array_equal(hv, 0.0)


ABS_FILE = """import numpy as np


def squared(x):
    return np.sum(np.abs(x) ** 2)


def plain(x):
    return np.sum(np.abs(x))


def product(x):
    return np.abs(x[0]) * x[1]
"""


@pytest.mark.parametrize("order", ["1", "2"])
def test_check_passes_abs_squared_at_zero_without_excusing_it_as_a_kink(tmp_path, order):
    func = write(tmp_path, "f.py", ABS_FILE)
    result = invoke(make_runner(), "check", f"{func}:squared", "[0, 0, 0]", "--order", order)
    assert result.exit_code == 0, result.stderr
    assert "passed:" in result.stdout and "not counted" not in result.stdout and "kink" not in result.stdout


def test_check_still_excuses_abs_at_zero_and_the_kinked_entries_of_a_product(tmp_path):
    func = write(tmp_path, "f.py", ABS_FILE)
    runner = make_runner()
    result = invoke(runner, "check", f"{func}:plain", "[0, 0]", "--order", "2")
    assert result.exit_code == 0, result.stderr
    assert "2 not counted" in result.stdout and "evaluated at a kink" in result.stdout
    # |x0| x1 at x0 = 0: the Hessian is x0 x1's (one-sided abs); the entries along x0 sit on the kink
    for point in ("[0, 1]", "[0, 0]"):
        result = invoke(runner, "check", f"{func}:product", point, "--order", "2")
        assert result.exit_code == 0, result.stdout + result.stderr
        assert "not counted" in result.stdout


def _cos_norm(x):
    return np.cos(np.linalg.norm(x))


def _cos_hypot(x):
    return np.cos(np.hypot(x[0], x[1]))


def _cos_row_norms(x):
    return np.sum(np.cos(np.linalg.norm(np.reshape(x, (2, 2)), axis=1, keepdims=True)))


@pytest.mark.parametrize("f", [_cos_norm, _cos_hypot, _cos_row_norms])
def test_a_hessian_through_norm_or_hypot_at_zero_is_nan_and_the_gradient_keeps_its_convention(f):
    x = np.zeros(2) if f is _cos_hypot else np.zeros(4)
    np.testing.assert_array_equal(jaccli.grad(f, x), 0.0)  # the kink's convention (and the true limit)
    for mode in ("forward", "reverse"):
        H = np.asarray(jaccli.hessian(f, x, mode=mode))
        assert np.isnan(np.diagonal(H)).all(), mode  # true: -1 on the diagonal; never the convention's 0
    assert np.isnan(jaccli.hvp(f, x, np.ones_like(x))[1]).all()
    assert np.isnan(np.diagonal(jaccli.sparse_hessian(f, x).toarray())).all()
    replayed = jaccli.record_once(f)
    assert np.isfinite(np.asarray(jaccli.hessian(replayed, x + 0.25))).all()
    assert np.isnan(np.diagonal(np.asarray(jaccli.hessian(replayed, x)))).all()
    # away from 0: the closed form of cos(r), r = |x|
    y = np.array([0.3, -0.4]) if f is _cos_hypot else np.array([0.3, -0.4, 0.0, 0.0])
    u = y[:2] / 0.5
    closed = -np.cos(0.5) * np.outer(u, u) - np.sin(0.5) / 0.5 * (np.eye(2) - np.outer(u, u))
    H = np.asarray(jaccli.hessian(f, y))
    np.testing.assert_allclose(H[:2, :2], closed, rtol=1e-12, atol=1e-12)


NORM_FILE = """import numpy as np


def norm(x):
    return np.cos(np.linalg.norm(x))


def hypot(x):
    return np.cos(np.hypot(x[0], x[1]))
"""


@pytest.mark.parametrize("name, line", [("norm", 5), ("hypot", 9)])
def test_the_command_line_names_the_operation_and_line_and_fails_on_request(tmp_path, name, line):
    func = write(tmp_path, "f.py", NORM_FILE)
    runner = make_runner()
    for command in ("hessian", "hvp"):
        extra = ("--vector", "[1, 0]") if command == "hvp" else ()
        result = invoke(runner, command, f"{func}:{name}", "[0, 0]", *extra, "--fail-on-nonfinite")
        assert result.exit_code == 1, result.stdout + result.stderr
        assert f"f.py:{line}" in result.stderr and "x / norm(x)" in result.stderr
        assert "the derivative here exists only as a limit" in result.stderr
    assert invoke(runner, "grad", f"{func}:{name}", "[0, 0]", "--fail-on-nonfinite").exit_code == 0


def _cos_of_norm_pattern(x):
    """docs/conventions.md's pattern for cos(|x|), a smooth function of s = |x| ** 2."""
    s = np.sum(x ** 2)
    small = s < 1e-6
    r = np.sqrt(np.where(small, 1.0, s))
    return np.where(small, 1.0 - s / 2 + s ** 2 / 24, np.cos(r))


def _sin2_of_hypot_pattern(x):
    s = x[0] ** 2 + x[1] ** 2
    small = s < 1e-6
    r = np.sqrt(np.where(small, 1.0, s))
    return np.where(small, s - s ** 2 / 3, np.sin(r) ** 2)


@pytest.mark.parametrize("x", [np.zeros(2), np.array([3e-4, -4e-4]), np.array([0.3, -0.4])])
def test_the_documented_patterns_give_the_limits_at_and_near_zero(x):
    r = np.hypot(x[0], x[1])
    u = x / r if r else np.zeros(2)
    p = np.eye(2) - np.outer(u, u)
    cos_closed = -np.cos(r) * np.outer(u, u) - (np.sin(r) / r if r else 1.0) * p
    sin2_closed = 2 * np.cos(2 * r) * np.outer(u, u) + (np.sin(2 * r) / r if r else 2.0) * p
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(_cos_of_norm_pattern, x, mode=mode)), cos_closed,
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(_sin2_of_hypot_pattern, x, mode=mode)), sin2_closed,
                                   rtol=1e-9, atol=1e-9)


def test_a_root_of_abs_at_zero_is_nan_and_reported_where_no_convention_makes_it_right():
    # sqrt(|u|) ** 4 is u ** 2, but sqrt'(0) = inf meets abs's zero value: NaN, never a silent number
    f = lambda x: np.sum(np.sqrt(np.abs(x)) ** 4)  # noqa: E731
    H = np.asarray(jaccli.hessian(f, np.array([0.0, 1.0])))
    assert np.isnan(H[0, 0]) and H[1, 1] == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize("f", [_cos_norm, _cos_hypot])
def test_a_jacobian_of_a_create_graph_gradient_through_norm_at_zero_is_nan_too(f):
    def gradient(x):
        return jaccli.vjp(f, x, np.ones(()), create_graph=True)[1]
    np.testing.assert_array_equal(gradient(np.zeros(2)), 0.0)  # the gradient keeps the kink's 0
    assert np.isnan(np.asarray(jaccli.jacobian(gradient, np.zeros(2)))).all()
    y = np.array([0.3, -0.4])
    u = y / 0.5
    closed = -np.cos(0.5) * np.outer(u, u) - np.sin(0.5) / 0.5 * (np.eye(2) - np.outer(u, u))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(gradient, y)), closed, rtol=1e-12, atol=1e-12)


# A derivative that the user takes of a create_graph gradient keeps the gradient's abs'(0) = 0 (its values
# are the user's), so its derivative through abs at 0 depends on the convention: NaN and reported there,
# never the convention's silent 0; structural zeros stay 0 (issue 43, item 2).
def _vjp_gradient(f):
    return lambda u: jaccli.vjp(f, u, np.ones(()), create_graph=True)[1]


def _grad_gradient(f):
    return lambda u: jaccli.grad(f, u, create_graph=True)


def _jacobian_gradient(f):
    return lambda u: np.asarray(jaccli.jacobian(f, u, create_graph=True))


GRADIENTS = [_vjp_gradient, _grad_gradient, _jacobian_gradient]
# f -> its Hessian's diagonal in closed form (every f here is a sum of one function of each component)
NESTED = [(_abs_squared, lambda x: 2.0 + 0 * x), (_abs_times_abs, lambda x: 2.0 + 0 * x),
          (_fabs_squared, lambda x: 2.0 + 0 * x), (_abs_cubed, lambda x: 6.0 * np.abs(x)),
          (lambda x: np.sum(np.abs(x)), lambda x: 0 * x)]


@pytest.mark.parametrize("x", POINTS, ids=["zero", "mixed"])
@pytest.mark.parametrize("f, diagonal", NESTED, ids=["abs_squared", "abs_times_abs", "fabs_squared", "abs_cubed",
                                                     "abs"])
def test_a_jacobian_of_a_create_graph_gradient_through_abs_at_zero_is_nan_where_it_meets_the_convention(f, diagonal, x):
    expected = np.diag(np.where(x == 0, np.nan, diagonal(x)))  # off the diagonal: 0, a disconnected path
    first = jaccli.grad(f, x)
    for gradient in GRADIENTS:
        g = gradient(f)
        value, _ = jaccli.vjp(g, x, np.ones(4))  # the gradient the enclosing level sees
        np.testing.assert_array_equal(value, first)  # abs'(0) = 0 there, as in every first derivative
        for mode in ("forward", "reverse"):
            J = np.asarray(jaccli.jacobian(g, x, mode=mode))
            np.testing.assert_allclose(J, expected, rtol=1e-12, atol=1e-12, err_msg=f"{gradient.__name__}, {mode}")
    H = np.asarray(jaccli.hessian(f, x))  # a Hessian still takes abs's slope one-sided: no NaN there
    np.testing.assert_allclose(H, np.diag(diagonal(x)), rtol=1e-12, atol=1e-12)


def test_a_create_graph_jvp_through_abs_gives_nan_only_in_the_entries_its_tangent_reaches():
    v = np.array([1.0, 0.0, 0.0, 2.0])

    def directional(u):
        return jaccli.jvp(_abs_squared, u, v, create_graph=True)[1]  # <grad f, v>: its gradient is H v
    for x in POINTS:
        for mode in ("forward", "reverse"):
            expected = np.where((x == 0) & (v != 0), np.nan, 2.0 * v)
            np.testing.assert_allclose(np.asarray(jaccli.jacobian(directional, x, mode=mode)), expected, rtol=1e-12)


def test_structural_zeros_stay_zero_and_components_away_from_zero_keep_their_closed_forms():
    def masked(u):  # the branch with abs is not taken at 0: the function is 0 near 0
        return np.sum(np.where(u > 1.0, np.abs(u) ** 2, 0.0))

    def apart(u):  # abs's path meets u[0] alone
        return np.abs(u[0]) ** 2 + u[1] ** 2 + np.abs(u[2]) * u[3]

    x = np.array([0.0, 0.0, 2.0, 0.0])
    for mode in ("forward", "reverse"):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(_grad_gradient(masked), np.zeros(2), mode=mode)), 0.0)
        J = np.asarray(jaccli.jacobian(_grad_gradient(apart), x, mode=mode))
        expected = np.zeros((4, 4))
        expected[0, 0], expected[1, 1], expected[2, 3], expected[3, 2] = np.nan, 2.0, 1.0, 1.0
        np.testing.assert_allclose(J, expected, rtol=1e-12, atol=1e-12)


NESTED_FILE = """import numpy as np
import jaccli


def f(u):
    return np.sum(np.fabs(u) ** 2)


def gradient(u):
    return jaccli.grad(f, u, create_graph=True)
"""


def test_the_report_names_abs_and_its_line_and_says_the_derivative_depends_on_the_convention(tmp_path):
    from jaccli.check.diagnostics import trace_nonfinite
    g = _vjp_gradient(_abs_squared)
    for mode in ("forward", "reverse"):
        J = jaccli.jacobian(g, np.zeros(2), mode=mode)
        prov = trace_nonfinite(lambda: np.asarray(J), J)
        assert prov.op == "np.absolute' (a convention at 0)" and prov.values == "nan"
        assert prov.line == _abs_squared.__code__.co_firstlineno + 1
        assert "depends on it" in prov.notes and "jaccli.hessian and hvp take abs's slope one-sided" in prov.notes
    func = write(tmp_path, "f.py", NESTED_FILE)
    runner = make_runner()
    result = invoke(runner, "jacobian", f"{func}:gradient", "[0, 1]", "--fail-on-nonfinite")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "np.fabs' (a convention at 0) produced nan" in result.stderr and "f.py:6" in result.stderr
    assert invoke(runner, "jacobian", f"{func}:gradient", "[1, 2]", "--fail-on-nonfinite").exit_code == 0
