"""Exceptions jaccli raises, each with the stable `kind` and the exit code the command line gives it.

Every error has a `kind`, a short snake_case word that stays the same from release to release (the
message's wording may change): tests, scripts and ``--format json``'s error object read it. The kinds
of the library's errors, and the command line's own (jaccli.cli.commands.failures), with their exit codes:

    check_failed           1  a check asked for failed (check, --compare, --strict, --fail-on-nonfinite)
    check_inconclusive     5  check: nothing failed, but finite differences cannot resolve an entry where AD differs
    usage                  2  bad option, index, file, or inputs that do not fit the function
    no_command             2  `jaccli` with no command: the help on stderr
    batch_mixing           2  batch_axis=0, but the function mixes samples
    function_failed        3  the function raised, returned a non-array, called sys.exit, or crashed the process
    unsupported_operation  3  a NumPy function or argument with no derivative rule (see `jaccli ops`)
    escaped_tracing        3  code escaped tracing: float(x), math.sin(x), a traced value into a plain array
    resource_limit         4  the result exceeds the memory budget, the disk is full, or a Dask scheduler is out of reach
    internal              70  an error in jaccli's own code, a bug to report
    interrupted     130, 143, 129  stopped by Ctrl-C, SIGTERM, SIGHUP (128 + the signal's number)
    closed_pipe          141  the reader of stdout or stderr has gone; nothing is printed

The list is also in man/jaccli.1 (EXIT STATUS); a test keeps the three in step.
"""

from __future__ import annotations

# Exit codes, documented in `jaccli --help`, README.md and man/jaccli.1.
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_FUNCTION = 3
EXIT_RESOURCE = 4
EXIT_CHECK_INCONCLUSIVE = 5
EXIT_INTERNAL = 70  # sysexits.h's EX_SOFTWARE: an error in jaccli's own code, a bug to report


class JaccliError(Exception):
    """Base of every error jaccli reports to a user: `kind` says which (see above), `exit_code` is what the CLI
    exits with."""

    kind = "usage"
    exit_code = EXIT_USAGE


class UsageError(JaccliError, ValueError):
    """The user asked for something that cannot be done: bad option, index, file or input shape."""

    kind = "usage"
    exit_code = EXIT_USAGE


class UserFunctionError(JaccliError):
    """The user's function failed, returned a non-array, or used something jaccli cannot trace.

    `site` is ``(filename, lineno)`` in the user's code when it is known.
    """

    kind = "function_failed"
    exit_code = EXIT_FUNCTION

    def __init__(self, message: str, site: tuple[str, int] | None = None):
        if site is not None:
            message = f"{site[0]}:{site[1]}: {message}"
        super().__init__(message)
        self.site = site


class UnsupportedOperationError(UserFunctionError, TypeError):
    """A NumPy function with no derivative rule in jaccli (see `jaccli ops`)."""

    kind = "unsupported_operation"


class TracingError(UserFunctionError, TypeError):
    """Code escaped tracing: float(x), math.sin(x), writing a traced value into a plain array."""

    kind = "escaped_tracing"


class StrictModeError(JaccliError, RuntimeError):
    """strict=True and an output is structurally independent of a differentiated input."""

    kind = "check_failed"
    exit_code = EXIT_CHECK_FAILED


class BatchMixingError(JaccliError, ValueError):
    """batch_axis=0 was asked for, but the function mixes samples."""

    kind = "batch_mixing"
    exit_code = EXIT_USAGE


class ResourceLimitError(JaccliError, MemoryError):
    """A result or intermediate would not fit the memory budget."""

    kind = "resource_limit"
    exit_code = EXIT_RESOURCE


class ConstantUnderOuterWarning(UserWarning):
    """A derivative taken inside another one without create_graph=True: a constant to the outer one."""
