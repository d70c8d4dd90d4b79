"""Running the user's code inside jaccli's process: what it prints goes to stderr, so stdout carries
only results (`user_code_output`), and whatever it raises, ``sys.exit()`` and ``os._exit()`` included,
is marked as the function's failure (`GuardedFunction`), for `failures.translate` to classify; a process
it forks never comes back into jaccli.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, Callable, Sequence

from jaccli.io.atomic import uninterrupted, write_error
from .failures import HardExit, RaisedInFunction, Terminated
from .streams import UserLine, is_closed
from jaccli.errors import JaccliError, ResourceLimitError
from jaccli.io.working_directory import same_directory


@contextlib.contextmanager
def user_code_output() -> Iterator[None]:
    """Context manager: what the user's code prints goes to stderr, so stdout carries only results.

    Both Python's ``print`` (sys.stdout) and what is written below it, to file descriptor 1
    (``os.write(1, ...)``, a subprocess, a C library), which points at stderr meanwhile.
    """
    stream = _Dropped() if is_closed(sys.stderr) else _FullDiskAware(sys.stderr)
    with _descriptor_1_to_stderr(), contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream), \
            same_directory(), _no_hard_exit(), _forked_children_end_here():
        yield


_REAL_EXIT = os._exit


@contextlib.contextmanager
def _no_hard_exit() -> Iterator[None]:
    pid = os.getpid()

    def hard_exit(code: int) -> None:
        if os.getpid() != pid:  # a child the function forked (multiprocessing) ends as it asked
            _REAL_EXIT(code)
        raise HardExit(code)

    with _redirection:
        saved, os._exit = os._exit, hard_exit
    try:
        yield
    finally:
        with _redirection:
            os._exit = saved


@contextlib.contextmanager
def _forked_children_end_here() -> Iterator[None]:
    """A process the user's code forked (``os.fork()``) that returns or raises into jaccli ends here,
    quietly and without flushing the buffers it inherited: it never writes -o, prints a result or a
    message, or exits through jaccli's paths a second time. The process that started goes on alone."""
    pid = os.getpid()
    try:
        yield
    finally:
        if os.getpid() != pid:
            _REAL_EXIT(0)


class _Dropped(io.TextIOBase):
    """Where the user's code prints when stderr was closed at start (``2>&-``): nowhere, as asked."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


class _FullDiskAware:
    """A text stream (stderr) whose writes fail on a full disk as jaccli's own writes there do: exit 4
    ("cannot write stderr: the disk is full"), not a failure of the user's function (exit 3).

    A signal to stop that comes while it writes is raised once the write is done (atomic.uninterrupted):
    raised inside the buffered stream's flush, just after its bytes went out, it left them in the buffer,
    and they were written again before jaccli's Error line (a line the function printed, twice)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            with uninterrupted():
                written = self._stream.write(text)
                if text:
                    UserLine.open = not text.endswith("\n")
                return written
        except OSError as error:
            raise _full_disk_or(error) from error

    def flush(self) -> None:
        try:
            with uninterrupted():
                self._stream.flush()
        except OSError as error:
            raise _full_disk_or(error) from error

    def close(self) -> None:
        """The user's code closing what it sees as sys.stdout or sys.stderr: jaccli's stderr, which
        stays open for jaccli's own messages and report (before: a traceback, exit 1)."""

    @property
    def closed(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _full_disk_or(error: OSError) -> Exception:
    reported = write_error("stderr", error)
    return reported if isinstance(reported, ResourceLimitError) else error


_STDOUT_FD, _STDERR_FD = 1, 2
# File descriptor 1 is the process's: nested and concurrent calls of the user's code share one redirection.
_redirection = threading.Lock()
_redirected = {"depth": 0, "saved": -1}


def _flush_stdout() -> None:
    # What jaccli wrote before (and f wrote to sys.__stdout__ during) goes where fd 1 points now.
    for stream in {id(s): s for s in (sys.stdout, sys.__stdout__) if s is not None}.values():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()


def _point_descriptor_1_at_stderr() -> int:
    """Save fd 1 and point it at stderr (at the null device if there is no stderr); -1 if fd 1 is closed."""
    try:
        saved = os.dup(_STDOUT_FD)
    except OSError:
        return -1
    try:
        os.dup2(_STDERR_FD, _STDOUT_FD)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, _STDOUT_FD)
        os.close(null)
    return saved


@contextlib.contextmanager
def _descriptor_1_to_stderr() -> Iterator[None]:
    with _redirection:
        if _redirected["depth"] == 0:
            _flush_stdout()
            _redirected["saved"] = _point_descriptor_1_at_stderr()
        _redirected["depth"] += 1
    try:
        yield
    finally:
        with _redirection:
            _redirected["depth"] -= 1
            if _redirected["depth"] == 0 and _redirected["saved"] >= 0:
                _flush_stdout()
                os.dup2(_redirected["saved"], _STDOUT_FD)
                os.close(_redirected["saved"])
                _redirected["saved"] = -1


class GuardedFunction:
    """Calls the user's function and marks what it raises; looks like it to jaccli's engine.

    What the function prints goes to stderr, and a ``sys.exit()`` in it is marked like any
    exception: it fails the function, it does not end jaccli.

    The engine swaps ``np`` in the function's module globals (to trace ``np.array([...])``), so
    `__globals__` is the user's; the signature (`params`, the arguments it takes positionally)
    gives the parameter names that label results. The last of them, `keywords` (the function's
    keyword-only parameters), are passed on to it by keyword.
    """

    def __init__(self, func: Callable[..., Any], name: str, params: Sequence[str],
                 keywords: tuple[str, ...] = ()):
        self.func = func
        self.__name__ = name
        self.__qualname__ = name
        self.__globals__ = getattr(func, "__globals__", None)
        self.keywords = keywords
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        self.__signature__ = inspect.Signature([inspect.Parameter(p, kind) for p in params])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.keywords:
            n = len(args) - len(self.keywords)
            kwargs = {**dict(zip(self.keywords, args[n:])), **kwargs}
            args = args[:n]
        try:
            with user_code_output():
                return self.func(*args, **kwargs)
        except (JaccliError, RaisedInFunction, Terminated):
            raise
        except (Exception, SystemExit, KeyboardInterrupt) as error:  # (a signal is Terminated, above)
            raise RaisedInFunction(error) from error
