"""Sparsity detection: the pattern of a Jacobian or Hessian, propagated through a recording of f.

Each recorded node gets a boolean pattern: a sparse matrix with one row per element of its value
and one column per element of the differentiated inputs, true where that element may depend on
that input element. Inputs start as identity blocks; each primitive's structure (declared beside
it, `jaccli.engine.structure`) says how its output's rows are made from its arguments' rows:
gathered (elementwise, moves), unioned over groups (reductions, scatters), along prefixes
(cumulative), through a constant's nonzeros (matrix products), or from everything (dense). The
pattern is global for the path f took: it stays valid when values move (both branches of `where`
and `maximum`, kinks included), never reads a derivative's value, and never builds an M x N dense
array. A Hessian's pattern is the Jacobian pattern of the recorded gradient (its reverse sweep is
recorded as primitives too), which is tighter than propagating pairs of input elements.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from jaccli.engine import Phase
from jaccli.engine import structure as st

from .rowtable import SMALL, Rows, RowTable, gathered

__all__ = ["Detected", "detect", "fingerprint"]


@dataclass
class Detected:
    """What detection found: one pattern per (output, input) pair and what made it coarser."""

    blocks: list[list[sp.csr_array]]          # [output][input], shape (out.size, in.size)
    dense_ops: list[tuple[str, Any]] = field(default_factory=list)   # (primitive name, user site)
    compared: list[tuple[str, Any]] = field(default_factory=list)    # traced values compared (branch points)


def _identity(size: int, offset: int, total: int) -> sp.csr_array:
    rows = np.arange(size + 1, dtype=np.int64)
    return sp.csr_array((np.ones(size, bool), np.arange(offset, offset + size, dtype=np.int64), rows),
                        shape=(size, total))


def _empty(rows: int, total: int) -> sp.csr_array:
    return sp.csr_array((rows, total), dtype=bool)


def _gather_rows(p: sp.csr_array, ids: np.ndarray) -> sp.csr_array:
    """Rows p[ids[k]] for each k, an empty row where ids[k] < 0; vectorised over the CSR arrays."""
    ids = np.asarray(ids, dtype=np.int64).ravel()
    if ids.size == p.shape[0] and (ids.size == 0 or (ids[0] == 0 and ids[-1] == ids.size - 1
                                                     and (np.diff(ids) == 1).all())):
        return p  # the same rows in the same order (a reshape, an elementwise op of one shape)
    valid = ids >= 0
    if p.shape[0] == 0 or not valid.any():
        return _empty(ids.size, p.shape[1])
    if p.nnz == p.shape[0] and (np.diff(p.indptr) == 1).all():
        # one entry per row (an input, or a move of one): gather the entries themselves
        cols = p.indices[np.where(valid, ids, 0)]
        keep = np.flatnonzero(valid)
        indptr = np.zeros(ids.size + 1, dtype=np.int64)
        np.cumsum(valid, out=indptr[1:])
        return sp.csr_array((np.ones(keep.size, bool), cols[keep], indptr), shape=(ids.size, p.shape[1]))
    safe = np.where(valid, ids, 0)
    starts = p.indptr[safe]
    return gathered(starts, np.where(valid, p.indptr[safe + 1] - starts, 0), p.indices, p.shape[1])


def _union(parts: list[sp.csr_array], rows: int, total: int) -> sp.csr_array:
    parts = [q for q in parts if q is not None and q.nnz]
    if not parts:
        return _empty(rows, total)
    out = parts[0]
    for q in parts[1:]:
        out = out + q
    out = sp.csr_array(out, dtype=bool)
    out.sum_duplicates()
    return out


def _grouped(p: sp.csr_array, group: np.ndarray, groups: int) -> sp.csr_array:
    """Row g of the result is the union of the rows k of p with group[k] == g (group < 0: dropped)."""
    group = np.asarray(group, dtype=np.int64).ravel()
    keep = group >= 0
    cols = np.flatnonzero(keep)
    g = sp.csr_array((np.ones(cols.size, np.int8), (group[keep], cols)), shape=(groups, p.shape[0]))
    out = g @ sp.csr_array(p, dtype=np.int8)
    out = sp.csr_array(out, dtype=bool)
    out.eliminate_zeros()
    return out


def _is_data(v: Any) -> bool:
    """A plain argument that holds values (which become zeros: no source), not positions or shapes."""
    return (isinstance(v, np.ndarray) and v.dtype.kind in "fc") or isinstance(v, (float, np.floating))


def _broadcast(pat: sp.csr_array, shape: tuple, to: tuple) -> sp.csr_array:
    """The rows of an argument's pattern broadcast from its shape to the result's."""
    return pat if shape == to else _gather_rows(pat, np.broadcast_to(_ids(shape), to))


def _size(v: Any) -> int:
    return int(np.size(v))


def _shape(v: Any) -> tuple:
    return v.shape if type(v) is np.ndarray else np.shape(v)


def _argument(node: Any, position: int, name: str) -> Any:
    """A recorded node's argument, given by position or (past the positional ones) by keyword."""
    return node.args[position] if position < len(node.args) else node.kwargs.get(name)


