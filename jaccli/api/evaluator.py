"""The evaluator behind lazy Jacobians and Hessians: one recording, row and column caches, sweeps.

One `Evaluator` serves every block of one `jacobian`/`hessian` call. It owns the recording
(f evaluated once) and a cache per (output, input) block: a dense store plus masks of the
rows (output elements, from reverse sweeps) and columns (input elements, from forward
sweeps) already known. An entry is known when its row or its column is, and for Hessians
also when its mirror entry is (symmetry).
"""

from __future__ import annotations

import math
import threading
from contextvars import ContextVar
from typing import Any, Callable

import numpy as np

from jaccli.engine import (HEAVIER_IN_REVERSE, MATRIX_PRODUCTS, Phase, Recording, SparseBlock, blocks, recycle_block,
                           scatter_cols, scatter_rows, separable)

from .block_stores import BlockStores, PartialStore, _unless_all, copy_rows, increasing
from .diagonal_blocks import DiagonalBlocks
from .sample_mixing import check_batch_independence
from .steady_blocks import SteadyBlocks
from .sweep_seeds import SweepSeeds, default_memory_budget

MODES = ("auto", "reverse", "forward")
_PHASES = {"reverse": "reverse sweeps (rows)", "forward": "forward sweeps (columns)"}  # what a progress bar says

# The sweeps' runner for the evaluators made while it is set (jaccli.parallel.RemoteSweeps), read in
# Evaluator.__init__: the command line sets it around a --workers or --scheduler run.
REMOTE_SWEEPS: ContextVar[Any] = ContextVar("jaccli_remote_sweeps", default=None)


def _unique(idx: np.ndarray, size: int) -> np.ndarray:
    """Sorted distinct indices in range(size): a mask is cheaper than np.unique for these."""
    if increasing(idx):
        return idx  # (in order already: a few rows asked of a large block need no mask of its size)
    mask = np.zeros(size, dtype=bool)
    mask[idx] = True
    return np.flatnonzero(mask)


def _missing_among(positions: np.ndarray, done: np.ndarray, size: int) -> np.ndarray:
    """The distinct positions among `positions` (along an axis of `size`) that `done` does not mark."""
    if positions.size == size and not done.any() and _unless_all(positions, size) is None:
        # every position, in order, none known (the columns of a few lazy rows of a wide block): as
        # they are, not masked, gathered and made unique (10 rows of the 300x300-grid stencil: 4
        # passes over 90,000 columns per call)
        return positions
    return _unique(positions[~done[positions]], size) if positions.size else positions


def _adoptable(arr: Any, dtype: np.dtype) -> bool:
    """Whether a sweep's result can become the cache itself (it owns writable, packed memory)."""
    return (isinstance(arr, np.ndarray) and arr.dtype == dtype and arr.flags.writeable
            and (arr.flags.c_contiguous or arr.flags.f_contiguous) and 0 not in arr.strides)


# Entries of a square block from which the extra passes of a reverse rule (HEAVIER_IN_REVERSE) go to
# memory rather than the caches: 1024 x 1024.
FORWARD_ON_A_TIE_FROM = 1 << 20


