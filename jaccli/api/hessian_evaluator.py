"""The evaluator behind lazy Hessians: the recorded gradient's rows, kept exactly symmetric.

A `HessianEvaluator` is an `Evaluator` (api/evaluator.py) over the recorded gradient whose rows and
columns are one set: a row d of block (a, b) is column d of block (b, a). Rows written after others
take the values their mirrors were handed out with; once every row is known, the block is made
exactly symmetric.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.engine import Recording, SparseBlock

from .block_stores import PartialStore
from .evaluator import Evaluator
from .hessian_symmetry import TILED_SYMMETRIZE, symmetric_from_structure, symmetrize_in_place


class HessianEvaluator(Evaluator):
    """An Evaluator over the recorded gradient, using the symmetry of second derivatives.

    Block (i, j) holds d grad_i / d x_j. A Hessian-vector product for element d of input a,
    by a forward sweep (forward-over-reverse) or a reverse sweep (reverse-over-reverse), gives
    row d of every block (a, .): both kinds of sweep fill rows, and a row d of block (a, b) is
    column d of block (b, a).
    """

    _keeps_crossing = False

    def __init__(self, rec: Recording, **kw: Any) -> None:
        super().__init__(rec, symmetric=True, **kw)
        self.col_done = self.row_done  # one mask per input: which Hessian rows are known
        self._symmetric: set[tuple[int, int]] = set()  # blocks already made exactly symmetric
        self._agreed: set[tuple[int, int]] = set()  # blocks whose rows were made to agree as written
        self._unagreed: set[tuple[int, int]] = set()  # blocks with rows that were not

    def ensure(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray, mode: str | None = None) -> str:
        mode = mode or self.mode
        if rows.size == self.M[i] and cols.size == self.N[j]:
            self._whole_wanted(i, j)
            self._whole_wanted(j, i)
            if not self.store and not self._plain:
                a, positions = (i, rows) if rows.size <= cols.size else (j, cols)
                route = "reverse" if mode == "reverse" else "forward"
                return self._whole_block(i, j, mode, route, a, positions,
                                         lambda: self._hessian_lines(i, j, rows, cols, mode))
        elif self.n_in == 1 and not self.batch:  # (a few rows of one input's block: made to agree as put)
            self.asked_few(i, j, rows, cols)
        return self._hessian_lines(i, j, rows, cols, mode)

    def _hessian_lines(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray, mode: str) -> str:
        """ensure()'s sweeps: the missing Hessian rows of input i (or of j, when fewer), each a sweep's line."""
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
            self.store[(i, j)] = symmetric_from_structure(np.reshape(ct, (n, n)), rows, self.dtype(i, j))
            self._symmetric.add((i, j))
            return
        super()._write_rows(i, j, rows, ct)
        store = self.store.get((i, j))
        if type(store) is np.ndarray:
            self._agree_with_known(i, j, rows)
        elif i == j and not self.batch:
            self._agree_in_part(store, i, rows)
        else:  # a PartialStore's rows: averaged once all rows are known
            self._unagreed.add((i, j))

    def _agree_in_part(self, store: PartialStore, i: int, rows: np.ndarray) -> None:
        """_agree_with_known for the rows just put into a diagonal block's PartialStore (its last chunk): entry
        (r, c) takes the value of (c, r) where row c was known before; the new rows' pairs are averaged."""
        data = store.rows.last_written()
        known = np.flatnonzero(self.row_done[i])  # (before these rows: counted once written, _took)
        if known.size:
            data[:, known] = store.row_values(known, rows).T
        pairs = data[:, rows]
        data[:, rows] = 0.5 * (pairs + pairs.T)
        self._agreed.add((i, i))

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
        if i == j and not self.batch and a.shape[0] >= TILED_SYMMETRIZE and a.flags.writeable:
            symmetrize_in_place(a)
        else:
            t = (lambda m: np.swapaxes(m, 1, 2)) if self.batch else (lambda m: m.T)
            mean = 0.5 * (a + t(b))
            self.store[(i, j)] = mean
            if i != j:
                self.store[(j, i)] = np.ascontiguousarray(t(mean))
        done.update({(i, j), (j, i)})

    def entries(self, i: int, j: int) -> np.ndarray:
        if (i, j) in self._symmetric:  # made exactly symmetric once every row was known: nothing to fill
            store = self.store.get((i, j))
            if type(store) is np.ndarray:
                return store
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
