"""The CI-grade checks and diagnostics of the command line: check, --compare, --strict, non-finite values,
--fail-on-nonfinite, safe expressions, info and ops.

Every failure mode asserts its exit code, its message, and that a pre-existing -o target is
left byte for byte as it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

from .helpers import assert_error
from .test_cli import MAN_PAGE, ROOT, invoke, make_runner, report, sample, write

KNOWN = b"known bytes: must survive a failed run\n"


@pytest.fixture
def runner() -> CliRunner:
    return make_runner()


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """An -o target that already holds known bytes."""
    path = tmp_path / "J.npy"
    path.write_bytes(KNOWN)
    return path


def assert_fails(result: Result, kind: str, code: int) -> None:
    """Exit `code` with an error of `kind`, whose `Error: ...` line ends stderr (after the check's report lines);
    its wording is pinned in test_error_messages.py."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stderr.rstrip().splitlines()[-1].startswith("Error: "), result.stderr
    assert result.error.kind == kind, result.error.kind


def assert_untouched(path: Path) -> None:
    assert path.read_bytes() == KNOWN


MODEL = """\
import numpy as np


def logsq(x):
    y = np.log(x)
    return y * y


def root(x):
    return np.sqrt(x) * 2.0


def uses_global(x, y):
    return x * 2.0 + OFFSET


OFFSET = np.array([1.0, 2.0])


def raises(x):
    y = x * 2.0
    raise RuntimeError("solver diverged")


def strings(x):
    return ["a", "b"]


def add(x, y):
    return x + y


def spectrum(x):
    return np.unwrap(x)


def kinked(x):
    return np.abs(x) * 2.0 + np.maximum(x, 0.0)


def wave(x):
    return np.sin(x) * x


def ignores(x, y):
    return np.sum(x ** 2)


def counts(x):
    return np.sum(x.astype(int)) * 1.0


def tied(x):
    return np.sin(x) + np.max(x, axis=1, keepdims=True)


def near_tie(x):
    return np.maximum(np.sin(x), np.cos(x))
"""


@pytest.fixture
def model(tmp_path: Path):
    path = write(tmp_path, "model.py", MODEL)
    return lambda name: f"{path}:{name}"


# ---------------------------------------------------------------- non-finite values


def test_nan_from_log_of_a_negative_number_names_np_log_and_the_line(runner, model):
    result = invoke(runner, "jacobian", model("logsq"), "[1, -1]", "--format", "json")
    doc = report(result)
    assert "Warning: dlogsq_dx holds 1 NaN (of 4 entries), at (logsq[1], x[1])" in result.stderr
    assert "np.log produced nan in the forward evaluation at " in result.stderr and "model.py:5" in result.stderr
    assert doc["nonfinite"] == [{"block": "dlogsq_dx", "shape": [2, 2], "nan": 1, "posinf": 0, "neginf": 0,
                                 "entries": 4, "first": [[1, 1]], "labels": ["logsq[1], x[1]"]}]
    origin = doc["nonfinite_origin"]
    assert (origin["op"], origin["sweep"], origin["line"]) == ("np.log", "forward evaluation", 5)
    assert origin["file"].endswith("model.py")


def test_fail_on_nonfinite_exits_1_and_leaves_the_output_file(runner, model, target):
    result = invoke(runner, "jacobian", model("logsq"), "[1, -1]", "--fail-on-nonfinite", "-o", str(target))
    assert_fails(result, "check_failed", 1)
    assert_untouched(target)
    # The error line says it all: the same facts are not repeated as warnings.
    assert "Warning: dlogsq_dx holds" not in result.stderr


def test_inf_from_sqrt_at_zero_is_traced_to_the_reverse_sweep(runner, model, target):
    result = invoke(runner, "jacobian", model("root"), "[0, 1]", "--mode", "reverse", "--fail-on-nonfinite",
                    "-o", str(target))
    assert_fails(result, "check_failed", 1)
    assert_untouched(target)


def test_inf_in_forward_mode_is_traced_to_the_forward_sweep(runner, model):
    result = invoke(runner, "jacobian", model("root"), "[0, 1]", "--mode", "forward")
    assert result.exit_code == 0
    assert "np.sqrt produced inf in the forward sweep" in result.stderr


def test_nonfinite_gradient_and_hessian_are_reported_too(runner, model):
    grad = invoke(runner, "grad", "-e", "sum(sqrt(x))", "[0, 1]", "--fail-on-nonfinite")
    assert_fails(grad, "check_failed", 1)
    hess = invoke(runner, "hessian", "-e", "sum(sqrt(x))", "[0, 1]", "--format", "json")
    doc = report(hess)
    assert doc["nonfinite"][0]["block"] == "d2f_dx_dx" and doc["nonfinite_origin"]["op"] == "np.sqrt"
    # An expression has no file: no line of jaccli's own is named instead.
    assert doc["nonfinite_origin"]["file"] is None


def test_quiet_keeps_nonfinite_warnings_off_stderr_but_in_the_report(runner, model):
    result = invoke(runner, "jacobian", model("logsq"), "[1, -1]", "-q", "--format", "json")
    assert result.stderr == ""
    assert any("np.log produced nan" in w for w in report(result)["warnings"])


def test_finite_results_have_an_empty_nonfinite_report(runner):
    doc = report(invoke(runner, "jacobian", "-e", "x ** 2", "[1, 2]", "--format", "json"))
    assert doc["nonfinite"] == [] and doc["nonfinite_origin"] is None and doc["passed"] is None


@pytest.mark.parametrize("command", ["jacobian", "grad", "check"])
def test_a_finite_result_passes_fail_on_nonfinite(runner, command):
    # The man page defines "passed" as whether every check asked for (--fail-on-nonfinite among
    # them) passed.
    doc = report(invoke(runner, command, "-e", "sum(x ** 2)", "[1, 2]", "--format", "json", "--fail-on-nonfinite"))
    assert doc["nonfinite"] == [] and doc["passed"] is True
    failed = invoke(runner, command, "-e", "sum(sqrt(x))", "[0, 1]", "--format", "json", "--fail-on-nonfinite")
    assert failed.exit_code == 1 and json.loads(failed.stdout)["passed"] is False


# ---------------------------------------------------------------- silent zeros and --strict


def test_disconnected_input_is_a_warning_without_strict(runner, model, tmp_path):
    target = tmp_path / "J.npz"
    target.write_bytes(KNOWN)
    result = invoke(runner, "jacobian", model("uses_global"), "[1, 2]", "[3, 4]", "-o", str(target), "--format",
                    "json")
    assert result.exit_code == 0
    message = ("duses_global_dy is structurally zero: output uses_global does not depend on input y (no path in "
               "the recorded computation); a common cause is a function that uses a global variable instead of "
               "its argument")
    assert f"Warning: {message}" in result.stderr
    assert json.loads(result.stdout)["warnings"] == [message]
    with np.load(target) as written:  # a warning is not a failure
        assert np.array_equal(written["duses_global_dy"], np.zeros((2, 2)))


def test_disconnected_input_fails_with_strict_naming_output_and_input(runner, model, tmp_path):
    target = tmp_path / "J.npz"  # (two inputs: a .npz holds both blocks; a .npy is refused before f runs)
    target.write_bytes(KNOWN)
    result = invoke(runner, "jacobian", model("uses_global"), "[1, 2]", "[3, 4]", "--strict", "-o", str(target))
    assert_fails(result, "check_failed", 1)
    assert_untouched(target)


def test_failed_strict_still_prints_the_result_and_the_json_verdict(runner, model, tmp_path):
    # --compare and --fail-on-nonfinite print the report, then exit 1.
    target = tmp_path / "J.npz"
    target.write_bytes(KNOWN)
    result = invoke(runner, "jacobian", model("uses_global"), "[1, 2]", "[3, 4]", "--strict", "-o", str(target),
                    "--format", "json")
    assert_fails(result, "check_failed", 1)
    doc = json.loads(result.stdout)
    assert doc["passed"] is False and doc["strict"] == {
        "passed": False, "disconnected": [{"output": "uses_global", "input": "y", "block": "duses_global_dy"}]}
    assert doc["output"] == str(target) and doc["blocks"]["duses_global_dx"]["connected"] is True
    assert_untouched(target)
    text = invoke(runner, "hessian", model("ignores"), "[1, 2]", "[3]", "--strict", "--format", "text")
    assert_fails(text, "check_failed", 1)
    assert text.stdout == invoke(runner, "hessian", model("ignores"), "[1, 2]", "[3]", "--format", "text").stdout
    assert text.stdout.startswith("# d2ignores_dx_dx shape=2x2\n2.0 0.0\n0.0 2.0\n")


def test_passed_strict_is_a_verdict_in_the_json_report(runner):
    doc = report(invoke(runner, "jacobian", "-e", "x * y", "[1, 2]", "[3, 4]", "--strict", "--format", "json"))
    assert doc["strict"] == {"passed": True, "disconnected": []} and doc["passed"] is True
    plain = report(invoke(runner, "jacobian", "-e", "x * y", "[1, 2]", "[3, 4]", "--format", "json"))
    assert plain["strict"] is None and plain["passed"] is None


def test_check_with_failed_strict_prints_its_report_opening_with_failed(runner, model):
    result = invoke(runner, "check", model("uses_global"), "[1, 2]", "[3, 4]", "--strict", "--format", "text")
    assert_fails(result, "check_failed", 1)
    lines = result.stdout.splitlines()
    assert lines[0] == "FAILED: --strict: uses_global does not depend on y (rtol=1e-05, atol=1e-07)"
    assert "--strict:           FAILED: duses_global_dy is structurally zero (uses_global does not depend on y)" \
        in lines
    doc = json.loads(invoke(runner, "check", model("uses_global"), "[1, 2]", "[3, 4]", "--strict", "--format",
                            "json").stdout)
    assert doc["passed"] is False and doc["check"]["passed"] is True and doc["strict"]["passed"] is False
    passed = invoke(runner, "check", "-e", "x * y", "[1, 2]", "[3, 4]", "--strict", "--format", "text")
    assert passed.exit_code == 0 and passed.stdout.startswith("passed: ")
    assert "--strict:           every output depends on every differentiated input" in passed.stdout


def test_failed_strict_on_a_result_to_stream_writes_nothing(runner, model, tmp_path):
    target = tmp_path / "J.npy"
    target.write_bytes(KNOWN)
    func = write(tmp_path, "twice.py", "def f(x, y):\n    return x * 2.0\n")
    result = invoke(runner, "jacobian", func, "[1, 2, 3, 4]", "[3, 4, 5, 6]", "--wrt", "y", "--strict", "-o",
                    str(target), "--max-memory", "100", "--format", "json")
    assert_untouched(target)  # (streamed, the result would be written while it is computed)
    assert_fails(result, "check_failed", 1)
    assert_error(result, "check_failed", 1)  # nothing on stdout but the error object of --format json
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_strict_hessian_names_f_when_f_ignores_an_input(runner, model):
    assert invoke(runner, "hessian", "-e", "sum(x ** 2)", "[1, 2]", "--strict").exit_code == 0
    ignored = invoke(runner, "hessian", model("ignores"), "[1, 2]", "[3]", "--strict")
    assert_fails(ignored, "check_failed", 1)
    separable = invoke(runner, "hessian", "-e", "sum(x ** 2) + sum(y ** 3)", "[1, 2]", "[3]", "--strict")
    assert_fails(separable, "check_failed", 1)


def test_an_input_used_only_through_an_integer_cast_is_named_with_its_line(runner, model, target):
    line = MODEL.splitlines().index("    return np.sum(x.astype(int)) * 1.0") + 1
    cast = "x is used only through astype at {}:%d, whose integer or boolean result carries no derivative" % line
    result = invoke(runner, "jacobian", model("counts"), "[1.5, 2.5]")
    assert result.exit_code == 0
    assert "dcounts_dx is structurally zero" in result.stderr
    assert "global variable" not in result.stderr  # the real reason, not the usual guess
    site = model("counts").rsplit(":", 1)[0]
    assert cast.format(site) in result.stderr
    grad = invoke(runner, "grad", model("counts"), "[1.5, 2.5]")
    assert cast.format(site) in grad.stderr
    for command in ("jacobian", "hessian"):
        strict = invoke(runner, command, model("counts"), "[1.5, 2.5]", "--strict", "-o", str(target))
        assert_fails(strict, "check_failed", 1)
        assert_untouched(target)


def test_all_zero_gradient_of_a_global_closure_is_reported(runner, model):
    result = invoke(runner, "vjp", model("uses_global"), "[1, 2]", "[3, 4]", "--vector", "[1, 1]")
    assert result.exit_code == 0
    assert "vjp_y is structurally zero: output uses_global does not depend on input y" in result.stderr
    assert "vjp_x is structurally zero" not in result.stderr


# ---------------------------------------------------------------- failures of the function and its inputs


def test_function_that_raises_is_exit_3_with_its_line(runner, model, target):
    result = invoke(runner, "jacobian", model("raises"), "[1, 2]", "-o", str(target))
    assert_fails(result, "function_failed", 3)
    assert_untouched(target)


@pytest.mark.parametrize("command, extra", [("jacobian", ()), ("hessian", ()), ("grad", ()), ("check", ()),
                                            ("info", ()), ("jvp", ("--vector", "[1, 1]")),
                                            ("vjp", ("--vector", "[1]")), ("hvp", ("--vector", "[1, 1]"))])
def test_function_returning_an_empty_tuple_is_exit_3_for_every_command(runner, tmp_path, command, extra):
    func = write(tmp_path, "empty.py", "def f(x):\n    return ()\n")
    result = invoke(runner, command, func, "[1, 2]", *extra)
    assert_fails(result, "function_failed", 3)


def test_function_returning_a_list_of_strings_is_exit_3(runner, model, target):
    result = invoke(runner, "jacobian", model("strings"), "[1, 2]", "-o", str(target))
    assert_fails(result, "function_failed", 3)
    assert_untouched(target)


def test_pickled_object_array_is_exit_2(runner, tmp_path, target):
    np.save(tmp_path / "obj.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    result = invoke(runner, "jacobian", "-e", "x * 2", str(tmp_path / "obj.npy"), "-o", str(target))
    assert_fails(result, "usage", 2)
    assert_untouched(target)


def test_truncated_npy_is_exit_2(runner, tmp_path, target):
    np.save(tmp_path / "full.npy", np.arange(10.0))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-20])
    result = invoke(runner, "jacobian", "-e", "x * 2", str(tmp_path / "cut.npy"), "-o", str(target))
    assert_fails(result, "usage", 2)
    assert_untouched(target)