class Evaluator(BlockStores, SweepSeeds, DiagonalBlocks, SteadyBlocks):
    """Shared state of one jacobian() or hessian() call: the recording and the caches.

    Args:
        rec: f recorded at the point.
        batch: per-sample derivatives along axis 0 of outputs and inputs.
        symmetric: the blocks are those of a Hessian (block (i, j) is block (j, i) transposed).
        mode: "auto", "reverse" or "forward".
        chunk_size: seeds per sweep, or None/"auto" to choose from the memory budget.
    """

    def __init__(self, rec: Recording, *, batch: bool = False, symmetric: bool = False, mode: str = "auto",
                 chunk_size: int | str | None = None, memory_budget: int | None = None) -> None:
        self.rec = rec
        self.batch = batch
        self.symmetric = symmetric
        self.mode = mode
        self.chunk_size = chunk_size
        self.memory_budget = default_memory_budget() if memory_budget is None else memory_budget
        self.n_out = len(rec.live)  # (not rec.outputs: a replay may make those when read, replay/partial_forward)
        self.n_in = len(rec.wrt)
        if batch:
            self.B = rec.out_shape(0)[0] if rec.out_shape(0) else 1
        self._plain = type(rec) is Recording  # (not a record_once recording, which is replayed: see kept)
        if self._plain:
            self.out_feat, self.in_feat, self.M, self.N = self._layout()
        else:  # (lists of their own: callers add to them, max(ev.M + [1]))
            self.out_feat, self.in_feat, self.M, self.N = map(list, rec.shared(("layout", batch), self._layout))
        self.row_done = [np.zeros(m, dtype=bool) for m in self.M]
        self.col_done = [np.zeros(n, dtype=bool) for n in self.N]
        self.store: dict[tuple[int, int], np.ndarray] = {}
        self._dtypes: dict[tuple[int, int], np.dtype] = {}
        self.sweeps = 0
        self.seeds_used = 0
        self.batch_checked = False
        self._products: bool | None = None
        self._heavier_in_reverse: bool | None = None
        self._diagonals: dict[tuple[int, int], np.ndarray | None] = {}
        self.kinds: set[str] = set()  # the kinds of sweep run so far: "reverse", "forward", "diagonal"
        self.lock = threading.RLock()  # held by the lazy objects while they fill the caches
        # Where the sweeps run (jaccli.parallel.RemoteSweeps, set by the CLI's --workers/--scheduler), or
        # None: here. `origin`: ("jacobian" or "hessian", f, args, wrt), what Dask's workers need to make
        # the same evaluator (set by jacobian() and hessian()).
        self.remote: Any = REMOTE_SWEEPS.get()
        self.origin: tuple | None = None
        self._slab: np.ndarray | None = None  # the store's rows offered to the running sweep (_swept_in_place)
        # Called with each sweep's results as they arrive, when set: the command line bounds the entries
        # of the result from them instead of scanning it (jaccli.check.diagnostics.SweepBound).
        self.watch: Callable[[list], None] | None = None

    def _feat(self, shape: tuple) -> tuple:
        return tuple(shape[1:]) if self.batch else tuple(shape)

    def _layout(self) -> tuple:
        """The blocks' feature shapes and sizes: lists out_feat, in_feat, M, N."""
        out_feat = [self._feat(self.rec.out_shape(i)) for i in range(self.n_out)]
        in_feat = [self._feat(self.rec.in_shape(j)) for j in range(self.n_in)]
        return out_feat, in_feat, [math.prod(s) for s in out_feat], [math.prod(s) for s in in_feat]

    def kept(self, key: tuple, make: Callable[..., Any], *args: Any) -> Any:
        """make(*args), which the recording's shapes and structure decide (a `key` that says what it
        is): for a record_once recording, made once and kept with it for its replays (Recording.shared),
        so that a call at a new point does not make it again; a plain call's recording serves one evaluator."""
        return make(*args) if self._plain else self.rec.shared(key, lambda: make(*args))

    def _has_products(self) -> bool:
        if self._products is None:
            self._products = self.kept(("matrix products",), self.rec.records,
                                       frozenset(p.name for p in MATRIX_PRODUCTS))
        return self._products

    def _reverse_on_a_tie(self, entries: int) -> bool:
        """As many rows as columns (`entries` in all): reverse, unless the block is too large for the
        caches and a recorded operation's reverse rule makes more passes over it than its forward one.
        (KS residual, record_once, thread CPU: n = 256 reverse 0.16 ms, forward 0.42; n = 4096 reverse
        0.3-0.9 s, forward 0.22.)"""
        if entries < FORWARD_ON_A_TIE_FROM:
            return True
        if self._heavier_in_reverse is None:
            self._heavier_in_reverse = self.rec.records(frozenset(p.name for p in HEAVIER_IN_REVERSE))
        return not self._heavier_in_reverse

    # -- evaluation ----------------------------------------------------------------
    def row_sweep(self, i: int, block: np.ndarray) -> list:
        """Rows `block` of output i against every input: one reverse sweep (a Dask worker runs it too)."""
        seeds, alt = self._seeds(self._row_seed, i, block, self.n_out)
        return self.rec.vjp(seeds, structured=True, program_seeds=alt)

    def col_sweep(self, j: int, block: np.ndarray) -> list:
        """Columns `block` of input j against every output: one forward sweep."""
        seeds, alt = self._seeds(self._col_seed, j, block, self.n_in)
        return self.rec.jvp(seeds, structured=True, program_seeds=alt)

    def ensure_rows(self, i: int, rows: np.ndarray) -> None:
        """Compute the missing rows (output elements) of output i by reverse sweeps."""
        self._sweep_blocks(rows, self.row_done[i], self.M[i], max(self.N + [1]), ("row_sweep", i),
                           self._rows_writer(i), "reverse")

    def _rows_writer(self, i: int) -> Callable:
        """write(rows, j, ct): a reverse sweep's block ct of rows of output i against input j, written."""
        return lambda block, j, ct: self._keeping_known(i, j, block, True, lambda: self._write_rows(i, j, block, ct))

    def _sweep_blocks(self, wanted: np.ndarray, done_mask: np.ndarray, size: int, other: int,
                      sweep: tuple[str, int], write: Callable, kind: str) -> None:
        """Run `sweep` (("row_sweep", i) or ("col_sweep", j)) over the missing entries of `wanted` in
        chunks, writing each result block; with `remote` (jaccli.parallel), the chunks run on Dask's
        workers and are written here in the same order."""
        # (wanted is then range(size): the callers' order; no store: nothing is known yet)
        whole = wanted.size == size and (not self.store or not done_mask.any())
        missing = wanted if whole else wanted[~done_mask[wanted]]
        if missing.size == 0:
            return
        self._check_batch()
        if missing.size != size:
            missing = _unique(missing, size)
        k = self.chunk(missing.size, other * (self.B if self.batch else 1))
        start = 0
        run, index = getattr(self, sweep[0]), sweep[1]
        remote = self.remote
        with Phase(_PHASES[kind], missing.size) as phase:
            # (Here, a list of sizes and no generator on the sweeps' path; on Dask's workers, the
            # blocks with their results, in order.)
            for step in blocks(missing.size, k, split=not isinstance(self.chunk_size, int)) if remote is None \
                    else remote.sweeps(self, sweep, missing, k):
                if remote is None:
                    block = missing[start:start + step]
                    start += step
                    results = self._swept(run, index, block, whole and kind == "reverse", size)
                else:
                    block, results = step
                if self.watch is not None:
                    self.watch(results)
                self._took(block, results, write, done_mask, whole, size, kind)
                phase.advance(block.size)

    def counted(self, kind: str | None, seeds: int, sweeps: int = 1) -> None:
        """`sweeps` sweeps (`seeds` seeds in all) of `kind` ("reverse", "forward", "diagonal"; None: counted
        elsewhere), added to what --stats and the report read: made here or on Dask's workers."""
        if kind is not None:
            self.kinds.add(kind)
        self.sweeps += sweeps
        self.seeds_used += seeds

    def _took(self, block: np.ndarray, results: list, write: Callable, done_mask: np.ndarray, whole: bool,
              size: int, kind: str) -> None:
        """One sweep's `results` for the positions `block`, written and counted."""
        self.counted(kind, block.size)
        for other_index, value in enumerate(results):
            write(block, other_index, value)
        if whole and block.size == size:
            done_mask[:] = True
        else:
            done_mask[block] = True

    def _write_rows(self, i: int, j: int, rows: np.ndarray, ct: Any) -> None:
        k = rows.size
        if self.batch:
            if ct is not None:
                ct = np.reshape(np.asarray(ct), (k, self.B, self.N[j]))
                if k == self.M[i] and (rows == np.arange(k)).all() and (i, j) not in self.store \
                        and _adoptable(ct, self.dtype(i, j)):
                    self.store[(i, j)] = np.moveaxis(ct, 0, 1)  # a view: no copy of the whole block
                    return
            store = self.block_store(i, j)
            if type(store) is PartialStore:
                store.put_rows(rows, ct)
            else:
                store[:, rows, :] = 0.0 if ct is None else np.moveaxis(ct, 0, 1)
            return
        whole = k == self.M[i] and rows[0] == 0 and rows[-1] == k - 1 and (i, j) not in self.store
        if whole and (ct is None or type(ct) is SparseBlock) and self._zeros(i, j):
            if ct is not None:
                scatter_rows(np.reshape(ct, (k, self.N[j])), self.store[(i, j)], rows, zeroed=True)
        elif whole and ct is not None and _adoptable(ct, self.dtype(i, j)):
            self.store[(i, j)] = np.reshape(ct, (k, self.N[j]))  # the whole block in one sweep: keep it
        elif self.partial(i, j):
            self.store[(i, j)].put_rows(rows, ct)  # (a structured block is written through its parts)
        elif ct is None:
            self.block_store(i, j)[rows] = 0.0
        elif type(ct) is SparseBlock:
            scatter_rows(np.reshape(ct, (k, self.N[j])), self.block_store(i, j), rows)
        elif ct is self._slab:  # made in the store's own rows (_swept_in_place)
            self._slab = None
        else:
            copy_rows(self.block_store(i, j), rows, np.reshape(ct, (k, self.N[j])))
            recycle_block(ct)  # (copied out: the next block's sweep may make its zeros in this memory)

    def ensure_cols(self, j: int, cols: np.ndarray) -> None:
        """Compute the missing columns (input elements) of input j by forward sweeps."""
        self._sweep_blocks(cols, self.col_done[j], self.N[j], max(self.M + [1]), ("col_sweep", j),
                           self._cols_writer(j), "forward")

    def _cols_writer(self, j: int) -> Callable:
        """write(cols, i, t): a forward sweep's block t of columns of input j into output i, written."""
        return lambda block, i, t: self._keeping_known(i, j, block, False, lambda: self._write_cols(i, j, block, t))

    # Entries a column (row) sweep gave are kept when a row (column) sweep covers them again: the
    # two kinds of sweep round differently, and an entry handed out must never change. The
    # Hessian's rows and columns are one set: it keeps its own (HessianEvaluator._agree_with_known).
    _keeps_crossing = True

    def _keeping_known(self, i: int, j: int, lines: np.ndarray, rows: bool, write: Callable) -> None:
        """write() lines (rows, or columns) of block (i, j), then put back the entries of the other
        kind's lines that were known before."""
        store = self.store.get((i, j))
        known = self.col_done[j] if rows else self.row_done[i]
        if not self._keeps_crossing or type(store) is not np.ndarray or not known.any():
            write()
            return
        others = np.flatnonzero(known)
        at = (slice(None),) * self.batch + (np.ix_(lines, others) if rows else np.ix_(others, lines))
        kept = store[at]
        write()
        self.store[(i, j)][at] = kept  # a cache is always writable: only writable arrays are adopted

    def _write_cols(self, i: int, j: int, cols: np.ndarray, t: Any) -> None:
        k = cols.size
        if self.batch:
            store = self.block_store(i, j)
            if t is not None:
                t = np.reshape(np.asarray(t), (k, self.B, self.M[i]))
            if type(store) is PartialStore:
                store.put_cols(cols, t)
            elif t is None:
                store[:, :, cols] = 0.0
            else:
                store[:, :, cols] = np.transpose(t, (1, 2, 0))
            return
        whole = k == self.N[j] and cols[0] == 0 and cols[-1] == k - 1 and (i, j) not in self.store
        if whole and (t is None or type(t) is SparseBlock) and self._zeros(i, j):
            if t is not None:
                scatter_cols(np.reshape(t, (k, self.M[i])), self.store[(i, j)], cols, zeroed=True)
        elif whole and t is not None and _adoptable(t, self.dtype(i, j)):
            self.store[(i, j)] = np.reshape(t, (k, self.M[i])).T
        elif self.partial(i, j):
            self.store[(i, j)].put_cols(cols, None if t is None else np.asarray(t))
        elif t is None:
            self.block_store(i, j)[:, cols] = 0.0
        elif type(t) is SparseBlock:
            scatter_cols(np.reshape(t, (k, self.M[i])), self.block_store(i, j), cols)
        else:
            self.block_store(i, j)[:, cols] = np.reshape(t, (k, self.M[i])).T

    def ensure(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray, mode: str | None = None) -> str:
        """Make every entry (r, c) for r in rows, c in cols of block (i, j) known.

        Returns the sweep kind used: "reverse", "forward" or "cached".
        """
        mode = mode or self.mode
        m, n = self.M[i], self.N[j]
        if rows.size == m and cols.size == n:
            self._whole_wanted(i, j)
            if not self.store:
                # A fresh evaluator's whole block (np.asarray(J)): its route is the structure's and the
                # sizes', decided once for a record_once recording and its replays (a steady call at a
                # new point detects no diagonal and compares no sizes).
                route = self.kept(("whole block route", i, j, mode, self.batch), self._route, i, j, m, n, mode)
                if self._plain or route == "cached" or (route == "diagonal" and self.n_in != 1):
                    return self._take_route(route, i, j, rows, cols)
                line, positions = (i, rows) if route == "reverse" else (j, cols)
                return self._whole_block(i, j, mode, route, line, positions,
                                         lambda: self._take_route(route, i, j, rows, cols))
        else:
            self.asked_few(i, j, rows, cols)
        return self._some_rows(i, j, mode, rows, cols)  # (api/steady_blocks: the missing ones, by their route)

    def _route(self, i: int, j: int, rows: int, cols: int, mode: str) -> str:
        """How `rows` missing rows and `cols` missing columns of block (i, j) are computed: "cached" (none
        is missing), "diagonal" (from the diagonals of the blocks they share), "reverse" or "forward"."""
        if rows == 0 or cols == 0:
            return "cached"
        if mode == "auto" and self.is_diagonal(i, j) and self.diagonal_fill(i, j, rows <= cols):
            return "diagonal"
        if mode == "reverse" or (mode == "auto" and (rows < cols or (
                rows == cols and self._reverse_on_a_tie(rows * cols)))):
            return "reverse"
        return "forward"

    def _take_route(self, route: str, i: int, j: int, rows: np.ndarray, cols: np.ndarray) -> str:
        """Compute the missing `rows` and `cols` of block (i, j) by `route` (see _route); the sweep kind used."""
        if route == "diagonal":
            self._ensure_diagonal(i, j, rows, cols)
            return "forward"
        if route == "reverse":
            self.ensure_rows(i, rows)
        elif route == "forward":
            self.ensure_cols(j, cols)
        return route

    def _missing(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct rows of output i and columns of input j among `rows` and `cols` not yet known."""
        if rows.size == self.M[i] and cols.size == self.N[j] and (not self.store or (
                not self.row_done[i].any() and not self.col_done[j].any())):
            return rows, cols  # a fresh whole block (no store: nothing known yet): nothing to look up
        return _missing_among(rows, self.row_done[i], self.M[i]), _missing_among(cols, self.col_done[j], self.N[j])

    def _check_batch(self) -> None:
        if self.batch and not self.batch_checked:
            # The recorded structure proves most functions sample-wise; the rest get a numeric probe.
            if not separable(self.rec.trace, self.B):
                check_batch_independence(self.rec, self.B)
            self.batch_checked = True

    def entries(self, i: int, j: int) -> np.ndarray:
        """The dense store of block (i, j); only entries in known rows or columns are meaningful."""
        return self.dense_store(i, j)
