"""What holds still while f is recorded: the plain arrays it hands to operations, and the garbage collector."""

from __future__ import annotations

import gc
import threading
from typing import Any

import numpy as np

from .thread_state import ThreadSlot


class _PausedCollector:
    """Context manager: Python's cyclic garbage collector waits while f is recorded or swept.

    Recording and sweeping allocate many small objects that live on (nodes, traced arrays, rules)
    and make no reference cycles, so each collection the allocations trigger finds nothing, yet
    walks every object that survived so far: measured on a loop of 8000 element writes, 28% of the
    recording and 43% of a reverse sweep. The collector runs again as soon as the last recording or
    sweep in any thread ends, and stays off if it was off.

    When it runs again, the objects made meanwhile are all young: its next young collection would walk
    every one of them (a tenth to a fifth of a 200-step RK4's Jacobian), though a recording's die by
    reference counting. They are moved to the oldest generation instead (`_age_young`), and a full
    collection comes before a later recording (`_collect_aged`): a reference cycle f made is still
    collected, later, and that collection walks the live objects only, not a recording's.
    """

    __slots__ = ()
    _lock = threading.Lock()
    _users = 0
    _was_enabled = False

    def __enter__(self) -> None:
        cls = _PausedCollector
        with cls._lock:
            if cls._users == 0:
                cls._was_enabled = gc.isenabled()
                if cls._was_enabled:
                    _collect_aged()
                gc.disable()
            cls._users += 1

    def __exit__(self, *exc: Any) -> None:
        cls = _PausedCollector
        with cls._lock:
            cls._users -= 1
            if cls._users == 0 and cls._was_enabled:
                _age_young()
                gc.enable()


_AGE_FROM = 20_000  # young objects; fewer: the young collection is cheap, and keeps Python's own accounting
_FULL_FROM = 200_000  # objects aged since the last full collection, at least, before the next
# A full collection that finds no cycle doubles the wait before the next, up to _WAIT_UP_TO times the
# usual; one that finds a cycle sets it back: code that makes none (most f: a recording's objects die by
# reference counting) stops paying a walk of every live object each few calls (3% of a plain 200-step
# RK4's Jacobian in a process holding torch's objects), and code that makes cycles is collected as before.
_WAIT_UP_TO = 16
# objects aged since the last full collection (by _age_young), live objects after it, and the wait's factor
_aged = [0, 0, 1]


def _age_young() -> None:
    """Move the young objects to the oldest generation without walking them (gc.freeze, then
    gc.unfreeze). Not when objects are frozen (the command line freezes its start-up's): unfreeze
    would thaw them."""
    young = gc.get_count()[0]
    if young >= _AGE_FROM and not gc.get_freeze_count():
        _aged[0] += young
        gc.freeze()
        gc.unfreeze()


def _collect_aged() -> None:
    """The full collection that finds the reference cycles among aged objects (those f made), once
    more were aged than twice the live ones (times the wait's factor, see _WAIT_UP_TO): before a
    recording, when the last one's are gone."""
    if _aged[0] > _aged[2] * max(2 * _aged[1], _FULL_FROM):
        found = gc.collect()
        _aged[0], _aged[1], _aged[2] = 0, len(gc.get_objects()), 1 if found else min(2 * _aged[2], _WAIT_UP_TO)


COLLECTOR_PAUSED = _PausedCollector()


class Freezer:
    """Plain arrays that f handed to recorded operations, made read-only while f runs.

    The recording keeps a reference to each (a rule reads it in later sweeps, a replay runs the
    operation on it again), so an in-place change later in f (a scratch buffer refilled in a loop)
    would silently change derivatives; read-only, it raises where it happens instead, and
    `Recording` reports the line. Arrays get their flag back when f returns (`release`). With
    `keep_all` (replayable recordings) the constants of value-free operations are held too.
    """

    __slots__ = ("arrays", "seen", "keep_all")

    def __init__(self, keep_all: bool) -> None:
        self.arrays: list[np.ndarray] = []
        self.seen: set[int] = set()
        self.keep_all = keep_all

    def hold(self, vals: Any, prim: Any) -> None:
        if prim.value_free and not self.keep_all:
            return
        seen = self.seen
        for a in vals:
            if isinstance(a, np.ndarray):
                if id(a) not in seen:  # (an array held already: a constant a loop hands to each step)
                    self._hold(a)
            elif type(a) in (list, tuple):
                for b in a:
                    if isinstance(b, np.ndarray):
                        self._hold(b)

    def _hold(self, a: np.ndarray) -> None:
        size, seen = a.size, self.seen
        # (setflags, not `flags.writeable = ...`: the flags object's setter calls setflags through Python)
        while isinstance(a, np.ndarray) and a.flags.writeable and id(a) not in seen:
            a.setflags(write=False)
            seen.add(id(a))
            self.arrays.append(a)
            # The array a view was taken from, when every write to it changes the view (a reshape
            # or transpose); not for a part of it (M[i]), whose other parts f may still fill.
            base = a.base
            a = base if base is not None and getattr(base, "size", -1) == size else None

    def release(self) -> None:
        """Give every held array its write flag back (a view only after its base)."""
        pending = self.arrays[::-1]
        while pending:
            left = []
            for a in pending:
                try:
                    a.setflags(write=True)
                except ValueError:
                    left.append(a)
            if len(left) == len(pending):
                break  # cannot happen for arrays that were writeable; never loop forever
            pending = left
        self.arrays, self.seen = [], set()


# The Freezer of the recording whose f is running (None outside f, and during sweeps).
FREEZER = ThreadSlot()


class frozen_constants:  # noqa: N801 - used as a context manager, like contextlib's
    """Run f (or a sweep, with None) with `freezer` holding the plain arrays operations take.

    A class rather than a generator: it is entered on every recording, where contextlib's
    machinery costs several times more than the work.
    """

    __slots__ = ("freezer", "outer")

    def __init__(self, freezer: "Freezer | None") -> None:
        self.freezer = freezer

    def __enter__(self) -> None:
        self.outer, FREEZER.v = FREEZER.v, self.freezer

    def __exit__(self, *exc: Any) -> None:
        FREEZER.v = self.outer
        if self.freezer is not None:
            self.freezer.release()
