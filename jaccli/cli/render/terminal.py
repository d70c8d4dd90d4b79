"""Showing derivative blocks on terminals: rich consoles, tables and heatmaps (plain numbers: render_plain)."""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Sequence
from typing import IO, Any

import numpy as np
from rich import box
from rich.color import Color
from rich.console import Console, RenderableType
from rich.panel import Panel
from rich.style import Style
from rich.table import Table
from rich.text import Text

# Plain text and the progress bar live in their own modules; re-exported so existing imports keep working.
from .colour import terminal_view, wants_color
from .plain import RenderBlock, RenderHeader, format_number, format_plain
from .progress import ProgressReporter, make_progress
from .reports import natural_width, print_facts, print_report_table
from jaccli.plurals import counted

__all__ = [
    "ProgressReporter",
    "RenderBlock",
    "RenderHeader",
    "format_plain",
    "make_console",
    "make_progress",
    "print_facts",
    "print_report_table",
    "render_table",
    "rows_for",
    "too_narrow",
]


# ---------------------------------------------------------------- grids and labels


def _grid(block: RenderBlock) -> tuple[np.ndarray, list[str], list[str]]:
    """The block as a 2-D array with one label per row and per column."""
    matrix = block.matrix
    if matrix.ndim == 0:
        return matrix.reshape(1, 1), [""], [""]
    if matrix.ndim == 1:
        labels = block.row_labels if block.row_labels is not None else block.col_labels
        return matrix.reshape(-1, 1), _labels(block.key, "row", labels, matrix.shape[0]), [""]
    rows, cols = matrix.shape
    return (
        matrix,
        _labels(block.key, "row", block.row_labels, rows),
        _labels(block.key, "column", block.col_labels, cols),
    )


def _labels(key: str, what: str, labels: Sequence[str] | None, count: int) -> list[str]:
    if labels is None:
        return [str(i) for i in range(count)]
    if len(labels) != count:
        raise ValueError(f"block {key}: {len(labels)} {what} labels for {count} {what}s")
    return [str(label) for label in labels]


# ---------------------------------------------------------------- consoles


class _Console(Console):
    """A Console whose closed pipe is an error like any other write's, for the command line to report."""

    def on_broken_pipe(self) -> None:
        # rich's own answer is SystemExit(1), which is jaccli's "a check failed"; the CLI exits 141.
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


# The narrowest console a rich view is drawn on: below it (COLUMNS=0, a split pane a few cells wide) a
# title or a number would not fit on a line, and rich prints nothing or a column of fragments.
MIN_WIDTH = 16


def too_narrow(console: Console) -> bool:
    """Whether `console` is narrower than any rich view needs: then views print their plain form."""
    return console.width < MIN_WIDTH


def make_console(file: IO[str], *, color: str | None = None, no_color: bool | None = None,
                 width: int | None = None) -> Console:
    """A rich Console that colours as --color, NO_COLOR and FORCE_COLOR say (`colour.wants_color`).

    Args:
        file: where output goes (sys.stdout, sys.stderr, a StringIO in tests).
        color: the --color choice, auto (None), always or never.
        no_color: True for --color never (`--no-color`).
        width: pinned width; None lets rich read the terminal or $COLUMNS (80 for pipes).

    Returns:
        A console with markup, emoji and highlighting off, so user text (file names, labels like
        ``x[0]``) prints verbatim; it draws as on a terminal on a terminal, and in a pipe when
        colour is forced.

    >>> import io
    >>> make_console(io.StringIO(), width=40).is_terminal
    False
    """
    choice = "never" if no_color else color
    coloured = wants_color(choice, file)

    def console(system: str | None) -> Console:
        return _Console(
            file=file,
            # Explicit either way: rich's own reading of FORCE_COLOR would ignore --color never.
            force_terminal=terminal_view(choice, file),
            # No colour system means no escape sequences at all, not even bold.
            color_system=system,
            no_color=not coloured,
            width=width,
            markup=False,
            emoji=False,
            highlight=False,
        )

    made = console("auto" if coloured else None)
    if coloured and made.color_system is None:  # forced colour on a dumb terminal: the 16 standard colours
        made = console("standard")
    return made


# ---------------------------------------------------------------- rich tables

# Viridis stops: perceptually even and readable for colour-blind users.
_PALETTE = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_NONFINITE = Style(color="red", bold=True)
_NONFINITE_HEAT = Style(color="white", bgcolor="red", bold=True)
_ZERO_HEAT = Style(dim=True)
_LABEL = Style(color="cyan")


