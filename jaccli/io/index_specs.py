"""Parse --rows/--cols index specs (i, a:b:c, i,j,k, ... or @file) into indices."""

from __future__ import annotations

import numpy as np

from .arrays import load_array
from jaccli.errors import UsageError
from jaccli.plurals import counted, verb

__all__ = ["parse_index_spec"]


def parse_index_spec(spec: str, size: int, what: str = "rows") -> np.ndarray:
    """Turn a ``--rows``/``--cols`` spec into indices into ``range(size)``.

    Accepted forms: ``i``; ``a:b`` or ``a:b:c`` with NumPy slice semantics (parts may be empty,
    negative, clipped; a step may be negative); ``...`` for everything; comma-separated lists of
    any of these (``0,5,-1`` or ``0:3,7``); ``@file`` holding a 1-D integer array of indices or a
    boolean mask of length ``size``. Single indices must be in ``[-size, size)``. Order and
    duplicates are kept, and an empty selection is returned as an empty array.

    Args:
        spec: The index spec.
        size: Length of the axis being indexed.
        what: The option's noun, used in messages (``"rows"`` gives ``--rows``).

    Returns:
        A 1-D int64 array of non-negative indices.

    Raises:
        UsageError: Bad syntax, zero step, out-of-range index, or a bad index file.

    >>> parse_index_spec("-1,0:4:2", 5)
    array([4, 0, 2])
    """
    text = spec.strip()
    prefix = f"--{what} {spec}"
    if not text:
        raise UsageError(f"{prefix}: empty index; use i, a:b, a:b:c, i,j,k or @file.npy")
    if text.startswith("@"):
        return _index_file(text[1:].strip(), size, what, prefix)
    parts = [_index_item(item.strip(), size, what, prefix) for item in text.split(",")]
    return np.concatenate(parts).astype(np.int64, copy=False)


def _parse_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _index_item(item: str, size: int, what: str, prefix: str) -> np.ndarray:
    if item == "...":
        return np.arange(size, dtype=np.int64)
    if ":" in item:
        pieces = item.split(":")
        bounds = [None if not p.strip() else _parse_int(p) for p in pieces]
        if len(pieces) > 3 or any(b is None and p.strip() for b, p in zip(bounds, pieces)):
            raise UsageError(f"{prefix}: bad slice {item!r}; use a:b or a:b:c with integers")
        if len(bounds) == 3 and bounds[2] == 0:
            raise UsageError(f"{prefix}: slice step cannot be zero")
        picked = range(size)[slice(*bounds)]
        return np.arange(picked.start, picked.stop, picked.step, dtype=np.int64)
    index = _parse_int(item)
    if index is None:
        raise UsageError(
            f"{prefix}: bad index {item!r}; use i, a:b, a:b:c, i,j,k or @file.npy"
        )
    return np.array([_in_range(index, size, what, prefix)], dtype=np.int64)


def _in_range(index: int, size: int, what: str, prefix: str) -> int:
    if not -size <= index < size:
        raise UsageError(f"{prefix}: index {index} is out of range for {counted(size, what[:-1])}")
    return index % size


def _index_file(source: str, size: int, what: str, prefix: str) -> np.ndarray:
    if not source:
        raise UsageError(f"{prefix}: give a file after '@', e.g. @{what}.npy")
    loaded = load_array(source)
    if isinstance(loaded, dict):
        raise UsageError(f"{prefix}: an index file holds one array; use .npy, not .npz")
    values = np.atleast_1d(loaded)
    if values.ndim != 1:
        raise UsageError(f"{prefix}: index file {source} holds a {values.ndim}-D array; it must be 1-D")
    if values.dtype == np.bool_:
        if len(values) != size:
            raise UsageError(
                f"{prefix}: the mask in {source} has {counted(len(values), 'entry')} but there "
                f"{verb(size, 'are', 'is')} {counted(size, what[:-1])}"
            )
        return np.flatnonzero(values).astype(np.int64)
    if values.dtype.kind == "f":
        # Text files always load as float64; whole numbers there are meant as indices.
        if not np.all(np.isfinite(values) & (values == np.round(values))):
            raise UsageError(f"{prefix}: index file {source} holds non-integer values")
        values = values.astype(np.int64)
    out_of_range = (values < -size) | (values >= size)
    if np.any(out_of_range):
        bad = int(values[np.argmax(out_of_range)])
        raise UsageError(f"{prefix}: index {bad} in {source} is out of range for {size} {what}")
    return (values % size if size else values).astype(np.int64)