def test_shape_mismatch_between_inputs_is_exit_2(runner, model, tmp_path):
    target = tmp_path / "J.npz"  # (two inputs: a .npz holds both blocks; a .npy is refused before f runs)
    target.write_bytes(KNOWN)
    result = invoke(runner, "jacobian", model("add"), "[1, 2, 3]", "[1, 2]", "-o", str(target))
    assert_fails(result, "usage", 2)
    assert_untouched(target)


def test_unsupported_numpy_function_is_exit_3_and_points_to_ops(runner, model, target):
    result = invoke(runner, "jacobian", model("spectrum"), "[1, 2, 3]", "-o", str(target))
    assert_fails(result, "unsupported_operation", 3)
    assert_untouched(target)


@pytest.mark.parametrize("command", ["check", "info"])
def test_failures_of_the_function_are_the_same_in_check_and_info(runner, model, command):
    assert_fails(invoke(runner, command, model("raises"), "[1, 2]"), "function_failed", 3)
    assert_fails(invoke(runner, command, model("spectrum"), "[1, 2]"), "unsupported_operation", 3)


# ---------------------------------------------------------------- safe expressions

ESCAPES = [
    "__import__('os').system('touch pwned')",
    "x.__class__",
    "().__class__.__bases__[0].__subclasses__()",
    "x.__class__.__mro__",
    "(lambda: x)()",
    "(lambda f: f)(x)",
    "[c for c in ().__class__.__bases__]",
    "np.load('x.npy')",
    "numpy.save('pwned.npy', x)",
    "open('pwned', 'w')",
    "eval('x')",
    "exec('x = 1')",
    "getattr(x, 'T')",
    "globals()",
    "__builtins__",
    "x.real",
    "sin(x, out=x)",
    "(y := x) * 2",
    "f'{x}'",
]