def _heat_style(fraction: float) -> Style:
    position = min(max(fraction, 0.0), 1.0) * (len(_PALETTE) - 1)
    low = min(int(position), len(_PALETTE) - 2)
    t = position - low
    rgb = [round(a + (b - a) * t) for a, b in zip(_PALETTE[low], _PALETTE[low + 1])]
    luminance = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) / 255
    return Style(color="black" if luminance > 0.5 else "white", bgcolor=Color.from_rgb(*rgb))


def _visible(count: int, limit: int) -> list[int | None]:
    """Indices to show, with None where the middle is left out, as NumPy prints long arrays."""
    limit = max(limit, 1)
    if count <= limit:
        return list(range(count))
    head, tail = (limit + 1) // 2, limit // 2
    return [*range(head), None, *range(count - tail, count)]


def _cell(value: Any, precision: int, heatmap: bool, scale: float) -> Text:
    text = format_number(value, precision)
    if isinstance(value, (bool, int)):
        finite = True
    else:
        finite = math.isfinite(abs(value))
    if not finite:
        return Text(text, style=_NONFINITE_HEAT if heatmap else _NONFINITE)
    if not heatmap:
        return Text(text)
    if value == 0:
        return Text(text, style=_ZERO_HEAT)
    return Text(text, style=_heat_style(abs(value) / scale if scale > 0 else 1.0))


def _heat_scale(matrix: np.ndarray) -> float:
    magnitude = np.abs(matrix.astype(complex) if np.iscomplexobj(matrix) else matrix.astype(float))
    finite = magnitude[np.isfinite(magnitude)]
    return float(finite.max()) if finite.size else 0.0


def _block_panel(
    block: RenderBlock,
    *,
    precision: int,
    heatmap: bool,
    max_rows: int,
    max_cols: int,
    ellipsis: str,
) -> tuple[Panel, Text | None]:
    title = Text(f"{block.key}  shape={tuple(block.shape)}", style="bold")
    matrix, row_labels, col_labels = _grid(block)
    scale = _heat_scale(matrix) if heatmap and matrix.size else 0.0
    notes = []
    if matrix.size == 0:
        body: RenderableType = Text("(empty)", style="dim")
    elif block.matrix.ndim == 0:
        body = _cell(matrix.item(), precision, heatmap, scale)
    else:
        rows, cols = _visible(matrix.shape[0], max_rows), _visible(matrix.shape[1], max_cols)
        table = Table(
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            header_style="bold",
            # A vector is one unnamed column; a header row would only add an empty line.
            show_header=block.matrix.ndim == 2,
        )
        table.add_column("", style=_LABEL, no_wrap=True)
        for j in cols:
            label = ellipsis if j is None else col_labels[j]
            table.add_column(Text(label), justify="right", no_wrap=True)
        for i in rows:
            if i is None:
                table.add_row(Text(ellipsis), *(Text(ellipsis) for _ in cols))
                continue
            cells = (
                Text(ellipsis) if j is None else _cell(matrix[i, j].item(), precision, heatmap, scale)
                for j in cols
            )
            table.add_row(Text(row_labels[i]), *cells)
        body = table
        notes.append(_shown(matrix, rows, cols))
    # Printed under the panel: as a subtitle it would be cut, inside it would widen the panel.
    return Panel(body, title=title, title_align="left", expand=False), _note(notes, heatmap, matrix, scale)


def _shown(matrix: np.ndarray, rows: list[int | None], cols: list[int | None]) -> str:
    """``showing 20 of 32 rows, ...`` when the middle of the matrix is left out, else empty."""
    if None not in rows and None not in cols:
        return ""
    shown_rows, shown_cols = len(rows) - (None in rows), len(cols) - (None in cols)
    rows_of, cols_of = counted(matrix.shape[0], "row"), counted(matrix.shape[1], "column")
    return f"showing {shown_rows} of {rows_of}, {shown_cols} of {cols_of}"


def _note(notes: list[str], heatmap: bool, matrix: np.ndarray, scale: float) -> Text | None:
    if heatmap and matrix.size:
        notes.append(f"colour: |value|/{format_number(scale, 3)}")
    notes = [n for n in notes if n]
    return Text("  " + "; ".join(notes), style="dim") if notes else None


