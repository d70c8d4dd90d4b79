"""-o J.zarr: a zarr group with an array per result block, written in row chunks into a temporary directory
beside the target and renamed into place once every chunk is in (the optional extra jaccli[zarr]).

The layout, one block or several: a group whose arrays are named like the .npz members (``df_dx``,
``df0_dx``...), each of the block's full shape, in chunks of whole rows along its first axis (a
batched block: along its second, every sample in each chunk); the group's attribute ``jaccli`` holds
the metadata the .npz member ``__meta__`` holds. Workers of a Dask cluster write their own chunks
(`write_rows`), so the result never passes through the client.
"""

from __future__ import annotations

import os
import shutil
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaccli.errors import UsageError

from .atomic import fsync_directory, record_written, uninterrupted

__all__ = ["CHUNK_BYTES", "ZarrStore", "check_store_target", "is_store", "need_zarr", "write_rows", "write_zarr"]

# The largest chunk a result held in memory is cut into: a chunk is read or written whole.
CHUNK_BYTES = 16 * 2**20


def need_zarr(target: Path | str) -> None:
    """zarr is the optional extra jaccli[zarr]: without it, one line saying how to install it, before any work."""
    import importlib.util

    if importlib.util.find_spec("zarr") is None:
        raise UsageError(f"-o {target} needs zarr, which is not installed: pip install 'jaccli[zarr]'")


def is_store(path: Path) -> bool:
    """Whether `path` is a zarr store (v3 or v2) that jaccli may replace."""
    return path.is_dir() and any((path / name).is_file() for name in ("zarr.json", ".zgroup", ".zarray"))


def check_store_target(target: Path) -> None:
    """Refuse a target that exists and is not a zarr store: only a store is replaced by a store."""
    if (target.exists() or target.is_symlink()) and not is_store(target):
        what = "a directory" if target.is_dir() else "a file"
        raise UsageError(f"-o {target}: it is {what}, not a zarr store, and jaccli replaces only a zarr store with "
                         "one; remove it or write elsewhere")


class ZarrStore:
    """A zarr group made in a temporary directory beside `target`: `create` its arrays, write their rows
    (`write_rows`, here or on Dask's workers), then `commit` (renamed into place) or `abort` (deleted)."""

    def __init__(self, target: Path | str) -> None:
        import tempfile

        import zarr

        self.given = Path(target)
        self.target = Path(os.path.realpath(target))
        check_store_target(self.target)
        self.path: Path | None = None
        with uninterrupted():  # the directory's name is kept before a signal can leave it behind
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.", suffix=".tmp",
                                              dir=self.target.parent))
        # An uncommitted store (an error between the chunks and the commit) goes when this process ends.
        self._leftover = weakref.finalize(self, shutil.rmtree, str(self.path), True)
        self.group = zarr.open_group(str(self.path), mode="w")

    def create(self, key: str, shape: tuple[int, ...], dtype: Any, row_axis: int, rows: int,
               col_axis: int | None = None, cols: int = 0) -> None:
        """An array `key` of `shape` in chunks of `rows` along `row_axis` (and of `cols` along `col_axis`, if
        given), whole along the others."""
        chunks = [max(1, n) for n in shape]
        for axis, size in ((row_axis, rows), (col_axis, cols)):
            if axis is not None and len(shape) > axis:
                chunks[axis] = max(1, min(size, shape[axis]))
        self.group.create_array(key, shape=shape, chunks=tuple(chunks), dtype=np.dtype(dtype), fill_value=0)

    def remove(self, key: str) -> None:
        """Delete the array `key` (a step's own, before the commit)."""
        del self.group[key]

    def commit(self, meta: Mapping[str, object] | None = None) -> None:
        """Put the store in place: over a zarr store already there (moved aside, then deleted), never
        over anything else. Between the two renames the target is briefly absent: a directory cannot be
        replaced in one step."""
        assert self.path is not None
        if meta is not None:  # (plain JSON values: the callers' to convert)
            self.group.attrs["jaccli"] = dict(meta)
        check_store_target(self.target)
        old = None
        with uninterrupted():
            if self.target.exists():
                old = self.path.with_name(self.path.name[:-len(".tmp")] + ".old")
                os.rename(self.target, old)
            try:
                os.rename(self.path, self.target)
            except BaseException:
                if old is not None:  # the store that was there goes back
                    os.rename(old, self.target)
                raise
            self.path = None
            self._leftover.detach()
            record_written(self.given)
        fsync_directory(self.target.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abort(self) -> None:
        """Delete the temporary store (a no-op after `commit`)."""
        if self.path is not None:
            self._leftover()
            self.path = None


def write_rows(store: str, key: str, row_axis: int, start: int, values: np.ndarray) -> None:
    """Write `values` into the array `key` of the store at `store`, from row `start` along `row_axis`."""
    import zarr

    array = zarr.open_array(store, path=key, mode="r+")
    if not array.shape:
        array[...] = values
    else:
        array[(slice(None),) * row_axis + (slice(start, start + values.shape[row_axis]),)] = values
    _gone_if_aborted(store)


def _gone_if_aborted(store: str) -> None:
    """After a chunk is written into the temporary store at `store` (by a Dask worker, in the store the client
    made): where the client removed the store meanwhile (an error or a signal stopped the run), the chunk's
    write made its directories again, with no metadata; they go too. Before: an interrupted run left a
    `.J.zarr.<random>.tmp` of chunk files beside the target, where the docs say it leaves nothing."""
    if not is_store(Path(store)):
        shutil.rmtree(store, ignore_errors=True)


def write_zarr(target: Path | str, blocks: Mapping[str, np.ndarray], meta: Mapping[str, object] | None = None) -> None:
    """A result held in memory, written by this process: chunks of at most CHUNK_BYTES along the first axis."""
    store = ZarrStore(target)
    try:
        for key, block in blocks.items():
            block = np.asarray(block)
            row_bytes = block.nbytes // block.shape[0] if block.ndim and block.shape[0] else block.nbytes
            store.create(key, block.shape, block.dtype, 0, max(1, CHUNK_BYTES // max(1, row_bytes)))
            write_rows(str(store.path), key, 0, 0, block)
        store.commit(meta)
    finally:
        store.abort()
