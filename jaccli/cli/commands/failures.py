"""Turn anything raised while running a command into one `Error: ...` line and a documented exit code.

Exit codes: 0 success; 1 a check the user asked for failed (``--strict``); 2 usage error (bad
option, index, file, or inputs that do not fit the function); 3 the user's function failed (it
raised, returned a non-array, or used an operation jaccli cannot differentiate); 4 a resource
limit (the result does not fit ``--max-memory``, or the disk is full); 70 an error in jaccli's own
code (a bug: the message says so and asks for a report with ``--debug``); 128 + the signal's number
when stopped by a signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), and 141 (SIGPIPE's) quietly when
the reader of stdout or stderr has gone.

How an exception raised while the user's function runs is classified:

- a ``ValueError`` or ``IndexError`` that NumPy (or jaccli's engine, on NumPy's behalf) raised
  with NumPy's shape wording (``operands could not be broadcast``, ``mismatch in its core
  dimension``, ``cannot reshape``, ``out of bounds``...) means the inputs' shapes do not fit the
  function: exit 2, ``the inputs do not fit the function: <NumPy's message> (f.py:12)``;
- anything else raised inside the function, including a ``raise`` statement in the user's own
  code whatever its wording, is the function failing: exit 3, naming the user's file and line;
- ``sys.exit()`` inside the function is the function failing too (exit 3), never jaccli's own
  exit status.

`usercode` runs the user's code and marks what it raises (`RaisedInFunction`, `HardExit`); this
module decides what that means.
"""

from __future__ import annotations

import contextlib
import errno
import linecache
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Sequence

import click

from jaccli.io.atomic import write_error
from .streams import close_user_line, is_closed
from jaccli.plurals import verb
from jaccli.errors import (
    EXIT_CHECK_FAILED,
    EXIT_CHECK_INCONCLUSIVE,
    EXIT_FUNCTION,
    EXIT_INTERNAL,
    EXIT_RESOURCE,
    EXIT_USAGE,
    JaccliError,
    UserFunctionError,
)

# 128 + SIGPIPE (13 on every POSIX system; the signal module has no SIGPIPE on Windows).
EXIT_CLOSED_PIPE = 128 + 13

# The version of the JSON that jaccli prints: reports (commands/report.py) and error objects alike.
SCHEMA = 1

# ctx.meta's key, set once a command has printed its result on stdout.
_STDOUT_USED = "jaccli.stdout_used"

_PACKAGE_DIR = str(Path(__file__).resolve().parents[2])
_PUBLIC_API_FILES = tuple(os.path.join(_PACKAGE_DIR, "api", name) for name in (
    "arguments.py", "jacobian_hessian.py", "lazy.py", "products.py", "recorded_functions.py", "strict_mode.py"))
_SHAPE_WORDS = re.compile(
    r"broadcast|shape|dimension|not aligned|reshape|size \d+ is different"
)


class CliError(click.ClickException):
    """A user-facing error: one ``Error: ...`` line on stderr. Subclasses fix the `kind` (jaccli.errors lists
    the kinds) and the exit code; a library error keeps its own kind (`kind=`).

    With `json` set (``--format json``), the error is also one JSON object on stdout (`as_json`).
    """

    kind = "usage"
    exit_code = EXIT_USAGE
    json = False

    def __init__(self, message: str, kind: str | None = None) -> None:
        from .messages import one_line  # (only when an error is shown: not on the start-up of every run)

        super().__init__(one_line(message))
        if kind is not None:
            self.kind = kind

    def as_json(self) -> dict:
        """``{"schema": 1, "error": {"kind", "message", "exit_code"}}``: the message is the stderr line's."""
        return {"schema": SCHEMA, "error": {"kind": self.kind, "message": self.format_message(),
                                            "exit_code": self.exit_code}}

    def show(self, file: Any = None) -> None:
        # stderr itself may be full or gone: the exit code still tells what happened.
        try:
            self._print(file)
        except OSError:
            _discard("stderr")
        if self.json:
            import json  # (not for the runs that succeed: ~1 ms of each)

            try:
                sys.stdout.write(json.dumps(self.as_json()) + "\n")
                sys.stdout.flush()
            except (OSError, ValueError):
                _discard("stdout")

    def _print(self, file: Any) -> None:
        close_user_line(file if file is not None else sys.stderr)
        super().show(file)  # click's "Error: message"


