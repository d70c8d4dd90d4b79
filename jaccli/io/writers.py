"""Write results atomically to .npy, .npz, .csv, .txt, .json or .zarr (jaccli.io.zarr_store); large .npy results
stream via jaccli.io.npy_stream."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO

import numpy as np

from .atomic import atomic_write, check_target
from jaccli.errors import UsageError
# NpyStreamWriter lives in jaccli.io.npy_stream; re-exported so existing imports keep working.
from .npy_stream import NpyStreamWriter

__all__ = ["META_KEY", "SPARSE_FORMATS", "WRITE_FORMATS", "NpyStreamWriter", "coo_document", "format_text",
           "write_blocks", "write_sparse"]

WRITE_FORMATS = (".npy", ".npz", ".csv", ".txt", ".json", ".zarr")
# A sparse result: scipy.sparse.save_npz's layout, Matrix Market, COO arrays in JSON (.npy: dense, by the caller).
SPARSE_FORMATS = (".npz", ".mtx", ".json")
# Name of the .npz member that holds `meta` as JSON text.
META_KEY = "__meta__"


def write_blocks(
    path: str | Path,
    blocks: Mapping[str, np.ndarray],
    meta: Mapping[str, object] | None = None,
    *,
    precision: int | None = None,
    suffix: str | None = None,
) -> None:
    """Write result blocks to a file whose format follows its extension (or `suffix`), atomically.

    The data goes to a temporary file in the target's directory, is flushed to disk and then
    renamed over the target, so on any failure or interrupt the target is left as it was.

    - ``.npy``: exactly one block; ``meta`` is not stored.
    - ``.npz``: every block under its key, plus ``meta`` as JSON text in a 0-D unicode array
      under ``"__meta__"``; it loads with ``np.load(allow_pickle=False)`` and
      ``json.loads(str(npz["__meta__"]))``.
    - ``.csv`` / ``.txt``: exactly one block of ndim <= 2 (0-D and 1-D give one row), numbers
      separated by commas or spaces; ``meta`` is not stored.
    - ``.json``: ``{"blocks": {key: {"shape", "dtype", "data"}}, "meta": {...}}`` with NaN and
      infinities written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
    - ``.zarr`` (jaccli[zarr]): a zarr group, an array per block, ``meta`` in its attribute ``jaccli``;
      see jaccli.io.zarr_store.

    Args:
        path: Target file; its directory must exist.
        blocks: Arrays keyed by block name (e.g. ``{"df_dx": J}``).
        meta: JSON-able metadata (NumPy scalars and arrays are converted).
        precision: Significant digits for .csv/.txt; None writes the shortest exact form.
        suffix: The format as an extension (".csv"), for a path whose name does not say it
            (``/dev/stdout``, a named pipe); None: the path's own extension.

    Raises:
        UsageError: Unknown extension, missing directory, or too many blocks for the format.
        ValueError, TypeError: A block or a meta value cannot be written in the format (object
            or complex arrays); nothing is written then.

    >>> write_blocks("/tmp/J.npy", {"J": np.eye(2)}); np.load("/tmp/J.npy").shape
    (2, 2)
    """
    target = Path(path)
    suffix = target.suffix.lower() if suffix is None else suffix
    if suffix not in WRITE_FORMATS:
        raise UsageError(
            f"cannot write {target}: unknown format {suffix or '(no extension)'!r}; "
            f"use one of {', '.join(WRITE_FORMATS)}"
        )
    if not blocks:
        raise UsageError(f"nothing to write to {target}: the result has no blocks")
    arrays = {str(key): np.asarray(block) for key, block in blocks.items()}
    if suffix == ".zarr":
        from .zarr_store import write_zarr

        write_zarr(target, arrays, None if meta is None else _jsonable(meta))
        return
    check_target(target)

    write: Callable[[IO[bytes]], None]
    if suffix == ".npz":
        if META_KEY in arrays:
            raise UsageError(
                f"cannot write {target}: the block name {META_KEY!r} is reserved for metadata"
            )
        members = dict(arrays)
        if meta is not None:
            import json

            members[META_KEY] = np.array(json.dumps(_jsonable(meta), allow_nan=False))
        write = functools.partial(_write_npz, members=members)
    elif suffix == ".json":
        document = {
            "blocks": {
                key: {"shape": list(a.shape), "dtype": str(a.dtype), "data": _jsonable(a)}
                for key, a in arrays.items()
            },
            "meta": _jsonable(meta) if meta is not None else {},
        }
        import json

        text = json.dumps(document, allow_nan=False) + "\n"
        write = functools.partial(_write_bytes, data=text.encode("utf-8"))
    else:
        array = _single_block(arrays, target, suffix)
        if suffix == ".npy":
            write = functools.partial(_write_npy, array=array)
        else:
            if array.ndim > 2:
                raise UsageError(
                    f"cannot write {target}: block of shape {array.shape} has {array.ndim} axes; "
                    f"a {suffix} file holds a matrix, so pass its 2-D [M, N] form"
                )
            delimiter = "," if suffix == ".csv" else " "
            text = format_text(array, precision, delimiter)
            write = functools.partial(_write_bytes, data=text.encode("utf-8"))
    atomic_write(target, write)


def format_text(array: np.ndarray, precision: int | None = None, delimiter: str = " ") -> str:
    """Format a 0-D, 1-D or 2-D array as plain lines of numbers, one line per row.

    Args:
        array: The numbers; 0-D and 1-D arrays give a single line.
        precision: Significant digits (``%.{precision}g``); None gives the shortest text that
            reads back to the same float.
        delimiter: Put between numbers on a line.

    Returns:
        The text, each line ending in a newline; NaN and infinities as nan, inf, -inf.

    >>> print(format_text(np.array([[1.0, 0.5], [np.nan, -2.0]]), 3, ","), end="")
    1,0.5
    nan,-2
    """
    values = np.asarray(array)
    if values.ndim > 2:
        raise ValueError(f"format_text takes at most 2-D arrays, got shape {values.shape}")
    if values.dtype.kind not in "biuf":
        raise ValueError(f"format_text writes real numbers, not {values.dtype} values")
    if precision is not None and precision < 1:
        raise ValueError(f"precision must be at least 1, got {precision}")
    if values.dtype == np.bool_:
        values = values.astype(np.int8)  # 1/0 reads back as numbers, True/False does not
    rows = values.reshape(1, -1) if values.ndim < 2 else values
    if precision is None:
        lines = (delimiter.join(map(repr, row)) for row in rows.tolist())
    else:
        row_format = delimiter.join([f"%.{precision}g"] * rows.shape[1])
        lines = (row_format % tuple(row) for row in rows.tolist())
    return "".join(line + "\n" for line in lines)


def coo_document(matrix: object) -> dict[str, object]:
    """A scipy.sparse matrix as COO arrays: shape, nnz, row, col, data (floats read back exactly)."""
    coo = matrix.tocoo()  # type: ignore[attr-defined]
    order = np.lexsort((coo.col, coo.row))
    return {"shape": list(coo.shape), "nnz": int(coo.nnz), "row": coo.row[order].tolist(),
            "col": coo.col[order].tolist(), "data": _jsonable(np.asarray(coo.data)[order])}


def write_sparse(path: str | Path, matrix: object, meta: Mapping[str, object] | None = None, *,
                 symmetric: bool = False) -> None:
    """Write a scipy.sparse matrix atomically: ``.npz`` in the layout of ``scipy.sparse.save_npz``
    (``scipy.sparse.load_npz`` reads it), ``.mtx`` Matrix Market (``symmetric``: the lower triangle
    only, as the format's symmetric kind, with ``meta["comment"]`` as its comment lines), or ``.json``
    ``{"shape", "nnz", "row", "col", "data", "meta"}``.

    >>> import scipy.sparse as sp
    >>> write_sparse("/tmp/J.npz", sp.csr_array(np.eye(2))); sp.load_npz("/tmp/J.npz").nnz
    2
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in SPARSE_FORMATS:
        raise UsageError(f"cannot write a sparse result to {target}: use one of {', '.join(SPARSE_FORMATS)}")
    check_target(target)
    write: Callable[[IO[bytes]], None]
    if suffix == ".npz":
        import scipy.sparse as sp

        # uncompressed: zlib took 1.6 s of the 2.5 s of a 2-D Bratu Jacobian at n = 10^6 (5e6 entries,
        # 0.14 s uncompressed); scipy.sparse.load_npz reads either
        write = functools.partial(sp.save_npz, matrix=sp.csr_array(matrix), compressed=False)
    elif suffix == ".mtx":
        import scipy.io as sio

        comment = str((meta or {}).get("comment", ""))

        def write(fh: IO[bytes]) -> None:
            sio.mmwrite(fh, matrix, comment=comment, symmetry="symmetric" if symmetric else "general")
    else:
        import json

        shown = {k: v for k, v in (meta or {}).items() if k != "comment"}
        document = {**coo_document(matrix), "meta": _jsonable(shown)}
        write = functools.partial(_write_bytes, data=(json.dumps(document, allow_nan=False) + "\n").encode("utf-8"))
    atomic_write(target, write)


# ---------------------------------------------------------------- helpers


def _single_block(arrays: dict[str, np.ndarray], target: Path, suffix: str) -> np.ndarray:
    if len(arrays) == 1:
        return next(iter(arrays.values()))
    names = ", ".join(arrays)
    hint = "use .npz" if suffix == ".npy" else "use .npz or .json"
    raise UsageError(
        f"{target} holds {len(arrays)} blocks ({names}); a {suffix} file holds one array: {hint}"
    )


def _write_bytes(fh: IO[bytes], data: bytes) -> None:
    fh.write(data)


def _write_npy(fh: IO[bytes], array: np.ndarray) -> None:
    # Through the file object: np.save on a name would append ".npy" to the temp name.
    np.lib.format.write_array(fh, array, allow_pickle=False)


def _write_npz(fh: IO[bytes], members: dict[str, np.ndarray]) -> None:
    # Built by hand rather than np.savez: keys such as "file" would clash with its arguments,
    # and savez pickles object arrays, which jaccli could not read back.
    import zipfile  # only .npz outputs need it

    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for key, array in members.items():
            with archive.open(f"{key}.npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def _jsonable(value: object) -> object:
    """Plain JSON types, with non-finite floats as "nan", "inf", "-inf" so the JSON stays valid."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "b":
            return value.tolist()
        if value.dtype.kind in "iu" or (value.dtype.kind == "f" and np.isfinite(value).all()):
            return value.tolist()  # the common case skips the per-element walk
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (Path, np.dtype)):
        return str(value)
    raise TypeError(f"cannot write a {type(value).__name__} value as JSON")
