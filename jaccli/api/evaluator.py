"""The evaluator behind lazy Jacobians and Hessians: one recording, row and column caches, sweeps.

One `Evaluator` serves every block of one `jacobian`/`hessian` call. It owns the recording
(f evaluated once) and a cache per (output, input) block: a dense store plus masks of the
rows (output elements, from reverse sweeps) and columns (input elements, from forward
sweeps) already known. An entry is known when its row or its column is, and for Hessians
also when its mirror entry is (symmetry).
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

from jaccli.engine import MATRIX_PRODUCTS, Recording, SparseBlock, scatter_cols, scatter_rows, separable
from jaccli.errors import BatchMixingError, ResourceLimitError, UsageError
from jaccli.io.byte_sizes import parse_size

MODES = ("auto", "reverse", "forward")
DENSE_SEED_ELEMENTS = 16384
DEFAULT_MEMORY_BUDGET = 512 * 2**20
# A block larger than this keeps only the rows and columns computed (a PartialStore) until all of
# it is asked for: a few rows of a 10^5 x 10^5 Jacobian need not reserve its 75 GiB.
DENSE_STORE_LIMIT = 2**30


def default_memory_budget() -> int:
    """Bytes of working memory for one batch of sweeps (chunk_size="auto"): JACCLI_MEMORY_BUDGET, a
    size as --max-memory takes it (512MiB, 2G, bytes), else DEFAULT_MEMORY_BUDGET."""
    global _BUDGET
    text = os.environ.get("JACCLI_MEMORY_BUDGET", "")
    cached = _BUDGET  # one read: another thread may replace the pair meanwhile, never half of it
    if text == cached[0]:
        return cached[1]
    if not text.strip():
        budget = DEFAULT_MEMORY_BUDGET
    else:
        try:
            budget = parse_size(text)
        except ValueError as exc:
            raise UsageError(f"the environment variable JACCLI_MEMORY_BUDGET: {exc}") from None
    _BUDGET = (text, budget)
    return budget


_BUDGET: tuple = (None, None)  # the last JACCLI_MEMORY_BUDGET read, and its size


# Seeds of a whole block of up to so many rows (columns) are kept with the recording: making them
# again costs as much as a small sweep, and they are the same for every replay.
_KEPT_SEEDS = 4096


def _frozen(seed: Any) -> Any:
    for a in (seed,) if type(seed) is np.ndarray else (seed.idx, seed.val, seed.u, seed.v):
        if a is not None:
            a.flags.writeable = False
    return seed


def _prod(shape: Sequence[int]) -> int:
    return int(math.prod(shape))


def _unique(idx: np.ndarray, size: int) -> np.ndarray:
    """Sorted distinct indices in range(size): a mask is cheaper than np.unique for these."""
    if idx.size <= 1:
        return idx
    mask = np.zeros(size, dtype=bool)
    mask[idx] = True
    return np.flatnonzero(mask)


def _adoptable(arr: Any, dtype: np.dtype) -> bool:
    """Whether a sweep's result can become the cache itself (it owns writable, packed memory)."""
    return (isinstance(arr, np.ndarray) and arr.dtype == dtype and arr.flags.writeable
            and (arr.flags.c_contiguous or arr.flags.f_contiguous) and 0 not in arr.strides)


