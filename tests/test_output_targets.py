"""-o and the writers on what is not a regular file: devices and FIFOs written in place, the rest refused."""

from __future__ import annotations

import concurrent.futures
import io
import os
import socket
import stat
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from jaccli.errors import UsageError
from jaccli.io.devices import written_in_place
from jaccli.io.writers import NpyStreamWriter, write_blocks

from .test_cli import heat_pde_jacobian, robot_arm_jacobian, sample
from .test_cli_subprocess import JACCLI, clean_env

ROBOT = (sample("robot_arm.py"), sample("robot_arm_q.npy"))


def jaccli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*JACCLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=clean_env())


class FifoReader(threading.Thread):
    """Reads a FIFO to its end, without blocking its opening: a reader that never gets a writer (the FIFO
    replaced by a file) ends at its deadline with nothing, instead of hanging the test."""

    def __init__(self, path: Path, seconds: float = 60.0):
        super().__init__(daemon=True)
        self.path, self.deadline, self.data = path, time.monotonic() + seconds, b""
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a writer's open() finds a reader at once
        self.start()

    def run(self) -> None:
        try:
            while time.monotonic() < self.deadline:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except BlockingIOError:  # a writer is there, nothing to read yet
                    time.sleep(0.005)
                    continue
                if chunk:
                    self.data += chunk
                elif self.data:  # the writer has closed it
                    return
                else:  # no writer yet
                    time.sleep(0.005)
        finally:
            os.close(self.fd)

    def received(self) -> bytes:
        self.join(70)
        return self.data


