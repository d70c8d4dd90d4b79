"""jacobian and hessian --sparse, and check --sparse: sparse results from the library to files and stdout."""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import numpy as np

from jaccli.errors import ResourceLimitError, UsageError
from jaccli.io.atomic import recording_renames, writing
from jaccli.plurals import counted

from .failures import CheckFailed, SCHEMA, to_stderr, to_stdout
from .kink_notes import kink_warning, kinks_at
from .nonfinite import report_entries, sparse_scan, warning_lines
from .plotting import check_plot, draw_sparse
from .problem import Problem, load_problem
from jaccli.cli.render.display import render, stdout_format
from .report import check_output
from .parallel_runs import parallel_run
from .run import Failures, observed
from .settings import Output, Settings

SPARSE_OUTPUTS = (".npz", ".mtx", ".json", ".npy")
# Above this density, or with as many sweeps as the smaller side, the dense result costs less.
DENSE_DENSITY = 0.5
# Entries shown on a terminal; the rest go to files or --format text.
SHOWN_ENTRIES = 20
HESSIAN_MODE = ("--mode chooses the side of a Jacobian's colouring; a Hessian's plan is symmetric "
                "(leave out --mode; --recovery chooses how it is read back)")


def need_scipy(what: str = "--sparse") -> None:
    """scipy is the optional extra jaccli[sparse]: without it, one line saying how to install it."""
    try:  # (scipy.io, for .mtx only, is imported where it is written: 0.2 s of every --sparse run otherwise)
        import scipy.sparse  # noqa: F401
    except ImportError:
        raise UsageError(f"{what} needs scipy, which is not installed: pip install 'jaccli[sparse]'") from None


def refuse_dense_only(settings: Settings, out: Output, hessian: bool) -> None:
    """Options of the dense path that --sparse does not take."""
    if hessian and settings.mode != "auto":
        raise UsageError(HESSIAN_MODE)
    if out.heatmap:
        raise UsageError("--heatmap colours a dense matrix on the terminal; draw a sparse result with --plot J.png, "
                         "or see its pattern with `jaccli sparsity`")
    for given, option in ((settings.batch_axis is not None, "--batch-axis"), (settings.compare, "--compare"),
                          (settings.strict, "--strict"), (settings.fail_on_nonfinite, "--fail-on-nonfinite")):
        if given:
            raise UsageError(f"{option} does not work with --sparse; leave out one of them")


def load_pattern(path: str) -> Any:
    from jaccli.api.sparse import Sparsity

    if not Path(path).is_file():
        raise UsageError(f"--pattern {path}: no such file (make one with `jaccli sparsity FUNC INPUT... -o {path}`)")
    return Sparsity.load(path)


def _selection(spec: str | None, what: str) -> Any:
    if spec is None:
        return None
    from jaccli.io.index_specs import parse_index_spec

    return lambda size: parse_index_spec(spec, size, what)


def compute(problem: Problem, hessian: bool, settings: Settings, pattern: str | None, recovery: str = "auto") -> Any:
    """The library's SparseRun; a --pattern that does not fit this point is refused, naming the file."""
    from jaccli.api.sparse import PatternMismatch, sparse_run

    given = load_pattern(pattern) if pattern else None
    try:
        return sparse_run(problem.func, problem.args, wrt=problem.wrt, hessian=hessian, sparsity=given,
                          mode=settings.mode, rows=_selection(settings.rows, "rows"),
                          cols=_selection(settings.cols, "cols"), refuse_changed=True, recovery=recovery)
    except PatternMismatch as error:
        raise UsageError(f"--pattern {pattern}: {error}") from None


def plan_entry(done: Any) -> dict:
    plan = done.plan
    return {"mode": plan.mode, "colors": int(plan.sweeps), "forward_colors": int(plan.forward_colors),
            "reverse_colors": int(plan.reverse_colors), "recovery": plan.recovery}


def _dense_note(done: Any) -> str | None:
    """The whole matrix's density and plan (a selection's own plan may need as many sweeps as it has rows)."""
    S = done.sparsity
    m, n = S.shape
    if m and n and (S.density >= DENSE_DENSITY or S.colors >= min(m, n)):
        return (f"Note: the matrix is dense (density {S.density:.3g}, {counted(S.colors, 'sweep')} for {m} x {n}): "
                "the dense result (without --sparse) would be cheaper")
    return None


