"""Errors: every kind with its exit code and its JSON object, and the exact wording of messages.

Elsewhere tests assert an error's kind and exit code (`helpers.assert_error`, or the exception's
class); what a message says, word for word, is pinned here only, in the tables below.
"""

from __future__ import annotations

import inspect
import json
import re
import signal

import pytest

import jaccli.errors
from jaccli.cli.commands import failures

from .helpers import assert_error
from .test_cli import MAN_PAGE, invoke, make_runner, sample, write


@pytest.fixture
def runner():
    return make_runner()


def _kinds() -> dict[str, set[int]]:
    """Every kind of the library's errors and of the command line's, with the exit codes it comes with."""
    classes = [c for c in vars(jaccli.errors).values() if inspect.isclass(c) and issubclass(c, jaccli.errors.JaccliError)]
    classes += [c for c in vars(failures).values() if inspect.isclass(c) and issubclass(c, failures.CliError)]
    kinds: dict[str, set[int]] = {}
    for c in classes:
        kinds.setdefault(c.kind, set()).add(c.exit_code)
    kinds["interrupted"] |= {128 + signal.SIGTERM, 128 + signal.SIGHUP}
    return kinds


# kind: its exit codes, in the order the documentation lists them
KINDS = {"check_failed": (1,), "usage": (2,), "no_command": (2,), "batch_mixing": (2,), "function_failed": (3,),
         "unsupported_operation": (3,), "escaped_tracing": (3,), "resource_limit": (4,), "internal": (70,),
         "interrupted": (130, 143, 129), "closed_pipe": (141,)}


def test_every_kind_is_snake_case_with_one_meaning_per_exit_code():
    assert _kinds() == {kind: set(codes) for kind, codes in KINDS.items()}
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)*", kind) for kind in KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_is_documented_with_its_exit_codes(kind):
    codes = ", ".join(str(c) for c in KINDS[kind])
    assert re.search(rf"^    {kind} +{codes}  ", jaccli.errors.__doc__, re.M), kind
    assert f'.BR {kind} " ({codes})"' in MAN_PAGE.read_text()


RAISES = "def f(x):\n    raise RuntimeError('boom')\n"
UNSUPPORTED = "import numpy as np\n\ndef f(x):\n    return np.fft.fft(x).real\n"
ESCAPES = "import math\n\ndef f(x):\n    return math.sin(x)\n"
IGNORES_Y = "def f(x, y):\n    return x * 2.0\n"


def _internal(monkeypatch):
    from jaccli.api.evaluator import Evaluator

    monkeypatch.setattr(Evaluator, "chunk", lambda self, needed, per_seed_elems: "3")  # jaccli's own TypeError


def _terminated(monkeypatch):
    import jaccli.cli.commands.run as run_module

    def run(*args, **kwargs):
        raise failures.Terminated(signal.SIGTERM, "SIGTERM")

    monkeypatch.setattr(run_module, "run", run)


# kind, exit code, the file f.py (or None), the arguments ({f}: f.py, {tmp}: the test's directory), a set-up
JSON_ERRORS = [
    ("usage", 2, None, ["jacobian", "-e", "x", "[1, 2]", "--rows", "5"], None),
    ("usage", 2, None, ["jacobian", "-e", "x", "[1, 2]", "--no-such-option"], None),
    ("usage", 2, None, ["no-such-command"], None),
    ("check_failed", 1, IGNORES_Y, ["jacobian", "{f}", "[1, 2, 3, 4]", "[3, 4, 5, 6]", "--wrt", "y", "--strict", "-o",
                                    "{tmp}/J.npy", "--max-memory", "100"], None),
    ("batch_mixing", 2, None, ["jacobian", "-e", "x * sum(x)", "[1, 2, 3]", "--batch-axis", "0"], None),
    ("function_failed", 3, RAISES, ["jacobian", "{f}", "0.5"], None),
    ("unsupported_operation", 3, UNSUPPORTED, ["jacobian", "{f}", "[1, 2]"], None),
    ("escaped_tracing", 3, ESCAPES, ["grad", "{f}", "0.5"], None),
    ("resource_limit", 4, None, ["jacobian", "-e", "x * 2", "[1, 2, 3]", "--max-memory", "1"], None),
    ("internal", 70, None, ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--mode", "reverse"],
     _internal),
    ("interrupted", 143, None, ["jacobian", "-e", "x", "0.5"], _terminated),
]


@pytest.mark.parametrize("kind, code, source, args, setup", JSON_ERRORS,
                         ids=[f"{case[0]}-{i}" for i, case in enumerate(JSON_ERRORS)])
@pytest.mark.parametrize("fmt", [[], ["--format", "json"], ["--format=JSON"]], ids=["text", "json", "JSON"])
def test_an_error_is_one_line_on_stderr_and_under_format_json_one_object_on_stdout(runner, tmp_path, monkeypatch,
                                                                                   kind, code, source, args, setup,
                                                                                   fmt):
    func = write(tmp_path, "f.py", source) if source else ""
    if setup is not None:
        setup(monkeypatch)
    result = invoke(runner, *(a.format(f=func, tmp=tmp_path) for a in args), *fmt)
    message = assert_error(result, kind, code)
    if fmt:
        assert json.loads(result.stdout) == {"schema": 1, "error": {"kind": kind, "message": message,
                                                                    "exit_code": code}}
    else:
        assert result.stdout == ""


def test_a_check_that_failed_after_its_report_prints_no_second_object(runner, tmp_path):
    func = write(tmp_path, "f.py", IGNORES_Y)
    result = invoke(runner, "jacobian", func, "[1, 2]", "[3]", "--strict", "--format", "json")
    assert result.exit_code == 1 and result.stderr.startswith("Error: --strict")
    assert json.loads(result.stdout)["passed"] is False  # the report, and nothing after it


def test_format_json_after_the_arguments_counts_and_after_double_dash_does_not(runner):
    after = invoke(runner, "jacobian", "-e", "x", "[1, 2]", "--rows", "5", "--format", "json")
    assert json.loads(after.stdout)["error"]["kind"] == "usage"
    dashed = invoke(runner, "jacobian", "-e", "x", "[1, 2]", "--rows", "5", "--", "--format", "json")
    assert dashed.exit_code == 2 and dashed.stdout == ""
    text = invoke(runner, "jacobian", "-e", "x", "[1, 2]", "--rows", "5", "--format", "json", "--format", "text")
    assert text.exit_code == 2 and text.stdout == ""  # the last --format wins, as click reads them


def test_jaccli_alone_is_no_command_and_prints_the_help(runner):
    result = invoke(runner)
    assert result.exit_code == 2 and result.error.kind == "no_command"
    assert result.stdout == "" and "Usage: " in result.stderr


def test_a_closed_pipe_prints_nothing_even_under_format_json(capsys):
    error = failures.ClosedPipe()
    error.json = True
    error.show()
    assert (error.kind, error.exit_code) == ("closed_pipe", 141)
    assert capsys.readouterr() == ("", "")
