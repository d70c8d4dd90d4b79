"""Progress of long work: the observer protocol the library reports to, and the context that holds one.

The library never draws anything. Work that can take long (recording f, sweeps, finite differences,
colouring, compressed sweeps, streamed writes, distributed blocks) reports to the observer set with
`observing`, if any; the command line sets one that draws a bar on a terminal. An observer is any
object with three methods::

    start(phase: str, total: int | None)  # a phase of work begins: `total` units, None when unknown
    advance(n: int)                       # n more units of the current phase are done
    finish()                              # the current phase is over (also when it failed)

Phases nest (a colouring runs inside a sparse run): `advance` and `finish` are for the phase last
started, so the library never holds a phase open across a `yield` (the caller's phases would
interleave with it: MatrixView.stream leaves its progress to the writer it feeds). The phase name
says what is done and in which unit, e.g. ``"reverse sweeps (rows)"``. Calls come from the thread
doing the work, except while f is recorded: its operation count is then read every `POLL_S`
seconds by a thread of its own, so tracing pays nothing per operation. An observer is looked up when
a phase starts, in the calling context (`contextvars`): a thread started meanwhile sees none.

Without an observer nothing changes, down to the size of every sweep. With one, work predicted to
take longer than `LONG_S` is split into blocks (`blocks`) so that the bar can move.

>>> class Printer:
...     def start(self, phase, total): print("start", phase, total)
...     def advance(self, n): print("advance", n)
...     def finish(self): print("finish")
>>> import numpy as np, jaccli
>>> with observing(Printer()):
...     J = np.asarray(jaccli.jacobian(np.cumsum, np.ones(3)))
start recording f (operations) None
finish
start reverse sweeps (rows) 3
advance 1
advance 2
finish

(The first block, of 1/MOST_BLOCKS of the rows, is timed to predict the rest.)
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator, Protocol

__all__ = ["ProgressObserver", "Phase", "observing", "current_observer", "blocks", "counting"]

# Work predicted to take longer than LONG_S seconds is split into FEWEST_BLOCKS to MOST_BLOCKS blocks,
# each about BLOCK_S seconds between those bounds and never under MIN_BLOCK_S: enough steps for a bar
# that moves, few enough that smaller sweeps cost little more (a matrix product of 75 rows instead of
# 1,500 costs ~25% more per row in OpenBLAS, one of 47 rows ~55% more: so 20 blocks, not 50, for short work).
LONG_S = 0.5
FEWEST_BLOCKS = 20
MOST_BLOCKS = 50
BLOCK_S = 0.5
MIN_BLOCK_S = 0.05
POLL_S = 0.25  # how often the operation count of a recording in progress is read


class ProgressObserver(Protocol):
    """What the library reports long work to (see the module's docstring)."""

    def start(self, phase: str, total: int | None) -> None: ...

    def advance(self, n: int) -> None: ...

    def finish(self) -> None: ...


_OBSERVER: ContextVar[Any] = ContextVar("jaccli_progress_observer", default=None)
# Set while a counting phase runs: its thread advances whatever phase is last started, so none
# may start inside it.
_COUNTING: ContextVar[bool] = ContextVar("jaccli_progress_counting", default=False)


def current_observer() -> ProgressObserver | None:
    """The observer set by the innermost `observing`, or None; None too while f is being recorded
    (a counting phase is open)."""
    return None if _COUNTING.get() else _OBSERVER.get()


@contextmanager
def observing(observer: ProgressObserver | None) -> Iterator[ProgressObserver | None]:
    """Report the long work done inside the block to `observer` (None: to nobody)."""
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


class Phase:
    """One phase of work, reported to the current observer; does nothing without one.

    Used as a context manager, it finishes however the block ends.
    """

    __slots__ = ("observer",)

    def __init__(self, name: str, total: int | None) -> None:
        self.observer = current_observer()
        if self.observer is not None:
            self.observer.start(name, total)

    def advance(self, n: int = 1) -> None:
        if self.observer is not None:
            self.observer.advance(n)

    def finish(self) -> None:
        if self.observer is not None:
            observer, self.observer = self.observer, None
            observer.finish()

    def __enter__(self) -> Phase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finish()


def blocks(total: int, cap: int, split: bool = True) -> Iterable[int]:
    """Sizes of the blocks to do `total` units of work in, none over `cap`; the caller does each block
    before asking for the next, so the time between two is the block's.

    Without an observer, or not `split` (a block size the user chose): blocks of `cap`, as before
    progress was reported. With one: a first block of total/MOST_BLOCKS units is timed; if the rest is
    predicted to take over LONG_S, it goes in FEWEST_BLOCKS to MOST_BLOCKS blocks (see BLOCK_S) of at
    least MIN_BLOCK_S seconds each, else in blocks of `cap`.
    """
    cap = max(1, cap)
    if split and total > 1 and current_observer() is not None:
        return _timed_blocks(total, cap)
    whole, rest = divmod(total, cap)  # (a list: no generator on the sweeps' path when nobody observes)
    return [cap] * whole + ([rest] if rest else [])


def _timed_blocks(total: int, cap: int) -> Iterator[int]:
    probe = min(cap, math.ceil(total / MOST_BLOCKS))
    began = time.perf_counter()
    yield probe
    left = total - probe
    per_unit = max((time.perf_counter() - began) / probe, 1e-9)
    size = cap
    if per_unit * left > LONG_S:
        count = min(MOST_BLOCKS, max(FEWEST_BLOCKS, per_unit * total / BLOCK_S))
        size = min(cap, max(probe, math.ceil(total / count), math.ceil(MIN_BLOCK_S / per_unit)))
    while left > 0:
        step = min(size, left)
        yield step
        left -= step


@contextmanager
def counting(name: str, count: Callable[[], int]) -> Iterator[None]:
    """A phase of unknown length whose progress is `count()`, read every POLL_S seconds by a thread
    of its own (the work itself pays nothing); no thread without an observer."""
    observer = current_observer()
    if observer is None:  # (also when f records f again inside: the outer count goes on alone)
        yield
        return
    token = _COUNTING.set(True)
    observer.start(name, None)
    stop = threading.Event()
    seen = [0]

    def poll() -> None:
        while not stop.wait(POLL_S):
            now = count()
            if now > seen[0]:
                observer.advance(now - seen[0])
                seen[0] = now

    thread = threading.Thread(target=poll, name="jaccli-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        observer.finish()
        _COUNTING.reset(token)