def _groups(shape: tuple, axes: Any) -> np.ndarray:
    """For each element of an array of `shape`, its group when reducing over `axes` (None: all)."""
    if axes is None:
        axes = tuple(range(len(shape)))
    elif not isinstance(axes, tuple):
        axes = (axes,)
    axes = tuple(a % len(shape) for a in axes) if shape else ()
    kept = tuple(1 if i in axes else n for i, n in enumerate(shape))
    return np.broadcast_to(_ids(kept), shape)


def _ids(shape: tuple) -> np.ndarray:
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)


def _rows_of(cols: np.ndarray, rows: int, total: int) -> sp.csr_array:
    """`rows` rows, each holding the columns `cols`."""
    return sp.csr_array((np.ones(rows * cols.size, bool), np.tile(cols, rows),
                         np.arange(rows + 1, dtype=np.int64) * cols.size), shape=(rows, total))


_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LOCAL_LIMIT = 20_000_000  # entries of a contraction's dense local pattern; beyond it: Dense


def _contraction(node: Any) -> tuple[tuple[str, ...], str]:
    """A product's einsum terms and result term (matmul's broadcasting written with '...')."""
    if node.prim.name == "np.einsum":
        return tuple(node.kwargs["spec"][0]), node.kwargs["spec"][1]
    a, b = (np.ndim(o) for o in node.args[:2])
    ta = "...ij" if a >= 2 else "j"
    tb = "...jk" if b >= 2 else "j"
    out = "..." + ("i" if a >= 2 else "") + ("k" if b >= 2 else "")
    return (ta, tb), out


def _local_pattern(node: Any, terms: tuple[str, ...], result: str, t: int) -> sp.csr_array | None:
    """Which elements of operand t each element of the product reaches: one einsum of the other
    operands' nonzero masks (all true where traced) with an identity over t; None when too large."""
    ops = node.args
    size = _size(ops[t])
    if _size(node.value) * size > _LOCAL_LIMIT:
        return None
    traced = {a for a, _, _ in node.parents}
    z = next(c for c in _LABELS if c not in "".join(terms) + result)
    masks = [np.ones(np.shape(o), bool) if k in traced else (np.asarray(o) != 0) for k, o in enumerate(ops)]
    masks[t] = np.eye(size, dtype=bool).reshape(np.shape(ops[t]) + (size,))
    spec = ",".join(terms[k] + (z if k == t else "") for k in range(len(ops))) + "->" + result + z
    local = np.einsum(spec, *masks).reshape(_size(node.value), size)
    return sp.csr_array(local.astype(np.int8))


_UNKNOWN = st.Dense()
_TABLED = ("elementwise", "moves")  # the structures the row table propagates
_ONE_SOURCE = ("assign", "np.concatenate")  # moves whose every element is one traced argument's, or none