class CheckFailed(CliError):
    kind = "check_failed"
    exit_code = EXIT_CHECK_FAILED


class CheckInconclusive(CliError):
    kind = "check_inconclusive"
    exit_code = EXIT_CHECK_INCONCLUSIVE


class BadUsage(CliError):
    kind = "usage"
    exit_code = EXIT_USAGE


class NoCommand(BadUsage):
    """`jaccli` alone (click 8.2+): the group's help on stderr and exit 2, click's way, but like every
    other error it keeps its exit code when stderr cannot take the help."""

    kind = "no_command"

    def __init__(self, ctx: click.Context) -> None:
        super().__init__("no command")
        self.message = ctx.get_help()  # (the help, whole: not one line)
        self.ctx = ctx

    def _print(self, file: Any) -> None:
        click.echo(self.format_message(), file=file, err=True, color=self.ctx.color)


class FunctionFailed(CliError):
    kind = "function_failed"
    exit_code = EXIT_FUNCTION


class ResourceExceeded(CliError):
    kind = "resource_limit"
    exit_code = EXIT_RESOURCE


class InternalError(CliError):
    kind = "internal"
    exit_code = EXIT_INTERNAL


class Interrupted(CliError):
    """Stopped by a signal: 130 for Ctrl-C, or 128 + the signal's number (`interrupted`)."""

    kind = "interrupted"
    exit_code = 130


class ClosedPipe(CliError):
    """stdout or stderr is a pipe whose reader has gone (``| head -1``): no message, and the exit code
    a process killed by SIGPIPE would give (141), as for the other signals; it is not a failure."""

    kind = "closed_pipe"
    exit_code = EXIT_CLOSED_PIPE

    def __init__(self) -> None:
        super().__init__("the reader of a pipe has gone")

    def show(self, file: Any = None) -> None:
        pass


class Terminated(KeyboardInterrupt):
    """SIGINT (Ctrl-C), SIGTERM or SIGHUP (timeout, CI cancelling a job, a closed terminal), raised by the
    command line's signal handler and unwinding like Ctrl-C: the temporary file of an unfinished -o is
    removed on the way out. Any other KeyboardInterrupt raised while the user's function runs is the
    function's own ``raise``: its failure."""

    def __init__(self, signum: int, name: str) -> None:
        super().__init__(name)
        self.signum, self.name = signum, name


_BY_CODE = {EXIT_CHECK_FAILED: CheckFailed, EXIT_CHECK_INCONCLUSIVE: CheckInconclusive, EXIT_USAGE: BadUsage,
            EXIT_FUNCTION: FunctionFailed,
            EXIT_RESOURCE: ResourceExceeded}


def cli_error(message: str, exit_code: int, kind: str | None = None) -> CliError:
    """The CliError subclass for `exit_code`, with a one-line message; `kind` in place of the subclass's."""
    from .messages import cli_words

    first = message.strip().splitlines()[0] if message.strip() else "failed"
    return _BY_CODE.get(exit_code, FunctionFailed)(cli_words(first), kind)


class RaisedInFunction(Exception):
    """Wraps an exception raised by the user's function, so it is told apart from jaccli's own."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class HardExit(SystemExit):
    """os._exit(code) called by the user's code in jaccli's own process: a failure of the function
    (exit 3), not an exit 0 with no result."""


def shown_path(filename: str) -> str:
    """A path as the user would write it: relative to the working directory when inside it."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


def _frames(error: BaseException) -> list:
    """The frames of `error`'s traceback (the traceback module loads here, when an error is reported)."""
    import traceback

    return traceback.extract_tb(error.__traceback__)