@pytest.mark.parametrize("expression", ESCAPES)
def test_expression_escapes_are_refused_with_exit_2(runner, tmp_path, target, monkeypatch, expression):
    monkeypatch.chdir(tmp_path)
    result = invoke(runner, "jacobian", "-e", expression, "x=[1, 2]", "-o", str(target))
    assert_fails(result, "usage", 2)
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]  # nothing was created
    assert_untouched(target)


@pytest.mark.parametrize("command", ["check", "info"])
def test_check_and_info_refuse_escapes_too(runner, command):
    assert_fails(invoke(runner, command, "-e", "x.__class__", "x=1"), "usage", 2)


@pytest.mark.parametrize("command", ["check", "info", "jacobian"])
def test_help_says_a_py_func_runs_with_the_users_rights(runner, command):
    text = " ".join(invoke(runner, command, "--help").stdout.split())
    assert "jaccli runs the file with your rights" in text and "-e EXPR is safe on untrusted text" in text


# ---------------------------------------------------------------- --compare


@pytest.fixture
def refs(tmp_path: Path) -> Path:
    """x**2 at [1, 2, 3] has the Jacobian diag(2, 4, 6): a right and a wrong reference."""
    right = np.diag([2.0, 4.0, 6.0])
    wrong = right.copy()
    wrong[1, 2] = 0.5
    np.save(tmp_path / "right.npy", right)
    np.save(tmp_path / "wrong.npy", wrong)
    np.savez(tmp_path / "blocks.npz", df_dx=np.diag([2.0, 0.0]), df_dy=np.array([[1.0], [1.0]]))
    return tmp_path


SQUARE = ("-e", "x ** 2", "[1, 2, 3]")


def test_compare_with_the_right_reference_passes_and_writes(runner, refs, target):
    result = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "right.npy"), "-o", str(target))
    assert result.exit_code == 0, result.stderr
    assert "passed: all 9 entries agree within rtol=1e-05, atol=1e-07" in result.stderr
    assert np.array_equal(np.load(target), np.diag([2.0, 4.0, 6.0]))


def test_compare_with_a_wrong_reference_fails_and_prints_the_worst_entry(runner, refs, target):
    result = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "wrong.npy"), "-o", str(target))
    assert_fails(result, "check_failed", 1)
    assert "  df_dx[1, 2] (f[1], x[2]): computed 0 vs reference 0.5 (abs err 0.5, rel err 1)" in result.stderr
    assert_untouched(target)


def test_compare_verdict_is_in_the_json_report(runner, refs):
    result = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "wrong.npy"), "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    cmp = doc["compare"]
    assert doc["passed"] is False and cmp["passed"] is False and cmp["mismatches"] == 1 and cmp["entries"] == 9
    assert set(cmp) == {"reference", "passed", "rtol", "atol", "entries", "mismatches", "max_abs_err", "max_rel_err",
                        "worst", "blocks"}
    assert cmp["worst"][0]["index"] == [1, 2] and cmp["worst"][0]["label"] == "f[1], x[2]"
    assert set(cmp["blocks"]["df_dx"]) >= {"passed", "mismatches", "worst", "max_abs_err"}


def test_compare_tolerances_decide(runner, refs):
    loose = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "wrong.npy"), "--atol", "0.6")
    assert loose.exit_code == 0
    assert_fails(invoke(runner, "jacobian", *SQUARE, "--rtol", "1e-3"), "usage", 2)