def make_device(path: Path) -> None:
    """A character device like /dev/null (1, 3) at `path`; the test is skipped where mknod is not permitted."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as error:
        pytest.skip(f"mknod of a character device is not permitted here ({error})")


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


# ---------------------------------------------------------------- devices and FIFOs are written in place


def test_a_link_to_a_character_device_keeps_the_device(tmp_path):
    device = tmp_path / "d" / "mynull"
    device.parent.mkdir()
    make_device(device)
    (tmp_path / "J.npy").symlink_to(device)
    done = jaccli("jacobian", *ROBOT, "-o", "J.npy", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat(device).st_mode) and os.stat(device).st_rdev == os.makedev(1, 3)
    assert (tmp_path / "J.npy").is_symlink() and os.readlink(tmp_path / "J.npy") == str(device)
    assert sorted(p.name for p in device.parent.iterdir()) == ["mynull"]  # no temporary file beside it


def test_dev_null_through_a_link_stays_a_character_device(tmp_path):
    (tmp_path / "J.csv").symlink_to("/dev/null")
    assert written_in_place(tmp_path / "J.csv")  # checked before anything could be renamed over /dev/null
    done = jaccli("jacobian", *ROBOT, "-o", "J.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and os.stat("/dev/null").st_rdev == os.makedev(1, 3)


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".npz", ".json"])
def test_a_fifo_receives_the_result_in_its_format_and_stays_a_fifo(tmp_path, suffix):
    fifo = tmp_path / f"J{suffix}"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    done = jaccli("jacobian", *ROBOT, "-o", fifo.name, "-q", cwd=tmp_path)
    data = reader.received()
    assert done.returncode == 0, done.stderr
    assert is_fifo(fifo) and sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]
    expected = robot_arm_jacobian(np.load(sample("robot_arm_q.npy")))
    if suffix == ".csv":
        got = np.loadtxt(io.StringIO(data.decode()), delimiter=",")
    elif suffix == ".json":
        import json

        got = np.array(json.loads(data)["blocks"]["df_dq"]["data"])
    else:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
        got = loaded if suffix == ".npy" else loaded["df_dq"]
    assert_allclose(got, expected, rtol=1e-12)


def test_a_streamed_result_goes_into_a_fifo_from_start_to_end(tmp_path):
    fifo = tmp_path / "J.npy"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    done = jaccli("jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o", "J.npy", "--max-memory",
                  "2KiB", "--format", "json", cwd=tmp_path)
    data = reader.received()
    assert done.returncode == 0, done.stderr
    import json

    assert json.loads(done.stdout)["streamed"] is True and is_fifo(fifo)
    got = np.load(io.BytesIO(data), allow_pickle=False)
    assert_allclose(got, heat_pde_jacobian(np.load(sample("heat_pde_u.npy"))), rtol=1e-12)


def test_write_blocks_and_the_stream_write_a_fifo_in_place(tmp_path):
    fifo = tmp_path / "J.npy"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    write_blocks(fifo, {"J": np.eye(3)})
    assert_allclose(np.load(io.BytesIO(reader.received())), np.eye(3))
    reader = FifoReader(fifo)
    with NpyStreamWriter(fifo, (4, 2)) as out:
        out.write(0, np.ones((2, 2)))
        out.write(2, np.full((2, 2), 2.0))
    assert_allclose(np.load(io.BytesIO(reader.received())), [[1, 1], [1, 1], [2, 2], [2, 2]])
    assert is_fifo(fifo) and sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]


def test_a_stream_into_a_device_skips_no_row_and_rewrites_none(tmp_path):
    fifo = tmp_path / "J.npy"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    out = NpyStreamWriter(fifo, (3, 2))
    out.write(1, np.ones((1, 2)))  # row 0 was skipped: it reads as zeros, as in a file
    with pytest.raises(ValueError):
        out.write(0, np.ones((1, 2)))
    with pytest.raises(ValueError):
        out.commit()
    out.commit(allow_partial=True)
    assert_allclose(np.load(io.BytesIO(reader.received())), [[0, 0], [1, 1], [0, 0]])


def test_a_batched_stream_into_a_fifo_is_refused_before_anything_is_written(tmp_path):
    fifo = tmp_path / "J.npy"
    os.mkfifo(fifo)
    with pytest.raises(UsageError):
        NpyStreamWriter(fifo, (2, 3, 4), row_axis=1)


# ---------------------------------------------------------------- anything else is refused before any work


def _marking_function(tmp_path: Path) -> Path:
    func = tmp_path / "f.py"
    func.write_text("from pathlib import Path\n\ndef f(x):\n"
                    f"    Path({str(tmp_path / 'ran')!r}).write_text('f ran')\n    return x * 2.0\n")
    return func


def _refused(tmp_path: Path, target: str, what: str) -> None:
    done = jaccli("jacobian", str(_marking_function(tmp_path)), "[1.0, 2.0]", "-o", target, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and what in done.stderr, done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_socket_is_refused_before_any_work(tmp_path):
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "J.npy"))
        _refused(tmp_path, "J.npy", "is a socket")
    assert stat.S_ISSOCK(os.lstat(tmp_path / "J.npy").st_mode)


def test_a_link_to_a_block_device_is_refused_before_any_work(tmp_path):
    device = tmp_path / "loop"
    try:
        os.mknod(device, 0o600 | stat.S_IFBLK, os.makedev(7, 0))
    except (PermissionError, OSError) as error:
        pytest.skip(f"mknod of a block device is not permitted here ({error})")
    (tmp_path / "J.npy").symlink_to(device)
    _refused(tmp_path, "J.npy", "is a block device")
    assert stat.S_ISBLK(os.stat(device).st_mode)


def test_a_link_to_a_directory_is_refused_before_any_work(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "J.npy").symlink_to(tmp_path / "results")
    _refused(tmp_path, "J.npy", "is a directory")
    assert list((tmp_path / "results").iterdir()) == []


@pytest.mark.parametrize("kind", ["socket", "directory"])
def test_the_writers_refuse_what_is_neither_a_file_nor_a_device(tmp_path, kind):
    target = tmp_path / "J.npy"
    if kind == "socket":
        holder = socket.socket(socket.AF_UNIX)
        holder.bind(str(target))
    else:
        target.mkdir()
    with pytest.raises(UsageError):
        write_blocks(target, {"J": np.eye(2)})
    with pytest.raises(UsageError):
        NpyStreamWriter(target, (2, 2))
    if kind == "socket":
        holder.close()


def test_a_device_or_fifo_with_no_extension_is_written_in_the_format_asked_for(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    shown = jaccli("jacobian", "-e", "x * 2.0", "[1.0, 2.0]", "-o", "/dev/null", cwd=tmp_path)
    assert shown.returncode == 2 and "--output-format" in shown.stderr, shown.stderr
    written = jaccli("jacobian", "-e", "x * 2.0", "[1.0, 2.0]", "-o", "/dev/null", "--output-format", "csv",
                     cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        reader = pool.submit(fifo.read_bytes)
        piped = jaccli("jacobian", "-e", "x * 2.0", "[1.0, 2.0]", "-o", str(fifo), "--output-format", "npy",
                       cwd=tmp_path)
        data = reader.result(timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert np.array_equal(np.load(io.BytesIO(data)), 2.0 * np.eye(2)) and stat.S_ISFIFO(fifo.lstat().st_mode)
    clash = jaccli("jacobian", "-e", "x * 2.0", "[1.0, 2.0]", "-o", "J.npy", "--output-format", "csv", cwd=tmp_path)
    assert clash.returncode == 2 and not (tmp_path / "J.npy").exists(), clash.stderr
