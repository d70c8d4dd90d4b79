"""`jaccli check` verdicts a CI can trust (issue 43, item 3): rounding-scaled agreement of the modes, an
inconclusive verdict where finite differences cannot resolve an entry, kinks that excuse only where f is
kinked, and the cost of --order 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaccli.check.verification import check_derivative
from jaccli.engine.registry import PRIMITIVES

from .helpers import assert_error
from .test_cli import invoke, make_runner


def least_squares_at_its_optimum(m: int = 200, scale: float = 1e3):
    """0.5 |y - a exp(-b t)|^2 and its minimiser: its gradient there is a sum of terms of 1e6 that cancel."""
    t = np.linspace(0.0, 4.0, m)
    y = scale * (3.0 * np.exp(-0.7 * t) + 0.05 * np.sin(17.0 * t))

    def f(x):
        r = y - x[0] * np.exp(-x[1] * t)
        return 0.5 * np.sum(r ** 2)

    x = np.array([scale * 3.0, 0.7])
    for _ in range(50):  # Gauss-Newton
        e = np.exp(-x[1] * t)
        x = x - np.linalg.lstsq(np.stack([-e, x[0] * t * e], axis=1), y - x[0] * e, rcond=None)[0]
    return f, x, t, y


def test_a_cancelling_least_squares_gradient_at_its_optimum_passes():
    f, x, t, y = least_squares_at_its_optimum()
    e = np.exp(-x[1] * t)
    r = y - x[0] * e
    terms = np.abs(np.stack([r * e, r * x[0] * t * e]))
    gradient = np.stack([-(r * e).sum(), (r * x[0] * t * e).sum()])
    assert np.all(np.abs(gradient) < 1e-12 * terms.sum(axis=1))  # (the point: the sums cancel to rounding)
    rep = check_derivative(f, x)
    assert rep.passed and rep.verdict == "passed", rep.message
    assert rep.modes["max_abs_err"] > 2.2e-12  # the modes differ by more than eps-relative to the result


def test_the_error_line_names_the_entry_of_the_comparison_that_failed(monkeypatch):
    # reverse mode off by 1e-8 relative: finite differences cannot see it (rtol 1e-5), forward mode can
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.cos(x) * (1 + 1e-8)))
    result = invoke(make_runner(), "check", "-e", "sin(x)", "[0.5, 1.5]")
    message = assert_error(result, "check_failed", 1) if not result.stdout else result.stderr.strip()
    assert "reverse and forward mode disagree on 2 entries" in message, message
    assert "; worst df_dx[0, 0] (f[0], x[0]): reverse 0.877583 vs forward 0.877583" in message, message
    assert "finite differences" not in message.split("; worst")[1], message


def test_an_oscillatory_sum_is_inconclusive_with_its_own_exit_code():
    rep = check_derivative(lambda x: np.sum(np.sin(1e6 * x)), np.array([0.3, 0.7]))
    assert not rep.passed and rep.verdict == "inconclusive" and rep.unresolved_count == 2, rep.message
    assert rep.unresolved[0]["fd_error"] > rep.atol + rep.rtol * abs(rep.unresolved[0]["fd"])
    result = invoke(make_runner(), "check", "-e", "sum(sin(1e6 * x))", "[0.3, 0.7]")
    assert result.exit_code == 5 and result.error.kind == "check_inconclusive", result.stderr
    assert result.stdout.startswith("INCONCLUSIVE: ") and "inconclusive entries" in result.stdout, result.stdout
    doc = json.loads(invoke(make_runner(), "check", "-e", "sum(sin(1e6 * x))", "[0.3, 0.7]", "--format",
                            "json").stdout)
    assert doc["check"]["verdict"] == "inconclusive" and doc["passed"] is False
    assert [(e["row"], e["col"]) for e in doc["check"]["unresolved"]] == [(0, 0), (0, 1)]


def test_a_wrong_derivative_is_failed_not_inconclusive(monkeypatch):
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.sin(x)))
    monkeypatch.setitem(PRIMITIVES["np.sin"].jvps, 0, lambda ans, x, **kw: (lambda t: t * np.sin(x)))
    rep = check_derivative(lambda x: np.sin(x) * 1e3, np.array([0.5, 1.5]))
    assert rep.verdict == "failed" and rep.unresolved_count == 0


def test_abs_squared_at_0_is_not_excused_as_a_kink():
    # |u| ** 2 is smooth at 0 (its second derivative is 2): no one-sided differences disagree there
    rep = check_derivative(lambda x: np.sum(np.abs(x) ** 2), np.array([0.0, 1.0]), order=2)
    assert rep.convention_dependent_count == 0 and not rep.convention_dependent, rep.message
    assert all(not any(k["entries"].values()) for k in rep.kinks)
    if not rep.passed:  # (abs'(0) = 0 makes AD's entry 0 where the true value is 2: a failure, never excused)
        assert rep.verdict == "failed" and (rep.worst[0]["row"], rep.worst[0]["col"]) == (0, 0)
        assert rep.worst[0]["fd"] == pytest.approx(2.0)
    # abs itself is kinked at 0: still excused
    kinked = check_derivative(lambda x: np.sum(np.abs(x)) + x[1] ** 2 * x[2], np.array([0.0, 1.5, -2.0]), order=2)
    assert kinked.passed and [(e["row"], e["col"]) for e in kinked.convention_dependent] == [(0, 0)]


def test_an_excused_entry_is_listed_once():
    result = invoke(make_runner(), "check", "-e", "sum(abs(x)) + x[1] ** 2 * x[2]", "[0.0, 1.5, -2.0]",
                    "--order", "2")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("d2f_dx_dx[0, 0]") == 1, result.stdout


@pytest.mark.parametrize("n", [8, 16, 32])
def test_order_2_costs_o_n_gradient_evaluations(n):
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(np.sin(x[1:] * x[:-1])) + np.sum(x ** 3)

    rep = check_derivative(f, np.linspace(0.1, 1.0, n), order=2)
    assert rep.passed, rep.message
    # 4 gradients per column (steps +-h, +-h/2), 4 evaluations of f per gradient entry checked, and a few
    # recordings: linear in n, where differences of f for each Hessian entry would take 4 n^2
    assert len(calls) <= 8 * n + 12, len(calls)
    assert rep.fd["evaluations"] <= 8 * n + 4
