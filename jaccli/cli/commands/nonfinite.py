"""NaN and inf in a result: how many, where, and the operation (with the user's file:line) that made the first."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.check.diagnostics import (NonfiniteMonitor, Provenance, SweepBound, first_nonfinite_primal,
    nonfinite_report, recording_of)
from jaccli.plurals import counted

from .compute import Block, Outcome
from .element_labels import element_labels, entry_label
from .failures import shown_path
from .problem import Problem

MAX_LISTED = 3


def _counts(entry: dict) -> str:
    parts = [f"{entry[k]} {word}" for k, word in (("nan", "NaN"), ("posinf", "inf"), ("neginf", "-inf")) if entry[k]]
    return " and ".join(parts)


def watch(outcome: Outcome) -> None:
    """Bound the entries of the blocks' evaluators from their sweeps' results as they run (SweepBound),
    before the blocks are evaluated: `scan` then need not look at every entry of a finite result."""
    for b in outcome.blocks:
        if b.lazy is not None and b.lazy._ev.watch is None:
            b.lazy._ev.watch = SweepBound()


def _proved_finite(b: Block) -> bool:
    bound = b.lazy._ev.watch if b.lazy is not None else None
    return isinstance(bound, SweepBound) and bound.proves_finite(b.lazy._ev, b.data.dtype)


def scan(problem: Problem, outcome: Outcome, monitored: Callable[[], tuple[NonfiniteMonitor, Outcome]]) -> None:
    """Count the non-finite entries of every block in memory and find where the first came from.

    A block whose sweeps `watch` proved finite is not looked at again (for a structured Jacobian, a
    scan of the dense result would cost about as much as computing it); a streamed result is not
    scanned: it is on disk, not in memory. `monitored` computes the command again with a
    NonfiniteMonitor watching the sweeps; it is called only when the result holds NaN or inf that
    f's own values do not explain.
    """
    blocks = {b.key: b for b in outcome.blocks if b.data is not None and not _proved_finite(b)}
    found = nonfinite_report({k: b.data for k, b in blocks.items()}, max_indices=MAX_LISTED)
    for entry in found:
        b = blocks[entry["block"]]
        entry["entries"] = int(b.data.size)
        entry["labels"] = [entry_label(b, tuple(i)) for i in entry["first"]]
    outcome.nonfinite = found
    if found:
        origin = _origin(problem, outcome, monitored)
        if origin is not None and problem.is_expression:
            origin.file = origin.line = None  # an expression has no file; a frame found would be jaccli's caller
        elif origin is not None and origin.file:
            origin.file = shown_path(origin.file)
        outcome.origin = origin


def _origin(problem: Problem, outcome: Outcome,
            monitored: Callable[[], tuple[NonfiniteMonitor, Outcome]]) -> Provenance | None:
    """The first op that produced a non-finite value: in f itself, else in the sweeps."""
    if outcome.command == "jacobian":
        # The blocks hold f's recording: f's own values need no sweep to explain them.
        prov = first_nonfinite_primal(recording_of([b.lazy for b in outcome.blocks]))
        if prov is not None:
            return prov
        monitor, again = monitored()
        # The nodes the monitor saw are those of the new recording.
        return monitor.provenance(recording_of([b.lazy for b in again.blocks]))
    # Other commands keep no recording of f (a Hessian's records the gradient): record f again,
    # only now that something is known to be wrong.
    from jaccli.engine import Recording

    try:
        with np.errstate(all="ignore"):
            rec = Recording(problem.func, problem.args, problem.wrt)
    except Exception:  # noqa: BLE001 - f ran before, so this is not expected; explain with the sweeps alone
        rec = None
    if rec is not None:
        prov = first_nonfinite_primal(rec)
        if prov is not None:
            return prov
    monitor, _ = monitored()
    if outcome.command in ("hessian", "hvp"):
        # A Hessian's sweeps run over the recorded gradient (the gradient's reverse sweep is
        # recorded, so the monitor saw it as a reverse sweep).
        return monitor.provenance(None)
    return monitor.provenance(rec)


def origin_text(outcome: Outcome) -> str:
    origin: Provenance | None = outcome.origin
    if origin is None:
        return "the operation that produced the first non-finite value could not be traced"
    return f"first non-finite value: {origin.message}"


def warning_lines(outcome: Outcome) -> list[str]:
    """One line per block holding NaN or inf, then one naming the operation behind the first."""
    if not outcome.nonfinite:
        return []
    lines = []
    for entry in outcome.nonfinite:
        many = entry["nan"] + entry["posinf"] + entry["neginf"]
        where = "at" if many <= len(entry["labels"]) else "first at"
        lines.append(f"{entry['block']} holds {_counts(entry)} (of {counted(entry['entries'], 'entry')}), {where} "
                     + "; ".join(f"({label})" for label in entry["labels"]))
    lines.append(origin_text(outcome))
    return lines


def failure(outcome: Outcome) -> str:
    """The --fail-on-nonfinite error: every count and the origin in one line."""
    counts = "; ".join(f"{e['block']} holds {_counts(e)} (first at ({e['labels'][0]}))" for e in outcome.nonfinite)
    return f"--fail-on-nonfinite: {counts}; {origin_text(outcome)}"


def report_entries(outcome: Outcome) -> tuple[list[dict], Any]:
    """The JSON report's ``nonfinite`` list and ``nonfinite_origin`` object (or None)."""
    origin = outcome.origin.to_dict() if outcome.origin is not None else None
    return [dict(e) for e in outcome.nonfinite], origin


