"""Replace a file atomically: write a temporary file beside it, flush it to disk, rename it over."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from jaccli.errors import UsageError

__all__ = ["atomic_write", "check_target", "fsync_directory", "new_file_mode", "unlink_quietly"]


def check_target(target: Path) -> None:
    """Refuse a target that is a directory or whose directory does not exist."""
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: directory {target.parent} does not exist")


def atomic_write(target: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Run `write` on a temporary file beside `target`, then rename it over; on failure `target` is untouched."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, new_file_mode(target))
        os.replace(tmp, target)
    except BaseException:
        # KeyboardInterrupt included: a stray temp file is the only trace a failure may leave.
        unlink_quietly(tmp)
        raise
    fsync_directory(target.parent)


@functools.cache
def _umask() -> int:
    # There is no way to read the umask without setting it; done once, early, to keep it brief.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def new_file_mode(target: Path) -> int:
    """Mode for the result: the replaced file's, else what open() gives (mkstemp's is 0600)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform or file system allows it.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def unlink_quietly(path: Path) -> None:
    """Delete `path` if it is still there."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