@pytest.mark.parametrize("value", ["nan", "inf"])
@pytest.mark.parametrize("option", ["--rtol", "--atol"])
def test_a_tolerance_that_is_not_finite_is_a_usage_error_not_a_pass(runner, refs, option, value):
    # with NaN every |a - b| <= atol + rtol |b| is false, so no entry would ever count as a mismatch
    wrong = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "wrong.npy"), option, value)
    assert_fails(wrong, "usage", 2)
    assert_fails(invoke(runner, "check", "-e", "exp(x)", "[1, 2]", option, value), "usage", 2)


def test_compare_npz_by_block_key(runner, refs):
    args = ("-e", "x ** 2 + y", "[1, 0]", "[5]", "--compare", str(refs / "blocks.npz"))
    assert invoke(runner, "jacobian", *args).exit_code == 0
    missing = invoke(runner, "jacobian", "-e", "x * z", "[1, 0]", "[5]", "--compare", str(refs / "blocks.npz"))
    assert_fails(missing, "usage", 2)


def test_compare_npz_mixing_unnamed_and_named_arrays_binds_like_a_python_call(runner, tmp_path):
    # An .npz of inputs binds np.savez(file, c, k=k) as f(c, k=k).
    args = ("-e", "x ** 2 + y", "[1, 0]", "[5]", "--compare")
    dx, dy = np.diag([2.0, 0.0]), np.array([[1.0], [1.0]])
    np.savez(tmp_path / "mixed.npz", dx, df_dy=dy)
    result = invoke(runner, "jacobian", *args, str(tmp_path / "mixed.npz"))
    assert result.exit_code == 0, result.stderr
    np.savez(tmp_path / "wrong.npz", dx, df_dy=dy + [[0.0], [1.0]])  # arr_0 is df_dx, so df_dy is the one off
    assert_fails(invoke(runner, "jacobian", *args, str(tmp_path / "wrong.npz")), "check_failed", 1)
    np.savez(tmp_path / "twice.npz", dy, df_dx=dx)  # arr_0 reaches df_dx, which is named too
    assert_fails(invoke(runner, "jacobian", *args, str(tmp_path / "twice.npz")), "usage", 2)
    np.savez(tmp_path / "three.npz", dx, dy, dy)
    assert_fails(invoke(runner, "jacobian", *args, str(tmp_path / "three.npz")), "usage", 2)
    np.savez(tmp_path / "both.npz", dx, dy)  # all unnamed, as before
    assert invoke(runner, "jacobian", *args, str(tmp_path / "both.npz")).exit_code == 0


@pytest.mark.parametrize("command, args", [
    ("jacobian", ("-e", "x ** 2 + y", "[1, 0]", "[5]")),
    ("jacobian", SQUARE),
    ("hessian", ("-e", "sum(x ** 3) * y", "[1, 2]", "[3]")),
])
def test_compare_against_a_golden_npz_that_jaccli_wrote(runner, tmp_path, command, args):
    golden = tmp_path / "golden.npz"
    assert invoke(runner, command, *args, "-o", str(golden)).exit_code == 0
    assert "__meta__" in np.load(golden).files
    result = invoke(runner, command, *args, "--compare", str(golden))
    assert result.exit_code == 0, result.stderr
    assert f"compare with {golden}: passed: all" in result.stderr


def test_compare_selection_against_the_full_block_or_the_selection(runner, refs):
    full = invoke(runner, "jacobian", *SQUARE, "--rows", "1:3", "--cols", "2", "--compare", str(refs / "wrong.npy"))
    assert_fails(full, "check_failed", 1)
    np.save(refs / "sel.npy", np.array([[0.0], [6.0]]))
    sel = invoke(runner, "jacobian", *SQUARE, "--rows", "1:3", "--cols", "2", "--compare", str(refs / "sel.npy"))
    assert sel.exit_code == 0, sel.stderr


@pytest.mark.parametrize("rows", ["2,1,0", "0,0,0", "::-1"])
def test_compare_a_reordering_of_all_rows_against_a_full_golden_file_or_its_own(runner, refs, tmp_path, rows):
    golden, own = tmp_path / "golden.npy", tmp_path / "own.npy"
    assert invoke(runner, "jacobian", *SQUARE, "-o", str(golden)).exit_code == 0
    assert invoke(runner, "jacobian", *SQUARE, "--rows", rows, "-o", str(own)).exit_code == 0
    # (--rows 0,0,0 of its own file: both readings are the same array, read as the full block)
    for ref, read_as in ((golden, "full"), (own, "full" if rows == "0,0,0" else "selection")):
        result = invoke(runner, "jacobian", *SQUARE, "--rows", rows, "--compare", str(ref), "--format", "json")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["compare"]["blocks"]["df_dx"]["read_as"] == read_as
        assert (f"read as the {'full block' if read_as == 'full' else 'selection'}" in result.stderr) \
            is not (ref == own and rows == "0,0,0")
    # read either way, a wrong golden file is still a mismatch
    np.save(tmp_path / "off.npy", np.load(golden) + 0.5)
    off = invoke(runner, "jacobian", *SQUARE, "--rows", rows, "--compare", str(tmp_path / "off.npy"))
    assert_fails(off, "check_failed", 1)


def test_compare_shape_mismatch_is_exit_2_naming_both_shapes(runner, refs, target):
    np.save(refs / "bad.npy", np.zeros((3, 4)))
    result = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "bad.npy"), "-o", str(target))
    assert_fails(result, "usage", 2)
    assert_untouched(target)


def test_compare_one_npy_with_several_blocks_is_exit_2(runner, refs):
    result = invoke(runner, "jacobian", "-e", "x * y", "[1, 2]", "[3, 4]", "--compare", str(refs / "right.npy"))
    assert_fails(result, "usage", 2)


def test_compare_a_hessian(runner, refs):
    np.save(refs / "H.npy", np.diag([6.0, 12.0]))
    assert invoke(runner, "hessian", "-e", "sum(x ** 3)", "[1, 2]", "--compare", str(refs / "H.npy")).exit_code == 0


def test_compare_refuses_a_streamed_result(runner, refs, tmp_path):
    result = invoke(runner, "jacobian", *SQUARE, "--compare", str(refs / "right.npy"), "--max-memory", "16",
                    "-o", str(tmp_path / "big.npy"))
    assert_fails(result, "usage", 2)
    assert not (tmp_path / "big.npy").exists()


# ---------------------------------------------------------------- check

SAMPLE_CHECKS = [
    ("robot_arm.py", ["robot_arm_q.npy"], 1),
    ("mlp.py", ["mlp_x.npy"], 1),
    ("rosenbrock.py", ["rosenbrock_x.npy"], 1),
    ("rosenbrock.py", ["rosenbrock_x.npy"], 2),
    ("kinetics.py", ["kinetics_inputs.npz"], 1),
    ("heat_pde.py", ["heat_pde_u.npy"], 1),
    ("logistic.py", ["logistic_w.npy", "logistic_X.csv", "logistic_y.txt"], 1),
    ("logistic.py", ["logistic_w.npy", "logistic_X.csv", "logistic_y.txt"], 2),
    ("softmax_xent.py", ["softmax_xent_z.npy", "softmax_xent_p.csv"], 1),
    ("softmax_xent.py", ["softmax_xent_z.npy", "softmax_xent_p.csv"], 2),
]