class _Propagation:
    def __init__(self, rec: Any) -> None:
        self.rec = rec
        self.total = 0
        self.offsets: dict[int, tuple[int, int]] = {}
        for node in rec.in_nodes:
            size = _size(node.value)
            self.offsets[node.index] = (self.total, size)
            self.total += size
        self.pats: dict[int, Any] = {}
        self.dense_ops: list[tuple[str, Any]] = []
        self.table = RowTable(self.total)
        self.tabled: dict[int, tuple[sp.csr_array, Rows]] = {}  # id(CSR pattern): (it, its Rows)
        self.arrays: dict[tuple, np.ndarray] = {}  # shape: zeros (read-only), the blank of data

    # -- the two forms of a pattern ----------------------------------------------------------------
    def csr(self, pat: Any) -> sp.csr_array:
        return self.table.to_csr(pat) if type(pat) is Rows else pat

    def rows(self, pat: Any) -> Rows:
        if type(pat) is Rows:
            return pat
        hit = self.tabled.get(id(pat))
        if hit is None:
            hit = self.tabled[id(pat)] = (pat, self.table.add_csr(pat))
        return hit[1]

    def ids_of(self, pat: Any, shape: tuple) -> np.ndarray:
        """pat's row ids as an array of `shape` (a reduction over no element: none)."""
        if type(pat) is not Rows and pat.shape[0] == 0:
            return np.zeros(shape)
        return self.rows(pat).ids.reshape(shape)

    def zeros(self, shape: tuple) -> np.ndarray:
        z = self.arrays.get(shape)
        if z is None:
            z = self.arrays[shape] = np.zeros(shape)
            z.flags.writeable = False
        return z

    def tabled_pattern(self, node: Any, decl: Any) -> Any:
        """An elementwise operation's or a move's pattern in the row table; None when scipy's path is the
        one to take: a large result of scipy patterns only (a move), or of one (elementwise)."""
        value = node.value
        m = value.size if isinstance(value, (np.ndarray, np.generic)) else _size(value)
        raw = [(a, self.pats[p.index] if i is None else self.pats[p.index][i]) for a, p, i in node.parents]
        elementwise = decl.kind == "elementwise"
        if m > SMALL and ((elementwise and not all(type(pat) is Rows for _, pat in raw))
                          or not any(type(pat) is Rows for _, pat in raw)):
            return None
        args = node.args
        if elementwise:
            if m == 1:  # numbers: their rows' union
                return Rows(np.array([self.table.union_one([self.ids_of(pat, ()).item() for _, pat in raw])]))
            shape = _shape(value)
            parts = []
            for a, pat in raw:
                s = _shape(args[a])
                ids = self.ids_of(pat, s)
                parts.append(ids.ravel() if s == shape else np.broadcast_to(ids, shape).ravel())
        else:
            # a move run on the row ids themselves gives the result's row ids (constants: 0, no row);
            # each traced argument alone unless every element is one argument's
            traced = [a for a, _ in raw]
            blank = list(args)
            for b, v in enumerate(args):
                if b in traced or _is_data(v):
                    blank[b] = self.zeros(_shape(v))
            together = len(raw) == 1 or node.prim.name in _ONE_SOURCE
            parts = []
            for j, (a, pat) in enumerate(raw):
                moved = blank if together else list(blank)
                moved[a] = self.ids_of(pat, _shape(args[a]))
                if together and j < len(raw) - 1:
                    continue  # (the other arguments' ids first, then one run)
                parts.append(np.asarray(node.prim.impl(*moved, **node.kwargs), dtype=np.float64).ravel())
        ids = self.table.union(parts, m)
        if ids is None:
            return _union([self.table.to_csr(Rows(p)) for p in parts], m, self.total)
        return Rows(ids)

    # -- patterns of a node's arguments ----------------------------------------------------------
    def arg_pattern(self, node: Any, argnum: int) -> sp.csr_array | None:
        for a, parent, idx in node.parents:
            if a == argnum:
                pat = self.pats[parent.index]
                return self.csr(pat[idx] if idx is not None else pat)
        return None

    def traced_args(self, node: Any) -> list[tuple[int, sp.csr_array]]:
        out = []
        for a, parent, idx in node.parents:
            pat = self.pats[parent.index]
            out.append((a, self.csr(pat[idx] if idx is not None else pat)))
        return out

    # -- the structures ----------------------------------------------------------------------------
    def elementwise(self, node: Any, decl: st.Elementwise) -> sp.csr_array:
        shape = np.shape(node.value)
        parts = [_broadcast(pat, np.shape(node.args[a]), shape) for a, pat in self.traced_args(node)]
        return _union(parts, _size(node.value), self.total)

    def moves(self, node: Any, decl: st.Moves) -> sp.csr_array:
        # Each traced argument alone, as element ids + 1 (0: no source), the others as zeros: the
        # implementation itself says which element of it each output element is.
        traced = {b for b, _, _ in node.parents}
        blank = [np.zeros(np.shape(v)) if b in traced or _is_data(v) else v for b, v in enumerate(node.args)]
        parts = []
        for a, pat in self.traced_args(node):
            args = list(blank)
            args[a] = (_ids(np.shape(node.args[a])) + 1).astype(np.float64)
            moved = np.asarray(node.prim.impl(*args, **node.kwargs))
            parts.append(_gather_rows(pat, moved.astype(np.int64).ravel() - 1))
        return _union(parts, _size(node.value), self.total)

    def reduces(self, node: Any, decl: st.Reduces) -> sp.csr_array:
        x = node.args[decl.arg]
        shape = np.shape(x)
        group = _groups(shape, _argument(node, decl.axes_at, "axes"))
        parts = [_broadcast(pat, np.shape(node.args[a]), shape) for a, pat in self.traced_args(node)]
        src = _union(parts, int(np.prod(shape, dtype=np.int64)), self.total)
        return _grouped(src, group, int(group.max(initial=-1)) + 1)

    def normalizes(self, node: Any, decl: st.Normalizes) -> sp.csr_array:
        x = node.args[0]
        shape = np.shape(x)
        group = _groups(shape, _argument(node, decl.axes_at, "axes"))
        grouped = _grouped(self.arg_pattern(node, 0), group, int(group.max(initial=-1)) + 1)
        return _gather_rows(grouped, group.ravel())

    def cumulates(self, node: Any, decl: st.Cumulates) -> sp.csr_array:
        x = node.args[0]
        shape = np.shape(x)
        axis = _argument(node, decl.axis_at, "axis")
        pat = self.arg_pattern(node, 0)
        if axis is None:
            shape = (int(np.prod(shape, dtype=np.int64)),)
            axis = 0
        axis %= len(shape)
        ids = np.moveaxis(_ids(shape), axis, -1).reshape(-1, shape[axis])
        n = shape[axis]
        # lower triangle of each line: output (line, i) <- input (line, j), j <= i
        i, j = np.tril_indices(n)
        rows = ids[:, i].ravel()
        cols = ids[:, j].ravel()
        g = sp.csr_array((np.ones(rows.size, np.int8), (rows, cols)), shape=(ids.size, ids.size))
        out = sp.csr_array(g @ sp.csr_array(pat, dtype=np.int8), dtype=bool)
        out.eliminate_zeros()
        return out

    def scatters(self, node: Any, decl: st.Scatters) -> sp.csr_array:
        # scatter_add(v, flat, n): out[flat[k]] gathers v[k] (repeated positions add up)
        pat = self.arg_pattern(node, 0)
        flat = np.asarray(node.args[1], dtype=np.int64).ravel()
        lead = _size(node.value) // node.args[2]
        v_size = _size(node.args[0])
        per = v_size // max(lead, 1)
        group = (np.arange(lead, dtype=np.int64)[:, None] * node.args[2] + flat[None, :per]).ravel()
        return _grouped(pat, group, _size(node.value))

    def contracts(self, node: Any, decl: st.Contracts) -> sp.csr_array:
        if node.prim.name == "np.matmul" and 1 <= np.ndim(node.args[0]) <= 2 and 1 <= np.ndim(node.args[1]) <= 2:
            out = self.matrix_product(node)
        else:
            terms, result = _contraction(node)
            parts = []
            for a, pat in self.traced_args(node):
                local = _local_pattern(node, terms, result, a)
                if local is None:
                    return self.dense(node, decl)
                parts.append(sp.csr_array(local @ sp.csr_array(pat, dtype=np.int8), dtype=bool))
            out = _union(parts, _size(node.value), self.total)
        return out

    def matrix_product(self, node: Any) -> sp.csr_array:
        """a @ b of vectors and matrices: out (i, j) <- b (l, j) and a (i, l) for l where the other
        factor may be nonzero (a constant's nonzeros, or every l when both are traced)."""
        a, b = node.args[0], node.args[1]
        pa, pb = self.arg_pattern(node, 0), self.arg_pattern(node, 1)
        a2 = np.reshape(a, (1, -1)) if np.ndim(a) == 1 else a
        b2 = np.reshape(b, (-1, 1)) if np.ndim(b) == 1 else b
        m, p = a2.shape[0], b2.shape[1]
        parts = []
        if pb is not None:
            nz = sp.csr_array(np.ones(a2.shape, bool) if pa is not None else (a2 != 0))
            g = sp.kron(nz, sp.eye_array(p, format="csr"), format="csr")
            parts.append(sp.csr_array(sp.csr_array(g, dtype=np.int8) @ sp.csr_array(pb, dtype=np.int8), dtype=bool))
        if pa is not None:
            nz = sp.csr_array((np.ones(b2.shape, bool) if pb is not None else (b2 != 0)).T)
            g = sp.kron(sp.eye_array(m, format="csr"), nz, format="csr")
            parts.append(sp.csr_array(sp.csr_array(g, dtype=np.int8) @ sp.csr_array(pa, dtype=np.int8), dtype=bool))
        return _union(parts, _size(node.value), self.total)

    def dense(self, node: Any, decl: Any) -> Any:
        self.dense_ops.append((node.prim.name, node.site))
        cols = np.zeros(0, dtype=np.int64)
        for _, pat in self.traced_args(node):
            cols = np.union1d(cols, pat.indices)
        values = node.value if node.prim.multi_out else (node.value,)
        outs = tuple(_rows_of(cols, _size(v), self.total) for v in values)
        return outs if node.prim.multi_out else outs[0]

    def run(self) -> None:
        with Phase("sparsity detection (operations)", len(self.rec.trace.nodes)) as progress:
            for node in self.rec.trace.nodes:
                self._propagate(node)
                progress.advance(1)

    def _propagate(self, node: Any) -> None:
        if node.index in self.offsets:
            off, size = self.offsets[node.index]
            self.pats[node.index] = _identity(size, off, self.total)
        elif not node.parents:
            self.pats[node.index] = self.empty_like(node)
        else:
            decl = st.structure_of(node.prim) or _UNKNOWN  # (no structure: taken as dense, and reported)
            pat = None
            if decl.kind in _TABLED and not node.prim.multi_out:
                pat = self.tabled_pattern(node, decl)
            if pat is None:
                pat = getattr(self, decl.kind)(node, decl)
            if node.prim.multi_out and not isinstance(pat, tuple):  # (logsumexp's value and sign)
                pat = tuple(pat if _size(v) == pat.shape[0] else _rows_of(np.unique(pat.indices), _size(v), self.total)
                            for v in node.value)
            self.pats[node.index] = pat

    def constant(self, node: Any, decl: Any) -> Any:
        return self.empty_like(node)

    def empty_like(self, node: Any) -> Any:
        if node.prim.multi_out:
            return tuple(_empty(_size(v), self.total) for v in node.value)
        return _empty(_size(node.value), self.total)


