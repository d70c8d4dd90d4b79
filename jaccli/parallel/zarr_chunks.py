"""-o J.zarr on Dask's workers: each task computes a chunk of a block's rows and writes it into the store itself."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from .dask_arrays import steps_per_chunk
from .worker import write_chunk

# A Hessian block's rows as its sweeps made them, before they are made exactly symmetric (symmetric_rows), are kept
# in the store under this prefix and its name, and removed before the commit.
RAW = "jaccli_rows_"


@dataclass
class _Planned:
    """How a block is cut into chunks: `steps` indices of its rows' leading axis (`axis_len` of them, each `unit`
    rows of the [M, N] matrix) a chunk, `lead` batch axes before them, its `shape` and sweeps of `k` rows."""

    block: Any
    lead: int
    axis_len: int
    unit: int
    steps: int
    k: int
    shape: tuple
    raw: str | None = None  # (a Hessian block with its mirror: where its rows go first)


def write_on_workers(remote: Any, blocks: Iterable[Any], target: Any, max_bytes: int) -> Any:
    """Write `blocks` (the CLI's, each with `key` and a whole `lazy` block) into a zarr store at `target`.

    A block's chunks are whole sweeps of its rows, at least one per worker thread (`PER_SLOT`) and at most
    `max_bytes` each; the workers write them into the store's temporary directory (which they must see at
    the client's path: on one machine, or on a file system shared at the same mount point), the client
    only their row counts, then renames the store into place. The first chunk may run here when the
    cluster is not up yet, as every parallel run decides (RemoteSweeps.unordered). A Hessian's blocks are
    made exactly symmetric, as one process makes them: their rows go to arrays of their own first, tiled by
    the chunks of the block's rows and its mirror's, and a second round of tasks writes each chunk of rows
    of (R + R^T) / 2 from them. Returns the jaccli.io.zarr_store.ZarrStore, every chunk in, for the caller
    to commit with its metadata."""
    from jaccli.io.zarr_store import ZarrStore

    store = ZarrStore(target)
    try:  # (an error or Ctrl-C: the temporary store goes)
        plans = [_plan(remote, block, max_bytes) for block in blocks]
        mirrors = _mirrors(plans)
        for plan in plans:
            lazy = plan.block.lazy
            rows = plan.steps if plan.shape[plan.lead:] else 1
            store.create(plan.block.key, plan.shape, lazy.dtype, plan.lead, rows)
            mirror = mirrors.get(id(plan))
            if mirror is not None:
                plan.raw = RAW + plan.block.key
                columns = plan.lead + len(lazy._ev.out_feat[lazy._i])
                store.create(plan.raw, plan.shape, lazy.dtype, plan.lead, rows, columns, mirror.steps)
        for plan in plans:
            _rows_written(remote, store, plan)
        symmetric = [(plan, mirrors[id(plan)]) for plan in plans if id(plan) in mirrors]
        if symmetric:
            _symmetric_written(remote, store, symmetric)
            for plan, _ in symmetric:
                store.remove(plan.raw)
    except BaseException:
        path = store.path
        store.abort()
        # A worker still writing a chunk when the store went makes its directories again (zarr_store.write_rows
        # removes them after each chunk); once jaccli's own workers are gone, once more for any killed between the two
        remote.cluster.after_close(lambda: shutil.rmtree(str(path), ignore_errors=True))
        raise
    return store


def _plan(remote: Any, block: Any, max_bytes: int) -> _Planned:
    from .remote_sweeps import PER_SLOT

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
    return _Planned(block, lead, axis_len, unit, steps, k, tuple(lazy.shape))


def _mirrors(plans: list[_Planned]) -> dict[int, _Planned]:
    """Each Hessian block's plan (by id) to its mirror's, block (j, i) of block (i, j), where both are written."""
    hessians = {(p.block.lazy._i, p.block.lazy._j): p for p in plans if p.block.lazy.kind == "hessian"}
    return {id(p): hessians[j, i] for (i, j), p in hessians.items() if (j, i) in hessians}


def _ranges(plan: _Planned) -> list[tuple[int, int]]:
    return [(a, min(a + plan.steps, plan.axis_len)) for a in range(0, plan.axis_len, plan.steps)]


def _rows_written(remote: Any, store: Any, plan: _Planned) -> None:
    """The chunks of `plan`'s block, swept and written (into its raw array first, if it has one)."""
    lazy, shape, lead = plan.block.lazy, plan.shape, plan.lead
    ev, i, j = lazy._ev, lazy._i, lazy._j
    out_feat = ev.out_feat[i]
    key = plan.raw or plan.block.key
    calls = []
    for a, b in _ranges(plan):
        piece = shape[:lead] + ((b - a,) + tuple(out_feat[1:]) if out_feat else ()) + shape[lead + len(out_feat):]
        calls.append(("zarr_rows", (i, j, np.arange(a * plan.unit, b * plan.unit), plan.k, str(store.path), key, lead,
                                    a, piece)))
    chunks = remote.unordered(ev, calls, lambda n: write_chunk(lazy, calls[n][1]))
    for _, (_, sweeps, seeds, kind), here in chunks:
        if not here:  # (a worker's sweeps, counted here as this process counts its own: the report)
            ev.counted(kind, seeds, sweeps)


def _symmetric_written(remote: Any, store: Any, pairs: list[tuple[_Planned, _Planned]]) -> None:
    """Every chunk of rows of the blocks in `pairs` (a plan and its mirror's) written exactly symmetric from their
    raw arrays (worker.symmetric_rows): on the workers where the rows were swept there, else here."""
    from .worker import symmetric_rows

    for plan, mirror in pairs:
        lazy = plan.block.lazy
        ev = lazy._ev
        rows, columns = len(ev.out_feat[lazy._i]), len(ev.out_feat[lazy._j])
        calls = [("zarr_symmetric", (str(store.path), plan.block.key, plan.raw, mirror.raw, plan.lead, rows,
                                     columns, a, b)) for a, b in _ranges(plan)]
        if remote.cluster.running and ev.origin is not None:
            for _ in remote.unordered(ev, calls, lambda n: symmetric_rows(calls[n][1]), decide=False):
                pass
        else:
            for _, args in calls:
                symmetric_rows(args)
