"""Boolean sparsity patterns in the two index layouts the colourings read: rows of a column, columns of a row."""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


def as_pattern(pattern):
    """The structural nonzeros of a 2-D scipy.sparse array or matrix (or a dense array) as a canonical boolean CSR
    array: sorted indices, no duplicates, no stored zeros."""
    if not sp.issparse(pattern):
        pattern = np.asarray(pattern)
        if pattern.ndim != 2:
            raise ValueError(f"a sparsity pattern is 2-D, got shape {pattern.shape}")
    csr = sp.csr_array(pattern)
    csr = sp.csr_array((csr.data != 0, csr.indices, csr.indptr), shape=csr.shape)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr


@dataclass(frozen=True, eq=False)
class Bipartite:
    """A pattern as a bipartite graph: row_ptr/row_cols (CSR) and col_ptr/col_rows (CSC), int64 indices."""

    shape: tuple
    row_ptr: np.ndarray
    row_cols: np.ndarray
    col_ptr: np.ndarray
    col_rows: np.ndarray

    @classmethod
    def from_pattern(cls, pattern):
        csr = as_pattern(pattern)
        csc = csr.tocsc()
        csc.sort_indices()
        return cls(csr.shape, csr.indptr.astype(np.int64), csr.indices.astype(np.int64),
                   csc.indptr.astype(np.int64), csc.indices.astype(np.int64))

    def transpose(self):
        """The graph of the transposed pattern: rows and columns swap roles (row colouring = column colouring of it)."""
        return Bipartite(self.shape[::-1], self.col_ptr, self.col_rows, self.row_ptr, self.row_cols)

    @property
    def col_counts(self):
        return np.diff(self.col_ptr)

    @property
    def row_counts(self):
        return np.diff(self.row_ptr)

    def csr(self):
        data = np.ones(len(self.row_cols), dtype=bool)
        return sp.csr_array((data, self.row_cols, self.row_ptr), shape=self.shape)


def gather_segments(ptr, values, which):
    """values[ptr[k]:ptr[k+1]] for each k in `which`, concatenated, with the segment lengths: one vectorised gather."""
    starts = ptr[which]
    lengths = ptr[np.asarray(which) + 1] - starts
    total = int(lengths.sum())
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return values[offsets + np.arange(total)], lengths


def column_graph(bip):
    """The column-intersection graph (columns adjacent when they share a row) as a CSR array without its diagonal."""
    data = np.ones(len(bip.row_cols), dtype=bool)
    transposed = sp.csr_array((data, bip.col_rows, bip.col_ptr), shape=bip.shape[::-1])
    graph = sp.csr_array(transposed @ bip.csr())
    graph.setdiag(False)
    graph.eliminate_zeros()
    graph.sort_indices()
    return graph
