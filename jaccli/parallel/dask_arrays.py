"""J.to_dask(): a lazy Jacobian or Hessian as a dask.array of row blocks computed on Dask's workers."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .payload import make_payload, pickled
from .worker import call


def to_dask(block: Any, rows_per_chunk: int | None = None) -> Any:
    """`block` (a Jacobian, Hessian or their .matrix) as a dask.array; see _Block.to_dask."""
    from .cluster import need_dask

    need_dask("to_dask()")
    import dask
    import dask.array as da

    lazy = getattr(block, "_block", block)  # a MatrixView's own block
    ev, i, j = lazy._ev, lazy._i, lazy._j
    if ev.origin is None:
        raise TypeError("this lazy object was not made by jaccli.jacobian or jaccli.hessian, so its function "
                        "cannot be sent to Dask's workers; make it with one of them")
    kind, f, args, wrt = ev.origin
    payload = make_payload(pickled(f), args, wrt, kind, ev.batch, ev.mode)
    flat = block is not lazy
    lead = 1 if ev.batch else 0
    shape = block.shape
    out_feat = ev.out_feat[i] if not flat else (ev.M[i],)
    # Chunks along the first output axis; `unit` rows of the [M, N] matrix make one step along it.
    axis_len = out_feat[0] if out_feat else 1
    unit = ev.M[i] // axis_len if axis_len else 1
    k = ev.chunk(ev.M[i], ev.N[j] * (ev.B if ev.batch else 1))  # the sweeps np.asarray(J) runs
    steps = _steps(axis_len, unit, k, rows_per_chunk)
    p = dask.delayed(payload, pure=True)
    pieces = []
    for a in range(0, axis_len, steps):
        b = min(a + steps, axis_len)
        rows = np.arange(a * unit, b * unit)
        piece_shape = shape[:lead] + ((b - a,) + tuple(out_feat[1:]) if out_feat else ()) + shape[lead + len(out_feat):]
        task = dask.delayed(_rows, pure=True)(p, i, j, rows, k, piece_shape, block.dtype)
        pieces.append(da.from_delayed(task, piece_shape, dtype=block.dtype))
    return pieces[0] if len(pieces) == 1 else da.concatenate(pieces, axis=lead)


def _steps(axis_len: int, unit: int, k: int, rows_per_chunk: int | None) -> int:
    """Steps along the first output axis per chunk: at least one chunk per worker thread, in whole
    sweeps of `k` rows where the rows allow it (the same sweeps as one process: the same bits)."""
    if rows_per_chunk is not None:
        if rows_per_chunk < 1:
            raise ValueError(f"rows_per_chunk must be a positive number of rows, not {rows_per_chunk}")
        return max(1, rows_per_chunk // unit)
    return steps_per_chunk(axis_len, unit, k, _threads())


def steps_per_chunk(axis_len: int, unit: int, k: int, chunks: int, most_rows: int | None = None) -> int:
    """Steps along the first output axis (of `unit` rows each) per chunk for at least `chunks` chunks, in
    whole sweeps of `k` rows where the rows allow it; with `most_rows`, in whole sweeps always (at least
    one), and no more rows than it says if a sweep allows."""
    wanted = math.ceil(axis_len * unit / chunks)
    if most_rows is not None:
        wanted = min(wanted, max(unit, most_rows))
    if most_rows is not None:
        wanted = max(k, wanted // k * k)
    elif k < wanted:
        wanted = math.ceil(wanted / k) * k
    return max(1, min(axis_len, math.ceil(wanted / unit)))


def _threads() -> int:
    """Worker threads of the active distributed client, else this machine's cores (dask's default)."""
    try:
        from distributed import default_client

        return max(1, sum(default_client().nthreads().values()))
    except (ImportError, ValueError):
        return os.cpu_count() or 1


def _rows(payload: Any, i: int, j: int, rows: np.ndarray, k: int, shape: tuple, dtype: Any) -> np.ndarray:
    """One chunk's rows, reshaped to its part of the block (runs on a worker)."""
    data, _ = call(payload, "rows", (i, j, rows, k))
    return np.reshape(data, shape).astype(dtype, copy=False)