def layout(problem: Problem, done: Any, hessian: bool) -> dict | None:
    """Where each output (rows) and differentiated input (columns) sits in the one stacked matrix of a sparse
    result: {"rows": [{"name", "shape", "start", "stop"}...], "cols": [...]}; None for a --rows/--cols selection."""
    if done.blocks is None:
        return None
    S = done.sparsity
    outs = S.in_shapes if hessian else S.out_shapes
    out_names = problem.wrt_names if hessian else ([problem.name] if len(outs) == 1
                                                   else [f"{problem.name}{i}" for i in range(len(outs))])

    def spans(names: list, shapes: tuple) -> list[dict]:
        stops = np.cumsum([int(np.prod(s)) for s in shapes], dtype=np.int64)
        return [{"name": n, "shape": list(s), "start": int(stop - np.prod(s)), "stop": int(stop)}
                for n, s, stop in zip(names, shapes, stops)]
    return {"rows": spans(out_names, outs), "cols": spans(problem.wrt_names, S.in_shapes)}


def sparse_blocks(problem: Problem, done: Any, hessian: bool, blocks: dict | None) -> dict | None:
    """Each (output, input) block of the result as COO arrays, keyed as the dense report keys them (``df0_dx``,
    ``d2f_dx_dy``): the nesting of `jacobian`; None for a --rows/--cols selection. `blocks`: the `layout`."""
    from jaccli.io.writers import coo_document

    if blocks is None:
        return None
    def flat(nested: Any) -> list:  # the blocks in order: outputs, then inputs within each
        return [leaf for part in nested for leaf in flat(part)] if isinstance(nested, tuple | list) else [nested]
    leaves, found = flat(done.blocks), {}
    for i, row in enumerate(blocks["rows"]):
        for j, col in enumerate(blocks["cols"]):
            key = (f"d2{problem.name}_d{row['name']}_d{col['name']}" if hessian
                   else f"d{row['name']}_d{col['name']}")
            block = leaves[i * len(blocks["cols"]) + j]
            found[key] = {"output": row["name"], "input": col["name"],
                          "full_shape": row["shape"] + col["shape"], **coo_document(block)}
    return found


def _layout_text(blocks: dict | None) -> str:
    """``rows f0 [0:3), f1 [3:7); columns x [0:4), y [4:8)``: the stacked blocks (the `layout`), for messages
    and .mtx comments."""
    if blocks is None:
        return "the selected rows and columns"
    return "; ".join(f"{side} " + ", ".join(f"{b['name']} [{b['start']}:{b['stop']})" for b in blocks[key])
                     for side, key in (("rows", "rows"), ("columns", "cols")))


def _write(problem: Problem, done: Any, hessian: bool, blocks: dict | None, settings: Settings,
           out: Output) -> None:
    from jaccli.io.writers import write_blocks, write_sparse
    from jaccli.io.npy_stream import human_bytes

    assert out.path is not None
    symmetric = hessian and settings.rows is None and settings.cols is None
    with writing(out.path):
        if out.path.suffix.lower() != ".npy":
            meta = {"plan": plan_entry(done), "layout": blocks, "comment": f"jaccli: {_layout_text(blocks)}"}
            if out.path.suffix.lower() == ".json":  # (only JSON keeps them: lists of every entry, again)
                meta["blocks"] = sparse_blocks(problem, done, hessian, blocks)
            write_sparse(out.target, done.matrix, meta, symmetric=symmetric)
            return
        m, n = done.matrix.shape
        nbytes = m * n * done.matrix.dtype.itemsize
        if nbytes > settings.max_memory:
            raise ResourceLimitError(f"-o {out.path}: the dense matrix would take {human_bytes(nbytes)}, more than "
                                     f"--max-memory {human_bytes(settings.max_memory)}; write the sparse result to "
                                     f"{out.path.with_suffix('.npz')} or {out.path.with_suffix('.mtx')}")
        write_blocks(out.target, {"J": done.matrix.toarray()})


def _triplets(matrix: Any, delimiter: str) -> str:
    coo = matrix.tocoo()
    rows, cols, data = coo.row.tolist(), coo.col.tolist(), coo.data.tolist()
    return "".join(f"{i}{delimiter}{j}{delimiter}{v!r}\n" for i, j, v in sorted(zip(rows, cols, data)))


