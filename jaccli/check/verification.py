"""Derivative verification: reverse mode against forward mode against central finite differences."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from jaccli.api.arguments import as_args, param_names, resolve_wrt
from jaccli.api.jacobian_hessian import hessian, jacobian
from jaccli.api.products import vjp
from .report import CheckReport, summary
# compare_arrays and CompareReport live in .compare; re-exported so existing imports keep working.
from .compare import TOP, CompareReport, compare_arrays, json_number
from jaccli.errors import UsageError
from .finite_differences import (batch_flag, fd_columns, finite_difference_jacobian, flat_indices, float64_args,
    gradient_function, kinked_columns, plain_outputs)
from .rounding import row_term_scales
from .excuses import excuse_mismatches
from .kink_reach import RowReach, kink_rows
from .kinks import Kink
from .step_crossings import StepCrossings

__all__ = ["check_derivative", "CheckReport", "compare_arrays", "CompareReport", "finite_difference_jacobian",
           "default_tolerances", "DEFAULT_TOLERANCES"]

# Default (rtol, atol) of AD against finite differences, by the itemsize of the AD result's dtype.
# float64 is limited by the finite differences (about 1e-10 with these steps), lower precisions
# by the rounding of the AD result itself.
DEFAULT_TOLERANCES = {8: (1e-5, 1e-7), 4: (2e-3, 1e-4), 2: (5e-2, 1e-2)}
# Reverse and forward mode sum the same products in different orders: they agree to this many
# eps of the result dtype, relative to the block's largest entry.
MODES_EPS = 1e4
MAX_LISTED = 20


def default_tolerances(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for AD results of `dtype` against float64 finite differences.

    >>> default_tolerances(np.float32)
    (0.002, 0.0001)
    """
    dt = np.dtype(dtype)
    return DEFAULT_TOLERANCES[dt.itemsize if dt.kind == "f" and dt.itemsize in (2, 4) else 8]


# ---------------------------------------------------------------------------
# check_derivative
# ---------------------------------------------------------------------------
def _unrepeatable(f: Callable, args: tuple) -> float | None:
    """How much two calls of f at `args` differ (the largest difference; inf for another shape), or None
    when they agree (NaN where NaN)."""
    first, second = plain_outputs(f)(*args), plain_outputs(f)(*args)
    if len(first) != len(second):
        return math.inf
    worst = 0.0
    for a, b in zip(first, second):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return math.inf
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if differ.any():
            worst = max(worst, float(np.nan_to_num(np.abs(a - b)[differ], nan=math.inf).max()))
    return worst if worst > 0 else None


@dataclass
class _Block:
    name: str
    i: int  # output (order 1) or row input (order 2)
    j: int  # column input
    rows: np.ndarray
    cols: np.ndarray
    rev: np.ndarray
    fwd: np.ndarray
    fd: np.ndarray
    fd_err: np.ndarray