def _user_site(error: BaseException, user_file: Path | None) -> tuple[str, int] | None:
    """The innermost traceback frame in the user's file (or, failing that, outside jaccli/NumPy)."""
    frames = _frames(error)
    if user_file is not None:
        target = str(user_file.resolve())
        mine = [fr for fr in frames if fr.filename == target]
        if mine:
            return shown_path(mine[-1].filename), mine[-1].lineno or 0
    outside = [fr for fr in _python_frames(frames) if not fr.filename.startswith(_PACKAGE_DIR)]
    if outside:
        return shown_path(outside[-1].filename), outside[-1].lineno or 0
    return None


def _raised_by_user_statement(error: BaseException, user_file: Path | None) -> bool:
    frames = _frames(error)
    if not frames:
        return False
    last = frames[-1]
    if user_file is None or last.filename != str(user_file.resolve()):
        return False
    return linecache.getline(last.filename, last.lineno or 0).lstrip().startswith("raise")


def _where(site: tuple[str, int] | None) -> str:
    return f" ({site[0]}:{site[1]})" if site else ""


def _in_function(error: BaseException, user_file: Path | None, what: str, inputs: str) -> CliError:
    site = _user_site(error, user_file)
    if isinstance(error, SystemExit):
        called = "os._exit" if isinstance(error, HardExit) else "sys.exit"
        return FunctionFailed(f"{what} called {called}({error.code!r}){_where(site)}; a function to "
                              "differentiate must return its value")
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if isinstance(error, MemoryError):  # out of memory is exit 4 wherever it happens
        detail = f"MemoryError: {message}" if message else "MemoryError"
        return ResourceExceeded(f"{what} ran out of memory ({detail}){_where(site)}")
    hint = f"; the inputs are {inputs}" if inputs else ""
    if isinstance(error, ValueError) and _SHAPE_WORDS.search(message) \
            and not _raised_by_user_statement(error, user_file):
        return BadUsage(f"the inputs do not fit the function: {message}{_where(site)}{hint}")
    detail = f"{type(error).__name__}: {message}" if message else type(error).__name__
    # An index out of range is f failing (exit 3) whatever the index, x[7] as x[10**20]: the shapes name the
    # inputs, which the user may have meant to give longer.
    step = getattr(error, "jaccli_fd_step", None)  # (check.finite_differences.FD_STEP_FAILED)
    if step is not None:
        hint = (f"; it raised at a point check's finite differences took, one element moved by {step:.2g} from the "
                "input: check a point farther from the edge of the function's domain")
    return FunctionFailed(f"{what} raised {detail}{_where(site)}"
                          + (hint if isinstance(error, IndexError) or step is not None else ""))


def _jaccli_error(error: JaccliError, definition: str) -> CliError:
    message = str(error)
    site = getattr(error, "site", None)
    if isinstance(error, UserFunctionError) and site and os.path.isabs(site[0]):
        message = message.replace(site[0], shown_path(site[0]), 1)
    elif isinstance(error, UserFunctionError) and site is None and definition:
        message = f"{message} ({definition})"
    return cli_error(message, error.exit_code, error.kind)


def _raised_in_library(error: BaseException) -> bool:
    """ValueError/TypeError raised by jaccli's public API itself (bad request), not deeper."""
    frames = _frames(error)
    if not frames:
        return False
    return frames[-1].filename in _PUBLIC_API_FILES


