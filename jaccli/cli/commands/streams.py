"""stdout and stderr of a real jaccli process: every write whole, and a closed one refused as such.

Three things CPython leaves to the program:

- The OS may write part of a buffer and say how much (a disk that fills up, a file size limit).
  CPython's buffered and text layers then drop the rest without an error, so a result on stdout
  could end cut short with exit 0. `_WholeWrites` writes the rest again, which meets the error
  (no space left, file too large) and raises it, for `to_stdout`/`to_stderr` to report.
- A descriptor closed at start (``>&-``) makes sys.stdout or sys.stderr None: writing raised
  AttributeError, taken for the function's failure. `_Closed` raises the OS's own "bad file
  descriptor" instead, and the descriptor is held with the null device, so that no file jaccli
  opens (the -o file) gets its number.
- What the user's code prints must not reach stdout, which carries results only. While f runs,
  `usercode.user_code_output` points sys.stdout and descriptor 1 at stderr; but f may start a
  thread that prints later, or register an exit handler. So for the whole process descriptor 1
  is stderr (subprocesses and C code inherit that), the results go to a duplicate of the
  original stdout, and sys.stdout writes there only from the main thread while the command runs
  (`results`); from any other thread it writes to stderr. Afterwards the streams are put back,
  except that exit handlers the function registered, and threads it left running, print to stderr.

`standard_streams` is entered by the console entry point only; tests that call the CLI in
process keep their own streams.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import io
import os
import select
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jaccli.io.devices import own_descriptor

__all__ = ["is_closed", "results", "results_path", "standard_streams"]


class _WholeWrites(io.FileIO):
    """A descriptor's raw stream whose write() writes all of its data or raises."""

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            n = super().write(view[done:])
            if n is None:  # a non-blocking descriptor that is full for now (a pipe in some CI runners)
                select.select([], [self.fileno()], [])
                continue
            done += n
        return done


class _Closed(io.TextIOBase):
    """sys.stdout or sys.stderr whose descriptor was closed when jaccli started."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = f"<{name}>"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def isatty(self) -> bool:
        return False


def is_closed(stream: Any) -> bool:
    """Whether `stream` stands for a descriptor closed at start (what f prints there is dropped)."""
    return isinstance(stream, _Closed)


def _hold(fd: int) -> None:
    """Point a closed descriptor at the null device, so that it is not reused by the next open()."""
    try:
        os.fstat(fd)
        return
    except OSError:
        pass
    null = os.open(os.devnull, os.O_WRONLY)
    if null != fd:
        os.dup2(null, fd)
        os.close(null)


class _ResultsOnly(io.TextIOWrapper):
    """sys.stdout: the results' stream for the main thread while the command runs, stderr otherwise."""

    def write(self, text: str) -> int:
        if _RESULTS["open"] and threading.get_ident() == _RESULTS["thread"]:
            return super().write(text)
        return sys.stderr.write(text)


_RESULTS = {"open": False, "thread": threading.main_thread().ident, "fd": None}


def results_path(path: Path) -> Path:
    """`path`, or /dev/fd/N where it names this process's standard output (/dev/stdout, /dev/fd/1) while a
    command runs in its own process: N is the results' descriptor, for descriptor 1 writes to stderr then
    (see the module's doc), and ``-o /dev/stdout`` means the results' stream."""
    fd = _RESULTS["fd"]
    return path if fd is None or own_descriptor(path) != 1 else Path(f"/dev/fd/{fd}")


@contextlib.contextmanager
def results() -> Iterator[None]:
    """Context manager around the command: sys.stdout writes results meanwhile (see `standard_streams`)."""
    _RESULTS["open"], _RESULTS["thread"] = True, threading.get_ident()
    try:
        yield
    finally:
        _RESULTS["open"] = False


def _text(fd: int, like: Any, kind: type = io.TextIOWrapper) -> io.TextIOWrapper:
    return kind(io.BufferedWriter(_WholeWrites(fd, "w", closefd=fd > 2)), encoding=like.encoding,
                errors=like.errors, line_buffering=like.line_buffering,
                write_through=getattr(like, "write_through", False))


def _real(stream: Any, fd: int) -> bool:
    """Whether `stream` writes to the process's descriptor `fd` (not a test's buffer)."""
    try:
        if stream.fileno() != fd:
            return False
        stream.flush()
    except (AttributeError, OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def standard_streams() -> Iterator[None]:
    """Context manager around a jaccli command in its own process: sys.stdout, sys.stderr and
    descriptor 1 set up as the module docstring says, and put back afterwards (for a program that
    calls `jaccli.cli.main.main` and goes on). If the command's function registered exit handlers, they
    print to stderr as well when the program exits."""
    stdout, stderr = sys.stdout, sys.stderr
    kept = -1
    if stderr is None:
        _hold(2)
        sys.stderr = _Closed("stderr")
    elif _real(stderr, 2):
        sys.stderr = _text(2, stderr)
    if stdout is None:
        _hold(1)
        sys.stdout = _Closed("stdout")
    elif _real(stdout, 1):
        kept = os.dup(1)  # the results' own descriptor; 1 itself now writes where stderr does
        os.dup2(2, 1)
        _RESULTS["fd"] = kept  # (-o /dev/stdout: results_path)
        sys.stdout = _text(os.dup(kept), stdout, _ResultsOnly)
    handlers, threads = _exit_handlers(), set(threading.enumerate())
    try:
        with results():
            yield
    finally:
        if any(t.is_alive() and not t.daemon for t in set(threading.enumerate()) - threads):
            # The function left threads running, which Python waits for at exit: whatever they
            # print goes to stderr until then. (A program that goes on after main keeps that.)
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
            sys.stdout = sys.stderr
        else:
            for mine, theirs in ((sys.stdout, stdout), (sys.stderr, stderr)):
                if mine is not theirs:
                    with contextlib.suppress(OSError, ValueError):
                        mine.close()  # flushed before (to_stdout): what is left could not be written anyway
            sys.stdout, sys.stderr = stdout, stderr
            if kept >= 0:
                _RESULTS["fd"] = None
                os.dup2(kept, 1)
                os.close(kept)
            if handlers is not None and _exit_handlers() > handlers:
                atexit.register(_exit_to_stderr)


def _exit_handlers() -> int | None:
    count = getattr(atexit, "_ncallbacks", None)
    return None if count is None else count()


def _exit_to_stderr() -> None:
    """Registered after the function's exit handlers, so run before them: what they print goes to stderr."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr


class UserLine:
    """Whether the user's code left a line open on stderr (its last write did not end with a newline: a signal
    between print's text and its newline, or ``print(..., end="")``): jaccli's own Error line then starts on a
    line of its own (CliError.show), not glued to the end of the user's."""

    open = False


def close_user_line(file: Any) -> None:
    """Write a newline to `file` (stderr) where the user's code left its line open (UserLine)."""
    if UserLine.open:
        UserLine.open = False
        file.write("\n")
