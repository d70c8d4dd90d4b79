"""The command line: click commands in commands/, rendering in render/; the entry point is main."""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["cli", "main"]


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point: ``jaccli = "jaccli.cli:main"``.

    A command that runs the user's code (a FUNC .py file, which may call C extensions) runs in a child
    process that a parent watches for crashes (crash_watch: a segfault in f is exit 3, said); the others
    (-e expressions, --help, --version, ops) run in this process, paying nothing for it. The fork comes
    before click and the commands load: the child loads them itself, rather than copying the parent's
    pages of them as it writes to them.
    """
    def run() -> Any:
        command_line = importlib.import_module(".main", __name__)
        globals()["main"] = main  # (importing the module main set the package's attribute to it)
        return command_line.main(argv)
    if argv is None and any(".py" in arg for arg in sys.argv[1:]):
        from .crash_watch import run_watched

        return run_watched(run)
    return run()


def __getattr__(name: str) -> Any:
    if name == "cli":
        cli = importlib.import_module(".main", __name__).cli
        globals().update(cli=cli, main=main)
        return cli
    raise AttributeError(f"module 'jaccli.cli' has no attribute {name!r}")
