"""The report of a derivative check: CheckReport, its message, and summaries of comparisons."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .compare import TOP, CompareReport
from jaccli.plurals import counted, verb

__all__ = ["CheckReport", "modes_difference", "nan_message", "nested_derivative_message", "summary",
           "unresolved_message", "unrepeatable_message", "worst_failing"]


@dataclass
class CheckReport:
    """The outcome of `check_derivative`; `to_dict` lists the keys."""

    passed: bool
    order: int
    rtol: float
    atol: float
    max_abs_err: float
    max_rel_err: float
    worst: list[dict]
    modes: dict
    blocks: list[dict]
    kinks: list[dict] = field(default_factory=list)
    convention_dependent: list[dict] = field(default_factory=list)
    convention_dependent_count: int = 0
    nan: list[dict] = field(default_factory=list)  # up to 20 entries NaN in AD or in the finite differences
    nan_count: int = 0
    # Nothing failed, but finite differences could not resolve some mismatching entries: neither passed nor failed.
    inconclusive: bool = False
    unresolved: list[dict] = field(default_factory=list)  # up to 20 of those entries, with the differences' error
    unresolved_count: int = 0
    gradient: dict | None = None
    fd: dict = field(default_factory=dict)
    sweeps: int = 0  # AD sweeps run by both modes (not in to_dict: the CLI's report counts them)
    unrepeatable: float | None = None  # two calls of f at the inputs differ by this much (None: they agree)
    # "file:line" where f takes a derivative without create_graph (a constant to AD, torch's rule), or None
    nested_derivative: str | None = None
    # Per block name: max(|reverse - FD|, |forward - FD|), shaped like the checked slice (not in to_dict: arrays).
    errors: dict = field(default_factory=dict, repr=False)

    @property
    def verdict(self) -> str:
        """"passed", "failed" or "inconclusive" (finite differences cannot resolve a mismatching entry, and
        nothing else failed)."""
        return "passed" if self.passed else "inconclusive" if self.inconclusive else "failed"

    @property
    def message(self) -> str:
        n = sum(b["entries"] for b in self.blocks) - self.convention_dependent_count
        errs = (f"max abs error {self.max_abs_err:.3g}, max rel error {self.max_rel_err:.3g}; "
                f"rtol={self.rtol:g}, atol={self.atol:g}")
        if self.passed:
            text = f"check passed: reverse mode, forward mode and finite differences agree on {counted(n, 'entry')} " \
                f"({errs})"
        elif self.inconclusive:
            text = "check INCONCLUSIVE: " + unresolved_message(self.unresolved_count, self.unresolved)
        else:
            parts = []
            if self.unrepeatable is not None:
                parts.append(unrepeatable_message(self.unrepeatable))
            bad = sum(b["mismatches"] for b in self.blocks)
            if bad:
                parts.append(f"{bad} of {counted(n, 'entry')} {verb(bad, 'differ', 'differs')} from finite differences "
                             f"({errs})")
            if self.nan_count:
                parts.append(nan_message(self.nan_count, self.nan[0]))
            if not self.modes["passed"]:
                parts.append(f"reverse and forward mode disagree on {counted(self.modes['mismatches'], 'entry')} "
                             f"({modes_difference(self.modes)})")
            if self.gradient is not None and not self.gradient["passed"]:
                parts.append(f"the gradient differs from finite differences of f at "
                             f"{counted(self.gradient['mismatches'], 'entry')}")
            if self.nested_derivative is not None:
                parts.append(nested_derivative_message(self.nested_derivative))
            text = "check FAILED: " + "; ".join(parts)
            w = worst_failing({"blocks": self.blocks, "worst": self.worst, "modes": self.modes,
                               "gradient": self.gradient})
            if w is not None:
                at = ", ".join(str(w[k]) for k in ("sample", "row", "col") if k in w)
                values = f"AD {w['ad']} vs finite differences {w['fd']}" if "ad" in w \
                    else f"reverse {w['reverse']} vs forward {w['forward']}"
                text += f"; worst {w['block']}[{at}]: {values}"
        if self.convention_dependent_count:
            ops = sorted({e["reason"] for e in self.convention_dependent})
            count = self.convention_dependent_count
            text += (f"; {counted(count, 'convention-dependent entry')} (the step crosses a kink or a convention) "
                     f"{verb(count, 'were', 'was')} not counted: {'; '.join(ops)}")
        return text

    def to_dict(self) -> dict:
        """JSON-ready summary.

        Keys: ``passed``; ``verdict`` ("passed", "failed", or "inconclusive": nothing failed, but finite
        differences cannot resolve some entries where AD differs from them); ``order`` (1 Jacobian, 2 Hessian); ``rtol``, ``atol``; ``max_abs_err``,
        ``max_rel_err`` (AD against finite differences, convention-dependent entries left out;
        the relative error only over nonzero references); ``worst`` (up to 5 entries: ``block``,
        ``row``, ``col`` (flat indices in the block's [M, N] matrix), ``sample`` (batched only),
        ``ad``, ``fd``, ``abs_err``, ``rel_err``, ``allowed``, ``mode``); ``modes`` (reverse
        against forward: ``passed``, ``rtol``, ``atol``, ``max_abs_err``, ``max_rel_err``,
        ``mismatches``, ``excluded``, ``worst`` with ``reverse`` and ``forward`` values); ``blocks`` (per block:
        ``name``, ``shape`` of the checked slice, ``entries``, ``passed``, ``verdict``, ``mismatches``,
        ``inconclusive``, ``max_abs_err``, ``max_rel_err``); ``kinks`` (ops evaluated at a kink: ``op``, ``file``,
        ``line``, ``site``, ``count``, ``notes``, ``rows`` and ``cols`` per block);
        ``convention_dependent`` (up to 20 excused entries, each with a ``reason``) and
        ``convention_dependent_count``; ``nan`` (up to 20 entries NaN in AD or in the finite differences,
        not excused: ``block``, ``row``, ``col``, ``ad``, ``fd``, ``nan_in``; NaN checks nothing, so each
        fails the check) and ``nan_count``; ``unresolved`` (up to 20 mismatching entries that the differences
        cannot resolve, their own error ``fd_error`` beyond the tolerance: ``block``, ``row``, ``col``,
        ``ad``, ``fd``, ``fd_error``) and ``unresolved_count``; ``gradient`` (order 2: the AD gradient against
        differences of f, same keys as ``modes``, or null); ``fd`` (``method``, ``of``,
        ``step``, ``evaluations``); ``unrepeatable`` (null, or how much two calls of f at the
        same inputs differ: then no comparison holds, and the check fails); ``nested_derivative``
        (null, or "file:line" where f takes a derivative of its inputs without create_graph=True,
        which AD treats as a constant); ``message``. Values that are not finite are the strings
        "nan", "inf", "-inf".
        """
        return {"passed": self.passed, "verdict": self.verdict, "order": self.order, "rtol": self.rtol,
                "atol": self.atol,
                "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err, "worst": self.worst,
                "modes": self.modes, "blocks": self.blocks, "kinks": self.kinks,
                "convention_dependent": self.convention_dependent,
                "convention_dependent_count": self.convention_dependent_count, "nan": self.nan,
                "nan_count": self.nan_count, "unresolved": self.unresolved, "unresolved_count": self.unresolved_count,
                "gradient": self.gradient, "fd": self.fd, "unrepeatable": self.unrepeatable,
                "nested_derivative": self.nested_derivative, "message": self.message}


def worst_failing(d: dict) -> dict | None:
    """The worst entry of the comparison that failed (a report as `CheckReport.to_dict` gives it): against
    finite differences, else reverse against forward mode, else the gradient against differences of f;
    None when none of them failed."""
    if any(b["mismatches"] for b in d["blocks"]) and d["worst"]:
        return d["worst"][0]
    for part in (d["modes"], d["gradient"]):
        if part is not None and not part["passed"] and part["worst"]:
            return part["worst"][0]
    return None


def unresolved_message(count: int, entries: list[dict]) -> str:
    """What a check says of `count` mismatching entries that finite differences cannot resolve."""
    text = (f"finite differences cannot resolve {counted(count, 'entry')} to the tolerance (their own error, round-off "
            "or steps h and h/2 that disagree, exceeds it), and AD differs from them there")
    if entries:
        e = entries[0]
        at = ", ".join(str(e[k]) for k in ("sample", "row", "col") if k in e)
        text += f" (first {e['block']}[{at}]: AD {_g(e['ad'])} vs finite differences {_g(e['fd'])} +- " \
            f"{_g(e['fd_error'], 3)})"
    return text + "; check at another point, or with a looser --rtol/--atol"


def _g(v: float | str, digits: int = 6) -> str:
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def nan_message(count: int, first: dict) -> str:
    """What a check says of `count` entries NaN in AD or in the finite differences, the first of them `first`."""
    at = ", ".join(str(first[k]) for k in ("sample", "row", "col") if k in first)
    return (f"{counted(count, 'entry')} {verb(count, 'are', 'is')} NaN, which checks nothing (first "
            f"{first['block']}[{at}]: NaN in {first['nan_in']})")


def modes_difference(modes: dict) -> str:
    """How far reverse and forward mode are apart: the largest difference, or where one side only is not finite."""
    text = f"max abs difference {modes['max_abs_err']:.3g}"
    count = modes.get("nonfinite_mismatches", 0)
    if not count:
        return text
    one_sided = f"NaN or inf on one side only at {counted(count, 'entry')}"
    # over the entries finite on both sides: 0 says nothing when those all agree
    return one_sided if count == modes["mismatches"] else f"{text}; {one_sided}"


def nested_derivative_message(site: str) -> str:
    return (f"f takes a derivative at {site} without create_graph=True, which makes it a constant to jaccli (the "
            "derivative through it is zero, torch's rule) but not to finite differences; pass create_graph=True "
            "there to differentiate through it")


def unrepeatable_message(difference: float) -> str:
    return (f"f gives different values at the same inputs (two calls differ by up to {difference:.3g}): it draws "
            "random numbers or reads state that changes, so finite differences of it mean nothing; seed its "
            "random generator, or pass the state as an input")


def _entry(w: dict, info: dict, batch: bool, keys: tuple[str, str] = ("ad", "fd")) -> dict:
    """A worst entry of a CompareReport, with its position in the selection mapped to matrix indices."""
    idx = list(w["index"])
    rows, cols = info["rows"], info.get("cols")
    out: dict = {"block": info["name"]}
    if batch:
        out["sample"] = idx.pop(0)
    out["row"] = int(rows[idx[0]])
    if cols is not None:
        out["col"] = int(cols[idx[1]])
    out.update({keys[0]: w["computed"], keys[1]: w["reference"], "abs_err": w["abs_err"], "rel_err": w["rel_err"],
                "allowed": w["allowed"]})
    if "mode" in info:
        out["mode"] = info["mode"]
    return out


def _excess(w: dict) -> float:
    return np.inf if w["abs_err"] is None else w["abs_err"] / max(w["allowed"], 1e-300)


def summary(cmps: list[tuple[CompareReport, dict]], keys: tuple[str, str], batch: bool) -> dict:
    """The comparisons of a check as one dict (`CheckReport.modes`, `CheckReport.gradient`): each comparison
    with an info dict (``name``, ``rows``, ``cols`` and ``mode`` of its block), its worst entries named
    by matrix indices under `keys`, the worst first."""
    worst = [_entry(w, info, batch, keys) for c, info in cmps for w in c.worst]
    worst.sort(key=_excess, reverse=True)
    return {"passed": all(c.passed for c, _ in cmps), "rtol": cmps[0][0].rtol if cmps else 0.0,
            "atol": max((c.atol for c, _ in cmps), default=0.0),
            "max_abs_err": max((c.max_abs_err for c, _ in cmps), default=0.0),
            "max_rel_err": max((c.max_rel_err for c, _ in cmps), default=0.0),
            "mismatches": sum(c.mismatches for c, _ in cmps), "excluded": sum(c.excluded for c, _ in cmps),
            "nonfinite_mismatches": sum(c.nonfinite_mismatches for c, _ in cmps),
            "worst": worst[:TOP]}