def check_derivative(f: Callable, args: Any, *, wrt: Any = None, order: int = 1, rows: Any = None,
                     cols: Any = None, rtol: float | None = None, atol: float | None = None,
                     batch_axis: int | None = None, richardson: bool = True) -> CheckReport:
    """Check a slice of the Jacobian (order 1) or Hessian (order 2) three ways.

    The slice is computed by reverse mode and by forward mode (Hessians: reverse-over-reverse
    and forward-over-reverse), which must agree to 1e4 eps of the result dtype relative to the
    block's largest entry, and both are compared with central finite differences in float64
    (`finite_difference_jacobian`; for Hessians, differences of the AD gradient, which is
    itself checked against differences of f at the requested rows).

    A mismatch is *convention-dependent*, reported but not a failure, when the finite-difference
    step along its column crosses a kink: an op evaluated exactly at a kink (abs at 0, a
    max/min tie, a clip bound, relu at 0) that the step moves off, for the rows that see that
    op; or anywhere in the column, a step function (floor, sign), a np.where condition, an index
    or Python control flow that changes within the step. So is one whose step crosses a kink near x, not at it (an element of
    such an op whose kink lies between x - h and x + h), for the rows that see that element.

    Args:
        f: a function of arrays.
        args: an array or a tuple of arrays.
        wrt: inputs to differentiate (positions or names); None means all.
        order: 1 or 2.
        rows, cols: flat indices (per sample with batch_axis=0) of every block's rows and
            columns; None means all.
        rtol, atol: AD against finite differences; by default from `default_tolerances` of the
            AD result dtype (float64: rtol=1e-5, atol=1e-7). The finite differences' own error
            estimate is added to each entry's allowance.
        batch_axis: None or 0 (per-sample blocks).
        richardson: use Richardson extrapolation in the finite differences.

    Returns:
        A CheckReport.

    >>> rep = check_derivative(lambda x: np.sin(x) * x, np.array([0.5, 1.5]))
    >>> rep.passed, rep.max_abs_err < 1e-8
    (True, True)
    """
    tup, inputs_is_tuple = as_args(args)
    wrt_idx, _ = resolve_wrt(f, tup, wrt, inputs_is_tuple)
    if order not in (1, 2):
        raise UsageError(f"order must be 1 or 2, not {order!r}")
    batch = batch_flag(batch_axis)
    names = param_names(f, len(tup))
    in_names = [names[k] for k in wrt_idx]
    if order == 1:
        rev = jacobian(f, tup, wrt=wrt_idx, mode="reverse", batch_axis=batch_axis)
        fwd = jacobian(f, tup, wrt=wrt_idx, mode="forward", batch_axis=batch_axis)
        if not isinstance(rev[0], tuple):
            rev, fwd = (rev,), (fwd,)
        outs = ["f"] if len(rev) == 1 else [f"f{i}" for i in range(len(rev))]
        block_names = [[f"d{o}/d{n}" for n in in_names] for o in outs]
    else:
        rev = hessian(f, tup, wrt=wrt_idx, mode="reverse", batch_axis=batch_axis)
        fwd = hessian(f, tup, wrt=wrt_idx, mode="forward", batch_axis=batch_axis)
        block_names = [[f"d2f/d{a}d{b}" for b in in_names] for a in in_names]
    dtype = max((b.dtype for row in rev for b in row), key=lambda d: np.finfo(d).eps)
    d_rtol, d_atol = default_tolerances(dtype)
    rtol = d_rtol if rtol is None else float(rtol)
    atol = d_atol if atol is None else float(atol)

    # Finite differences, column by column, for every output at once.
    a64 = float64_args(tup, wrt_idx)
    fun = plain_outputs(f) if order == 1 else gradient_function(f, a64, wrt_idx)
    sizes = [int(np.prod(np.shape(a64[k])[1:] if batch else np.shape(a64[k]))) for k in wrt_idx]
    cols_of = [flat_indices(cols, n, "columns") for n in sizes]
    fds = [fd_columns(fun, a64, k, cols_of[j], richardson=richardson, batch=batch) for j, k in enumerate(wrt_idx)]
    evaluations = sum(e for _, _, e in fds) + 2
    unrepeatable = _unrepeatable(f, a64)

    blocks = []
    for i, row in enumerate(rev):
        for j, rb in enumerate(row):
            r_sel = flat_indices(rows, rb.matrix.shape[-2], "rows")
            c_sel = cols_of[j]
            blocks.append(_Block(block_names[i][j], i, j, r_sel, c_sel,
                                 np.asarray(rb.matrix.evaluate(r_sel, c_sel), dtype=np.float64),
                                 np.asarray(fwd[i][j].matrix.evaluate(r_sel, c_sel), dtype=np.float64),
                                 fds[j][0][i][..., r_sel, :], fds[j][1][i][..., r_sel, :]))

    # Kinks at x, and what each step crosses: only computed where needed.
    cross = StepCrossings(f, a64, wrt_idx, batch)
    reach: dict[int, RowReach] = {}
    if order == 1 and cross.kinks:
        for blk in blocks:
            if blk.i not in reach:
                reach[blk.i] = kink_rows(cross.base, blk.i, blk.rows, cross.kinks, batch)

    m_rtol = MODES_EPS * float(np.finfo(dtype).eps)
    # The rounding of each row's sums: the size of the terms its reverse sweep adds (order 1, one sample).
    term_scales = {}
    if order == 1 and not batch:
        term_scales = {blk.i: row_term_scales(f, tup, wrt_idx, blk.i, blk.rows) for blk in blocks}
    kinked = _Kinked(fun, a64, wrt_idx, batch, rtol, atol)
    fd_cmps, mode_cmps, excused_list, n_excused = [], [], [], 0
    nan_entries: list[dict] = []
    nan_count = 0
    unresolved_entries: list[dict] = []
    unresolved_count = 0
    block_dicts = []
    for blk in blocks:
        info = {"name": blk.name, "rows": blk.rows, "cols": blk.cols}
        first = [compare_arrays(a, blk.fd, rtol, atol, err=blk.fd_err) for a in (blk.rev, blk.fwd)]
        # NaN checks nothing, even against NaN: a failure unless a kink or a jump the step crosses excuses it.
        nan = np.isnan(blk.rev) | np.isnan(blk.fwd) | np.isnan(blk.fd)
        mism = first[0].mismatch | first[1].mismatch | nan
        excused, reasons = (excuse_mismatches(mism, blk.i, blk.j, blk.rows, blk.cols, cross, order, reach,
                                              kinked=lambda q: kinked(blk.j, blk.cols[q], blk.i)[..., blk.rows])
                            if mism.any() else (None, {}))
        if excused is not None:
            nan &= ~excused
        # Differences whose own error (round-off, or steps h and h/2 that disagree) exceeds the tolerance cannot
        # tell a right entry from a wrong one: a mismatch there is inconclusive, not a failure.
        with np.errstate(invalid="ignore"):
            unresolved = (first[0].mismatch | first[1].mismatch) & ~nan \
                & (blk.fd_err > atol + rtol * np.abs(blk.fd)) & (True if excused is None else ~excused)
        # a NaN entry fails as NaN (listed in `nan`), not also as a difference from finite differences
        left_out = nan | unresolved if excused is None else excused | nan | unresolved
        cr = compare_arrays(blk.rev, blk.fd, rtol, atol, err=blk.fd_err, exclude=left_out)
        cf = compare_arrays(blk.fwd, blk.fd, rtol, atol, err=blk.fd_err, exclude=left_out)
        fin = np.abs(blk.fwd[np.isfinite(blk.fwd)])
        scale = max(1.0, float(fin.max(initial=0.0)))
        terms = term_scales.get(blk.i)
        cm = compare_arrays(blk.rev, blk.fwd, m_rtol, m_rtol * scale,
                            err=None if terms is None else m_rtol * terms[:, None])
        unresolved_count += int(unresolved.sum())
        unresolved_entries += [_unresolved_entry(blk, idx, batch)
                               for idx in np.argwhere(unresolved)[:MAX_LISTED - len(unresolved_entries)]]
        nan_count += int(nan.sum())
        nan_entries += [_nan_entry(blk, idx, batch) for idx in np.argwhere(nan)[:MAX_LISTED - len(nan_entries)]]
        fd_cmps += [(cr, {**info, "mode": "reverse"}), (cf, {**info, "mode": "forward"})]
        mode_cmps.append((cm, info))
        if excused is not None:
            n_excused += int(excused.sum())
            for idx in np.argwhere(excused)[:MAX_LISTED]:
                e = {"block": blk.name, "row": int(blk.rows[idx[-2]]), "col": int(blk.cols[idx[-1]]),
                     "ad": json_number(blk.rev[tuple(idx)]), "fd": json_number(blk.fd[tuple(idx)]),
                     "reason": reasons[int(idx[0]) if batch else 0, int(idx[-1])]}
                if batch:
                    e = {"sample": int(idx[0]), **e}
                excused_list.append(e)
        block_dicts.append({"name": blk.name, "shape": list(blk.rev.shape), "entries": int(blk.rev.size),
                            "passed": cr.passed and cf.passed and cm.passed and not nan.any() and not unresolved.any(),
                            "verdict": "failed" if not (cr.passed and cf.passed and cm.passed) or nan.any() else
                                       "inconclusive" if unresolved.any() else "passed",
                            "inconclusive": int(unresolved.sum()),
                            "mismatches": max(cr.mismatches, cf.mismatches), "nan": int(nan.sum()),
                            "max_abs_err": max(cr.max_abs_err, cf.max_abs_err),
                            "max_rel_err": max(cr.max_rel_err, cf.max_rel_err)})

    fd_summary = summary(fd_cmps, ("ad", "fd"), batch)
    seen, worst = set(), []
    for w in fd_summary["worst"]:  # reverse and forward mode usually share their worst entries
        key = (w["block"], w.get("sample"), w["row"], w["col"])
        if key not in seen:
            seen.add(key)
            worst.append(w)
    modes = summary(mode_cmps, ("reverse", "forward"), batch)

    kinks = [_kink_entries(kink, blocks, cross, reach, order, kinked).to_dict() for kink in cross.kinks]

    gradient = None
    if order == 2:
        gradient, g_evals = _check_gradient(f, tup, a64, wrt_idx, in_names, rows, sizes, rtol, atol, batch,
                                            richardson, cross)
        evaluations += g_evals
        unresolved_count += gradient["inconclusive"]
    evaluations += kinked.evaluations

    failed = not (fd_summary["passed"] and modes["passed"] and (gradient is None or gradient["passed"])) \
        or unrepeatable is not None or nan_count > 0
    passed = not failed and unresolved_count == 0
    sweeps = sum(ev.sweeps for ev in {id(b._ev): b._ev for row in (*rev, *fwd) for b in row}.values())
    fd = {"method": "central differences" + (" with Richardson extrapolation" if richardson else ""),
          "of": "f" if order == 1 else "the AD gradient", "step": "eps**(1/3) * max(1, |x_j|) in float64",
          "evaluations": evaluations}
    return CheckReport(passed=passed, order=order, rtol=rtol, atol=atol, max_abs_err=fd_summary["max_abs_err"],
                       max_rel_err=fd_summary["max_rel_err"], worst=worst[:TOP], modes=modes, blocks=block_dicts,
                       kinks=kinks, convention_dependent=excused_list[:MAX_LISTED],
                       convention_dependent_count=n_excused, nan=nan_entries, nan_count=nan_count,
                       inconclusive=not failed and unresolved_count > 0, unresolved=unresolved_entries,
                       unresolved_count=unresolved_count,
                       gradient=gradient, fd=fd,
                       sweeps=sweeps + (gradient is not None), unrepeatable=unrepeatable,
                       nested_derivative=None if cross.severed is None else f"{cross.severed[0]}:{cross.severed[1]}",
                       errors={blk.name: np.maximum(np.abs(blk.rev - blk.fd), np.abs(blk.fwd - blk.fd))
                               for blk in blocks})


