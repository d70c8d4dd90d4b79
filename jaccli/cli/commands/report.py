"""Show and save results: the JSON report, files via jaccli.io.writers, tables via jaccli.cli.render.terminal, text via render_plain.

The JSON report (``--format json`` on stdout; the same keys, without ``data``, are the metadata
stored in ``.npz`` files under ``__meta__`` and in ``.json`` files under ``meta``):

- ``schema``: 1, the version of this layout; keys are only ever added within a version.
- ``jaccli``: jaccli's version. ``command``: jacobian, hessian, grad, jvp, vjp, hvp or check.
  ``argv``: the arguments after ``jaccli``.
- ``function``: ``{"kind": "file", "spec", "path", "name"}`` or ``{"kind": "expression",
  "text", "name"}``; ``name`` is the f in block keys such as ``df_dx``.
- ``inputs``: per parameter name, ``{"shape", "dtype", "differentiated"}`` (after ``--dtype``).
- ``wrt``: the differentiated inputs, in order. ``dtype``: the ``--dtype`` cast, or null.
  ``batch_axis``: 0 or null. ``chunk_size``: an int or "auto".
- ``mode``: the sweeps used (reverse, forward, reverse+forward, forward-over-reverse,
  reverse-over-reverse, cached); ``mode_requested``: ``--mode``.
- ``blocks``: per key (``df_dx``, ``df0_dx``, ``d2f_dx_dy``, ``vjp_x``, ``jvp_f``, ``hvp_x``) an
  object with ``kind`` (jacobian, hessian or vector), ``output`` and ``input`` (names; a vector
  of grad, vjp or hvp is over the input, of jvp over the output, null for several inputs),
  ``shape`` (of ``data``: the full block out.shape + in.shape, or the [R, C] selection, [B, R, C]
  with a batch axis), ``full_shape`` (the whole block's), ``dtype``, ``rows`` and ``cols`` (the
  selected indices of the flattened matrix, or null for all) and ``data`` (nested lists with NaN
  and infinities as the strings "nan", "inf", "-inf"; left out when the result goes to a file).
  Jacobian and Hessian blocks add ``rows_evaluated`` and ``cols_evaluated`` (rows and columns
  computed) and ``connected`` (false when the output does not depend on the input at all).
- ``sweeps``, ``seeds``: sweeps run and seed vectors pushed through them. ``streamed``: whether
  the result was written to disk in row blocks. ``output``: the file written, or null.
- ``timings``: seconds: ``load_s``, ``record_s``, ``evaluate_s`` (with the writing of a streamed
  result) and ``total_s`` always; ``check_s`` only for check and --compare; ``write_s`` only when
  an -o file was written (not streamed). A file's own metadata is made before it is written: it
  never has ``write_s`` or ``total_s``.
- ``warnings``: messages, also printed to stderr (structural zeros, NaN and inf, casts, NumPy's).
- ``nonfinite``: per block holding NaN or inf, ``{"block", "shape", "nan", "posinf", "neginf",
  "entries", "first", "labels"}`` (counts, first indices in the block's shape and their row and
  column labels); empty when all is finite. ``nonfinite_origin``: the first op that produced a
  non-finite value (`jaccli.check.diagnostics.Provenance.to_dict`: op, sweep, file, line, ...) or null.
- ``kinks`` (not check's): per op of f evaluated exactly at its kink at this point (abs at 0, a max/min tie, a
  clip bound), ``{"op", "site", "count", "notes"}`` as `jaccli info` gives them: derivatives through those
  elements are jaccli's convention (``notes``), each also a warning; empty when there is none.
- ``compare``: the verdict of ``--compare`` (see commands/compare.py: reference, passed, rtol,
  atol, entries, mismatches, max_abs_err, max_rel_err (null against a reference of zeros), worst, blocks),
  or null.
- ``strict``: the verdict of ``--strict``, ``{"passed", "disconnected"}`` with an ``{"output",
  "input", "block"}`` per output that does not depend on a differentiated input, or null.
- ``passed``: whether every check asked for (check, --compare, --strict, --fail-on-nonfinite)
  passed; null when none was.
- ``check`` (check only): jaccli.check.verification.CheckReport.to_dict with the CLI's block keys, plus
  ``kink_entries``/``kink_entry_count`` (entries made convention-dependent by a kink) and
  ``entries``; its ``message`` is left out. A check report has no block ``data``.

`jaccli info` and `jaccli ops` print reports of their own, documented in commands/info.py.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import jaccli
from jaccli.io.arrays import is_file
from jaccli.io.atomic import directory_problem, probe_target, write_error
from jaccli.io.devices import written_in_place
from jaccli.io.user_functions import spec_file
from jaccli.errors import UsageError
from jaccli.plurals import counted
from jaccli.io.writers import WRITE_FORMATS

from .compute import Block, Outcome, several_blocks
from .element_labels import element_labels
from .failures import SCHEMA
from .nonfinite import report_entries as nonfinite_entries
from .problem import Problem
from .settings import Output, Settings

TABLE_SAMPLES = 4


def check_output(out: Output, sources: Sequence[str | None], formats: Sequence[str] = WRITE_FORMATS,
                 func: str | None = None) -> None:
    """Refuse, before anything runs, an -o file that cannot be written or that is one of the files read.

    `sources` are the command's INPUTs and the other files it reads (--vector, --compare,
    ``@file`` of --rows/--cols), as given: ``name=SOURCE`` is checked as a whole and as SOURCE.
    `formats`: the extensions the command writes. `func`: FUNC as given (its file is read too).
    """
    if out.path is None:
        return
    try:
        _check_output(out, sources, formats, function_file(func))
    except OSError as error:  # a directory on the way that may not be read (permissions)
        raise write_error(out.path, error) from error


def function_file(func: str | None) -> Path | None:
    """The file that FUNC names (path.py, or path.py:name); None without one (-e)."""
    return None if func is None else Path(spec_file(func))


def _check_output(out: Output, sources: Sequence[str | None], formats: Sequence[str], code: Path | None) -> None:
    dense = tuple(formats) == tuple(WRITE_FORMATS)
    if out.file_format is not None and not dense:
        raise UsageError(f"--output-format is for dense results; here -o's extension tells the format "
                         f"({', '.join(formats)})")
    suffix, own = out.suffix, out.path.suffix.lower()
    if out.file_format is not None and own in formats and own != suffix:
        raise UsageError(f"-o {out.path}: its extension says {own[1:]}, and --output-format {out.file_format}; "
                         "give one of them")
    # What the checks look at: the path as given, but -o /dev/stdout is the results' descriptor (streams.py)
    where = out.path if out.target == out.path.absolute() else out.target
    if not suffix and written_in_place(where):  # (/dev/stdout, a named pipe: no extension to tell the format)
        raise UsageError(f"-o {out.path}: its name has no extension to tell the format; give it with "
                         f"--output-format ({', '.join(f[1:] for f in formats if f != '.zarr')})")  # (a store is no stream)
    if suffix == ".mtx" and dense:
        raise UsageError(f"-o {out.path}: Matrix Market (.mtx) holds a sparse result; give --sparse, or write the "
                         f"dense result to one of {', '.join(formats)}")
    if suffix not in formats:
        raise UsageError(f"-o {out.path}: unknown format {suffix or '(no extension)'!r}; "
                         f"use one of {', '.join(formats)}" + (", or give --output-format" if dense else ""))
    zarr = suffix == ".zarr"
    if zarr:  # (a directory: an existing store is replaced, anything else refused; zarr installed first)
        from jaccli.io.zarr_store import check_store_target, need_zarr

        need_zarr(out.path)
        check_store_target(out.path)
    elif where.is_dir():
        raise UsageError(f"-o {out.path}: it is a directory")
    problem = directory_problem(where)
    if problem:
        raise UsageError(f"-o {out.path}: {problem}")
    if where.exists():
        if code is not None and code.is_file() and os.path.samefile(code, where):
            raise UsageError(f"-o {out.path}: it is {code}, the file of the function; write the result to another "
                             "file")
        for source in filter(None, sources):
            for text in dict.fromkeys((source, source.partition("=")[2], source[1:] if source[:1] == "@" else "")):
                if text and is_file(text) and os.path.samefile(text, where):
                    raise UsageError(f"-o {out.path}: it is {text}, which this command reads as input; write "
                                     "the result to another file")
    # A store is made beside the target as a file is: whether the directory takes one is probed so.
    removed = probe_target(where.with_name(where.name + ".probe") if zarr else where)
    if removed and not out.quiet:
        from .failures import to_stderr

        names = ", ".join(path.name for path in removed[:3]) + (", ..." if len(removed) > 3 else "")
        with to_stderr():
            print(f"Note: removed {counted(len(removed), 'temporary file')} that killed jaccli runs had left in "
                  f"{removed[0].parent} ({names})", file=sys.stderr)


def check_target_early(out: Output, command: str, problem: Problem, settings: Settings) -> None:
    """Refuse, before f runs, a file that cannot hold the result as far as the inputs tell (the number
    of blocks also depends on the outputs of f: check_target checks again once f has run)."""
    if out.path is None:
        return
    suffix = out.suffix
    names = problem.wrt_names
    if suffix in (".npy", ".csv", ".txt") and len(names) > 1 and command != "jvp":  # (jvp: a block per output)
        raise UsageError(f"-o {out.path}: a {suffix} file holds one block, and the result has a block per "
                         f"{'pair of inputs' if command == 'hessian' else 'input'} ({', '.join(names)}); write it "
                         "to .npz or .json, or pick one input with --wrt")
    if suffix in (".csv", ".txt") and settings.batch_axis is not None:
        raise UsageError(f"-o {out.path}: a batched result has 3 axes; write it to .npy, .npz or .json")


def check_target(out: Output, command: str, blocks: list[Block]) -> None:
    """Refuse, before any derivative is computed, a file that cannot hold the result's blocks: what
    check_target_early could not tell before f ran (the blocks of a tuple that f returns)."""
    if out.path is None:
        return
    suffix = out.suffix
    if suffix in (".npy", ".csv", ".txt") and len(blocks) > 1:
        what, wrt = several_blocks(command, blocks)
        raise UsageError(f"-o {out.path}: a {suffix} file holds one block, and the result has {what}; write it "
                         f"to .npz or .json{wrt}")


# ---------------------------------------------------------------- the JSON report


def jsonable(value: Any) -> Any:
    """Plain JSON values; non-finite floats become "nan", "inf", "-inf"."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biu" or np.isfinite(value).all():
            return value.tolist()
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        item = value.item()
        # A long double's item() is itself (no Python type holds it): float() rounds it to a JSON double.
        return jsonable(float(item) if isinstance(item, np.generic) else item)
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def function_entry(problem: Problem) -> dict:
    """The report's ``function``."""
    if problem.user_file is None:
        return {"kind": "expression", "text": problem.spec, "name": problem.name}
    return {"kind": "file", "spec": problem.spec, "path": str(problem.user_file), "name": problem.name}


