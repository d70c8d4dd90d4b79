"""The one path every command takes: load, differentiate, evaluate or stream, diagnose, check, write, show, report."""

from __future__ import annotations

import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import click

from jaccli.io.atomic import recording_renames, writing
from jaccli.errors import ResourceLimitError, UsageError
from jaccli.api.sweep_seeds import default_memory_budget
from jaccli.io.npy_stream import human_bytes

from . import nonfinite
from .compute import Outcome, Verdict, evaluate, finish_stream, prepare, stream_pieces
from .failures import CheckFailed, CheckInconclusive, print_traceback, to_stderr, to_stdout, translate
from .kink_notes import kink_warning, kinks_at
from .parallel_runs import parallel_run
from .problem import Problem, load_problem
from .report import (build_report, check_output, check_target, check_target_early, file_blocks, function_file,
                     jsonable, print_stats, show)
from .settings import Output, Settings


@contextmanager
def observed(out: Output) -> Iterator[None]:
    """The library's long work inside reports to progress bars on stderr, if it is a terminal and not --quiet."""
    # rich is imported only when a bar could be drawn.
    if out.quiet or not sys.stderr.isatty():
        yield
        return
    from jaccli.cli.render.progress import make_progress
    from jaccli.cli.render.terminal import make_console
    from jaccli.engine import observing

    with make_progress(make_console(sys.stderr, color=out.color)) as reporter, observing(reporter):
        yield


def _too_large(outcome: Outcome, settings: Settings, out: Output, streams: bool) -> ResourceLimitError:
    size, budget = human_bytes(outcome.nbytes), human_bytes(settings.max_memory)
    stream = "write it to a .npy file with -o J.npy (streamed to disk in row blocks), " \
        if streams and not (out.path and out.suffix == ".npy") else ""
    sparse = "compute it sparse with --sparse (-o J.npz), " if outcome.command in ("jacobian", "hessian") else ""
    return ResourceLimitError(f"the result would take {size}, more than --max-memory {budget}; {stream}"
                              f"select rows or columns with --rows/--cols, {sparse}or raise --max-memory")


