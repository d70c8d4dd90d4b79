"""Write results atomically to .npy, .npz, .csv, .txt or .json, or stream large ones to .npy."""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from jaccli.errors import ResourceLimitError, UsageError

__all__ = ["META_KEY", "WRITE_FORMATS", "NpyStreamWriter", "format_text", "write_blocks"]

WRITE_FORMATS = (".npy", ".npz", ".csv", ".txt", ".json")
# Name of the .npz member that holds `meta` as JSON text.
META_KEY = "__meta__"


def write_blocks(
    path: str | Path,
    blocks: Mapping[str, np.ndarray],
    meta: Mapping[str, object] | None = None,
    *,
    precision: int | None = None,
) -> None:
    """Write result blocks to a file whose format follows its extension, atomically.

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

    Args:
        path: Target file; its directory must exist.
        blocks: Arrays keyed by block name (e.g. ``{"df_dx": J}``).
        meta: JSON-able metadata (NumPy scalars and arrays are converted).
        precision: Significant digits for .csv/.txt; None writes the shortest exact form.

    Raises:
        UsageError: Unknown extension, missing directory, or too many blocks for the format.
        ValueError, TypeError: A block or a meta value cannot be written in the format (object
            or complex arrays); nothing is written then.

    >>> write_blocks("/tmp/J.npy", {"J": np.eye(2)}); np.load("/tmp/J.npy").shape
    (2, 2)
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in WRITE_FORMATS:
        raise UsageError(
            f"cannot write {target}: unknown format {suffix or '(no extension)'!r}; "
            f"use one of {', '.join(WRITE_FORMATS)}"
        )
    _check_target(target)
    if not blocks:
        raise UsageError(f"nothing to write to {target}: the result has no blocks")
    arrays = {str(key): np.asarray(block) for key, block in blocks.items()}

    write: Callable[[IO[bytes]], None]
    if suffix == ".npz":
        if META_KEY in arrays:
            raise UsageError(
                f"cannot write {target}: the block name {META_KEY!r} is reserved for metadata"
            )
        members = dict(arrays)
        if meta is not None:
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
    _atomic_write(target, write)


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


class NpyStreamWriter:
    """Write a .npy file too large for memory in blocks of rows, committed atomically.

    Rows go into a temporary file next to the target with positioned writes (not a memory map:
    mapped pages would count as the process's memory, all 3 GB of a big result); `commit` renames
    it over the target, `abort` deletes it. Used as a context manager it commits on success and aborts
    on an exception. Disk space for the whole file is checked (and reserved where the file
    system allows) up front.

    >>> with NpyStreamWriter("/tmp/big.npy", (4, 3)) as out:
    ...     out.write(0, np.ones((2, 3))); out.write(2, np.zeros((2, 3)))
    >>> np.load("/tmp/big.npy").sum()
    np.float64(6.0)
    """

    def __init__(self, path: str | Path, shape: Sequence[int], dtype: np.dtype | type = np.float64):
        """Create the temporary file.

        Args:
            path: The .npy file to produce; its directory must exist.
            shape: Full shape of the result; rows are along axis 0.
            dtype: Element type.

        Raises:
            UsageError: Not a .npy path, missing directory, or a 0-D shape.
            ResourceLimitError: The file would not fit on the disk.
        """
        self.path = Path(path)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        if self.path.suffix.lower() != ".npy":
            raise UsageError(f"cannot stream to {self.path}: streamed results are written as .npy")
        if not self.shape:
            raise UsageError(f"cannot stream to {self.path}: a 0-D result has no rows")
        if self.dtype.hasobject:
            raise UsageError(f"cannot stream to {self.path}: dtype {self.dtype} is not numeric")
        _check_target(self.path)
        # Header bytes are at most a few hundred; 4 KiB keeps the estimate safe.
        needed = math.prod(self.shape) * self.dtype.itemsize + 4096
        free = shutil.disk_usage(self.path.parent).free
        if needed > free:
            raise _no_space(self.path, needed, free)

        fd, name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        self._tmp = Path(name)
        # Removes the temporary file if this object is dropped without commit or abort.
        self._cleanup = weakref.finalize(self, _unlink_quietly, self._tmp)
        self._fd: int | None = None
        try:
            with open(self._tmp, "wb") as fh:
                header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
                          "shape": self.shape}
                np.lib.format.write_array_header_2_0(fh, header)
                self._offset = fh.tell()
            self._fd = os.open(self._tmp, os.O_RDWR)
            os.ftruncate(self._fd, self._offset + math.prod(self.shape) * self.dtype.itemsize)
            _reserve(self._tmp, self.path, needed)
        except BaseException:
            self._close()
            self._cleanup()
            raise
        self._row_bytes = math.prod(self.shape[1:]) * self.dtype.itemsize
        self._written = np.zeros(self.shape[0], dtype=bool)

    def write(self, start_row: int, block: np.ndarray) -> None:
        """Store `block` as rows ``[start_row, start_row + len(block))``.

        Args:
            start_row: First row to write.
            block: Array of shape ``(k,) + shape[1:]``, or ``shape[1:]`` for a single row.
        """
        fd = self._open_fd()
        values = np.asarray(block)
        if values.shape == self.shape[1:]:
            values = values[np.newaxis]
        if values.shape[1:] != self.shape[1:]:
            raise ValueError(
                f"block of shape {values.shape} does not fit rows of shape {self.shape[1:]}"
            )
        stop = start_row + values.shape[0]
        if start_row < 0 or stop > self.shape[0]:
            raise ValueError(
                f"rows {start_row}:{stop} are outside the {self.shape[0]} rows of {self.path}"
            )
        data = memoryview(np.ascontiguousarray(values, dtype=self.dtype)).cast("B")
        position = self._offset + start_row * self._row_bytes
        while data:
            done = os.pwrite(fd, data, position)
            data, position = data[done:], position + done
        self._written[start_row:stop] = True

    @property
    def rows_missing(self) -> int:
        """Rows not written yet."""
        return int(self._written.size - np.count_nonzero(self._written))

    def commit(self, allow_partial: bool = False) -> None:
        """Flush to disk and rename the temporary file over the target.

        Args:
            allow_partial: Commit even if some rows were never written (they read as zeros).

        Raises:
            ValueError: Rows are missing and `allow_partial` is False.
        """
        fd = self._open_fd()
        if self.rows_missing and not allow_partial:
            raise ValueError(
                f"{self.rows_missing} of {self.shape[0]} rows of {self.path} were never written"
            )
        os.fsync(fd)
        self._close()
        os.chmod(self._tmp, _new_file_mode(self.path))
        os.replace(self._tmp, self.path)
        self._cleanup.detach()
        _fsync_directory(self.path.parent)

    def abort(self) -> None:
        """Delete the temporary file; the target is left as it was. Safe to call twice."""
        self._close()
        self._cleanup()

    def __enter__(self) -> NpyStreamWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()
            return
        try:
            self.commit()
        except BaseException:
            self.abort()
            raise

    def _open_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"the stream to {self.path} is already committed or aborted")
        return self._fd

    def _close(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


# ---------------------------------------------------------------- helpers


def _check_target(target: Path) -> None:
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a directory")
    if not target.parent.is_dir():
        raise UsageError(f"cannot write {target}: directory {target.parent} does not exist")


def _single_block(arrays: dict[str, np.ndarray], target: Path, suffix: str) -> np.ndarray:
    if len(arrays) == 1:
        return next(iter(arrays.values()))
    names = ", ".join(arrays)
    hint = "use .npz" if suffix == ".npy" else "use .npz or .json"
    raise UsageError(
        f"{target} holds {len(arrays)} blocks ({names}); a {suffix} file holds one array: {hint}"
    )


def _atomic_write(target: Path, write: Callable[[IO[bytes]], None]) -> None:
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _new_file_mode(target))
        os.replace(tmp, target)
    except BaseException:
        # KeyboardInterrupt included: a stray temp file is the only trace a failure may leave.
        _unlink_quietly(tmp)
        raise
    _fsync_directory(target.parent)


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


@functools.cache
def _umask() -> int:
    # There is no way to read the umask without setting it; done once, early, to keep it brief.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _new_file_mode(target: Path) -> int:
    """Mode for the result: the replaced file's, else what open() gives (mkstemp's is 0600)."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform or file system allows it.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _reserve(tmp: Path, target: Path, size: int) -> None:
    """Allocate the file's blocks now, so a full disk fails here and not as a crash mid-write."""
    if not hasattr(os, "posix_fallocate"):
        return
    with open(tmp, "rb+") as fh:
        try:
            os.posix_fallocate(fh.fileno(), 0, os.fstat(fh.fileno()).st_size)
        except OSError as exc:
            # Any other error means this file system cannot reserve space; writing still works.
            if exc.errno == errno.ENOSPC:
                raise _no_space(target, size, shutil.disk_usage(target.parent).free) from exc


def _no_space(target: Path, needed: int, free: int) -> ResourceLimitError:
    return ResourceLimitError(
        f"writing {target} needs {_human_bytes(needed)} but only {_human_bytes(free)} is free "
        f"in {target.parent}; free some space or write elsewhere"
    )


def _human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    exponent = min((n.bit_length() - 1) // 10, 4)
    return f"{n / 1024**exponent:.1f} {'KMGT'[exponent - 1]}B"
