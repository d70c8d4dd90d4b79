"""The words of --help: what FUNC and INPUT are, the exit statuses, and each command's examples."""

from __future__ import annotations

import click

__all__ = ["EXIT_STATUS", "SAFETY", "SAFETY_LINE", "examples", "write_statuses"]

SAFETY = """\
FUNC is path.py (its function f, or its only public function) or path.py:name. It is your own
code: jaccli runs the file with your rights, like `python path.py`, so never point it at files you
do not trust. -e EXPR is safe on untrusted text: the expression is checked and evaluated without
running any code.

INPUT is a .npy file (loaded without pickles), an .npz (arrays bound by key), a .csv or .txt
file, or a literal such as 0.5 or "[1, 2, 3]". Inputs bind to the function's parameters in
order; name=SOURCE binds by name (keyword-only parameters, after *, by name only).
"""

# Each command's help says this much of SAFETY, in one line; the whole text is `jaccli --help`'s.
SAFETY_LINE = ("FUNC is path.py[:name], your own code: jaccli runs the file with your rights. -e EXPR is safe on "
               "untrusted text. INPUTs, exit statuses: jaccli --help, man jaccli.")

# (status, meaning): shown as a definition list, so that a narrow terminal wraps a line between words.
EXIT_STATUS = [
    ("0", "success"),
    ("1", "a check you asked for failed: check, --compare, --strict, --fail-on-nonfinite"),
    ("2", "usage error: bad option, index, file, or inputs that do not fit the function"),
    ("3", "the function failed: it raised, returned a non-array, or used an unsupported operation"),
    ("4", "resource limit: the result exceeds --max-memory, or the disk is full"),
    ("5", "check inconclusive: finite differences cannot resolve entries where AD differs"),
    ("70", "an error in jaccli's own code (a bug to report, with --debug's traceback)"),
    ("130, 143, 129", "stopped by Ctrl-C, SIGTERM, SIGHUP; no file written, unless the message names it"),
    ("141", "the reader of a pipe went away (| head -1); quiet, not a failure"),
]


def examples(examples: list[tuple[str, str]]) -> str:
    """The epilog of a command's help: its examples, one a line, each with what it does."""
    width = max(len(command) for command, _ in examples) + 2
    return "\b\nExamples:\n" + "\n".join(f"  {command:<{width}}{what}".rstrip() for command, what in examples)


def write_statuses(formatter: click.HelpFormatter) -> None:
    """EXIT_STATUS as two columns, each meaning wrapped between words only (click's wrapping would break
    ``--max-memory`` at its hyphen)."""
    import textwrap

    first = max(len(status) for status, _ in EXIT_STATUS) + 2
    indent = " " * formatter.current_indent
    width = max(formatter.width - formatter.current_indent - first, 20)
    for status, meaning in EXIT_STATUS:
        lines = textwrap.wrap(meaning, width, break_on_hyphens=False, break_long_words=False)
        formatter.write(f"{indent}{status:<{first}}{lines[0]}\n")
        formatter.write("".join(f"{indent}{'':<{first}}{line}\n" for line in lines[1:]))