def _compute(outcome: Outcome, settings: Settings, out: Output, streams: bool, remote: Any = None) -> None:
    if remote is not None and _zarr_on_workers(outcome, settings, out):
        from jaccli.parallel.zarr_chunks import write_on_workers

        start = time.perf_counter()
        with writing(out.path):
            outcome.pending = write_on_workers(remote, outcome.blocks, out.target, settings.max_memory // 4)
        finish_stream(outcome, time.perf_counter() - start)
        return
    if outcome.nbytes <= settings.max_memory:
        evaluate(outcome)
        return
    streamable = out.path is not None and out.suffix == ".npy" and len(outcome.blocks) == 1
    if not streamable or outcome.blocks[0].lazy is None:
        raise _too_large(outcome, settings, out, streams)
    failed = next((v for v in outcome.verdicts if not v.passed), None)
    if failed is not None:  # (--strict) a failed result is not written, and a streamed one cannot be shown
        raise CheckFailed(f"{failed.failure}; {out.path} was not written")
    if out.plot is not None:
        raise UsageError(f"--plot needs the result in memory, but it would take {human_bytes(outcome.nbytes)}, "
                         f"more than --max-memory {human_bytes(settings.max_memory)}; select rows or columns "
                         "with --rows/--cols, or raise --max-memory")
    if settings.compare or settings.fail_on_nonfinite:
        # A streamed result is written while it is computed: nothing could be checked before writing.
        what = "--compare" if settings.compare else "--fail-on-nonfinite"
        raise UsageError(f"{what} needs the result in memory, but it would take {human_bytes(outcome.nbytes)}, "
                         f"more than --max-memory {human_bytes(settings.max_memory)}; select rows or columns "
                         "with --rows/--cols, or raise --max-memory")
    start = time.perf_counter()
    block = outcome.blocks[0]
    shape, row_axis, pieces = stream_pieces(block, settings.max_memory)
    assert out.path is not None
    try:
        _stream(out.target, out.path, shape, row_axis, block.dtype, pieces)
    except ResourceLimitError as error:
        if outcome.command not in ("jacobian", "hessian") or "free some space" not in str(error):
            raise
        raise ResourceLimitError(f"{error}; or, if the matrix is sparse, compute it with --sparse "
                                 f"(-o {out.path.with_suffix('.npz')}), which writes only its nonzeros") from None
    finish_stream(outcome, time.perf_counter() - start)


def _zarr_on_workers(outcome: Outcome, settings: Settings, out: Output) -> bool:
    """Whether Dask's workers write -o J.zarr themselves: whole blocks, and nothing that needs the result
    here (--compare, --fail-on-nonfinite, --plot: then it is computed here and this process writes it)."""
    return (out.path is not None and out.suffix == ".zarr" and not settings.compare
            and not settings.fail_on_nonfinite and out.plot is None and all(v.passed for v in outcome.verdicts)
            and all(b.lazy is not None and not b.selected for b in outcome.blocks))


def _stream(path: Path, shown: Path, shape: tuple[int, ...], row_axis: int, dtype: Any, pieces: Any) -> None:
    """Write the row blocks `pieces` yields to `path` (`shown` in messages); failing writes are the
    disk's fault, not the function's."""
    from jaccli.io.npy_stream import NpyStreamWriter

    writer = None
    try:  # (a signal right after the writer is made, before it is kept in `writer`: its finalizer deletes the file)
        with writing(shown):
            writer = NpyStreamWriter(path, shape, dtype, row_axis=row_axis, npy=True)
        for first, piece in pieces:  # computing a piece runs f: only the writes are wrapped
            with writing(shown):
                writer.write(first, piece)
        with writing(shown):
            writer.commit()
    finally:
        if writer is not None:
            writer.abort()  # a no-op after the commit; otherwise the temporary file goes


def _write(problem: Problem, outcome: Outcome, settings: Settings, out: Output, argv: list[str]) -> None:
    if out.path is None or (outcome.streamed and outcome.pending is None):
        return
    from jaccli.io.writers import write_blocks

    start = time.perf_counter()
    meta = build_report(problem, outcome, settings, argv, out.path, with_data=False)
    if outcome.pending is not None:  # the chunks are in: only the metadata and the rename are left
        with writing(out.path):
            outcome.pending.commit(jsonable(meta))
        return
    with writing(out.path):
        write_blocks(out.target, file_blocks(outcome.blocks, out.suffix), meta, suffix=out.suffix)
    outcome.timings["write_s"] = time.perf_counter() - start


def _plot(problem: Problem, outcome: Outcome, out: Output) -> None:
    from .plotting import draw

    what = f"-e {problem.spec!r}" if problem.is_expression else problem.what
    draw(outcome.blocks, [b.data for b in outcome.blocks], out, f"{outcome.command.capitalize()} of {what}",
         "value")


def _evaluate(problem: Problem, command: str, settings: Settings, out: Output, streams: bool) -> Outcome:
    # No monitor watches this evaluation: looking at every value of every sweep for NaN costs many
    # times the sweeps. Only each sweep's result is bounded as it arrives (nonfinite.watch), which
    # proves most finite results finite without a scan; any other is scanned afterwards, and only one
    # that holds NaN or inf is computed again with the monitor on (nonfinite.scan), to name the
    # operation behind the first.
    with warnings.catch_warnings(record=True) as caught:
        # NumPy's warnings (overflow, division by zero...) become one-line warnings in the report.
        warnings.simplefilter("always")
        with parallel_run(problem, settings, out) as remote:
            outcome = prepare(problem, command, settings)
            check_target(out, outcome.command, outcome.blocks)
            nonfinite.watch(outcome)
            _compute(outcome, settings, out, streams, remote)
            outcome.parallel = remote.lines() if remote is not None else []
    outcome.warnings += dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)
    nonfinite.scan(problem, outcome, lambda: _monitored(problem, command, settings))
    outcome.warnings += nonfinite.warning_lines(outcome)
    return outcome