def inputs_entry(problem: Problem) -> dict:
    """The report's ``inputs``."""
    wrt = problem.wrt_names
    return {n: {"shape": list(a.shape), "dtype": str(a.dtype), "differentiated": n in wrt}
            for n, a in problem.inputs.items()}


def build_report(problem: Problem, outcome: Outcome, settings: Settings, argv: list[str],
                 output: Path | None, with_data: bool) -> dict:
    """The report described in this module's docstring."""
    function = function_entry(problem)
    wrt = problem.wrt_names
    blocks = {}
    for b in outcome.blocks:
        entry: dict[str, Any] = {
            "kind": b.kind, "output": b.of[0] if b.of else b.out_name,
            "input": b.of[1] if b.of else b.in_name or None, "shape": list(b.shape),
            "full_shape": list(b.full_shape), "dtype": str(b.dtype),
            "rows": None if b.rows is None else b.rows.tolist(),
            "cols": None if b.cols is None else b.cols.tolist(),
        }
        if b.lazy is not None:
            entry.update(rows_evaluated=b.stats["rows_evaluated"], cols_evaluated=b.stats["cols_evaluated"],
                         connected=bool(b.lazy.connected))
        if with_data and b.data is not None:
            entry["data"] = jsonable(b.data)
        blocks[b.key] = entry
    nonfinite, origin = nonfinite_entries(outcome)
    checks = {v.key: v.data for v in outcome.verdicts if v.key != "nonfinite"}
    return {
        "schema": SCHEMA,
        "jaccli": jaccli.__version__,
        "command": outcome.name or outcome.command,
        "argv": list(argv),
        "function": function,
        "inputs": inputs_entry(problem),
        "wrt": wrt,
        "dtype": settings.dtype,
        "batch_axis": settings.batch_axis,
        "chunk_size": settings.chunk_size if isinstance(settings.chunk_size, int) else "auto",
        "mode": outcome.mode,
        "mode_requested": settings.mode,
        "blocks": blocks,
        "sweeps": outcome.sweeps,
        "seeds": outcome.seeds,
        "streamed": outcome.streamed,
        "output": None if output is None else str(output),
        "timings": {k: round(v, 6) for k, v in outcome.timings.items()},
        "warnings": list(outcome.warnings),
        "nonfinite": nonfinite,
        "nonfinite_origin": origin,
        **({} if outcome.kinks is None else {"kinks": outcome.kinks}),
        "compare": None,
        "strict": None,
        **checks,
        "passed": all(v.passed for v in outcome.verdicts) if outcome.verdicts else None,
    }


