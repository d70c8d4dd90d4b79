"""The command line finds NaN and inf after the fact: a finite result costs no monitor, a non-finite one is explained."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from jaccli.check.diagnostics import NonfiniteMonitor

from .test_cli import invoke, make_runner


@pytest.fixture
def watched(monkeypatch):
    """How many times a NonfiniteMonitor was switched on, and how many values it looked at."""
    counts = {"on": 0, "values": 0}
    enter, call = NonfiniteMonitor.__enter__, NonfiniteMonitor.__call__

    def counted_enter(self):
        counts["on"] += 1
        return enter(self)

    def counted_call(self, *args):
        counts["values"] += 1
        return call(self, *args)

    monkeypatch.setattr(NonfiniteMonitor, "__enter__", counted_enter)
    monkeypatch.setattr(NonfiniteMonitor, "__call__", counted_call)
    return counts


@pytest.mark.parametrize("command, args", [
    ("jacobian", ["-e", "sin(x) * x[::-1]", "[0.5, 1, 2]"]),
    ("jacobian", ["-e", "sin(x) * x[::-1]", "[0.5, 1, 2]", "--mode", "forward", "--rows", "0:2"]),
    ("hessian", ["-e", "sum(exp(x) * x)", "[0.5, 1, 2]"]),
    ("grad", ["-e", "sum(exp(x) * x)", "[0.5, 1, 2]"]),
    ("jvp", ["-e", "sin(x)", "[0.5, 1, 2]", "--vector", "[1, 0, 1]"]),
])
def test_a_finite_result_is_computed_without_the_monitor(watched, command, args):
    result = invoke(make_runner(), command, *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert watched == {"on": 0, "values": 0}
    assert json.loads(result.stdout)["nonfinite_origin"] is None


def test_nan_in_f_itself_is_explained_without_sweeping_again(watched):
    result = invoke(make_runner(), "jacobian", "-e", "log(x) * x", "[1, -1]")
    assert result.exit_code == 0
    assert "first non-finite value: np.log produced nan in the forward evaluation (element (1,))" in result.stderr
    assert watched["on"] == 0


def test_inf_from_a_sweep_is_explained_by_computing_it_again_with_the_monitor(watched):
    result = invoke(make_runner(), "jacobian", "-e", "sqrt(x) + x", "[0, 1]", "--mode", "reverse",
                    "--format", "json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert watched["on"] == 1 and watched["values"] > 0
    assert doc["nonfinite_origin"]["op"] == "np.sqrt" and doc["nonfinite_origin"]["sweep"] == "reverse sweep"
    # The result shown is the first evaluation's: d(sqrt(x) + x)/dx = 1 / (2 sqrt(x)) + 1.
    J = np.array([[np.inf if v == "inf" else v for v in row] for row in doc["blocks"]["df_dx"]["data"]])
    assert_allclose(J, np.diag([np.inf, 1.5]))

