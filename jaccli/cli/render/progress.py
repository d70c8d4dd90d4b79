"""A progress bar on stderr for slow evaluations, drawn by rich only on terminals."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["ProgressReporter", "make_progress"]


class ProgressReporter:
    """A progress bar for stderr that appears only on terminals and only for slow evaluations.

    Nothing is drawn until `delay` seconds after `start()`; the check happens in `advance()`.
    Usable as a context manager so the bar is always cleared.
    """

    def __init__(
        self,
        console: Console,
        *,
        description: str = "rows",
        delay: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.console = console
        self.enabled = console.is_interactive
        self.description = description
        self.delay = delay
        self._clock = clock
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._started_at: float | None = None
        self._total: int | None = None
        self._done = 0

    @property
    def live(self) -> bool:
        """Whether the bar is being drawn."""
        return self._progress is not None

    def start(self, total: int | None) -> None:
        """Begin counting towards `total` rows (None when unknown)."""
        self.stop()
        self._started_at = self._clock()
        self._total = total
        self._done = 0

    def advance(self, n: int = 1) -> None:
        """Count `n` more rows done; shows the bar once the delay has passed."""
        if self._started_at is None:
            return
        self._done += n
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self._done)
        elif self.enabled and self._clock() - self._started_at >= self.delay:
            self._show()

    def _show(self) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            # Data goes to stdout; a live display on stderr must never capture it.
            redirect_stdout=False,
            get_time=self._clock,
        )
        self._task = self._progress.add_task(self.description, total=self._total, completed=self._done)
        self._progress.start()

    def stop(self) -> None:
        """Clear the bar, if shown; safe to call more than once."""
        if self._progress is not None:
            self._progress.stop()
        self._progress = None
        self._task = None
        self._started_at = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def make_progress(
    console: Console, *, description: str = "rows", delay: float = 1.0
) -> ProgressReporter:
    """A `ProgressReporter` on `console` (normally stderr); a no-op when it is not a terminal.

    >>> import io
    >>> from jaccli.cli.render.terminal import make_console
    >>> progress = make_progress(make_console(io.StringIO()))
    >>> progress.start(10); progress.advance(10); progress.stop()
    >>> progress.enabled
    False
    """
    return ProgressReporter(console, description=description, delay=delay)
