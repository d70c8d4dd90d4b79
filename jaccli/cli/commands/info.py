"""`jaccli info` (what f is at a point, and how jacobian would evaluate it) and `jaccli ops` (what jaccli supports).

The info report (``--format json``) has the keys ``schema``, ``jaccli``, ``command`` ("info"),
``argv``, ``function``, ``inputs``, ``wrt``, ``dtype``, ``batch_axis`` as in the jacobian report, and:

- ``order``: 1 (Jacobian blocks) or 2 (Hessian blocks).
- ``outputs``: per output name (f, or f0, f1, ... for a tuple) ``{"shape", "dtype"}``.
- ``operation_count``: operations recorded while f ran (its inputs not counted); ``functions``:
  the NumPy functions, methods and operators among them, name -> count.
- ``blocks``: per key: ``kind``, ``output``, ``input``, ``shape`` (the dense block:
  out.shape + in.shape), ``matrix_shape`` ([M, N], [B, M, N] with a batch axis), ``dtype``,
  ``nbytes`` (of the dense block), ``connected``, ``mode`` (reverse, forward,
  forward-over-reverse, or cached: filled by another block's sweeps), ``chunk_size`` (seeds per
  sweep: a number, for a cached block that of the sweeps that fill it) and ``sweeps``.
- ``nbytes``: the dense size of every block together. ``mode``, ``chunk_size``, ``sweeps``:
  the modes used ("+"-joined), the largest chunk and the total sweeps `jaccli jacobian`
  (`jaccli hessian` for order 2) would run for the whole result with --mode auto.
- ``disconnected``: ``{"output", "input", "block"}`` for each output that does not depend on
  a differentiated input at all.
- ``kinks``: ops evaluated exactly at a kink at this point: ``{"op", "site", "count", "notes"}``.
- ``timings``: ``load_s``, ``record_s``, ``total_s``. ``warnings``: also printed to stderr.

The ops report has ``schema``, ``jaccli``, ``command`` ("ops"), ``argv``, ``family`` (the
families asked for, or null), ``names`` (the NAMEs asked for, in lower case, or null), ``count``,
``columns`` (the keys of each row) and ``operations``
(rows of `jaccli.api.ops_table.ops_table`: ``name``, ``family``, ``kind``, ``reverse``, ``forward``,
``max_order``, ``block_seeds``, ``notes``).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter

import click
import numpy as np

import jaccli
from jaccli.api.sweep_seeds import default_memory_budget
from jaccli.io.npy_stream import human_bytes
from jaccli.plurals import counted

from .compute import SWEEP_KINDS, Block, matrix_blocks
from jaccli.cli.render.display import Facts, Section, Table, render
from jaccli.cli.render.words import mode_words
from .failures import to_stderr, to_stdout
from .kink_notes import kink_entries
from .problem import Problem, load_problem
from .report import SCHEMA, function_entry, inputs_entry, jsonable
from .run import Failures, observed
from .settings import Output, Settings


def _plan(blocks: list[Block], order: int) -> list[dict]:
    """How `jaccli jacobian` (hessian) with --mode auto would fill each full block, in order.

    The same choices as `Evaluator.ensure`: a block the recording proves diagonal (an elementwise
    function) takes one forward sweep with a tangent of ones; a fresh Jacobian block takes reverse sweeps when it
    has no more rows than columns, and the rows (columns) it computes serve every block of the
    same output (input); a Hessian's sweeps give rows of every block of one input, so either
    side's rows make a block known.
    """
    ev = blocks[0].lazy._ev
    per_sample = ev.B if ev.batch else 1
    # the chunk size of the sweeps that fill each output's rows (input's columns): a cached block's own
    rows_done: dict[int, int] = {}
    cols_done: dict[int, int] = {}
    diagonals: set[tuple[int, int]] = set()  # blocks whose diagonal sweep is planned
    plan = []
    for b in blocks:
        i, j = b.lazy._i, b.lazy._j
        if order == 1 and (i, j) in diagonals:
            # Swept when a block sharing its rows (columns) was filled from diagonals: each diagonal
            # block sharing them takes its own sweep then (a tangent of ones in its input).
            plan.append({"mode": "diagonal", "chunk_size": 1, "sweeps": 1})
            continue
        if order == 2:
            if i in rows_done or j in rows_done:
                plan.append({"mode": "cached", "chunk_size": rows_done.get(i, rows_done.get(j)), "sweeps": 0})
                continue
            a = i if ev.N[i] <= ev.N[j] else j
            chunk = ev.chunk(ev.N[a], max(ev.M + [1]) * per_sample)
            rows_done[a] = chunk
            plan.append({"mode": "forward-over-reverse", "chunk_size": chunk, "sweeps": math.ceil(ev.N[a] / chunk)})
        elif i in rows_done or j in cols_done:
            plan.append({"mode": "cached", "chunk_size": rows_done[i] if i in rows_done else cols_done[j], "sweeps": 0})
        elif ev.is_diagonal(i, j) and ev.diagonal_fill(i, j, ev.M[i] <= ev.N[j]):
            # Elementwise: one forward sweep with a tangent of ones gives the whole diagonal.
            by_rows = ev.M[i] <= ev.N[j]
            if by_rows:
                rows_done[i] = 1
            else:
                cols_done[j] = 1
            diagonals.update(blk for blk in ev._sharing(i, j, by_rows) if ev.is_diagonal(*blk))
            plan.append({"mode": "diagonal", "chunk_size": 1, "sweeps": 1})
        elif ev.M[i] <= ev.N[j]:
            chunk = ev.chunk(ev.M[i], max(ev.N + [1]) * per_sample)
            rows_done[i] = chunk
            plan.append({"mode": "reverse", "chunk_size": chunk, "sweeps": math.ceil(ev.M[i] / chunk)})
        else:
            chunk = ev.chunk(ev.N[j], max(ev.M + [1]) * per_sample)
            cols_done[j] = chunk
            plan.append({"mode": "forward", "chunk_size": chunk, "sweeps": math.ceil(ev.N[j] / chunk)})
    return plan


def _report(problem: Problem, settings: Settings, argv: list[str], timings: dict) -> dict:
    from jaccli.check.diagnostics import disconnected_pairs, recording_of
    from jaccli.engine import Recording

    start = time.perf_counter()
    order = settings.order
    with np.errstate(all="ignore"):
        blocks = matrix_blocks(problem, "jacobian" if order == 1 else "hessian", settings)
        # The Hessian's recording is of the gradient; operations and outputs are f's own.
        rec = recording_of(blocks[0].lazy) if order == 1 else Recording(problem.func, problem.args, problem.wrt)
    timings["record_s"] = time.perf_counter() - start
    names = problem.wrt_names
    outs = [problem.name] if not rec.out_is_tuple else [f"{problem.name}{i}" for i in range(len(rec.outputs))]
    inputs = set(id(n) for n in rec.in_nodes)
    recorded = [n for n in rec.trace.nodes if id(n) not in inputs]
    plan = _plan(blocks, order)
    entries = {}
    for b, p in zip(blocks, plan):
        lead = [b.batch] if b.batch is not None else []
        entries[b.key] = {"kind": b.kind, "output": b.out_name, "input": b.in_name, "shape": list(b.full_shape),
                          "matrix_shape": lead + [b.M, b.N], "dtype": str(b.dtype), "nbytes": b.nbytes,
                          "connected": bool(b.lazy.connected), **p}
    # In the order the jacobian command's report names them (a Hessian's plan has one mode)
    modes = sorted({p["mode"] for p in plan if p["mode"] != "cached"},
                   key=lambda m: SWEEP_KINDS.index(m) if m in SWEEP_KINDS else len(SWEEP_KINDS))
    chunks = [p["chunk_size"] for p in plan if p["mode"] != "cached"]
    kinks = kink_entries(rec)
    return {
        "schema": SCHEMA, "jaccli": jaccli.__version__, "command": "info", "argv": list(argv),
        "function": function_entry(problem), "inputs": inputs_entry(problem), "wrt": names,
        "dtype": settings.dtype, "batch_axis": settings.batch_axis, "order": order,
        "outputs": {o: {"shape": list(np.shape(v)), "dtype": str(np.result_type(v))}
                    for o, v in zip(outs, rec.outputs)},
        "operation_count": len(recorded),
        "functions": dict(sorted(Counter(n.prim.name for n in recorded).items())),
        "blocks": entries,
        "nbytes": sum(b.nbytes for b in blocks),
        "disconnected": [{"output": outs[i], "input": names[j],
                          "block": f"d{outs[i]}_d{names[j]}"} for i, j in disconnected_pairs(rec)],
        "kinks": kinks,
        "mode": "+".join(modes) or "cached",
        "chunk_size": max(chunks),
        "sweeps": sum(p["sweeps"] for p in plan),
        "timings": timings,
        "warnings": list(problem.warnings),
    }


def _shape(shape: list[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n} B ({human_bytes(n)})"


def _sections(doc: dict, problem: Problem) -> list[Section]:
    what = f"-e {problem.spec!r}" if problem.is_expression else problem.what
    kind = "jacobian" if doc["order"] == 1 else "hessian"
    return [
        f"info: {what}",
        Table("inputs", ["name", "shape", "dtype", "differentiated"],
              [[n, _shape(e["shape"]), e["dtype"], "yes" if e["differentiated"] else "no (data)"]
               for n, e in doc["inputs"].items()]),
        Table("outputs", ["name", "shape", "dtype"],
              [[n, _shape(e["shape"]), e["dtype"]] for n, e in doc["outputs"].items()]),
        Table(f"{kind} blocks", ["block", "shape", "matrix", "dtype", "bytes", "connected", "mode", "chunk",
                                 "sweeps"],
              [[k, _shape(e["shape"]), " x ".join(map(str, e["matrix_shape"])), e["dtype"],
                _bytes(e["nbytes"]), "yes" if e["connected"] else "NO",
                "forward (diagonal)" if e["mode"] == "diagonal" else e["mode"],
                str(e["chunk_size"]), str(e["sweeps"])]
               for k, e in doc["blocks"].items()], wrap=["bytes"]),
        Facts({"dense size": _bytes(doc["nbytes"]),
               f"{kind} would use": f"{mode_words(doc['mode'])}, chunk size {doc['chunk_size']}, "
                                    f"{counted(doc['sweeps'], 'sweep')}",
               "operations": f"{doc['operation_count']} recorded"}),
        Table("NumPy functions used", ["function", "count"],
              [[name, str(count)] for name, count in doc["functions"].items()]),
        Table("disconnected (output, input) pairs", ["output", "input", "block"],
              [[d["output"], d["input"], d["block"]] for d in doc["disconnected"]]),
        Table("kinks at this point (derivatives there are a convention)", ["op", "site", "count", "convention"],
              [[k["op"], k["site"] or "-", str(k["count"]), k["notes"] or "-"] for k in doc["kinks"]],
              prose=["convention"]),
    ]


def info(*, func: str | None, expression: str | None, sources: tuple[str, ...], wrt: str | None,
         settings: Settings, out: Output, argv: list[str], debug: bool) -> None:
    """Load FUNC, record it once, and print what it is and how it would be differentiated."""
    start = time.perf_counter()
    with Failures(func, expression, debug) as failures, observed(out):
        default_memory_budget()  # a JACCLI_MEMORY_BUDGET that names no size is refused before f runs
        problem = failures.problem = load_problem(func, expression, sources, wrt, settings.dtype)
        timings = {"load_s": time.perf_counter() - start}
        doc = _report(problem, settings, argv, timings)
        timings["total_s"] = time.perf_counter() - start
        doc["timings"] = {k: round(v, 6) for k, v in timings.items()}
        if not out.quiet:
            with to_stderr():
                for warning in doc["warnings"]:
                    click.echo(f"Warning: {warning}", err=True)
        with to_stdout():
            if out.format == "json":
                sys.stdout.write(json.dumps(jsonable(doc), allow_nan=False) + "\n")
            else:
                render(_sections(doc, problem), out.format, out.color)


def _matches(row: dict, words: tuple[str, ...]) -> bool:
    """Whether an ops row is one that a NAME asks for: a part of its name, or its family."""
    name = row["name"].lower()
    return any(word in name or word == row["family"] for word in words)


def show_ops(family: list[str] | None, fmt: str | None, color: str, argv: list[str],
             names: tuple[str, ...] = ()) -> None:
    """The registry's table: every supported NumPy function and what it supports; `names` keep the rows whose
    name holds one of them, or whose family is one of them (`jaccli ops det sin`)."""
    from jaccli.api.ops_table import OPS_COLUMNS, format_ops_plain, ops_table

    words = tuple(w.strip().lower() for w in names if w.strip())
    rows = [r for r in ops_table() if (family is None or r["family"] in family) and (not words or _matches(r, words))]
    if words and not rows:
        with to_stderr():
            click.echo(f"Note: no supported NumPy function, method or operator matches {' '.join(names)}; jaccli "
                       "refuses what is not listed (exit 3). See `jaccli ops` for them all.", err=True)
    if fmt == "json":
        doc = {"schema": SCHEMA, "jaccli": jaccli.__version__, "command": "ops", "argv": list(argv),
               "family": family, "names": list(words) or None, "count": len(rows),
               "columns": [key for key, _ in OPS_COLUMNS], "operations": rows}
        sys.stdout.write(json.dumps(doc) + "\n")
        return
    from jaccli.cli.render.display import stdout_format

    if stdout_format(fmt, color) == "text":
        sys.stdout.write(format_ops_plain(rows) + "\n")
        return
    from jaccli.cli.render.ops_view import show_ops_table

    matching = f" matching {' '.join(names)}" if words else ""
    show_ops_table(rows, f"{len(rows)} supported NumPy functions, methods and operators{matching}", color)
