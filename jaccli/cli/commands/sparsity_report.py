"""The sparsity command: the pattern's report (nnz, bandwidth, colours per method, plan) and its spy view."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

import click
import numpy as np

from jaccli.io.atomic import recording_renames, writing
from jaccli.errors import UsageError

from .failures import shown_path, to_stderr, to_stdout
from .plotting import check_plot
from .problem import load_problem
from jaccli.cli.render.display import stdout_format
from .report import check_output
from .run import Failures, observed
from .settings import Output
from .sparse_results import HESSIAN_MODE, header, need_scipy

# Two pattern rows per character: upper half, lower half, both.
_HALVES = {1: "\u2580", 2: "\u2584", 3: "\u2588"}
SPY_ROWS = 24


def _sites(found: list) -> list[dict]:
    return [{"operation": op, "file": shown_path(str(site[0])), "line": int(site[1])} for op, site in found]


def report_entry(S: Any, argv: list[str] = ()) -> dict:
    lower, upper = S.bandwidth
    plan = S.plan
    return {**header("sparsity", argv), "kind": "hessian" if S.hessian else "jacobian",
            "shape": list(S.shape), "nnz": S.nnz, "density": S.density, "bandwidth": [lower, upper],
            "colors": S.colors, "mode": S.mode, "recovery": S.recovery,
            "sweeps": {"forward": int(plan.forward_colors), "reverse": int(plan.reverse_colors)},
            "tried": {method: {k: int(v) for k, v in by.items()} for method, by in (plan.tried or {}).items()},
            "dense_ops": _sites(S.dense_ops), "compared": _sites(S.compared)}


def spy_lines(pattern: Any, width: int, height: int = SPY_ROWS) -> list[str]:
    """The whole pattern pooled into at most `width` x `height` characters (two rows of cells per
    character): a cell is drawn when any entry falls in it, so no nonzero disappears."""
    m, n = pattern.shape
    if not m or not n:
        return []
    cols = max(1, min(n, width))
    cells_high = max(1, min(m, 2 * height))
    coo = pattern.tocoo()
    r = coo.row.astype(np.int64) * cells_high // m
    c = coo.col.astype(np.int64) * cols // n
    grid = np.zeros(((cells_high + 1) // 2, cols), dtype=np.int8)
    np.bitwise_or.at(grid, (r // 2, c), np.where(r % 2 == 0, 1, 2).astype(np.int8))
    return ["".join(_HALVES.get(int(v), " ") for v in row).rstrip() for row in grid]


def _report_lines(S: Any, spec: str) -> list[str]:
    e = report_entry(S)
    m, n = S.shape
    lines = [f"Sparsity of the {e['kind']} of {spec}",
             f"  shape       {m} x {n}",
             f"  nnz         {S.nnz} (density {S.density:.3g})",
             f"  bandwidth   lower {e['bandwidth'][0]}, upper {e['bandwidth'][1]}"]
    for method, by in e["tried"].items():
        lines.append(f"  {method:<11} " + ", ".join(f"{k} {v}" for k, v in by.items()))
    sweeps = e["sweeps"]
    lines.append(f"  plan        {S.mode}: {S.colors} sweeps ({sweeps['forward']} forward, {sweeps['reverse']} reverse)"
                 + (", recovered by substitution" if S.recovery == "substitution" else ""))
    for site in e["dense_ops"]:
        lines.append(f"  dense       {site['operation']} at {site['file']}:{site['line']} (its structure is not known: "
                     "taken as dense)")
    for site in e["compared"]:
        lines.append(f"  compared    f compared traced values ({site['operation']}) at {site['file']}:{site['line']}: "
                     "the pattern holds for the control path f took at this point")
    return lines


def _show(S: Any, spec: str, out: Output, argv: list[str]) -> None:
    fmt = stdout_format(out.format, out.color)
    if fmt == "json":
        sys.stdout.write(json.dumps(report_entry(S, argv), allow_nan=False) + "\n")
        return
    lines = _report_lines(S, spec)
    if fmt == "text":
        width = 78
        sys.stdout.write("".join(line + "\n" for line in lines + [""] + spy_lines(S.pattern, width)))
        return
    from jaccli.cli.render.terminal import make_console

    console = make_console(sys.stdout, color=out.color)
    width = max(10, (console.width or shutil.get_terminal_size().columns) - 4)
    height = max(4, shutil.get_terminal_size().lines // 2)
    for line in lines:
        console.print(line, highlight=False, markup=False)
    console.print()
    for line in spy_lines(S.pattern, width, height):
        console.print("  " + line, style="cyan", highlight=False, markup=False)


def _spy(S: Any, out: Output) -> None:
    """The pattern as a spy plot, each entry in its colour group's colour (the forward side's columns, or
    the reverse side's rows when the plan has no forward sweep)."""
    from jaccli.cli.render.plots import spy

    plan = S.plan
    along, colors = ("columns", plan.column_colors) if plan.forward_colors else ("rows", plan.row_colors)
    kind = "Hessian" if S.hessian else "Jacobian"
    with writing(out.plot):
        spy(S.pattern, out.target_plot, colors=colors, along=along,
            title=f"{kind} pattern, {S.shape[0]} x {S.shape[1]}, nnz {S.nnz}: {S.mode} plan of {S.colors} sweeps")
    if not out.quiet:
        sys.stderr.write(f"wrote {out.plot}\n")


def sparsity_command(*, func: str | None, expression: str | None, sources: tuple[str, ...], wrt: str | None,
                     dtype: str | None, hessian: bool, mode: str, out: Output, debug: bool,
                     recovery: str = "auto", argv: list[str] = ()) -> None:
    """Detect the pattern of FUNC at the INPUTs, colour it, report it; -o P.npz saves it for --pattern."""
    import jaccli

    with recording_renames() as written, Failures(func, expression, debug, written) as failures, observed(out):
        need_scipy("jaccli sparsity")
        if hessian and mode != "auto":
            raise UsageError(HESSIAN_MODE)
        if out.path is not None and out.path.suffix.lower() != ".npz":
            raise UsageError(f"-o {out.path}: a pattern is saved as .npz (then reused with --pattern)")
        check_output(out, sources, formats=(".npz",), func=None if expression is not None else func)
        check_plot(out)
        problem = failures.problem = load_problem(func, expression, sources, wrt, dtype)
        S = jaccli.sparsity(problem.func, problem.args, wrt=problem.wrt, hessian=hessian, mode=mode,
                            recovery=recovery)
        if out.path is not None:
            with writing(out.path):
                S.save(out.target)
        if out.plot is not None:
            _spy(S, out)
        spec = f"-e {problem.spec!r}" if problem.is_expression else problem.what
        with to_stderr():
            with to_stdout():
                if out.path is None or out.format is not None:
                    _show(S, spec, out, argv)
            if out.path is not None and not out.quiet:
                click.echo(f"wrote {out.path}: the pattern ({S.shape[0]} x {S.shape[1]}, nnz {S.nnz}) and its "
                           f"{S.mode} plan of {S.colors} sweeps", err=True)
