"""The tasks Dask's workers run: each records f once per function and point, then runs sweeps on it.

A worker keeps the evaluators it made in a small cache keyed by the payload's fingerprint, so the
blocks of one Jacobian that land on a worker share one recording.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

import numpy as np

from .payload import Payload

KEPT = 4  # evaluators kept per worker: a few functions or points in turn, without growing for ever

_lock = threading.Lock()  # a worker with several threads makes each evaluator once
_evaluators: OrderedDict[str, Any] = OrderedDict()


def evaluator(payload: Payload) -> Any:
    """The evaluator of `payload` on this worker: f recorded at the first task, reused after."""
    with _lock:
        ev = _evaluators.get(payload.fingerprint)
        if ev is not None:
            _evaluators.move_to_end(payload.fingerprint)
            return ev
    import jaccli

    make = jaccli.hessian if payload.kind == "hessian" else jaccli.jacobian
    # What f prints goes to stderr: a worker jaccli started shares the command's stdout, which carries
    # only results; and the client has already said what f's arithmetic warns about.
    with contextlib.redirect_stdout(sys.stderr), np.errstate(all="ignore"):
        f = payload.function.load()
        lazy = make(f, payload.args, wrt=list(payload.wrt), batch_axis=0 if payload.batch else None,
                    mode=payload.mode)
    leaves = _leaves(lazy)
    ev = leaves[0]._ev
    ev.leaves = leaves
    with _lock:
        ev = _evaluators.setdefault(payload.fingerprint, ev)
        while len(_evaluators) > KEPT:
            _evaluators.popitem(last=False)
    return ev


def call(payload: Payload, name: str, args: tuple) -> tuple[Any, float]:
    """Run the evaluator's method `name` ("row_sweep", "rec.jvp"...) on `args`: its result and the
    seconds the sweeps took on this worker. Not counted: a worker's first task of a function, which
    imports jaccli, loads f and records it (one process, which holds its recording, would not; --stats
    compares the two)."""
    ev = evaluator(payload)
    start = time.perf_counter()
    with ev.lock, np.errstate(all="ignore"):
        result = run(ev, name, args)
    return result, time.perf_counter() - start


def run(ev: Any, name: str, args: tuple) -> Any:
    """`ev`'s method `name` on `args`, here: the same call a worker makes."""
    if name == "swept_rows":  # (i, j, rows): rows of block (i, j), by one reverse sweep, cached nowhere
        i, j, rows = args
        return _block(ev, i, j).matrix._swept_rows(rows)
    if name == "rows":  # (i, j, rows, k): rows of block (i, j) as the whole-block evaluation makes them
        return rows_of(ev, *args)
    if name == "zarr_rows":  # "rows", written into a zarr store here: only their count goes back
        return write_chunk(_block(ev, args[0], args[1]), args)
    if name == "zarr_symmetric":  # a chunk of a Hessian block's rows made exactly symmetric in the store
        return symmetric_rows(args)
    target = ev.rec if name.startswith("rec.") else ev
    return getattr(target, name.rpartition(".")[2])(*args)


def _leaves(lazy: Any) -> list:
    """The lazy blocks of a jacobian()/hessian() result, row by row (it nests them in tuples)."""
    if isinstance(lazy, tuple):
        return [leaf for part in lazy for leaf in _leaves(part)]
    return [lazy]


def _block(ev: Any, i: int, j: int) -> Any:
    """Block (i, j) of the evaluator `evaluator()` made."""
    return ev.leaves[i * ev.n_in + j]


def rows_of(ev: Any, i: int, j: int, rows: np.ndarray, k: int) -> np.ndarray:
    """Rows `rows` of block (i, j), [R, N] (batched: [B, R, N]), in sweeps of `k` as np.asarray(J) runs
    them: reverse sweeps of the Jacobian's rows, a Hessian's rows by its own kind of sweep."""
    return block_rows(_block(ev, i, j), rows, k)


