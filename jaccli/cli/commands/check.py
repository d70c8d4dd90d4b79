"""`jaccli check`: reverse mode against forward mode against float64 finite differences, as a verdict."""

from __future__ import annotations

import warnings

import numpy as np

from jaccli.check.report import (CheckReport, nan_message, nested_derivative_message, unresolved_message,
    unrepeatable_message, worst_failing)
from jaccli.check.verification import check_derivative
from jaccli.errors import UsageError
from jaccli.plurals import counted, verb

from .compute import Block, Outcome, Verdict
from .element_labels import element_labels
from jaccli.cli.render.check_report import check_sections, entry_at as _at, number as _g
from jaccli.cli.render.display import render
from .failures import shown_path
from .problem import Problem
from .settings import Output, Settings

MAX_LISTED = 20


def _one_selection(blocks: list[Block], attr: str) -> np.ndarray | None:
    """check_derivative takes one row (column) selection for every block: they must agree."""
    chosen = [getattr(b, attr) for b in blocks]
    if chosen[0] is None:
        return None
    if any(c is None or not np.array_equal(c, chosen[0]) for c in chosen):
        what = "pick one input with --wrt" if attr == "cols" else "check the outputs' rows one at a time"
        raise UsageError(f"--{attr} selects different {attr} in blocks of different sizes "
                         f"({', '.join(b.key for b in blocks)}); check takes one selection for every block: {what}, "
                         "or give explicit indices that fit every block")
    return chosen[0]


def _label(b: Block, row: int, col: int | None, sample: int | None = None) -> str:
    text = element_labels(b.out_name, b.out_shape, np.array([row]), sample)[0]
    return text if col is None else f"{text}, {element_labels(b.in_name, b.in_shape, np.array([col]), sample)[0]}"


def _entry(e: dict, b: Block) -> dict:
    """A library entry (block name, flat row and column, and sample with a batch axis) with the CLI's
    block key and element labels."""
    return {**e, "block": b.key, "label": _label(b, e["row"], e.get("col"), e.get("sample"))}


def _remap(report: CheckReport, problem: Problem, blocks: list[Block]) -> dict:
    """The library's report with the CLI's block keys (df_dx, d2f_dx_dy) and paths as typed."""
    d = report.to_dict()
    by_name = {lib["name"]: b for lib, b in zip(d["blocks"], blocks)}
    for lib, b in zip(d["blocks"], blocks):
        lib["name"] = b.key
    d["worst"] = [_entry(w, by_name[w["block"]]) for w in d["worst"]]
    d["modes"]["worst"] = [_entry(w, by_name[w["block"]]) for w in d["modes"]["worst"]]
    d["convention_dependent"] = [_entry(e, by_name[e["block"]]) for e in d["convention_dependent"]]
    d["nan"] = [_entry(e, by_name[e["block"]]) for e in d["nan"]]
    d["unresolved"] = [_entry(e, by_name[e["block"]]) for e in d["unresolved"]]
    if d["gradient"] is not None:
        # The gradient's rows are elements of an input: label them like the Hessian's diagonal blocks.
        diagonal = {f"df/d{n}": b for n, b in zip(problem.wrt_names, blocks[::len(problem.wrt) + 1])}
        d["gradient"]["worst"] = [{**w, "block": f"d{problem.name}_d{diagonal[w['block']].out_name}",
                                   "label": _label(diagonal[w["block"]], w["row"], None, w.get("sample"))}
                                  for w in d["gradient"]["worst"]]
    entries, count = [], 0
    for kink in d["kinks"]:
        if kink["file"]:
            kink["file"] = shown_path(kink["file"])
            kink["site"] = f"{kink['file']}:{kink['line']}"
        for key in ("rows", "cols", "entries", "entry_count"):
            kink[key] = {by_name[k].key: v for k, v in kink[key].items()}
        for b in blocks:
            count += kink["entry_count"].get(b.key, 0)
            for e in kink["entries"].get(b.key, [])[:MAX_LISTED - len(entries)]:
                entries.append({"block": b.key, **e, "label": _label(b, e["row"], e["col"], e.get("sample")),
                                "op": kink["op"], "site": kink["site"], "notes": kink["notes"]})
    d["kink_entries"], d["kink_entry_count"] = entries, count
    d["entries"] = sum(lib["entries"] for lib in d["blocks"])
    d.pop("message")
    return d


def _failure(d: dict) -> str:
    parts = [unrepeatable_message(d["unrepeatable"])] if d["unrepeatable"] is not None else []
    bad = sum(b["mismatches"] for b in d["blocks"])
    if bad:
        parts.append(f"{bad} of {counted(d['entries'], 'entry')} {verb(bad, 'differ', 'differs')} from finite "
                     f"differences beyond rtol={d['rtol']:g}, "
                     f"atol={d['atol']:g}")
    if d["nan_count"]:
        parts.append(nan_message(d["nan_count"], d["nan"][0]))
    if not d["modes"]["passed"]:
        parts.append(f"reverse and forward mode disagree on {counted(d['modes']['mismatches'], 'entry')}")
    if d["gradient"] is not None and not d["gradient"]["passed"]:
        parts.append("the gradient differs from finite differences of f at "
                     f"{counted(d['gradient']['mismatches'], 'entry')}")
    if d["nested_derivative"] is not None:
        parts.append(nested_derivative_message(d["nested_derivative"]))
    if d["verdict"] == "inconclusive":
        return "check inconclusive: " + unresolved_message(d["unresolved_count"], d["unresolved"])
    text = "check failed: " + "; ".join(parts or ["see the report"])
    w = worst_failing(d)
    if w is not None and not d["nan_count"]:
        values = f"AD {_g(w['ad'])} vs finite differences {_g(w['fd'])}" if "ad" in w \
            else f"reverse {_g(w['reverse'])} vs forward {_g(w['forward'])}"
        text += f"; worst {_at(w)} ({w['label']}): {values}"
    return text


def check(problem: Problem, outcome: Outcome, settings: Settings, out: Output) -> Verdict:
    """Run check_derivative on the same slice as the blocks, and make it the command's result."""
    blocks = outcome.blocks
    rows, cols = _one_selection(blocks, "rows"), _one_selection(blocks, "cols")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # Finite-difference steps may leave f's domain; what matters is reported in the verdict.
        warnings.simplefilter("ignore")
        report = check_derivative(problem.func, problem.args, wrt=problem.wrt, order=settings.order, rows=rows,
                                  cols=cols, rtol=settings.rtol, atol=settings.atol,
                                  batch_axis=settings.batch_axis)
    outcome.sweeps += report.sweeps
    outcome.mode = "reverse+forward" if settings.order == 1 else "reverse-over-reverse+forward-over-reverse"
    data = _remap(report, problem, blocks)
    what = f"-e {problem.spec!r}" if problem.is_expression else problem.what
    if out.plot is not None:
        from .plotting import draw

        draw(blocks, list(report.errors.values()), out, f"|AD - finite differences| of {what}", "error")
    sections = check_sections(data, what, next((v for v in outcome.verdicts if v.key == "strict"), None))

    def show(o: Output) -> None:
        render(sections, o.format, o.color)

    return Verdict("check", data["passed"], data, failure="" if data["passed"] else _failure(data), show=show,
                   inconclusive=data["verdict"] == "inconclusive")
