"""Real runs of the installed `jaccli`: files written on disk, read back, checked against closed forms and
central differences; the entry points, terminals (through a pseudo-terminal) and start-up imports."""

from __future__ import annotations

import io
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest
from numpy.testing import assert_allclose

from .test_cli import (
    SAMPLES,
    heat_pde_jacobian,
    kinetics_jacobians,
    load_inputs,
    logistic_parts,
    robot_arm_jacobian,
    sample,
    softmax_parts,
)

_EXE = Path(sys.executable).with_name("jaccli")
JACCLI = [str(_EXE)] if _EXE.exists() else [sys.executable, "-m", "jaccli"]
# click 8.2+ prints the help of `jaccli` alone on stderr and exits 2; 8.1 printed it on stdout and exited 0.
HELP_IS_USAGE_ERROR = pytest.mark.skipif(not hasattr(click.exceptions, "NoArgsIsHelpError"),
                                         reason="click < 8.2 prints the help of jaccli alone on stdout")


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "JACCLI_DEBUG",
                                                                "DASK_SCHEDULER_ADDRESS")}
    env.update(COLUMNS="100", **extra)
    return env


def at_a_terminal(then=None):
    """A preexec_fn: the child starts with Ctrl-C's, SIGTERM's and SIGHUP's default actions, as a command typed at
    a terminal does, even where the suite itself runs with them ignored (a background job of a shell without job
    control ignores SIGINT, and the child would inherit that); then `then()`, if given."""
    import signal

    def preexec() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if then is not None:
            then()

    return preexec


def assert_error_line(stderr: str) -> None:
    """stderr is one `Error: ...` line (its wording: test_error_messages.py)."""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr


def jaccli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(JACCLI + list(args), cwd=cwd, capture_output=True, text=True, env=clean_env(**env),
                          timeout=60)