def write_chunk(block: Any, args: tuple) -> tuple[int, int, int, str]:
    """A chunk of the lazy `block`'s rows (args: i, j, rows, k, store, key, row_axis, start, shape) written
    into the zarr store at `store` (jaccli.parallel.zarr_chunks): its number of rows, and the sweeps, seeds
    and kind of sweep that made them (counted on `block`'s evaluator too: the client's where it ran there)."""
    from jaccli.io.zarr_store import write_rows

    _, _, rows, k, store, key, row_axis, start, shape = args
    ev = block._ev
    before = (ev.sweeps, ev.seeds_used)
    values = np.reshape(block_rows(block, rows, k), shape).astype(block.dtype, copy=False)
    write_rows(store, key, row_axis, start, values)
    kind = "forward" if block.kind == "hessian" and ev.mode != "reverse" else "reverse"
    return rows.size, ev.sweeps - before[0], ev.seeds_used - before[1], kind


def symmetric_rows(args: tuple) -> None:
    """Rows a:b (of the leading axis of input i's) of the Hessian block (i, j) at `key` in the zarr store at `store`,
    written as (R + R^T) / 2 of its rows as swept (R, the array `raw`) and its mirror's (`mirror`: block (j, i)'s,
    the same array for i = j), as one process makes the block exactly symmetric (hessian_evaluator._symmetrize):
    each pair of entries one number. `lead`: batch axes before the rows; `rows`, `columns`: how many axes inputs i
    and j have. args: (store, key, raw, mirror, lead, rows, columns, a, b)."""
    import zarr

    from jaccli.io.zarr_store import write_rows

    store, key, raw, mirror, lead, rows, columns, a, b = args
    own = (slice(None),) * lead + ((slice(a, b),) if rows else ())
    upper = np.asarray(zarr.open_array(store, path=raw, mode="r")[own])
    lower = np.asarray(zarr.open_array(store, path=mirror, mode="r")[(slice(None),) * (lead + columns) + own[lead:]])
    lead_shape = upper.shape[:lead]
    m = int(np.prod(upper.shape[lead:lead + rows], dtype=np.int64))
    n = int(np.prod(upper.shape[lead + rows:], dtype=np.int64))
    mean = 0.5 * (upper.reshape(lead_shape + (m, n)) + np.swapaxes(lower.reshape(lead_shape + (n, m)), -1, -2))
    # (from row a along the rows' axis; for an input without axes that axis is input j's, all of it from 0 = a)
    write_rows(store, key, lead, a, mean.reshape(upper.shape))


def block_rows(block: Any, rows: np.ndarray, k: int) -> np.ndarray:
    """`rows_of` for the lazy block itself (made here or on a worker)."""
    ev, i, j = block._ev, block._i, block._j
    if block.kind != "hessian":
        parts = [block.matrix._swept_rows(rows[s:s + k]) for s in range(0, rows.size, k)]
        return np.concatenate(parts, axis=1 if ev.batch else 0)
    # A Hessian: the rows of d grad_i / d x_j are HVPs with the elements of input i.
    sweep = ev.col_sweep if ev.mode != "reverse" else ev.row_sweep
    parts = []
    for s in range(0, rows.size, k):
        piece = rows[s:s + k]
        t = sweep(i, piece)[j]
        ev.counted(None, piece.size)  # (as the evaluator's own sweeps are: --stats and the report; write_chunk: kind)
        shape = (piece.size, ev.B, ev.N[j]) if ev.batch else (piece.size, ev.N[j])
        t = np.zeros(shape, dtype=block.dtype) if t is None else np.reshape(np.asarray(t), shape)
        parts.append(np.moveaxis(t, 0, 1) if ev.batch else t)
    return np.concatenate(parts, axis=1 if ev.batch else 0).astype(block.dtype, copy=False)


def keep(payload: Payload) -> Payload:
    """The payload's own task: its result is the payload, held by the workers for the blocks' tasks."""
    return payload