def _summary(problem: Problem, command: str, done: Any) -> list[str]:
    m, n = done.matrix.shape
    what = f"-e {problem.spec!r}" if problem.is_expression else problem.what
    density = done.matrix.nnz / (m * n) if m and n else 0.0
    lines = [f"Sparse {command} of {what}",
             f"  shape    {m} x {n}",
             f"  nnz      {done.matrix.nnz} (density {density:.3g})",
             f"  plan     {done.plan.mode}, {done.plan.sweeps} colours"
             + (", recovered by substitution" if done.plan.recovery == "substitution" else "")]
    coo = done.matrix.tocoo()
    entries = sorted(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()))
    lines += [f"  ({i}, {j})  {v:.6g}" for i, j, v in entries[:SHOWN_ENTRIES]]
    if len(entries) > SHOWN_ENTRIES:
        lines.append(f"  ... {len(entries) - SHOWN_ENTRIES} more: write them with -o J.npz, or --format text")
    return lines


def header(command: str, argv: list[str]) -> dict:
    """The keys every JSON report opens with: schema, jaccli's version, the command and its arguments."""
    import jaccli

    return {"schema": SCHEMA, "jaccli": jaccli.__version__, "command": command, "argv": list(argv)}


def _show(problem: Problem, command: str, done: Any, blocks: dict | None, out: Output, argv: list[str],
          kinks: list[dict], notes: dict) -> None:
    """The result on stdout; `notes`: the JSON report's warnings, nonfinite and nonfinite_origin."""
    from jaccli.io.writers import coo_document

    fmt = stdout_format(out.format, out.color)
    if fmt == "json":
        doc = {**header(command, argv), "sparse": True, **coo_document(done.matrix),
               "layout": blocks, "blocks": sparse_blocks(problem, done, command == "hessian", blocks),
               "plan": plan_entry(done), "kinks": kinks, **notes}
        sys.stdout.write(json.dumps(doc, allow_nan=False) + "\n")
    elif fmt in ("text", "csv"):
        sys.stdout.write(_triplets(done.matrix, "," if fmt == "csv" else " "))
    else:
        sys.stdout.write("".join(line + "\n" for line in _summary(problem, command, done)))


def _stats(done: Any, total: float) -> None:
    from .report import _ms

    t = done.timings
    recovery = f", recovery {done.plan.recovery}" if done.plan.mode == "symmetric" else ""
    sys.stderr.write(f"stats: sparse: nnz {done.matrix.nnz}, colours {done.plan.sweeps}, mode {done.plan.mode}"
                     f"{recovery}, sweeps {done.sweeps}\n")
    sys.stderr.write(f"stats: time: detection {_ms(t['detection_s'])}, colouring {_ms(t['coloring_s'])}, "
                     f"sweeps {_ms(t['sweeps_s'])}; total {_ms(total)}\n")


def run_sparse(command: str, *, func: str | None, expression: str | None, sources: tuple[str, ...],
               wrt: str | None, settings: Settings, out: Output, argv: list[str], debug: bool,
               pattern: str | None = None, recovery: str = "auto") -> None:
    """jacobian or hessian --sparse end to end: compute, write atomically (-o), show, report."""
    from jaccli.api.sparse_real import RealOnlyError

    start = time.perf_counter()
    with recording_renames() as written, Failures(func, expression, debug, written) as failures, observed(out):
        need_scipy()
        refuse_dense_only(settings, out, command == "hessian")
        check_output(out, [*sources, settings.rows, settings.cols, pattern], formats=SPARSE_OUTPUTS,
                     func=None if expression is not None else func)
        check_plot(out)
        problem = failures.problem = load_problem(func, expression, sources, wrt, settings.dtype)
        with warnings.catch_warnings(record=True) as caught, parallel_run(problem, settings, out) as remote:
            warnings.simplefilter("always")
            try:
                done = compute(problem, command == "hessian", settings, pattern, recovery)
            except RealOnlyError as error:
                raise UsageError(f"--sparse is for real functions, and f has {error.what}; leave out --sparse "
                                 "(docs/complex.md)") from None
            parallel = remote.lines() if remote is not None else []
        blocks = layout(problem, done, command == "hessian")
        kinks = kinks_at(problem, rec=done.recording if command == "jacobian" else None)  # (f's, not recorded again)
        outcome = SimpleNamespace(nonfinite=[], origin=None)  # (what nonfinite's lines and report entries read)
        outcome.nonfinite, outcome.origin = sparse_scan(problem, done.matrix, command == "hessian", blocks,
                                                        done.recording if command == "jacobian" else None)
        if out.path is not None:
            _write(problem, done, command == "hessian", blocks, settings, out)
        if out.plot is not None:
            draw_sparse(problem, command == "hessian", done, blocks, out)
        with to_stderr():
            notes = [*problem.warnings, *(f"{w.category.__name__}: {w.message}" for w in caught),
                     *warning_lines(outcome), *(kink_warning(kink, command) for kink in kinks)]
            dense = _dense_note(done)
            if not out.quiet:
                for line in notes:
                    click.echo(f"Warning: {line}", err=True)
                if dense:
                    click.echo(dense, err=True)
            with to_stdout():
                if out.path is None or out.format is not None:
                    nonfinite, origin = report_entries(outcome)
                    _show(problem, command, done, blocks, out, argv, kinks,
                          {"warnings": notes, "nonfinite": nonfinite, "nonfinite_origin": origin})
            if out.path is not None and not out.quiet:
                m, n = done.matrix.shape
                several = blocks is not None and len(blocks["rows"]) * len(blocks["cols"]) > 1
                click.echo(f"wrote {out.path}: sparse {m} x {n}, nnz {done.matrix.nnz}"
                           + (f" ({_layout_text(blocks)})" if several else ""), err=True)
            if out.stats:
                _stats(done, time.perf_counter() - start)
                for line in parallel:
                    sys.stderr.write(f"stats: {line}\n")


