"""Faults in the user's function and odd terminals, run through the installed `jaccli`: a function that
forks, NaN in a check, a zero-width terminal, crashes and exit codes (issue 42)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from .helpers import assert_error
from .test_cli import invoke, make_runner
from .test_cli_subprocess import JACCLI, clean_env, jaccli


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_forked_child_never_writes_prints_or_exits_through_jaccli(tmp_path):
    _write(tmp_path, "fork.py", """\
        import os

        def f(x):
            if os.fork() == 0:
                return x * 3.0
            return x * 2.0
        """)
    (tmp_path / "x.csv").write_text("1.0\n2.0\n")
    # subprocess.run reads the pipes to their end: a child that lives on holds them, so it is waited for too.
    written = jaccli("jacobian", "fork.py", "x.csv", "-o", "J.csv", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert written.stderr.count("wrote J.csv") == 1, written.stderr
    assert np.array_equal(np.loadtxt(tmp_path / "J.csv", delimiter=","), 2.0 * np.eye(2))
    shown = jaccli("jacobian", "fork.py", "x.csv", "--format", "csv", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["2.0,0.0", "0.0,2.0"], shown.stdout


def test_a_child_forked_while_the_file_loads_ends_there(tmp_path):
    _write(tmp_path, "fork_at_import.py", """\
        import os

        os.fork()

        def f(x):
            return x * 2.0
        """)
    (tmp_path / "x.csv").write_text("1.0\n2.0\n")
    shown = jaccli("jacobian", "fork_at_import.py", "x.csv", "--format", "csv", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["2.0,0.0", "0.0,2.0"], shown.stdout


def test_check_fails_on_nan_and_says_where(tmp_path):
    from jaccli.check.verification import check_derivative

    with np.errstate(invalid="ignore"):  # (f's own NumPy warning: sqrt of a negative number)
        assert not check_derivative(lambda x: np.sum(np.sqrt(x)), np.array([-1.0, -2.0])).passed
    result = invoke(make_runner(), "check", "-e", "sum(sqrt(x))", "x=[-1.0, -2.0]")
    assert result.exit_code == 1 and result.error.kind == "check_failed", result.stderr
    assert "df_dx[0, 0]  x[0]" in result.stdout.replace("f, x[0]", "x[0]")
    assert result.stdout.startswith("FAILED: 2 entries are NaN")


def test_reverse_and_forward_mode_apart_by_nan_is_not_a_difference_of_0(tmp_path, monkeypatch):
    from jaccli.engine.registry import PRIMITIVES

    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * np.nan))
    result = invoke(make_runner(), "check", "-e", "sin(x)", "[0.5, 1.5]")
    assert result.exit_code == 1 and result.error.kind == "check_failed", result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("reverse vs forward"))
    assert line.endswith("DISAGREE on 4 entries (NaN or inf on one side only at 4 entries)"), line


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script(1) for a pseudo-terminal")
@pytest.mark.parametrize("columns", ["0", "5"])
def test_a_terminal_narrower_than_a_view_gets_the_plain_form(tmp_path, columns):
    runs = {"jacobian": "jaccli jacobian -e 'x * 2.0' '[1.0, 2.0]'", "check": "jaccli check -e 'sin(x)' '[1.0]'",
            "ops": "jaccli ops --family shape"}
    for command, line in runs.items():
        # stdout is the pseudo-terminal that script(1) makes: jaccli draws its rich view there
        shown = subprocess.run(["script", "-qec", f"COLUMNS={columns} {JACCLI[0]} {line[len('jaccli '):]}",
                                "/dev/null"], cwd=tmp_path, capture_output=True, text=True, env=clean_env(),
                               timeout=60)
        out = shown.stdout.replace("\r", "")
        assert shown.returncode == 0, out
        if command == "jacobian":
            assert out.splitlines() == ["2 0", "0 2"], out
        elif command == "check":
            assert out.splitlines()[1].startswith("check of -e 'sin(x)': Jacobian") and out.startswith("passed: "), out
        else:
            assert "np.atleast_1d" in out.split(), out


def test_out_of_memory_in_the_function_is_exit_4(tmp_path):
    func = tmp_path / "mem.py"
    func.write_text("def f(x):\n    raise MemoryError('cannot allocate 8 EiB')\n")
    assert_error(invoke(make_runner(), "jacobian", str(func), "[1.0]"), "resource_limit", 4)


def test_out_of_memory_in_check_does_not_advise_an_option_check_lacks(monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr("jaccli.cli.commands.check.check_derivative", out_of_memory)
    message = assert_error(invoke(make_runner(), "check", "-e", "x * 2.0", "[1.0]"), "resource_limit", 4)
    assert "-o" not in message


def test_float16_inputs_are_differentiated_in_float32_with_one_note(tmp_path):
    import jaccli

    x16 = np.array([1.0, 2.0, 0.3], dtype=np.float16)
    exact = np.diag(3.0 * np.cos(x16.astype(np.float64)))  # (float16's values are exact in float32)
    J = np.asarray(jaccli.jacobian(lambda x: 3.0 * np.sin(x), x16))
    assert J.dtype == np.float32
    np.testing.assert_allclose(J, exact, rtol=1e-6, atol=1e-7)
    np.save(tmp_path / "x.npy", x16)
    (tmp_path / "f.py").write_text("import numpy as np\n\ndef f(x):\n    return 3.0 * np.sin(x)\n")
    result = invoke(make_runner(), "jacobian", str(tmp_path / "f.py"), str(tmp_path / "x.npy"), "--format", "json")
    assert result.exit_code == 0, result.stderr
    block = __import__("json").loads(result.stdout)["blocks"]["df_dx"]
    assert block["dtype"] == "float32"
    np.testing.assert_allclose(np.array(block["data"]), exact, rtol=1e-6, atol=1e-7)
    notes = [line for line in result.stderr.splitlines() if "float16" in line]
    assert len(notes) == 1 and "float32" in notes[0], result.stderr


@pytest.mark.parametrize("index", ["7", "99999999999999999999"])
def test_an_index_out_of_range_inside_f_is_the_function_failing(tmp_path, index):
    (tmp_path / "f.py").write_text(f"def f(x):\n    return x[{index}]\n")
    assert_error(invoke(make_runner(), "jacobian", str(tmp_path / "f.py"), "[1.0, 2.0]"), "function_failed", 3)
    assert_error(invoke(make_runner(), "jacobian", "-e", f"x[{index}]", "[1.0, 2.0]"), "function_failed", 3)


@pytest.mark.parametrize("where", ["file", "expression"])
def test_out_of_memory_in_the_function_or_an_expression_is_exit_4(tmp_path, monkeypatch, where):
    if where == "file":
        (tmp_path / "f.py").write_text("import numpy as np\n\ndef helper(x):\n    raise MemoryError('8 EiB')\n\n"
                                       "def f(x):\n    return helper(x)\n")
        args = [str(tmp_path / "f.py"), "[1.0]"]
    else:
        from jaccli.expr.evaluation import ExpressionFunction

        def out_of_memory(self, *a, **k):
            raise MemoryError("cannot allocate 8 EiB")
        monkeypatch.setattr(ExpressionFunction, "__call__", out_of_memory)
        args = ["-e", "sin(x)", "[1.0]"]
    for command in ("jacobian", "hessian", "check"):
        assert_error(invoke(make_runner(), command, *args), "resource_limit", 4)


# ([x[0], x] is two outputs: a list that holds an array is f's outputs, as a tuple is)
@pytest.mark.parametrize("returned", ["[x[0], [x[1]]]", "[[x[0], x[1]], [x[0]]]", "[x[0] * 1.0, [1.0, 2.0]]"])
def test_a_ragged_list_f_returns_is_blamed_on_f_not_on_the_launcher(tmp_path, returned):
    (tmp_path / "f.py").write_text(f"import numpy as np\n\ndef f(x):\n    return {returned}\n")
    message = assert_error(invoke(make_runner(), "jacobian", str(tmp_path / "f.py"), "[1.0, 2.0]"),
                           "function_failed", 3)
    assert "ragged" in message and f"{tmp_path / 'f.py'}:3" in message and "bin/jaccli" not in message, message
    shown = jaccli("jacobian", "f.py", "[1.0, 2.0]", cwd=tmp_path)  # the installed launcher is no user's line
    assert shown.returncode == 3 and "(f in f.py:3)" in shown.stderr and "bin" not in shown.stderr, shown.stderr


def test_a_ragged_list_made_into_an_array_inside_f_names_its_line(tmp_path):
    (tmp_path / "f.py").write_text("import numpy as np\n\ndef f(x):\n    y = np.array([x[0], [x[1]]])\n"
                                   "    return y\n")
    message = assert_error(invoke(make_runner(), "jacobian", str(tmp_path / "f.py"), "[1.0, 2.0]"),
                           "function_failed", 3)
    assert message.startswith(f"{tmp_path / 'f.py'}:4: ") and "ragged" in message, message


def test_a_list_nested_too_deep_is_not_called_ragged(tmp_path):
    deep = "[" * 150 + "1.0" + "]" * 150
    message = assert_error(invoke(make_runner(), "jacobian", "-e", "sum(x)", deep), "usage", 2)
    assert "ragged" not in message and "150 deep" in message and "64 dimensions" in message, message
    (tmp_path / "f.py").write_text("def f(x):\n    r = x[0]\n    for _ in range(150):\n        r = [r]\n"
                                   "    return r\n")
    message = assert_error(invoke(make_runner(), "jacobian", str(tmp_path / "f.py"), "[1.0, 2.0]"),
                           "function_failed", 3)
    assert "ragged" not in message and "64 dimensions" in message, message


@pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="the watching parent needs fork and sigwaitinfo")
def test_a_segfault_in_the_function_is_said_in_one_line_with_exit_3(tmp_path):
    _write(tmp_path, "crash.py", """\
        import ctypes

        def f(x):
            ctypes.string_at(0)  # a C extension reading address 0
            return x
        """)
    crashed = jaccli("jacobian", "crash.py", "[1.0, 2.0]", "-o", "J.npy", cwd=tmp_path)
    assert crashed.returncode == 3, crashed.stderr
    last = crashed.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: jaccli crashed with a segmentation fault (SIGSEGV)"), crashed.stderr
    assert 'crash.py", line 4 in f' in crashed.stderr  # faulthandler's stack names the user's line
    assert not (tmp_path / "J.npy").exists()


@pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="the watching parent needs fork and sigwaitinfo")
def test_an_abort_in_the_function_is_said_with_its_article(tmp_path):
    _write(tmp_path, "abort.py", """\
        import os

        def f(x):
            os.abort()
            return x
        """)
    crashed = jaccli("jacobian", "abort.py", "[1.0, 2.0]", cwd=tmp_path)
    assert crashed.returncode == 3, crashed.stderr
    assert crashed.stderr.strip().splitlines()[-1].startswith("Error: jaccli crashed with an abort (SIGABRT) while"), \
        crashed.stderr


def _started_slow(tmp_path, seconds: float, *options: str) -> subprocess.Popen:
    """jaccli on an f that says "started" on stderr, then sleeps `seconds`; returned once f has started."""
    _write(tmp_path, "slow.py", f"""\
        import time

        def f(x):
            print("started", flush=True)
            time.sleep({seconds})
            return x
        """)
    proc = subprocess.Popen(JACCLI + ["jacobian", "slow.py", "[1.0]", *options], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    assert proc.stderr.readline().strip() == "started"
    return proc


@pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="the watching parent needs fork and sigwaitinfo")
def test_a_signal_sent_to_jaccli_reaches_the_command_under_the_watching_parent(tmp_path):
    proc = _started_slow(tmp_path, 30)
    proc.send_signal(signal.SIGTERM)  # to the parent's pid, as `timeout` or a CI runner sends it
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "stopped by SIGTERM" in err, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child ends with its parent through prctl")
def test_a_sigkill_to_jaccli_ends_the_command_it_watches_and_nothing_is_written(tmp_path):
    proc = _started_slow(tmp_path, 3, "-o", "J.npy")
    proc.kill()  # SIGKILL to the parent's pid: it cannot pass it on
    proc.communicate(timeout=60)
    time.sleep(4)  # longer than f's sleep: a child left running would have written J.npy by now
    assert not (tmp_path / "J.npy").exists()


@pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="the watching parent needs fork and sigwaitinfo")
@pytest.mark.parametrize("again", ["at-once", "a-second-later"])
def test_a_second_signal_while_jaccli_stops_is_ignored(tmp_path, again):
    """The first SIGTERM unwinds the run; f's cleanup then takes long. The same signal again (GNU timeout sends it to
    jaccli, then to its process group) is the same request: the run stops once, with one line and exit 143."""
    _write(tmp_path, "slow.py", """\
        import time

        def f(x):
            print("started", flush=True)
            try:
                time.sleep(30)
            finally:
                time.sleep(2)
            return x
        """)
    proc = subprocess.Popen(JACCLI + ["jacobian", "slow.py", "[1.0]", "-o", "J.npy"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), start_new_session=True)
    assert os.read(proc.stderr.fileno(), 100) == b"started\n"  # (the pipe itself: no buffer of this side)
    time.sleep(0.2)  # f sleeps: the signal finds it there
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    if again == "at-once":
        os.killpg(proc.pid, signal.SIGTERM)  # jaccli and the command's process: the command gets it twice
    else:
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err)
    assert err.decode() == "Error: stopped by SIGTERM; no file was written or changed\n"
    assert time.monotonic() - start > 1.5  # f's cleanup ran to its end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow.py"]


@pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="the watching parent needs fork and sigwaitinfo")
def test_a_signal_while_the_function_prints_stops_the_run_and_the_line_is_printed_once(tmp_path):
    """A stop signal that comes as f's print is flushed: raised inside the buffered stream just after its bytes
    went out, it left them in the buffer, and they came out again before the Error line."""
    _write(tmp_path, "chatty.py", """\
        import time

        def f(x):
            for i in range(10 ** 7):
                print(f"line {i}", flush=True)
            return x
        """)
    for _ in range(5):
        proc = subprocess.Popen(JACCLI + ["jacobian", "chatty.py", "[1.0]"], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=clean_env(), start_new_session=True)
        assert os.read(proc.stderr.fileno(), 7) == b"line 0\n"
        time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        lines = ("line 0\n" + err.decode()).splitlines()
        assert proc.returncode == 143 and lines[-1] == "Error: stopped by SIGTERM; no file was written or changed", \
            (proc.returncode, lines[-3:])
        printed = lines[:-1]
        assert printed == [f"line {i}" for i in range(len(printed))], [p for p in printed if p][-3:]
