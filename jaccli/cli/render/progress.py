"""Progress bars on stderr for long work, drawn by rich only on terminals: the library's progress observer.

The library reports phases of work (jaccli.engine.progress: ``start(phase, total)``, ``advance(n)``,
``finish()``); a phase shows as a bar once it has run `delay` seconds (1 by default, the environment
variable JACCLI_PROGRESS_DELAY), so work under a second draws nothing. A phase of unknown length
(recording f) shows a spinner, its count and the time elapsed; one of known length a bar, the count
done of the total, the rate and the time left. Phases nest (a streamed write runs sweeps): each
shown phase is a line. Calls may come from another thread (the recording's counter): a lock keeps
them in order, and a watcher thread shows a phase on time even when it reports nothing meanwhile.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["ProgressReporter", "make_progress", "progress_delay"]

DEFAULT_DELAY = 1.0
_WATCH_S = 0.1  # how often the watcher thread looks for a phase due to be shown


def progress_delay() -> float:
    """Seconds a phase runs before its bar appears: JACCLI_PROGRESS_DELAY if it is a number >= 0, else 1."""
    try:
        delay = float(os.environ.get("JACCLI_PROGRESS_DELAY", DEFAULT_DELAY))
    except ValueError:
        return DEFAULT_DELAY
    return delay if delay >= 0 else DEFAULT_DELAY


class _Count(ProgressColumn):
    """``done/total``, or the count alone when the total is unknown."""

    def render(self, task: Task) -> Text:
        done = int(task.completed)
        text = f"{done:,}" if task.total is None else f"{done:,}/{int(task.total):,}"
        return Text(text, style="progress.download")


class _Rate(ProgressColumn):
    """Units per second, once rich has measured some."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("")
        return Text(f"{speed:,.0f}/s" if speed >= 10 else f"{speed:.2g}/s", style="progress.data.speed")


class _Elapsed(ProgressColumn):
    """Time since the phase began, not since its bar appeared."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock

    def render(self, task: Task) -> Text:
        seconds = int(max(0.0, self._clock() - task.fields["began"]))
        return Text(f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}", style="progress.elapsed")


@dataclass
class _Phase:
    name: str
    total: int | None
    started: float
    done: int = 0
    task: TaskID | None = None


class ProgressReporter:
    """The library's progress observer, drawing on `console` (normally stderr) when it is a terminal.

    A phase is drawn once it has run `delay` seconds; nothing is drawn on anything but a terminal.
    Usable as a context manager, so that the bars are always cleared.
    """

    def __init__(self, console: Console, *, delay: float = DEFAULT_DELAY,
                 clock: Callable[[], float] = time.monotonic, watch: bool = True):
        self.console = console
        self.enabled = console.is_interactive
        self.delay = delay
        self._clock = clock
        self._watch = watch  # (tests drive the clock themselves, and the watcher off)
        self._lock = threading.RLock()
        self._phases: list[_Phase] = []
        self._progress: Progress | None = None
        self._watcher: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def live(self) -> bool:
        """Whether bars are being drawn."""
        return self._progress is not None

    # -- the observer protocol (jaccli.engine.progress) -------------------------------------------
    def start(self, phase: str, total: int | None) -> None:
        """A phase of `total` units (None: unknown) begins."""
        with self._lock:
            self._phases.append(_Phase(phase, total, self._clock()))
            if self.enabled and self._watch and self._watcher is None:
                self._watcher = threading.Thread(target=self._watch_phases, name="jaccli-progress-bar", daemon=True)
                self._watcher.start()
            self._show_due()

    def advance(self, n: int = 1) -> None:
        """`n` more units of the current phase are done."""
        with self._lock:
            if not self._phases:
                return
            phase = self._phases[-1]
            phase.done += n
            if phase.task is not None and self._progress is not None:
                self._progress.update(phase.task, completed=phase.done)
            else:
                self._show_due()

    def finish(self) -> None:
        """The current phase is over: its bar goes."""
        with self._lock:
            if not self._phases:
                return
            phase = self._phases.pop()
            if phase.task is not None and self._progress is not None:
                self._progress.update(phase.task, completed=phase.done)
                self._progress.refresh()  # its last count, however soon it ends
                self._progress.remove_task(phase.task)
            if not any(p.task is not None for p in self._phases):
                self._stop_drawing()

    # -- drawing ---------------------------------------------------------------------------------
    def _show_due(self) -> None:
        if not self.enabled:
            return
        now = self._clock()
        for phase in self._phases:
            if phase.task is None and now - phase.started >= self.delay:
                if self._progress is None:
                    self._progress = self._make()
                    self._progress.start()
                phase.task = self._progress.add_task(phase.name, total=phase.total, completed=phase.done,
                                                     began=phase.started)
                self._progress.refresh()  # drawn now, not at rich's next tick: a short phase is seen too

    def _make(self) -> Progress:
        return Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            _Count(),
            _Rate(),
            _Elapsed(self._clock),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            # Data goes to stdout; a live display on stderr must never capture it.
            redirect_stdout=False,
            get_time=self._clock,
        )

    def _watch_phases(self) -> None:
        while not self._closed.wait(_WATCH_S):
            with self._lock:
                self._show_due()

    def _stop_drawing(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        self._progress = None
        for phase in self._phases:
            phase.task = None

    def stop(self) -> None:
        """Clear every bar and forget every phase; safe to call more than once."""
        self._closed.set()
        with self._lock:
            self._phases.clear()
            self._stop_drawing()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
        self._watcher = None
        self._closed = threading.Event()

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def make_progress(console: Console, *, delay: float | None = None) -> ProgressReporter:
    """A `ProgressReporter` on `console` (normally stderr); draws nothing when it is not a terminal.

    >>> import io
    >>> from jaccli.cli.render.terminal import make_console
    >>> progress = make_progress(make_console(io.StringIO()))
    >>> progress.start("rows", 10); progress.advance(10); progress.finish(); progress.stop()
    >>> progress.enabled
    False
    """
    return ProgressReporter(console, delay=progress_delay() if delay is None else delay)
