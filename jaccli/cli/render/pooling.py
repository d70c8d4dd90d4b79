"""Max-magnitude pooling of large matrices and the signed log scale that their pictures (images, terminal) share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Intensity of the smallest magnitude shown: it must stay distinguishable from a structural zero (white).
FLOOR = 0.3
# Magnitudes more than this many decades below the largest share the floor's intensity.
DECADES = 12
MIN_DECADES = 3


def bin_edges(count: int, bins: int) -> np.ndarray:
    """`bins` + 1 edges splitting range(count) into nearly equal, non-empty runs (fewer bins when count is smaller)."""
    bins = max(1, min(bins, count))
    return (np.arange(bins + 1) * count) // bins


def _signed_reduce(values: np.ndarray, starts: np.ndarray, axis: int) -> np.ndarray:
    """Per run starting at `starts` along `axis`: its entry of largest magnitude, with its sign."""
    high = np.maximum.reduceat(values, starts, axis=axis)
    low = np.minimum.reduceat(values, starts, axis=axis)
    with np.errstate(invalid="ignore"):
        return np.where(-low > high, low, high)


def pool(matrix: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`matrix` pooled to at most rows x cols cells, each the entry of largest magnitude of its run (sign kept).

    A cell is zero only when every entry it covers is zero, so no nonzero disappears; NaN spreads to its cell.

    Returns:
        (pooled, row_edges, col_edges): cell (i, j) covers rows row_edges[i]:row_edges[i+1] and
        columns col_edges[j]:col_edges[j+1].

    >>> pooled, r, c = pool(np.array([[0., 0., 3.], [-5., 0., 0.]]), 1, 2)
    >>> pooled.tolist(), r.tolist(), c.tolist()
    ([[-5.0, 3.0]], [0, 2], [0, 1, 3])
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    row_edges, col_edges = bin_edges(matrix.shape[0], rows), bin_edges(matrix.shape[1], cols)
    if matrix.size == 0:
        return matrix, row_edges, col_edges
    pooled = matrix
    if len(row_edges) - 1 < matrix.shape[0]:
        pooled = _signed_reduce(pooled, row_edges[:-1], axis=0)
    if len(col_edges) - 1 < matrix.shape[1]:
        pooled = _signed_reduce(pooled, col_edges[:-1], axis=1)
    return pooled, row_edges, col_edges


def pool_coordinates(row: np.ndarray, col: np.ndarray, shape: tuple[int, int], rows: int, cols: int,
                     labels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sparse pattern's COO coordinates binned into at most rows x cols cells, never densely at M x N.

    Returns:
        (cells, row_edges, col_edges): `cells` is an int array, 0 where no entry falls and otherwise
        1 + the largest of `labels` (e.g. colour groups) of the entries there (1 without labels).
    """
    row_edges, col_edges = bin_edges(shape[0], rows), bin_edges(shape[1], cols)
    cells = np.zeros((len(row_edges) - 1, len(col_edges) - 1), dtype=np.int64)
    if len(row):
        # searchsorted on the edges maps an index to its run, whatever the rounding of the edges.
        i = np.searchsorted(row_edges, row, side="right") - 1
        j = np.searchsorted(col_edges, col, side="right") - 1
        values = np.ones(len(row), dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64) + 1
        np.maximum.at(cells, (i, j), values)
    return cells, row_edges, col_edges


def pool_entries(row: np.ndarray, col: np.ndarray, data: np.ndarray, shape: tuple[int, int], rows: int,
                 cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sparse matrix's COO entries pooled like `pool` (each cell the stored value of largest magnitude, sign
    kept, NaN first), never densely at M x N: a cell with no stored entry is 0.

    >>> pooled, r, c = pool_entries(np.array([0, 1]), np.array([2, 0]), np.array([3.0, -5.0]), (2, 3), 1, 2)
    >>> pooled.tolist()
    [[-5.0, 3.0]]
    """
    row_edges, col_edges = bin_edges(shape[0], rows), bin_edges(shape[1], cols)
    pooled = np.zeros((len(row_edges) - 1, len(col_edges) - 1))
    if len(row):
        i = np.searchsorted(row_edges, row, side="right") - 1
        j = np.searchsorted(col_edges, col, side="right") - 1
        data = np.asarray(data, dtype=np.float64)
        weight = np.where(np.isnan(data), np.inf, np.abs(data))
        # per cell, the entry that sorts last by magnitude (ties: the later entry) is the one kept
        order = np.lexsort((weight, i * pooled.shape[1] + j))
        cell = (i * pooled.shape[1] + j)[order]
        last = np.append(cell[1:] != cell[:-1], True)
        pooled.reshape(-1)[cell[last]] = data[order][last]
    return pooled, row_edges, col_edges


@dataclass(frozen=True)
class SignedLogScale:
    """log10 |value| from `low` to `high` (decades) mapped to an intensity in [FLOOR, 1], signed by the value."""

    low: float
    high: float

    @classmethod
    def of(cls, values: np.ndarray) -> "SignedLogScale | None":
        """The scale spanning the finite nonzero magnitudes of `values`, None when there are none."""
        magnitude = np.abs(np.asarray(values, dtype=np.float64))
        shown = magnitude[np.isfinite(magnitude) & (magnitude > 0)]
        if not shown.size:
            return None
        high = float(np.log10(shown.max()))
        # At least MIN_DECADES: magnitudes within a factor of two look alike, not faint against strong.
        return cls(min(max(float(np.log10(shown.min())), high - DECADES), high - MIN_DECADES), high)

    def signed(self, values: np.ndarray) -> np.ndarray:
        """Per entry: 0 for zero, else sign * intensity in [FLOOR, 1]; NaN for NaN and inf."""
        values = np.asarray(values, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            decades = np.log10(np.abs(values))
            span = self.high - self.low
            t = np.clip((decades - self.low) / span, 0.0, 1.0) if span > 0 else np.ones_like(values)
            out = np.sign(values) * (FLOOR + (1.0 - FLOOR) * t)
        out[values == 0] = 0.0
        out[~np.isfinite(values)] = np.nan
        return out

    def decade_ticks(self) -> list[tuple[float, int]]:
        """(intensity, decade) for every whole decade from low to high (the ends when none lies between)."""
        first, last = int(np.ceil(self.low - 1e-9)), int(np.floor(self.high + 1e-9))
        decades = list(range(first, last + 1)) or [round(self.high)]
        step = max(1, len(decades) // 5)
        return [(float(self.signed(np.array([10.0 ** d]))[0]), d) for d in decades[::step]]
