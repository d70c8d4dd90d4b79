"""Reports for people (check, info, ops): facts and small tables, as rich tables on terminals or plain text."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Mapping, Sequence, Union


@dataclass
class Table:
    """A titled table of strings; `more` is a closing note such as "... and 12 more".

    `prose` names the columns of free text (notes, reasons) that may wrap between words on a
    terminal, `wrap` those that may wrap between words outside brackets (``8192 B (8.0 KiB)``);
    every other cell (names, shapes, numbers) is shown whole.
    """

    title: str
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    more: str = ""
    prose: Sequence[str] = ()
    wrap: Sequence[str] = ()


@dataclass
class Facts:
    """``key: value`` lines."""

    items: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Verdict:
    """A report's verdict line, shown first: green when `ok`, red when not, yellow when None (inconclusive)."""

    text: str
    ok: bool | None


Section = Union[str, Facts, Table, Verdict]


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Columns padded to their widest cell, two spaces apart; the last column is not padded."""
    grid = [list(headers)] + [list(r) for r in rows]
    widths = [max(len(line[c]) for line in grid) for c in range(len(headers) - 1)]
    return [indent + "  ".join([cell.ljust(w) for cell, w in zip(line, widths)] + [line[-1]]).rstrip()
            for line in grid]


def _plain(sections: Sequence[Section]) -> str:
    lines: list[str] = []
    for section in sections:
        if isinstance(section, str):
            lines.append(section)
        elif isinstance(section, Verdict):
            lines.append(section.text)
        elif isinstance(section, Facts):
            width = max((len(k) for k in section.items), default=0)
            lines += [f"{k + ':':<{width + 1}} {v}" for k, v in section.items.items()]
        else:
            lines.append(f"{section.title}:")
            lines += plain_table(section.headers, section.rows, indent="  ") if section.rows else ["  none"]
            if section.more:
                lines.append(f"  {section.more}")
    return "\n".join(lines) + "\n"


def _rich(sections: Sequence[Section], color: str) -> None:
    from rich.text import Text

    from .terminal import make_console, print_facts, print_report_table, too_narrow

    console = make_console(sys.stdout, color=color)
    if too_narrow(console):
        sys.stdout.write(_plain(sections))
        return
    for section in sections:
        if isinstance(section, str):
            console.print(Text(section, style="bold" if section is sections[0] else ""))
        elif isinstance(section, Verdict):
            colour = {True: "green", False: "red", None: "yellow"}[section.ok]
            console.print(Text(section.text, style=f"bold {colour}"))
        elif isinstance(section, Facts):
            print_facts(console, list(section.items.items()))
        elif not section.rows:
            console.print(Text(f"{section.title}: none"))
        else:
            print_report_table(console, section.title, section.headers, section.rows, prose=section.prose,
                               wrap=section.wrap, caption=section.more or None)


def stdout_format(fmt: str | None, color: str = "auto") -> str:
    """The --format asked for, or by default "table" on a terminal (or with forced colour) and "text" otherwise."""
    from .colour import terminal_view

    return fmt or ("table" if terminal_view(color, sys.stdout) else "text")


def render(sections: Sequence[Section], fmt: str | None, color: str = "auto") -> None:
    """Print `sections` to stdout: a rich table on a terminal (or ``fmt == "table"``), plain text otherwise.

    `color` is the --color choice: auto, always or never."""
    if stdout_format(fmt, color) == "table":
        _rich(sections, color)
    else:
        sys.stdout.write(_plain(sections))