def _block_entries(
    block: RenderBlock, precision: int, heatmap: bool, max_rows: int, max_cols: int, ellipsis: str, width: int
) -> tuple[Text, Text | None]:
    """The block as ``row column value`` lines, for a terminal too narrow for its table."""
    matrix, row_labels, col_labels = _grid(block)
    scale = _heat_scale(matrix) if heatmap and matrix.size else 0.0
    title = Text(f"{block.key}  shape={tuple(block.shape)}", style="bold")
    if matrix.size == 0:
        return Text("\n").join([title, Text("  (empty)", style="dim")]), None
    if block.matrix.ndim == 0:
        return Text("\n").join([title, Text("  ") + _cell(matrix.item(), precision, heatmap, scale)]), None
    items: list[tuple[Text, Text | None]] = []
    rows, cols = _visible(matrix.shape[0], max_rows), _visible(matrix.shape[1], max_cols)
    for i in rows:
        for j in cols:
            if i is None or j is None:
                if not items or items[-1][1] is not None:
                    items.append((Text(ellipsis), None))
                continue
            label = " ".join(part for part in (row_labels[i], col_labels[j]) if part)
            items.append((Text(label, style=_LABEL), _cell(matrix[i, j].item(), precision, heatmap, scale)))
    key_width = max(k.cell_len for k, _ in items)
    stacked = key_width + 4 + max(v.cell_len for _, v in items if v is not None) > width
    lines = [title]
    for key, value in items:
        if value is None:
            lines.append(Text("  ") + key)
        elif stacked:
            lines += [Text("  ") + key, Text("    ") + value]
        else:
            lines.append(Text("  ") + key + Text(" " * (key_width - key.cell_len + 2)) + value)
    return Text("\n").join(lines), _note([_shown(matrix, rows, cols)], heatmap, matrix, scale)


def _print_header(console: Console, header: RenderHeader) -> None:
    console.print(Text(header.title, style="bold"))
    if header.summary:
        import textwrap

        lines = textwrap.wrap(header.summary, max(console.width - 2, 20), break_on_hyphens=False,
                              break_long_words=False)
        console.print(Text("\n".join("  " + line for line in lines)), soft_wrap=True)
    print_facts(console, list(header.items.items()), indent=2, colon=True)


# Lines a table leaves to the header, the panel's frame, the note under it and the prompt.
_AROUND_TABLE = 10


def rows_for(console: Console, default: int = 20) -> int:
    """How many matrix rows a table shows: as many as the terminal's height leaves room for; `default` elsewhere."""
    if not console.is_terminal or console.is_dumb_terminal:
        return default
    return max(8, console.height - _AROUND_TABLE)


def render_table(
    console: Console,
    header: RenderHeader | None,
    blocks: Sequence[RenderBlock],
    *,
    precision: int = 6,
    heatmap: bool = False,
    max_rows: int = 20,
    max_cols: int = 10,
) -> None:
    """Print the header and one panel per block, long or wide matrices cut in the middle.

    Args:
        console: where to print; colours follow the console (see `make_console`).
        header: title and facts shown first; None for none.
        blocks: the blocks, each shown as a table with its row and column labels.
        precision: significant digits per number.
        heatmap: colour cell backgrounds by |value| / max |value|; exact zeros dim.
        max_rows: most rows shown; the middle ones are replaced by one '…' row.
        max_cols: most columns shown; fewer when the console is too narrow.

    >>> import io
    >>> console = make_console(io.StringIO(), width=40)
    >>> J = np.array([[1.0, 0.5], [0.0, -2.0]])  # shape: outputs + inputs
    >>> render_table(console, None, [RenderBlock("df_dx", J, ["f[0]", "f[1]"], ["x[0]", "x[1]"])])
    >>> print(console.file.getvalue(), end="")
    ╭─ df_dx  shape=(2, 2) ─╮
    │        x[0]   x[1]    │
    │ ──────────────────    │
    │ f[0]      1    0.5    │
    │ f[1]      0     -2    │
    ╰───────────────────────╯
    """
    if too_narrow(console):
        console.file.write(format_plain(blocks, precision=precision, headers=False))
        return
    ellipsis = "..." if console.options.ascii_only else "…"
    if header is not None:
        _print_header(console, header)
    for block in blocks:
        cols = max_cols
        while True:
            panel, note = _block_panel(
                block,
                precision=precision,
                heatmap=heatmap,
                max_rows=max_rows,
                max_cols=cols,
                ellipsis=ellipsis,
            )
            # Squeezed columns would wrap or cut numbers, so show fewer whole ones instead.
            if natural_width(console, panel) <= console.width:
                break
            if cols <= 1:
                # Not even one column fits beside the labels: one entry per line, every number whole.
                panel, note = _block_entries(block, precision, heatmap, max_rows, max_cols, ellipsis, console.width)
                break
            cols -= 1
        console.print(panel, soft_wrap=isinstance(panel, Text))
        if note is not None:
            console.print(note)
