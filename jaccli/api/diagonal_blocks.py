"""Blocks the recording proves diagonal (elementwise functions): one forward sweep gives each."""

from __future__ import annotations

import numpy as np

from jaccli.engine import Recording, SparseBlock, dense

from .sweep_seeds import frozen


class DiagonalBlocks:
    """Blocks of an elementwise output, filled from their diagonals instead of row by row.

    Mixed into Evaluator, whose __init__ sets what these read: rec, batch, M, N, n_in, n_out, _plain,
    the `store` and the `_diagonals` dicts and the sweep counters; `dtype`, `kept`, `_write_rows`
    and `_write_cols` are the Evaluator's.
    """

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

    def diagonal(self, i: int, j: int, proven: bool = False, swept: list | None = None) -> np.ndarray | None:
        """The diagonal of block (i, j) when the recording proves the block diagonal, else None.

        Output i is then an elementwise function of input j (`Recording.elementwise`), so every
        entry off the diagonal is zero by structure, and one forward sweep with a tangent of ones
        gives all the others: row k's only entry is tangent[k]. A dense evaluation would take one
        seed per row. Computed once per block. `proven`: the block's route says it is diagonal
        (Evaluator._route asked is_diagonal once for the recording). `swept`: that sweep's results,
        already made (steady_blocks).
        """
        key = (i, j)
        if key in self._diagonals:
            return self._diagonals[key]
        d = None
        if proven or self.is_diagonal(i, j):
            # The same for a record_once recording and its replays: made once, read-only (no sweep
            # writes into its seeds).
            if swept is None:
                ones = _ones(self.rec, j) if self._plain else \
                    self.kept(("diagonal tangent", j), _read_only_ones, self.rec, j)
                t = self.rec.jvp([ones if w == j else None for w in range(self.n_in)])[i]
            else:
                t = None if swept[i] is None else dense(swept[i])
            if self.watch is not None:
                self.watch([t])
            self.counted("diagonal", 1)
            if t is not None:
                d = t.reshape(self.M[i]) if type(t) is np.ndarray else np.reshape(t, (self.M[i],))
        self._diagonals[key] = d
        return d

    def whole_diagonal(self, i: int, j: int, swept: object) -> np.ndarray | None:
        """Block (i, j) whole, its diagonal `swept` (its sweep's result: a plain array), where it is the only
        block of output i (one input) and nothing of it is known yet: what _ensure_diagonal does for every
        row, without its positions, its round of the blocks sharing the rows and its checks (a steady
        record_once call of P1-n100, steady_blocks); None where `swept` is none, the usual way then."""
        d = None if (i, j) in self._diagonals else swept_diagonal(swept, self.M[i])
        if d is None:
            return None
        store = diagonal_matrix(d, self.dtype(i, j))
        self.kept_diagonal(i, j, d, store)
        return store

    def kept_diagonal(self, i: int, j: int, d: np.ndarray, store: np.ndarray) -> None:
        """Block (i, j) known whole: `store`, made by diagonal_matrix from its diagonal `d`, one sweep's
        (whole_diagonal; a steady call's block before its evaluator, api/steady_calls.py)."""
        self.counted("diagonal", 1)
        self._diagonals[(i, j)] = d
        self.store[(i, j)] = store
        self.row_done[i][:] = True

    def _ensure_diagonal(self, i: int, j: int, rows: np.ndarray, cols: np.ndarray, swept: list | None = None) -> None:
        """Fill the wanted rows (or columns, when fewer) from diagonals, where diagonal_fill says they can be.
        `swept`: the results of block (i, j)'s diagonal sweep, already made (steady_blocks)."""
        by_rows = rows.size <= cols.size
        for a, b in self._sharing(i, j, by_rows):
            # (block (i, j) is diagonal: its route says so)
            d = self.diagonal(a, b, (a, b) == (i, j), swept if (a, b) == (i, j) else None)
            if d is not None and (a, b) not in self.store and (rows if by_rows else cols).size == d.size:
                self.store[(a, b)] = diagonal_matrix(d, self.dtype(a, b))  # (the whole block at once: np.asarray(J))
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


def swept_diagonal(swept: object, n: int) -> np.ndarray | None:
    """A diagonal sweep's result as the n-vector it is; None where it is not a plain array of n entries."""
    return swept.reshape(n) if type(swept) is np.ndarray and swept.size == n else None


def diagonal_matrix(d: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The n x n matrix of `dtype` with the vector `d` on its diagonal: zeros from calloc and one strided write."""
    n = d.size
    store = np.zeros((n, n), dtype=dtype)
    store.reshape(-1)[::n + 1] = d
    return store


def _ones(rec: Recording, j: int) -> np.ndarray:
    """A tangent of ones for differentiated input j of `rec`: one seed, in the input's dtype."""
    return np.ones((1,) + rec.in_shape(j), dtype=np.result_type(rec.inputs[rec.wrt[j]]))


def _read_only_ones(rec: Recording, j: int) -> np.ndarray:
    return frozen(_ones(rec, j))
