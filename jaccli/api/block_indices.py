"""A NumPy index of a lazy block read as the rows and columns it touches (api/lazy.py): whether it takes the
block whole, whether it is basic (slices and integers, the axes kept in order), its parts on the output's and
the input's axes, and the rows (columns) a part selects."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def is_full_index(idx: Any) -> bool:
    if not isinstance(idx, tuple):
        idx = (idx,)
    return all(i is Ellipsis or (isinstance(i, slice) and i == slice(None)) for i in idx)


def is_basic(idx: tuple) -> bool:
    return all(i is Ellipsis or isinstance(i, slice) or (isinstance(i, (int, np.integer))
                                                        and not isinstance(i, (bool, np.bool_)))
               for i in idx)


def split_basic(idx: tuple, ndims: Sequence[int]) -> list[tuple] | None:
    """Split a basic index on the concatenated axes of several parts into one index per part."""
    n_total = sum(ndims)
    used = sum(1 for i in idx if i is not Ellipsis)
    if used > n_total:
        raise IndexError(f"too many indices for array: array is {n_total}-dimensional, but {used} were indexed")
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    full: list = []
    for i in idx:
        if i is Ellipsis:
            full.extend([slice(None)] * (n_total - used))
        else:
            full.append(i)
    full.extend([slice(None)] * (n_total - len(full)))
    parts, start = [], 0
    for nd in ndims:
        parts.append(tuple(full[start:start + nd]))
        start += nd
    return parts


def selected(n: int, shape: tuple, part: tuple) -> np.ndarray:
    """The flat positions that the basic index `part` selects of an array of `shape` (n entries): from
    the slice alone where it is one slice of a vector, not from the whole range (J[:10] of a
    90000-output block: 10 positions, not 90000 made and sliced on every call)."""
    if len(shape) == 1 and len(part) == 1 and type(part[0]) is slice:
        return np.arange(*part[0].indices(n))
    return np.arange(n).reshape(shape)[part].reshape(-1)
