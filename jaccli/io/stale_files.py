"""Temporary files that killed runs left beside their targets: told by jaccli's name pattern and an unheld lock, removed."""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from pathlib import Path

__all__ = ["STALE_AGE", "hold_while_written", "remove_stale_temporaries"]

try:
    import fcntl
except ImportError:  # (Windows) no locks: only the age tells a file left behind
    fcntl = None  # type: ignore[assignment]

# What jaccli.io.atomic.mkstemp names its files: .<target's name>.<12 hex digits>.tmp
_PATTERN = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")
# A file that nobody holds and that is this old is left behind even where locks tell nothing.
STALE_AGE = 3600.0


def hold_while_written(fd: int) -> None:
    """Take the lock that marks the temporary file `fd` as being written, for as long as it stays open.

    The system drops it when the process ends however it ends (SIGKILL, a crash), so that a later
    run tells a file left behind from one being written, by another process, container or user.
    Where the file system has no locks, the file is not marked (only its age tells then).
    """
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Remove the temporary files of jaccli's own pattern in `directory` that no process writes any more,
    and return them.

    A file is removed only when all of these hold: its name is jaccli's (``.J.npy.<hex>.tmp``); it
    is a regular file (not a link) owned by this user; no process holds its lock (see
    `hold_while_written`); and it holds data (an empty one may be a moment old, its lock not yet
    taken) or it is older than `STALE_AGE` (an hour). Where locks tell nothing, only the age does.
    Errors (a directory that cannot be read, a file gone meanwhile) leave things as they are.
    """
    removed: list[Path] = []
    try:
        entries = [entry for entry in os.scandir(directory) if _PATTERN.fullmatch(entry.name)]
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        try:
            if _left_behind(entry, now):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _left_behind(entry: os.DirEntry, now: float) -> bool:
    info = entry.stat(follow_symlinks=False)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        return False
    old = now - info.st_mtime > STALE_AGE
    if fcntl is None:
        return old
    fd = os.open(entry.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if os.fstat(fd).st_ino != info.st_ino:  # another file took the name meanwhile
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            # Held: a process writes it. Any other error: this file system has no locks, the age decides.
            return old if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) else False
        return info.st_size > 0 or old
    finally:
        os.close(fd)  # (and with it the lock just taken)
