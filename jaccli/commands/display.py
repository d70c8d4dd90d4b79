"""Reports for people (check, info, ops): facts and small tables, as rich tables on terminals or plain text."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Mapping, Sequence, Union


@dataclass
class Table:
    """A titled table of strings; `more` is a closing note such as "... and 12 more"."""

    title: str
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    more: str = ""


@dataclass
class Facts:
    """``key: value`` lines."""

    items: Mapping[str, str] = field(default_factory=dict)


Section = Union[str, Facts, Table]


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
        elif isinstance(section, Facts):
            width = max((len(k) for k in section.items), default=0)
            lines += [f"{k + ':':<{width + 1}} {v}" for k, v in section.items.items()]
        else:
            lines.append(f"{section.title}:")
            lines += plain_table(section.headers, section.rows, indent="  ") if section.rows else ["  none"]
            if section.more:
                lines.append(f"  {section.more}")
    return "\n".join(lines) + "\n"


def _rich(sections: Sequence[Section], color: bool) -> None:
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    from jaccli.render import make_console

    console = make_console(sys.stdout, no_color=None if color else True)
    for section in sections:
        if isinstance(section, str):
            console.print(Text(section))
        elif isinstance(section, Facts):
            grid = RichTable.grid(padding=(0, 2))
            grid.add_column(style="bold")
            grid.add_column()
            for k, v in section.items.items():
                grid.add_row(k, v)
            console.print(grid)
        else:
            table = RichTable(title=section.title, title_justify="left", box=box.SIMPLE_HEAD,
                              caption=section.more or None, caption_justify="left")
            for header in section.headers:
                table.add_column(header)
            for row in section.rows:
                table.add_row(*row)
            if not section.rows:
                console.print(Text(f"{section.title}: none"))
            else:
                console.print(table)


def render(sections: Sequence[Section], fmt: str | None, color: bool = True) -> None:
    """Print `sections` to stdout: a rich table on a terminal (or ``fmt == "table"``), plain text otherwise."""
    from .report import stdout_is_terminal

    if (fmt or ("table" if stdout_is_terminal() else "text")) == "table":
        _rich(sections, color)
    else:
        sys.stdout.write(_plain(sections))
