"""Pictures of whole matrices as PNG, SVG or PDF files (matplotlib, Agg only): signed heatmaps and spy plots.

matplotlib is imported inside the functions that draw, and this module only when --plot is given:
a run without --plot never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from jaccli.errors import UsageError
from jaccli.io.atomic import atomic_write

from .pooling import SignedLogScale, pool, pool_coordinates, pool_entries

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
INSTALL = "pip install 'jaccli[plot]'"
# Most cells drawn per axis: beyond this a matrix is pooled (a cell per screen pixel or so).
MAX_CELLS = 400
# Below this many elements an axis labels every one of them.
LABEL_ALL = 16
_DPI = 100
_ZERO = (1.0, 1.0, 1.0, 1.0)
_NONFINITE = (0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class Span:
    """One block's stretch along an axis: the array it belongs to, its length, and the label of its k-th element
    (asked only for the few elements that get a tick, so a long axis builds no list of labels)."""

    name: str
    size: int
    label_of: Callable[[int], str] | None = None

    def label(self, k: int) -> str:
        return self.label_of(k) if self.label_of is not None else f"{self.name}[{k}]"


@dataclass(frozen=True)
class Drawn:
    """Where the matrix landed in a PNG: the pixel box (left, top, right, bottom) of its axes."""

    box: tuple[float, float, float, float]


def plot_format(path: Path | str) -> str:
    """The file format that `path`'s suffix names; an unknown suffix is a usage error."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"--plot {path}: unknown image format {suffix or '(no extension)'!r}; "
                         f"use one of {', '.join(FORMATS)}")
    return FORMATS[suffix]


def require_matplotlib() -> None:
    """Refuse --plot, in one line that says how to install it, when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"--plot needs matplotlib, which is not installed; install it with {INSTALL}") from None


def _figure(rows: int, cols: int) -> tuple[Any, Any]:
    """A figure with the matrix's axes and room for a colour bar or legend on the right.

    Fixed margins, not constrained layout: that would lay the figure out again at every draw (~0.4 s).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    height = float(np.clip(6.5 * rows / max(cols, 1), 4.0, 8.0))
    figure = Figure(figsize=(7.5, height), dpi=_DPI)
    FigureCanvasAgg(figure)  # Agg, never a GUI backend, whatever MPLBACKEND says
    top = 1.0 - 1.3 / height  # title, x label and tick labels above the matrix
    return figure, figure.add_axes((0.2, 0.3 / height, 0.58, top - 0.3 / height))


def _show(ax: Any, rgba: np.ndarray, shape: tuple[int, int]) -> None:
    rows, cols = shape
    ratio = cols / max(rows, 1)
    ax.imshow(rgba, extent=(0, cols, rows, 0), interpolation="nearest",
              aspect="equal" if 0.25 <= ratio <= 4 else "auto")


def _axis(ax: Any, which: str, spans: Sequence[Span], title: str) -> None:
    """Ticks at the first and last element of each span (every element when few), lines between spans."""
    ticks, labels, start = [], [], 0
    total = sum(s.size for s in spans)
    for span in spans:
        if start:
            (ax.axhline if which == "y" else ax.axvline)(start, color="0.2", linewidth=0.9)
        every = total <= LABEL_ALL
        for k in (range(span.size) if every else sorted({0, span.size - 1})):
            if span.size:
                ticks.append(start + k + 0.5)
                labels.append(span.label(k))
        start += span.size
    ranges = ", ".join(f"{s.name} {s.label(0)}..{s.label(s.size - 1)}".strip() if s.size > 1 else s.label(0)
                       for s in spans if s.size)
    if which == "y":
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_ylabel(f"{title}: {ranges}", fontsize=8)
    else:
        ax.set_xticks(ticks, labels, fontsize=7, rotation=90 if total > 6 or len(spans) > 1 else 0)
        ax.xaxis.set_label_position("top")
        ax.xaxis.tick_top()
        ax.set_xlabel(f"{title}: {ranges}", fontsize=8)


