"""Inputs and function files that are not regular files (a named pipe, a device) are refused, not waited on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .test_cli import sample
from .test_cli_subprocess import JACCLI, clean_env


def jaccli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # A run that waits for a writer to the pipe would hang: the timeout makes that a failure.
    return subprocess.run([*JACCLI, *args], capture_output=True, text=True, timeout=30, cwd=cwd, env=clean_env(),
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("given", ["q.npy", "q.csv", "q=q.txt", "q=q.npz"])
def test_a_named_pipe_as_input_is_refused_at_once(tmp_path, given):
    os.mkfifo(tmp_path / given.rpartition("=")[2])
    done = jaccli("jacobian", sample("robot_arm.py"), given, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"Error: input {given.rpartition('=')[2]} is a named pipe, not a "
                                                "regular file; jaccli reads regular files only: save it to one first"]


def test_a_named_pipe_as_vector_or_reference_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "v.npy")
    for option in ("--vector", "--compare"):
        command = "vjp" if option == "--vector" else "jacobian"
        done = jaccli(command, sample("robot_arm.py"), sample("robot_arm_q.npy"), option, "v.npy", cwd=tmp_path)
        assert done.returncode == 2 and "v.npy is a named pipe" in done.stderr, done.stderr


def test_a_link_to_a_character_device_as_input_is_refused(tmp_path):
    (tmp_path / "q.npy").symlink_to("/dev/zero")  # would be read without end
    done = jaccli("jacobian", sample("robot_arm.py"), "q.npy", cwd=tmp_path)
    assert done.returncode == 2 and "input q.npy is a character device, not a regular file" in done.stderr


def test_a_named_pipe_as_function_file_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "f.py")
    done = jaccli("jacobian", "f.py", "[1.0, 2.0]", cwd=tmp_path)
    assert done.returncode == 2 and "function file f.py is a named pipe, not a regular file" in done.stderr
