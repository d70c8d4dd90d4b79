"""The working directory, kept as it was around the user's code."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["same_directory"]


@contextlib.contextmanager
def same_directory() -> Iterator[None]:
    """Context manager: the working directory is put back if the user's code changes it (os.chdir),
    so that the paths given to jaccli (inputs, -o, --compare) keep meaning what they meant."""
    try:
        before = os.getcwd()
    except OSError:  # it was removed: there is nothing to go back to
        before = None
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(OSError):
                os.chdir(before)