@pytest.mark.parametrize("func, inputs, order", SAMPLE_CHECKS, ids=[f"{f[:-3]}-{o}" for f, _, o in SAMPLE_CHECKS])
def test_check_passes_on_every_sample(runner, func, inputs, order):
    result = invoke(runner, "check", sample(func), *map(sample, inputs), "--order", str(order), "--format", "json")
    doc = report(result)
    assert doc["command"] == "check" and doc["passed"] is True and doc["check"]["passed"] is True
    assert doc["check"]["order"] == order and doc["check"]["max_abs_err"] < 1e-5


def test_check_text_report_opens_with_the_verdict(runner):
    result = invoke(runner, "check", sample("robot_arm.py"), sample("robot_arm_q.npy"))
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "passed: 9 entries agree with forward mode and finite differences (rtol=1e-05, atol=1e-07)"
    assert lines[1].startswith("check of f in ") and "robot_arm.py" in lines[1]
    assert lines[1].endswith(": Jacobian (order 1), 9 entries in 1 block")
    text = result.stdout
    for word in ("max abs error:", "max rel error:", "worst entries", "df_dq[", "f[", "q["):
        assert word in text


def test_check_fails_on_a_wrong_derivative_rule(runner, monkeypatch, model):
    from jaccli.engine.registry import PRIMITIVES

    # A buggy reverse rule for sin (sin instead of cos): forward mode and differences disagree with it.
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.sin(x)))
    result = invoke(runner, "check", model("wave"), "[0.5, 1.5]")
    assert_fails(result, "check_failed", 1)
    assert result.stdout.startswith("FAILED: ")


def test_check_within_a_step_of_a_kink_passes_and_names_the_kink(runner, model):
    # abs at 1e-9 (sin and cos at pi/4 + 1e-9) is not at its kink, but the finite-difference step
    # crosses it. Before: failed, exit 1, with AD against finite differences and no word of the kink.
    result = invoke(runner, "check", "-e", "abs(x) * 2", "[1e-9, 1]", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)["check"]
    assert doc["passed"] is True and [(e["row"], e["col"]) for e in doc["convention_dependent"]] == [(0, 0)]
    assert doc["convention_dependent"][0]["reason"].startswith("np.absolute at <expression>:1: the step crosses a "
                                                               "kink near x")
    result = invoke(runner, "check", model("near_tie"), f"[{np.pi / 4 + 1e-9!r}, 0.3]")
    assert result.exit_code == 0, result.stderr
    line = MODEL.splitlines().index("    return np.maximum(np.sin(x), np.cos(x))") + 1
    assert "mismatches not counted (the finite-difference step crosses a kink or a jump)" in result.stdout
    assert f"model.py:{line}: the step crosses a kink near x (not at x)" in result.stdout
    assert "check at a point farther from the kink" in result.stdout
    assert result.stdout.startswith("passed: ")


def test_check_at_kinks_passes_and_lists_convention_dependent_entries(runner, model):
    result = invoke(runner, "check", model("kinked"), "[0, 1, -2]")
    assert result.exit_code == 0, result.stderr
    assert "convention-dependent entries" in result.stdout
    assert "np.absolute at " in result.stdout and "abs'(0) = 0" in result.stdout
    assert "np.maximum at " in result.stdout and "ties split evenly" in result.stdout
    doc = report(invoke(runner, "check", model("kinked"), "[0, 1, -2]", "--format", "json"))
    entries = doc["check"]["kink_entries"]
    assert {(e["op"], e["row"], e["col"]) for e in entries} == {("np.absolute", 0, 0), ("np.maximum", 0, 0)}
    assert doc["check"]["kink_entry_count"] == 2 and all(e["site"].endswith(":38") for e in entries)


def test_batched_check_names_the_sample_of_each_convention_dependent_entry(runner, model):
    # Sample 1 ties for the max; sample 0 does not. Before: the entries were "dtied_dx[0, 0]" ("tied[0], x[0]").
    args = ("check", model("tied"), "[[1, 2, 3], [0, 0, 0]]", "--batch-axis", "0")
    result = invoke(runner, *args)
    assert result.exit_code == 0, result.stderr
    # (listed once: an entry whose mismatch the tie excuses is in the table of mismatches not counted, with its values)
    assert re.search(r"dtied_dx\[1, 0, 2\]  tied\[1,0\], x\[1,2\] .* np.max at ", result.stdout)
    doc = report(invoke(runner, *args, "--format", "json"))["check"]
    assert doc["kink_entry_count"] == 9
    assert [(e["sample"], e["row"], e["col"], e["label"]) for e in doc["kink_entries"][:2]] \
        == [(1, 0, 0, "tied[1,0], x[1,0]"), (1, 0, 1, "tied[1,0], x[1,1]")]
    assert {e["sample"] for e in doc["convention_dependent"]} == {1}


def test_check_a_slice_and_a_hessian(runner):
    doc = report(invoke(runner, "check", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:4",
                        "--cols", "0:3", "--format", "json"))
    assert doc["check"]["blocks"] == [{**doc["check"]["blocks"][0], "name": "df_du", "shape": [4, 3], "entries": 12}]
    assert doc["blocks"]["df_du"]["rows"] == [0, 1, 2, 3]
    hess = report(invoke(runner, "check", "-e", "sum(sin(x) * y)", "[0.5, 1]", "[2, 3]", "--order", "2",
                         "--format", "json"))
    assert [b["name"] for b in hess["check"]["blocks"]] == ["d2f_dx_dx", "d2f_dx_dy", "d2f_dy_dx", "d2f_dy_dy"]
    assert hess["check"]["gradient"]["passed"] is True


def test_check_order_2_of_a_vector_function_is_a_usage_error(runner):
    assert_fails(invoke(runner, "check", "-e", "x ** 2", "[1, 2]", "--order", "2"), "usage", 2)


def test_check_json_report_keys(runner):
    doc = report(invoke(runner, "check", "-e", "sin(x)", "[0.5, 1]", "--format", "json"))
    assert {"schema", "command", "function", "inputs", "blocks", "mode", "sweeps", "timings", "warnings",
            "passed", "check", "nonfinite", "nonfinite_origin"} <= set(doc)
    assert doc["mode"] == "reverse+forward" and doc["sweeps"] >= 3 and "check_s" in doc["timings"]
    assert "data" not in doc["blocks"]["df_dx"]
    assert set(doc["check"]) == {"passed", "order", "rtol", "atol", "max_abs_err", "max_rel_err", "worst", "modes",
                                 "blocks", "kinks", "kink_entries", "kink_entry_count", "convention_dependent",
                                 "convention_dependent_count", "nan", "nan_count", "gradient", "fd", "unrepeatable",
                                 "nested_derivative", "entries", "verdict", "unresolved", "unresolved_count"}
    worst = doc["check"]["worst"][0]
    assert {"block", "row", "col", "label", "ad", "fd", "abs_err", "rel_err", "allowed", "mode"} <= set(worst)