def check_sparse_command(*, func: str | None, expression: str | None, sources: tuple[str, ...], wrt: str | None,
                         settings: Settings, out: Output, debug: bool, argv: list[str] = ()) -> None:
    """check --sparse: the sparse result against one JVP and one VJP; exit 1 when rows or columns disagree."""
    from jaccli.api.sparse_check import check_sparse

    with recording_renames() as written, Failures(func, expression, debug, written) as failures, observed(out):
        need_scipy()
        refuse_dense_only(settings, out, False)
        if out.plot is not None:
            raise UsageError("--plot draws check's error matrix, which check --sparse does not build (it compares "
                             "J v and v^T J); leave out one of them")
        if settings.rows is not None or settings.cols is not None:
            given = " and ".join(f"--{k}" for k in ("rows", "cols") if getattr(settings, k) is not None)
            raise UsageError(f"check --sparse checks the whole sparse matrix against one JVP and one VJP, and takes "
                             f"no {given}; leave {'them' if ' and ' in given else 'it'} out, or check the selection "
                             "without --sparse")
        problem = failures.problem = load_problem(func, expression, sources, wrt, settings.dtype)
        hessian = settings.order == 2
        done = compute(problem, hessian, Settings(dtype=settings.dtype), None)
        rtol = 1e-10 if settings.rtol is None else settings.rtol
        found = check_sparse(problem.func, problem.args, done.blocks, wrt=problem.wrt, hessian=hessian, rtol=rtol)
        what = "Hessian" if hessian else "Jacobian"
        with to_stdout():
            if out.format == "json":
                doc = {**header("check", argv), "sparse": True, "passed": found.passed,
                       "forward_error": found.forward_error, "reverse_error": found.reverse_error,
                       "rows": found.rows.tolist(), "cols": found.cols.tolist(), "rtol": rtol,
                       "plan": plan_entry(done)}
                sys.stdout.write(json.dumps(doc) + "\n")
            else:
                render(_check_sections(found, what, done, rtol), out.format, out.color)
        if not found.passed:
            raise CheckFailed(f"the sparse {what} disagrees with one JVP in {counted(len(found.rows), 'row')} and "
                              f"with one VJP in {counted(len(found.cols), 'column')} (rtol {rtol:g})")


def _check_sections(found: Any, what: str, done: Any, rtol: float) -> list:
    """check --sparse for people: the verdict first (coloured on a terminal), then the two products' errors."""
    from jaccli.cli.render.display import Facts, Verdict

    m, n = done.matrix.shape
    if found.passed:
        verdict = Verdict(f"passed: the sparse {what} agrees with one JVP and one VJP (rtol {rtol:g})", True)
    else:
        verdict = Verdict(f"FAILED: the sparse {what} disagrees with one JVP in {counted(len(found.rows), 'row')} "
                          f"and with one VJP in {counted(len(found.cols), 'column')} (rtol {rtol:g})", False)
    facts = Facts({
        "result": f"sparse {what} {m} x {n}, nnz {done.matrix.nnz}",
        "J v against one JVP": f"largest relative error {found.forward_error:.3g}",
        "v^T J against one VJP": f"largest relative error {found.reverse_error:.3g}",
        "rows that disagree": _listed(found.rows),
        "columns that disagree": _listed(found.cols)})
    return [verdict, facts]


def _listed(indices: Any, limit: int = 20) -> str:
    shown = ", ".join(str(i) for i in indices[:limit])
    return (shown + (f", ... ({len(indices)} in all)" if len(indices) > limit else "")) or "none"
