"""Exceptions jaccli raises, each tied to the exit code the command line gives it."""

from __future__ import annotations

# Exit codes, documented in `jaccli --help`, README.md and man/jaccli.1.
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_FUNCTION = 3
EXIT_RESOURCE = 4
EXIT_INTERNAL = 70  # sysexits.h's EX_SOFTWARE: an error in jaccli's own code, a bug to report


class JaccliError(Exception):
    """Base of every error jaccli reports to a user; `exit_code` is what the CLI exits with."""

    exit_code = EXIT_USAGE


class UsageError(JaccliError, ValueError):
    """The user asked for something that cannot be done: bad option, index, file or input shape."""

    exit_code = EXIT_USAGE


class UserFunctionError(JaccliError):
    """The user's function failed, returned a non-array, or used something jaccli cannot trace.

    `site` is ``(filename, lineno)`` in the user's code when it is known.
    """

    exit_code = EXIT_FUNCTION

    def __init__(self, message: str, site: tuple[str, int] | None = None):
        if site is not None:
            message = f"{site[0]}:{site[1]}: {message}"
        super().__init__(message)
        self.site = site


class UnsupportedOperationError(UserFunctionError, TypeError):
    """A NumPy function with no derivative rule in jaccli (see `jaccli ops`)."""


class TracingError(UserFunctionError, TypeError):
    """Code escaped tracing: float(x), math.sin(x), writing a traced value into a plain array."""


class StrictModeError(JaccliError, RuntimeError):
    """strict=True and an output is structurally independent of a differentiated input."""

    exit_code = EXIT_CHECK_FAILED


class BatchMixingError(JaccliError, ValueError):
    """batch_axis=0 was asked for, but the function mixes samples."""

    exit_code = EXIT_USAGE


class ResourceLimitError(JaccliError, MemoryError):
    """A result or intermediate would not fit the memory budget."""

    exit_code = EXIT_RESOURCE


class ConstantUnderOuterWarning(UserWarning):
    """A derivative taken inside another one without create_graph=True: a constant to the outer one."""