def sparse_scan(problem: Problem, matrix: Any, hessian: bool, spans: dict | None, rec: Any = None) \
        -> tuple[list[dict], Any]:
    """The NaN and inf among a sparse result's stored entries (`matrix`, CSR: the others are structural zeros),
    as the dense `scan` counts them, in one entry for the whole matrix; and the operation that made the first
    (Provenance, or None): f's own values first, else one product along the first such entry's column (a JVP,
    or for a Hessian an HVP) with a NonfiniteMonitor watching its sweeps. `spans`: where each output and input
    sits in the matrix (sparse_results.layout; None for a selection: entries are named by row and column); `rec`:
    f's recording where the run kept it (a sparse Jacobian's), else f is recorded again to find the first."""
    data = matrix.data
    bad = ~np.isfinite(data)
    if not bad.any():
        return [], None
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))[bad]
    cols, values = matrix.indices[bad], data[bad]
    entry = {"block": f"the sparse {'Hessian' if hessian else 'Jacobian'}", "nan": int(np.isnan(values).sum()),
             "posinf": int((values == np.inf).sum()), "neginf": int((values == -np.inf).sum()),
             "entries": int(matrix.nnz), "first": [[int(r), int(c)] for r, c in zip(rows[:MAX_LISTED], cols)],
             "labels": [f"{_span_label(spans, 'rows', r)}, {_span_label(spans, 'cols', c)}"
                        for r, c in zip(rows[:MAX_LISTED], cols)]}
    return [entry], _sparse_origin(problem, hessian, int(cols[0]), rec)


def _span_label(spans: dict | None, axis: str, k: int) -> str:
    if spans is None:
        return f"{axis[:-1]} {k}"
    span = next(s for s in spans[axis] if s["start"] <= k < s["stop"])
    return element_labels(span["name"], tuple(span["shape"]), np.array([k - span["start"]]))[0]


def _sparse_origin(problem: Problem, hessian: bool, col: int, rec: Any) -> Any:
    import warnings

    import jaccli
    from jaccli.engine import Recording

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (f's warnings were reported from its first run)
        try:
            prov = first_nonfinite_primal(rec or Recording(problem.func, problem.args, problem.wrt))
        except Exception:  # noqa: BLE001 - f ran before; explain with the sweeps alone
            prov = None
        if prov is not None:
            if problem.is_expression:
                prov.file = prov.line = None
            elif prov.file:
                prov.file = shown_path(prov.file)
            return prov
        # (the columns stack the differentiated inputs' flat elements, a selection's as the whole matrix's)
        sizes = np.cumsum([np.size(problem.args[k]) for k in problem.wrt])
        j = int(np.searchsorted(sizes, col, side="right"))
        at = col - (int(sizes[j - 1]) if j else 0)
        seeds = tuple(np.zeros(np.shape(problem.args[k])) for k in problem.wrt)
        seeds[j].reshape(-1)[at] = 1.0
        with NonfiniteMonitor() as monitor:
            if rec is not None:  # (one forward sweep of the run's recording)
                rec.jvp([seed[None] for seed in seeds])
            else:
                (jaccli.hvp if hessian else jaccli.jvp)(problem.func, problem.args,
                                                        seeds if len(seeds) > 1 else seeds[0], wrt=problem.wrt)
    origin = monitor.provenance(rec)
    if origin is not None and problem.is_expression:
        origin.file = origin.line = None  # (as scan's: an expression has no file)
    elif origin is not None and origin.file:
        origin.file = shown_path(origin.file)
    return origin