def _monitored(problem: Problem, command: str, settings: Settings) -> tuple[Any, Outcome]:
    """Compute `command` again, as the first time, with a NonfiniteMonitor watching every sweep.

    Returns the monitor and the new outcome, whose blocks hold the recording the monitor saw.
    """
    from jaccli.check.diagnostics import NonfiniteMonitor

    # Its NumPy warnings were reported the first time.
    with warnings.catch_warnings(), NonfiniteMonitor() as monitor:
        warnings.simplefilter("ignore")
        again = prepare(problem, command, settings)
        evaluate(again)
    return monitor, again


def _report(problem: Problem, outcome: Outcome, settings: Settings, out: Output, argv: list[str],
            written: bool) -> None:
    """Warnings and notes to stderr, the result (or the JSON report) to stdout, --stats to stderr."""
    with to_stderr():  # stdout's own write errors are told apart inside, by to_stdout
        _report_to(problem, outcome, settings, out, argv, written)


def _report_to(problem: Problem, outcome: Outcome, settings: Settings, out: Output, argv: list[str],
               written: bool) -> None:
    def note(text: str) -> None:
        if not out.quiet:
            click.echo(text, err=True)

    # A failed --fail-on-nonfinite says all of it in its error line.
    repeated = set(nonfinite.warning_lines(outcome)) \
        if any(v.key == "nonfinite" and not v.passed for v in outcome.verdicts) else set()
    for warning in outcome.warnings:
        if warning not in repeated:
            note(f"Warning: {warning}")
    # check's result is its verdict: the blocks it evaluated are not part of its report.
    report = build_report(problem, outcome, settings, argv, out.path,
                          with_data=out.path is None and outcome.name != "check")
    shows = [v for v in outcome.verdicts if v.show is not None]
    with to_stdout():
        if shows and out.format != "json":
            for verdict in shows:
                assert verdict.show is not None
                verdict.show(out)
        elif outcome.streamed and out.format not in (None, "json"):
            note(f"Note: the result was streamed to {out.path} and is not shown on stdout")
        elif out.path is None or out.format is not None:
            show(problem, outcome, settings, out, report)
    for verdict in outcome.verdicts:
        if verdict.show is None:
            for line in verdict.lines:
                note(line)
    if out.path is not None and written:
        what = ", ".join(f"{b.key} {b.shape}" for b in outcome.blocks)
        note(f"wrote {out.path}: {what}" + (" (streamed)" if outcome.streamed else ""))
    if out.stats:
        print_stats(outcome, settings)


Check = Callable[[Problem, Outcome], Verdict]


class Failures:
    """Context manager: anything raised becomes a CliError with its exit code, naming the user's file.

    Set `problem` once the function is loaded, so that messages name it and its inputs. `written`
    is `atomic.recording_renames`'s list, for a command that writes files: an interruption names those
    already in place.
    """

    def __init__(self, func: str | None, expression: str | None, debug: bool, written: Sequence[Path] = (),
                 streams: bool = True) -> None:
        self.func, self.expression, self.debug, self.written = func, expression, debug, written
        self.streams = streams  # the command can stream its result with -o (check cannot)
        self.problem: Problem | None = None

    def __enter__(self) -> "Failures":
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        # Never swallows: lets the exception through, or raises its CliError instead.
        # A closed pipe (| head) is the command line's to handle (failures.stream_error): it exits quietly.
        if error is None or isinstance(error, (click.exceptions.Exit, click.exceptions.Abort, BrokenPipeError)):
            return
        if not isinstance(error, (Exception, KeyboardInterrupt)):
            return
        if self.debug and not isinstance(error, CheckFailed):
            print_traceback(error)
        problem = self.problem
        if problem is None:
            user_file = None if self.expression is not None else function_file(self.func)
            raise translate(error, user_file=user_file, written=self.written,
                            streams=self.streams) from None
        raise translate(error, user_file=problem.user_file, what=problem.what, inputs=problem.describe_inputs(),
                        definition=problem.definition, written=self.written, streams=self.streams) from None