def detect(rec: Any) -> Detected:
    """Patterns of every output of the recording `rec` with respect to each differentiated input."""
    prop = _Propagation(rec)
    prop.run()
    blocks = []
    for ref, value in zip(rec.out_refs, rec.outputs):
        row = []
        if ref is None:
            pat = _empty(_size(value), prop.total)
        else:
            pat = prop.pats[ref[0].index]
            if ref[1] is not None:
                pat = pat[ref[1]]
            pat = prop.csr(pat)
        pat = sp.csr_array(pat)
        for node in rec.in_nodes:
            off, size = prop.offsets[node.index]
            row.append(sp.csr_array(pat[:, off:off + size]))
        blocks.append(row)
    compared = [(name, site) for _, name, site in rec.trace.cuts]
    return Detected(blocks, prop.dense_ops, compared)


def fingerprint(rec: Any) -> str:
    """A digest of what the pattern depends on: each node's primitive, shape and parents, its plain
    arguments (positions, shapes, axes), and where plain values are data, only which are nonzero
    (a matrix product's constant). Two recordings with one fingerprint have one pattern."""
    h = hashlib.blake2b(digest_size=16)
    for node in rec.trace.nodes:
        h.update(f"{node.prim.name}|{np.shape(node.value) if not node.prim.multi_out else len(node.value)}|"
                 f"{[(a, p.index, i) for a, p, i in node.parents]}|{sorted(node.kwargs)}".encode())
        traced = {a for a, _, _ in node.parents}
        made = node.prim.constant  # (zeros_like and the like: a new array whatever the values they read, x's too)
        for b, v in enumerate(node.args):
            if b in traced:
                continue
            if isinstance(v, np.ndarray):
                h.update(f"{v.shape}{v.dtype.str}".encode())
                if not made:
                    h.update(np.ascontiguousarray(v != 0 if v.dtype.kind in "fc" else v).tobytes())
            elif not isinstance(v, (float, np.floating)):
                h.update(repr(v).encode())
        for key in sorted(node.kwargs):
            v = node.kwargs[key]
            h.update((key + ("" if isinstance(v, (float, np.floating, np.ndarray)) else repr(v))).encode())
    h.update(repr([(n.index, np.shape(n.value)) for n in rec.in_nodes]).encode())
    h.update(repr([None if r is None else (r[0].index, r[1]) for r in rec.out_refs]).encode())
    return h.hexdigest()
