"""Outputs that are not regular files: character devices and FIFOs are written in place, the rest refused."""

from __future__ import annotations

import io
import os
import re
import stat
from pathlib import Path

from jaccli.errors import UsageError

__all__ = ["DeviceStream", "file_kind", "open_in_place", "own_descriptor", "written_in_place"]

_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a file of `mode` (os.stat's st_mode) is, for messages: "a named pipe", "a directory"..."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def written_in_place(target: Path | str) -> bool:
    """Whether `target` (through symbolic links) is a character device or a FIFO, written in place: opened
    and written to, as `cat > /dev/null` does. False for a regular file or a new name, which are
    replaced atomically (a temporary file renamed over them): a rename would put a file where the
    device or the pipe was (as root, over /dev/null itself), and a pipe's reader would get nothing.

    A descriptor of this process named as /dev/fd/N (/proc/self/fd/N, /dev/stdout) is a stream written in place
    too, whatever file is open there: written through a duplicate of N, at its offset, as a shell's
    ``cmd >&N`` writes (a rename would replace the file its holder writes, and reopening a regular file
    would write over it from its start).

    Raises:
        UsageError: `target` is anything else (a directory, a socket, a block device).
    """
    fd = own_descriptor(target)
    try:
        mode = os.stat(target).st_mode if fd is None else os.fstat(fd).st_mode
        if fd is not None and stat.S_ISREG(mode):
            return True
    except (FileNotFoundError, NotADirectoryError):  # a new name (or a dangling link); its directory is checked apart
        return False
    if stat.S_ISREG(mode):
        return False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return True
    raise UsageError(f"cannot write {target}: it is {file_kind(mode)}; write to a regular file (or a character device or "
                     "a named pipe)")


def open_in_place(target: Path | str) -> int:
    """A descriptor open for writing on the character device or FIFO `target` (a FIFO waits for its reader).

    Neither created nor truncated: a name that has become a regular file since `written_in_place`
    looked is refused, untouched.
    """
    own = own_descriptor(target)
    if own is not None:  # (this process's descriptor: a duplicate of it, at its offset, whatever file it is)
        return os.dup(own)
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        os.close(fd)
        raise UsageError(f"cannot write {target}: it changed from a device or a pipe into a file while "
                         "jaccli ran; run again")
    return fd


_OWN = re.compile(r"/(?:dev|proc/self)/fd/(\d+)")
_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def own_descriptor(target: Path | str) -> int | None:
    """N where `target` names a descriptor of this process that is open: /dev/fd/N, /proc/self/fd/N, or
    /dev/stdout (1) and the like; else None."""
    name = os.path.normpath(os.path.abspath(target))
    match = _OWN.fullmatch(name)
    fd = int(match[1]) if match is not None else _STANDARD.get(name)
    if fd is None:
        return None
    try:
        os.fstat(fd)
    except (OSError, OverflowError):
        return None
    return fd


class DeviceStream(io.RawIOBase):
    """A write-only file on a descriptor that cannot seek (a pipe, a device), each write written whole.

    Not a FileIO on purpose: NumPy writes the data of such files with tofile, which asks for the
    file position and fails on a pipe; on this class it writes in chunks, and zipfile writes a
    stream without going back.
    """

    def __init__(self, fd: int):
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(data).cast("B")
        size = len(view)
        while view:
            view = view[os.write(self.fd, view):]
        return size

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self.fd)
            finally:
                super().close()
