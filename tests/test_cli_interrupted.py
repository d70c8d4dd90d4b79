"""A signal in each window of a run that writes -o: before the file is renamed into place nothing was
written; after it, the message names the file, complete on disk, with the interruption's exit code."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from numpy.testing import assert_allclose

from jaccli.io import atomic
from jaccli.io.atomic import recording_renames
from jaccli.cli.commands import run as run_module
from jaccli.cli.commands.failures import (BadUsage, ClosedPipe, ResourceExceeded, Terminated, after_writing,
    interrupted)
from jaccli.io.writers import write_blocks

from .helpers import assert_error
from .test_cli import invoke, make_runner, write


@pytest.fixture
def runner() -> CliRunner:
    return make_runner()


def _signal_after(monkeypatch, module, name: str, signame: str, *, before: bool = False) -> None:
    """`module.name` raises `signame` right after it ran (or, `before`, right before)."""
    real = getattr(module, name)

    def signalled(*args, **kwargs):
        if before:
            signal.raise_signal(getattr(signal, signame))
        result = real(*args, **kwargs)
        if not before:
            signal.raise_signal(getattr(signal, signame))  # its handler runs here, as at any bytecode
        return result

    monkeypatch.setattr(module, name, signalled)


def _window(monkeypatch, window: str, signame: str) -> None:
    if window == "before-the-rename":
        _signal_after(monkeypatch, os, "chmod", signame)  # the temporary file's mode, set just before
    elif window == "renaming":
        _signal_after(monkeypatch, os, "replace", signame)
    elif window == "syncing-the-directory":
        import jaccli.io.npy_stream as stream

        _signal_after(monkeypatch, atomic, "fsync_directory", signame)
        _signal_after(monkeypatch, stream, "fsync_directory", signame)
    elif window == "reporting":
        _signal_after(monkeypatch, run_module, "_report_to", signame, before=True)
    else:  # once the command's run has returned, in click's code
        _signal_after(monkeypatch, run_module, "run", signame)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("window", ["before-the-rename", "renaming", "syncing-the-directory", "reporting",
                                    "returned"])
@pytest.mark.parametrize("streamed", [False, True], ids=["in-memory", "streamed"])
def test_a_signal_says_whether_the_output_file_was_written(runner, tmp_path, monkeypatch, signal_handlers, streamed,
                                                           window, signame):
    func = write(tmp_path, "f.py", "import numpy as np\n\ndef f(x):\n    return np.tanh(x)\n")
    x = np.linspace(-1, 1, 200)
    np.save(tmp_path / "x.npy", x)
    _window(monkeypatch, window, signame)
    limit = ["--max-memory", "100K"] if streamed else []  # the 320 KB Jacobian is streamed to disk
    target = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", func, str(tmp_path / "x.npy"), "-o", str(target), "-q", *limit)
    code = 128 + getattr(signal, signame)
    if window == "before-the-rename":
        assert_error(result, "interrupted", code)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py", "x.npy"]
        return
    assert_error(result, "interrupted", code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy", "f.py", "x.npy"]
    assert_allclose(np.load(target), np.diag(1 - np.tanh(x) ** 2), rtol=1e-12, atol=1e-15)  # the closed form


def test_a_signal_before_the_run_starts_is_an_interruption_not_clicks_abort(runner, tmp_path, monkeypatch,
                                                                          signal_handlers):
    func = write(tmp_path, "f.py", "import numpy as np\n\ndef f(x):\n    return np.tanh(x)\n")
    _signal_after(monkeypatch, run_module, "run", "SIGTERM", before=True)
    result = invoke(runner, "jacobian", func, "0.5", "-o", str(tmp_path / "J.npy"))
    assert_error(result, "interrupted", 143)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py"]


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_the_same_signal_again_while_the_run_unwinds_is_one_interruption(runner, tmp_path, monkeypatch,
                                                                         signal_handlers, signame):
    """GNU timeout signals jaccli, which passes it on, then the process group: the command gets it twice, the second
    while it reports the first. It was raised again there: click's "Aborted!" and exit 1, or a traceback."""
    import jaccli.cli.main as main_module

    func = write(tmp_path, "f.py", "import numpy as np\n\ndef f(x):\n    return np.tanh(x)\n")
    _signal_after(monkeypatch, os, "chmod", signame)  # the first, before -o's file is renamed into place
    _signal_after(monkeypatch, main_module, "interrupted", signame, before=True)  # the second, while reporting it
    result = invoke(runner, "jacobian", func, "0.5", "-o", str(tmp_path / "J.npy"))
    message = assert_error(result, "interrupted", 128 + getattr(signal, signame))
    assert message.startswith("interrupted" if signame == "SIGINT" else "stopped by SIGTERM"), message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py"]


@pytest.mark.parametrize("signalled", ["making-the-second", "renaming-the-second"])
def test_a_signal_between_two_files_names_exactly_those_written(tmp_path, monkeypatch, signal_handlers, signalled):
    first, second = tmp_path / "A.npy", tmp_path / "B.npz"
    with recording_renames() as written, pytest.raises(Terminated) as stop:
        write_blocks(first, {"J": np.eye(2)})
        _signal_after(monkeypatch, *((atomic, "mkstemp") if signalled == "making-the-second" else (os, "replace")),
                      "SIGINT")
        write_blocks(second, {"J": np.eye(3)})
    message = interrupted(stop.value, written).format_message()
    if signalled == "making-the-second":
        assert message == f"interrupted after {first} was written completely; no other file was written or changed"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["A.npy"]
    else:
        assert message == (f"interrupted after {first} and {second} were written completely; "
                           "no other file was written or changed")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["A.npy", "B.npz"]
        assert_allclose(np.load(second)["J"], np.eye(3))
    assert_allclose(np.load(first), np.eye(2))


def test_files_are_recorded_only_inside_recording_renames_and_named_as_given(tmp_path):
    link = tmp_path / "link.npy"
    link.symlink_to(tmp_path / "real.npy")
    write_blocks(tmp_path / "outside.npy", {"J": np.eye(2)})
    with recording_renames() as written:
        with recording_renames() as inner:  # nested: the same list
            write_blocks(link, {"J": np.eye(2)})
        assert inner is written
    assert written == [link]
    three = interrupted(Terminated(15, "SIGTERM"), [Path("a.npy"), Path("b.npy"), Path("c.npy")])
    assert three.exit_code == 143 and three.format_message() == \
        "stopped by SIGTERM after a.npy, b.npy and c.npy were written completely; no other file was written or changed"


def test_an_error_after_files_were_written_names_them():
    full = after_writing(ResourceExceeded("cannot write stdout: the disk is full"), [Path("a.npy"), Path("b.npz")])
    assert full.exit_code == 4 and full.format_message() == \
        "cannot write stdout: the disk is full; a.npy and b.npz were written completely before this error"
    assert after_writing(BadUsage("bad"), []).format_message() == "bad"
    stopped = interrupted(Terminated(15, "SIGTERM"), [Path("a.npy")])
    assert after_writing(stopped, [Path("a.npy")]).format_message() == \
        "stopped by SIGTERM after a.npy was written completely; no other file was written or changed"
    assert after_writing(ClosedPipe(), [Path("a.npy")]).format_message() == "the reader of a pipe has gone"
