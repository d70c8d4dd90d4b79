"""Patterns as row ids into one table: detection's fast form for recordings of many tiny operations.

A function written element by element (`r[i] = x[i-1] - 2*x[i] + x[i+1]` in a loop) records tens of
thousands of operations on numbers and a chain of assignments to one array. A scipy matrix per
operation costs ~0.1 ms whatever its size, and each assignment copies every row of its array. Here a
pattern is an int64 array with one row id per element: row r of the table holds the sorted columns
indices[indptr[r]:indptr[r + 1]] (row 0: no column). Moving elements (indexing, assignment, joining)
then gathers ids, elementwise operations union rows only where two arguments reach one element with
different rows, and a Python set is made only for such unions (then interned once). A block of a scipy
pattern enters the table by copying its arrays; a pattern leaves it as a canonical CSR matrix (sorted
columns, no duplicates): what detection's scipy path makes, so both forms give one pattern.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["Rows", "RowTable"]

UNION_LIMIT = 64   # rows of one result that may need a union of sets; beyond it the scipy path is faster


class Rows:
    """A pattern in the table: `ids` (flat, int64), one row id per element; its CSR form kept once made."""

    __slots__ = ("ids", "csr")

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids
        self.csr = None


class RowTable:
    def __init__(self, total: int) -> None:
        self.total = total
        self.indptr = np.zeros(1024, dtype=np.int64)   # rows 0..count-1: indptr[r]..indptr[r + 1]
        self.indices = np.zeros(4096, dtype=np.int64)
        self.count = 1                                 # row 0: the empty row
        self.sets: dict[int, frozenset] = {0: frozenset()}
        self.known: dict[frozenset, int] = {frozenset(): 0}

    # -- growing ------------------------------------------------------------------------------------
    def _reserve(self, rows: int, entries: int) -> None:
        if self.count + rows + 1 > self.indptr.size:
            self.indptr = np.concatenate([self.indptr, np.zeros(max(self.indptr.size, rows + 1), np.int64)])
        end = int(self.indptr[self.count])
        if end + entries > self.indices.size:
            self.indices = np.concatenate([self.indices, np.zeros(max(self.indices.size, entries), np.int64)])

    def add_set(self, cols: frozenset) -> int:
        """The id of the row holding `cols` (a row already in the table is not added again)."""
        r = self.known.get(cols)
        if r is not None:
            return r
        self._reserve(1, len(cols))
        r = self.count
        start = int(self.indptr[r])
        self.indices[start:start + len(cols)] = sorted(cols)
        self.indptr[r + 1] = start + len(cols)
        self.count = r + 1
        self.sets[r] = cols
        self.known[cols] = r
        return r

    def add_csr(self, p: sp.csr_array) -> Rows:
        """p's rows as new rows of the table (its empty rows as row 0)."""
        if not p.has_canonical_format:
            p = sp.csr_array(p, copy=True)
            p.sum_duplicates()
        m = p.shape[0]
        indptr = np.asarray(p.indptr, dtype=np.int64)
        nnz = int(indptr[-1])
        self._reserve(m, nnz)
        base, start = self.count, int(self.indptr[self.count])
        self.indices[start:start + nnz] = p.indices[:nnz]
        self.indptr[base + 1:base + m + 1] = indptr[1:] + start
        self.count = base + m
        ids = np.arange(base, base + m, dtype=np.int64)
        ids[indptr[1:] == indptr[:-1]] = 0
        return Rows(ids)

    # -- reading ------------------------------------------------------------------------------------
    def set_of(self, r: int) -> frozenset:
        s = self.sets.get(r)
        if s is None:
            s = frozenset(self.indices[self.indptr[r]:self.indptr[r + 1]].tolist())
            self.sets[r] = s
        return s

    def row_of_csr(self, p: sp.csr_array, k: int) -> int:
        """The id of row k of the CSR pattern p (added when new)."""
        a, b = p.indptr[k], p.indptr[k + 1]
        return self.add_set(frozenset(p.indices[a:b].tolist())) if b > a else 0

    def to_csr(self, rows: Rows) -> sp.csr_array:
        """The pattern as a canonical CSR matrix (rows: one per element)."""
        if rows.csr is None:
            ids = rows.ids
            starts = self.indptr[ids]
            counts = self.indptr[ids + 1] - starts
            indptr = np.zeros(ids.size + 1, dtype=np.int64)
            np.cumsum(counts, out=indptr[1:])
            total = int(indptr[-1])
            if total:
                take = np.repeat(starts - indptr[:-1], counts) + np.arange(total, dtype=np.int64)
                indices = self.indices[take]
            else:
                indices = np.zeros(0, dtype=np.int64)
            csr = sp.csr_array((np.ones(total, bool), indices, indptr), shape=(ids.size, self.total))
            csr.has_canonical_format = True
            rows.csr = csr
        return rows.csr

    # -- unions -------------------------------------------------------------------------------------
    def union_small(self, parts: list[np.ndarray], m: int) -> np.ndarray:
        """Element k's row: the union of parts[j][k] over j (each part: m row ids), for m small."""
        lists = [p.tolist() for p in parts]
        out = []
        for k in range(m):
            first = 0
            merged = None
            for ids in lists:
                r = ids[k]
                if r == 0 or r == first:
                    continue
                if first == 0:
                    first = r
                elif merged is None:
                    merged = self.set_of(first) | self.set_of(r)
                else:
                    merged = merged | self.set_of(r)
            out.append(first if merged is None else self.add_set(merged))
        return np.array(out, dtype=np.int64)

    def union(self, parts: list[np.ndarray], m: int, small: int) -> np.ndarray | None:
        """The union of the parts' rows element by element; None when too many elements need a new row."""
        if len(parts) == 1:
            return parts[0]
        if m <= small:
            return self.union_small(parts, m)
        out = parts[0]
        for q in parts[1:]:
            clash = np.flatnonzero((out != 0) & (q != 0) & (out != q))
            if clash.size > UNION_LIMIT:
                return None
            merged = np.maximum(out, q)  # (where one is 0, the other; where equal, either)
            for k in clash.tolist():
                merged[k] = self.add_set(self.set_of(int(out[k])) | self.set_of(int(q[k])))
            out = merged
        return out