# ---------------------------------------------------------------- matrices with labels


def _matrices(b: Block) -> list[tuple[str, np.ndarray]]:
    """(key, 2-D matrix) per sample: [R, C] of a block; a vector result as one row."""
    assert b.data is not None
    if b.kind == "vector":
        return [(b.key, b.data.reshape(1, -1))]
    rows, cols = len(b.row_indices()), len(b.col_indices())
    if b.batch is None:
        return [(b.key, b.data.reshape(rows, cols))]
    data = b.data.reshape(b.batch, rows, cols)
    return [(f"{b.key}[{s}]", data[s]) for s in range(b.batch)]


def render_blocks(b: Block, limit: int | None = None) -> list[Any]:
    """RenderBlocks for rich tables: row and column labels from the unravelled indices."""
    from jaccli.cli.render.plain import RenderBlock

    if b.kind == "vector":
        assert b.data is not None
        labels = element_labels(b.out_name, b.out_shape, np.arange(b.data.size))
        return [RenderBlock(b.key, b.data.reshape(-1), row_labels=labels, shape=b.shape)]
    out = []
    for s, (key, matrix) in enumerate(_matrices(b)[:limit]):
        sample = s if b.batch is not None else None
        rows = element_labels(b.out_name, b.out_shape, b.row_indices(), sample)
        cols = element_labels(b.in_name, b.in_shape, b.col_indices(), sample)
        shape = b.shape[1:] if b.batch is not None else b.shape
        if matrix.shape[0] == 1 and not b.out_shape:
            # A gradient-like block reads better as a column of input elements.
            out.append(RenderBlock(key, matrix[0], col_labels=cols, shape=shape))
        elif matrix.shape[1] == 1 and not b.in_shape:
            out.append(RenderBlock(key, matrix[:, 0], row_labels=rows, shape=shape))
        else:
            out.append(RenderBlock(key, matrix, rows, cols, shape=shape))
    return out