def _checks(command: str, settings: Settings, out: Output) -> tuple[str, Check | None]:
    """What `command` computes, and the check it runs on the result (check, --compare)."""
    if command == "check":
        from .check import check

        return ("jacobian" if settings.order == 1 else "hessian"), lambda p, o: check(p, o, settings, out)
    if settings.compare is not None:
        from .compare import compare

        return command, lambda p, o: compare(p, o, settings)
    if settings.rtol is not None or settings.atol is not None:
        raise UsageError("--rtol and --atol are the tolerances of --compare; give --compare REF too")
    return command, None


def run(command: str, *, func: str | None, expression: str | None, sources: tuple[str, ...], wrt: str | None,
        settings: Settings, out: Output, argv: list[str], debug: bool, extra: Check | None = None) -> Outcome:
    """Run one command end to end; any failure becomes a CliError with its exit code.

    Args:
        command: jacobian, hessian, grad, jvp, vjp, hvp or check (which computes the Jacobian or
            Hessian, then checks it); the report's ``command``.
        extra: a further check to run on the computed result, returning a Verdict; check and
            --compare (settings.compare) bring their own.

    Nothing is written until everything is computed and checked, and files are replaced
    atomically: a failure, or a check that did not pass (--compare, --fail-on-nonfinite), leaves
    an existing output file as it was. A check that did not pass still shows the result and
    the report on stdout, then exits 1.
    """
    start = time.perf_counter()
    streams = command != "check"  # check has no -o to stream its result with
    with recording_renames() as written, Failures(func, expression, debug, written, streams) as failures, \
            observed(out):
        compute, own = _checks(command, settings, out)
        default_memory_budget()  # a JACCLI_MEMORY_BUDGET that names no size is refused before f runs
        check_output(out, [*sources, *settings.vectors, settings.compare, settings.rows, settings.cols],
                     func=None if expression is not None else func)
        if out.plot is not None:
            from .plotting import check_plot

            check_plot(out)
        problem = failures.problem = load_problem(func, expression, sources, wrt, settings.dtype)
        check_target_early(out, command, problem, settings)
        loaded = time.perf_counter()
        outcome = _evaluate(problem, compute, settings, out, streams)
        outcome.name = command
        if command != "check":  # (check names the entries a kink reaches)
            outcome.kinks = kinks_at(problem, outcome)
            outcome.warnings += [kink_warning(kink, command) for kink in outcome.kinks]
        outcome.timings = {"load_s": loaded - start, **outcome.timings}
        if settings.fail_on_nonfinite:
            # A verdict either way: a finite result passed the check that was asked for.
            finite = not outcome.nonfinite
            outcome.verdicts.append(Verdict("nonfinite", finite, failure="" if finite else nonfinite.failure(outcome)))
        checked = time.perf_counter()
        for check in (own, extra):
            if check is not None:
                outcome.verdicts.append(check(problem, outcome))
        if own is not None or extra is not None:
            outcome.timings["check_s"] = time.perf_counter() - checked
        failed = next((v for v in outcome.verdicts if not v.passed), None)
        if failed is None:
            _write(problem, outcome, settings, out, argv)
            if out.plot is not None and command != "check":  # (check draws its error matrix itself)
                _plot(problem, outcome, out)
        outcome.timings["total_s"] = time.perf_counter() - start
        _report(problem, outcome, settings, out, argv, written=failed is None)
        if failed is not None:
            kept = f"; {out.path} was not written" if out.path is not None and not outcome.streamed else ""
            raise (CheckInconclusive if failed.inconclusive else CheckFailed)(failed.failure + kept)
        return outcome



