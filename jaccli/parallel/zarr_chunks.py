"""-o J.zarr on Dask's workers: each task computes a chunk of a block's rows and writes it into the store itself."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .dask_arrays import steps_per_chunk
from .worker import write_chunk


def write_on_workers(remote: Any, blocks: Iterable[Any], target: Any, max_bytes: int) -> Any:
    """Write `blocks` (the CLI's, each with `key` and a whole `lazy` block) into a zarr store at `target`.

    A block's chunks are whole sweeps of its rows, at least one per worker thread (`PER_SLOT`) and at most
    `max_bytes` each; the workers write them into the store's temporary directory (which they must see at
    the client's path: on one machine, or on a file system shared at the same mount point), the client
    only their row counts, then renames the store into place. The first chunk may run here when the
    cluster is not up yet, as every parallel run decides (RemoteSweeps.unordered). Returns the
    jaccli.io.zarr_store.ZarrStore, every chunk in, for the caller to commit with its metadata."""
    from jaccli.io.zarr_store import ZarrStore

    from .remote_sweeps import PER_SLOT

    store = ZarrStore(target)
    try:  # (an error or Ctrl-C: the temporary store goes)
        for block in blocks:
            lazy = block.lazy
            ev, i, j = lazy._ev, lazy._i, lazy._j
            lead = 1 if ev.batch else 0
            out_feat = ev.out_feat[i]
            axis_len = out_feat[0] if out_feat else 1
            unit = ev.M[i] // axis_len if axis_len else 1
            k = ev.chunk(ev.M[i], ev.N[j] * (ev.B if ev.batch else 1))
            row_bytes = max(1, ev.N[j] * (ev.B if ev.batch else 1) * lazy.dtype.itemsize)
            cap = max(1, max_bytes // row_bytes)  # rows of the [M, N] matrix in a chunk, at most
            # Whole sweeps of a chunk size the user gave: one process's sweeps, so its bits.
            sweep = k if isinstance(ev.chunk_size, int) else 1
            steps = steps_per_chunk(axis_len, unit, sweep, PER_SLOT * remote.cluster.slots(), cap)
            shape = tuple(lazy.shape)
            store.create(block.key, shape, lazy.dtype, lead, steps if out_feat else (shape[lead] if shape else 1))
            calls = []
            for a in range(0, axis_len, steps):
                b = min(a + steps, axis_len)
                piece = shape[:lead] + ((b - a,) + tuple(out_feat[1:]) if out_feat else ()) + shape[lead + len(out_feat):]
                calls.append(("zarr_rows", (i, j, np.arange(a * unit, b * unit), k, str(store.path), block.key, lead, a,
                                            piece)))
            chunks = remote.unordered(ev, calls, lambda n: write_chunk(lazy, calls[n][1]))
            for _, (_, sweeps, seeds, kind), here in chunks:
                if not here:  # (a worker's sweeps, counted here as this process counts its own: the report)
                    ev.sweeps += sweeps
                    ev.seeds_used += seeds
                    ev.kinds.add(kind)
    except BaseException:
        store.abort()
        raise
    return store