def translate(error: BaseException, *, user_file: Path | None = None, what: str = "the function",
              inputs: str = "", definition: str = "", written: Sequence[Path] = (), streams: bool = True) -> CliError:
    """The CliError to show for `error`.

    Args:
        error: what was raised while running the command.
        user_file: the user's .py file, to find the failing line; None for an expression.
        what: how to name the function in messages ("f in model.py", "the expression").
        inputs: the inputs' names and shapes, added to shape-mismatch messages.
        definition: where the function is defined (``f.py:3``), for errors with no line of their own.
        written: the files the run had put in place when it was interrupted (`atomic.recording_renames`).
        streams: whether the command can stream its result to a .npy file with -o (check cannot).
    """
    if isinstance(error, CliError):
        return error
    if isinstance(error, click.ClickException):
        return cli_error(error.format_message(), error.exit_code)
    if isinstance(error, RaisedInFunction):
        return _in_function(error.error, user_file, what, inputs)
    if isinstance(error, JaccliError):
        return _jaccli_error(error, definition)
    if isinstance(error, KeyboardInterrupt):
        return interrupted(error, written)
    if isinstance(error, MemoryError):
        return ResourceExceeded("out of memory; select fewer rows or columns with --rows/--cols"
                                + (", or stream the result to a .npy file with -o" if streams else ""))
    if isinstance(error, (ValueError, TypeError)) and _raised_in_library(error):
        from .messages import cli_words

        return BadUsage(cli_words(str(error).strip().splitlines()[0]))
    if isinstance(error, OSError) and isinstance(error.filename, (str, bytes, os.PathLike)):
        # A file jaccli itself opens (the function's own errors are RaisedInFunction): not f's failure.
        shown = shown_path(os.fsdecode(error.filename))
        failure = write_error(shown, error)
        if failure.exit_code == EXIT_RESOURCE:  # a full disk
            return cli_error(str(failure).replace("cannot write", "cannot use", 1), failure.exit_code)
        return BadUsage(f"cannot use {shown}: {error.strerror or error}; check the path and its permissions")
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    detail = f"{type(error).__name__}: {message}" if message else type(error).__name__
    own = _jaccli_site(error) if isinstance(error, _PROGRAMMING_ERRORS) else None
    if own is not None:
        # Not raised while f ran (that is RaisedInFunction), and last in jaccli's own code: a bug.
        return InternalError(f"internal error in jaccli, not in {what}: {detail} ({own[0]}:{own[1]}); "
                             "please report it with the traceback that the same command prints with --debug")
    return FunctionFailed(f"differentiating {what} failed: {detail}"
                          f"{_where(_user_site(error, user_file))}; rerun with --debug for the traceback")


def _were_written(written: Sequence[Path]) -> str:
    """``J.npy was written completely``, ``a.npy and b.npz were written completely``; "" for no file."""
    names = list(dict.fromkeys(shown_path(os.fspath(path)) for path in written))
    if not names:
        return ""
    files = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{files} {verb(len(names), 'were', 'was')} written completely"


def interrupted(error: KeyboardInterrupt, written: Sequence[Path] = ()) -> Interrupted:
    """The error for a run stopped by a signal (Ctrl-C is a plain KeyboardInterrupt outside the command line's
    handler), exit 128 + the signal's number, saying which files `written` were complete before it came."""
    signal = error.name if isinstance(error, Terminated) else "SIGINT"
    stopped = "interrupted" if signal == "SIGINT" else f"stopped by {signal}"
    files = _were_written(written)
    if files:
        failure = Interrupted(f"{stopped} after {files}; no other file was written or changed")
    else:
        failure = Interrupted(f"{stopped}; no file was written or changed")
    if isinstance(error, Terminated):
        failure.exit_code = 128 + error.signum  # the shell's convention: 143 for SIGTERM, 129 for SIGHUP
    return failure


def after_writing(failure: CliError, written: Sequence[Path]) -> CliError:
    """`failure`, come once the files `written` were in place (stdout full as the report is printed): its message
    says they were written completely. An interruption names them already; a closed pipe says nothing."""
    files = _were_written(written)
    if files and not isinstance(failure, (Interrupted, ClosedPipe)):
        failure.message = f"{failure.message}; {files} before this error"
    return failure


# Errors that say the code is wrong, whatever its input: raised in jaccli's own code, a bug there.
# A ValueError or LinAlgError in a rule can come from the input (a singular matrix, f's output of
# ragged arrays): those stay the function's failure (exit 3).
_PROGRAMMING_ERRORS = (TypeError, AttributeError, KeyError, NameError, AssertionError, RecursionError)