def _nan_entry(blk: _Block, idx: np.ndarray, batch: bool) -> dict:
    """Entry `idx` of the block's checked slice, NaN in AD or in the finite differences: where, and in which."""
    at = tuple(idx)
    ad = [name for name, values in (("reverse", blk.rev), ("forward", blk.fwd)) if np.isnan(values[at])]
    where = [("AD" if len(ad) == 2 else f"{ad[0]} mode")] if ad else []
    where += ["finite differences"] if np.isnan(blk.fd[at]) else []
    entry = {"block": blk.name, "row": int(blk.rows[idx[-2]]), "col": int(blk.cols[idx[-1]]),
             "ad": json_number(blk.rev[at]), "fd": json_number(blk.fd[at]), "nan_in": " and ".join(where)}
    return {"sample": int(idx[0]), **entry} if batch else entry


class _Kinked:
    """Whether f (order 1) or the AD gradient (order 2) is kinked along an input element, per output row: its
    one-sided differences disagree (`kinked_columns`), computed once per element asked about."""

    def __init__(self, fun: Callable, args: tuple, wrt_idx: tuple, batch: bool, rtol: float, atol: float) -> None:
        self.fun, self.args, self.wrt_idx, self.batch, self.rtol, self.atol = fun, args, wrt_idx, batch, rtol, atol
        self.evaluations = 0
        self._found: dict[tuple[int, int], list[np.ndarray]] = {}

    def __call__(self, j: int, col: int, i: int) -> np.ndarray:
        """Output i's rows (..., M): kinked along flat element `col` of differentiated input j."""
        key = (j, int(col))
        if key not in self._found:
            self._found[key] = [k[..., 0] for k in kinked_columns(
                self.fun, self.args, self.wrt_idx[j], np.array([col]), batch=self.batch, rtol=self.rtol,
                atol=self.atol)]
            self.evaluations += 5
        return self._found[key][i]