def plain_blocks(blocks: list[Block]) -> list[Any]:
    from jaccli.cli.render.plain import RenderBlock

    return [RenderBlock(key, m, shape=b.shape[1:] if b.batch is not None else b.shape)
            for b in blocks for key, m in _matrices(b)]


def file_blocks(blocks: list[Block], suffix: str) -> dict[str, np.ndarray]:
    """What goes in the file: full shapes, except .csv/.txt which hold the 2-D matrix."""
    if suffix in (".csv", ".txt"):
        return {b.key: _matrices(b)[0][1] for b in blocks}
    return {b.key: b.data for b in blocks}


# ---------------------------------------------------------------- stdout and stderr


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _selected(b: Block) -> str:
    """``, complete`` for a whole matrix; the rows and columns asked for by --rows and --cols otherwise (the same
    for every block)."""
    if b.kind == "vector":
        return ""
    parts = [f"{len(b.row_indices())} of {counted(b.M, 'row')}" if b.rows is not None else "",
             f"{len(b.col_indices())} of {counted(b.N, 'column')}" if b.cols is not None else ""]
    return f", {', '.join(p for p in parts if p) or 'complete'}"


def _evaluated(b: Block) -> str:
    s = b.stats
    return f"{s['rows_evaluated']} of {counted(b.M, 'row')}, {s['cols_evaluated']} of {counted(b.N, 'column')}"