def _reserve(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Memory for a dense block (np.empty: pages are only taken as entries are written)."""
    return np.empty(shape, dtype=dtype)


class _Chunks:
    """Rows (or columns) of a block kept as the chunks the sweeps wrote, each position's chunk and place."""

    def __init__(self, size: int) -> None:
        self.chunk = np.full(size, -1, dtype=np.intp)
        self.offset = np.zeros(size, dtype=np.intp)
        self.data: list[np.ndarray] = []

    def put(self, positions: np.ndarray, values: np.ndarray) -> None:
        self.chunk[positions] = len(self.data)
        self.offset[positions] = np.arange(positions.size)
        self.data.append(values)

    def take(self, positions: np.ndarray, other: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out[k] = (value at positions[k])[..., other] for every k; each position must be known."""
        ids = self.chunk[positions]
        for c in np.unique(ids):
            sel = ids == c
            out[sel] = self.data[c][self.offset[positions[sel]]][..., other]
        return out

    def move_into(self, target: np.ndarray) -> None:
        """target[p] = value at p for every known position p; the chunks are let go."""
        for c, data in enumerate(self.data):
            where = np.flatnonzero(self.chunk == c)
            target[where] = data[self.offset[where]]
        self.data = []


class PartialStore:
    """The cache of a block too large to reserve densely: only the rows and columns computed.

    Its `shape` is the dense block's, (M, N) or (B, M, N). A row r (from a reverse sweep) is kept
    as the values of dense[..., r, :], a column c (from a forward sweep) as those of dense[..., c].
    """

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype
        *self.lead, m, n = shape
        self.lead = tuple(self.lead)
        self.rows = _Chunks(m)
        self.cols = _Chunks(n)

    def put_rows(self, rows: np.ndarray, values: np.ndarray | None) -> None:
        """values: (len(rows),) + lead + (N,), or None for rows of zeros."""
        shape = (rows.size,) + self.lead + (self.shape[-1],)
        self.rows.put(rows, np.zeros(shape, self.dtype) if values is None else
                      np.asarray(values, dtype=self.dtype).reshape(shape))

    def put_cols(self, cols: np.ndarray, values: np.ndarray | None) -> None:
        """values: (len(cols),) + lead + (M,), or None for columns of zeros."""
        shape = (cols.size,) + self.lead + (self.shape[-2],)
        self.cols.put(cols, np.zeros(shape, self.dtype) if values is None else
                      np.asarray(values, dtype=self.dtype).reshape(shape))

    def row_values(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """dense[..., rows, cols] of known rows, as (len(rows),) + lead + (len(cols),)."""
        return self.rows.take(rows, cols, np.empty((rows.size,) + self.lead + (cols.size,), dtype=self.dtype))

    def col_values(self, cols: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """dense[..., rows, cols] of known columns, as (len(cols),) + lead + (len(rows),)."""
        return self.cols.take(cols, rows, np.empty((cols.size,) + self.lead + (rows.size,), dtype=self.dtype))

    def take(self, rows: np.ndarray, cols: np.ndarray, fallback: Callable | None = None) -> np.ndarray:
        """dense[..., rows, :][..., cols]: from the known rows, else from the known columns
        (or `fallback(missing_rows, cols)`, giving lead + (len(missing_rows), len(cols)))."""
        out = np.empty(self.lead + (rows.size, cols.size), dtype=self.dtype)
        known = self.rows.chunk[rows] >= 0
        if known.any():
            out[..., known, :] = np.moveaxis(self.row_values(rows[known], cols), 0, -2)
        if not known.all():
            missing = rows[~known]
            out[..., ~known, :] = fallback(missing, cols) if fallback is not None else \
                np.moveaxis(self.col_values(cols, missing), 0, -1)
        return out

    def move_into(self, dense: np.ndarray) -> None:
        """Write every known row and column into `dense`, and let go of them."""
        self.cols.move_into(np.moveaxis(dense, -1, 0))  # views of dense, column (row) first
        self.rows.move_into(np.moveaxis(dense, -2, 0))


class Evaluator:
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
        self.n_out = len(rec.outputs)
        self.n_in = len(rec.wrt)
        if batch:
            self.B = rec.out_shape(0)[0] if rec.out_shape(0) else 1
        self.out_feat = [self._feat(rec.out_shape(i)) for i in range(self.n_out)]
        self.in_feat = [self._feat(rec.in_shape(j)) for j in range(self.n_in)]
        self.M = [_prod(s) for s in self.out_feat]
        self.N = [_prod(s) for s in self.in_feat]
        self.row_done = [np.zeros(m, dtype=bool) for m in self.M]
        self.col_done = [np.zeros(n, dtype=bool) for n in self.N]
        self.store: dict[tuple[int, int], np.ndarray] = {}
        self._dtypes: dict[tuple[int, int], np.dtype] = {}
        self.sweeps = 0
        self.seeds_used = 0
        self.batch_checked = False
        self._products: bool | None = None
        self._diagonals: dict[tuple[int, int], np.ndarray | None] = {}
        self.kinds: set[str] = set()  # the kinds of sweep run so far: "reverse", "forward", "diagonal"
        self.progress: Callable[[int, int], None] | None = None
        self.lock = threading.RLock()  # held by the lazy objects while they fill the caches

    def _feat(self, shape: tuple) -> tuple:
        return tuple(shape[1:]) if self.batch else tuple(shape)

    # -- storage -------------------------------------------------------------
    def dtype(self, i: int, j: int) -> np.dtype:
        dt = self._dtypes.get((i, j))
        if dt is None:
            out_dt = np.result_type(self.rec.outputs[i])
            in_dt = np.result_type(self.rec.inputs[self.rec.wrt[j]])
            dt = self._dtypes[(i, j)] = np.result_type(out_dt, in_dt, np.float32)
        return dt

    def block_store(self, i: int, j: int) -> np.ndarray | PartialStore:
        """Block (i, j)'s cache: a dense array, or a PartialStore for a block too large to reserve."""
        arr = self.store.get((i, j))
        if arr is None:
            shape = self._store_shape(i, j)
            if self._nbytes(i, j) > DENSE_STORE_LIMIT:
                arr = PartialStore(shape, self.dtype(i, j))
            else:
                try:
                    # np.empty touches no memory until rows are written, so a big lazy J costs little.
                    arr = _reserve(shape, self.dtype(i, j))
                except MemoryError:
                    arr = PartialStore(shape, self.dtype(i, j))
            self.store[(i, j)] = arr
        return arr

    def _zeros(self, i: int, j: int) -> bool:
        """Make block (i, j)'s cache dense zeros, about to be filled whole; False if it does not fit.

        np.zeros takes its pages from calloc: those a structured or zero result leaves untouched
        cost nothing, so a block of any size is dense here when one sweep covers all of it.
        """
        try:
            self.store[(i, j)] = np.zeros(self._store_shape(i, j), dtype=self.dtype(i, j))
        except MemoryError:
            return False
        return True

    def _store_shape(self, i: int, j: int) -> tuple:
        return ((self.B,) if self.batch else ()) + (self.M[i], self.N[j])

    def dense_store(self, i: int, j: int) -> np.ndarray:
        """Block (i, j)'s cache as a dense array (a PartialStore's known rows and columns moved into it)."""
        arr = self.store.get((i, j))
        if arr is not None and type(arr) is not PartialStore:
            return arr
        shape = self._store_shape(i, j)
        try:
            dense = _reserve(shape, self.dtype(i, j))
        except MemoryError:
            raise ResourceLimitError(
                f"the whole {'Hessian' if self.symmetric else 'Jacobian'} block is {shape} "
                f"({self._nbytes(i, j) / 2**30:.1f} GiB) and does not fit in memory; ask for some rows "
                "(J[a:b], --rows) or stream it to a .npy file (-o J.npy)") from None
        if arr is not None:
            arr.move_into(dense)
        self.store[(i, j)] = dense
        return dense

    def partial(self, i: int, j: int) -> bool:
        """Whether block (i, j) keeps only its known rows and columns (a PartialStore)."""
        return type(self.block_store(i, j)) is PartialStore

    def _whole_wanted(self, i: int, j: int) -> None:
        """All of block (i, j) is about to be computed: reserve a large one densely now, not row by row."""
        arr = self.store.get((i, j))
        if type(arr) is PartialStore or (arr is None and self.M[i] * self.N[j] * 16 > DENSE_STORE_LIMIT
                                         and self._nbytes(i, j) > DENSE_STORE_LIMIT):
            self.dense_store(i, j)

    def _nbytes(self, i: int, j: int) -> int:
        return _prod(self._store_shape(i, j)) * self.dtype(i, j).itemsize

    def take(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The known entries rows x cols of block (i, j): shape (len(rows), len(cols)), batched (B, ...)."""
        store = self.block_store(i, j)
        if type(store) is PartialStore:
            return store.take(rows, cols, self._fallback(i, j))
        store = self.entries(i, j)
        if self.batch:
            return store[:, rows][:, :, cols]
        return store[np.ix_(rows, cols)]

    def in_cache(self, i: int, j: int, arr: Any) -> bool:
        """Whether `arr` is (a view of) block (i, j)'s dense cache, which a caller must not get to write."""
        store = self.store.get((i, j))
        return type(store) is np.ndarray and isinstance(arr, np.ndarray) and np.shares_memory(arr, store)

    def take_points(self, i: int, j: int, rgrid: np.ndarray, cgrid: np.ndarray,
                    bgrid: np.ndarray | None = None) -> np.ndarray:
        """Entries (rgrid[k], cgrid[k]) (of sample bgrid[k] when batched), each of them known."""
        rows, r_at = np.unique(rgrid, return_inverse=True)
        cols, c_at = np.unique(cgrid, return_inverse=True)
        sub = self.take(i, j, rows, cols)
        r_at, c_at = r_at.reshape(np.shape(rgrid)), c_at.reshape(np.shape(cgrid))
        return sub[bgrid, r_at, c_at] if self.batch else sub[r_at, c_at]

    def _fallback(self, i: int, j: int) -> Callable | None:
        """For a PartialStore: where entries of rows it lacks come from (None: its own columns)."""
        return None

    # -- chunking --------------------------------------------------------------
    def chunk(self, needed: int, per_seed_elems: int) -> int:
        if isinstance(self.chunk_size, int):
            return max(1, min(self.chunk_size, needed))
        # One seed carries a block as large as the largest recorded value through the sweep;
        # a few such blocks are alive at once.
        largest = max(per_seed_elems, self.rec.trace.largest, max(self.M + self.N + [1]))
        per_seed = 8 * 4 * max(largest, 1)
        return max(1, min(needed, self.memory_budget // per_seed))

    # -- seeds -------------------------------------------------------------------
    def _row_seed(self, i: int, rows: np.ndarray, structured: bool = False) -> SparseBlock:
        def make(rows: np.ndarray) -> Any:
            dt = np.result_type(self.rec.outputs[i])
            return self._seed(rows, self.rec.out_shape(i), self.M[i], dt if dt.kind == "f" else np.dtype(np.float64),
                              structured)
        return self._kept_seed(("rows", i, structured), rows, self.M[i], make)

    def _col_seed(self, j: int, cols: np.ndarray, structured: bool = False) -> SparseBlock:
        def make(cols: np.ndarray) -> Any:
            return self._seed(cols, self.rec.in_shape(j), self.N[j], np.result_type(self.rec.inputs[self.rec.wrt[j]]),
                              structured)
        return self._kept_seed(("cols", j, structured), cols, self.N[j], make)

    def _seeds(self, seed_of: Callable, k: int, positions: np.ndarray, count: int) -> tuple[list, list | None]:
        """A sweep's seeds for elements `positions` of output (or input) k of `count`: the identity
        rows, and where they are dense (a small block) and the recording a replay, which may compile
        its sweeps, the same rows structured, for the compiled sweep (Recording._programmed)."""
        seed = seed_of(k, positions)
        alt = seed_of(k, positions, structured=True) if type(seed) is np.ndarray and self.rec.compiles() else None
        return ([seed if o == k else None for o in range(count)],
                None if alt is None else [alt if o == k else None for o in range(count)])

    def _kept_seed(self, what: tuple, positions: np.ndarray, size: int, make: Callable[[np.ndarray], Any]) -> Any:
        """make()'s seeds for `positions`; those of a whole block (up to _KEPT_SEEDS positions) made
        once per recording and kept with it, for its replays (a record_once function's calls),
        read-only: the shapes decide them, and no sweep writes into its seeds."""
        if positions.size != size or size > _KEPT_SEEDS:
            return make(positions)
        return self.rec.shared(what + (self.batch, self._has_products(), positions.tobytes()),
                               lambda: _frozen(make(positions.copy())))  # (a copy: the seed may view it)

    def _seed(self, positions: np.ndarray, shape: tuple, per_sample: int, dtype: Any, structured: bool = False) -> Any:
        """Identity seeds e_p for p in positions; batched: e_p in every sample at once.

        Structured (SparseBlock) seeds avoid dense identity blocks. A small block through a
        recording without matrix products is the exception: its dense arithmetic costs less than
        the structured bookkeeping (measured on the benchmark's n = 100 problems), while a matrix
        product gathers a few rows from a structured seed faster than it multiplies a dense one.
        `structured`: a structured block whatever its size (for a compiled sweep: see _seeds).
        """
        positions = np.asarray(positions, dtype=np.intp)
        if not structured and positions.size * _prod(shape) <= DENSE_SEED_ELEMENTS and not self._has_products():
            seed = np.zeros((positions.size, _prod(shape)), dtype=dtype)
            if self.batch:
                per_seed = positions[:, None] + per_sample * np.arange(self.B, dtype=np.intp)[None, :]
                seed[np.arange(positions.size)[:, None], per_seed] = 1.0
            else:
                seed[np.arange(positions.size), positions] = 1.0
            return seed.reshape((positions.size,) + tuple(shape))
        if self.batch:
            per_seed = positions[:, None] + per_sample * np.arange(self.B, dtype=np.intp)[None, :]
            return SparseBlock.one_hot(positions, shape, dtype, per_seed=per_seed)
        return SparseBlock.one_hot(positions, shape, dtype)

    def _has_products(self) -> bool:
        if self._products is None:
            self._products = self.rec.records(frozenset(p.name for p in MATRIX_PRODUCTS))
        return self._products

    # -- structure -----------------------------------------------------------------
    def is_diagonal(self, i: int, j: int) -> bool:
        """Whether the recording proves block (i, j) diagonal (structure only: no sweep)."""
        return not self.batch and self.M[i] == self.N[j] and self.rec.elementwise(i, j)

    def diagonal_fill(self, i: int, j: int, by_rows: bool) -> bool:
        """Whether rows of output i (by_rows) or columns of input j can come from diagonals alone.

        A row of output i is known for every input at once (a column of input j for every
        output), so each block sharing it must be diagonal too, or structurally zero.
        """
        return all(self.is_diagonal(a, b) or not self.rec.connected(a, b) for a, b in self._sharing(i, j, by_rows))

    def _sharing(self, i: int, j: int, by_rows: bool) -> list[tuple[int, int]]:
        """The blocks a row of output i (by_rows) or a column of input j fills at once."""
        return [(i, w) for w in range(self.n_in)] if by_rows else [(o, j) for o in range(self.n_out)]

    def diagonal(self, i: int, j: int) -> np.ndarray | None:
        """The diagonal of block (i, j) when the recording proves the block diagonal, else None.

        Output i is then an elementwise function of input j (`Recording.elementwise`), so every
        entry off the diagonal is zero by structure, and one forward sweep with a tangent of ones
        gives all the others: row k's only entry is tangent[k]. A dense evaluation would take one
        seed per row. Computed once per block.
        """
        key = (i, j)
        if key in self._diagonals:
            return self._diagonals[key]
        d = None
        if self.is_diagonal(i, j):
            shape = self.rec.in_shape(j)
            ones = np.ones((1,) + shape, dtype=np.result_type(self.rec.inputs[self.rec.wrt[j]]))
            t = self.rec.jvp([ones if w == j else None for w in range(self.n_in)])[i]
            self.sweeps += 1
            self.seeds_used += 1
            self.kinds.add("diagonal")
            if t is not None:
                d = np.reshape(t, (self.M[i],))
        self._diagonals[key] = d
        return d

    def _ensure_diagonal(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray) -> bool:
        """Fill the wanted rows (or columns, when fewer) from diagonals; False if that is not possible."""
        by_rows = rows.size <= cols.size
        if not self.diagonal_fill(i, j, by_rows):
            return False
        for a, b in self._sharing(i, j, by_rows):
            d = self.diagonal(a, b)
            if d is not None and (a, b) not in self.store and (rows if by_rows else cols).size == d.size:
                # The whole block at once (np.asarray(J)): zeros from calloc and one strided write.
                store = self.store[(a, b)] = np.zeros((d.size, d.size), dtype=self.dtype(a, b))
                store.reshape(-1)[::d.size + 1] = d
                continue
            if by_rows:
                self._write_rows(a, b, rows, None if d is None else
                                 SparseBlock((rows.size, self.N[b]), rows[:, None], d[rows][:, None]))
            else:
                self._write_cols(a, b, cols, None if d is None else
                                 SparseBlock((cols.size, self.M[a]), cols[:, None], d[cols][:, None]))
        if by_rows:
            self.row_done[i][rows] = True
        else:
            self.col_done[j][cols] = True
        return True

    # -- evaluation ----------------------------------------------------------------
    def ensure_rows(self, i: int, rows: np.ndarray) -> None:
        """Compute the missing rows (output elements) of output i by reverse sweeps."""
        def sweep(block: np.ndarray) -> list:
            seeds, alt = self._seeds(self._row_seed, i, block, self.n_out)
            return self.rec.vjp(seeds, structured=True, program_seeds=alt)
        self._sweep_blocks(rows, self.row_done[i], self.M[i], max(self.N + [1]), sweep,
                           lambda block, j, ct: self._keeping_known(i, j, block, True,
                                                                    lambda: self._write_rows(i, j, block, ct)),
                           "reverse")

    def _sweep_blocks(self, wanted: np.ndarray, done_mask: np.ndarray, size: int, other: int,
                      sweep: Callable, write: Callable, kind: str) -> None:
        """Run `sweep` over the missing entries of `wanted` in chunks, writing each result block."""
        whole = wanted.size == size and not done_mask.any()  # (wanted is then range(size): the callers' order)
        missing = wanted if whole else wanted[~done_mask[wanted]]
        if missing.size == 0:
            return
        self._check_batch()
        if missing.size != size:
            missing = _unique(missing, size)
        k = self.chunk(missing.size, other * (self.B if self.batch else 1))
        done = 0
        for start in range(0, missing.size, k):
            block = missing[start:start + k]
            results = sweep(block)
            self.kinds.add(kind)
            self.sweeps += 1
            self.seeds_used += block.size
            for other_index, value in enumerate(results):
                write(block, other_index, value)
            if whole and block.size == size:
                done_mask[:] = True
            else:
                done_mask[block] = True
            done += block.size
            if self.progress is not None:
                self.progress(done, missing.size)

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
            self.store[(i, j)].put_rows(rows, None if ct is None else np.asarray(ct))
        elif ct is None:
            self.block_store(i, j)[rows] = 0.0
        elif type(ct) is SparseBlock:
            scatter_rows(np.reshape(ct, (k, self.N[j])), self.block_store(i, j), rows)
        else:
            self.block_store(i, j)[rows] = np.reshape(ct, (k, self.N[j]))

    def ensure_cols(self, j: int, cols: np.ndarray) -> None:
        """Compute the missing columns (input elements) of input j by forward sweeps."""
        def sweep(block: np.ndarray) -> list:
            seeds, alt = self._seeds(self._col_seed, j, block, self.n_in)
            return self.rec.jvp(seeds, structured=True, program_seeds=alt)
        self._sweep_blocks(cols, self.col_done[j], self.N[j], max(self.M + [1]), sweep,
                           lambda block, i, t: self._keeping_known(i, j, block, False,
                                                                   lambda: self._write_cols(i, j, block, t)),
                           "forward")

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
        if rows.size == self.M[i] and cols.size == self.N[j]:
            self._whole_wanted(i, j)
        miss_r, miss_c = self._missing(i, j, rows, cols)
        if miss_r.size == 0 or miss_c.size == 0:
            return "cached"
        if mode == "auto" and self.is_diagonal(i, j) and self._ensure_diagonal(i, j, miss_r, miss_c):
            return "forward"
        if mode == "reverse" or (mode == "auto" and miss_r.size <= miss_c.size):
            self.ensure_rows(i, miss_r)
            return "reverse"
        self.ensure_cols(j, miss_c)
        return "forward"

    def _missing(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct rows of output i and columns of input j among `rows` and `cols` not yet known."""
        if rows.size == self.M[i] and cols.size == self.N[j] and not self.row_done[i].any() \
                and not self.col_done[j].any():
            return rows, cols  # a fresh whole block: nothing to look up
        miss_r = _unique(rows[~self.row_done[i][rows]], self.M[i]) if rows.size else rows
        miss_c = _unique(cols[~self.col_done[j][cols]], self.N[j]) if cols.size else cols
        return miss_r, miss_c

    def _check_batch(self) -> None:
        if self.batch and not self.batch_checked:
            # The recorded structure proves most functions sample-wise; the rest get a numeric probe.
            if not separable(self.rec.trace, self.B):
                check_batch_independence(self.rec, self.B)
            self.batch_checked = True

    def entries(self, i: int, j: int) -> np.ndarray:
        """The dense store of block (i, j); only entries in known rows or columns are meaningful."""
        return self.dense_store(i, j)


class HessianEvaluator(Evaluator):
    """An Evaluator over the recorded gradient, using the symmetry of second derivatives.

    Block (i, j) holds d grad_i / d x_j. A Hessian-vector product for element d of input a,
    by a forward sweep (forward-over-reverse) or a reverse sweep (reverse-over-reverse), gives
    row d of every block (a, .): both kinds of sweep fill rows, and a row d of block (a, b) is
    column d of block (b, a).
    """

    _keeps_crossing = False

    def __init__(self, rec: Recording, **kw: Any) -> None:
        super().__init__(rec, **kw)
        self.col_done = self.row_done  # one mask per input: which Hessian rows are known
        self._symmetric: set[tuple[int, int]] = set()  # blocks already made exactly symmetric
        self._agreed: set[tuple[int, int]] = set()  # blocks whose rows were made to agree as written
        self._unagreed: set[tuple[int, int]] = set()  # blocks with rows that were not

    def ensure(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray, mode: str | None = None) -> str:
        mode = mode or self.mode
        if rows.size == self.M[i] and cols.size == self.N[j]:
            self._whole_wanted(i, j)
            self._whole_wanted(j, i)
        miss_r, miss_c = self._missing(i, j, rows, cols)  # col_done is row_done: known Hessian rows
        if miss_r.size == 0 or miss_c.size == 0:
            return "cached"
        a, need = (i, miss_r) if miss_r.size <= miss_c.size else (j, miss_c)
        if mode == "reverse":
            self.ensure_rows(a, need)
            return "reverse"
        self.ensure_cols(a, need)
        return "forward"

    def _write_cols(self, i: int, j: int, cols: np.ndarray, t: Any) -> None:
        # Column c of d grad_i / d x_j is row c of d grad_j / d x_i.
        self._write_rows(j, i, cols, t)

    def _write_rows(self, i: int, j: int, rows: np.ndarray, ct: Any) -> None:
        n = self.M[i]
        if (i == j and not self.batch and type(ct) is SparseBlock and rows.size == n
                and (i, j) not in self.store):
            # A whole diagonal block in one structured sweep: a banded or otherwise sparse Hessian
            # (entries only), or entries plus a low-rank part (diag(p) - p p^T of a softmax).
            # Symmetrise the structure itself, and never average over the dense matrix.
            self.store[(i, j)] = _symmetric_from_structure(np.reshape(ct, (n, n)), rows, self.dtype(i, j))
            self._symmetric.add((i, j))
            return
        super()._write_rows(i, j, rows, ct)
        if type(self.store.get((i, j))) is np.ndarray:
            self._agree_with_known(i, j, rows)
        else:  # a PartialStore's rows: averaged once all rows are known
            self._unagreed.add((i, j))

    def _agree_with_known(self, i: int, j: int, rows: np.ndarray) -> None:
        """Make the rows just written agree with the entries known before, so that none changes.

        Entry (r, c) of a new row takes the value its mirror (c, r) has when row c is already
        known (it may have been handed out); the pairs among the new rows of a diagonal block
        are averaged (nobody has seen them yet). The block stays exactly symmetric where known.
        """
        store = self.store[(i, j)]  # writable, as every cache (_adoptable)
        mirror = self.store.get((j, i))
        known = np.flatnonzero(self.row_done[j])
        each = (slice(None),) * self.batch  # per-sample blocks: the same for every sample
        if known.size and type(mirror) is np.ndarray:
            store[each + np.ix_(rows, known)] = np.swapaxes(mirror[each + np.ix_(known, rows)], -1, -2)
        if i == j:
            if rows.size == self.M[i] and not known.size:
                self._symmetrize(i, i)  # the whole block in this sweep
                return
            block = store[each + np.ix_(rows, rows)]
            store[each + np.ix_(rows, rows)] = 0.5 * (block + np.swapaxes(block, -1, -2))
        self._agreed.add((i, j))

    def _fallback(self, i: int, j: int) -> Callable:
        """Row r of block (i, j) that no sweep of its own gave is column r of the mirror's known rows."""
        def from_mirror(missing: np.ndarray, cols: np.ndarray) -> np.ndarray:
            mirror = self.block_store(j, i)
            if type(mirror) is PartialStore:
                return np.moveaxis(mirror.row_values(cols, missing), 0, -1)
            return np.swapaxes(mirror[..., cols, :][..., missing], -1, -2)
        return from_mirror

    def _symmetrize(self, i: int, j: int) -> None:
        """Once every row is known, make H exactly symmetric: rounding in the sweeps is averaged out."""
        done = self._symmetric
        if (i, j) in done:
            return
        if {(i, j), (j, i)} <= self._agreed and not {(i, j), (j, i)} & self._unagreed:
            done.update({(i, j), (j, i)})  # every pair already holds one value: nothing to average
            return
        a, b = self.dense_store(i, j), self.dense_store(j, i)
        if i == j and not self.batch and a.shape[0] >= _TILED_SYMMETRIZE and a.flags.writeable:
            _symmetrize_in_place(a)
        else:
            t = (lambda m: np.swapaxes(m, 1, 2)) if self.batch else (lambda m: m.T)
            mean = 0.5 * (a + t(b))
            self.store[(i, j)] = mean
            if i != j:
                self.store[(j, i)] = np.ascontiguousarray(t(mean))
        done.update({(i, j), (j, i)})

    def entries(self, i: int, j: int) -> np.ndarray:
        store = self.dense_store(i, j)
        rows_known, cols_known = self.row_done[i], self.row_done[j]
        if rows_known.all() and cols_known.all():
            self._symmetrize(i, j)
            return self.store[(i, j)]
        if rows_known.all() or not cols_known.any():
            return store
        fill = ~rows_known
        mirror = self.dense_store(j, i)
        if self.batch:
            store[np.ix_(np.arange(self.B), fill, cols_known)] = \
                np.swapaxes(mirror[np.ix_(np.arange(self.B), cols_known, fill)], 1, 2)
        else:
            store[np.ix_(fill, cols_known)] = mirror[np.ix_(cols_known, fill)].T
        return store


# From this order on, symmetrise in place tile by tile. Measured against the plain mean: 4.7x faster
# at 2000 and 6.3x at 2048 (cache), and at 500 the whole P6 Hessian 2.2 -> 1.4 ms, because the two
# fresh n*n temporaries of the mean are page-faulted in anew on every call; below about 300 the
# plain mean is 2% faster.
_TILED_SYMMETRIZE = 384
# Tile edge for symmetrising. Not a power of two: transposing a tile whose rows are 2^k bytes apart
# maps them onto a few cache sets. Measured (in place, n = 500 / 1024 / 2048): 128 -> 310 / 1912 /
# 7573 us, 100 -> 267 / 1661 / 6493 us; a structured strip at n = 500: 128 -> 454, 100 -> 223 us.
_TILE = 100


def _symmetrize_in_place(a: np.ndarray) -> None:
    """a = (a + a.T) / 2 in place, one pair of cache-sized tiles at a time.

    The plain expression reads a.T with a stride of a whole row, which misses the cache on
    every element once a row no longer fits; a pair of tiles does fit.
    """
    n = a.shape[0]
    for lo in range(0, n, _TILE):
        hi = min(lo + _TILE, n)
        d = a[lo:hi, lo:hi]
        d[...] = 0.5 * (d + d.T)
        for lo2 in range(hi, n, _TILE):
            hi2 = min(lo2 + _TILE, n)
            upper, lower = a[lo:hi, lo2:hi2], a[lo2:hi2, lo:hi]
            mean = 0.5 * (upper + lower.T)
            upper[...] = mean
            lower[...] = mean.T


def _symmetric_from_structure(block: SparseBlock, rows: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The exactly symmetric (H + H^T) / 2 of the n x n matrix H whose row rows[k] is block's seed k.

    The low-rank part U V (row rows[k] of U is u[k]) becomes (U V + V^T U^T) / 2: one outer product
    when it is symmetric already (`_symmetric_outer`), else tiled (`_symmetric_low_rank`). The
    entries are added symmetrically on top (see _symmetric_entries).
    """
    n = rows.size
    in_order = bool((rows[1:] > rows[:-1]).all())  # rows holds each of 0..n-1 once: in order, they are 0..n-1
    if block.u is None:
        out = np.zeros((n, n), dtype=dtype)
    else:
        rank = block.rank
        if in_order:
            u = block.u.astype(dtype, copy=False)
        else:
            u = np.zeros((n, rank), dtype=dtype)
            u[rows] = block.u
        v = block.v.reshape(rank, n).astype(dtype, copy=False)
        out = _symmetric_outer(u, v) if rank == 1 else None
        if out is None:
            out = _symmetric_low_rank(u, v)
    entries = _symmetric_entries(block, rows)
    if entries is None:
        return out
    r, c, sym = entries
    if r is c:  # on the diagonal only: its strided view takes them in one pass, in place
        diagonal = np.einsum("ii->i", out)  # a writable view of the diagonal, whatever out's layout
        if in_order:
            diagonal += sym
        else:
            diagonal[r] += sym  # r holds each row once
        return out
    if block.u is not None:
        sym = out[r, c] + sym  # out is exactly symmetric, so out[c, r] gets the same number
    out[r, c] = sym
    out[c, r] = sym
    return out


def _symmetric_low_rank(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(U V + V^T U^T) / 2 for an n x r U and an r x n V, exactly symmetric.

    Computed as the product [U, V^T] [V; U^T] / 2 a strip of rows at a time: right of the diagonal
    it is written straight into the result and copied, transposed, below the diagonal; a diagonal
    tile D is the product with a quarter instead of a half, so that D + D^T is its mean with its
    transpose in one pass (scaling by powers of two is exact). No pass over the whole dense matrix.
    """
    n = u.shape[0]
    left = np.concatenate([u, v.T], axis=1)
    left *= 0.5
    quarter = left * 0.5
    right = np.concatenate([v, u.T], axis=0)
    out = np.empty((n, n), dtype=u.dtype)
    buf = np.empty((min(_TILE, n),) * 2, dtype=u.dtype)
    for lo in range(0, n, _TILE):
        hi = min(lo + _TILE, n)
        w = hi - lo
        d = np.matmul(quarter[lo:hi], right[:, lo:hi], out=buf[:w, :w])
        np.add(d, d.T, out=out[lo:hi, lo:hi])
        if hi < n:
            strip = np.matmul(left[lo:hi], right[:, hi:], out=out[lo:hi, hi:])
            out[hi:, lo:hi] = strip.T
    return out


def _symmetric_outer(u: np.ndarray, v: np.ndarray) -> np.ndarray | None:
    """u v (an n x 1 times a 1 x n), to rounding, when it is symmetric in exact arithmetic: u = c v^T
    entry for entry (the Hessian of a softmax or logsumexp: c p p^T); else None.

    It is then sigma w w^T with w = sqrt(|c|) v and sigma the sign of c. Each entry is the product
    of two entries of w, the same number in (i, j) and (j, i), so one pass gives an exactly
    symmetric result with no mean of the two triangles (P6's Hessian, n = 500: the assembly took
    240 us tiled, 190 us so). einsum forms each entry as one product whatever the BLAS (a matrix
    product of inner size 1 may go through NumPy's own slow loop).
    """
    u, v = u[:, 0], v[0]
    if v.size == 0:
        return None
    first = int((v != 0).argmax())  # the first nonzero entry (argmax returns the first True)
    if v[first] == 0:
        return None
    with np.errstate(all="ignore"):
        c = u[first] / v[first]
        if not np.array_equal(u, c * v):  # (a NaN c, from an infinite v, is never equal)
            return None
        w = np.sqrt(abs(c)) * v
    return np.einsum("i,j->ij", -w if c < 0 else w, w)


def _symmetric_entries(block: SparseBlock, rows: np.ndarray) -> tuple | None:
    """Positions (r, c) and values of the exactly symmetric (E + E^T) / 2 of block's entries, or None.

    Row rows[k] of E holds block's entries k. Repeated positions are summed first, so entry (r, c)
    and its mirror (c, r) are each one number, and both positions get the same 0.5 * (e_rc + e_cr).
    """
    n = rows.size
    if block.idx.size == 0:
        return None
    if block.idx.shape[1] == 1 and (block.idx[:, 0] == rows).all():
        # On the diagonal only (distinct rows): symmetric as it is. (The same array twice says so.)
        return rows, rows, block.val[:, 0]
    r = np.repeat(rows.astype(np.int64), block.idx.shape[1])
    key = r * n + block.idx.reshape(-1)
    order = np.argsort(key, kind="stable")
    key = key[order]
    keys, first = np.unique(key, return_index=True)
    sums = np.add.reduceat(block.val.reshape(-1)[order], first)
    mirror = (keys % n) * n + keys // n
    at = np.minimum(np.searchsorted(keys, mirror), keys.size - 1)
    sym = 0.5 * (sums + np.where(keys[at] == mirror, sums[at], 0.0))
    return keys // n, keys % n, sym


def check_batch_independence(rec: Recording, B: int) -> None:
    """Raise if some sample's outputs depend on another sample's inputs.

    Uses one forward sweep over the recording with 2*ceil(log2 B) tangents: for each bit of the
    sample index, perturb the samples whose bit is 0 (then 1) and require the other samples'
    outputs to stay exactly unchanged. Any pair of distinct samples differs in some bit, so any
    coupling that is present at this point is caught.
    """
    if B <= 1:
        return
    bits = max(1, math.ceil(math.log2(B)))
    sample = np.arange(B)
    rng = np.random.default_rng(0)
    for j in range(len(rec.wrt)):
        shape = rec.in_shape(j)
        if not shape or shape[0] != B:
            raise BatchMixingError(
                f"batch_axis=0 needs every differentiated input to have the batch size {B} on axis 0, "
                f"but input {j} has shape {shape}")
        on = ((sample[None, :] >> np.arange(bits)[:, None]) & 1).astype(bool)
        masks = np.stack([on, ~on], axis=1).reshape(2 * bits, B)  # bit 0 on, bit 0 off, bit 1 on, ...
        k = len(masks)
        # A random scale per sample times a random direction over the features: any coupling of
        # two samples shows up (a cancellation would need these random numbers to conspire), at
        # the cost of two small random vectors instead of a full random block.
        scale = rng.uniform(0.5, 1.5, size=B) * masks
        direction = rng.uniform(0.5, 1.5, size=shape[1:])
        t = scale.reshape((k, B) + (1,) * (len(shape) - 1)) * direction
        outs = rec.jvp([t if w == j else None for w in range(len(rec.wrt))])
        for i, o in enumerate(outs):
            if o is None:
                continue
            o = np.abs(np.reshape(np.asarray(o), (k, B, -1))).max(axis=2)
            leaked = np.where(masks, 0.0, o)
            hit = np.argwhere((leaked != 0.0) | np.isnan(leaked))
            if hit.size:
                _report_mixing(rec, i, j, int(hit[0, 1]), B)


def _report_mixing(rec: Recording, i: int, j: int, victim: int, B: int) -> None:
    """Name a sample whose input reaches output i of sample `victim` (one reverse sweep)."""
    seed = np.zeros((1,) + rec.out_shape(i))
    seed[0, victim] = 1.0
    ct = rec.vjp([seed if o == i else None for o in range(len(rec.outputs))])[j]
    reach = np.abs(np.reshape(np.asarray(ct), (B, -1))).max(axis=1) if ct is not None else np.zeros(B)
    others = [s for s in np.flatnonzero((reach != 0) | np.isnan(reach)) if s != victim]
    source = int(others[0]) if others else "another"
    raise BatchMixingError(
        f"batch_axis=0: the function mixes samples: output {i} of sample {victim} depends on input {j} of "
        f"sample {source}, so per-sample derivatives are not defined; compute the full Jacobian without "
        "batch_axis (Paddle would silently return summed cross-sample terms here)")
