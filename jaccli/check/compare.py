"""Compare two arrays entry by entry, NaN-aware, within rtol and atol: the verdict behind every check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaccli.errors import UsageError
from jaccli.plurals import all_of, counted, verb

__all__ = ["CompareReport", "compare_arrays", "json_number", "TOP"]

# How many worst entries a report lists.
TOP = 5


def json_number(v: float) -> float | str:
    """`v` as a float, or as "nan", "inf", "-inf" so that JSON stays valid."""
    v = float(v)
    return v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))


@dataclass
class CompareReport:
    """How far `computed` is from `reference`; an entry passes when |c - r| <= atol + rtol |r| (+ err)."""

    passed: bool
    shape: tuple
    rtol: float
    atol: float
    max_abs_err: float  # over entries finite in both
    max_rel_err: float  # over entries finite in both with a nonzero reference
    mismatches: int
    nonfinite_mismatches: int  # NaN or inf in one array only, or infs of opposite sign
    worst: list[dict]
    excluded: int = 0
    mismatch: np.ndarray | None = field(default=None, repr=False)  # entry mask, before exclusion

    @property
    def message(self) -> str:
        size = int(np.prod(self.shape))
        head = f"{self.mismatches} of {counted(size, 'entry')} {verb(self.mismatches, 'differ', 'differs')} " \
            f"beyond rtol={self.rtol:g}, atol={self.atol:g}"
        if self.passed:
            head = f"{all_of(size, 'entry')} {verb(size, 'agree', 'agrees')} " \
                f"within rtol={self.rtol:g}, atol={self.atol:g}"
        text = f"{head}; max abs error {self.max_abs_err:.3g}, max rel error {self.max_rel_err:.3g}"
        if self.nonfinite_mismatches:
            text += f"; {counted(self.nonfinite_mismatches, 'NaN/inf mismatch')}"
        if self.worst and not self.passed:
            w = self.worst[0]
            text += f"; worst at {tuple(w['index'])}: {w['computed']} vs {w['reference']}"
        return text

    def to_dict(self) -> dict:
        """Keys: passed, shape, rtol, atol, max_abs_err, max_rel_err, mismatches, nonfinite_mismatches,
        excluded, worst (list of {index, computed, reference, abs_err, rel_err, allowed}; values that
        are not finite are the strings "nan", "inf", "-inf"; errors are null where undefined), message."""
        return {"passed": self.passed, "shape": list(self.shape), "rtol": self.rtol, "atol": self.atol,
                "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err, "mismatches": self.mismatches,
                "nonfinite_mismatches": self.nonfinite_mismatches, "excluded": self.excluded,
                "worst": [dict(w) for w in self.worst], "message": self.message}


def compare_arrays(computed: Any, reference: Any, rtol: float = 1e-5, atol: float = 1e-7, *,
                   err: Any = None, exclude: Any = None, top: int = TOP) -> CompareReport:
    """Compare two arrays entry by entry, NaN-aware.

    Args:
        computed, reference: arrays of the same shape.
        rtol, atol: an entry passes when ``|c - r| <= atol + rtol * |r| + err``.
        err: optional per-entry error estimate of the reference (e.g. of finite differences).
        exclude: optional boolean mask of entries left out of the verdict and the maxima.
        top: how many worst entries to list.

    Returns:
        A CompareReport. NaN against NaN and inf against an inf of the same sign are equal; a
        NaN or inf in only one array is a mismatch whatever the tolerance. Worst entries carry
        their index in the arrays' own shape.

    >>> rep = compare_arrays(np.array([[1.0, 2.0], [3.0, 4.1]]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> rep.passed, rep.worst[0]["index"]
    (False, [1, 1])
    """
    c = np.asarray(computed, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if c.shape != r.shape:
        raise UsageError(f"cannot compare: the computed result has shape {c.shape} but the reference has shape "
                         f"{r.shape}; give a reference of the same shape as the selected slice")
    finite = np.isfinite(c) & np.isfinite(r)
    same = (np.isnan(c) & np.isnan(r)) | (np.isinf(c) & (c == r))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(c - r), np.where(same, 0.0, np.inf))
        allowed = atol + rtol * np.where(np.isfinite(r), np.abs(r), 0.0)
        if err is not None:
            e = np.broadcast_to(np.asarray(err, dtype=np.float64), r.shape)
            allowed = allowed + np.where(np.isfinite(e), e, 0.0)
        mismatch = np.where(finite, diff > allowed, ~same)
        rel = np.where(finite & (r != 0), diff / np.where(r == 0, 1.0, np.abs(r)), 0.0)
        excess = np.where(allowed > 0, diff / np.where(allowed > 0, allowed, 1.0), np.where(diff > 0, np.inf, 0))
    counted = np.ones(c.shape, bool) if exclude is None else ~np.broadcast_to(np.asarray(exclude, bool), c.shape)
    max_abs = float(np.max(diff, where=counted & finite, initial=0.0))
    max_rel = float(np.max(rel, where=counted & finite, initial=0.0))
    cand = np.flatnonzero((counted & (diff > 0)).ravel())
    order = cand[np.argsort(-excess.ravel()[cand], kind="stable")][:top]
    worst = []
    for flat in order:
        idx = np.unravel_index(flat, c.shape)
        fin = bool(finite[idx])
        worst.append({"index": [int(i) for i in idx], "computed": json_number(c[idx]), "reference": json_number(r[idx]),
                      "abs_err": float(diff[idx]) if fin else None,
                      "rel_err": float(rel[idx]) if fin and r[idx] != 0 else None,
                      "allowed": float(allowed[idx])})
    bad = mismatch & counted
    return CompareReport(passed=not bad.any(), shape=c.shape, rtol=float(rtol), atol=float(atol),
                         max_abs_err=max_abs, max_rel_err=max_rel, mismatches=int(bad.sum()),
                         nonfinite_mismatches=int((bad & ~finite).sum()), worst=worst,
                         excluded=int((~counted).sum()), mismatch=mismatch)
