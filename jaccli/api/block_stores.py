"""The evaluator's cache of each block: a dense array, or a PartialStore of the rows and columns computed."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from jaccli.engine import KEPT_WHOLE, ROWS_COPIED, SparseBlock, offer_block, scatter_rows
from jaccli.errors import ResourceLimitError

# A block larger than this keeps only the rows and columns computed (a PartialStore) until all of
# it is asked for: a few rows of a 10^5 x 10^5 Jacobian need not reserve its 75 GiB.
DENSE_STORE_LIMIT = 2**30


# From this size on (bytes), a block of which a request asks a few lines (at most 1/_FEW of its rows or of its
# columns: J[:10] of a 1000 x 1000 block) keeps them in a PartialStore too, until more of it is asked for. Its
# dense cache would be reserved whole for them, and NumPy asks the kernel for huge pages for arrays from
# 4 MiB on: the first row written there may take a 2 MB page (issue 44, P5: the peak of 10 rows of a 1000 x
# 1000 block was 1.4 MB or 3.4 MB by where the cache fell, the rows' own 80 kB either way).
_FEW_LINES_FROM = 4 * 2**20
_FEW = 8

# From this size on (bytes), a block's dense cache is made with calloc's zeros (np.zeros): memory this large
# comes fresh from the system (glibc maps anything above 32 MiB), zero already, and its rows are offered to
# sweeps as zeros (_untouched: no fill). Below it, calloc would zero reused heap memory, a pass over the
# whole block before any row is written (a plain P2-n1000-m1000 call's 8 MB), so np.empty as before.
_CALLOC_FROM = 32 * 2**20
_TILE = 256  # rows and columns of a tile that copy_rows copies at once: 0.5 MB, in the cache


def copy_rows(store: np.ndarray, rows: np.ndarray, block: np.ndarray) -> None:
    """store[rows] = block, a sweep's result made apart; a column-ordered block (a vector's cotangent under
    ROWS_COPIED) into consecutive rows of a row-ordered store in square tiles: a plain copy reads the block
    a column apart for each element written (a 1667 x 10^4 chunk of loop-10000: 43 ms against 20)."""
    if block.ndim != 2 or store.ndim != 2 or block.flags.c_contiguous or not block.flags.f_contiguous \
            or not store.flags.c_contiguous or rows.size < 2 or not (np.diff(rows) == 1).all():
        store[rows] = block
        return
    into = store[rows[0]:rows[-1] + 1]
    for r in range(0, rows.size, _TILE):
        to, part = into[r:r + _TILE], block[r:r + _TILE]
        for c in range(0, block.shape[1], _TILE):
            to[:, c:c + _TILE] = part[:, c:c + _TILE]


def _reserve(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """Memory for a dense block (np.empty: pages are only taken as entries are written)."""
    return np.empty(shape, dtype=dtype)


class _Chunks:
    """Rows (or columns) of a block kept as the chunks the sweeps wrote, each position's chunk and place."""

    def __init__(self, size: int) -> None:
        # Position -> its chunk (-1: not known) and its place there, made at the first put: a lazy J's
        # rows of a 90000-column block never use the columns' maps, and 10 rows of it took 4 maps of
        # 720 KB written through every call (a fifth of a replayed call's time)
        self.size = size
        self._chunk: np.ndarray | None = None
        self._offset: np.ndarray | None = None
        self.data: list[np.ndarray | None] = []  # None: a chunk kept structured, made dense when first read
        self.structured: dict[int, tuple[SparseBlock, np.dtype]] = {}  # chunk -> its structured block, dtype

    @property
    def chunk(self) -> np.ndarray:
        if self._chunk is None:
            self._chunk = np.full(self.size, -1, dtype=np.intp)
        return self._chunk

    @property
    def offset(self) -> np.ndarray:
        if self._offset is None:  # (read only where chunk says a position is known: not zeroed)
            self._offset = np.empty(self.size, dtype=np.intp)
        return self._offset

    def known(self, positions: np.ndarray) -> np.ndarray:
        """Whether each of `positions` is known (a bool array of their shape)."""
        if self._chunk is None:
            return np.zeros(positions.shape, dtype=bool)
        return self._chunk[positions] >= 0

    def put(self, positions: np.ndarray, values: np.ndarray | None,
            structured: tuple[SparseBlock, np.dtype] | None = None) -> None:
        """The chunk of `positions`: its dense values, or None and `structured`, the structured block
        of its rows and their dtype (written dense only when something reads the chunk dense)."""
        self.chunk[positions] = len(self.data)
        self.offset[positions] = np.arange(positions.size)
        if structured is not None:
            self.structured[len(self.data)] = structured
        self.data.append(values)

    def dense(self, c: int) -> np.ndarray:
        """Chunk c's values, dense."""
        data = self.data[c]
        if data is None:
            block, dtype = self.structured[c]
            data = self.data[c] = np.zeros(block.shape, dtype)  # (calloc: what the entries leave untouched is free)
            scatter_rows(block, data, np.arange(block.shape[0]), zeroed=True)
        return data

    def last_written(self) -> np.ndarray:
        """The last chunk put, dense and this store's own to write into (a chunk kept structured is made dense, and
        read so from now on; a read-only one, copied): where the lines just put are made to agree with others."""
        c = len(self.data) - 1
        data = self.dense(c)
        self.structured.pop(c, None)
        if not data.flags.writeable:
            data = self.data[c] = data.copy()
        return data

    def whole_chunk(self, positions: np.ndarray) -> np.ndarray | None:
        """The dense values of the chunk that `positions` are, all of it in its order (the rows one sweep made,
        asked for as they were made); None otherwise, or where the chunk is kept structured."""
        if self._chunk is None or not positions.size:
            return None
        c = int(self._chunk[positions[0]])
        data = self.data[c] if c >= 0 else None
        return data if data is not None and self._all_of(c, data.shape[0], positions) else None

    def structured_chunk(self, positions: np.ndarray) -> tuple[SparseBlock, np.dtype] | None:
        """The structured block that a chunk was written from (and its dtype), when `positions` are
        exactly that chunk's, in its order (their values are then its rows as they are); else None."""
        if not self.structured or not positions.size:
            return None
        c = int(self.chunk[positions[0]])
        found = self.structured.get(c)
        return found if found is not None and self._all_of(c, found[0].shape[0], positions) else None

    def _all_of(self, c: int, size: int, positions: np.ndarray) -> bool:
        """Whether `positions` are all `size` positions of chunk c, in its order."""
        return positions.size == size and not (self._chunk[positions] != c).any() \
            and _unless_all(self.offset[positions], size) is None

    def take(self, positions: np.ndarray, other: np.ndarray | None, out: np.ndarray) -> np.ndarray:
        """out[k] = (value at positions[k])[..., other] for every k (other None: the whole value);
        each position must be known."""
        ids = self.chunk[positions]
        # (One chunk, as a few rows that one sweep made: no np.unique, whose first call imports numpy.ma, 0.5 MB.)
        chunks = ids[:1] if not ids.size or (ids == ids[0]).all() else np.unique(ids)
        for c in chunks:
            sel = ids == c if chunks.size > 1 else slice(None)  # (one chunk: no mask to select with)
            data, at = self.dense(c), self.offset[positions[sel]]
            value = data if _unless_all(at, data.shape[0]) is None else data[at]  # (the chunk as it is: no copy)
            out[sel] = value if other is None else value[..., other]
        return out

    def move_into(self, target: np.ndarray) -> None:
        """target[p] = value at p for every known position p; the chunks are let go."""
        for c in range(len(self.data)):  # (no data: no maps read, none made)
            where = np.flatnonzero(self.chunk == c)
            target[where] = self.dense(c)[self.offset[where]]
        self.data = []
        self.structured = {}