def _pooled_note(shape: tuple[int, int], edges: tuple[np.ndarray, np.ndarray], cell: str) -> str:
    """``M x N``, and what a cell shows when it covers several entries."""
    tall, wide = int(np.diff(edges[0]).max(initial=1)), int(np.diff(edges[1]).max(initial=1))
    note = f"{shape[0]} x {shape[1]}"
    if tall > 1 or wide > 1:
        note += "; " + cell.format(tall=tall, wide=wide)
    return note


def _save(figure: Any, path: Path | str) -> None:
    fmt = plot_format(path)
    # Metadata without dates: the same matrix gives the same file.
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[fmt]
    atomic_write(Path(path), lambda fh: figure.savefig(fh, format=fmt, dpi=_DPI, metadata=metadata))


def _drawn(figure: Any, ax: Any) -> Drawn:
    ax.apply_aspect()  # where an equal aspect puts the axes, without drawing the figure
    box = ax.get_position()
    width, height = figure.bbox.width, figure.bbox.height
    return Drawn((box.x0 * width, (1 - box.y1) * height, box.x1 * width, (1 - box.y0) * height))


def heatmap(grid: Sequence[Sequence[np.ndarray]], rows: Sequence[Span], cols: Sequence[Span], path: Path | str,
            *, title: str = "", what: str = "value", row_title: str = "outputs",
            col_title: str = "inputs") -> Drawn:
    """Draw the block matrix `grid` (grid[i][j]: rows[i].size x cols[j].size) as a signed, log-magnitude heatmap.

    Sign by hue (red positive, blue negative), log10 |value| by intensity, structural zeros white,
    NaN and inf black; a colour bar of decades; lines between the blocks of tuple inputs and outputs.
    A matrix larger than MAX_CELLS per axis is pooled by magnitude (see `pool`): no nonzero disappears.
    Written atomically to `path`, in the format its suffix names.
    """
    plot_format(path)
    matrix = np.block([[np.asarray(b, dtype=np.float64).reshape(r.size, c.size) for b, c in zip(line, cols)]
                       for line, r in zip(grid, rows)]) if rows and cols else np.zeros((0, 0))
    shape = (sum(s.size for s in rows), sum(s.size for s in cols))
    matrix = matrix.reshape(shape)
    pooled, row_edges, col_edges = pool(matrix, MAX_CELLS, MAX_CELLS)
    return _signed_picture(pooled, (row_edges, col_edges), shape, rows, cols, path, title=title, what=what,
                           row_title=row_title, col_title=col_title)


def sparse_heatmap(matrix: Any, rows: Sequence[Span], cols: Sequence[Span], path: Path | str, *, title: str = "",
                   what: str = "value", row_title: str = "outputs", col_title: str = "inputs") -> Drawn:
    """Draw a scipy.sparse matrix as `heatmap` draws a dense one, pooled from its stored entries (never an M x N
    array): cells with no stored entry white, each other cell its stored value of largest magnitude."""
    plot_format(path)
    coo = matrix.tocoo()
    shape = (int(coo.shape[0]), int(coo.shape[1]))
    pooled, row_edges, col_edges = pool_entries(np.asarray(coo.row), np.asarray(coo.col), np.asarray(coo.data),
                                                shape, MAX_CELLS, MAX_CELLS)
    return _signed_picture(pooled, (row_edges, col_edges), shape, rows, cols, path, title=title, what=what,
                           row_title=row_title, col_title=col_title)


