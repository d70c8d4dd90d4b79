"""A steady record_once call's lazy block, made without an evaluator until one is needed.

``np.asarray(jaccli.jacobian(g, x))`` of a `record_once` function at a new point replays f and, at
its steady state, runs one compiled sweep for the whole block (api/steady_blocks.py). The same
request every call: so where the evaluator's whole() found the call's one block made by a kept
Steady, it keeps a SteadyCall with the recording, and the next calls with the same options make their
lazy block (a Jacobian or a Hessian, the same type and shape) over a `Deferred` instead of an
evaluator: np.asarray of it runs the program at the replay's values and assembles the block at once
(P1-n100: the evaluator, its masks and its lookups were most of a steady call). Anything else asked
of the block (a row, its stats, the command line's watch, a progress observer, a program whose guard
fails) makes the evaluator that the usual call would have made, given what was assembled already, and
goes its usual way from there. So for lazy rows asked by a slice on every call (``J.matrix[:10]``, P5): where
the evaluator's _some_rows made them by a Steady kept for them, its SteadyCall holds no whole program and the
next calls' ``J.matrix[:10]`` runs that Steady before any evaluator (Deferred.rows), up to ROWS_UP_TO bytes.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from jaccli.engine import Recording, current_observer

from .evaluator import REMOTE_SWEEPS, Evaluator
from .steady_blocks import STEADY_CALL, SteadyCall
from .sweep_seeds import default_memory_budget

# Rows of up to so many bytes are read by Deferred.rows, before any evaluator; more take the evaluator's way, where
# a sweep makes its zero block in the memory of the evaluator's store (block_memory.offer_block): the 10 rows of a
# 300x300-grid stencil's Jacobian (7.2 MB) made their zeros three times before it (2.3x the evaluator's time)
ROWS_UP_TO = 1 << 20
Maker = Callable[[Recording, Any, np.ndarray, str], Evaluator]  # (the usual call's evaluator: Deferred's maker)


class Deferred:
    """A steady call's block before its evaluator: `plan` (the SteadyCall), `rec` (the call's replay) and
    what makes the evaluator as the usual call makes it: `maker(rec.replayable(), f, x, mode)` (f, its input
    x as the call gave it, the call's mode). Shared by the block and its views (J.matrix, copies): they make
    one evaluator, and read one store. `taken`: the rows that rows() made and their program's results, until
    the evaluator takes them (False where the program's guard failed)."""

    __slots__ = ("plan", "rec", "maker", "f", "x", "mode", "lock", "results", "store", "ev", "failed", "taken")

    def __init__(self, plan: SteadyCall, rec: Recording, maker: Maker, f: Any, x: np.ndarray, mode: str) -> None:
        self.plan, self.rec, self.maker, self.f, self.x, self.mode = plan, rec, maker, f, x, mode
        self.lock = threading.Lock()  # (threads reading the block at once: one program run, one evaluator)
        self.results = self.store = self.ev = self.taken = None
        self.failed = False

    def whole(self) -> np.ndarray | None:
        """The block whole (its store, which the evaluator then keeps), from the kept program at this replay's
        values; None where the evaluator is made already, or must be (its usual way)."""
        with self.lock:
            if self.ev is not None or self.plan.steady is None or self.taken:  # (rows made: the evaluator takes them)
                return None
            if self.store is None:
                if self.failed or current_observer() is not None:  # (as SteadyBlocks._steady_may: progress shown)
                    return None
                results = self.rec.rerun(self.plan.steady.ran)
                store = None if results is None else self.plan.assembled(results)
                if store is None:  # (a guard failed, or the diagnostics watch the rules: the usual way, not run twice)
                    self.failed = True
                    return None
                self.results, self.store = results, store
            return self.store

    def evaluator(self) -> Evaluator:
        """The evaluator the usual call would have made, keeping what whole() assembled; made once."""
        with self.lock:
            ev = self.ev
            if ev is None:
                ev = self.maker(self.rec.replayable(), self.f, self.x, self.mode)
                if self.store is not None:
                    self.plan.kept_in(ev, self.results, self.store)
                    self.results = None  # (the evaluator keeps what it needs of them)
                elif self.failed:
                    ev._steady_failed = True
                if self.taken:  # (as SteadyBlocks._some_rows takes the rows its Steady made)
                    ev.kept_rows(0, *self.taken)
                    self.taken = None
                self.ev = ev
            return ev

    def rows(self, idx: slice, flat: bool, dtype: np.dtype) -> np.ndarray | None:
        """block[idx] (`flat`: its matrix's), the rows that the slice `idx` takes with every column, from the Steady
        that SteadyBlocks._some_rows keeps for those rows (``J.matrix[:10]`` of a steady call), run at this
        replay's values before any evaluator: a fresh array of `dtype`, the block's. The results are kept for the
        evaluator, if one is made (taken as _some_rows takes them). None where no Steady is kept for the rows,
        anything was asked of the block before, or its evaluator must make them (its usual way)."""
        plan = self.plan
        m, n = plan.matrix_shape
        if plan.rows_key is None or not (flat or (plan.shape and plan.shape[0] == m)):  # (J[idx]: rows of out axis 0)
            return None
        start, stop, step = idx.indices(m)
        rows = np.arange(start, stop, step)
        if step < 1 or not rows.size or rows.size == m or rows.size * n * plan.dtype.itemsize > ROWS_UP_TO:
            return None  # (rows in order, not all: as _some_rows keeps them)
        steady = self.rec.structure.get(plan.rows_key + (rows.tobytes(),))
        if steady is None:
            return None
        with self.lock:
            if self.ev is not None or self.store is not None or self.taken is not None \
                    or current_observer() is not None or REMOTE_SWEEPS.get() is not None:  # (as _steady_may)
                return None
            results = self.rec.rerun(steady.ran)
            self.taken = False if results is None else (rows, results)
        ct = None if results is None else results[0]
        if type(ct) is not np.ndarray or ct.size != rows.size * n:  # (structured, or none: the evaluator writes it)
            return None
        out = ct.reshape((rows.size, n) if flat else (rows.size,) + plan.shape[1:])
        return out.copy() if out.dtype == dtype else out.astype(dtype)


class MadeOnRead:
    """A block's `_ev` where it was made without one (steady_block): its Deferred's evaluator, made on the
    first read and kept in the block's __dict__, where every later read finds it first (a class attribute
    with __get__ alone: an instance's own attribute comes before it, as every other block's `_ev` does)."""

    def __get__(self, block: Any, owner: type | None = None) -> Any:
        if block is None:
            return self
        deferred = block._deferred
        if deferred is None:
            raise AttributeError(f"{type(block).__name__!r} object has no attribute '_ev'")
        ev = block.__dict__["_ev"] = deferred.evaluator()
        return ev


class Lane:
    """The last steady call of a record_once function `f` by a block of class `cls` and `mode`, kept in
    f.steady_lanes: the recording it replayed (`kept`, and how record_once keeps it: `kept_as`), the
    SteadyCall `plan` kept under `plan_key` in its structure (the memory budget its last part: `budget`),
    the block's `dtype`, and `maker`, what makes the usual call's evaluator (Deferred). The next such call
    replays `kept` again (RecordOnce.replayed_again) and makes its block from the plan (lane_block),
    without looking either up again, while they are what a lookup would find."""

    __slots__ = ("kept_as", "kept", "plan", "plan_key", "budget", "dtype", "maker")

    def __init__(self, kept_as: tuple, kept: Any, plan: SteadyCall, plan_key: tuple, dtype: np.dtype,
                 maker: Maker) -> None:
        self.kept_as, self.kept, self.plan, self.plan_key, self.dtype = kept_as, kept, plan, plan_key, dtype
        self.budget, self.maker = plan_key[3], maker


def lane_block(f: Any, x: np.ndarray, cls: type, mode: str) -> Any:
    """The block of class `cls` of a steady call of the record_once function `f` at x by its lane (Lane) for
    `cls` and `mode`, where the lane still holds; else the lane's replay at x where it made one (steady_block
    goes on from it), or None. What steady_block's usual steady way would give, without its lookups: one
    call on the way of every steady call, so its checks are written out here."""
    lane = f.steady_lanes.get((cls, mode))
    if lane is None or REMOTE_SWEEPS.get() is not None or lane.budget != default_memory_budget():
        return None
    plan = lane.plan
    rec = f.replayed_again(lane.kept_as, lane.kept, x, None if plan.steady is None else plan.steady.ran)
    if rec is None:
        return None
    if lane.kept.structure.get(lane.plan_key) is not plan:  # (rec.structure: the kept recording's)
        return rec
    return _block(cls, plan, lane.dtype, Deferred(plan, rec, lane.maker, f, x, mode))


def steady_block(f: Any, x: np.ndarray, cls: type, ev_cls: type, mode: str, record: tuple, checked: str,
                 dtype_key: tuple, maker: Maker, blocks: Callable[[Recording], Any], rec: Any = None) -> Any:
    """jacobian()'s or hessian()'s blocks of the record_once function `f` at x, f's one argument, with the
    default options but `mode`, from a replay of f's recording (`record`: what was recorded, `checked`: the
    checks its outputs passed, as RecordOnce.replayed takes them): a lazy block of class `cls` over a
    Deferred where a SteadyCall is kept for an `ev_cls` evaluator with those options, else `blocks(rec)` of
    the replay; None where there is no replay (the caller records f as usual). `maker(rec, f, x, mode)`: the
    evaluator the usual call makes over the replay `rec`; `dtype_key`: the block dtype's key in the
    recording's structure; `rec`: the replay at x that lane_block made, if any (not made again)."""
    plan_key = (STEADY_CALL, ev_cls, mode, default_memory_budget())  # (the memory budget read once a call)
    if rec is None:
        rec = f.replayed(record, x, checked, pending=True)  # (its Replayable made when needed)
        if rec is None:
            return None
    plan, dtype = rec.structure.get(plan_key), rec.structure.get(dtype_key)
    if plan is None or dtype is None or REMOTE_SWEEPS.get() is not None or not rec.compiles():
        return blocks(rec.replayable())
    if getattr(rec, "kept_as", None) is not None:  # (a PendingReplay of the recording record_once keeps)
        f.steady_lanes[cls, mode] = Lane(rec.kept_as, rec.kept, plan, plan_key, dtype, maker)
    return _block(cls, plan, dtype, Deferred(plan, rec, maker, f, x, mode))


def _block(cls: type, plan: SteadyCall, dtype: np.dtype, deferred: Deferred) -> Any:
    """The lazy block of class `cls` (Jacobian, Hessian) of a steady call by the SteadyCall `plan` over `deferred`;
    `dtype`: the block's."""
    block = object.__new__(cls)
    block._i = block._j = 0
    block.dtype = dtype
    block.shape, block._matrix_shape = plan.shape, plan.matrix_shape
    block._deferred = deferred
    return block