def test_check_tolerances_and_nonfinite(runner):
    tight = invoke(runner, "check", "-e", "exp(x)", "[1, 2]", "--rtol", "0", "--atol", "0")
    assert tight.exit_code in (0, 1)  # either way a verdict, never an error
    assert tight.stdout.split(":")[0] in ("passed", "FAILED")
    result = invoke(runner, "check", "-e", "sqrt(x)", "[0, 1]", "--fail-on-nonfinite")
    assert_fails(result, "check_failed", 1)


# ---------------------------------------------------------------- info


INFO_KEYS = {"schema", "jaccli", "command", "argv", "function", "inputs", "wrt", "dtype", "batch_axis", "order",
             "outputs", "operation_count", "functions", "blocks", "nbytes", "disconnected", "kinks", "mode",
             "chunk_size", "sweeps", "timings", "warnings"}
INFO_BLOCK_KEYS = {"kind", "output", "input", "shape", "matrix_shape", "dtype", "nbytes", "connected", "mode",
                   "chunk_size", "sweeps"}


def test_info_json_keys_and_values(runner, model):
    doc = report(invoke(runner, "info", model("uses_global"), "[1, 2]", "[3, 4, 5]", "--format", "json"))
    assert set(doc) == INFO_KEYS and doc["schema"] == 1 and doc["command"] == "info"
    assert doc["outputs"] == {"uses_global": {"shape": [2], "dtype": "float64"}}
    assert doc["functions"] == {"np.add": 1, "np.multiply": 1} and doc["operation_count"] == 2
    blocks = doc["blocks"]
    assert set(blocks) == {"duses_global_dx", "duses_global_dy"}
    assert set(blocks["duses_global_dx"]) == INFO_BLOCK_KEYS
    assert blocks["duses_global_dy"]["shape"] == [2, 3] and blocks["duses_global_dy"]["nbytes"] == 48
    assert blocks["duses_global_dy"]["connected"] is False
    assert doc["disconnected"] == [{"output": "uses_global", "input": "y", "block": "duses_global_dy"}]
    assert doc["nbytes"] == 32 + 48 and set(doc["timings"]) == {"load_s", "record_s", "total_s"}


def test_info_plan_matches_what_jacobian_does(runner):
    args = (sample("kinetics.py"), sample("kinetics_inputs.npz"), "--format", "json")
    info = report(invoke(runner, "info", *args))
    done = report(invoke(runner, "jacobian", *args))
    assert info["sweeps"] == done["sweeps"] == 1 and info["mode"] == done["mode"] == "reverse"
    assert [b["mode"] for b in info["blocks"].values()] == ["reverse", "cached"]
    wide = report(invoke(runner, "info", "-e", "outer(x, x)", "[1, 2]", "--format", "json"))
    assert wide["mode"] == "forward" and wide["blocks"]["df_dx"]["matrix_shape"] == [4, 2]


def test_info_order_2_lists_hessian_blocks_and_kinks(runner):
    doc = report(invoke(runner, "info", "-e", "sum(abs(x) * y)", "[0, 1]", "[2, 3]", "--order", "2",
                        "--format", "json"))
    assert list(doc["blocks"]) == ["d2f_dx_dx", "d2f_dx_dy", "d2f_dy_dx", "d2f_dy_dy"]
    assert doc["blocks"]["d2f_dx_dx"]["mode"] == "forward-over-reverse"
    assert doc["outputs"] == {"f": {"shape": [], "dtype": "float64"}}
    assert [k["op"] for k in doc["kinks"]] == ["np.absolute"]


def test_info_text_in_a_pipe(runner):
    result = invoke(runner, "info", sample("robot_arm.py"), sample("robot_arm_q.npy"))
    assert result.exit_code == 0 and "\x1b[" not in result.stdout
    for text in ("inputs:", "outputs:", "jacobian blocks:", "df_dq  (3, 3)", "72 B", "NumPy functions used:",
                 "np.cos", "disconnected (output, input) pairs:", "jacobian would use: reverse mode, chunk size 3"):
        assert text in result.stdout, text


