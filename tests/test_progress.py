"""Progress of long work: what the library reports to an observer, and the bars the command line draws on a terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import jaccli
import jaccli.engine.progress as progress_module
from jaccli.check.finite_differences import finite_difference_jacobian
from jaccli.engine import observing
from jaccli.io.npy_stream import NpyStreamWriter

from .helpers import Recorder
from .test_cli_subprocess import JACCLI, clean_env, read_terminal


def _f(x):
    return np.cumsum(np.sin(x))


def _closed_form(x):
    return np.tril(np.ones((x.size, x.size))) * np.cos(x)[None, :]


def _slow_sweeps(J, seconds_per_seed: float) -> None:
    """Make each sweep of J's recording take `seconds_per_seed` per seed: f's sweeps are too fast to measure."""
    rec = J._ev.rec
    for name in ("vjp", "jvp"):
        sweep = getattr(rec, name)

        def slow(seeds, *args, _sweep=sweep, **kwargs):
            time.sleep(seconds_per_seed * len(next(s for s in seeds if s is not None)))
            return _sweep(seeds, *args, **kwargs)
        setattr(rec, name, slow)


@pytest.fixture
def quick_blocks(monkeypatch):
    """Work over 50 ms counts as long, a block takes 5 ms at least: the splitting in a test's time."""
    monkeypatch.setattr(progress_module, "LONG_S", 0.05)
    monkeypatch.setattr(progress_module, "MIN_BLOCK_S", 0.005)


# ---------------------------------------------------------------- the library


@pytest.mark.parametrize("mode, phase", [("reverse", "reverse sweeps (rows)"), ("forward", "forward sweeps (columns)")])
def test_long_sweeps_are_split_into_blocks_reported_as_they_finish(quick_blocks, mode, phase):
    x = np.linspace(0.1, 2.0, 64)
    J = jaccli.jacobian(_f, x, mode=mode)
    _slow_sweeps(J, 0.001)
    recorder = Recorder()
    with observing(recorder):
        values = np.asarray(J)
    events = recorder.phase(phase)
    assert events[0] == ("start", phase, 64) and events[-1] == "finish"
    steps = events[1:-1]
    assert sum(steps) == 64 and 8 <= len(steps) <= 50 and J.sweeps == len(steps)
    assert_allclose(values, _closed_form(x), rtol=1e-13, atol=1e-15)


def test_without_an_observer_the_sweeps_are_as_before(quick_blocks):
    x = np.linspace(0.1, 2.0, 64)
    J = jaccli.jacobian(_f, x)
    _slow_sweeps(J, 0.001)
    plain = np.asarray(J)
    assert J.sweeps == 1  # the whole Jacobian in one sweep, as the memory budget allows
    observed = jaccli.jacobian(_f, x)
    _slow_sweeps(observed, 0.001)
    with observing(Recorder()):
        values = np.asarray(observed)
    assert observed.sweeps > 1
    assert_array_equal(values, plain)


def test_short_sweeps_are_not_split_beyond_the_timed_first_block(monkeypatch):
    ticks = iter(np.arange(0.0, 1.0, 0.004))  # (each reading of the clock 4 ms on: 62 rows at 2 ms = 124 ms, short)
    monkeypatch.setattr(progress_module, "time", type("Clock", (), {"perf_counter": staticmethod(lambda: next(ticks))}))
    x = np.linspace(0.1, 2.0, 64)
    J = jaccli.jacobian(_f, x)
    recorder = Recorder()
    with observing(recorder):
        np.asarray(J)
    assert recorder.phase("reverse sweeps (rows)")[1:-1] == [2, 62]


def test_recording_reports_its_operation_count_from_a_thread_of_its_own(monkeypatch):
    monkeypatch.setattr(progress_module, "POLL_S", 0.02)
    counters = []  # the counter threads alive while f runs, each call

    reported = threading.Event()

    class Counted(Recorder):
        """Tells f when the 80 operations it recorded have been reported (the counter's thread polls: under
        load it may not run for a while, so f waits for it rather than for a fixed time)."""

        def advance(self, n):
            super().advance(n)
            if sum(e for e in self.events if isinstance(e, int)) >= 80:
                reported.set()

    recorder = Counted()

    def f(x):
        for _ in range(40):
            x = np.sin(x) + x
        counters.append(_counter_threads())
        if counters[-1]:
            assert reported.wait(30), "the counter's thread reported nothing for 30 s"
        return x

    with observing(recorder):
        J = jaccli.jacobian(f, np.ones(3))
    events = recorder.phase("recording f (operations)")
    assert events[0] == ("start", "recording f (operations)", None) and events[-1] == "finish"
    assert 80 <= sum(events[1:-1]) <= len(J._ev.rec.trace.nodes)
    # Counted by name, not by threading.active_count(): other threads of the process come and go meanwhile
    assert len(counters[0]) == 1 and not any(t.is_alive() for t in counters[0])  # ended with the recording
    jaccli.jacobian(f, np.ones(3))
    assert counters[1] == []  # no thread without an observer


