"""--heatmap on a terminal: the whole matrix pooled to the terminal's size in block characters, with its legend."""

from __future__ import annotations

import numpy as np
from rich.color import Color
from rich.console import Console
from rich.style import Style
from rich.text import Text

from .plain import RenderBlock, format_number
from .pooling import FLOOR, SignedLogScale, pool

# From faint to strong, for positive (red) and negative (blue) entries: the ends of the image's RdBu map.
_POSITIVE = ((253, 219, 199), (103, 0, 31))
_NEGATIVE = ((209, 229, 240), (5, 48, 97))
_NONFINITE = Style(color="yellow", bold=True)
# Lines kept free on a terminal for the title, the legend and the prompt.
_MARGIN = 6


def _rgb(level: float) -> Color:
    faint, strong = _POSITIVE if level > 0 else _NEGATIVE
    t = (abs(level) - FLOOR) / (1.0 - FLOOR)
    return Color.from_rgb(*(round(a + (b - a) * t) for a, b in zip(faint, strong)))


def _cell_styles(levels: np.ndarray) -> list[list[Color | None | str]]:
    """Per pooled cell: its colour, None for zero, "nan" for NaN and inf."""
    return [[("nan" if np.isnan(v) else None if v == 0 else _rgb(float(v))) for v in row] for row in levels]


def _half_blocks(styles: list[list[Color | None | str]]) -> list[Text]:
    """Two matrix rows per line: the upper half block coloured by the top row, its background by the bottom one."""
    lines = []
    for top_row, bottom_row in zip(styles[::2], styles[1::2] + [[None] * len(styles[0])]):
        line = Text()
        for top, bottom in zip(top_row, bottom_row):
            if top == "nan" or bottom == "nan":
                line.append("!", _NONFINITE)
            elif top is None and bottom is None:
                line.append(" ")
            elif top is None:
                line.append("▄", Style(color=bottom))
            else:
                line.append("▀", Style(color=top, bgcolor=bottom))
        lines.append(line)
    return lines


def _glyphs(levels: np.ndarray) -> list[Text]:
    """Without colours: one character per cell, its sign."""
    chars = np.where(np.isnan(levels), "!", np.where(levels > 0, "+", np.where(levels < 0, "-", ".")))
    return [Text("".join(row)) for row in chars]


def _legend(scale: SignedLogScale | None, coloured: bool, cell: tuple[int, int]) -> list[Text]:
    pooled = f"each cell: the largest |value| of up to {cell[0]} x {cell[1]} entries" \
        if cell != (1, 1) else "each cell: one entry"
    if not coloured:
        return [Text(f"  sign: + positive, - negative, . zero, ! NaN/inf; {pooled}", style="dim")]
    line = Text("  scale: ")
    if scale is None:
        line.append("all zero")
    else:
        ramp = np.linspace(FLOOR, 1.0, 8)
        line.append(f"{format_number(10.0 ** scale.low, 2)} ")
        for level in ramp:
            line.append("█", Style(color=_rgb(float(level))))
        line.append(f" {format_number(10.0 ** scale.high, 3)} (log10 |value|)")
    sign = Text("  sign: ")
    sign.append("█", Style(color=_rgb(1.0)))
    sign.append(" positive  ")
    sign.append("█", Style(color=_rgb(-1.0)))
    sign.append(" negative  blank: zero  ")
    sign.append("!", _NONFINITE)
    sign.append(f" NaN/inf; {pooled}")
    return [line, sign]


def render_heatmap(console: Console, block: RenderBlock) -> None:
    """Print `block`'s whole matrix pooled to the console's size (see `pool`: no nonzero disappears), with a legend.

    Colours when the console has them (red positive, blue negative, stronger for larger log10 |value|);
    otherwise one sign character per cell.
    """
    matrix = np.asarray(block.matrix)
    if matrix.ndim < 2:
        matrix = matrix.reshape(-1, 1)
    if matrix.size == 0:
        return
    if np.iscomplexobj(matrix):
        matrix = np.abs(matrix)
    coloured = console.color_system is not None
    width = max(8, console.width - 2)
    lines = max(4, console.size.height - _MARGIN)
    pooled, row_edges, col_edges = pool(matrix, lines * (2 if coloured else 1), width)
    scale = SignedLogScale.of(pooled)
    levels = scale.signed(pooled) if scale is not None else np.where(np.isfinite(pooled), 0.0, np.nan)
    body = _half_blocks(_cell_styles(levels)) if coloured else _glyphs(levels)
    rows, cols = matrix.shape
    console.print(Text(f"{block.key}: the whole {rows} x {cols} matrix, rows down, columns across", style="bold"))
    for line in body:
        console.print(Text("  ") + line, no_wrap=True, crop=True)
    cell = (int(np.diff(row_edges).max()), int(np.diff(col_edges).max()))
    for line in _legend(scale, coloured, cell):
        console.print(line)