def _unresolved_entry(blk: _Block, idx: np.ndarray, batch: bool) -> dict:
    """Entry `idx` of the block's checked slice, which finite differences cannot resolve: where, and how well."""
    at = tuple(idx)
    entry = {"block": blk.name, "row": int(blk.rows[idx[-2]]), "col": int(blk.cols[idx[-1]]),
             "ad": json_number(blk.rev[at]), "fd": json_number(blk.fd[at]), "fd_error": json_number(blk.fd_err[at])}
    return {"sample": int(idx[0]), **entry} if batch else entry


def _kink_entries(kink: Kink, blocks: list[_Block], cross: StepCrossings, reach: dict, order: int,
                  kinked: _Kinked) -> Kink:
    """Fill in the kink's rows, columns and convention-dependent entries of every block.

    Order 1: entry (r, c) when row r reaches a kink element that the step along c moves off the
    kink; order 2: when the steps along both r and c cross the kink. With a batch axis, both in
    the same sample.
    """
    kid, n = kink.node_index, cross.B if cross.batch else 1
    for blk in blocks:
        crossing = {q: cross(blk.j, c)[0][kid] for q, c in enumerate(blk.cols) if kid in cross(blk.j, c)[0]}
        kink.cols[blk.name] = [int(blk.cols[q]) for q in crossing]
        if order == 1:
            kink.rows[blk.name] = [int(r) for r in blk.rows[reach[blk.i].rows(kid)]]
            at = {q: reach[blk.i].entries(kid, elements) for q, elements in crossing.items()}
        else:
            kink.rows[blk.name] = [int(r) for r in blk.rows if kid in cross(blk.i, r)[0]]
            if crossing:
                by_row = np.stack([cross.samples(blk.i, r)[0].get(kid, np.zeros(n, dtype=bool)) for r in blk.rows],
                                  axis=1)
            at = {q: cross.samples(blk.j, blk.cols[q])[0][kid][:, None] & by_row for q in crossing}
        # where f is smooth in that direction (|u| ** 2 at 0), the value is no convention
        at = {q: hit & kinked(blk.j, blk.cols[q], blk.i)[..., blk.rows].reshape(hit.shape) for q, hit in at.items()}
        found = np.array([(s, r, q) for q, hit in at.items() for s, r in np.argwhere(hit)], dtype=int).reshape(-1, 3)
        found = found[np.lexsort((found[:, 2], found[:, 1], found[:, 0]))]
        kink.entry_count[blk.name] = len(found)
        kink.entries[blk.name] = [{**({"sample": int(s)} if cross.batch else {}), "row": int(blk.rows[r]),
                                   "col": int(blk.cols[q])} for s, r, q in found[:MAX_LISTED]]
    return kink