def _counter_threads() -> list:
    return [t for t in threading.enumerate() if t.name == "jaccli-progress"]


def test_work_inside_f_while_it_is_recorded_reports_nothing():
    def f(x):
        np.asarray(jaccli.jacobian(_f, np.ones(3)))  # a jaccli call of f's own: its phases would take the count's
        return x * 2.0

    recorder = Recorder()
    with observing(recorder):
        jaccli.jacobian(f, np.ones(2))
    assert recorder.events == [("start", "recording f (operations)", None), "finish"]


def test_finite_differences_report_each_column():
    recorder = Recorder()
    x = np.array([0.3, 0.7, 1.1])
    with observing(recorder):
        fd = finite_difference_jacobian(_f, x)
    assert recorder.events == [("start", "finite differences (columns)", 3), 1, 1, 1, "finish"]
    assert_allclose(fd, _closed_form(x), rtol=1e-8, atol=1e-10)


def _stencil(x):
    return x[1:-1] ** 2 - x[:-2] * x[2:]


def test_colouring_and_compressed_sweeps_report_their_steps(quick_blocks):
    pytest.importorskip("scipy")
    x = np.linspace(0.5, 1.5, 40)
    plain = jaccli.sparse_jacobian(_stencil, x)
    recorder = Recorder()
    with observing(recorder):
        observed = jaccli.sparse_jacobian(_stencil, x)
    colouring = recorder.phase("colouring (orderings)")
    assert colouring[0] == ("start", "colouring (orderings)", 6) and set(colouring[1:-1]) == {1}
    detection = recorder.phase("sparsity detection (operations)")  # one step per recorded operation
    assert detection[0][2] == sum(detection[1:-1]) > 3
    compressed = [e for e in recorder.events if isinstance(e, tuple) and e[1].startswith("compressed")]
    assert compressed and all(e[2] == 3 for e in compressed)  # three colours: three seeds to sweep
    assert sum(recorder.phase(compressed[0][1])[1:-1]) == 3
    assert_array_equal(observed.toarray(), plain.toarray())
    reference = np.zeros((38, 40))
    reference[np.arange(38), np.arange(38)] = -x[2:]
    reference[np.arange(38), np.arange(1, 39)] = 2 * x[1:-1]
    reference[np.arange(38), np.arange(2, 40)] = -x[:-2]
    assert_allclose(observed.toarray(), reference, rtol=1e-15)


def test_star_and_acyclic_colourings_report_each_ordering():
    sp = pytest.importorskip("scipy.sparse")
    from jaccli.sparse.acyclic import best_acyclic
    from jaccli.sparse.star import adjacency, best_star, is_star_coloring

    n = 12  # an arrowhead plus a band: far from its bound, so every ordering runs
    dense = np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1)
    dense[0, :] = dense[:, 0] = 1
    pattern = sp.csr_array(dense != 0)
    recorder = Recorder()
    with observing(recorder):
        colors, _ = best_star(pattern)
        acyclic, _ = best_acyclic(adjacency(pattern))
    star = recorder.phase("star colouring (orderings)")
    assert star[0] == ("start", "star colouring (orderings)", 4) and set(star[1:-1]) <= {1}
    assert recorder.phase("acyclic colouring (orderings)")[0] == ("start", "acyclic colouring (orderings)", 3)
    assert is_star_coloring(pattern, colors) and acyclic is not None


def test_a_streamed_write_reports_its_rows_and_finishes_on_commit_or_abort(tmp_path):
    recorder = Recorder()
    with observing(recorder):
        with NpyStreamWriter(tmp_path / "J.npy", (4, 3)) as out:
            out.write(0, np.ones((2, 3)))
            out.write(2, np.zeros((2, 3)))
        failed = NpyStreamWriter(tmp_path / "K.npy", (4, 3))
        failed.write(0, np.ones((1, 3)))
        failed.abort()
    assert recorder.events == [("start", "writing J.npy (rows)", 4), 2, 2, "finish",
                               ("start", "writing K.npy (rows)", 4), 1, "finish"]
    assert np.load(tmp_path / "J.npy").sum() == 6.0