def show(problem: Problem, outcome: Outcome, settings: Settings, out: Output, report: dict) -> None:
    """Print the result to stdout in the chosen format."""
    from jaccli.cli.render.display import stdout_format  # (not loaded for -o)

    fmt = stdout_format(out.format, out.color)
    if fmt == "json":
        import json

        sys.stdout.write(json.dumps(jsonable(report), allow_nan=False) + "\n")
        return
    precision = out.precision or 6  # (for people: the table; text and csv are for machines, exact)
    if fmt in ("text", "csv"):
        from jaccli.cli.render.plain import format_plain

        text = format_plain(plain_blocks(outcome.blocks), delimiter="," if fmt == "csv" else " ", headers=False)
        sys.stdout.write(text)
        return
    from jaccli.cli.render.terminal import make_console, render_table, rows_for
    from jaccli.cli.render.plain import RenderHeader
    from jaccli.cli.render.words import mode_words, result_words

    console = make_console(sys.stdout, color=out.color)
    what = f"-e {problem.spec!r}" if problem.is_expression else problem.what
    wrt = ", ".join(f"{n} {tuple(problem.inputs[n].shape)}" for n in problem.wrt_names)
    title = f"{result_words(outcome.command)} of {what} with respect to {wrt}"
    # One line for people; --stats shows the rest (and prints it to stderr too).
    dtypes = ", ".join(sorted({str(b.dtype) for b in outcome.blocks}))
    summary = "; ".join([", ".join(f"{b.key} {b.shape}" for b in outcome.blocks) + f" {dtypes}"
                         + _selected(outcome.blocks[0]),
                         f"{counted(outcome.sweeps, 'sweep')} in {mode_words(outcome.mode)}" if outcome.sweeps
                         else "no sweep (nothing left to compute)",
                         _ms(outcome.timings.get("total_s", 0.0))])
    items: dict[str, str] = {}
    if out.stats:
        items = {
            "inputs": ", ".join(f"{n} {tuple(a.shape)} {a.dtype}" for n, a in problem.inputs.items()),
            "mode": outcome.mode + (f" (--mode {settings.mode})" if settings.mode != "auto" else ""),
        }
        for b in outcome.blocks:
            if b.lazy is not None:
                items[f"evaluated {b.key}" if len(outcome.blocks) > 1 else "evaluated"] = _evaluated(b)
    shown = []
    notes = []
    for b in outcome.blocks:
        shown += render_blocks(b, TABLE_SAMPLES)
        if b.batch is not None and b.batch > TABLE_SAMPLES:
            notes.append(f"{b.key}: showing {TABLE_SAMPLES} of {b.batch} samples; use --format text or -o")
    render_table(console, RenderHeader(title, items, summary), shown, precision=precision, heatmap=out.heatmap,
                 max_rows=rows_for(console))
    if out.heatmap:
        from jaccli.cli.render.heatmap import render_heatmap

        for block in shown:
            render_heatmap(console, block)
    for note in notes:
        console.print(note)


def print_stats(outcome: Outcome, settings: Settings) -> None:
    """--stats: what was evaluated and how long it took, on stderr."""
    lines = []
    for b in outcome.blocks:
        if b.lazy is not None and not outcome.streamed:
            lines.append(f"{b.key}: {_evaluated(b)}")
        elif outcome.streamed:
            lines.append(f"{b.key}: {len(b.row_indices())} of {counted(b.M, 'row')} streamed to disk")
    chunk = settings.chunk_size if isinstance(settings.chunk_size, int) else "auto"
    lines.append(f"sweeps: {outcome.sweeps}, seeds: {outcome.seeds}, chunk size: {chunk}, mode: {outcome.mode}, "
                 f"path: {outcome.path}")
    t = outcome.timings
    parts = [f"{k[:-2]} {_ms(v)}" for k, v in t.items() if k != "total_s"]
    lines.append(f"time: {', '.join(parts)}; total {_ms(t.get('total_s', 0.0))}")
    lines += outcome.parallel
    for line in lines:
        sys.stderr.write(f"stats: {line}\n")