def central_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f / d x by central differences, shaped f(x).shape + x.shape."""
    out = np.asarray(f(x))
    J = np.zeros(out.shape + x.shape)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = eps
        J[(Ellipsis,) + idx] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return J


def sample_function(name: str):
    return runpy.run_path(str(SAMPLES / name))["f"]


@pytest.fixture(scope="module")
def inputs() -> dict:
    return load_inputs()


def test_jacobian_to_npy_matches_closed_form_and_differences(tmp_path, inputs):
    done = jaccli("jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", "J.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == "wrote J.npy: df_dq (3, 3)\n"
    J = np.load(tmp_path / "J.npy", allow_pickle=False)
    assert_allclose(J, robot_arm_jacobian(inputs["q"]), rtol=1e-12, atol=1e-14)
    assert_allclose(J, central_jacobian(sample_function("robot_arm.py"), inputs["q"]), rtol=1e-7, atol=1e-9)


def test_hessian_to_npz_with_metadata(tmp_path, inputs):
    done = jaccli("hessian", sample("logistic.py"), sample("logistic_w.npy"), sample("logistic_X.csv"),
                  sample("logistic_y.txt"), "--wrt", "w", "-o", "H.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "H.npz", allow_pickle=False) as archive:
        H = archive["d2f_dw_dw"]
        meta = json.loads(str(archive["__meta__"]))
    _, hess = logistic_parts(inputs["w"], inputs["X"], inputs["y"])
    assert_allclose(H, hess, rtol=1e-10)
    f = sample_function("logistic.py")
    gradient = lambda w: central_jacobian(lambda v: f(v, inputs["X"], inputs["y"]), w, 1e-5)  # noqa: E731
    assert_allclose(H, central_jacobian(gradient, inputs["w"], 1e-4), rtol=1e-4, atol=1e-6)
    assert meta["schema"] == 1 and meta["command"] == "hessian" and meta["wrt"] == ["w"]
    assert meta["inputs"]["X"] == {"shape": [40, 3], "dtype": "float64", "differentiated": False}


def test_jacobian_to_json_file(tmp_path, inputs):
    done = jaccli("jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "-o", "K.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "K.json").read_text())
    dc, dk = kinetics_jacobians(inputs["c"], inputs["k"])
    assert_allclose(doc["blocks"]["df_dc"]["data"], dc, rtol=1e-12)
    assert_allclose(doc["blocks"]["df_dk"]["data"], dk, rtol=1e-12)
    f = sample_function("kinetics.py")
    assert_allclose(dc, central_jacobian(lambda c: f(c, inputs["k"]), inputs["c"], 1e-7), rtol=1e-6, atol=1e-6)
    assert doc["meta"]["blocks"]["df_dc"]["shape"] == [3, 3]


def test_selected_rows_to_csv(tmp_path, inputs):
    done = jaccli("jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:4", "-o", "J.csv",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_allclose(np.loadtxt(tmp_path / "J.csv", delimiter=","), heat_pde_jacobian(inputs["u"])[:4], rtol=1e-15)


def test_gradient_to_txt(tmp_path, inputs):
    done = jaccli("grad", sample("softmax_xent.py"), sample("softmax_xent_z.npy"), sample("softmax_xent_p.csv"),
                  "--wrt", "z", "-o", "g.txt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_allclose(np.loadtxt(tmp_path / "g.txt"), softmax_parts(inputs["z"], inputs["p"])[0], atol=1e-15)


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="needs /dev/stdout")
@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
@pytest.mark.parametrize("limit", [[], ["--max-memory", "1K"]], ids=["whole", "streamed"])
def test_output_to_dev_stdout_reaches_stdout_on_a_pipe(tmp_path, inputs, name, limit):
    # The command's process points descriptor 1 at stderr while f runs (streams.py): -o /dev/stdout is its results
    fmt = "npy" if limit else "csv"
    done = subprocess.run(JACCLI + ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", name,
                                    "--output-format", fmt, *limit], cwd=tmp_path, capture_output=True,
                          env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    J = np.load(io.BytesIO(done.stdout)) if limit else np.loadtxt(io.StringIO(done.stdout.decode()), delimiter=",")
    assert_allclose(J, robot_arm_jacobian(inputs["q"]), rtol=1e-12, atol=1e-14)
    assert done.stderr.decode().startswith(f"wrote {name}: df_dq (3, 3)")


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="needs /dev/stdout")
def test_output_to_dev_stdout_redirected_to_a_file_is_written_where_the_stream_is(tmp_path, inputs):
    # A shell's `> out.txt` (here with a line before): the result goes on after it, neither over it nor to stderr
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        out.write("before\n")
        out.flush()
        done = subprocess.run(JACCLI + ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o",
                                        "/dev/stdout", "--output-format", "csv"], cwd=tmp_path, stdout=out,
                              stderr=err, env=clean_env(), timeout=60)
    assert done.returncode == 0, (tmp_path / "err.txt").read_text()
    first, rest = (tmp_path / "out.txt").read_text().split("\n", 1)
    assert first == "before"
    assert_allclose(np.loadtxt(io.StringIO(rest), delimiter=","), robot_arm_jacobian(inputs["q"]), rtol=1e-12)
    assert (tmp_path / "err.txt").read_text() == "wrote /dev/stdout: df_dq (3, 3)\n"


def test_json_on_a_pipe_has_no_escape_codes(tmp_path, inputs):
    done = jaccli("jacobian", sample("mlp.py"), sample("mlp_x.npy"), "--format", "json", cwd=tmp_path)
    assert done.returncode == 0 and "\x1b[" not in done.stdout + done.stderr
    J = np.array(json.loads(done.stdout)["blocks"]["df_dx"]["data"])
    assert_allclose(J, central_jacobian(sample_function("mlp.py"), inputs["mlp_x"]), rtol=1e-6, atol=1e-8)


def test_usage_error_exit_code_and_one_line(tmp_path):
    done = jaccli("jacobian", sample("robot_arm.py"), "missing.npy", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert_error_line(done.stderr)


def test_python_dash_m_jaccli(tmp_path):
    done = subprocess.run([sys.executable, "-m", "jaccli", "--version"], cwd=tmp_path, capture_output=True,
                          text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("jaccli 0.1.0\nnumpy ")
    done = subprocess.run([sys.executable, "-m", "jaccli", "jacobian", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("Usage: jaccli jacobian")


def _imported(args: list[str], cwd: Path) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "jaccli", *args], cwd=cwd,
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_version_imports_neither_numpy_nor_rich(tmp_path):
    modules = _imported(["--version"], tmp_path)
    assert "click" in modules
    assert not {m for m in modules if m.split(".")[0] in ("numpy", "rich")}


def test_writing_a_file_from_a_pipe_does_not_import_rich(tmp_path):
    modules = _imported(["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", "J.npy"], tmp_path)
    assert "numpy" in modules
    assert not {m for m in modules if m.split(".")[0] == "rich"}


def test_writing_a_npy_file_imports_no_module_it_does_not_use(tmp_path):
    # Start-up time counts (the benchmark's end to end: jaccli jacobian ... -o J.npy against a NumPy script):
    # JSON (npz metadata, --format json), tracebacks (errors), shell completion and masked arrays (an input
    # check) load only when used; string (its Template pattern) and tempfile (with shutil, random, bz2 and lzma,
    # ~3 ms: atomic.mkstemp does its part) not at all.
    modules = _imported(["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", "J.npy"], tmp_path)
    assert_allclose(np.load(tmp_path / "J.npy"), robot_arm_jacobian(np.load(sample("robot_arm_q.npy"))), atol=1e-12)
    assert modules & {"json", "traceback", "click.shell_completion", "numpy.ma", "string", "tempfile", "shutil",
                      "random"} == set()


def test_a_jacobian_to_a_file_loads_no_replay_nor_package_it_does_not_use(tmp_path):
    # record_once's package (replays, compiled sweeps) loads when f is a record_once function or a gradient
    # is recorded; difflib is click's "did you mean" list, which its parser built for -o (tried as a long
    # option first); np.fft's and np.linalg's rules at f's first call of theirs; SciPy, Matplotlib, Dask, rich and
    # the installed metadata only where a command needs them. (sys.modules at exit: -X importtime does not
    # see what loads while the user's code has stderr.)
    args = ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", "J.npy"]
    code = ("import atexit, sys\n"
            "atexit.register(lambda: open('modules.txt', 'w').write('\\n'.join(sorted(sys.modules))))\n"
            f"from jaccli.cli.main import main\nmain({args!r})\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert_allclose(np.load(tmp_path / "J.npy"), robot_arm_jacobian(np.load(sample("robot_arm_q.npy"))), atol=1e-12)
    modules = set((tmp_path / "modules.txt").read_text().split())
    assert "jaccli.engine.recording" in modules
    unused = ("scipy", "matplotlib", "dask", "distributed", "rich", "difflib")
    assert {m for m in modules if m.split(".")[0] in unused or m.startswith("jaccli.replay")
            or m in ("importlib.metadata", "numpy.fft", "jaccli.engine.rules.fft",
                     "jaccli.engine.rules.linalg")} == set()
    # -e's evaluator and its budget load with an expression; the report's renderer when stdout shows a result.
    assert {m for m in modules if m.startswith("jaccli.expr") or m == "jaccli.cli.render.display"} == set()


def test_import_jaccli_loads_neither_numpy_nor_click(tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import jaccli; print(jaccli.__version__)"],
                          cwd=tmp_path, capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0 and done.stdout == "0.1.0\n", done.stderr
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "jaccli" in modules
    assert not {m for m in modules if m.split(".")[0] in ("numpy", "click", "rich")}


def test_a_run_that_writes_no_file_does_not_import_tempfile(tmp_path):
    # tempfile brings shutil, random, bz2 and lzma: about 3 ms of start-up that only -o needs.
    modules = _imported(["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy")], tmp_path)
    assert "numpy" in modules and "tempfile" not in modules


@pytest.mark.parametrize("command", ["jacobian", "info"])
def test_start_up_is_kept_out_of_garbage_collection_and_f_loads_with_the_collector_on(tmp_path, command):
    # The collector walked start-up's ~40,000 objects (NumPy, click, jaccli), which live as long as the
    # process, in every collection the imports triggered and again at exit: ~10-20 ms of a run. Now they
    # are frozen before the user's module loads, and the collector is back on for it.
    (tmp_path / "f.py").write_text("import gc\nimport numpy as np\n\n"
                                   "print('collector', gc.isenabled(), gc.get_freeze_count())\n\n"
                                   "def f(x):\n    return np.sin(x)\n")
    done = jaccli(command, "f.py", "[0.5, 1.0]", *(["-o", "J.npy"] if command == "jacobian" else []), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (enabled, frozen), = [line.split()[1:] for line in done.stderr.splitlines() if line.startswith("collector ")]
    assert enabled == "True" and int(frozen) > 10_000
    if command == "jacobian":
        assert_allclose(np.load(tmp_path / "J.npy"), np.diag(np.cos([0.5, 1.0])), rtol=1e-15)


def read_terminal(main: int) -> bytes:
    """All a pseudo-terminal's program wrote, read from its `main` end until the other end closes."""
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # Linux reports the closed other end as EIO
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _on_a_terminal(args: list[str], cwd: Path, **env: str) -> str:
    """stdout of jaccli run on a pseudo-terminal (stderr on a pipe)."""
    pty = pytest.importorskip("pty")
    main, secondary = pty.openpty()
    try:
        done = subprocess.run(JACCLI + args, cwd=cwd, stdout=secondary, stderr=subprocess.PIPE,
                              env=clean_env(TERM="xterm-256color", **env), timeout=60)
        os.close(secondary)
        secondary = -1
        assert done.returncode == 0, done.stderr
        return read_terminal(main).decode()
    finally:
        os.close(main)
        if secondary != -1:
            os.close(secondary)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_terminal_gets_a_coloured_table_and_no_color_turns_it_off(tmp_path):
    args = ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--heatmap"]
    coloured = _on_a_terminal(args, tmp_path)
    assert "df_dq  shape=(3, 3)" in coloured and "q[0]" in coloured and "\x1b[" in coloured
    plain = _on_a_terminal(args, tmp_path, NO_COLOR="1")
    assert "df_dq  shape=(3, 3)" in plain and "\x1b[" not in plain


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_full_stdout_is_exit_4_in_one_line(tmp_path, fmt):
    with open("/dev/full", "w") as full:
        done = subprocess.run(JACCLI + ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format",
                                        fmt], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True,
                              env=clean_env(), timeout=60)
    assert done.returncode == 4, done.stderr
    assert_error_line(done.stderr)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("fmt, streamed", [("text", False), ("json", False), ("json", True)])
