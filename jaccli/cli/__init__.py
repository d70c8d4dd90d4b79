"""The command line: click commands in commands/, rendering in render/; the entry point is main."""

from .main import cli, main

__all__ = ["cli", "main"]
