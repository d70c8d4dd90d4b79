"""Errors: every kind with its exit code and its JSON object, and the exact wording of messages.

Elsewhere tests assert an error's kind and exit code (`helpers.assert_error`, or the exception's
class); what a message says, word for word, is pinned here only, in the tables below.
"""

from __future__ import annotations

import errno
import inspect
import json
import os
import re
import signal
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import jaccli
import jaccli.cli.commands.run as run_module
import jaccli.errors
from jaccli.cli.commands import failures
from jaccli.cli.commands.messages import MAX_MESSAGE
from jaccli.io import atomic

from .helpers import assert_error, scale_recovered_column
from .test_cli import (BATCHED, MAN_PAGE, SAMPLES, _fail_writes, _npy_bytes, _refusing_to_read, _zip, invoke,
    make_runner, sample, write)
from .test_cli_checks import MODEL


@pytest.fixture
def runner():
    return make_runner()


def _kinds() -> dict[str, set[int]]:
    """Every kind of the library's errors and of the command line's, with the exit codes it comes with."""
    classes = [c for c in vars(jaccli.errors).values()
               if inspect.isclass(c) and issubclass(c, jaccli.errors.JaccliError)]
    classes += [c for c in vars(failures).values() if inspect.isclass(c) and issubclass(c, failures.CliError)]
    kinds: dict[str, set[int]] = {}
    for c in classes:
        kinds.setdefault(c.kind, set()).add(c.exit_code)
    kinds["interrupted"] |= {128 + signal.SIGTERM, 128 + signal.SIGHUP}
    return kinds


# kind: its exit codes, in the order the documentation lists them
KINDS = {"check_failed": (1,), "check_inconclusive": (5,), "usage": (2,), "no_command": (2,), "batch_mixing": (2,), "function_failed": (3,),
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
UNSUPPORTED = "import numpy as np\n\ndef f(x):\n    return np.unwrap(x)\n"
ESCAPES = "import math\n\ndef f(x):\n    return math.sin(x)\n"
IGNORES_Y = "def f(x, y):\n    return x * 2.0\n"


def _internal(monkeypatch):
    from jaccli.api.evaluator import Evaluator

    monkeypatch.setattr(Evaluator, "chunk", lambda self, needed, per_seed_elems: "3")  # jaccli's own TypeError


def _terminated(monkeypatch):
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


# ---------------------------------------------------------------- the wording of the command line's messages


class Case(NamedTuple):
    """A command line and the exact message it fails with (the line after "Error: ").

    In `args` and `expected`, {tmp} is the test's directory and {samples} the samples' one; in `expected`
    {any} is any text: NumPy's, Python's or click's words, which jaccli passes on but does not choose.
    `files` are written to {tmp} first (a str as text, an array with np.save); `chdir` runs in {tmp}.
    """

    args: list[str]
    expected: str
    files: dict[str, Any] | None = None
    env: dict[str, str] | None = None
    chdir: bool = False
    setup: Callable[[Any, Path], None] | None = None


def _sin_rule_gives_sin(monkeypatch) -> None:
    """A buggy reverse rule for sin (sin instead of cos): forward mode and differences disagree with it."""
    from jaccli.engine.registry import PRIMITIVES

    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.sin(x)))


def _sin_rule_gives_nan(monkeypatch) -> None:
    """A buggy reverse rule for sin that gives NaN: forward mode and differences are right."""
    from jaccli.engine.registry import PRIMITIVES

    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.nan))


def _out_of_memory(*args, **kwargs):
    raise MemoryError()


def _pickled(path: Path) -> None:
    np.save(path, np.array([1.0, 2.0], dtype=object), allow_pickle=True)


def _no_space(fd, data, position):
    raise OSError(errno.ENOSPC, "No space left on device")


def _no_new_file(monkeypatch, directory: Path) -> None:
    """No temporary file can be made in `directory` (root may write there: simulated)."""
    mkstemp = atomic.mkstemp

    def refuse(target):
        if target.parent.resolve() == directory.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(target.parent / "x.tmp"))
        return mkstemp(target)

    monkeypatch.setattr(atomic, "mkstemp", refuse)


def _no_scipy(monkeypatch, tmp: Path) -> None:
    import sys

    for name in ("scipy", "scipy.sparse", "scipy.io"):
        monkeypatch.setitem(sys.modules, name, None)


def _pattern_of(tmp: Path, expression: str, x: list) -> None:
    """P.npz: the pattern of the expression at x, as `jaccli sparsity -e EXPR x -o P.npz` saves it."""
    from jaccli.expr.expression import compile_expression

    jaccli.sparsity(compile_expression(expression), np.array(x)).save(tmp / "P.npz")


