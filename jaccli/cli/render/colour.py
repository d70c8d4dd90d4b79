"""Whether stdout gets colour and the terminal's views: --color auto|always|never, NO_COLOR and FORCE_COLOR.

The rules are clig.dev's and rich's: ``--color always`` and ``--color never`` (``--no-color``)
beat the environment; with ``auto`` (the default), a non-empty ``NO_COLOR`` turns colour off
(https://no-color.org), then a non-empty ``FORCE_COLOR`` turns it on even in a pipe
(https://force-color.org), and otherwise a terminal gets colour and a pipe none. Forced colour
also gives a pipe the terminal's views (tables, not plain numbers), so that
``jaccli ... --color always | less -R`` shows what the terminal would.
"""

from __future__ import annotations

import os
from typing import IO, Any

CHOICES = ("auto", "always", "never")


def _is_terminal(file: IO[Any]) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _env(name: str) -> bool:
    return os.environ.get(name, "") != ""


def wants_color(choice: str | None, file: IO[Any]) -> bool:
    """Whether what goes to `file` is coloured, for the --color `choice` (None: auto).

    >>> import io
    >>> wants_color("always", io.StringIO()), wants_color("never", io.StringIO())
    (True, False)
    """
    if choice == "always":
        return True
    if choice == "never":
        return False
    if _env("NO_COLOR"):
        return False
    return _env("FORCE_COLOR") or _is_terminal(file)


def terminal_view(choice: str | None, file: IO[Any]) -> bool:
    """Whether `file` gets the views made for terminals (rich tables) by default: a terminal, or forced colour."""
    return _is_terminal(file) or wants_color(choice, file)
