"""Patterns as row ids into one table: detection's fast form for recordings of many tiny operations.

A function written element by element (`r[i] = x[i-1] - 2*x[i] + x[i+1]` in a loop) records tens of
thousands of operations on numbers and a chain of assignments to one array. A scipy matrix per
operation costs ~0.1 ms whatever its size, and each assignment copies every row of its array. Here a
pattern is a float64 array with one row id per element (exact integers): row r of the table holds the
sorted columns indices[indptr[r]:indptr[r + 1]], row 0 none. A move (indexing, assignment, joining)
runs on the row ids themselves and its result is the result's row ids; an elementwise operation
unions rows only where two arguments reach one element with different rows, in Python sets, each new
set interned once. A scipy pattern enters the table by copying its arrays; a pattern leaves it as a
canonical CSR matrix (sorted columns, no duplicates), what detection's scipy path makes.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import scipy.sparse as sp

__all__ = ["Rows", "RowTable", "SMALL", "gathered"]

SMALL = 16         # elements of a result whose unions are made one element at a time
UNION_LIMIT = 64   # elements of a larger result that may need a new row; beyond it the scipy path is faster


def gathered(starts: np.ndarray, counts: np.ndarray, indices: np.ndarray, width: int) -> sp.csr_array:
    """The boolean CSR matrix of `width` columns whose row k holds indices[starts[k]:starts[k] + counts[k]]:
    rows of a CSR pattern (or of the table) gathered, vectorised."""
    indptr = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    total = int(indptr[-1])
    if total:
        take = np.repeat(starts - indptr[:-1], counts) + np.arange(total, dtype=np.int64)
        cols = indices[take]
    else:
        cols = np.zeros(0, dtype=np.int64)
    return sp.csr_array((np.ones(total, bool), cols, indptr), shape=(starts.size, width))


class Rows:
    """A pattern in the table: `ids`, flat float64 row ids, one per element; its CSR form once made."""

    __slots__ = ("ids", "csr")

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids
        self.csr = None


class RowTable:
    def __init__(self, total: int) -> None:
        self.total = total
        self.indptr = np.zeros(1024, dtype=np.int64)   # row r < stored: indices[indptr[r]:indptr[r + 1]]
        self.indices = np.zeros(4096, dtype=np.int64)
        self.stored = 1                                # rows in the arrays (row 0: empty)
        self.count = 1                                 # rows, with those still only sets (pending)
        self.pending: list[frozenset] = []
        self.sets: dict[int, frozenset] = {0: frozenset()}
        self.known: dict[frozenset, int] = {frozenset(): 0}

    # -- growing ------------------------------------------------------------------------------------
    def add_set(self, cols: frozenset) -> int:
        """The id of the row holding `cols` (a set already in the table is not added again)."""
        r = self.known.get(cols)
        if r is None:
            r = self.count
            self.count = r + 1
            self.pending.append(cols)
            self.sets[r] = cols
            self.known[cols] = r
        return r

    def _append(self, lengths: np.ndarray, cols: np.ndarray) -> None:
        rows, entries = lengths.size, cols.size
        if self.stored + rows + 1 > self.indptr.size:
            self.indptr = np.concatenate([self.indptr, np.zeros(max(self.indptr.size, rows + 1), np.int64)])
        start = int(self.indptr[self.stored])
        if start + entries > self.indices.size:
            self.indices = np.concatenate([self.indices, np.zeros(max(self.indices.size, entries), np.int64)])
        self.indices[start:start + entries] = cols
        np.cumsum(lengths, out=self.indptr[self.stored + 1:self.stored + rows + 1])
        self.indptr[self.stored + 1:self.stored + rows + 1] += start
        self.stored += rows

    def _flush(self) -> None:
        """The pending sets into the arrays, all at once."""
        if self.pending:
            lengths = np.fromiter(map(len, self.pending), np.int64, len(self.pending))
            cols = np.fromiter(chain.from_iterable(map(sorted, self.pending)), np.int64, int(lengths.sum()))
            self.pending = []
            self._append(lengths, cols)

    def add_csr(self, p: sp.csr_array) -> Rows:
        """p's rows as new rows of the table (its empty rows as row 0)."""
        if not p.has_canonical_format:
            p = sp.csr_array(p, copy=True)
            p.sum_duplicates()
        self._flush()
        indptr = np.asarray(p.indptr, dtype=np.int64)
        lengths = np.diff(indptr)
        base = self.count
        self._append(lengths, np.asarray(p.indices[:indptr[-1]], dtype=np.int64))
        self.count = self.stored
        ids = np.arange(base, base + lengths.size, dtype=np.float64)
        ids[lengths == 0] = 0
        return Rows(ids)

    # -- reading ------------------------------------------------------------------------------------
    def set_of(self, r: int) -> frozenset:
        s = self.sets.get(r)
        if s is None:
            r = int(r)
            s = self.sets[r] = frozenset(self.indices[self.indptr[r]:self.indptr[r + 1]].tolist())
        return s

    def to_csr(self, rows: Rows) -> sp.csr_array:
        """The pattern as a canonical CSR matrix (one row per element)."""
        if rows.csr is None:
            self._flush()
            ids = rows.ids.astype(np.int64)
            starts = self.indptr[ids]
            csr = gathered(starts, self.indptr[ids + 1] - starts, self.indices, self.total)
            csr.has_canonical_format = True
            rows.csr = csr
        return rows.csr

    # -- unions -------------------------------------------------------------------------------------
    def union_one(self, ids: list) -> float:
        """The row id of the union of the rows `ids`."""
        first, merged = 0, None
        for r in ids:
            if r == 0 or r == first:
                continue
            if first == 0:
                first = r
            else:
                merged = (self.set_of(first) if merged is None else merged) | self.set_of(r)
        return first if merged is None else self.add_set(merged)

    def union(self, parts: list[np.ndarray], m: int) -> np.ndarray | None:
        """The union of the parts' rows element by element (each part: m row ids); None when more than
        UNION_LIMIT elements of a result larger than SMALL would need a new row."""
        if len(parts) == 1:
            return parts[0]
        if m <= SMALL:
            return np.array([self.union_one(ids) for ids in zip(*(p.tolist() for p in parts))], dtype=np.float64)
        out = parts[0]
        for q in parts[1:]:
            clash = np.flatnonzero((out != q) & (out != 0) & (q != 0))
            if clash.size > UNION_LIMIT:
                return None
            merged = np.maximum(out, q)  # (where one is 0, the other; where equal, either)
            for k in clash.tolist():
                merged[k] = self.add_set(self.set_of(out[k]) | self.set_of(q[k]))
            out = merged
        return out
