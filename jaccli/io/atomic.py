"""Replace a file atomically: write a temporary file beside it, flush it to disk, rename it over (a device
or a FIFO is written in place instead, see jaccli.io.devices)."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from jaccli.errors import JaccliError, ResourceLimitError, UsageError
from .devices import DeviceStream, open_in_place, written_in_place
from .stale_files import hold_while_written, remove_stale_temporaries

__all__ = ["atomic_write", "check_target", "directory_problem", "fsync_directory", "hold_back", "mkstemp",
           "new_file_mode", "open_temporary", "probe_target", "put_in_place", "record_written", "recording_renames",
           "temporary_file", "uninterrupted", "unlink_quietly", "write_error", "writing"]

# The errors of a full disk or quota, and NumPy's report of a short write ("60000 requested and 7664 written").
_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def directory_problem(target: Path) -> str:
    """Why `target`'s directory cannot hold it (missing, or a file on the way), or "" when it can."""
    if target.parent.is_dir():
        return ""
    # The nearest existing ancestor tells a missing directory from a file in the way.
    for ancestor in target.parents:
        if ancestor.exists():
            if not ancestor.is_dir():
                return f"{ancestor} is a file, not a directory"
            break
    return f"directory {target.parent} does not exist"


def check_target(target: Path) -> None:
    """Refuse a target that is a directory, a socket or a block device, or whose directory does not exist."""
    if written_in_place(target):
        return
    problem = directory_problem(target)
    if problem:
        raise UsageError(f"cannot write {target}: {problem}")


def probe_target(target: Path) -> list[Path]:
    """Refuse, before any work, a `target` that could not be replaced: a read-only file (for root
    too: no write bit in its mode), or a directory that takes no new file (permissions, a read-only file system, /proc).

    Creates and deletes an empty temporary file beside `target`, as `atomic_write` will; `target`
    itself is neither created nor changed. A character device or a FIFO needs only to be writable
    (nothing is made beside it); a directory, a socket or a block device is refused. Raises
    `write_error`'s error.

    Returns the temporary files that killed runs had left where the file goes, now removed
    (`stale_files.remove_stale_temporaries`): the caller says so.
    """
    if written_in_place(target):
        if not os.access(target, os.W_OK):
            raise UsageError(f"cannot write {target}: permission denied; write elsewhere")
        return []
    # Root may write any file, but a file whose mode lets nobody write it is read-only by intent
    # (chmod a-w): refused as it is for everyone else.
    if target.exists() and (not os.access(target, os.W_OK) or not target.stat().st_mode & 0o222):
        raise UsageError(f"cannot write {target}: the file is read-only; make it writable or write elsewhere")
    with uninterrupted():  # a signal between creating the file and deleting it would leave it there
        try:
            tmp = temporary_file(target)
        except OSError as error:
            raise _no_new_file(target, error) from error
        unlink_quietly(tmp)
    return remove_stale_temporaries(Path(os.path.realpath(target)).parent)