def _python_frames(frames: list) -> list:
    """The traceback frames of Python files outside NumPy (no ``<string>`` or frozen modules)."""
    return [fr for fr in frames if f"{os.sep}numpy{os.sep}" not in fr.filename and not fr.filename.startswith("<")]


def _jaccli_site(error: BaseException) -> tuple[str, int] | None:
    """Where in jaccli's package (as ``jaccli/api/evaluator.py``) an error was raised, when the innermost
    frame outside NumPy is there; None when it is elsewhere (the user's code, another package)."""
    frames = _python_frames(_frames(error))
    if not frames or not frames[-1].filename.startswith(_PACKAGE_DIR + os.sep):
        return None
    path = os.path.relpath(frames[-1].filename, os.path.dirname(_PACKAGE_DIR))
    return path.replace(os.sep, "/"), frames[-1].lineno or 0


def _discard(name: str) -> None:
    """Point sys.stdout's or sys.stderr's file descriptor at the null device, so that the exit's final
    flush cannot fail again (with a traceback of its own)."""
    try:
        fd = getattr(sys, name).fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test runner's buffer): nothing is flushed at exit
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def stream_error(name: str, error: OSError) -> CliError:
    """The error for a failed write to stdout or stderr (`name`): a closed pipe exits 141 quietly; a full
    disk is exit 4 and any other write error exit 2, in one line on stderr if stderr still takes it."""
    if error.errno == errno.EPIPE:
        _discard("stdout")
        _discard("stderr")
        return ClosedPipe()
    if is_closed(getattr(sys, name)):
        return BadUsage(f"cannot write {name}: it was closed when jaccli started; run jaccli with an open "
                        f"{name}" + (", or write the result to a file with -o" if name == "stdout" else ""))
    _discard(name)
    failure = write_error(name, error)
    return cli_error(str(failure), failure.exit_code)


@contextlib.contextmanager
def _writing_to(name: str) -> Iterator[None]:
    try:
        yield
        getattr(sys, name).flush()
    except OSError as error:
        raise stream_error(name, error) from None
    ctx = click.get_current_context(silent=True)
    if name == "stdout" and ctx is not None:
        ctx.meta[_STDOUT_USED] = True


def with_json(failure: CliError, argv: Sequence[str], ctx: click.Context) -> CliError:
    """`failure`, shown also as a JSON object on stdout when `argv` asks for ``--format json`` and the command
    has not printed its result there yet (a check that failed has: its report says ``"passed": false``)."""
    failure.json = _format_asked(argv) == "json" and not ctx.meta.get(_STDOUT_USED)
    return failure


def _format_asked(argv: Sequence[str]) -> str | None:
    """The value of the last ``--format`` among the options in `argv`, in lower case; read from the raw
    arguments, so that an error in parsing them (a bad option after ``--format json``) is JSON too."""
    asked = None
    args = iter(argv)
    for arg in args:
        if arg == "--":
            break
        if arg == "--format":
            asked = next(args, None)
        elif arg.startswith("--format="):
            asked = arg.partition("=")[2]
    return asked.lower() if asked is not None else None


def to_stdout() -> contextlib.AbstractContextManager[None]:
    """Context manager around printing results: a full disk, an I/O error or a closed pipe on stdout
    is reported as such (`stream_error`).

    Flushes stdout at the end, so that an error shows here and not as a traceback at exit.
    """
    return _writing_to("stdout")


def to_stderr() -> contextlib.AbstractContextManager[None]:
    """Context manager around jaccli's warnings and notes: a failed write to stderr is `stream_error`'s
    error, not the function failing."""
    return _writing_to("stderr")


def print_traceback(error: BaseException) -> None:
    """The full traceback on stderr, for --debug."""
    import traceback

    inner = error.error if isinstance(error, RaisedInFunction) else error
    try:
        click.echo("".join(traceback.format_exception(type(inner), inner, inner.__traceback__)), err=True,
                   nl=False)
    except OSError:
        _discard("stderr")  # the error itself still decides the exit code