def test_the_observer_is_the_innermost_one_set():
    outer, inner = Recorder(), Recorder()
    with observing(outer):
        with observing(inner):
            finite_difference_jacobian(_f, np.ones(2))
        with observing(None):
            finite_difference_jacobian(_f, np.ones(2))
    assert outer.events == [] and len(inner.events) == 4


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("module, args, phase", [
    ("sparse_results", ["jacobian", "-e", "x[1:] * x[:-1]", "[1, 2, 3, 4]", "--sparse"], "colouring (orderings)"),
    ("sparse_results", ["check", "-e", "x[1:] * x[:-1]", "[1, 2, 3, 4]", "--sparse"], "colouring (orderings)"),
    ("sparsity_report", ["sparsity", "-e", "x[1:] * x[:-1]", "[1, 2, 3, 4]"], "colouring (orderings)"),
    ("info", ["info", "-e", "x[1:] * x[:-1]", "[1, 2, 3, 4]"], "recording f (operations)"),
])
def test_every_command_that_differentiates_reports_its_work(monkeypatch, module, args, phase):
    pytest.importorskip("scipy")
    import importlib

    from .test_cli import invoke, make_runner

    recorder = Recorder()
    monkeypatch.setattr(importlib.import_module(f"jaccli.cli.commands.{module}"), "observed",
                        lambda out: observing(recorder))
    result = invoke(make_runner(), *args)
    assert result.exit_code == 0, result.stderr
    assert recorder.phase(phase)[-1] == "finish"

SLOW = """
import time
import numpy as np

def f(x):
    time.sleep({seconds})
    return np.cumsum(np.sin(x))
"""


def _write_slow(tmp_path: Path, seconds: float) -> None:
    (tmp_path / "f.py").write_text(SLOW.format(seconds=seconds))
    np.save(tmp_path / "x.npy", np.linspace(0.1, 1.0, 6))


def _stderr_on_a_terminal(args: list[str], cwd: Path, **env: str) -> tuple[str, str]:
    """(stdout, stderr) of jaccli run with stderr on a pseudo-terminal (stdout on a pipe)."""
    pty = pytest.importorskip("pty")
    main, secondary = pty.openpty()
    written: list[bytes] = []

    def read() -> None:  # all along: a bar redrawn ten times a second would fill the terminal's buffer
        written.append(read_terminal(main))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        done = subprocess.run(JACCLI + args, cwd=cwd, stdout=subprocess.PIPE, stderr=secondary, text=True,
                              env=clean_env(TERM="xterm-256color", **env), timeout=60)
    finally:
        os.close(secondary)
    reader.join(10)
    os.close(main)
    stderr = b"".join(written).decode()
    assert done.returncode == 0, stderr
    return done.stdout, stderr


unix_only = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")


@unix_only
def test_a_slow_recording_shows_a_spinner_with_its_operation_count(tmp_path):
    # The bar shows after a second (progress's delay), and is drawn while f still runs: from 1 s to 2.5 s, which
    # leaves a loaded machine room to draw it at least once, showing 1 or 2 s elapsed
    _write_slow(tmp_path, 2.5)
    _, stderr = _stderr_on_a_terminal(["jacobian", "f.py", "x.npy", "-o", "J.npy"], tmp_path)
    assert "recording f (operations)" in stderr and "\x1b[" in stderr
    assert re.search(r"0:00:0[12]", stderr), stderr  # the time elapsed since the recording began
    assert_allclose(np.load(tmp_path / "J.npy"), _closed_form(np.linspace(0.1, 1.0, 6)), rtol=1e-15)


@unix_only
def test_check_shows_its_sweeps_and_finite_differences_with_their_counts(tmp_path):
    _write_slow(tmp_path, 0.0)
    stdout, stderr = _stderr_on_a_terminal(["check", "f.py", "x.npy"], tmp_path, JACCLI_PROGRESS_DELAY="0")
    assert "reverse sweeps (rows)" in stderr and "6/6" in stderr
    assert "finite differences (columns)" in stderr
    assert "passed" in stdout


@unix_only
def test_no_bar_for_short_work_nor_under_quiet_nor_in_pipes(tmp_path):
    _write_slow(tmp_path, 0.0)
    _, short = _stderr_on_a_terminal(["jacobian", "f.py", "x.npy"], tmp_path)
    assert "recording" not in short and "sweeps" not in short
    _, quiet = _stderr_on_a_terminal(["jacobian", "f.py", "x.npy", "--quiet"], tmp_path, JACCLI_PROGRESS_DELAY="0")
    assert quiet == ""
    piped = subprocess.run(JACCLI + ["jacobian", "f.py", "x.npy"], cwd=tmp_path, capture_output=True, text=True,
                           env=clean_env(JACCLI_PROGRESS_DELAY="0"), timeout=60)
    assert piped.returncode == 0 and piped.stderr == ""


@unix_only
def test_the_bar_follows_color_never(tmp_path):
    import re

    _write_slow(tmp_path, 0.0)
    _, coloured = _stderr_on_a_terminal(["check", "f.py", "x.npy"], tmp_path, JACCLI_PROGRESS_DELAY="0")
    _, plain = _stderr_on_a_terminal(["check", "f.py", "x.npy", "--color", "never"], tmp_path,
                                     JACCLI_PROGRESS_DELAY="0")
    colour_codes = re.compile(r"\x1b\[[0-9;]*3[0-9](;[0-9]+)*m")  # SGR foreground colours
    assert colour_codes.search(coloured) and "finite differences (columns)" in plain
    assert not colour_codes.search(plain)
