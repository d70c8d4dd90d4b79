"""Temporary files left by a killed run are removed by the next run that writes there, and nothing else is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaccli.io.stale_files import STALE_AGE, remove_stale_temporaries

from .test_cli import sample
from .test_cli_subprocess import JACCLI, clean_env

# A streamed write that stops half-way: rows written, the file not committed, the process waiting.
WRITER = """
import sys, numpy as np
from jaccli.io.npy_stream import NpyStreamWriter
out = NpyStreamWriter(sys.argv[1], (1000, 100))
out.write(0, np.ones((10, 100)))
print(out._tmp, flush=True)
sys.stdin.read()
"""


def start_writer(target: Path) -> tuple[subprocess.Popen, Path]:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    return writer, Path(writer.stdout.readline().strip())


def jaccli_writes(directory: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([*JACCLI, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", "J2.npy",
                           *options], capture_output=True, text=True, timeout=120, cwd=directory, env=clean_env())


def test_a_stream_killed_mid_write_leaves_a_file_that_the_next_run_removes(tmp_path):
    writer, tmp = start_writer(tmp_path / "J.npy")
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert tmp.exists() and tmp.name.startswith(".J.npy.") and tmp.stat().st_size > 100_000
    done = jaccli_writes(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not tmp.exists()
    notes = [line for line in done.stderr.splitlines() if line.startswith("Note: removed")]
    assert notes == [f"Note: removed 1 temporary file that killed jaccli runs had left in {tmp_path} ({tmp.name})"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J2.npy"]


def test_quiet_removes_them_without_a_word(tmp_path):
    writer, tmp = start_writer(tmp_path / "J.npy")
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    done = jaccli_writes(tmp_path, "-q")
    assert done.returncode == 0 and done.stderr == "" and not tmp.exists()


def test_a_file_being_written_by_another_process_is_kept(tmp_path):
    writer, tmp = start_writer(tmp_path / "J.npy")
    try:
        done = jaccli_writes(tmp_path)
        assert done.returncode == 0 and "Note: removed" not in done.stderr
        assert tmp.exists()
    finally:
        writer.communicate("")  # it ends; its finalizer deletes its own file
    assert not tmp.exists()


def test_only_jaccli_files_nobody_holds_are_removed(tmp_path):
    keep = {
        ".J.npy.tmp": b"data",  # not jaccli's pattern
        ".J.npy.0123456789AB.tmp": b"data",  # upper-case hex: not jaccli's
        "J.npy.0123456789ab.tmp": b"data",  # not hidden
        ".J.npy.0123456789ab.tmp.bak": b"data",
        ".fresh.npy.0123456789ab.tmp": b"",  # empty and new: maybe being made this moment
    }
    for name, data in keep.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / ".link.npy.0123456789ab.tmp").symlink_to(tmp_path / "J.npy.0123456789ab.tmp")
    (tmp_path / ".dir.npy.0123456789ab.tmp").mkdir()
    old_empty = tmp_path / ".old.npy.0123456789ab.tmp"
    old_empty.write_bytes(b"")
    hours_ago = time.time() - STALE_AGE - 60
    os.utime(old_empty, (hours_ago, hours_ago))
    left = tmp_path / ".left.csv.abcdef012345.tmp"
    left.write_bytes(b"1,2\n")
    assert sorted(p.name for p in remove_stale_temporaries(tmp_path)) == [left.name, old_empty.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*keep, ".link.npy.0123456789ab.tmp",
                                                                 ".dir.npy.0123456789ab.tmp"])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file owned by another user")
def test_another_users_files_are_kept(tmp_path):
    theirs = tmp_path / ".J.npy.0123456789ab.tmp"
    theirs.write_bytes(b"data")
    os.chown(theirs, 12345, 12345)
    assert remove_stale_temporaries(tmp_path) == [] and theirs.exists()