CLI_MESSAGES = [
    # batch axis on a function mixing samples is refused
    Case(["jacobian", "-e", "x * sum(x)", "[1, 2, 3]", "--batch-axis", "0"],
         '--batch-axis 0: the function mixes samples: output 0 of sample 0 depends on input 0 of sample 1, so '
         'per-sample derivatives are not defined; compute the full Jacobian without --batch-axis (Paddle '
         'would silently return summed cross-sample terms here)'),
    # complex and object inputs are one usage error line
    Case(["jacobian", "-e", "x ** 2", "x.npy", "--format", "json"],
         'x.npy holds complex numbers: complex inputs are not supported',
         files={'x.npy': np.array([(1+1j), (2+0j)])}, chdir=True),
    Case(["jacobian", "-e", "x ** 2", "x.npy", "--format", "text"],
         'x.npy holds complex numbers: complex inputs are not supported',
         files={'x.npy': np.array([(1+1j), (2+0j)])}, chdir=True),
    # a whitespace text file with commas says to use csv
    Case(["jacobian", "-e", "x ** 2", "x.txt"],
         'cannot read x.txt: its numbers are separated by commas (line 1), and a .txt file holds numbers '
         'separated by whitespace; rename it to .csv, or separate the numbers with spaces',
         files={'x.txt': '1,2,3\n'}, chdir=True),
    Case(["jacobian", "-e", "x ** 2", "x.txt"],
         'cannot read x.txt: its numbers are separated by commas (line 1), and a .txt file holds numbers '
         'separated by whitespace; rename it to .csv, or separate the numbers with spaces',
         files={'x.txt': '1, 2\n3, 4\n'}, chdir=True),
    Case(["jacobian", "-e", "x ** 2", "x.dat"],
         'cannot read x.dat: its numbers are separated by commas (line 3), and a .dat file holds numbers '
         'separated by whitespace; rename it to .csv, or separate the numbers with spaces',
         files={'x.dat': '# a comment\na,b\n1,2\n'}, chdir=True),
    # a non finite vector names its position
    Case(["jvp", "{tmp}/m.py", "[1, 2]", "--vector", "[1, nan]"],
         '--vector: the vector for x has a NaN at position 1; give finite numbers',
         files={'m.py': 'import numpy as np\n\ndef f(x):\n'
                        '    return np.array([x.flat[0] * x.flat[1], x.flat[1]]), x.sum()\n'}),
    Case(["vjp", "{tmp}/m.py", "[1, 2]", "--vector", "[nan, 1]", "--vector", "[2]"],
         '--vector: the vector for f0 has a NaN at position 0; give finite numbers',
         files={'m.py': 'import numpy as np\n\ndef f(x):\n'
                        '    return np.array([x.flat[0] * x.flat[1], x.flat[1]]), x.sum()\n'}),
    Case(["vjp", "{tmp}/m.py", "[1, 2]", "--vector", "[1, 1]", "--vector", "inf"],
         '--vector: the vector for f1 is inf; give a finite number',
         files={'m.py': 'import numpy as np\n\ndef f(x):\n'
                        '    return np.array([x.flat[0] * x.flat[1], x.flat[1]]), x.sum()\n'}),
    Case(["jvp", "{tmp}/m.py", "[[1, 2], [3, 4]]", "--vector", "[[1, 1], [-inf, 0]]"],
         '--vector: the vector for x has a -inf at position (1, 0); give finite numbers',
         files={'m.py': 'import numpy as np\n\ndef f(x):\n'
                        '    return np.array([x.flat[0] * x.flat[1], x.flat[1]]), x.sum()\n'}),
    # several candidates without f are listed
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         '{tmp}/m.py defines no function f and 2 public functions (a, b); pick one with {tmp}/m.py:NAME',
         files={'m.py': 'def a(x):\n    return x\n\ndef b(x):\n    return x\n'}),
    # hessian of a vector function is a usage error
    Case(["hessian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy"],
         'hessian needs a scalar output, but f returns shape (3,); make f return one element or a '
         'sum (.sum()), or use --batch-axis 0 for per-sample Hessians'),
    # grad of a vector function is a usage error
    Case(["grad", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy"],
         'grad needs a function with one scalar output, but f returns shape (3,); use jacobian for vector '
         'outputs, or reduce the output (e.g. .sum())'),
    # vector of the wrong size is a usage error
    Case(["jvp", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "--vector", "[1, 2]"],
         "--vector: v has invalid size: should be (3,) but got (2,) (the input's shape; a flat v of 3 "
         'entries is also read, row-major, and axes of length 1 may be added or left out).'),
    Case(["jvp", "-e", "x * y", "x=[1, 2]", "y=[3, 4]", "--vector", "[1, 0]", "--vector", "[1, 0, 0]"],
         "--vector: the vector for y has invalid size: should be (2,) but got (3,) (the input's shape; a "
         'flat v of 2 entries is also read, row-major, and axes of length 1 may be added or left out).'),
    # vector for an unknown name is a usage error
    Case(["jvp", "{samples}/kinetics.py", "{samples}/kinetics_inputs.npz", "--vector", "z=[1, 2, 3]"],
         "--vector z=[1, 2, 3]: 'z' is not one of c, k"),
    # too few vectors is a usage error
    Case(["hvp", "-e", "sum(x * y)", "x=[1, 2]", "y=[3, 4]", "--vector", "x=[1, 0]"],
         '--vector: no vector given for y; give one per input (x, y), positionally or as name=SOURCE'),
    # too many vectors is a usage error
    Case(["jvp", "-e", "x * 2", "[1, 2]", "--vector", "[1, 0]", "--vector", "[0, 1]"],
         '--vector: 2 vectors given for 1 differentiated input (x); give one per input, positionally or as '
         'x=SOURCE'),
    # vjp vector given twice for one output says so
    Case(["vjp", "-e", "sin(x)", "x=[1, 2, 3]", "--vector", "[1, 1, 1]", "--vector", "[1, 0, 0]"],
         '--vector: 2 vectors given for 1 output: f returns one array, not a tuple, so vjp takes one vector '
         'of its shape (3,); give --vector once'),
    Case(["vjp", "-e", "concatenate([sin(x), cos(x)])", "x=[1, 2, 3]", "--vector", "[1, 1, 1]", "--vector",
          "[1, 0, 0]"],
         '--vector: 2 vectors given for 1 output: f returns one array, not a tuple, so vjp takes one vector '
         'of its shape (6,); give --vector once'),
    # vjp vector count for tuple outputs names the outputs
    Case(["vjp", "-e", "x * y, x + y", "x=[1, 2]", "y=[3, 4]", "--vector", "[1, 0]"],
         '--vector: 1 vector given for the 2 outputs of f (f0, f1); give one per output, positionally or as '
         'f0=SOURCE'),
    Case(["vjp", "-e", "x * y, x + y", "x=[1, 2]", "y=[3, 4]", "--vector", "[1, 0]", "--vector", "[1, 0]",
          "--vector", "[1, 0]"],
         '--vector: 3 vectors given for the 2 outputs of f (f0, f1); give one per output, positionally or '
         'as f0=SOURCE'),
    # vjp of a tuple names the output whose vector is missing
    Case(["vjp", "{tmp}/pair.py", "[1.0, 2.0]", "--vector", "f1=1.0"],
         '--vector: no vector given for f0; give one per output (f, f0, f1, ...), positionally or as '
         'name=SOURCE',
         files={'pair.py': 'import numpy as np\ndef f(x):\n    return x * 2, x.sum()\n'}),
    Case(["vjp", "{tmp}/pair.py", "[1.0, 2.0]", "--vector", "f2=1.0"],
         '--vector: no vector given for f0, f1; give one per output (f, f0, f1, ...), positionally or as '
         'name=SOURCE',
         files={'pair.py': 'import numpy as np\ndef f(x):\n    return x * 2, x.sum()\n'}),
    Case(["vjp", "{tmp}/pair.py", "[1.0, 2.0]", "--vector", "f0=[1, 1]", "--vector", "f2=1"],
         '--vector: no vector given for f1; give one per output (f, f0, f1, ...), positionally or as '
         'name=SOURCE',
         files={'pair.py': 'import numpy as np\ndef f(x):\n    return x * 2, x.sum()\n'}),
    # jvp and hvp vector given twice for one input says what to do
    Case(["jvp", "-e", "sum(x ** 3)", "x=[1, 2]", "--vector", "[1, 0]", "--vector", "[0, 1]"],
         '--vector: 2 vectors given for 1 differentiated input (x); give one per input, positionally or as '
         'x=SOURCE'),
    Case(["hvp", "-e", "sum(x ** 3)", "x=[1, 2]", "--vector", "[1, 0]", "--vector", "[0, 1]"],
         '--vector: 2 vectors given for 1 differentiated input (x); give one per input, positionally or as '
         'x=SOURCE'),
    # an input named after a constant or function of the expression says what the name is
    Case(["jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", "e=2.0"],
         'e=2.0: in an expression e is the constant 2.718281828459045, so no input can be called e; use '
         'another name, such as e1, in the expression and as e1=SOURCE'),
    Case(["jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", "pi=2.0"],
         'pi=2.0: in an expression pi is the constant 3.141592653589793, so no input can be called pi; use '
         'another name, such as pi1, in the expression and as pi1=SOURCE'),
    Case(["jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", "inf=2.0"],
         'inf=2.0: in an expression inf is the constant inf, so no input can be called inf; use another '
         'name, such as inf1, in the expression and as inf1=SOURCE'),
    Case(["jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", "nan=2.0"],
         'nan=2.0: in an expression nan is the constant nan, so no input can be called nan; use another '
         'name, such as nan1, in the expression and as nan1=SOURCE'),
    Case(["jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", "sin=2.0"],
         'sin=2.0: in an expression sin is a function, so no input can be called sin; use another name, '
         'such as sin1, in the expression and as sin1=SOURCE'),
    Case(["jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", "np=2.0"],
         'np=2.0: in an expression np is a module name (as in np.sin), so no input can be called np; use '
         'another name, such as np1, in the expression and as np1=SOURCE'),
    # an unknown input of an expression names the expression
    Case(["jacobian", "-e", "x * y", "x=1.0", "z=2.0"],
         "the expression has no parameter 'z'; its parameters are x, y"),
    # expression syntax error is one line
    Case(["jacobian", "-e", "x +", "x=1"],
         'expression: invalid syntax at column 1: {any}'),
    # expression unknown input name
    Case(["jacobian", "-e", "x * 2", "y=1"],
         "the expression has no parameter 'y'; its parameters are x"),
    # a target that cannot hold the result is refused before f runs
    Case(["jacobian", "{tmp}/m.py", "[1]", "[2]", "-o", "{tmp}/J.npy"],
         '-o {tmp}/J.npy: a .npy file holds one block, and the result has a block per input (x, y); write '
         'it to .npz or .json, or pick one input with --wrt',
         files={'m.py': "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n    return np.sum(x * y)\n"}),
    Case(["hessian", "{tmp}/m.py", "[1]", "[2]", "-o", "{tmp}/H.csv"],
         '-o {tmp}/H.csv: a .csv file holds one block, and the result has a block per pair of inputs (x, '
         'y); write it to .npz or .json, or pick one input with --wrt',
         files={'m.py': "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n    return np.sum(x * y)\n"}),
    Case(["grad", "{tmp}/m.py", "[1]", "[2]", "-o", "{tmp}/g.txt"],
         '-o {tmp}/g.txt: a .txt file holds one block, and the result has a block per input (x, y); write '
         'it to .npz or .json, or pick one input with --wrt',
         files={'m.py': "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n    return np.sum(x * y)\n"}),
    Case(["vjp", "{tmp}/m.py", "[1]", "[2]", "--vector", "[1]", "-o", "{tmp}/v.npy"],
         '-o {tmp}/v.npy: a .npy file holds one block, and the result has a block per input (x, y); write '
         'it to .npz or .json, or pick one input with --wrt',
         files={'m.py': "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n    return np.sum(x * y)\n"}),
    Case(["hvp", "{tmp}/m.py", "[1]", "[2]", "--vector", "[1]", "--vector", "[1]", "-o", "{tmp}/h.npy"],
         '-o {tmp}/h.npy: a .npy file holds one block, and the result has a block per input (x, y); write '
         'it to .npz or .json, or pick one input with --wrt',
         files={'m.py': "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n    return np.sum(x * y)\n"}),
    Case(["jacobian", "{tmp}/m.py", "[1]", "[2]", "--batch-axis", "0", "--wrt", "x", "-o", "{tmp}/J.csv"],
         '-o {tmp}/J.csv: a batched result has 3 axes; write it to .npy, .npz or .json',
         files={'m.py': "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n    return np.sum(x * y)\n"}),
    # a tuple output in npy says npz and not wrt
    Case(["jacobian", "{tmp}/m.py", "[1, 2]", "-o", "{tmp}/J.npy"],
         '-o {tmp}/J.npy: a .npy file holds one block, and the result has 2 blocks (df0_dx, df1_dx), one '
         'per output of the tuple f returns; write it to .npz or .json',
         files={'m.py': 'def f(x):\n    return x * 2.0, x.sum()\n'}),
    Case(["jvp", "{tmp}/m.py", "[1, 2]", "--vector", "[1, 1]", "-o", "{tmp}/J.npy"],
         '-o {tmp}/J.npy: a .npy file holds one block, and the result has 2 blocks (jvp_f0, jvp_f1), one '
         'per output of the tuple f returns; write it to .npz or .json',
         files={'m.py': 'def f(x):\n    return x * 2.0, x.sum()\n'}),
    # unknown output extension is a usage error
    Case(["jacobian", "-e", "x", "[1]", "-o", "{tmp}/J.mat"],
         "-o {tmp}/J.mat: unknown format '.mat'; use one of .npy, .npz, .csv, .txt, .json, .zarr, or give "
         "--output-format"),
    Case(["jacobian", "-e", "x", "[1]", "-o", "/dev/null"],
         "-o /dev/null: its name has no extension to tell the format; give it with --output-format (npy, npz, csv, "
         "txt, json)"),
    Case(["jacobian", "-e", "x", "[1]", "-o", "{tmp}/J.npy", "--output-format", "csv"],
         "-o {tmp}/J.npy: its extension says npy, and --output-format csv; give one of them"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "-o", "{tmp}/J.npz", "--output-format", "npz"],
         "--output-format is for dense results; here -o's extension tells the format (.npz, .mtx, .json, .npy)"),
    # output into a missing directory is a usage error
    Case(["jacobian", "-e", "x", "[1]", "-o", "{tmp}/nope/J.npy"],
         '-o {tmp}/nope/J.npy: directory {tmp}/nope does not exist'),
    # batched result to csv is refused
    Case(["jacobian", "-e", "x * 2", "[[1], [2]]", "--batch-axis", "0", "-o", "{tmp}/J.csv"],
         '-o {tmp}/J.csv: a batched result has 3 axes; write it to .npy, .npz or .json'),
    # an error that the input or f causes in jaccli code stays exit 3
    Case(["jacobian", "{tmp}/m.py", "[1, 2, 3]"],
         'differentiating f in {tmp}/m.py failed: LinAlgError: {any}; rerun with --debug for the traceback',
         files={'m.py': 'import numpy as np\n\ndef f(x):\n    return np.linalg.slogdet(np.outer(x, x))[1]\n'}),
    # large result without a file says how large and what to do
    Case(["jacobian", "{samples}/heat_pde.py", "{samples}/heat_pde_u.npy", "--max-memory", "1KiB"],
         'the result would take 8.0 KiB, more than --max-memory 1.0 KiB; write it to a .npy file with -o '
         'J.npy (streamed to disk in row blocks), select rows or columns with --rows/--cols, compute it sparse '
         'with --sparse (-o J.npz), or raise --max-memory'),
    # large result to npz cannot stream
    Case(["jacobian", "{samples}/heat_pde.py", "{samples}/heat_pde_u.npy", "--max-memory", "1KiB", "-o",
          "{tmp}/J.npz"],
         'the result would take 8.0 KiB, more than --max-memory 1.0 KiB; write it to a .npy file with -o '
         'J.npy (streamed to disk in row blocks), select rows or columns with --rows/--cols, compute it sparse '
         'with --sparse (-o J.npz), or raise --max-memory'),
    # missing function file
    Case(["jacobian", "nope.py", "[1]"],
         'function file not found: nope.py; FUNC is path.py or path.py:name'),
    # missing func and inputs
    Case(["jacobian"],
         'give FUNC (a .py file) and its INPUTs, or -e EXPR; see --help'),
    # missing input file
    Case(["jacobian", "{samples}/robot_arm.py", "missing.npy"],
         'input file not found: missing.npy'),
    # unreadable literal
    Case(["jacobian", "{samples}/robot_arm.py", "[1, 2"],
         "cannot read input '[1, 2': not a number or list of numbers; give a number, a list of numbers or a "
         'file (.npy, .npz, .csv, .txt, .dat)'),
    # extra input
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "[1]"],
         'f takes 1 input (q) but 2 were given'),
    # missing input
    Case(["jacobian", "{samples}/kinetics.py", "{samples}/kinetics_c.npy"],
         "missing input for parameter 'k' of f: give it positionally or as k=SOURCE"),
    # unknown input name
    Case(["jacobian", "{samples}/robot_arm.py", "x=[1, 2, 3]"],
         "f has no parameter 'x'; its parameters are q"),
    # bad wrt
    Case(["jacobian", "{samples}/kinetics.py", "{samples}/kinetics_inputs.npz", "--wrt", "z"],
         "--wrt z: f has no input 'z'; its inputs are c, k"),
    Case(["jacobian", "{samples}/kinetics.py", "{samples}/kinetics_inputs.npz", "--wrt", "c,c"],
         "--wrt c,c: input 'c' is listed twice"),
    Case(["jacobian", "{samples}/kinetics.py", "{samples}/kinetics_inputs.npz", "--wrt", "5"],
         '--wrt 5: position 5 is out of range; f has 2 parameter(s): c, k'),
    Case(["jacobian", "{samples}/kinetics.py", "{samples}/kinetics_inputs.npz", "--wrt", "c,"],
         '--wrt c,: empty name; give input names or positions, e.g. --wrt c'),
    # wrt on an input left at its default
    Case(["grad", "{samples}/logistic.py", "{samples}/logistic_w.npy", "{samples}/logistic_X.csv",
          "{samples}/logistic_y.txt", "--wrt", "alpha"],
         "--wrt alpha: input 'alpha' was not given (it keeps its default); give it as alpha=SOURCE to "
         'differentiate it'),
    # bad rows
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "--rows", "1:2:0"],
         '--rows 1:2:0: slice step cannot be zero'),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "--rows", "a"],
         "--rows a: bad index 'a'; use i, a:b, a:b:c, i,j,k or @file.npy"),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "--rows", "99"],
         '--rows 99: index 99 is out of range for 3 rows'),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "--rows", ""],
         '--rows : empty index; use i, a:b, a:b:c, i,j,k or @file.npy'),
    # bad cols names the block when there are several
    Case(["jacobian", "-e", "x * y", "x=[1, 2]", "y=3", "--cols", "1"],
         '--cols 1: index 1 is out of range for 1 col (block df_dy)'),
    # shape mismatch inside the function is a usage error
    Case(["jacobian", "{tmp}/m.py", "[1, 2, 3]", "[1, 2]"],
         'the inputs do not fit the function: operands could not be broadcast{any} ({tmp}/m.py:5); the '
         'inputs are x (3,), y (2,)',
         files={'m.py': 'import numpy as np\n\ndef f(x, y):\n    z = x * 2\n    return z + y\n'}),
    # matmul mismatch inside the function is a usage error
    Case(["jacobian", "{tmp}/m.py", "[[1, 2], [3, 4]]", "[1, 2, 3]"],
         'the inputs do not fit the function: {any}mismatch in its core dimension{any} ({tmp}/m.py:2); the '
         'inputs are A (2, 2), x (3,)',
         files={'m.py': 'def f(A, x):\n    return A @ x\n'}),
    # an index out of range inside the function is the function failing (exit 3), the inputs named
    Case(["jacobian", "{samples}/kinetics.py", "c=[1, 2]", "k={samples}/kinetics_k.npy"],
         'f in {any}kinetics.py raised IndexError: {any}out of bounds{any} ({any}kinetics.py:10); the inputs '
         'are c (2,), k (3,)'),
    Case(["jacobian", "{tmp}/m.py", "[1.0, 2.0]"],
         "the list f returned as output 0 cannot be an array: it is ragged: its items have shapes () and (1,), and an "
         "array's items have one shape (NumPy refuses it too); give them one shape, or join them with np.concatenate "
         "(f in {tmp}/m.py:1)",
         files={'m.py': 'def f(x):\n    return [x[0], [x[1]]]\n'}),
    Case(["jacobian", "-e", "sum(x)", "[" * 70 + "1.0" + "]" * 70],
         "cannot read input '{any}': it nests lists 70 deep, and a NumPy array has at most 64 dimensions"),
    Case(["jacobian", "-e", "x[7]", "[1.0, 2.0]"],
         'the expression raised IndexError: index 7 is out of bounds for axis 0 with size 2; the inputs are x (2,)'),
    # a 5 KB message stays one line of about 1000 characters, keeping its end (the file and line)
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         'f in {tmp}/m.py raised ValueError: first line aaaa{any} ... [{n} characters cut; --debug shows the whole '
         'error] ... {any}aaaa last words ({tmp}/m.py:2)',
         files={'m.py': "def f(x):\n    raise ValueError('first line ' + 'a' * 5000 + ' last words')\n"}),
    # a message of several lines is its first line
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         'f in {tmp}/m.py raised ValueError: first of two lines ({tmp}/m.py:2)',
         files={'m.py': "def f(x):\n    raise ValueError('first of two lines\\nsecond')\n"}),
    # exception raised by the function is exit 3 with its line
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         'f in {tmp}/m.py raised ValueError: shape is bad ({tmp}/m.py:2)',
         files={'m.py': "def helper(x):\n    raise ValueError('shape is bad')\n\ndef f(x):\n"
                        '    return helper(x)\n'}),
    # runtime error in the function is exit 3
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "f in {tmp}/m.py raised NameError: name 'undefined_name' is not defined ({tmp}/m.py:2)",
         files={'m.py': 'def f(x):\n    return x / undefined_name\n'}),
    # syntax error in the function file is exit 3
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         '{tmp}/m.py:2: running {tmp}/m.py failed: SyntaxError: {any}',
         files={'m.py': 'def f(x):\n    return x +\n'}),
    # function returning a string is exit 3
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         'the function returned str of dtype <U2 as output 0, not an array of numbers; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/m.py:1)',
         files={'m.py': "def f(x):\n    return 'no'\n"}),
    # unsupported operation is exit 3 with its line
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "{tmp}/m.py:6: the ufunc <lambda> (vectorized) (not NumPy's own) is not supported by jaccli; write "
         "it with NumPy functions; see 'jaccli ops'",
         files={'m.py': 'import numpy as np\n\ntwice = np.frompyfunc(lambda v: 2 * v, 1, 1)\n\ndef f(x):\n'
                        '    return twice(x)\n'}),
    # escaping the trace is exit 3
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "{tmp}/m.py:2: float() takes a traced value out of jaccli's recording, so its derivative is lost; "
         'keep values as arrays and use NumPy functions (np.sin, not math.sin); for a count or an index (a loop '
         "bound, a table's row), int(x[0]) is taken as a constant",
         files={'m.py': 'def f(x):\n    return float(x[0]) * x\n'}),
    # an array changed after an operation used it is exit 3
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "{tmp}/m.py:5: 'buf' is changed in place after f handed it to a NumPy operation on traced values; "
         'jaccli keeps such arrays for the derivative (as PyTorch keeps saved tensors), so they stay '
         'read-only while f runs; change a copy instead (buf = buf.copy() before the change)',
         files={'m.py': 'import numpy as np\ndef f(x):\n    buf = np.ones(2)\n    y = x * buf\n    buf[0] = 3.0\n'
                        '    return y * buf\n'}),
    # a memory budget in the environment that names no size is exit 2 before f runs
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: '1GiB!' is not a size; write e.g. 1GiB, 512M or "
         '1000000 (bytes)',
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': '1GiB!'}),
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: 'abc' is not a size; write e.g. 1GiB, 512M or "
         '1000000 (bytes)',
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': 'abc'}),
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: '-1' is not a size; write e.g. 1GiB, 512M or "
         '1000000 (bytes)',
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': '-1'}),
    Case(["jacobian", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: '0' must be more than 0 bytes",
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': '0'}),
    Case(["info", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: '1GiB!' is not a size; write e.g. 1GiB, 512M or "
         '1000000 (bytes)',
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': '1GiB!'}),
    Case(["info", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: 'abc' is not a size; write e.g. 1GiB, 512M or "
         '1000000 (bytes)',
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': 'abc'}),
    Case(["info", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: '-1' is not a size; write e.g. 1GiB, 512M or "
         '1000000 (bytes)',
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': '-1'}),
    Case(["info", "{tmp}/m.py", "[1, 2]"],
         "the environment variable JACCLI_MEMORY_BUDGET: '0' must be more than 0 bytes",
         files={'m.py': "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n"},
         env={'JACCLI_MEMORY_BUDGET': '0'}),
    # sys exit in the function is exit 3 not jaccli exiting
    Case(["check", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(0) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    sys.exit(0)\n    return x\n'}),
    Case(["jacobian", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(0) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    sys.exit(0)\n    return x\n'}),
    Case(["info", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(0) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    sys.exit(0)\n    return x\n'}),
    Case(["check", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(4) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    raise SystemExit(4)\n    return x\n'}),
    Case(["jacobian", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(4) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    raise SystemExit(4)\n    return x\n'}),
    Case(["info", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(4) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    raise SystemExit(4)\n    return x\n'}),
    Case(["check", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(None) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    sys.exit()\n    return x\n'}),
    Case(["jacobian", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(None) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    sys.exit()\n    return x\n'}),
    Case(["info", "{tmp}/bye.py", "[1, 2]"],
         'f in {tmp}/bye.py called sys.exit(None) ({tmp}/bye.py:4); a function to differentiate must return '
         'its value',
         files={'bye.py': 'import sys\n\ndef f(x):\n    sys.exit()\n    return x\n'}),
    # keyboard interrupt raised by the function is exit 3 not an interruption
    Case(["check", "{tmp}/stop.py", "[1, 2]"],
         'f in {tmp}/stop.py raised KeyboardInterrupt ({tmp}/stop.py:2)',
         files={'stop.py': 'def f(x):\n    raise KeyboardInterrupt\n'}),
    Case(["jacobian", "{tmp}/stop.py", "[1, 2]"],
         'f in {tmp}/stop.py raised KeyboardInterrupt ({tmp}/stop.py:2)',
         files={'stop.py': 'def f(x):\n    raise KeyboardInterrupt\n'}),
    Case(["info", "{tmp}/stop.py", "[1, 2]"],
         'f in {tmp}/stop.py raised KeyboardInterrupt ({tmp}/stop.py:2)',
         files={'stop.py': 'def f(x):\n    raise KeyboardInterrupt\n'}),
    # keyboard interrupt raised by the function file as it loads is exit 3
    Case(["check", "{tmp}/stop.py", "[1, 2]"],
         '{tmp}/stop.py:2: running {tmp}/stop.py failed: KeyboardInterrupt',
         files={'stop.py': 'import numpy as np\nraise KeyboardInterrupt\n\ndef f(x):\n    return x\n'}),
    Case(["jacobian", "{tmp}/stop.py", "[1, 2]"],
         '{tmp}/stop.py:2: running {tmp}/stop.py failed: KeyboardInterrupt',
         files={'stop.py': 'import numpy as np\nraise KeyboardInterrupt\n\ndef f(x):\n    return x\n'}),
    Case(["info", "{tmp}/stop.py", "[1, 2]"],
         '{tmp}/stop.py:2: running {tmp}/stop.py failed: KeyboardInterrupt',
         files={'stop.py': 'import numpy as np\nraise KeyboardInterrupt\n\ndef f(x):\n    return x\n'}),
    # output where no file can be created is a usage error
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere'),
    # output where no file can be created is refused before anything runs
    Case(["jacobian", "{tmp}/ran.py", "x=[0.5, 1.0]", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere',
         files={'ran.py': "import numpy as np\n\ndef f(x):\n    print('f ran')\n    return np.sin(x) * np.sum(x)\n"}),
    Case(["jacobian", "{tmp}/ran.py", "x=[0.5, 1.0]", "--max-memory", "16", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere',
         files={'ran.py': "import numpy as np\n\ndef f(x):\n    print('f ran')\n    return np.sin(x) * np.sum(x)\n"}),
    Case(["grad", "{tmp}/ran.py", "x=[0.5, 1.0]", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere',
         files={'ran.py': "import numpy as np\n\ndef f(x):\n    print('f ran')\n    return np.sin(x) @(x)\n"}),
    Case(["vjp", "{tmp}/ran.py", "x=[0.5, 1.0]", "--vector", "[1, 1]", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere',
         files={'ran.py': "import numpy as np\n\ndef f(x):\n    print('f ran')\n    return np.sin(x) * np.sum(x)\n"}),
    Case(["jacobian", "-e", "sin(x) * sum(x)", "x=[0.5, 1.0]", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere'),
    Case(["jacobian", "-e", "sin(x) * sum(x)", "x=[0.5, 1.0]", "--max-memory", "16", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere'),
    Case(["grad", "-e", "sum(sin(x))", "x=[0.5, 1.0]", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere'),
    Case(["vjp", "-e", "sin(x) * sum(x)", "x=[0.5, 1.0]", "--vector", "[1, 1]", "-o", "/proc/jaccli-test.npy"],
         'cannot write /proc/jaccli-test.npy: the directory /proc takes no new file (No such file or '
         'directory), and jaccli writes a temporary file there and renames it to jaccli-test.npy; make the '
         'directory writable, or write elsewhere'),
    # click usage errors are one line with a help hint
    Case(["jacobian", "-e", "x", "[1]", "--mode", "x"],
         "{any}'--mode'{any} (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--precision", "0"],
         "{any}'--precision'{any} (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--rtol", "-1"],
         "{any}'--rtol'{any} (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--chunk-size", "0"],
         "{any}'--chunk-size': 0 is not positive; give a number of seeds per sweep, or 'auto' (see 'cli "
         "jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--format", "xml"],
         "{any}'--format'{any} (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--bogus"],
         "No such option '--bogus'{any} (see 'cli jacobian --help')"),
    Case(["check", "-e", "x", "[1]", "--order", "3"],
         "{any}'--order'{any} (see 'cli check --help')"),
    Case(["vjp", "-e", "x", "[1]"],
         "Missing option '--vector'{any} (see 'cli vjp --help')"),
    Case(["jacobian", "{tmp}/cx.py", "[1, 2]"],
         "f returns complex values; the command line writes real derivatives: return np.real, np.imag or np.abs of "
         "them, or call jaccli.jacobian in Python (docs/complex.md) (f in {tmp}/cx.py:3)",
         files={"cx.py": "import numpy as np\n\ndef f(x):\n    return np.exp(1j * x)\n"}),
    Case(["ops", "--family", "nope"],
         "{any}'--family': 'nope': families are complex, creation, diagonals, elementwise, fft, functional, "
         'indexing, joining, linalg, metadata, numerics, products, reductions, reordering, scipy.linalg, '
         "scipy.signal, scipy.special, scipy.stats, shape (see 'cli ops --help')"),
    Case(["nope"],
         "No such command 'nope'{any} (see 'cli --help')"),
    Case(["--bogus", "jacobian"],
         "No such option '--bogus'{any} (see 'cli --help')"),
    # negative number input says how to give it
    Case(["jacobian", "{tmp}/neg.py", "-1.5"],
         '-1.5 reads as an option; to give a negative number as an input, write it as NAME=-1.5 (e.g. '
         "x=-1.5), or put -- after the options and before the inputs (see 'cli jacobian --help')",
         files={'neg.py': 'import numpy as np\n\ndef f(x):\n    return np.sin(x)\n'}),
    Case(["jacobian", "{tmp}/neg.py", "-q1"],
         "No such option '-1'{any} (see 'cli jacobian --help')",
         files={'neg.py': 'import numpy as np\n\ndef f(x):\n    return np.sin(x)\n'}),
    Case(["jacobian", "{tmp}/neg.py", "-2"],
         '-2 reads as an option; to give a negative number as an input, write it as NAME=-2 (e.g. x=-2), or '
         "put -- after the options and before the inputs (see 'cli jacobian --help')",
         files={'neg.py': 'import numpy as np\n\ndef f(x):\n    return np.sin(x)\n'}),
    Case(["jacobian", "{tmp}/neg.py", "-.5"],
         '-.5 reads as an option; to give a negative number as an input, write it as NAME=-.5 (e.g. x=-.5), '
         "or put -- after the options and before the inputs (see 'cli jacobian --help')",
         files={'neg.py': 'import numpy as np\n\ndef f(x):\n    return np.sin(x)\n'}),
    Case(["jacobian", "{tmp}/neg.py", "-1e3"],
         '-1e3 reads as an option; to give a negative number as an input, write it as NAME=-1e3 (e.g. '
         "x=-1e3), or put -- after the options and before the inputs (see 'cli jacobian --help')",
         files={'neg.py': 'import numpy as np\n\ndef f(x):\n    return np.sin(x)\n'}),
    Case(["jacobian", "{tmp}/neg.py", "-inf"],
         '-inf reads as an option; to give a negative number as an input, write it as NAME=-inf (e.g. '
         "x=-inf), or put -- after the options and before the inputs (see 'cli jacobian --help')",
         files={'neg.py': 'import numpy as np\n\ndef f(x):\n    return np.sin(x)\n'}),
    # positional input on a parameter bound by name is a usage error
    Case(["info", "{tmp}/ab.py", "[1., 2, 3]", "a=[5., 6]"],
         "input for parameter 'a' of f given twice ([1., 2, 3] positionally and a=[5., 6]); positional "
         'inputs bind to the first parameters (a, b) in order: give them before naming later ones, or name '
         'every input',
         files={'ab.py': 'def f(a, b):\n    return a * b[0]\n'}),
    Case(["jacobian", "{tmp}/ab.py", "[1., 2, 3]", "a=[5., 6]"],
         "input for parameter 'a' of f given twice ([1., 2, 3] positionally and a=[5., 6]); positional "
         'inputs bind to the first parameters (a, b) in order: give them before naming later ones, or name '
         'every input',
         files={'ab.py': 'def f(a, b):\n    return a * b[0]\n'}),
    # function without named parameters says how to name its inputs
    Case(["jacobian", "{tmp}/star.py", "[1.0, 2.0]"],
         'f has only *args, and jaccli binds each input to a named parameter: give f named parameters, as '
         'in def f(x, y), or wrap it in a function that has them',
         files={'star.py': 'import numpy as np\n\ndef f(*args):\n    return np.sin(1.0)\n'}),
    Case(["jacobian", "{tmp}/star.py"],
         'f has only *args, and jaccli binds each input to a named parameter: give f named parameters, as '
         'in def f(x, y), or wrap it in a function that has them',
         files={'star.py': 'import numpy as np\n\ndef f(*args):\n    return np.sin(1.0)\n'}),
    Case(["jacobian", "{tmp}/star.py", "x=[1.0, 2.0]"],
         'f has only **kw, and jaccli binds each input to a named parameter: give f named parameters, as in '
         'def f(x, y), or wrap it in a function that has them',
         files={'star.py': 'import numpy as np\n\ndef f(**kw):\n    return np.sin(1.0)\n'}),
    # empty output path is a usage error
    Case(["jacobian", "-e", "x", "[1]", "-o", ""],
         '-o: the path is empty (an unset variable?); give a file such as J.npy, or leave out -o for stdout'),
    Case(["jacobian", "-e", "x", "[1]", "-o", " "],
         '-o: the path is empty (an unset variable?); give a file such as J.npy, or leave out -o for stdout'),
    # errors and kinks in an expression are placed in the expression
    Case(["jacobian", "-e", "sum(x, axis=x)", "x=[1.0, 2.0]"],
         "<expression>:1: using a traced value as an index takes a traced value out of jaccli's recording, "
         'so its derivative is lost; index with plain integers or integer arrays'),
    # ---- option values that click refuses (its own words are {any}; jaccli's follow the option's name)
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--batch-axis", "1"],
         "{any}'--batch-axis': 1: only axis 0 is supported; move the batch axis to the front "
         "(see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--max-memory", "lots"],
         "{any}'--max-memory': 'lots' is not a size; write e.g. 1GiB, 512M or 1000000 (bytes) "
         "(see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--max-memory", "0"],
         "{any}'--max-memory': '0' must be more than 0 bytes (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--max-memory", "-5M"],
         "{any}'--max-memory': '-5M' is not a size; write e.g. 1GiB, 512M or 1000000 (bytes) "
         "(see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--max-memory", "1XB"],
         "{any}'--max-memory': '1XB' is not a size; write e.g. 1GiB, 512M or 1000000 (bytes) "
         "(see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--chunk-size", "-3"],
         "{any}'--chunk-size': -3 is not positive; give a number of seeds per sweep, or 'auto' "
         "(see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--chunk-size", "many"],
         "{any}'--chunk-size': 'many' is not a positive integer or 'auto' (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--mode", "sideways"], "{any}'--mode'{any} (see 'cli jacobian --help')"),
    Case(["jacobian", "-e", "x", "[1]", "--dtype", "int8"], "{any}'--dtype'{any} (see 'cli jacobian --help')"),
    Case(["jvp", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy"],
         "Missing option '--vector'{any} (see 'cli jvp --help')"),
    Case(["jacobian", "-e", "__import__('os').system('echo hi')", "x=1"],
         "expression: only functions called by name can be called, not '__import__('os').system'; use e.g. "
         "sin(x) or np.sin(x)"),
    # ---- check, --compare, --strict and --fail-on-nonfinite: the error line ends stderr, after the report's lines
    # fail on nonfinite exits 1 and leaves the output file
    Case(["jacobian", "{tmp}/model.py:logsq", "[1, -1]", "--fail-on-nonfinite", "-o", "{tmp}/J.npy"],
         '--fail-on-nonfinite: dlogsq_dx holds 1 NaN (first at (logsq[1], x[1])); first non-finite value: '
         'np.log produced nan in the forward evaluation at {tmp}/model.py:5 (element (1,)); {tmp}/J.npy was '
         'not written',
         files={'model.py': MODEL}),
    # inf from sqrt at zero is traced to the reverse sweep
    Case(["jacobian", "{tmp}/model.py:root", "[0, 1]", "--mode", "reverse", "--fail-on-nonfinite", "-o",
          "{tmp}/J.npy"],
         '--fail-on-nonfinite: droot_dx holds 1 inf (first at (root[0], x[0])); first non-finite value: '
         "np.sqrt produced inf in the reverse sweep at {tmp}/model.py:10 (element (0,)) (sqrt'(0) = inf, "
         'reported as non-finite, not hidden); {tmp}/J.npy was not written',
         files={'model.py': MODEL}),
    # nonfinite gradient and hessian are reported too
    Case(["grad", "-e", "sum(sqrt(x))", "[0, 1]", "--fail-on-nonfinite"],
         '--fail-on-nonfinite: df_dx holds 1 inf (first at (x[0])); first non-finite value: np.sqrt '
         "produced inf in the reverse sweep (element (0,)) (sqrt'(0) = inf, reported as non-finite, not "
         'hidden)'),
    # a Hessian through hypot or norm at 0 exists only as a limit: NaN, reported with the gradient's words
    Case(["hessian", "-e", "cos(hypot(x[0], x[1]))", "[0, 0]", "--fail-on-nonfinite"],
         '--fail-on-nonfinite: d2f_dx_dx holds 4 NaN (first at (x[0], x[0])); first non-finite value: x / norm(x) '
         'produced nan in the forward sweep (the gradient x / norm(x) of hypot or norm has no derivative at 0: the '
         'derivative here exists only as a limit)'),
    Case(["hvp", "-e", "cos(np.linalg.norm(x))", "[0, 0]", "--vector", "[1, 0]", "--fail-on-nonfinite"],
         '--fail-on-nonfinite: hvp_x holds 2 NaN (first at (x[0])); first non-finite value: x / norm(x) produced '
         'nan in the forward sweep (element (0,)) (the gradient x / norm(x) of hypot or norm has no derivative at '
         '0: the derivative here exists only as a limit)'),
    # a derivative of a create_graph gradient through abs at 0 depends on abs'(0)'s convention: NaN, reported
    Case(["jacobian", "{tmp}/nested.py:gradient", "[0, 1]", "--fail-on-nonfinite"],
         '--fail-on-nonfinite: dgradient_du holds 1 NaN (first at (gradient[0], u[0])); first non-finite value: '
         "np.absolute' (a convention at 0) produced nan in the reverse sweep at {tmp}/nested.py:6 (element (0,)) "
         "(abs'(0) = 0 is a convention: the second derivative here, of a create_graph gradient through abs at 0, "
         "depends on it (abs(u) ** 2: 0 with it, 2 one-sided); jaccli.hessian and hvp take abs's slope one-sided "
         'at 0)',
         files={'nested.py': 'import numpy as np\nimport jaccli\n\n\ndef f(u):\n    return np.sum(np.abs(u) ** 2)\n'
                             '\n\ndef gradient(u):\n    return jaccli.grad(f, u, create_graph=True)\n'}),
    # disconnected input fails with strict naming output and input
    Case(["jacobian", "{tmp}/model.py:uses_global", "[1, 2]", "[3, 4]", "--strict", "-o", "{tmp}/J.npz"],
         "--strict: output uses_global is independent of input 1 ('y'): duses_global_dy is structurally "
         'zero, as no path in the recorded computation leads from y to uses_global; a common cause is a '
         'function that uses a global variable instead of its argument; {tmp}/J.npz was not written',
         files={'model.py': MODEL}),
    # failed strict still prints the result and the json verdict
    Case(["jacobian", "{tmp}/model.py:uses_global", "[1, 2]", "[3, 4]", "--strict", "-o", "{tmp}/J.npz", "--format",
          "json"],
         "--strict: output uses_global is independent of input 1 ('y'): duses_global_dy is structurally "
         'zero, as no path in the recorded computation leads from y to uses_global; a common cause is a '
         'function that uses a global variable instead of its argument; {tmp}/J.npz was not written',
         files={'model.py': MODEL}),
    Case(["hessian", "{tmp}/model.py:ignores", "[1, 2]", "[3]", "--strict", "--format", "text"],
         "--strict: output ignores is independent of input 1 ('y'): dignores_dy is structurally zero, as no "
         'path in the recorded computation leads from y to ignores; a common cause is a function that uses '
         'a global variable instead of its argument',
         files={'model.py': MODEL}),
    # check with failed strict prints its report ending in failed
    Case(["check", "{tmp}/model.py:uses_global", "[1, 2]", "[3, 4]", "--strict", "--format", "text"],
         "--strict: output uses_global is independent of input 1 ('y'): duses_global_dy is structurally "
         'zero, as no path in the recorded computation leads from y to uses_global; a common cause is a '
         'function that uses a global variable instead of its argument',
         files={'model.py': MODEL}),
    # failed strict on a result to stream writes nothing
    Case(["jacobian", "{tmp}/twice.py", "[1, 2, 3, 4]", "[3, 4, 5, 6]", "--wrt", "y", "--strict", "-o",
          "{tmp}/J.npy", "--max-memory", "100", "--format", "json"],
         "--strict: output f is independent of input 1 ('y'): df_dy is structurally zero, as no path in the "
         'recorded computation leads from y to f; a common cause is a function that uses a global variable '
         'instead of its argument; {tmp}/J.npy was not written',
         files={'twice.py': 'def f(x, y):\n    return x * 2.0\n'}),
    # strict hessian names f when f ignores an input
    Case(["hessian", "{tmp}/model.py:ignores", "[1, 2]", "[3]", "--strict"],
         "--strict: output ignores is independent of input 1 ('y'): dignores_dy is structurally zero, as no "
         'path in the recorded computation leads from y to ignores; a common cause is a function that uses '
         'a global variable instead of its argument',
         files={'model.py': MODEL}),
    Case(["hessian", "-e", "sum(x ** 2) + sum(y ** 3)", "[1, 2]", "[3]", "--strict"],
         "--strict: output df_dx is independent of input 1 ('y'): d2f_dx_dy is structurally zero, as no "
         'path in the recorded computation leads from y to df_dx; f is linear in that input, or the inputs '
         'enter f separately; also d2f_dy_dx (df_dy does not depend on x)'),
    # an input used only through an integer cast is named with its line
    Case(["jacobian", "{tmp}/model.py:counts", "[1.5, 2.5]", "--strict", "-o", "{tmp}/J.npy"],
         "--strict: output counts is independent of input 0 ('x'): dcounts_dx is structurally zero, as no "
         'path in the recorded computation leads from x to counts; x is used only through astype at '
         '{tmp}/model.py:50, whose integer or boolean result carries no derivative; {tmp}/J.npy was not '
         'written',
         files={'model.py': MODEL}),
    Case(["hessian", "{tmp}/model.py:counts", "[1.5, 2.5]", "--strict", "-o", "{tmp}/J.npy"],
         "--strict: output counts is independent of input 0 ('x'): dcounts_dx is structurally zero, as no "
         'path in the recorded computation leads from x to counts; x is used only through astype at '
         '{tmp}/model.py:50, whose integer or boolean result carries no derivative; {tmp}/J.npy was not '
         'written',
         files={'model.py': MODEL}),
    # function that raises is exit 3 with its line
    Case(["jacobian", "{tmp}/model.py:raises", "[1, 2]", "-o", "{tmp}/J.npy"],
         'raises in {tmp}/model.py raised RuntimeError: solver diverged ({tmp}/model.py:22)',
         files={'model.py': MODEL}),
    # function returning an empty tuple is exit 3 for every command
    Case(["jacobian", "{tmp}/empty.py", "[1, 2]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["hessian", "{tmp}/empty.py", "[1, 2]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["grad", "{tmp}/empty.py", "[1, 2]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["check", "{tmp}/empty.py", "[1, 2]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["info", "{tmp}/empty.py", "[1, 2]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["jvp", "{tmp}/empty.py", "[1, 2]", "--vector", "[1, 1]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["vjp", "{tmp}/empty.py", "[1, 2]", "--vector", "[1]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    Case(["hvp", "{tmp}/empty.py", "[1, 2]", "--vector", "[1, 1]"],
         'the function returned an empty tuple, which has nothing to differentiate; return a NumPy array '
         '(or a tuple of arrays) (f in {tmp}/empty.py:1)',
         files={'empty.py': 'def f(x):\n    return ()\n'}),
    # function returning a list of strings is exit 3
    Case(["jacobian", "{tmp}/model.py:strings", "[1, 2]", "-o", "{tmp}/J.npy"],
         'the function returned a list of str as output 0, not an array of numbers; return a NumPy array '
         '(or a tuple of arrays) (strings in {tmp}/model.py:25)',
         files={'model.py': MODEL}),
    # shape mismatch between inputs is exit 2
    Case(["jacobian", "{tmp}/model.py:add", "[1, 2, 3]", "[1, 2]", "-o", "{tmp}/J.npz"],
         'the inputs do not fit the function: operands could not be broadcast{any} ({tmp}/model.py:30); the '
         'inputs are x (3,), y (2,)',
         files={'model.py': MODEL}),
    # unsupported numpy function is exit 3 and points to ops
    Case(["jacobian", "{tmp}/model.py:spectrum", "[1, 2, 3]", "-o", "{tmp}/J.npy"],
         "{tmp}/model.py:34: np.unwrap is not supported by jaccli; see 'jaccli ops'",
         files={'model.py': MODEL}),
    # failures of the function are the same in check and info
    Case(["check", "{tmp}/model.py:raises", "[1, 2]"],
         'raises in {tmp}/model.py raised RuntimeError: solver diverged ({tmp}/model.py:22)',
         files={'model.py': MODEL}),
    Case(["check", "{tmp}/model.py:spectrum", "[1, 2]"],
         "{tmp}/model.py:34: np.unwrap is not supported by jaccli; see 'jaccli ops'",
         files={'model.py': MODEL}),
    Case(["info", "{tmp}/model.py:raises", "[1, 2]"],
         'raises in {tmp}/model.py raised RuntimeError: solver diverged ({tmp}/model.py:22)',
         files={'model.py': MODEL}),
    Case(["info", "{tmp}/model.py:spectrum", "[1, 2]"],
         "{tmp}/model.py:34: np.unwrap is not supported by jaccli; see 'jaccli ops'",
         files={'model.py': MODEL}),
    # expression escapes are refused with exit 2
    Case(["jacobian", "-e", "__import__('os').system('touch pwned')", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: only functions called by name can be called, not '__import__('os').system'; use e.g. "
         'sin(x) or np.sin(x)',
         chdir=True),
    Case(["jacobian", "-e", "x.__class__", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: attribute access 'x.__class__' is not allowed; use functions like sin(x) or np.sin(x)",
         chdir=True),
    Case(["jacobian", "-e", "().__class__.__bases__[0].__subclasses__()", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         'expression: only functions called by name can be called, not '
         "'().__class__.__bases__[0].__subclasses__'; use e.g. sin(x) or np.sin(x)",
         chdir=True),
    Case(["jacobian", "-e", "x.__class__.__mro__", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: attribute access 'x.__class__.__mro__' is not allowed; use functions like sin(x) or "
         'np.sin(x)',
         chdir=True),
    Case(["jacobian", "-e", "(lambda: x)()", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: only functions called by name can be called, not 'lambda: x'; use e.g. sin(x) or "
         'np.sin(x)',
         chdir=True),
    Case(["jacobian", "-e", "(lambda f: f)(x)", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: only functions called by name can be called, not 'lambda f: f'; use e.g. sin(x) or "
         'np.sin(x)',
         chdir=True),
    Case(["jacobian", "-e", "[c for c in ().__class__.__bases__]", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: comprehensions are not allowed; use array functions such as sum(x) (in '[c for c in "
         "().__class__.__bases__]')",
         chdir=True),
    Case(["jacobian", "-e", "np.load('x.npy')", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'np.load' is not an allowed function; allowed functions (optionally prefixed with "
         'np.): abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, '
         'cbrt, ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, '
         'exp2, expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "numpy.save('pwned.npy', x)", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'numpy.save' is not an allowed function; allowed functions (optionally prefixed with "
         'np.): abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, '
         'cbrt, ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, '
         'exp2, expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "open('pwned', 'w')", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'open' is not an allowed function; allowed functions (optionally prefixed with np.): "
         'abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, cbrt, '
         'ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, exp2, '
         'expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "eval('x')", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'eval' is not an allowed function; allowed functions (optionally prefixed with np.): "
         'abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, cbrt, '
         'ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, exp2, '
         'expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "exec('x = 1')", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'exec' is not an allowed function; allowed functions (optionally prefixed with np.): "
         'abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, cbrt, '
         'ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, exp2, '
         'expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "getattr(x, 'T')", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'getattr' is not an allowed function; allowed functions (optionally prefixed with "
         'np.): abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, '
         'cbrt, ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, '
         'exp2, expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "globals()", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: 'globals' is not an allowed function; allowed functions (optionally prefixed with "
         'np.): abs, absolute, amax, amin, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, '
         'cbrt, ceil, clip, concatenate, cos, cosh, cumprod, cumsum, diag, diagonal, dot, einsum, exp, '
         'exp2, expm1, flip, floor, hstack, hypot, inner, kron, linalg.cholesky, linalg.det, linalg.eigh, '
         'linalg.inv, linalg.norm, linalg.qr, linalg.slogdet, linalg.solve, linalg.svd, log, log10, log1p, '
         'log2, logaddexp, matmul, max, maximum, mean, min, minimum, outer, power, prod, ravel, reciprocal, '
         'reshape, roll, sign, sin, sinc, sinh, sqrt, square, stack, std, sum, tan, tanh, tensordot, trace, '
         'transpose, tril, triu, var, vstack, where',
         chdir=True),
    Case(["jacobian", "-e", "__builtins__", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: name '__builtins__' is not allowed: names starting with '__' are reserved",
         chdir=True),
    Case(["jacobian", "-e", "x.real", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: attribute access 'x.real' is not allowed; use functions like sin(x) or np.sin(x)",
         chdir=True),
    Case(["jacobian", "-e", "sin(x, out=x)", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: keyword 'out=' is not allowed in 'sin(x, out=x)'",
         chdir=True),
    Case(["jacobian", "-e", "(y := x) * 2", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: ':=' assignment is not allowed (in 'y := x')",
         chdir=True),
    Case(["jacobian", "-e", "f'{x}'", "x=[1, 2]", "-o", "{tmp}/J.npy"],
         "expression: f-strings are not allowed; expressions work on numbers only (in 'f'{x}'')",
         chdir=True),
    # check and info refuse escapes too
    Case(["check", "-e", "x.__class__", "x=1"],
         "expression: attribute access 'x.__class__' is not allowed; use functions like sin(x) or np.sin(x)"),
    Case(["info", "-e", "x.__class__", "x=1"],
         "expression: attribute access 'x.__class__' is not allowed; use functions like sin(x) or np.sin(x)"),
    # compare with a wrong reference fails and prints the worst entry
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/wrong.npy", "-o", "{tmp}/J.npy"],
         '--compare: 1 of 9 entries differs from {tmp}/wrong.npy beyond rtol=1e-05, atol=1e-07; worst '
         'df_dx[1, 2] (f[1], x[2]): computed 0 vs reference 0.5 (abs err 0.5, rel err 1); {tmp}/J.npy was '
         'not written',
         files={'wrong.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.5], [0.0, 0.0, 6.0]])}),
    # compare tolerances decide
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--rtol", "1e-3"],
         '--rtol and --atol are the tolerances of --compare; give --compare REF too'),
    # a tolerance that is not finite is a usage error not a pass
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/wrong.npy", "--rtol", "nan"],
         "Invalid value for '--rtol': 'nan' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "jacobian --help')",
         files={'wrong.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.5], [0.0, 0.0, 6.0]])}),
    Case(["check", "-e", "exp(x)", "[1, 2]", "--rtol", "nan"],
         "Invalid value for '--rtol': 'nan' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "check --help')"),
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/wrong.npy", "--rtol", "inf"],
         "Invalid value for '--rtol': 'inf' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "jacobian --help')",
         files={'wrong.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.5], [0.0, 0.0, 6.0]])}),
    Case(["check", "-e", "exp(x)", "[1, 2]", "--rtol", "inf"],
         "Invalid value for '--rtol': 'inf' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "check --help')"),
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/wrong.npy", "--atol", "nan"],
         "Invalid value for '--atol': 'nan' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "jacobian --help')",
         files={'wrong.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.5], [0.0, 0.0, 6.0]])}),
    Case(["check", "-e", "exp(x)", "[1, 2]", "--atol", "nan"],
         "Invalid value for '--atol': 'nan' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "check --help')"),
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/wrong.npy", "--atol", "inf"],
         "Invalid value for '--atol': 'inf' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "jacobian --help')",
         files={'wrong.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.5], [0.0, 0.0, 6.0]])}),
    Case(["check", "-e", "exp(x)", "[1, 2]", "--atol", "inf"],
         "Invalid value for '--atol': 'inf' is not a finite number; give a tolerance such as 1e-6 (see 'cli "
         "check --help')"),
    # compare selection against the full block or the selection
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--rows", "1:3", "--cols", "2", "--compare", "{tmp}/wrong.npy"],
         '--compare: 1 of 2 entries differs from {tmp}/wrong.npy beyond rtol=1e-05, atol=1e-07; worst '
         'df_dx[0, 0] (f[1], x[2]): computed 0 vs reference 0.5 (abs err 0.5, rel err 1)',
         files={'wrong.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.5], [0.0, 0.0, 6.0]])}),
    # compare a reordering of all rows against a full golden file or its own
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--rows", "2,1,0", "--compare", "{tmp}/off.npy"],
         '--compare: 9 of 9 entries differ from {tmp}/off.npy beyond rtol=1e-05, atol=1e-07; worst df_dx[0, '
         '0] (f[2], x[0]): computed 0 vs reference 0.5 (abs err 0.5, rel err 1)',
         files={'off.npy': np.array([[2.5, 0.5, 0.5], [0.5, 4.5, 0.5], [0.5, 0.5, 6.5]])}),
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--rows", "0,0,0", "--compare", "{tmp}/off.npy"],
         '--compare: 9 of 9 entries differ from {tmp}/off.npy beyond rtol=1e-05, atol=1e-07; worst df_dx[0, '
         '1] (f[0], x[1]): computed 0 vs reference 0.5 (abs err 0.5, rel err 1)',
         files={'off.npy': np.array([[2.5, 0.5, 0.5], [0.5, 4.5, 0.5], [0.5, 0.5, 6.5]])}),
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--rows", "::-1", "--compare", "{tmp}/off.npy"],
         '--compare: 9 of 9 entries differ from {tmp}/off.npy beyond rtol=1e-05, atol=1e-07; worst df_dx[0, '
         '0] (f[2], x[0]): computed 0 vs reference 0.5 (abs err 0.5, rel err 1)',
         files={'off.npy': np.array([[2.5, 0.5, 0.5], [0.5, 4.5, 0.5], [0.5, 0.5, 6.5]])}),
    # compare shape mismatch is exit 2 naming both shapes
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/bad.npy", "-o", "{tmp}/J.npy"],
         '--compare {tmp}/bad.npy: df_dx has shape (3, 3) but the reference has shape (3, 4); give the full '
         'block (3, 3)',
         files={'bad.npy': np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])}),
    # compare one npy with several blocks is exit 2
    Case(["jacobian", "-e", "x * y", "[1, 2]", "[3, 4]", "--compare", "{tmp}/right.npy"],
         '--compare {tmp}/right.npy: holds one array, but the result has 2 blocks (df_dx, df_dy), one per '
         'input; use an .npz with arrays named after the blocks, or pick one input with --wrt',
         files={'right.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]])}),
    # compare refuses a streamed result
    Case(["jacobian", "-e", "x ** 2", "[1, 2, 3]", "--compare", "{tmp}/right.npy", "--max-memory", "16", "-o",
          "{tmp}/big.npy"],
         '--compare needs the result in memory, but it would take 72 B, more than --max-memory 16 B; select '
         'rows or columns with --rows/--cols, or raise --max-memory',
         files={'right.npy': np.array([[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]])}),
    # check order 2 of a vector function is a usage error
    Case(["check", "-e", "x ** 2", "[1, 2]", "--order", "2"],
         'hessian needs a scalar output, but f returns shape (2,); make f return one element or a '
         'sum (.sum()), or use --batch-axis 0 for per-sample Hessians'),
    # check tolerances and nonfinite
    Case(["check", "-e", "sqrt(x)", "[0, 1]", "--fail-on-nonfinite"],
         '--fail-on-nonfinite: df_dx holds 1 inf (first at (f[0], x[0])); first non-finite value: np.sqrt '
         "produced inf in the forward sweep (element (0,)) (sqrt'(0) = inf, reported as non-finite, not "
         'hidden)'),
    Case(["jacobian", "-e", "x ** 0.5", "[0, 1]", "--fail-on-nonfinite"],
         "--fail-on-nonfinite: df_dx holds 1 inf (first at (f[0], x[0])); first non-finite value: np.power produced "
         "inf in the forward sweep (element (0,)) (d/dx = y x**(y - 1): inf at x == 0 for y < 1, reported as "
         "non-finite, not hidden; d/dy uses log(x): defined for x > 0; 0 at x == 0)"),
    Case(["jacobian", "-e", "x * 2", "{tmp}/obj.npy"],
         "{tmp}/obj.npy holds Python objects (a pickled object array); jaccli loads .npy files with "
         "allow_pickle=False for safety: save a numeric array instead",
         setup=lambda mp, tmp: np.save(tmp / "obj.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)),
    Case(["jacobian", "-e", "x * 2", "{tmp}/cut.npy"],
         "{tmp}/cut.npy is not a valid .npy file: it is truncated (its header promises 80 bytes of data, the file "
         "holds 60)", setup=lambda mp, tmp: (tmp / "cut.npy").write_bytes(_npy_bytes(np.arange(10.0))[:-20])),
    Case(["jacobian", "-e", "x * z", "[1, 0]", "[5]", "--compare", "{tmp}/blocks.npz"],
         "--compare {tmp}/blocks.npz: no array named 'df_dz'; the archive holds df_dx, df_dy; name its arrays after "
         "the blocks (df_dx, df_dz)",
         setup=lambda mp, tmp: np.savez(tmp / "blocks.npz", df_dx=np.diag([2.0, 0.0]), df_dy=np.ones((2, 1)))),
    Case(["jacobian", "-e", "x ** 2 + y", "[1, 0]", "[5]", "--compare", "{tmp}/wrong.npz"],
         "--compare: 1 of 6 entries differs from {tmp}/wrong.npz beyond rtol=1e-05, atol=1e-07; worst df_dy[1, 0] "
         "(f[1], y[0]): computed 1 vs reference 2 (abs err 1, rel err 0.5)",
         setup=lambda mp, tmp: np.savez(tmp / "wrong.npz", np.diag([2.0, 0.0]), df_dy=np.array([[1.0], [2.0]]))),
    Case(["jacobian", "-e", "x ** 2 + y", "[1, 0]", "[5]", "--compare", "{tmp}/twice.npz"],
         "--compare {tmp}/twice.npz: arr_0 is the reference of df_dx by its place, and the archive also has an "
         "array named df_dx; save each block either by name or by place",
         setup=lambda mp, tmp: np.savez(tmp / "twice.npz", np.ones((2, 1)), df_dx=np.diag([2.0, 0.0]))),
    Case(["jacobian", "-e", "x ** 2 + y", "[1, 0]", "[5]", "--compare", "{tmp}/three.npz"],
         "--compare {tmp}/three.npz: holds 3 unnamed arrays (arr_0, arr_1, arr_2), but the result has 2 blocks "
         "(df_dx, df_dy); name its arrays after the blocks",
         setup=lambda mp, tmp: np.savez(tmp / "three.npz", np.diag([2.0, 0.0]), np.ones((2, 1)), np.ones((2, 1)))),
    Case(["check", "{tmp}/model.py:wave", "[0.5, 1.5]"],
         "check failed: 2 of 4 entries differ from finite differences beyond rtol=1e-05, atol=1e-07; reverse and "
         "forward mode disagree on 2 entries; worst dwave_dx[1, 1] (wave[1], x[1]): AD 2.49374 vs finite "
         "differences 1.1036", files={"model.py": MODEL}, setup=lambda mp, tmp: _sin_rule_gives_sin(mp)),
    Case(["check", "-e", "sum(sqrt(x))", "[-1.0, -2.0]"],
         "check failed: 2 entries are NaN, which checks nothing (first df_dx[0, 0]: NaN in AD and finite "
         "differences)"),
    Case(["check", "{tmp}/model.py:wave", "[0.5, 1.5]"],
         "check failed: 4 entries are NaN, which checks nothing (first dwave_dx[0, 0]: NaN in reverse mode); "
         "reverse and forward mode disagree on 4 entries", files={"model.py": MODEL},
         setup=lambda mp, tmp: _sin_rule_gives_nan(mp)),
    # out of memory is exit 4 wherever it happens, and check has no -o to stream with
    Case(["jacobian", "{tmp}/mem.py", "[1.0]"],
         "f in {tmp}/mem.py ran out of memory (MemoryError: cannot allocate 8 EiB) ({tmp}/mem.py:2)",
         files={"mem.py": "def f(x):\n    raise MemoryError('cannot allocate 8 EiB')\n"}),
    Case(["check", "-e", "x * 2.0", "[1.0]"], "out of memory; select fewer rows or columns with --rows/--cols",
         setup=lambda mp, tmp: mp.setattr("jaccli.cli.commands.check.check_derivative", _out_of_memory)),
    Case(["check", "{tmp}/noisy.py", "[0.1, 0.2, 0.3]"],
         "check failed: f gives different values at the same inputs (two calls differ by up to {any}): it draws "
         "random numbers or reads state that changes, so finite differences of it mean nothing; seed its random "
         "generator, or pass the state as an input{any}",
         files={"noisy.py": "import numpy as np\nrng = np.random.default_rng(7)\n\n"
                            "def f(x):\n    return np.sin(x) + 1e-6 * rng.standard_normal(x.shape)\n"}),
    Case(["ops", "--family", "fourier"],
         "{any}'--family': 'fourier': families are complex, creation, diagonals, elementwise, fft, functional, "
         'indexing, joining, linalg, metadata, numerics, products, reductions, reordering, scipy.linalg, '
         "scipy.signal, scipy.special, scipy.stats, shape (see 'cli ops --help')"),
    # ---- command lines whose failure needs a set-up: files NumPy writes, a full disk, refused permissions
    Case(["jacobian", "-e", "x ** 2", "x.npy", "--format", "json"],
         "x.npy holds Python objects (a pickled object array); jaccli loads .npy files with allow_pickle=False for "
         "safety: save a numeric array instead", setup=lambda mp, tmp: _pickled(tmp / "x.npy"), chdir=True),
    Case(["jacobian", "{samples}/robot_arm.py", "{tmp}/x.npy"],
         "{tmp}/x.npy holds Python objects (a pickled object array); jaccli loads .npy files with allow_pickle=False "
         "for safety: save a numeric array instead", setup=lambda mp, tmp: _pickled(tmp / "x.npy")),
    Case(["jacobian", "-e", "x * 2", "{tmp}/in.npz"],
         "{tmp}/in.npz[e]: in an expression e is the constant 2.718281828459045, so no input can be called e; use "
         "another name, such as e1, in the expression and as e1=SOURCE",
         setup=lambda mp, tmp: np.savez(tmp / "in.npz", x=np.ones(2), e=np.ones(2))),
    Case(["jacobian", "-e", "x", "{tmp}/in.npz"],
         "{tmp}/in.npz: member 'x.npy' is not a .npy array; an .npz input holds only .npy arrays (as np.savez "
         "writes them)", setup=lambda mp, tmp: _zip(tmp / "in.npz", {"x.npy": b"junk bytes, not an array"})),
    Case(["jacobian", "-e", "x", "{tmp}/in.npz"],
         "{tmp}/in.npz: member 'readme.txt' is not a .npy array; an .npz input holds only .npy arrays (as np.savez "
         "writes them)",
         setup=lambda mp, tmp: _zip(tmp / "in.npz", {"x.npy": _npy_bytes(np.ones(3)), "readme.txt": b"hello"})),
    Case(["jacobian", "-e", "x", "{tmp}/in.npz"],
         "{tmp}/in.npz: member 'x.npy' is not a valid .npy array ({any}); save the archive again",
         setup=lambda mp, tmp: _zip(tmp / "in.npz", {"x.npy": _npy_bytes(np.ones(30))[:150]})),
    Case(["jacobian", "{samples}/kinetics.py", "{samples}/kinetics_inputs.npz", "-o", "{tmp}/J.npy"],
         "-o {tmp}/J.npy: a .npy file holds one block, and the result has a block per input (c, k); write it to "
         ".npz or .json, or pick one input with --wrt", files={"J.npy": "precious"}),
    Case(["jacobian", "-e", "x", "[1]", "-o", "{tmp}/x3.npy/J.npy"],
         "-o {tmp}/x3.npy/J.npy: {tmp}/x3.npy is a file, not a directory", files={"x3.npy": np.ones(3)}),
    Case(["jacobian", "-e", "x", "[1]", "-o", "{tmp}/x3.npy/a/J.npy"],
         "-o {tmp}/x3.npy/a/J.npy: {tmp}/x3.npy is a file, not a directory", files={"x3.npy": np.ones(3)}),
    Case(["jacobian", "{tmp}/b.py:s", "{tmp}/X.npy", "--batch-axis", "0", "-o", "{tmp}/J.npy", "--max-memory", "100"],
         "ds_dX has a single row per sample and cannot be streamed; select fewer columns with --cols",
         files={"b.py": BATCHED, "X.npy": np.ones((40, 3))}),
    Case(["jacobian", "-e", "sin(x) * x[..., :1]", "{tmp}/X.npy", "--rows", "3", "-o", "{tmp}/J.npy", "--max-memory",
          "1KiB"],
         "df_dx has a single row selected and cannot be streamed; select fewer columns with --cols",
         files={"X.npy": np.linspace(0.5, 1.5, 300).reshape(3, 100)}),
    Case(["jacobian", "-e", "sin(x) * x[..., :1]", "{tmp}/X.npy", "--rows", "1", "--batch-axis", "0", "-o",
          "{tmp}/J.npy", "--max-memory", "1KiB"],
         "df_dx has a single row selected per sample and cannot be streamed; select fewer columns with --cols",
         files={"X.npy": np.linspace(0.5, 1.5, 300).reshape(3, 100)}),
    Case(["jacobian", "-e", "sin(x) * sum(x)", "{tmp}/x.npy", "-o", "{tmp}/x.npy"],
         "-o {tmp}/x.npy: it is {tmp}/x.npy, which this command reads as input; write the result to another file",
         files={"x.npy": np.array([0.5, 1.0])}),
    Case(["jacobian", "-e", "sin(x) * sum(x)", "{tmp}/x.npy", "--compare", "{tmp}/ref.npy", "-o", "./ref.npy"],
         "-o ref.npy: it is {tmp}/ref.npy, which this command reads as input; write the result to another file",
         files={"x.npy": np.array([0.5, 1.0]), "ref.npy": np.eye(2)}, chdir=True),
    Case(["jacobian", "-e", "sin(x) * sum(x)", "{tmp}/x.npy", "--rows", "@{tmp}/rows.npy", "-o", "link.npy"],
         "-o link.npy: it is {tmp}/rows.npy, which this command reads as input; write the result to another file",
         files={"x.npy": np.array([0.5, 1.0]), "rows.npy": np.array([0])}, chdir=True,
         setup=lambda mp, tmp: (tmp / "link.npy").symlink_to(tmp / "rows.npy")),
    Case(["check", "{tmp}/domain.py", "[1e-9, 1.0]"],
         "f in {tmp}/domain.py raised ValueError: x must be nonnegative ({tmp}/domain.py:5); it raised at a point "
         "check's finite differences took, one element moved by 6.1e-06 from the input: check a point farther from "
         "the edge of the function's domain",
         files={"domain.py": "import numpy as np\n\ndef f(x):\n    if np.any(x < 0):\n"
                             "        raise ValueError('x must be nonnegative')\n    return np.sqrt(x)\n"}),
    Case(["check", "-e", "x[:3] * y", "x=[1.0, 2.0, 3.0, 4.0]", "y=2.0", "--cols", "0:4"],
         "--cols selects different cols in blocks of different sizes (df_dx, df_dy); check takes one selection for "
         "every block: pick one input with --wrt, or give explicit indices that fit every block"),
    Case(["grad", "-e", "sum(x ** 2)", "x=[1, 2]", "--expr-max-elements", "nan"],
         "Invalid value for '--expr-max-elements': 'nan' is not a number; give a number, or inf for no limit "
         "(see 'cli grad --help')"),
    Case(["grad", "-e", "sum(x ** 2)", "x=[1, 2]", "--expr-max-work", "nan"],
         "Invalid value for '--expr-max-work': 'nan' is not a number; give a number, or inf for no limit "
         "(see 'cli grad --help')"),
    Case(["grad", "-e", "sum(x ** 2)", "x=[1, 2]", "--expr-timeout", "nan"],
         "Invalid value for '--expr-timeout': 'nan' is not a number; give a number, or inf for no limit "
         "(see 'cli grad --help')"),
    Case(["jacobian", "-e", "x * 2", "x=[1, 2]", "--scheduler", "notanaddress"],
         "--scheduler 'notanaddress' is not a scheduler's address (missing port number in address 'notanaddress'); "
         "give it as tcp://HOST:PORT, as `dask scheduler` prints it"),
    Case(["jacobian", "-e", "x * 2", "x=[1, 2]", "--scheduler", "tcp://host"],
         "--scheduler 'tcp://host' is not a scheduler's address (missing port number in address 'host'); give it as "
         "tcp://HOST:PORT, as `dask scheduler` prints it"),
    Case(["jacobian", "-e", "sin(x)", "x=[1, 2]", "-o", "{tmp}/J.mtx"],
         "-o {tmp}/J.mtx: Matrix Market (.mtx) holds a sparse result; give --sparse, or write the dense result to one "
         "of .npy, .npz, .csv, .txt, .json, .zarr"),
    Case(["check", "-e", "x[1:] * x[:-1]", "x=[0.5, 1.0, 2.0]", "--sparse", "--rows", "0:1"],
         "check --sparse checks the whole sparse matrix against one JVP and one VJP, and takes no --rows; leave it "
         "out, or check the selection without --sparse"),
    Case(["check", "-e", "x[1:] * x[:-1]", "x=[0.5, 1.0, 2.0]", "--sparse", "--rows", "0:1", "--cols", "1"],
         "check --sparse checks the whole sparse matrix against one JVP and one VJP, and takes no --rows and --cols; "
         "leave them out, or check the selection without --sparse"),
    Case(["jacobian", "{tmp}/m.py", "[0.5, 1.0]", "-o", "{tmp}/m.py", "--output-format", "npy"],
         "-o {tmp}/m.py: it is {tmp}/m.py, the file of the function; write the result to another file",
         files={"m.py": "import numpy as np\ndef f(x):\n    return np.sin(x)\n"}),
    Case(["jacobian", "m.py:f", "[0.5, 1.0]", "-o", "J.npy"],
         "-o J.npy: it is m.py, the file of the function; write the result to another file",
         files={"m.py": "import numpy as np\ndef f(x):\n    return np.sin(x)\n"}, chdir=True,
         setup=lambda mp, tmp: (tmp / "J.npy").symlink_to(tmp / "m.py")),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "-o", "{tmp}/J.npy"],
         "cannot write {tmp}/J.npy: the disk is full (No space left on device); free some space or write elsewhere",
         files={"J.npy": "precious"}, setup=lambda mp, tmp: _fail_writes(mp, OSError(28, "No space left on device"))),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "-o", "{tmp}/J.json"],
         "cannot write {tmp}/J.json: the disk is full (60000 requested and 7664 written); free some space or write "
         "elsewhere", setup=lambda mp, tmp: _fail_writes(mp, OSError("60000 requested and 7664 written"))),
    Case(["jacobian", "{samples}/heat_pde.py", "{samples}/heat_pde_u.npy", "-o", "{tmp}/J.npy", "--max-memory", "1KiB"],
         "cannot write {tmp}/J.npy: the disk is full (No space left on device); free some space or write elsewhere; "
         "or, if the matrix is sparse, compute it with --sparse (-o {tmp}/J.npz), which writes only its nonzeros",
         setup=lambda mp, tmp: mp.setattr(os, "pwrite", _no_space)),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "-o", "{tmp}/J.npy"],
         "cannot write {tmp}/J.npy: Permission denied; check the path and its permissions, or write elsewhere",
         setup=lambda mp, tmp: _fail_writes(mp, PermissionError(13, "Permission denied"))),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "-o", "{tmp}/J.npy"],
         "cannot write {tmp}/J.npy: Read-only file system; check the path and its permissions, or write elsewhere",
         setup=lambda mp, tmp: _fail_writes(mp, OSError(30, "Read-only file system"))),
    Case(["jacobian", "{samples}/heat_pde.py", "{samples}/heat_pde_u.npy", "-o", "/proc/jaccli-test.npy",
          "--max-memory", "1KiB"],
         "cannot write /proc/jaccli-test.npy: {any}; check the path and its permissions, or write elsewhere",
         setup=lambda mp, tmp: mp.setattr(run_module, "check_output", lambda out, sources, **kw: None)),
    Case(["jacobian", "-e", "sin(x) * sum(x)", "x=[0.5, 1.0]", "-o", "{tmp}/J.npy"],
         "cannot write {tmp}/J.npy: the file is read-only; make it writable or write elsewhere",
         files={"J.npy": "precious"}, setup=lambda mp, tmp: (tmp / "J.npy").chmod(0o444)),
    Case(["jacobian", "-e", "sin(x)", "x=[0.5, 1.0]", "-o", "{tmp}/J.npy"],
         "cannot write {tmp}/J.npy: the directory {tmp} takes no new file (Permission denied), and jaccli writes a "
         "temporary file there and renames it to J.npy; make the directory writable, or write elsewhere",
         setup=lambda mp, tmp: _no_new_file(mp, tmp)),
    Case(["jacobian", "-e", "sin(x)", "x=[0.5, 1.0]", "-o", "J.npy"],
         "cannot write J.npy: the current directory takes no new file (Permission denied), and jaccli writes a "
         "temporary file there and renames it to J.npy; make the directory writable, or write elsewhere",
         chdir=True, setup=lambda mp, tmp: _no_new_file(mp, tmp)),
    Case(["jacobian", "-e", "x ** 2", "x.npy", "--rows", "@secret.npy"],
         "cannot read secret.npy: Permission denied; check the permissions of the file and of the directories on "
         "its path", files={"x.npy": np.array([0.5, 1.5]), "secret.npy": np.array([0, 1])}, chdir=True,
         setup=lambda mp, tmp: _refusing_to_read(mp, "secret.npy")),
    Case(["jacobian", "secret.py", "x.npy"],
         "cannot read secret.py: Permission denied; check the permissions of the file and of the directories on "
         "its path", files={"x.npy": np.array([0.5, 1.5]), "secret.py": "def f(x):\n    return x\n"}, chdir=True,
         setup=lambda mp, tmp: _refusing_to_read(mp, "secret.py")),
    Case(["jacobian", "-e", "x ** 2", "secret.npz"],
         "cannot read secret.npz: Permission denied; check the permissions of the file and of the directories on "
         "its path", chdir=True,
         setup=lambda mp, tmp: (np.savez(tmp / "secret.npz", x=np.ones(2)), _refusing_to_read(mp, "secret.npz"))),
    Case(["jacobian", "{samples}/robot_arm.py", "{samples}/robot_arm_q.npy", "--mode", "reverse"],
         "internal error in jaccli, not in f in {any}robot_arm.py: TypeError: {any} (jaccli/engine/progress.py:{n}); "
         "please report it with the traceback that the same command prints with --debug",
         setup=lambda mp, tmp: _internal(mp)),
    # sparse results: scipy missing, options that do not go with --sparse, --pattern that does not fit
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse"],
         "--sparse needs scipy, which is not installed: pip install 'jaccli[sparse]'", setup=_no_scipy),
    Case(["sparsity", "-e", "x * 2", "[1, 2]"],
         "jaccli sparsity needs scipy, which is not installed: pip install 'jaccli[sparse]'", setup=_no_scipy),
    Case(["jacobian", "-e", "x * 2", "[[1, 2]]", "--sparse", "--batch-axis", "0"],
         "--batch-axis does not work with --sparse; leave out one of them"),
    Case(["check", "-e", "x * 2", "[1, 2]", "--sparse", "--plot", "{tmp}/J.png"],
         "--plot draws check's error matrix, which check --sparse does not build (it compares J v and v^T J); "
         "leave out one of them"),
    Case(["hessian", "-e", "sum(x ** 3)", "[1, 2]", "--sparse", "--mode", "forward"],
         "--mode chooses the side of a Jacobian's colouring; a Hessian's plan is symmetric (leave out --mode; "
         "--recovery chooses how it is read back)"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "--heatmap"],
         "--heatmap colours a dense matrix on the terminal; draw a sparse result with --plot J.png, or see its "
         "pattern with `jaccli sparsity`"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "--recovery", "direct"],
         "--recovery is how a sparse Hessian is read back; use it with hessian --sparse"),
    Case(["sparsity", "-e", "x * 2", "[1, 2]", "--recovery", "substitution"],
         "--recovery is how a sparse Hessian is read back; give --hessian too"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--pattern", "{tmp}/P.npz"],
         "--pattern is the pattern of --sparse; give --sparse too"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--mode", "bidirectional"],
         "--mode bidirectional colours a sparse result; give --sparse too, or use forward or reverse"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "-o", "{tmp}/J.txt"],
         "-o {tmp}/J.txt: unknown format '.txt'; use one of .npz, .mtx, .json, .npy"),
    Case(["jacobian", "-e", "x * 2", "[1, 2, 3, 4]", "--sparse", "-o", "{tmp}/J.npy", "--max-memory", "100"],
         "-o {tmp}/J.npy: the dense matrix would take 128 B, more than --max-memory 100 B; write the sparse result "
         "to {tmp}/J.npz or {tmp}/J.mtx"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "--pattern", "{tmp}/P.npz"],
         "--pattern {tmp}/P.npz: no such file (make one with `jaccli sparsity FUNC INPUT... -o {tmp}/P.npz`)"),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "--pattern", "{tmp}/P.npz"],
         "{tmp}/P.npz is not a jaccli sparsity pattern (make one with `jaccli sparsity ... -o FILE.npz`)",
         setup=lambda mp, tmp: np.savez(tmp / "P.npz", x=np.ones(2))),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "--pattern", "{tmp}/P.npz"],
         "--pattern {tmp}/P.npz: the pattern given is for outputs [(3,)] and inputs [(3,)], not [(2,)] and [(2,)]",
         setup=lambda mp, tmp: _pattern_of(tmp, "x * 2", [1.0, 2.0, 3.0])),
    Case(["hessian", "-e", "sum(x ** 3)", "[1, 2]", "--sparse", "--pattern", "{tmp}/P.npz"],
         "--pattern {tmp}/P.npz: the pattern given is a Jacobian's, not a Hessian's",
         setup=lambda mp, tmp: _pattern_of(tmp, "x * 2", [1.0, 2.0])),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--sparse", "--pattern", "{tmp}/P.npz"],
         "--pattern {tmp}/P.npz: it was detected where f recorded other operations than it does at this point "
         "(another function, or another branch of an if or loop count): the pattern may not hold here; detect it "
         "again at this point with `jaccli sparsity`", setup=lambda mp, tmp: _pattern_of(tmp, "sin(x)", [1.0, 2.0])),
    Case(["sparsity", "-e", "x * 2", "[1, 2]", "-o", "{tmp}/P.txt"],
         "-o {tmp}/P.txt: a pattern is saved as .npz (then reused with --pattern)"),
    Case(["check", "-e", "x[1:] * x[:-1]", "[1, 2, 3, 4]", "--sparse"],
         "the sparse Jacobian disagrees with one JVP in 2 rows and with one VJP in 1 column (rtol 1e-10)",
         setup=lambda mp, tmp: scale_recovered_column(mp, 1)),
    # --workers and --scheduler (Dask): exit 2 for the options, exit 4 for a scheduler out of reach
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"],
         "--workers starts a local Dask cluster and --scheduler uses a running one; give one of them"),
    Case(["hessian", "-e", "sum(x ** 3)", "[1, 2]", "--scheduler", "tcp://127.0.0.1:9"],
         "cannot reach the Dask scheduler at tcp://127.0.0.1:9 ({any}); start one (dask scheduler) or check the "
         "address, or use --workers N for a local cluster", setup=lambda mp, tmp: short_connect_timeout(mp)),
    Case(["jacobian", "-e", "x * 2", "[1, 2]"],
         "cannot reach the Dask scheduler at tcp://127.0.0.1:9 (from DASK_SCHEDULER_ADDRESS) ({any}); start one "
         "(dask scheduler) or check the address, or use --workers N for a local cluster",
         env={"DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:9"}, setup=lambda mp, tmp: short_connect_timeout(mp)),
    Case(["jacobian", "-e", "cumsum(x)", "[1, 2]", "--workers", "2"],
         "the environment variable JACCLI_PARALLEL_MIN_WORK: 'soon' is not a number of seconds; write e.g. 0 "
         "(always the cluster) or 5", env={"JACCLI_PARALLEL_MIN_WORK": "soon"}),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "--workers", "2"],
         "--workers needs dask[distributed], which is not installed: pip install 'jaccli[dask]'",
         setup=lambda mp, tmp: _without_dask(mp)),
    # -o J.zarr: zarr is an optional extra; only a zarr store is replaced by one
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "-o", "{tmp}/J.zarr"],
         "-o {tmp}/J.zarr needs zarr, which is not installed: pip install 'jaccli[zarr]'",
         setup=lambda mp, tmp: _without_dask(mp, ("zarr",))),
    Case(["jacobian", "-e", "x * 2", "[1, 2]", "-o", "{tmp}/J.zarr"],
         "-o {tmp}/J.zarr: it is a file, not a zarr store, and jaccli replaces only a zarr store with one; remove "
         "it or write elsewhere", files={"J.zarr": "notes\n"}),
]


def short_connect_timeout(monkeypatch) -> None:
    """Dask gives up reaching a scheduler after 1 s (DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT, read once
    at import, for a process of its own)."""
    import dask
    import distributed  # noqa: F401  (its defaults are in dask's config once imported)

    monkeypatch.setitem(dask.config.config["distributed"]["comm"]["timeouts"], "connect", "1s")


def _without_dask(monkeypatch, modules: tuple[str, ...] = ("dask", "distributed")) -> None:
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in modules else find_spec(name, *a))



def _filled(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp)).replace("{samples}", str(SAMPLES))


def _pattern(expected: str, tmp: Path) -> str:
    places = {"{tmp}": re.escape(str(tmp)), "{samples}": re.escape(str(SAMPLES)), "{any}": ".*", "{n}": r"\d+"}
    return "".join(places.get(part, re.escape(part)) for part in re.split(r"(\{tmp\}|\{samples\}|\{any\}|\{n\})",
                                                                         expected))


@pytest.mark.parametrize("case", CLI_MESSAGES, ids=[" ".join(case.args)[:60] for case in CLI_MESSAGES])
def test_the_message_of_each_command_line_error(case, tmp_path, monkeypatch):
    if any("/proc/" in arg for arg in case.args) and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    for name, content in (case.files or {}).items():
        if isinstance(content, np.ndarray):
            np.save(tmp_path / name, content)
        else:
            (tmp_path / name).write_text(content)
    if case.chdir:
        monkeypatch.chdir(tmp_path)
    if case.setup is not None:
        case.setup(monkeypatch, tmp_path)
    args = [_filled(arg, tmp_path) for arg in case.args]
    json_asked = _with_format_json(args)
    result = invoke(make_runner(), *args, env=case.env)
    line = result.stderr.rstrip("\n").rpartition("\n")[2]  # (a check's report lines come before it)
    assert result.exit_code != 0 and line.startswith("Error: "), result.stderr
    assert re.fullmatch(_pattern(case.expected, tmp_path), line[len("Error: "):]), line
    assert len(line) <= MAX_MESSAGE + 100  # one line, never kilobytes
    if json_asked:
        # Under --format json, stdout is one JSON object: the error's, or the report of a check that failed.
        assert result.stdout.count("\n") == 1, result.stdout
        doc = json.loads(result.stdout)
        if "error" in doc:
            assert doc == {"schema": 1, "error": {"kind": result.error.kind, "message": line[len("Error: "):],
                                                  "exit_code": result.exit_code}}
        else:
            assert doc["passed"] is False and result.exit_code == 1


def _with_format_json(args: list[str]) -> bool:
    """Add --format json to the arguments of a command that takes it (before any --), unless --format is given.

    The golden table's cases run so: their messages are the same on stderr, and stdout is the JSON object
    (issue 41: every error is one JSON object under --format json).
    """
    from jaccli.cli.main import cli

    options = args[:args.index("--")] if "--" in args else args
    if not args or args[0] not in cli.commands or any(a.startswith("--format") for a in options):
        return False
    args.insert(len(options), "--format")
    args.insert(len(options) + 1, "json")
    return True


def test_no_message_of_the_command_line_uses_the_python_apis_words():
    python_words = re.compile(r"batch_axis=|\bJ\[a:b\]|lambda x: f\(x\)|\bwrt=|\brows=|\bcols=")
    assert [c.expected for c in CLI_MESSAGES if python_words.search(c.expected)] == []


@pytest.mark.parametrize("signum, stopped", [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "stopped by SIGTERM"),
                                             (signal.SIGHUP, "stopped by SIGHUP")])
def test_the_message_of_an_interruption_names_the_files_written_before_it(tmp_path, signum, stopped):
    signal_ = failures.Terminated(signum, signal.Signals(signum).name)
    assert failures.interrupted(signal_).format_message() == f"{stopped}; no file was written or changed"
    target = tmp_path / "J.npy"
    assert failures.interrupted(signal_, [target]).format_message() == \
        f"{stopped} after {target} was written completely; no other file was written or changed"


# ---------------------------------------------------------------- messages made where a real process meets them
# (a full or closed stdout, a file size limit, os._exit: test_cli_subprocess runs those; here, the words)

FULL = "cannot write stdout: the disk is full (No space left on device); free some space or write elsewhere"
TOO_LARGE = "check the path and its permissions, or write elsewhere"


def test_the_messages_of_writes_that_fail():
    assert str(atomic.write_error("stdout", OSError(errno.ENOSPC, "No space left on device"))) == FULL
    assert str(atomic.write_error("stdout", OSError(errno.EFBIG, "File too large"))) == \
        f"cannot write stdout: File too large; {TOO_LARGE}"
    assert str(atomic.write_error("J.npy", OSError(errno.EFBIG, "File too large"))) == \
        f"cannot write J.npy: File too large; {TOO_LARGE}"
    failure = failures.after_writing(failures.ResourceExceeded(FULL), [Path("J.npy")])
    assert failure.format_message() == f"{FULL}; J.npy was written completely before this error"


def test_the_message_of_a_stdout_closed_at_start(monkeypatch):
    monkeypatch.setattr(failures, "is_closed", lambda stream: True)
    assert failures.stream_error("stdout", OSError(errno.EBADF, "Bad file descriptor")).format_message() == \
        "cannot write stdout: it was closed when jaccli started; run jaccli with an open stdout, or write the " \
        "result to a file with -o"


def test_the_message_of_os_exit_in_the_function():
    error = failures.translate(failures.RaisedInFunction(failures.HardExit(0)), what="f in hard.py")
    assert error.format_message() == \
        "f in hard.py called os._exit(0); a function to differentiate must return its value"