def _check_gradient(f: Callable, tup: tuple, a64: tuple, wrt_idx: tuple, in_names: list, rows: Any, sizes: list,
                    rtol: float, atol: float, batch: bool, richardson: bool, cross: StepCrossings) -> tuple[dict, int]:
    """For Hessian checks: the AD gradient at the requested rows against differences of f itself."""
    ones = np.ones(np.shape(cross.base.outputs[0]))
    _, grads = vjp(f, tup, ones, wrt=wrt_idx)
    cmps, evals, inconclusive = [], 0, 0
    for a, k in enumerate(wrt_idx):
        r_sel = flat_indices(rows, sizes[a], "rows")
        g = np.reshape(np.asarray(grads[a], dtype=np.float64), (-1, sizes[a]) if batch else (-1,))[..., r_sel]
        vals, errs, n = fd_columns(plain_outputs(f), a64, k, r_sel, richardson=richardson, batch=batch)
        evals += n
        ref, err = vals[0][..., 0, :], errs[0][..., 0, :]
        mism = compare_arrays(g, ref, rtol, atol, err=err).mismatch
        excused = np.zeros(mism.shape, dtype=bool)
        for q in np.flatnonzero(mism.reshape(-1, len(r_sel)).any(axis=0)):
            # the samples whose own step crosses a kink (at x or near it) or a jump (with a batch axis)
            hit = np.zeros(cross.B if batch else 1, dtype=bool)
            for found in cross.samples(a, r_sel[q], among=mism[..., q] if batch else None):
                for samples in found.values():
                    hit |= samples
            excused[..., q] = mism[..., q] & hit.reshape(np.shape(mism[..., q]))
        with np.errstate(invalid="ignore"):
            unresolved = mism & ~excused & ~np.isnan(g) & ~np.isnan(ref) & (err > atol + rtol * np.abs(ref))
        inconclusive += int(unresolved.sum())
        cmps.append((compare_arrays(g[..., None], ref[..., None], rtol, atol, err=err[..., None],
                                    exclude=(excused | unresolved)[..., None]),
                     {"name": f"df/d{in_names[a]}", "rows": r_sel, "cols": None}))
    return {**summary(cmps, ("ad", "fd"), batch), "inconclusive": inconclusive}, evals
