"""Where the chain rule meets 0 * inf: a zero that is a value gives NaN and a report (the derivative
exists only as a limit), in both modes; a structural zero (a where branch not taken, an entry no seed
reaches, an index not taken, a mask) gives 0. Cases of issue 43, against their true limits."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli

from .test_cli import invoke, make_runner, write


def _norm_cos(x):
    return np.cos(np.sqrt(np.sum(x ** 2)))


def _norm_sin2(x):
    return np.sin(np.sqrt(x[0] ** 2 + x[1] ** 2)) ** 2


def _cbrt_cube(x):
    return np.cbrt(x ** 3)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("f", [_norm_cos, _norm_sin2])
def test_a_hessian_through_sqrt_of_zero_is_nan_never_zero(f, mode):
    H = np.asarray(jaccli.hessian(f, np.zeros(2), mode=mode))
    assert np.isnan(H[0, 0]) and np.isnan(H[1, 1])  # true: -I and 2I; never the 0 of 0 * inf
    assert not (H == 0).any()


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_away_from_zero_the_same_functions_are_their_closed_forms(mode):
    x = np.array([0.3, -0.4])
    r = 0.5
    u = x / r
    H = -np.cos(r) * np.outer(u, u) - np.sin(r) / r * (np.eye(2) - np.outer(u, u))
    np.testing.assert_allclose(np.asarray(jaccli.hessian(_norm_cos, x, mode=mode)), H, rtol=1e-12)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("chunk", [1, None])
def test_cbrt_of_a_cube_is_nan_where_the_zero_is_a_value_and_zero_where_it_is_structural(mode, chunk):
    J = np.asarray(jaccli.jacobian(_cbrt_cube, np.array([0.0, 2.0]), mode=mode, chunk_size=chunk))
    assert np.isnan(J[0, 0])                                    # true: 1, a limit the rules cannot see
    np.testing.assert_array_equal(J[[0, 1, 1], [1, 0, 1]], [0.0, 0.0, 1.0])  # no seed reaches them: 0


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_structural_zeros_stay_zero(mode):
    x = np.array([0.0, 4.0])
    cases = [
        (lambda x: np.where(x > 0, np.sqrt(x), 0.0), np.diag([0.0, 0.25])),        # branch not taken
        (lambda x: np.maximum(np.sqrt(x), 1.0), np.diag([0.0, 0.25])),            # maximum's other side
        (lambda x: (np.sqrt(x)[1] + x[0]).reshape(1), np.array([[1.0, 0.25]])),  # an index not taken
        (lambda x: np.sqrt(x) * np.array([0.0, 1.0]), np.diag([0.0, 0.25])),      # a constant 0 factor
    ]
    for f, want in cases:
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(f, x, mode=mode)), want)
    H = np.asarray(jaccli.hessian(lambda x: np.sum(np.where(x > 0, x * np.sqrt(x), 0.0)), x, mode=mode))
    np.testing.assert_array_equal(H, np.diag([0.0, 0.375]))


def test_pairwise_distances_with_their_zero_diagonal_taken_out_by_index_have_a_finite_gradient():
    x = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])

    def energy(x):
        d = np.sqrt(np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1))  # sqrt(0) on the diagonal
        return np.sum(d[np.triu_indices(3, 1)])

    u = np.array([0.6, 0.8])
    want = np.array([-2 * u, 0 * u, 2 * u])
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(energy, x, mode=mode)), want, atol=1e-15)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_zero_factor_that_is_a_value_times_an_infinite_tangent_is_nan_too(mode):
    # x * sqrt(x) = x ** 1.5 at 0: its chain rule is 0 * inf both ways round; a power rule would be exact
    J = np.asarray(jaccli.jacobian(lambda x: x * np.sqrt(x), np.array([0.0, 4.0]), mode=mode))
    assert np.isnan(J[0, 0]) and J[1, 1] == 3.0 and J[0, 1] == 0.0 and J[1, 0] == 0.0


def test_a_replay_meets_the_limit_as_a_fresh_recording_does():
    rec = jaccli.record_once(_cbrt_cube)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(rec, np.array([1.0, 2.0]))), np.eye(2), rtol=1e-14)
    J = np.asarray(jaccli.jacobian(rec, np.array([0.0, 2.0])))
    assert np.isnan(J[0, 0]) and J[1, 1] == 1.0


def test_a_sparse_jacobian_keeps_the_nan_and_the_structure():
    J = jaccli.sparse_jacobian(_cbrt_cube, np.array([0.0, 2.0, 1.0])).toarray()
    assert np.isnan(J[0, 0])
    np.testing.assert_array_equal(J[1:, 1:], np.eye(2))
    np.testing.assert_array_equal(J[0, 1:], 0.0)


F_FILE = "import numpy as np\n\n\ndef f(x):\n    s = np.sum(x ** 2)\n    return np.cos(np.sqrt(s))\n"


def test_the_command_line_reports_the_operation_and_line_and_fails_on_request(tmp_path):
    func = write(tmp_path, "f.py", F_FILE)
    runner = make_runner()
    result = invoke(runner, "hessian", func, "[0, 0]", "--fail-on-nonfinite")
    assert result.exit_code == 1
    assert f"np.sqrt produced nan in the" in result.stderr and f"{func}:6" in result.stderr
    assert "= inf here met a zero" in result.stderr and "the derivative here exists only as a limit" in result.stderr
    checked = invoke(runner, "check", func, "[0, 0]", "--order", "2")
    assert checked.exit_code == 1 and "NaN" in checked.stderr


def test_hvp_sparse_hessian_and_a_replayed_hessian_are_nan_there_too():
    _, hv = jaccli.hvp(_norm_cos, np.zeros(2), np.array([1.0, 0.0]))
    assert np.isnan(hv).all()
    assert np.isnan(jaccli.sparse_hessian(_norm_cos, np.zeros(2)).toarray()).all()
    rec = jaccli.record_once(_norm_cos)
    assert np.isfinite(np.asarray(jaccli.hessian(rec, np.array([0.3, 0.1])))).all()
    assert np.isnan(np.asarray(jaccli.hessian(rec, np.zeros(2)))).all()
