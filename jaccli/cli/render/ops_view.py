"""`jaccli ops` on a terminal: the supported operations in a table whose columns fit the terminal's width."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .reports import fits, print_report_table
from .terminal import make_console, too_narrow

# (key, header), most wanted first; the columns left out on a narrow terminal are the last of these.
_COLUMNS = (("name", "name"), ("reverse", "rev"), ("forward", "fwd"), ("kind", "kind"), ("max_order", "order"),
            ("family", "family"))
# Every rule takes a block of seeds (block_seeds is always true): the table leaves it to the JSON.


def _cell(value: object) -> str:
    return ("yes" if value else "no") if isinstance(value, bool) else str(value)


def show_ops_table(rows: Sequence[dict], title: str, color: str) -> None:
    """The rows of `jaccli.api.ops_table.ops_table` as a rich table on stdout, with as many of the columns as fit
    beside the name (notes wrap, or are listed under the table)."""
    console = make_console(sys.stdout, color=color)
    if too_narrow(console):
        from jaccli.api.ops_table import format_ops_plain

        sys.stdout.write(format_ops_plain(list(rows)) + "\n")
        return
    for kept in range(len(_COLUMNS), 0, -1):
        columns = _COLUMNS[:kept]
        cells = [[_cell(r[key]) for key, _ in columns] for r in rows]
        if kept == 1 or fits(console, [header for _, header in columns], cells):
            break
    in_order = sorted(columns, key=lambda c: ("name", "family", "kind", "reverse", "forward", "max_order").index(c[0]))
    print_report_table(console, title, [header for _, header in in_order] + ["notes"],
                       [[_cell(r[key]) for key, _ in in_order] + [r["notes"] or "-"] for r in rows], prose=["notes"])