def test_full_stdout_after_the_file_is_written_says_it_was_written(tmp_path, fmt, streamed):
    # The report on stdout comes after the file. A streamed result is shown on stdout only as
    # the JSON report.
    limit = ["--max-memory", "50"] if streamed else []  # the 72-byte Jacobian is streamed to disk
    with open("/dev/full", "w") as full:
        done = subprocess.run(JACCLI + ["jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", "J.npy",
                                        "--format", fmt, *limit], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE,
                              text=True, env=clean_env(), timeout=60)
    assert done.returncode == 4, done.stderr
    assert done.stderr.splitlines()[-1].startswith("Error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]
    assert_allclose(np.load(tmp_path / "J.npy"), robot_arm_jacobian(np.load(sample("robot_arm_q.npy"))), atol=1e-12)


def test_print_in_the_function_goes_to_stderr_in_a_real_run(tmp_path):
    (tmp_path / "p.py").write_text("import numpy as np\nprint('hi')\n\ndef f(x):\n    print('hi')\n"
                                   "    return np.sin(x)\n")
    done = jaccli("jacobian", "p.py", "[1, 2]", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["blocks"]["df_dx"]["shape"] == [2, 2]
    assert done.stderr.splitlines() == ["hi", "hi"]


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
@pytest.mark.parametrize("where", ["import", "call"])
def test_the_function_closing_its_stdout_or_stderr_leaves_jaccli_its_own(tmp_path, stream, where):
    # What f sees as either is jaccli's stderr, which jaccli still needs for its own lines.
    close = f"sys.{stream}.close()"
    (tmp_path / "c.py").write_text(f"import sys\nimport numpy as np\n{close if where == 'import' else ''}\n\n"
                                   f"def f(x):\n    {close if where == 'call' else 'pass'}\n    return np.sin(x)\n")
    done = jaccli("jacobian", "c.py", "[1, 2]", "-o", "J.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["wrote J.npy: df_dx (2, 2)"]
    assert_allclose(np.load(tmp_path / "J.npy"), np.diag(np.cos([1.0, 2.0])), rtol=1e-15)


@pytest.mark.parametrize("command", ["jacobian", "check"])
def test_output_below_print_in_the_function_goes_to_stderr(tmp_path, command):
    (tmp_path / "p.py").write_text(
        "import os, subprocess, sys\nimport numpy as np\nos.write(1, b'loading\\n')\n\n"
        "def f(x):\n"
        "    os.write(1, b'raw\\n')\n"
        "    subprocess.run([sys.executable, '-c', 'print(\"child\")'], check=True)\n"
        "    return np.sin(x)\n")
    done = jaccli(command, "p.py", "[1, 2]", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["command"] == command
    assert done.stderr.splitlines()[:3] == ["loading", "raw", "child"]


def _signalled(args: list[str], cwd: Path, started, sig: int, what: str, then=None,
               preexec_fn=None) -> tuple[int, str, str]:
    """Run jaccli, send it `sig` once `started()` holds (f or its file is running), run `then()`,
    and return (exit code, stdout, stderr); no process is left behind if a check fails."""
    import time

    proc = subprocess.Popen(JACCLI + args, cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=at_a_terminal(preexec_fn))
    try:
        deadline = time.monotonic() + 60
        # Asked once per look: what held at the last look is what the signal is sent on.
        while not (seen := started()) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert seen, f"{what} (exit {proc.poll()}): {proc.stderr.read() if proc.poll() else ''}"
        proc.send_signal(sig)
        if then is not None:
            then()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def _nonempty(paths) -> list[Path]:
    """The files among `paths` that have bytes in them (a file deleted meanwhile has none)."""
    found = []
    for path in paths:
        try:
            if path.stat().st_size > 0:
                found.append(path)
        except FileNotFoundError:
            pass
    return found


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_terminated_streamed_run_removes_its_temporary_file(tmp_path, signame):
    import signal

    (tmp_path / "slow.py").write_text(
        "import numpy as np\n"
        "W = np.random.default_rng(0).standard_normal((1500, 1500)) / 40\n"
        "def f(x):\n"
        "    for _ in range(60):\n"
        "        x = np.tanh(W @ x)\n"
        "    return x\n")
    np.save(tmp_path / "x.npy", np.linspace(-1, 1, 1500))
    # The stream's temporary file has its header and its full size from the start. The empty one that
    # probes the directory before any work (io.atomic.probe_target) has the same kind of name but lives
    # for well under a millisecond: a look that caught it sent the signal before the stream began, and
    # once failed the run in CI because the file was gone at the next look.
    code, _, err = _signalled(["jacobian", "slow.py", "x.npy", "-o", "J.npy", "--max-memory", "1M"], tmp_path,
                              lambda: _nonempty(tmp_path.glob(".J.npy.*")), getattr(signal, signame),
                              "the streamed run never started writing")
    assert code == 128 + getattr(signal, signame)
    assert_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow.py", "x.npy"]


@pytest.mark.parametrize("waiting, what, stop", [
    # f signals that it runs (a file), then waits for Ctrl-C: exit 130, not f's failure (exit 3)
    ("import time\ndef f(x):\n    open('running', 'w').close()\n    time.sleep(60)\n    return x\n", "f",
     "def f(x):\n    raise KeyboardInterrupt\n"),
    # the same while the function file's module level runs
    ("import time\nopen('running', 'w').close()\ntime.sleep(60)\ndef f(x):\n    return x\n", "the file",
     "import numpy as np\nraise KeyboardInterrupt\ndef f(x):\n    return x\n"),
], ids=["while-f-runs", "while-the-file-loads"])
def test_ctrl_c_is_an_interruption_and_a_raise_of_keyboard_interrupt_is_not(tmp_path, waiting, what, stop):
    import signal

    (tmp_path / "wait.py").write_text(waiting)
    code, out, err = _signalled(["jacobian", "wait.py", "[1.0]", "-o", "J.npy"], tmp_path,
                                (tmp_path / "running").exists, signal.SIGINT, f"{what} never ran")
    assert (code, out) == (130, "")
    assert_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["running", "wait.py"]
    (tmp_path / "stop.py").write_text(stop)
    done = jaccli("jacobian", "stop.py", "[1.0]", cwd=tmp_path)
    assert done.returncode == 3
    assert_error_line(done.stderr)


@pytest.mark.parametrize("signame", ["SIGHUP", "SIGTERM"])
def test_a_signal_ignored_at_start_stays_ignored(tmp_path, signame):
    import signal
    import time

    # Under nohup (SIGHUP ignored), a hangup while f runs must not stop the run (before: exit 129).
    sig = getattr(signal, signame)
    (tmp_path / "wait.py").write_text(
        "import os, time\n"
        "def f(x):\n"
        "    open('running', 'w').close()\n"
        "    while not os.path.exists('go'):\n"
        "        time.sleep(0.01)\n"
        "    return 2 * x\n")

    def go() -> None:
        time.sleep(0.2)  # time for a handler to act, had one been installed
        (tmp_path / "go").touch()

    code, out, err = _signalled(["jacobian", "wait.py", "[1.0, 2.0]", "-o", "J.npy"], tmp_path,
                                (tmp_path / "running").exists, sig, "f never ran", then=go,
                                preexec_fn=lambda: signal.signal(sig, signal.SIG_IGN))
    assert (code, out, err) == (0, "", "wrote J.npy: df_dx (2, 2)\n")
    assert_allclose(np.load(tmp_path / "J.npy"), 2 * np.eye(2), rtol=0)


def _into_a_closed_pipe(args: list[str], cwd: Path, stderr: str = "pipe") -> subprocess.CompletedProcess:
    """Run jaccli with stdout (and with stderr="same", stderr) a pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(JACCLI + args, cwd=cwd, stdout=write,
                              stderr=write if stderr == "same" else subprocess.PIPE, text=True,
                              env=clean_env(), timeout=60)
    finally:
        os.close(write)


@pytest.mark.parametrize("args", [
    ["check", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format", "table"],
    ["check", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format", "json"],
    ["jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--format", "text"],
    ["jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--format", "table"],
    ["info", sample("robot_arm.py"), sample("robot_arm_q.npy")],
    ["ops"], ["--help"], ["--version"], ["jacobian", "--help"],
], ids=lambda args: " ".join(a for a in args if not a.startswith("/")))
def test_a_closed_pipe_on_stdout_is_exit_141_quietly(tmp_path, args):
    done = _into_a_closed_pipe(args, tmp_path)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_closed_pipe_on_stderr_is_exit_141_quietly(tmp_path):
    np.save(tmp_path / "x.npy", np.array([1, 2]))  # an integer input: a warning on stderr
    done = _into_a_closed_pipe(["jacobian", "-e", "x ** 2", "x.npy", "-o", "J.npy"], tmp_path, stderr="same")
    assert done.returncode == 141
    assert_allclose(np.load(tmp_path / "J.npy"), np.diag([2.0, 4.0]))


@HELP_IS_USAGE_ERROR
def test_the_help_of_jaccli_alone_into_a_closed_stderr_keeps_its_usage_exit_2(tmp_path):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(JACCLI, cwd=tmp_path, stdout=subprocess.PIPE, stderr=write, text=True,
                              env=clean_env(), timeout=60)
    finally:
        os.close(write)
    assert (done.returncode, done.stdout) == (2, "")  # as every other error reported there


def _into_dev_full(args: list[str], cwd: Path, stream: str = "stdout") -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        other = {"stderr": subprocess.PIPE} if stream == "stdout" else {"stdout": subprocess.PIPE}
        return subprocess.run(JACCLI + args, cwd=cwd, text=True, env=clean_env(), timeout=60, **{stream: full},
                              **other)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["jacobian", "--help"], ["ops"]], ids=" ".join)
def test_help_and_version_into_a_full_stdout_are_exit_4_in_one_line(tmp_path, args):
    done = _into_dev_full(args, tmp_path)
    assert done.returncode == 4, done.stderr
    assert_error_line(done.stderr)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("printing", ["print('step 1')", "print('step 1', file=sys.stderr)",
                                      "sys.stderr.write('step 1')"])
def test_the_function_printing_into_a_full_stderr_is_exit_4_and_writes_nothing(tmp_path, printing):
    # A full disk is exit 4 wherever jaccli's output goes.
    (tmp_path / "p.py").write_text(f"import sys\n\ndef f(x):\n    {printing}\n    sys.stderr.flush()\n"
                                   "    return x ** 2\n")
    np.save(tmp_path / "x.npy", np.array([1.0, 2.0]))
    done = _into_dev_full(["jacobian", "p.py", "x.npy", "-o", "J.npy"], tmp_path, stream="stderr")
    assert (done.returncode, done.stdout) == (4, "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.py", "x.npy"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args, code", [
    (["jacobian", "-e", "x ** 2", "missing.npy"], 2),  # the error being reported keeps its code
    (["jacobian", "-e", "x ** 2", "[1, 2]", "--stats"], 4),  # a note that cannot be written: the disk is full
    (["info", "-e", "x ** 2", "x.npy"], 4),  # a warning
    (["--debug", "jacobian", "-e", "x ** 2", "missing.npy"], 2),
    pytest.param([], 2, marks=HELP_IS_USAGE_ERROR),  # jaccli alone: the help on stderr, a usage error
    (["jacobian", "--bogus"], 2),  # click's usage error, made one line
])
def test_a_full_stderr_gives_the_exit_code_without_a_traceback(tmp_path, args, code):
    np.save(tmp_path / "x.npy", np.array([1, 2]))
    done = _into_dev_full(args, tmp_path, stream="stderr")
    assert done.returncode == code
    assert "Traceback" not in done.stdout


# ---------------------------------------------------------------------------
# stdout carries results only, whole, or the run fails (jaccli/cli/commands/streams.py)
# ---------------------------------------------------------------------------
def _limited_file_size(limit: int):
    def limit_writes() -> None:  # in the child: a write past `limit` bytes is cut short, then EFBIG
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_writes


@pytest.mark.parametrize("text", ["np.linalg.norm(x) * sin(x)", "linalg.norm(x) * sin(x)"])
def test_an_expression_calls_np_linalg_in_a_fresh_process(tmp_path, text):
    # np.linalg's rules (where linalg.norm is declared an expression's function) wait for f's first call of one;
    # the expression checker must not wait for them.
    x = np.array([0.5, -1.0, 2.0])
    np.save(tmp_path / "x.npy", x)
    done = subprocess.run(JACCLI + ["jacobian", "-e", text, "x.npy", "-o", "J.npy"], cwd=tmp_path,
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    norm = np.linalg.norm(x)
    expected = np.outer(x / norm, np.sin(x)).T + norm * np.diag(np.cos(x))
    assert_allclose(np.load(tmp_path / "J.npy"), expected, rtol=1e-12)


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX file size limits")
def test_a_stdout_cut_short_by_the_os_is_an_error_not_a_truncated_result(tmp_path):
    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 200))
    with open(tmp_path / "out.json", "w") as out:
        done = subprocess.run(JACCLI + ["jacobian", "-e", "sin(x) * sum(x)", "x.npy", "--format", "json"],
                              cwd=tmp_path, stdout=out, stderr=subprocess.PIPE, text=True, env=clean_env(),
                              timeout=60, preexec_fn=_limited_file_size(8192))
    assert done.returncode == 2, done.stderr
    assert_error_line(done.stderr)


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX file size limits")
@pytest.mark.parametrize("suffix, limit", [(".npy", 8192), (".npz", 8192), (".csv", 8192),
                                           (".npy", 128 + 200 * 200 * 8 - 1)])
def test_a_file_size_limit_on_the_output_file_is_not_a_full_disk(tmp_path, suffix, limit):
    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 200))
    (tmp_path / f"J{suffix}").write_bytes(b"precious")
    done = subprocess.run(JACCLI + ["jacobian", "-e", "sin(x) * sum(x)", "x.npy", "-o", f"J{suffix}"],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
                          timeout=60, preexec_fn=_limited_file_size(limit))
    assert done.returncode == 2, done.stderr
    assert_error_line(done.stderr)
    assert (tmp_path / f"J{suffix}").read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"J{suffix}", "x.npy"]


def _closed(fd: int):
    return lambda: os.close(fd)


@pytest.mark.skipif(os.name != "posix", reason="closes a descriptor before exec")
def test_a_closed_stdout_is_a_usage_error_and_not_needed_for_a_file(tmp_path):
    np.save(tmp_path / "x.npy", np.array([0.5, 1.5]))
    args = JACCLI + ["jacobian", "-e", "x ** 2", "x.npy"]
    done = subprocess.run(args, cwd=tmp_path, stderr=subprocess.PIPE, text=True, env=clean_env(), timeout=60,
                          preexec_fn=_closed(1))
    assert done.returncode == 2
    assert_error_line(done.stderr)
    done = subprocess.run(args + ["-o", "J.npy"], cwd=tmp_path, stderr=subprocess.PIPE, text=True, env=clean_env(),
                          timeout=60, preexec_fn=_closed(1))
    assert done.returncode == 0, done.stderr
    assert_allclose(np.load(tmp_path / "J.npy"), np.diag([1.0, 3.0]))


@pytest.mark.skipif(os.name != "posix", reason="closes a descriptor before exec")
def test_a_closed_stderr_drops_what_the_function_prints_and_leaves_stdout_to_results(tmp_path):
    (tmp_path / "p.py").write_text("import numpy as np\n\ndef f(x):\n    print('step')\n    return x ** 2\n")
    done = subprocess.run(JACCLI + ["jacobian", "p.py", "[0.5, 1.5]", "--format", "json"], cwd=tmp_path,
                          stdout=subprocess.PIPE, text=True, env=clean_env(), timeout=60, preexec_fn=_closed(2))
    assert done.returncode == 0
    assert json.loads(done.stdout)["blocks"]["df_dx"]["data"] == [[1.0, 0.0], [0.0, 3.0]]


def test_output_of_the_functions_threads_and_exit_handlers_goes_to_stderr(tmp_path):
    (tmp_path / "p.py").write_text(
        "import atexit, os, threading, time\nimport numpy as np\n\n"
        "atexit.register(lambda: print('at exit'))\n"
        "started = []\n\n"
        "def later():\n    time.sleep(0.2)\n    print('from a thread', flush=True)\n    os.write(1, b'raw\\n')\n\n"
        "def f(x):\n"
        "    if not started:\n        started.append(threading.Thread(target=later))\n        started[0].start()\n"
        "    return np.sin(x)\n")
    done = jaccli("jacobian", "p.py", "[0.5, 1.5]", "--format", "csv", "--precision", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{float(np.cos(0.5))!r},0.0\n0.0,{float(np.cos(1.5))!r}\n"
    assert sorted(done.stderr.splitlines()) == ["at exit", "from a thread", "raw"]


def test_a_function_that_changes_directory_does_not_move_the_files_jaccli_reads_and_writes(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "p.py").write_text("import os\nimport numpy as np\n\nos.chdir('elsewhere')\n\n"
                                   "def f(x):\n    os.chdir(os.path.join(os.path.dirname(__file__), 'elsewhere'))\n"
                                   "    return x ** 2\n")
    np.save(tmp_path / "ref.npy", np.diag([1.0, 3.0]))
    done = jaccli("jacobian", "p.py", "[0.5, 1.5]", "--compare", "ref.npy", "-o", "J.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_allclose(np.load(tmp_path / "J.npy"), np.diag([1.0, 3.0]))
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
def test_os_exit_in_the_function_fails_it_but_ends_a_child_it_forked(tmp_path):
    (tmp_path / "hard.py").write_text("import os\n\ndef f(x):\n    os._exit(0)\n")
    done = jaccli("jacobian", "hard.py", "[0.5, 1.5]", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (3, "")
    assert_error_line(done.stderr)
    (tmp_path / "forks.py").write_text("import os\n\ndef f(x):\n    pid = os.fork()\n    if pid == 0:\n"
                                       "        os._exit(7)\n    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7\n"
                                       "    return x ** 2\n")
    done = jaccli("jacobian", "forks.py", "[0.5, 1.5]", "--format", "csv", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "1.0,0.0\n0.0,3.0\n"), done.stderr


def test_the_error_line_starts_a_line_of_its_own_after_fs_unfinished_one(tmp_path):
    # f printed without a newline (progress dots; or a signal between print's text and its newline): jaccli's
    # Error line was glued to the end of it
    (tmp_path / "dots.py").write_text("def f(x):\n    print('...', end='', flush=True)\n"
                                      "    raise ValueError('bad x')\n")
    done = jaccli("jacobian", "dots.py", "[1.0]", cwd=tmp_path)
    assert done.returncode == 3 and done.stderr.startswith("...\nError: "), done.stderr
    assert done.stderr.count("\n") == 2
    (tmp_path / "line.py").write_text("def f(x):\n    print('done')\n    raise ValueError('bad x')\n")
    done = jaccli("jacobian", "line.py", "[1.0]", cwd=tmp_path)
    assert done.returncode == 3 and done.stderr.startswith("done\nError: "), done.stderr  # (no blank line)
