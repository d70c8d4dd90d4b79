"""Stream a .npy result too large for memory to disk in blocks of rows, committed atomically."""

from __future__ import annotations

import errno
import io
import math
import os
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .atomic import (check_target, fsync_directory, open_temporary, put_in_place, record_written, uninterrupted,
                     unlink_quietly)
from .devices import DeviceStream, open_in_place, written_in_place
from jaccli.engine import Phase
from jaccli.errors import ResourceLimitError, UsageError
from jaccli.plurals import counted, verb

__all__ = ["NpyStreamWriter", "human_bytes"]


class NpyStreamWriter:
    """Write a .npy file too large for memory in blocks of rows, committed atomically.

    Rows go into a temporary file next to the target with positioned writes (not a memory map:
    mapped pages would count as the process's memory, all 3 GB of a big result); `commit` renames
    it over the target, `abort` deletes it. Used as a context manager it commits on success and aborts
    on an exception. Disk space for the whole file is checked (and reserved where the file
    system allows) up front. A character device or a FIFO is written in place instead, from start
    to end (rows in order; the result of a batched stream, whose rows come per sample, is refused).

    >>> with NpyStreamWriter("/tmp/big.npy", (4, 3)) as out:
    ...     out.write(0, np.ones((2, 3))); out.write(2, np.zeros((2, 3)))
    >>> np.load("/tmp/big.npy").sum()
    np.float64(6.0)
    """

    def __init__(self, path: str | Path, shape: Sequence[int], dtype: np.dtype | type = np.float64,
                 row_axis: int = 0, npy: bool = False):
        """Create the temporary file.

        Args:
            path: The .npy file to produce; its directory must exist.
            shape: Full shape of the result.
            dtype: Element type.
            row_axis: 0, or 1 for blocks of rows of every entry along axis 0 at once (rows of
                per-sample Jacobians, ``(B, k, ...)``).
            npy: written as .npy whatever the path's extension (``/dev/stdout``, a named pipe).

        Raises:
            UsageError: Not a .npy path, missing directory, or a 0-D shape.
            ResourceLimitError: The file would not fit on the disk.
        """
        import shutil  # (here: a run that writes no streamed file does not load it)

        self.given = Path(path)  # as named by the caller, for `recording_renames`
        # A device or a FIFO is written in place, from start to end; a file through a symbolic link, as atomic_write.
        self.in_place = written_in_place(self.given)
        self.path = self.given if self.in_place else Path(os.path.realpath(path))
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        if self.given.suffix.lower() != ".npy" and not npy:
            raise UsageError(f"cannot stream to {self.path}: streamed results are written as .npy")
        if row_axis not in (0, 1):
            raise ValueError(f"row_axis should be 0 or 1, not {row_axis!r}")
        if len(self.shape) <= row_axis:
            raise UsageError(f"cannot stream to {self.path}: a {len(self.shape)}-D result has no rows"
                             + (f" along axis {row_axis}" if self.shape else ""))
        self.row_axis = row_axis
        if self.dtype.hasobject:
            raise UsageError(f"cannot stream to {self.path}: dtype {self.dtype} is not numeric")
        if self.in_place and row_axis == 1 and self.shape[0] > 1:
            raise UsageError(f"cannot stream to {self.path}: a device or a pipe takes the file from start to end, "
                             "and a batched result is computed a block of rows of every sample at a time; write "
                             "it to a regular file")
        check_target(self.path)
        self._fd: int | None = None
        self._tmp: Path | None = None
        self._row_bytes = math.prod(self.shape[row_axis + 1:]) * self.dtype.itemsize
        self._written = np.zeros(self.shape[row_axis], dtype=bool)
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False, "shape": self.shape}
        self._progress = Phase(f"writing {self.given.name} (rows)", self.shape[row_axis])  # finished by _close
        if self.in_place:
            self._cleanup = None
            self._sent = 0  # rows written so far, in order
            self._fd = open_in_place(self.given)
            try:
                with DeviceStream(os.dup(self._fd)) as stream:
                    np.lib.format.write_array_header_2_0(stream, header)
            except BaseException:
                self._close()
                raise
            return
        try:
            # Created before the space check: a directory that takes no files (read-only, /proc) is
            # that OSError, not a full disk, even where the file system reports no free space.
            with uninterrupted():  # a file whose name is not yet kept in _tmp could not be deleted below
                # Its descriptor holds the file's lock while the stream is written: a run killed
                # meanwhile leaves a file that later runs remove (jaccli.io.stale_files).
                self._fd, self._tmp = open_temporary(self.path)
            # Removes the temporary file if this object is dropped without commit or abort.
            self._cleanup = weakref.finalize(self, unlink_quietly, self._tmp)
            # Header bytes are at most a few hundred; 4 KiB keeps the estimate safe.
            needed = math.prod(self.shape) * self.dtype.itemsize + 4096
            free = shutil.disk_usage(self.path.parent).free
            if needed > free:
                raise _no_space(self.path, needed, free)
            head = io.BytesIO()
            np.lib.format.write_array_header_2_0(head, header)
            _write_all(self._fd, head.getbuffer(), 0)
            self._offset = len(head.getbuffer())
            os.ftruncate(self._fd, self._offset + math.prod(self.shape) * self.dtype.itemsize)
            _reserve(self._tmp, self.path, needed)
        except BaseException:
            self._close()
            if self._tmp is not None:
                unlink_quietly(self._tmp)
            raise

    def write(self, start_row: int, block: np.ndarray) -> None:
        """Store `block` as rows ``[start_row, start_row + k)`` along the row axis.

        Args:
            start_row: First row to write.
            block: Array of shape ``(k,) + shape[1:]``, or ``shape[1:]`` for a single row; with
                ``row_axis=1``, ``(shape[0], k) + shape[2:]``.
        """
        fd = self._open_fd()
        axis = self.row_axis
        values = np.asarray(block)
        row_shape = self.shape[axis + 1:]
        if axis == 0 and values.shape == row_shape:
            values = values[np.newaxis]
        if values.ndim != len(self.shape) or values.shape[:axis] != self.shape[:axis] \
                or values.shape[axis + 1:] != row_shape:
            each = f" for each of the {counted(self.shape[0], 'entry')} along axis 0, as a block of shape " \
                f"({', '.join(map(str, (self.shape[0], 'k') + row_shape))})" if axis else ""
            raise ValueError(f"block of shape {values.shape} does not fit rows of shape {row_shape}{each}")
        stop = start_row + values.shape[axis]
        if start_row < 0 or stop > self.shape[axis]:
            raise ValueError(
                f"rows {start_row}:{stop} are outside the {counted(self.shape[axis], 'row')} of {self.path}"
            )
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if self.in_place:
            self._append(fd, start_row, values)
        elif axis == 0:
            _write_all(fd, memoryview(values).cast("B"), self._offset + start_row * self._row_bytes)
        else:  # the rows of each entry along axis 0 are one contiguous run of the file
            for lead in range(self.shape[0]):
                position = self._offset + (lead * self.shape[1] + start_row) * self._row_bytes
                _write_all(fd, memoryview(values[lead]).cast("B"), position)
        self._written[start_row:stop] = True
        self._progress.advance(stop - start_row)

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
                f"{self.rows_missing} of {counted(self.shape[self.row_axis], 'row')} of {self.path} "
                f"{verb(self.rows_missing, 'were', 'was')} never written"
            )
        if self.in_place:
            self._pad_to(fd, self.shape[self.row_axis])
            self._close()
            record_written(self.given)
            return
        os.fsync(fd)
        self._close()
        put_in_place(self._tmp, self.path, self.given)
        self._cleanup.detach()
        fsync_directory(self.path.parent)

    def abort(self) -> None:
        """Delete the temporary file; the target is left as it was. Safe to call twice.

        A device or a pipe keeps what was written to it.
        """
        self._close()
        if self._cleanup is not None:
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

    def _append(self, fd: int, start_row: int, values: np.ndarray) -> None:
        """Write `values` (rows from `start_row`) where the device or the pipe stands, after `_pad_to`."""
        self._pad_to(fd, start_row)
        _write_all(fd, memoryview(values).cast("B"))
        self._sent = start_row + values.shape[self.row_axis]

    def _pad_to(self, fd: int, row: int) -> None:
        """Zeros for the rows skipped since the last write (they read so in a file); rows already sent cannot
        be rewritten."""
        if row < self._sent:
            raise ValueError(f"rows from {row} on cannot be written to {self.path}: a device or a pipe is "
                             f"written from start to end, and {counted(self._sent, 'row')} "
                             f"{verb(self._sent, 'were', 'was')} written already")
        gap = (row - self._sent) * self._row_bytes
        zeros = memoryview(bytes(min(gap, 1 << 24)))
        while gap:
            _write_all(fd, zeros[:gap])
            gap -= min(gap, len(zeros))
        self._sent = row

    def _open_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"the stream to {self.path} is already committed or aborted")
        return self._fd

    def _close(self) -> None:
        progress = getattr(self, "_progress", None)
        if progress is not None:
            progress.finish()
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


# ---------------------------------------------------------------- helpers


def _write_all(fd: int, data: memoryview, position: int | None = None) -> None:
    """Write all of `data` at `position`, or where the descriptor stands (the OS may store part of it per call)."""
    while data:
        done = os.write(fd, data) if position is None else os.pwrite(fd, data, position)
        if done == 0:  # would loop forever; a write that stores nothing means a full disk
            raise OSError(errno.ENOSPC, f"{len(data)} requested and 0 written")
        data = data[done:]
        if position is not None:
            position += done


def _reserve(tmp: Path, target: Path, size: int) -> None:
    """Allocate the file's blocks now, so a full disk fails here and not as a crash mid-write."""
    import shutil

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
        f"writing {target} needs {human_bytes(needed)} but only {human_bytes(free)} is free "
        f"in {target.parent}; free some space or write elsewhere"
    )


def human_bytes(n: int) -> str:
    """A size in binary units: ``1000 B``, ``1.5 GiB``."""
    if n < 1024:
        return f"{n} B"
    exponent = min((n.bit_length() - 1) // 10, 4)
    return f"{n / 1024**exponent:.1f} {'KMGT'[exponent - 1]}iB"