def _unless_all(positions: np.ndarray, size: int) -> np.ndarray | None:
    """positions, or None where they are 0..size-1 in order: a whole row (column) is then read as it
    is, not gathered entry by entry (10 rows of a 90000-column block: 36 ms gathered, 1 ms read)."""
    if positions.size != size or (size and (positions[0] != 0 or positions[-1] != size - 1)):
        return positions
    return None if increasing(positions) else positions


def increasing(positions: np.ndarray) -> bool:
    """Whether `positions` (1-D) are strictly increasing: in order, each once."""
    return positions.size < 2 or bool((positions[1:] > positions[:-1]).all())  # (np.all's wrapper: 2 us)


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

    def put_rows(self, rows: np.ndarray, values: Any) -> None:
        """values: (len(rows),) + lead + (N,), or None for rows of zeros; a structured block (SparseBlock) of
        len(rows) rows is kept as it is, and written into zeros through its parts when read (densified
        first, its entries took np.add.at)."""
        shape = (rows.size,) + self.lead + (self.shape[-1],)
        if type(values) is SparseBlock and not self.lead:
            self.rows.put(rows, None, (np.reshape(values, shape), self.dtype))
        else:
            self.rows.put(rows, np.zeros(shape, self.dtype) if values is None else
                          np.asarray(values, dtype=self.dtype).reshape(shape))
        self._keep_crossing(rows)

    def _keep_crossing(self, rows: np.ndarray) -> None:
        """The entries of the rows just put that columns known already gave keep those columns' values: a row
        (reverse) sweep and a column (forward) sweep round differently, and an entry handed out never changes
        (as Evaluator._keeping_known keeps them in a dense cache). Reads take a known row's own entries first,
        so a column put after a row needs nothing of the kind."""
        if self.cols._chunk is None:  # (no column known: no map of them made)
            return
        known = np.flatnonzero(self.cols._chunk >= 0)
        if not known.size:
            return
        data = self.rows.last_written()
        given = self.cols.take(known, rows, np.empty((known.size,) + self.lead + (rows.size,), dtype=self.dtype))
        data[..., known] = np.moveaxis(given, [0, -1], [-1, 0])

    def put_cols(self, cols: np.ndarray, values: np.ndarray | None) -> None:
        """values: (len(cols),) + lead + (M,), or None for columns of zeros."""
        shape = (cols.size,) + self.lead + (self.shape[-2],)
        self.cols.put(cols, np.zeros(shape, self.dtype) if values is None else
                      np.asarray(values, dtype=self.dtype).reshape(shape))

    def row_values(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """dense[..., rows, cols] of known rows, as (len(rows),) + lead + (len(cols),)."""
        other = _unless_all(cols, self.shape[-1])
        found = None if other is not None else self.rows.structured_chunk(rows)
        if found is not None:
            # Rows that a sweep gave structured (10 rows of a 90000-column stencil Jacobian, 60 entries):
            # written from their entries into zeros from calloc, where copying a dense chunk wrote
            # all of it (7.2 MB; 40% of such a call)
            out = np.zeros((rows.size,) + self.lead + (cols.size,), dtype=self.dtype)
            scatter_rows(found[0], out, np.arange(rows.size), zeroed=True)
            return out
        return self.rows.take(rows, other, np.empty((rows.size,) + self.lead + (cols.size,), dtype=self.dtype))

    def col_values(self, cols: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """dense[..., rows, cols] of known columns, as (len(cols),) + lead + (len(rows),)."""
        return self.cols.take(cols, _unless_all(rows, self.shape[-2]),
                              np.empty((cols.size,) + self.lead + (rows.size,), dtype=self.dtype))

    def take(self, rows: np.ndarray, cols: np.ndarray, fallback: Callable | None = None) -> np.ndarray:
        """dense[..., rows, :][..., cols]: from the known rows, else from the known columns
        (or `fallback(missing_rows, cols)`, giving lead + (len(missing_rows), len(cols)))."""
        whole = self.rows.whole_chunk(rows) if not self.lead and cols.size == self.shape[-1] else None
        if whole is not None and _unless_all(cols, cols.size) is None:
            return whole.copy()  # (the rows of a sweep, as it made them: J[:10]; the caller's own copy)
        out = np.empty(self.lead + (rows.size, cols.size), dtype=self.dtype)
        known = self.rows.known(rows)
        if known.all():  # (the rows' own values, without a second copy into out)
            return np.moveaxis(self.row_values(rows, cols), 0, -2)
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


class BlockStores:
    """The caches of an Evaluator's blocks, a dense array or a PartialStore per (output, input) block.

    Mixed into Evaluator, whose __init__ sets what these read: rec, batch, B, M, N, symmetric, the
    `store` dict and the `_dtypes` dict (and n_in, in_feat, row_done, col_done, _slab for the sweeps
    that write into a store: _swept_in_place, _kept_whole); `entries` and `kept` are the Evaluator's.
    """

    def _swept(self, run: Callable, i: int, rows: np.ndarray, whole_rows: bool, size: int) -> list:
        """run(i, rows), a sweep of `rows`; `whole_rows`: they are rows of a whole block swept in reverse,
        whose result the store may keep as it is made (_swept_in_place, _kept_whole)."""
        if whole_rows and rows.size < size:
            return self._swept_in_place(run, i, rows)
        if whole_rows and self.n_in == 1 and not self.batch and not self.symmetric:
            return self._kept_whole(run, i, rows)
        return run(i, rows)

    def _swept_in_place(self, run: Callable, i: int, rows: np.ndarray) -> list:
        """run(i, rows), a reverse sweep of some rows of a whole block swept in chunks, with the store's own
        rows offered as its result's memory (offer_block): where the sweep makes its result there, writing
        it is no copy. Only where nothing is known in those rows (no column either) and one result can take
        them: one input, no batch, no Hessian. A replay takes the offer in its usual sweep and its checked
        programs, not in the sweeps it traces or checks (Replayable.answer, block_memory.run_offered)."""
        if not (self.n_in == 1 and not self.batch and not self.symmetric
                and rows[-1] - rows[0] == rows.size - 1 and not self.col_done[0].any()):
            return run(i, rows)
        store = self.block_store(i, 0)
        if type(store) is not np.ndarray or not store.flags.c_contiguous:
            return run(i, rows)
        self._slab = store[rows[0]:rows[-1] + 1].reshape((rows.size,) + tuple(self.in_feat[0]))
        offer_block(self._slab, self._untouched(i, store, rows[0], rows[-1] + 1))
        ROWS_COPIED.v = True  # (a sweep that the offer is withdrawn from: its result is copied, copy_rows)
        try:
            return run(i, rows)
        finally:
            offer_block(None)
            ROWS_COPIED.v = None

    def _untouched(self, i: int, store: np.ndarray, start: int, stop: int) -> bool:
        """Whether rows start:stop of block (i, 0)'s dense cache `store` hold calloc's zeros, nothing written
        there yet; from here on they count as written (a sweep offered them may fail half way)."""
        clean = self._clean.get((i, 0))
        if clean is None or clean[0] is not store:
            return False
        zeroed = bool(clean[1][start:stop].all()) and not self.row_done[i][start:stop].any()
        clean[1][start:stop] = False
        return zeroed

    @staticmethod
    def _kept_whole(run: Callable, i: int, rows: np.ndarray) -> list:
        """run(i, rows), a reverse sweep of all rows of a block with one input, whose result becomes the block
        as it is (_write_rows adopts it, in any layout): the sweep may make it in column order (KEPT_WHOLE)."""
        KEPT_WHOLE.v = True
        try:
            return run(i, rows)
        finally:
            KEPT_WHOLE.v = None

    def dtype(self, i: int, j: int) -> np.dtype:
        dt = self._dtypes.get((i, j))
        if dt is None:
            dt = self._dtypes[(i, j)] = self.kept(("block dtype", i, j), self._block_dtype, i, j)
        return dt

    def _block_dtype(self, i: int, j: int) -> np.dtype:
        out_dt = np.result_type(self.rec.outputs[i])
        in_dt = np.result_type(self.rec.inputs[self.rec.wrt[j]])
        return np.result_type(out_dt, in_dt, np.float32)

    # Per block whose dense cache came from calloc (block_store): (that cache, which of its rows nothing wrote
    # yet). Those hold zeros: a sweep offered them makes its zero block there without a fill (_untouched).
    _clean: dict = {}
    # Blocks without a cache yet that a request asked a few lines of (asked_few): their cache is a PartialStore.
    _few: set = frozenset()

    def asked_few(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray) -> None:
        """A request for `rows` x `cols` of block (i, j), not all of it: where the block has no cache yet, is
        _FEW_LINES_FROM or more, and they are a few of its rows or columns, its cache will keep only them
        (Evaluator.ensure; a Hessian's of one input, whose rows are made to agree with the known ones as they
        are put: HessianEvaluator._agree_in_part)."""
        if (rows.size * _FEW <= self.M[i] or cols.size * _FEW <= self.N[j]) and (i, j) not in self.store \
                and self._nbytes(i, j) >= _FEW_LINES_FROM:
            if not self._few:
                self._few = set()  # (the instance's own, not the class's empty one)
            self._few.add((i, j))

    def block_store(self, i: int, j: int) -> np.ndarray | PartialStore:
        """Block (i, j)'s cache: a dense array, or a PartialStore for a block too large to reserve or of which
        a few lines were asked (asked_few)."""
        arr = self.store.get((i, j))
        if arr is None:
            shape = self._store_shape(i, j)
            if self._nbytes(i, j) > DENSE_STORE_LIMIT or (i, j) in self._few:
                arr = PartialStore(shape, self.dtype(i, j))
            else:
                try:
                    dtype = self.dtype(i, j)
                    if math.prod(shape) * dtype.itemsize < _CALLOC_FROM:
                        arr = _reserve(shape, dtype)  # (a zero fill there would cost a pass: see _CALLOC_FROM)
                    else:  # calloc's zeros, fresh pages: no memory is touched until rows are written
                        arr = np.zeros(shape, dtype)
                        if not self.batch:
                            if not self._clean:
                                self._clean = {}  # (the instance's own, not the class's empty one)
                            self._clean[(i, j)] = (arr, np.ones(shape[0], dtype=bool))
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
        return math.prod(self._store_shape(i, j)) * self.dtype(i, j).itemsize

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