def test_info_table_on_a_terminal(runner, monkeypatch):
    result = invoke(runner, "info", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format", "table")
    assert result.exit_code == 0 and "df_dq" in result.stdout and "np.cos" in result.stdout


@pytest.mark.parametrize("columns", ["30", "40", "60", "80"])
def test_info_table_never_cuts_names_dtypes_modes_or_shapes(runner, columns):
    result = invoke(runner, "info", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--format", "table",
                    env={"COLUMNS": columns})
    assert result.exit_code == 0 and "…" not in result.stdout, result.stdout
    lines = result.stdout.splitlines()
    for text in ("df_du", "(32, 32)", "32 x 32", "float64", "reverse", "connected", "(8.0 KiB)", "np.concatenate"):
        assert any(text in line for line in lines), (columns, text, result.stdout)
    if columns == "80":  # the man page's example keeps its table on a standard terminal
        assert any(line.startswith("df_du  (32, 32)  32 x 32  float64") for line in lines), result.stdout


@pytest.mark.parametrize("columns", ["40", "80", "120"])
def test_ops_table_never_cuts_a_name(runner, columns):
    from jaccli.api.ops_table import ops_table

    result = invoke(runner, "ops", "--family", "linalg", "--format", "table", "--no-color", env={"COLUMNS": columns})
    assert result.exit_code == 0 and "…" not in result.stdout
    words = result.stdout.split()
    for row in ops_table():
        if row["family"] == "linalg":
            assert row["name"] in words, (columns, row["name"])


@pytest.mark.parametrize("columns", ["20", "30", "35", "40", "80"])
def test_jacobian_table_prints_every_number_whole(runner, tmp_path, columns):
    func = write(tmp_path, "wide.py", "import numpy as np\ndef f(x):\n"
                 "    return x * np.array([1.23456789e6, -9.87654321e-7, 5.5e12])\n")
    result = invoke(runner, "jacobian", func, "[1.0, 2.0, 3.0]", "--format", "table", env={"COLUMNS": columns})
    assert result.exit_code == 0
    assert [w for w in result.stdout.split() if "…" in w.strip("│") and w.strip("│") != "…"] == []
    assert "1.23457e+06" in result.stdout and "float64" in result.stdout and "(3, 3)" in result.stdout


# ---------------------------------------------------------------- ops


def test_ops_lists_every_registry_entry(runner):
    from jaccli.api.ops_table import ops_table

    result = invoke(runner, "ops")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["name", "family", "kind", "reverse", "forward", "order", "blocks", "notes"]
    names = [row["name"] for row in ops_table()]
    assert len(lines) == len(names) + 1
    assert all(line.startswith(name + "  ") for line, name in zip(lines[1:], names))


def test_ops_json_and_family_filter(runner):
    doc = report(invoke(runner, "ops", "--format", "json", "--family", "linalg,reductions"))
    assert set(doc) == {"schema", "jaccli", "command", "argv", "family", "names", "count", "columns", "operations"}
    assert doc["command"] == "ops" and doc["family"] == ["linalg", "reductions"]
    assert doc["count"] == len(doc["operations"]) > 0
    assert {r["family"] for r in doc["operations"]} == {"linalg", "reductions"}
    assert set(doc["operations"][0]) == set(doc["columns"]) == {"name", "family", "kind", "reverse", "forward",
                                                                "max_order", "block_seeds", "notes"}
    assert "np.unwrap" not in {r["name"] for r in doc["operations"]}


def test_report_formats_and_families_take_their_keywords_in_any_case(runner):
    assert report(invoke(runner, "check", "-e", "sin(x)", "[0.5, 1]", "--format", "JSON"))["passed"]
    assert report(invoke(runner, "info", "-e", "sin(x)", "[0.5, 1]", "--format", "Json"))["command"] == "info"
    doc = report(invoke(runner, "ops", "--format", "JSON", "--family", "LinAlg, Reductions"))
    assert doc["family"] == ["linalg", "reductions"]
    assert {r["family"] for r in doc["operations"]} == {"linalg", "reductions"}


def test_ops_names_filter_by_part_of_a_name_or_by_family(runner):
    from jaccli.api.ops_table import ops_table

    every = ops_table()
    doc = report(invoke(runner, "ops", "det", "SIN", "--format", "json"))
    assert doc["names"] == ["det", "sin"]
    assert [r["name"] for r in doc["operations"]] == [r["name"] for r in every
                                                      if "det" in r["name"].lower() or "sin" in r["name"].lower()]
    assert {"np.linalg.det", "np.sin", "np.arcsinh"} <= {r["name"] for r in doc["operations"]}
    family = report(invoke(runner, "ops", "reductions", "--format", "json"))
    assert {r["name"] for r in family["operations"]} >= {r["name"] for r in every if r["family"] == "reductions"}
    text = invoke(runner, "ops", "slogdet")
    assert text.exit_code == 0 and text.stdout.splitlines()[1].startswith("np.linalg.slogdet ")
    assert len(text.stdout.splitlines()) == 2


def test_ops_name_that_matches_nothing_says_so_and_lists_nothing(runner):
    result = invoke(runner, "ops", "unwrap", "--format", "json")
    assert result.exit_code == 0 and report(result)["operations"] == []
    assert "no supported NumPy function, method or operator matches unwrap" in result.stderr


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_ops_table_columns_fit_the_terminal(runner, columns):
    from jaccli.api.ops_table import ops_table

    result = invoke(runner, "ops", "--format", "table", "--no-color", env={"COLUMNS": str(columns)})
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    names = {row["name"] for row in ops_table()}
    # Only a name wider than the terminal goes beyond it (names are never cut).
    assert all(len(line.rstrip()) <= columns or line.strip() in names for line in lines)
    header = next(line for line in lines if line.startswith("name "))
    assert header.split()[0] == "name" and ("rev" in header.split() or columns < 60)


def test_ops_unknown_family_is_exit_2(runner):
    result = invoke(runner, "ops", "--family", "fourier")
    assert_error(result, "usage", 2)


def test_ops_table_renders(runner):
    result = invoke(runner, "ops", "--family", "elementwise", "--format", "table", "--no-color")
    assert result.exit_code == 0 and "np.sin" in result.stdout and "supported NumPy functions" in result.stdout


# ---------------------------------------------------------------- documentation of the new keys


def test_man_page_documents_the_new_commands_and_report_keys(runner):
    text = MAN_PAGE.read_text()
    for command in ("check", "info", "ops"):
        assert f".B jaccli {command}\n" in text
    info = report(invoke(runner, "info", "-e", "x * 2", "[1]", "--format", "json"))
    check = report(invoke(runner, "check", "-e", "x * 2", "[1]", "--format", "json"))
    ops = report(invoke(runner, "ops", "--format", "json", "--family", "shape"))
    section = text.split("\n.SH JSON REPORT\n")[1].split("\n.SH ")[0]
    keys = set(info) | set(info["blocks"]["df_dx"]) | set(check) | set(check["check"]) | set(ops)
    missing = sorted(k for k in keys if k not in section)
    assert not missing
    import jaccli.cli.commands.info as info_module
    import jaccli.cli.commands.report as report_module

    for key in set(info) | set(info["blocks"]["df_dx"]) | set(ops):
        assert f"``{key}``" in info_module.__doc__ or f"``{key}``" in report_module.__doc__, key
    for key in ("nonfinite", "nonfinite_origin", "compare", "strict", "passed", "check"):
        assert f"``{key}``" in report_module.__doc__, key


# ---------------------------------------------------------------- real runs of the installed jaccli


def test_installed_check_passes_on_a_sample_and_prints_the_verdict(tmp_path):
    from .test_cli_subprocess import jaccli

    done = jaccli("check", sample("mlp.py"), sample("mlp_x.npy"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.startswith("passed: ") and "\x1b[" not in done.stdout


def test_installed_compare_failure_exits_1_and_keeps_the_file(tmp_path):
    from .test_cli_subprocess import jaccli

    np.save(tmp_path / "hand.npy", np.array([[2.0, 0.0], [0.0, 3.0]]))  # d(x**2)/dx at [1, 2] is diag(2, 4)
    (tmp_path / "J.npy").write_bytes(KNOWN)
    done = jaccli("jacobian", "-e", "x ** 2", "[1, 2]", "--compare", "hand.npy", "-o", "J.npy", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert "df_dx[1, 1] (f[1], x[1]): computed 4 vs reference 3" in done.stderr
    assert done.stderr.splitlines()[-1].endswith("; J.npy was not written")
    assert (tmp_path / "J.npy").read_bytes() == KNOWN
    done = jaccli("jacobian", "-e", "sqrt(x)", "[0, 1]", "--fail-on-nonfinite", "-o", "J.npy", cwd=tmp_path)
    assert done.returncode == 1 and "np.sqrt produced inf in the forward sweep" in done.stderr
    assert (tmp_path / "J.npy").read_bytes() == KNOWN


def test_installed_ops_and_info_in_a_pipe(tmp_path):
    from .test_cli_subprocess import jaccli

    ops = jaccli("ops", "--family", "elementwise", cwd=tmp_path)
    assert ops.returncode == 0 and ops.stdout.startswith("name ") and "np.sin " in ops.stdout
    info = jaccli("info", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--format", "json", cwd=tmp_path)
    doc = json.loads(info.stdout)
    assert info.returncode == 0 and doc["blocks"]["df_du"]["nbytes"] == 32 * 32 * 8


def test_check_of_a_function_taking_a_derivative_without_create_graph_fails_and_says_where(runner, tmp_path):
    f = write(tmp_path, "nested.py", "import numpy as np\nimport jaccli\n\n"
                                     "def f(x):\n    return x + jaccli.grad(lambda z: np.sum(z ** 3), x)\n")
    result = invoke(runner, "check", f, "[1, 2, 3]", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["passed"] is False and doc["check"]["nested_derivative"] == f"{f}:5"
    assert doc["check"]["convention_dependent_count"] == 0
    assert f"Error: check failed: 3 of 9 entries differ from finite differences beyond rtol=1e-05, atol=1e-07; " \
           f"f takes a derivative at {f}:5 without create_graph=True" in result.stderr
    fixed = write(tmp_path, "fixed.py", "import numpy as np\nimport jaccli\n\n"
                                        "def f(x):\n    return x + jaccli.grad(lambda z: np.sum(z ** 3), x, "
                                        "create_graph=True)\n")
    assert invoke(runner, "check", fixed, "[1, 2, 3]").exit_code == 0


def test_check_of_a_function_with_noise_fails_and_says_why(runner, tmp_path):
    f = write(tmp_path, "noisy.py", "import numpy as np\nrng = np.random.default_rng(7)\n\n"
                                    "def f(x):\n    return np.sin(x) + 1e-6 * rng.standard_normal(x.shape)\n")
    result = invoke(runner, "check", f, "[0.1, 0.2, 0.3]", "--format", "json")
    assert result.exit_code == 1
    assert 0 < json.loads(result.stdout)["check"]["unrepeatable"] < 1e-4
    assert_fails(result, "check_failed", 1)


def test_compare_against_zeros_reports_the_absolute_error_and_no_relative_one(runner, tmp_path):
    np.save(tmp_path / "zeros.npy", np.zeros((2, 2)))
    result = invoke(runner, "jacobian", "-e", "sin(x)", "[1, 2]", "--compare", str(tmp_path / "zeros.npy"),
                    "--format", "json")
    assert_fails(result, "check_failed", 1)
    doc = json.loads(result.stdout)["compare"]
    assert doc["max_abs_err"] == np.cos(1.0) and doc["max_rel_err"] is None
    assert f"max abs error {np.cos(1.0):.3g}, no relative error: the reference is all zeros" in result.stderr
    assert "max rel error 0" not in result.stderr


def test_docs_json_page_names_every_key_of_every_report(runner):
    page = (ROOT / "docs" / "json.md").read_text()
    docs = [report(invoke(runner, "jacobian", "-e", "sin(x)", "[1, 2]", "--format", "json")),
            report(invoke(runner, "check", "-e", "sin(x)", "[1, 2]", "--format", "json")),
            report(invoke(runner, "info", "-e", "sin(x)", "[1, 2]", "--format", "json")),
            report(invoke(runner, "ops", "sin", "--format", "json"))]
    keys = {k for d in docs for k in d} | set(docs[0]["blocks"]["df_dx"]) | set(docs[0]["timings"]) \
        | set(docs[1]["check"]) | set(docs[2]["blocks"]["df_dx"]) | set(docs[3]["operations"][0])
    keys |= set(json.loads(invoke(runner, "jacobian", "-e", "x", "[1, 2]", "--rows", "5", "--format", "json").stdout)
                ["error"])
    assert sorted(k for k in keys if f"`{k}`" not in page and f'"{k}"' not in page) == []


def test_check_verdict_is_first_and_coloured_green_or_red(runner, monkeypatch):
    from .helpers import break_sin_away_from_zero

    passed = invoke(runner, "check", "-e", "sin(x)", "[1, 2]", "--color", "always")
    assert passed.exit_code == 0 and passed.stdout.startswith("\x1b[1;32mpassed: 4 entries agree")
    break_sin_away_from_zero(monkeypatch)
    failed = invoke(runner, "check", "-e", "sin(x) * y", "[1, 2]", "[3, 4]", "--color", "always")
    assert failed.exit_code == 1
    assert failed.stdout.startswith("\x1b[1;31mFAILED: 2 of 8 entries differ from finite differences")
    plain = invoke(runner, "check", "-e", "sin(x) * y", "[1, 2]", "[3, 4]", "--format", "table", "--no-color")
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("FAILED: 2 of 8 entries differ") and lines[2].startswith("worst entries")
    # The blocks table says FAILED with its count, passed otherwise; no "mismatches" column of zeros.
    assert any("FAILED: 2 mismatches" in line and line.startswith("dsin") is False for line in lines)
    assert "mismatches 0" not in plain.stdout and "mismatches" not in lines[lines.index("blocks") + 1]


def test_check_failed_by_nan_never_shows_zero_mismatches_beside_failed(runner):
    result = invoke(runner, "check", "-e", "sum(sqrt(x) + y)", "x=[-1.0, -2.0]", "y=[1.0, 2.0]", "--format", "text")
    assert result.exit_code == 1
    assert result.stdout.startswith("FAILED: 4 entries are NaN")
    lines = result.stdout.splitlines()
    block_rows = lines[lines.index("blocks:") + 2:]
    assert len(block_rows) == 2 and all(line.endswith("FAILED: NaN") for line in block_rows), result.stdout
    assert not any(" 0 " in line for line in block_rows)


def test_info_says_the_diagonal_sweep_in_words_of_mode(runner):
    result = invoke(runner, "info", "-e", "sin(x)", "[1, 2]", "--format", "text")
    assert "forward (diagonal)" in result.stdout
    assert "jacobian would use: forward mode (elementwise: the diagonal), chunk size 1, 1 sweep" in result.stdout


def test_a_passed_verdict_counts_only_the_entries_that_agree(runner, tmp_path):
    func = tmp_path / "kink.py"
    func.write_text("import numpy as np\n\ndef f(x):\n    return np.floor(x) + x ** 2\n")
    result = invoke(runner, "check", str(func), "[1.0, 2.5, 3.0]", "--format", "text")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == ("passed: 7 entries agree with forward mode and finite differences; 2 not "
                                             "counted: at or across a kink or a jump (below) (rtol=1e-05, atol=1e-07)")