def _signed_picture(pooled: np.ndarray, edges: tuple[np.ndarray, np.ndarray], shape: tuple[int, int],
                    rows: Sequence[Span], cols: Sequence[Span], path: Path | str, *, title: str, what: str,
                    row_title: str, col_title: str) -> Drawn:
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    row_edges, col_edges = edges
    scale = SignedLogScale.of(pooled)
    signed = scale.signed(pooled) if scale is not None else np.where(np.isfinite(pooled), 0.0, np.nan)
    cmap, norm = colormaps["RdBu_r"], Normalize(-1.0, 1.0)
    rgba = cmap(norm(np.nan_to_num(signed)))
    rgba[signed == 0] = _ZERO
    rgba[np.isnan(signed)] = _NONFINITE

    figure, ax = _figure(*shape)
    _show(ax, rgba, shape)
    _axis(ax, "y", rows, row_title)
    _axis(ax, "x", cols, col_title)
    note = _pooled_note(shape, (row_edges, col_edges), "each cell the largest |value| of up to {tall} x {wide} entries") + "; zero white, NaN/inf black"
    ax.set_title(f"{title}\n{note}" if title else note, fontsize=9)
    bar = figure.colorbar(ScalarMappable(norm, cmap), cax=figure.add_axes((0.86, 0.15, 0.025, 0.6)))
    ticks = [(0.0, "0")]
    if scale is not None:
        for level, decade in scale.decade_ticks():
            ticks += [(level, f"+1e{decade}"), (-level, f"-1e{decade}")]
    bar.set_ticks([t for t, _ in ticks], labels=[label for _, label in ticks], fontsize=7)
    bar.set_label(f"sign by hue, log10 |{what}| by intensity", fontsize=8)
    drawn = _drawn(figure, ax)
    _save(figure, path)
    return drawn


def spy(pattern: Any, path: Path | str, colors: np.ndarray | None = None, title: str = "sparsity pattern",
        *, along: str = "columns") -> Drawn:
    """Draw a sparse pattern (anything with ``tocoo()``, such as a boolean scipy.sparse array) as a spy plot.

    Args:
        pattern: the M x N pattern; its stored entries are the structural nonzeros.
        path: a .png, .svg or .pdf file, written atomically.
        colors: the colour group of each column (`along` "columns", forward sweeps) or row ("rows",
            reverse sweeps); each entry is drawn in its group's colour. None: all black.
        title: the plot's title.

    Large patterns are binned from their coordinates (never an M x N array): a cell is drawn when any
    entry falls in it, in the largest colour group among them.
    """
    from matplotlib import colormaps
    from matplotlib.patches import Patch

    plot_format(path)
    coo = pattern.tocoo()
    shape = (int(coo.shape[0]), int(coo.shape[1]))
    row, col = np.asarray(coo.row), np.asarray(coo.col)
    labels = None
    if colors is not None:
        colors = np.asarray(colors)
        labels = colors[col if along == "columns" else row]
    cells, row_edges, col_edges = pool_coordinates(row, col, shape, MAX_CELLS, MAX_CELLS, labels)
    rgba = np.ones(cells.shape + (4,))
    groups = int(colors.max()) + 1 if colors is not None and colors.size else 0
    palette = colormaps["tab20" if groups > 10 else "tab10"]
    filled = cells > 0
    if labels is None:
        rgba[filled] = (0.0, 0.0, 0.0, 1.0)
    else:
        rgba[filled] = palette((cells[filled] - 1) % palette.N)

    figure, ax = _figure(*shape)
    _show(ax, rgba, shape)
    _axis(ax, "y", [Span("", shape[0], str)], "rows")
    _axis(ax, "x", [Span("", shape[1], str)], "columns")
    note = f"{len(row)} nonzeros; {_pooled_note(shape, (row_edges, col_edges), 'each cell covers up to {tall} x {wide} entries, drawn when any is stored')}"
    if groups:
        note += f"; {groups} {along[:-1]} colours"
        if groups <= palette.N:
            ax.legend(handles=[Patch(color=palette(g), label=f"colour {g}") for g in range(groups)],
                      loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    ax.set_title(f"{title}\n{note}", fontsize=9)
    drawn = _drawn(figure, ax)
    _save(figure, path)
    return drawn
