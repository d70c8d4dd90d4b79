"""Kinks at the point on the command line: where f evaluates an op exactly at its kink, every command that
differentiates says so (a warning per op, and the JSON report's `kinks`), as `jaccli info` lists them; a
point away from every kink says nothing; check names the entries instead (its own listing)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from .test_cli import invoke, make_runner, report

ABS_NOTE = "abs'(0) = 0 (the subgradient of least norm)"


@pytest.fixture
def runner():
    return make_runner()


def _kink_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Warning: ") and " at its kink here " in line]


def test_a_jacobian_at_abs_zero_warns_once_and_reports_the_kink(runner):
    result = invoke(runner, "jacobian", "-e", "abs(x) * x[1]", "x=[0.0, 2.0, -1.0]", "--format", "json")
    doc = report(result)
    # d/dx of |x| * x[1]: diag(sign(x)) * x[1] with sign(0) = 0 (the convention), plus |x| in column 1
    x = np.array([0.0, 2.0, -1.0])
    expected = np.diag(np.sign(x) * x[1])
    expected[:, 1] += np.abs(x)
    assert_allclose(np.array(doc["blocks"]["df_dx"]["data"], dtype=float), expected)
    assert doc["kinks"] == [{"op": "np.absolute", "site": "<expression>:1", "count": 1,
                             "notes": doc["kinks"][0]["notes"]}]
    assert doc["kinks"][0]["notes"].startswith(ABS_NOTE)
    lines = _kink_warnings(result.stderr)
    assert lines == [f"Warning: np.absolute at <expression>:1 is at its kink here (1 element): derivatives through "
                     f"it use jaccli's convention, {ABS_NOTE} (docs/conventions.md; `jaccli check` names the entries)"]
    assert doc["warnings"] == [line[len("Warning: "):] for line in lines]


def test_a_point_away_from_every_kink_says_nothing(runner):
    result = invoke(runner, "jacobian", "-e", "abs(x) + maximum(x, 0.5)", "x=[0.25, 2.0, -1.0]", "--format", "json")
    doc = report(result)
    assert doc["kinks"] == [] and doc["warnings"] == [] and _kink_warnings(result.stderr) == []


def test_a_hessian_names_each_kinked_op_with_second_derivatives_wording(runner):
    result = invoke(runner, "hessian", "-e", "sum(abs(x) ** 3) + maximum(x[0], x[1]) * x[2]", "x=[0.0, 0.0, 1.0]",
                    "--format", "json")
    doc = report(result)
    assert [(k["op"], k["count"]) for k in doc["kinks"]] == [("np.absolute", 2), ("np.maximum", 1)]
    lines = _kink_warnings(result.stderr)
    assert len(lines) == 2 and all("second derivatives through it use jaccli's convention" in line
                                   and "`jaccli check --order 2` names the entries" in line for line in lines)
    assert "(2 elements)" in lines[0] and "(1 element)" in lines[1]


@pytest.mark.parametrize("command, extra", [("grad", ()), ("vjp", ("--vector", "1")), ("jvp", ("--vector", "[1, 1]")),
                                            ("hvp", ("--vector", "[1, 1]"))])
def test_every_differentiating_command_warns_at_a_kink(runner, command, extra):
    result = invoke(runner, command, "-e", "sum(x * x) + max(x)", "x=[3.0, 3.0]", *extra, "--format", "json")
    doc = report(result)
    assert [(k["op"], k["count"]) for k in doc["kinks"]] == [("np.max", 1)]
    assert len(_kink_warnings(result.stderr)) == 1


def test_a_kink_in_a_file_is_named_by_its_line(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "relu.py").write_text("import numpy as np\n\n\ndef f(x):\n    return np.maximum(x, 0.0) ** 2\n")
    np.save(tmp_path / "x.npy", np.array([0.0, 1.0, -1.0, 0.0]))
    result = invoke(runner, "jacobian", "relu.py", "x.npy", "-o", "J.npy")
    assert result.exit_code == 0, result.stderr
    assert _kink_warnings(result.stderr) == [
        "Warning: np.maximum at relu.py:5 is at its kink here (2 elements): derivatives through it use jaccli's "
        "convention, ties split evenly: 1/2 to each argument (docs/conventions.md; `jaccli check` names the entries)"]
    assert_allclose(np.load(tmp_path / "J.npy"), np.diag([0.0, 2.0, 0.0, 0.0]))


def test_quiet_keeps_the_warning_off_stderr_and_in_the_report(runner):
    result = invoke(runner, "jacobian", "-e", "abs(x)", "x=[0.0, 1.0]", "--format", "json", "--quiet")
    doc = report(result)
    assert _kink_warnings(result.stderr) == [] and len(doc["kinks"]) == 1 and len(doc["warnings"]) == 1


def test_check_names_the_entries_instead(runner):
    result = invoke(runner, "check", "-e", "abs(x)", "x=[0.0, 1.0]", "--format", "json")
    doc = report(result)
    assert "kinks" not in doc and _kink_warnings(result.stderr) == []
    assert doc["check"]["kink_entry_count"] == 1


@pytest.mark.parametrize("command, text", [("jacobian", "abs(x)"), ("hessian", "sum(abs(x) ** 3)")])
def test_a_sparse_result_warns_and_reports_the_kink_too(runner, command, text):
    result = invoke(runner, command, "-e", text, "x=[0.0, 1.0, 0.0]", "--sparse", "--format", "json")
    doc = report(result)
    assert [(k["op"], k["count"]) for k in doc["kinks"]] == [("np.absolute", 2)]
    assert len(_kink_warnings(result.stderr)) == 1
