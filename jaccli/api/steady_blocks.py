"""A record_once call's whole block, or its lazy rows, at its steady state: the compiled sweep that made them, again.

A steady call of a `record_once` function at a new point (``np.asarray(jaccli.jacobian(g, x))``)
asks its fresh evaluator for a whole block, which takes the route its recording decided (the
diagonal, rows or columns), makes the identity seeds (kept), sweeps them through the replay,
and has the replay find the request's compiled program (replay.Replayable.answer). All of that
gives the same request every time: so the first whole block that one checked program gave is
kept with the recording (`Steady`: the route, the line it filled, the program and its seeds),
and later calls run that program straight away (Replayable.rerun) and write its results the way
the route does. Where its guard fails, f's rules are watched (diagnostics), progress is shown,
or the sweeps go elsewhere (Dask), the block takes its usual route, which decides everything again.
Some rows of a fresh evaluator's block (``J[:10]``) are kept so too, per request (_some_rows).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from jaccli.engine import Recording, SparseBlock, current_observer

from .block_stores import _unless_all, increasing
from .diagonal_blocks import diagonal_matrix, swept_diagonal
from .hessian_symmetry import symmetric_from_structure


class Steady:
    """How a whole block was made by one compiled sweep: `route` ("diagonal", "reverse" or
    "forward"), `line` (the output whose rows, or the input whose columns, it filled), `size`
    (how many), and `ran`: the program's request (Replayable.rerun)."""

    __slots__ = ("route", "line", "size", "ran", "assembly")

    def __init__(self, route: str, line: int, size: int, ran: tuple) -> None:
        self.route, self.line, self.size, self.ran = route, line, size, ran
        # What a Hessian's exactly symmetric assembly finds from the program's rows and positions, the same
        # on every call (hessian_symmetry.symmetric_from_structure's `kept`)
        self.assembly: dict = {}


STEADY_CALL = "steady call"  # (the key of a SteadyCall in a recording's structure, with its evaluator's options)


class SteadyCall:
    """How a steady call made its one block whole last time (SteadyBlocks._planned): `steady`, the Steady
    that made it, by its diagonal or, for a Hessian (`symmetric`), by its exactly symmetric assembly; the
    block's `shape`, `matrix_shape` and its store's `dtype`. The same for every replay of the recording
    with those options: api/steady_calls.py makes the next calls' blocks from it. `steady` is None where
    only some rows of the block were asked, each request by a Steady of its own (_some_rows): under
    `rows_key` and the rows' bytes (a Jacobian's; None for a Hessian's), read by steady_calls.Deferred.rows."""

    __slots__ = ("steady", "symmetric", "shape", "matrix_shape", "dtype", "rows_key")

    def __init__(self, steady: Steady | None, symmetric: bool, shape: tuple, matrix_shape: tuple, dtype: np.dtype,
                 rows_key: tuple | None) -> None:
        self.steady, self.symmetric, self.shape, self.matrix_shape, self.dtype, self.rows_key = \
            steady, symmetric, shape, matrix_shape, dtype, rows_key

    def assembled(self, results: list) -> np.ndarray | None:
        """The block whole from the program's `results` at a replay's values, as the evaluator's whole() makes
        it (whole_diagonal, _whole_symmetric); None where they are not of that form (the usual way then)."""
        n = self.matrix_shape[0]
        if self.symmetric:
            return symmetric_store(self.steady, results[0], self.dtype) \
                if symmetric_fits(self.steady, results[0], n) else None
        d = swept_diagonal(results[0], n)
        return None if d is None else diagonal_matrix(d, self.dtype)

    def kept_in(self, ev: "SteadyBlocks", results: list, store: np.ndarray) -> None:
        """What the evaluator's whole() keeps of the block `store` assembled from `results`, kept by `ev`."""
        if self.symmetric:
            ev.kept_symmetric(self.steady, 0, store)
        else:
            ev.kept_diagonal(0, 0, results[0].reshape(self.matrix_shape[0]), store)


def symmetric_fits(steady: Steady, ct: object, n: int) -> bool:
    """Whether `ct` is one structured sweep's rows of an n x n Hessian block, in order (symmetric_store)."""
    return type(ct) is SparseBlock and ct.shape == (n, n) and steady.size == n


def symmetric_store(steady: Steady, ct: SparseBlock, dtype: np.dtype) -> np.ndarray:
    """The exactly symmetric Hessian block of one structured sweep `ct` (symmetric_fits), with the assembly's
    positions kept with `steady`."""
    rows = steady.assembly.get("rows")
    if rows is None:
        rows = steady.assembly["rows"] = np.arange(steady.size)
    return symmetric_from_structure(ct, rows, dtype, steady.assembly)


