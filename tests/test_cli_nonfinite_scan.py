"""The command line finds NaN and inf after the fact: a finite result costs no monitor, a non-finite one is explained."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from jaccli.check.diagnostics import NonfiniteMonitor

from benchmarks.cli_cost import STENCIL, stencil_jacobian

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


def _stencil(tmp_path):
    """benchmarks.cli_cost's 5-point stencil f, and g = f + 2 sqrt(x) (whose derivative is inf at 0)."""
    path = tmp_path / "stencil.py"
    path.write_text(STENCIL + "\n\ndef g(x):\n    return f(x) + 2.0 * np.sqrt(x)\n")
    return path


@pytest.fixture
def scans(monkeypatch):
    """The result arrays scanned entry by entry for NaN and inf after their evaluation."""
    from jaccli.check import diagnostics

    seen = []
    surely = diagnostics._surely_finite

    def counted(arr):
        seen.append(arr.shape)
        return surely(arr)

    monkeypatch.setattr(diagnostics, "_surely_finite", counted)
    return seen


@pytest.mark.parametrize("extra", [[], ["--rows", "3:40"], ["--mode", "forward"], ["--format", "json"]])
def test_a_finite_structured_jacobian_is_proved_finite_by_its_sweeps_not_scanned(tmp_path, scans, watched, extra):
    x = np.linspace(0.1, 1.0, 36)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "J.npy"
    result = invoke(make_runner(), "jacobian", f"{_stencil(tmp_path)}:f", str(tmp_path / "x.npy"), "-o", str(out),
                    "--fail-on-nonfinite", *extra)
    assert result.exit_code == 0, result.stderr
    assert scans == [] and watched == {"on": 0, "values": 0}
    rows = slice(3, 40) if extra[:1] == ["--rows"] else slice(None)
    assert_allclose(np.load(out), stencil_jacobian(x)[rows], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("command, args", [
    ("jacobian", ["-e", "sin(x) * x", "[0.5, 1, 2]"]),  # elementwise: one diagonal sweep
    ("hessian", ["-e", "sum(exp(x) * x)", "[0.5, 1, 2]"]),
])
def test_other_finite_results_are_proved_finite_too(scans, command, args):
    result = invoke(make_runner(), command, *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert scans == [] and json.loads(result.stdout)["nonfinite"] == []


def test_inf_in_a_structured_jacobian_is_still_counted_and_explained_with_its_line(tmp_path, scans, watched):
    # d sqrt(x)/dx = inf at x = 0: in the reverse sweep, at g's line.
    x = np.linspace(0.0, 1.0, 25)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "J.npy"
    path = _stencil(tmp_path)
    line = path.read_text().splitlines().index("    return f(x) + 2.0 * np.sqrt(x)") + 1
    args = ["jacobian", f"{path}:g", str(tmp_path / "x.npy")]
    result = invoke(make_runner(), *args, "-o", str(out), "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(scans) == 1 and watched["on"] == 1
    assert doc["nonfinite"][0]["posinf"] == 1 and doc["nonfinite"][0]["first"] == [[0, 0]]
    origin = doc["nonfinite_origin"]
    assert (origin["op"], origin["sweep"], origin["line"]) == ("np.sqrt", "reverse sweep", line)
    with np.errstate(divide="ignore"):
        assert_allclose(np.load(out), stencil_jacobian(x) + np.diag(1.0 / np.sqrt(x)), rtol=1e-12)
    failed = invoke(make_runner(), *args, "-o", str(tmp_path / "K.npy"), "--fail-on-nonfinite")
    assert failed.exit_code == 1
    assert "np.sqrt produced inf in the reverse sweep at" in failed.stderr and f"stencil.py:{line}" in failed.stderr
    assert not (tmp_path / "K.npy").exists()


def test_entries_too_large_to_bound_are_scanned(scans):
    # Each entry is finite, but twice the largest is not: the sweeps prove nothing, the scan decides.
    result = invoke(make_runner(), "jacobian", "-e", "1e308 * x", "[1, 1.5]", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert len(scans) == 1 and json.loads(result.stdout)["nonfinite"] == []