def mkstemp(target: Path) -> tuple[int, str]:
    """A new, empty file beside `target`, named .<its name>.<random>.tmp: its open descriptor and absolute name.

    What tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp") does (made with
    O_EXCL and O_NOFOLLOW, so never an existing file or link; mode 0600; another random name while the
    name is taken), without importing tempfile: with the shutil, random, bz2 and lzma it brings, that
    was ~3 ms of every run with -o. The file is locked while the descriptor stays open
    (`stale_files.hold_while_written`), which tells later runs it is not left behind.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = os.path.abspath(os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}.tmp"))
        try:
            fd = os.open(name, flags, 0o600)
        except FileExistsError:
            continue
        hold_while_written(fd)  # until it is closed: a run killed while writing leaves a file nobody holds
        return fd, name
    raise FileExistsError(errno.EEXIST, "no unused temporary file name found", str(target.parent))


def open_temporary(target: Path) -> tuple[int, Path]:
    """`mkstemp`'s new file beside `target`, left open: its descriptor (which holds the file's lock until it
    is closed) and absolute name. Call it inside an `uninterrupted` block that keeps both where cleanup
    finds them."""
    fd, name = mkstemp(target)
    return fd, Path(name)


def temporary_file(target: Path) -> Path:
    """`mkstemp`'s new file beside `target`, closed: its absolute name (for `probe_target`, which deletes it).

    Callers keep the name where their cleanup finds it inside an `uninterrupted` block. A file to
    write comes from `open_temporary`, whose open descriptor keeps it marked as being written.
    """
    fd, name = mkstemp(target)
    os.close(fd)
    return Path(name)


def _no_new_file(target: Path, error: OSError) -> JaccliError:
    failure = write_error(target, error)
    if isinstance(failure, ResourceLimitError):
        return failure
    # The file itself may well be writable (checked before): what is refused is a new file beside it.
    directory = "the current directory" if str(target.parent) == "." else f"the directory {target.parent}"
    detail = error.strerror or str(error) or type(error).__name__
    return UsageError(f"cannot write {target}: {directory} takes no new file ({detail}), and jaccli writes a "
                      f"temporary file there and renames it to {target.name}; make the directory writable, "
                      "or write elsewhere")


def write_error(target: Path | str, error: OSError) -> JaccliError:
    """The error to report when writing `target` failed: a full disk is a resource limit, the rest a usage error."""
    detail = error.strerror or str(error) or type(error).__name__
    if error.errno in _DISK_FULL or (error.errno is None and _SHORT_WRITE.search(str(error))):
        return ResourceLimitError(f"cannot write {target}: the disk is full ({detail}); free some space or "
                                  "write elsewhere")
    return UsageError(f"cannot write {target}: {detail}; check the path and its permissions, or write elsewhere")


def _check_size(fh: IO[bytes]) -> None:
    """Raise a short write's OSError when the file holds less than was written into it.

    NumPy writes .npy data through a C stdio stream of its own, and the failure of that
    stream's last buffer (a file-size limit reached there) is not reported at all.
    """
    size, wanted = os.fstat(fh.fileno()).st_size, fh.tell()
    if size < wanted:
        raise OSError(f"{wanted} requested and {size} written")


def _short_write_cause(fh: IO[bytes], error: OSError) -> OSError:
    """`error`, or for a short write reported without an errno (by NumPy) the system's reason for it.

    A full disk and a file-size limit (ulimit -f) both end a write so. One more byte written
    where the file ends fails with the reason (ENOSPC, EFBIG); the file is a temporary one,
    deleted afterwards.
    """
    if error.errno is not None or not _SHORT_WRITE.search(str(error)):
        return error
    try:
        os.pwrite(fh.fileno(), b"\0", os.fstat(fh.fileno()).st_size)
    except OSError as cause:
        if cause.errno is not None:
            return OSError(cause.errno, cause.strerror)
    return error


@contextlib.contextmanager
def writing(target: Path | str) -> Iterator[None]:
    """Context manager: an OSError while writing `target` becomes `write_error`'s error.

    For callers that report errors to users (the CLI): `atomic_write` and `NpyStreamWriter`
    themselves raise the OSError.
    """
    try:
        yield
    except OSError as error:
        raise write_error(target, error) from error


def atomic_write(target: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Run `write` on a temporary file beside `target`, then rename it over; on failure `target` is untouched.

    A symbolic link is followed: the file it points to is replaced, and the link stays. A
    character device or a FIFO (/dev/null, /dev/stdout, a named pipe) is written in place, with no
    temporary file and no rename; a directory, a socket or a block device is refused (UsageError).
    """
    if written_in_place(target):
        with DeviceStream(open_in_place(target)) as stream:
            write(stream)  # type: ignore[arg-type]
        record_written(target)
        return
    given, target = target, Path(os.path.realpath(target))
    tmp: Path | None = None
    try:
        with uninterrupted():  # a file whose name is not yet kept in `tmp` could not be deleted below
            fd, tmp = open_temporary(target)
        # Written through mkstemp's descriptor, which holds the file's lock until it is closed.
        with open(fd, "wb") as fh:
            try:
                write(fh)
                fh.flush()
                _check_size(fh)
            except OSError as error:
                raise _short_write_cause(fh, error) from error
            os.fsync(fh.fileno())
        put_in_place(tmp, target, given)
    except BaseException:
        # KeyboardInterrupt included: a stray temp file is the only trace a failure may leave.
        if tmp is not None:
            unlink_quietly(tmp)
        raise
    fsync_directory(target.parent)


@functools.cache
def _umask() -> int:
    # There is no way to read the umask without setting it; done once, early, to keep it brief.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def put_in_place(tmp: Path, target: Path, given: Path | str) -> None:
    """Give `tmp` the mode the result gets and rename it over `target` (`given`, as the caller named it).

    The rename and its entry in `recording_renames`'s list go together: a signal between them is
    raised once both are done, so that an interruption is never told that no file was written when
    one was.
    """
    os.chmod(tmp, new_file_mode(target))
    with uninterrupted():
        os.replace(tmp, target)
        record_written(given)


def record_written(given: Path | str) -> None:
    """Add `given` to `recording_renames`'s list, if one is kept: a file put in place, or a device or FIFO
    written to the end."""
    if _Renamed.into_place is not None:
        _Renamed.into_place.append(Path(given))


class _Renamed:
    into_place: list[Path] | None = None


@contextlib.contextmanager
def recording_renames() -> Iterator[list[Path]]:
    """Context manager: the list, in order, of the files that `atomic_write` and `NpyStreamWriter.commit` put
    in place while it runs, each named as its caller named it.

    For the command line, to say which files a run interrupted after a rename did write. Nested
    blocks share the outermost block's list.
    """
    if _Renamed.into_place is not None:
        yield _Renamed.into_place
        return
    _Renamed.into_place = []
    try:
        yield _Renamed.into_place
    finally:
        _Renamed.into_place = None


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


# ---------------------------------------------------------------- signals held while a file is made or renamed


class _Held:
    depth = 0
    interruption: BaseException | None = None


class uninterrupted:  # noqa: N801 - used like a function: `with uninterrupted():`
    """Context manager: an interruption that a signal handler hands to `hold_back` is raised when the block
    ends, not inside it.

    For the steps between creating a temporary file and keeping its name where cleanup finds it (or
    deleting it): Ctrl-C there would leave the file behind. Blocks nest; only the main thread, where
    Python runs signal handlers, holds.
    """

    def __enter__(self) -> None:
        if threading.current_thread() is threading.main_thread():
            _Held.depth += 1

    def __exit__(self, *exc: object) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        _Held.depth -= 1
        if _Held.depth == 0 and _Held.interruption is not None:
            interruption, _Held.interruption = _Held.interruption, None
            raise interruption


def hold_back(interruption: BaseException) -> bool:
    """For a signal handler: keep `interruption` for the end of the `uninterrupted` block running now,
    and return True; False when none runs (the handler raises it itself)."""
    if not _Held.depth:
        return False
    if _Held.interruption is None:  # the first signal is the one reported
        _Held.interruption = interruption
    return True