class SteadyBlocks:
    """Mixed into Evaluator, whose __init__ sets what these read: rec, batch, chunk_size,
    memory_budget, remote, watch, sweeps, seeds_used, kinds and the done masks; the writers
    and _ensure_diagonal are the Evaluator's."""

    def _whole_block(self, i: int, j: int, mode: str, route: str, line: int, positions: np.ndarray,
                     usual: Callable[[], str]) -> str:
        """Block (i, j) of a fresh evaluator, whole: by its kept Steady where there is one, else
        `usual()` (the route `route` filling the rows `positions` of output `line`, or its columns
        of input `line`), kept as a Steady when one compiled sweep made it. The sweep kind used.
        Only for positions in order: the seeds of a sweep follow its positions' order (J[::-1])."""
        rec = self.rec
        size = positions.size
        if not self._steady_may(rec) or _unless_all(positions, size) is not None:
            return usual()
        key = self._whole_key(i, j, mode)
        steady = None if self._steady_failed else rec.structure.get(key)
        if steady is not None:
            results = self._rerun(steady, i)
            if results is not None:
                return self._written(steady, i, j, results)
        return self._kept_steady(key, usual, route, line, size)

    def _whole_key(self, i: int, j: int, mode: str) -> tuple:
        """The key of block (i, j)'s Steady in the recording's structure (what decides its route and seeds)."""
        return ("steady whole block", type(self), i, j, mode, self.chunk_size, self.memory_budget)

    def _kept_steady(self, key: tuple, usual: Callable[[], str], route: str, line: int, size: int,
                     only_if: str | None = None) -> str:
        """usual(), the sweep kind it used; kept under `key` as a Steady (`route` filling `size` positions of
        `line`) where one sweep by a compiled program made them (Replayable.answer sets `rec.ran`), and, with
        `only_if`, a sweep of that kind."""
        rec = self.rec
        rec.ran = None
        before = self.sweeps
        kind = usual()
        if (only_if is None or kind == only_if) and self.sweeps == before + 1 and rec.ran is not None:
            rec.structure[key] = Steady(route, line, size, rec.ran)
        return kind

    _steady_failed = False  # (set where whole() found the kept program's guard failing: not run twice)

    def _steady_may(self, rec: Recording) -> bool:
        """Whether this evaluator's whole blocks may come from a kept Steady (see the module's doc)."""
        return rec.compiles() and not self.batch and self.remote is None and self.watch is None \
            and current_observer() is None

    def whole(self, i: int, j: int, mode: str | None) -> np.ndarray:
        """Block (i, j) whole (np.asarray(J)): ensure() of every row and column, then the block's
        entries. A fresh evaluator whose block has a kept Steady runs its program here at once, with
        no positions made or route decided: a Steady is kept only where ensure() found the block
        fresh and its route the whole block's, which the recording's structure and sizes decide, the
        same for every replay (P1-n100: 9 us of a 42 us steady call)."""
        mode = mode or self.mode
        rec = self.rec
        if not self.store and not self._plain and not self._steady_failed and self._steady_may(rec):
            steady = rec.structure.get(self._whole_key(i, j, mode))
            if steady is not None:
                results = self._rerun(steady, i)
                if results is not None:
                    if steady.route == "diagonal" and self.n_in == 1 and not self.symmetric:  # (whole_diagonal)
                        store = self.whole_diagonal(i, j, results[i])
                        if store is not None:
                            self._planned(steady, i, j, mode)
                            return store
                    elif self.symmetric and self.n_in == 1:  # (a Hessian's: _whole_symmetric)
                        store = self._whole_symmetric(steady, i, j, results[0])
                        if store is not None:
                            self._planned(steady, i, j, mode)
                            return store
                    self._written(steady, i, j, results)
                    return self.entries(i, j)
                self._steady_failed = True
        self.ensure(i, j, np.arange(self.M[i]), np.arange(self.N[j]), mode)
        return self.entries(i, j)

    def _whole_symmetric(self, steady: Steady, i: int, j: int, ct: object) -> np.ndarray | None:
        """A Hessian's one block whole from its one structured sweep `ct` (its rows in order): made exactly
        symmetric from its structure, as HessianEvaluator._write_rows makes it, with the assembly's positions
        kept with `steady` (the program's, the same every call) and the same counts as _written's; None where
        `ct` is not such a block (the usual way then). P3-n100's Hessian: its positions were hashed, looked
        up and checked on every call."""
        if i != j or self.batch or not symmetric_fits(steady, ct, self.M[i]):
            return None
        store = symmetric_store(steady, ct, self.dtype(i, j))
        self.kept_symmetric(steady, i, store)
        return store

    def kept_symmetric(self, steady: Steady, i: int, store: np.ndarray) -> None:
        """Block (i, i) of a Hessian known whole: `store`, made by symmetric_store from one sweep (_whole_symmetric;
        a steady call's block before its evaluator, api/steady_calls.py)."""
        self.counted(steady.route, steady.size)
        self.store[(i, i)] = store
        self._symmetric.add((i, i))
        self.row_done[i][:] = True

    def kept_rows(self, i: int, rows: np.ndarray, results: list) -> None:
        """Rows `rows` (in order) of output i known from `results`, one reverse sweep's by the Steady kept for them
        (_some_rows; a steady call's rows before its evaluator, api/steady_calls.py): written and counted as
        their route writes a sweep's."""
        self._took(rows, results, self._rows_writer(i), self.row_done[i], False, self.M[i], "reverse")

    def _planned(self, steady: Steady | None, i: int, j: int, mode: str) -> None:
        """Keep with the recording, for the next steady calls, what made block (i, j) whole by `steady` (a
        SteadyCall), where it is the call's one block, by the evaluator's own options: those calls make
        their lazy block without an evaluator until one is needed (api/steady_calls.py). `steady` None: some
        of its rows were made by a Steady kept for them (_some_rows), which those calls' blocks look up; a
        SteadyCall so made gives way to one that makes the block whole."""
        rec = self.rec
        if (i, j) != (0, 0) or self.n_out != 1 or self.n_in != 1 or mode != self.mode or self.chunk_size is not None \
                or (rec.out_is_tuple and not self.symmetric):  # (a Hessian's recording: f's gradient, a tuple of one)
            return
        key = (STEADY_CALL, type(self), mode, self.memory_budget)
        kept = rec.structure.get(key)
        if kept is None or (kept.steady is None and steady is not None):
            rec.structure[key] = SteadyCall(steady, self.symmetric, self.out_feat[0] + self.in_feat[0],
                                            (self.M[0], self.N[0]), self.dtype(0, 0),
                                            None if self.symmetric else self._rows_key(0, 0, mode, self.N[0]))

    def _rows_key(self, i: int, j: int, mode: str, columns: int) -> tuple:
        """The key of the Steady kept for some rows of block (i, j) by `columns` columns, but the rows' bytes."""
        return ("steady rows", type(self), i, j, mode, self.chunk_size, self.memory_budget, columns)

    def _some_rows(self, i: int, j: int, mode: str, rows: np.ndarray, cols: np.ndarray) -> str:
        """The entries (r, c) for r in rows, c in cols of block (i, j), not all of it (Evaluator.ensure):
        the missing rows and columns, by their route; or in a fresh evaluator (``J[:10]``), by the
        Steady kept for this request (the same rows, as many columns) where there is one, kept as a
        Steady when one reverse sweep by a compiled program made them. Lazy rows of a record_once function
        at a new point ask the same thing on every call: looking up which rows are missing, choosing
        the route, making the seeds and finding the program cost more than the program itself (issue
        44: 10 rows of a 300x300-grid stencil Jacobian, O(columns) bookkeeping on 90,000 columns).
        Only for rows in order, each once: the route writes a sweep's results in its seeds' order."""
        def usual() -> str:
            miss_r, miss_c = self._missing(i, j, rows, cols)
            return self._take_route(self._route(i, j, miss_r.size, miss_c.size, mode), i, j, miss_r, miss_c)

        rec = self.rec
        if self.store or not self._steady_may(rec) or not rows.size or rows.size == self.M[i] or not increasing(rows):
            return usual()
        key = self._rows_key(i, j, mode, cols.size) + (rows.tobytes(),)
        steady = rec.structure.get(key)
        if steady is not None:
            results = rec.rerun(steady.ran)
            if results is not None:
                self.kept_rows(i, rows, results)
                if cols.size == self.N[j] and not self.symmetric:  # (the next calls' blocks look the Steady up)
                    self._planned(None, i, j, mode)
                return "reverse"
        return self._kept_steady(key, usual, "reverse", i, rows.size, only_if="reverse")

    def _rerun(self, steady: Steady, i: int) -> list | None:
        """The kept program's results at this replay's values (Replayable.rerun). A reverse block's rows
        are kept whole as its usual route keeps them (BlockStores._kept_whole): a vector's cotangent block
        in column order, as the program made it when it was checked (a stack's x[i] then add contiguous
        columns, not K elements a row apart)."""
        if steady.route == "reverse" and self.n_in == 1 and not self.symmetric:
            return self._kept_whole(lambda _i, _rows: self.rec.rerun(steady.ran), i, None)
        return self.rec.rerun(steady.ran)

    def _written(self, steady: Steady, i: int, j: int, results: list) -> str:
        """The block written from `results` as its route writes a sweep's (the same counts)."""
        positions = np.arange(steady.size)
        if steady.route == "diagonal":
            self._ensure_diagonal(i, j, positions, positions, swept=results)
            return "forward"
        if steady.route == "reverse":
            write, done = self._rows_writer(steady.line), self.row_done[steady.line]
        else:
            write, done = self._cols_writer(steady.line), self.col_done[steady.line]
        self._took(positions, results, write, done, True, steady.size, steady.route)
        return steady.route
