"""The one path every command takes: load, differentiate, evaluate or stream, write, show, report."""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import click

from jaccli.errors import ResourceLimitError

from .compute import Outcome, evaluate, finish_stream, hook_progress, prepare, stream_pieces
from .failures import print_traceback, translate
from .problem import Problem, load_problem
from .report import build_report, check_target, file_blocks, print_stats, show
from .settings import Output, Settings


def human_bytes(n: float) -> str:
    """``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class _Progress:
    """Evaluator.progress -> a rich bar on stderr, shown once an evaluation has run about a second."""

    def __init__(self, start: float):
        from jaccli.render import make_console

        self.console = make_console(sys.stderr)
        self.start = start
        self.reporter: Any = None
        self.total = -1
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        from jaccli.render import make_progress

        if self.reporter is None or total != self.total or done < self.done:
            self.close()
            delay = max(0.0, 1.0 - (time.perf_counter() - self.start))
            self.reporter = make_progress(self.console, description="evaluating", delay=delay)
            self.reporter.start(total)
            self.total, self.done = total, 0
        self.reporter.advance(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.reporter is not None:
            self.reporter.stop()
            self.reporter = None


def _progress(out: Output) -> _Progress | None:
    # rich is imported only when a bar could be drawn: stderr is a terminal.
    if out.quiet or not sys.stderr.isatty():
        return None
    return _Progress(time.perf_counter())


def _too_large(outcome: Outcome, settings: Settings, out: Output) -> ResourceLimitError:
    size, budget = human_bytes(outcome.nbytes), human_bytes(settings.max_memory)
    stream = "write it to a .npy file with -o J.npy (streamed to disk in row blocks), " \
        if not (out.path and out.path.suffix.lower() == ".npy") else ""
    return ResourceLimitError(f"the result would take {size}, more than --max-memory {budget}; {stream}"
                              "select rows or columns with --rows/--cols, or raise --max-memory")


def _compute(outcome: Outcome, settings: Settings, out: Output) -> None:
    if outcome.nbytes <= settings.max_memory:
        evaluate(outcome)
        return
    streamable = out.path is not None and out.path.suffix.lower() == ".npy" and len(outcome.blocks) == 1
    if not streamable or outcome.blocks[0].lazy is None:
        raise _too_large(outcome, settings, out)
    from jaccli.writers import NpyStreamWriter

    start = time.perf_counter()
    block = outcome.blocks[0]
    shape, pieces = stream_pieces(block, settings.max_memory)
    assert out.path is not None
    with NpyStreamWriter(out.path, shape, block.dtype) as writer:
        for first, piece in pieces:
            writer.write(first, piece)
    finish_stream(outcome, time.perf_counter() - start)


def _write(problem: Problem, outcome: Outcome, settings: Settings, out: Output, argv: list[str]) -> None:
    if out.path is None or outcome.streamed:
        return
    from jaccli.writers import write_blocks

    start = time.perf_counter()
    meta = build_report(problem, outcome, settings, argv, out.path, with_data=False)
    write_blocks(out.path, file_blocks(outcome.blocks, out.path.suffix.lower()), meta, precision=out.precision)
    outcome.timings["write_s"] = time.perf_counter() - start


def _evaluate(problem: Problem, command: str, settings: Settings, out: Output) -> Outcome:
    with warnings.catch_warnings(record=True) as caught:
        # NumPy's warnings (overflow, division by zero...) become one-line warnings in the report.
        warnings.simplefilter("always")
        outcome = prepare(problem, command, settings)
        check_target(out, outcome.blocks)
        progress = _progress(out)
        hook_progress(outcome, progress)
        try:
            _compute(outcome, settings, out)
        finally:
            if progress is not None:
                progress.close()
    outcome.warnings += dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)
    return outcome


def _report(problem: Problem, outcome: Outcome, settings: Settings, out: Output, argv: list[str]) -> None:
    """Warnings and notes to stderr, the result (or the JSON report) to stdout, --stats to stderr."""
    def note(text: str) -> None:
        if not out.quiet:
            click.echo(text, err=True)

    for warning in outcome.warnings:
        note(f"Warning: {warning}")
    report = build_report(problem, outcome, settings, argv, out.path, with_data=out.path is None)
    if outcome.streamed and out.format not in (None, "json"):
        note(f"Note: the result was streamed to {out.path} and is not shown on stdout")
    elif out.path is None or out.format is not None:
        show(problem, outcome, settings, out, report)
    if out.path is not None:
        what = ", ".join(f"{b.key} {b.shape}" for b in outcome.blocks)
        note(f"wrote {out.path}: {what}" + (" (streamed)" if outcome.streamed else ""))
    if out.stats:
        print_stats(outcome, settings)


def run(command: str, *, func: str | None, expression: str | None, sources: tuple[str, ...], wrt: str | None,
        settings: Settings, out: Output, argv: list[str], debug: bool,
        extra: Callable[[Problem, Outcome], None] | None = None) -> Outcome:
    """Run one command end to end; any failure becomes a CliError with its exit code.

    Nothing is written until everything is computed, and files are replaced atomically, so a
    failure leaves an existing output file as it was. `extra` runs last, with the function and
    the computed result: checks in later commands hook in there and raise CheckFailed.
    """
    start = time.perf_counter()
    problem: Problem | None = None
    try:
        problem = load_problem(func, expression, sources, wrt, settings.dtype)
        loaded = time.perf_counter()
        outcome = _evaluate(problem, command, settings, out)
        outcome.timings = {"load_s": loaded - start, **outcome.timings}
        _write(problem, outcome, settings, out, argv)
        outcome.timings["total_s"] = time.perf_counter() - start
        _report(problem, outcome, settings, out, argv)
        if extra is not None:
            extra(problem, outcome)
        return outcome
    except (click.exceptions.Exit, click.exceptions.Abort):
        raise
    except (Exception, KeyboardInterrupt) as error:
        if debug:
            print_traceback(error)
        if problem is None:
            raise translate(error, user_file=_file_of(func, expression)) from None
        raise translate(error, user_file=problem.user_file, what=problem.what,
                        inputs=problem.describe_inputs(), definition=problem.definition) from None


def _file_of(func: str | None, expression: str | None) -> Path | None:
    if expression is not None or func is None:
        return None
    return Path(func.rpartition(":")[0] if func.rpartition(":")[0].endswith(".py") else func)

