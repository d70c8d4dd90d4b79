"""Derivative blocks to show, and plain lines of numbers for text and CSV output (no rich needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RenderBlock", "RenderHeader", "format_number", "format_plain", "shape_text"]


@dataclass
class RenderBlock:
    """One derivative block to show: rows are output elements, columns input elements.

    A 0-D matrix is one value; a 1-D matrix is shown as a column whose labels come from
    `row_labels`, or from `col_labels` when only those are given. `shape` is the block's full
    shape for the header and defaults to the matrix's.
    """

    key: str
    matrix: np.ndarray
    row_labels: Sequence[str] | None = None
    col_labels: Sequence[str] | None = None
    shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        self.matrix = np.asarray(self.matrix)
        if self.matrix.ndim > 2:
            raise ValueError(f"block {self.key}: matrix must be 0-D, 1-D or 2-D, not {self.matrix.shape}")
        if self.shape is None:
            self.shape = tuple(self.matrix.shape)


@dataclass
class RenderHeader:
    """What was computed: a title line, a summary line under it, and key: value facts (--stats' details)."""

    title: str
    items: Mapping[str, str]
    summary: str = ""


def format_number(value: Any, precision: int) -> str:
    """`value` to `precision` significant digits, as tables and plain text both show it.

    A negative zero (0 times a negative number, common in derivatives) shows as 0: it equals 0,
    and a block of "-0" entries reads as something it is not. The .npy and JSON outputs keep its bits.
    """
    if isinstance(value, complex):
        return format(value, f".{precision}g")
    return "%.*g" % (precision, value + 0.0)  # -0.0 + 0.0 is 0.0; every other value is unchanged


def shape_text(shape: Sequence[int] | None) -> str:
    """A shape without commas, for header lines that CSV readers see: ``3x3``, ``5`` (1-D), ``()`` (0-D).

    >>> shape_text((3, 2, 2)), shape_text((5,)), shape_text(())
    ('3x2x2', '5', '()')
    """
    return "x".join(str(n) for n in shape) if shape else "()"


def _rows_of(matrix: np.ndarray) -> np.ndarray:
    """0-D -> one row of one value; 1-D -> one value per row, as numpy.savetxt writes vectors."""
    if matrix.ndim == 0:
        return matrix.reshape(1, 1)
    if matrix.ndim == 1:
        return matrix.reshape(-1, 1)
    return matrix


# ---------------------------------------------------------------- plain text


def format_plain(
    blocks: Sequence[RenderBlock], *, precision: int | None = None, delimiter: str = " ", headers: bool = True
) -> str:
    """Blocks as plain lines of numbers, for text and CSV output.

    Args:
        blocks: the blocks to write, in order.
        precision: significant digits (``%.{precision}g``); None (the default, for machines) writes each
            number's shortest text that reads back to the same float, as the .csv and .txt files do.
        delimiter: between numbers on a line, ``" "`` for text or ``","`` for CSV.
        headers: write ``# key shape=RxC`` before each block; always done for several blocks, so
            that one block without headers gives pure data lines.

    Returns:
        The text, each line ending in a newline.

    >>> print(format_plain([RenderBlock("df_dx", np.array([[0.1, 0.0], [1/3, 1.0]]))], delimiter=","), end="")
    # df_dx shape=2x2
    0.1,0.0
    0.3333333333333333,1.0
    """
    from jaccli.io.writers import format_text

    parts = []
    for block in blocks:
        if headers or len(blocks) > 1:
            parts.append(f"# {block.key} shape={shape_text(block.shape)}\n")
        if precision is None and block.matrix.dtype.kind in "biuf":
            parts.append(format_text(_rows_of(block.matrix), None, delimiter))
            continue
        for row in _rows_of(block.matrix):
            parts.append(delimiter.join(format_number(value, precision or 6) for value in row.tolist()) + "\n")
    return "".join(parts)
