"""`jaccli check`'s report for people: the verdict first and coloured, the worst entries in a table, then the facts."""

from __future__ import annotations

from typing import Any

from jaccli.check.report import modes_difference
from jaccli.plurals import counted, verb

from .display import Facts, Section, Table, Verdict

__all__ = ["check_sections", "entry_at", "number"]


def number(v: Any) -> str:
    """A value of the function or its derivative, to 6 digits."""
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _err(v: Any) -> str:
    return "-" if v is None else f"{v:.3g}"


def entry_at(e: dict) -> str:
    """Where an entry is: ``df_dx[1, 2]`` (sample, row and column of the flattened block)."""
    where = ", ".join(str(e[k]) for k in ("sample", "row", "col") if k in e)
    return f"{e['block']}[{where}]"


def _reasons(d: dict, strict: Any) -> list[str]:
    """Why a check failed, in a few words each: never "0 mismatches"."""
    bad = sum(b["mismatches"] for b in d["blocks"])
    reasons = []
    if bad:
        reasons.append(f"{bad} of {counted(d['entries'], 'entry')} {verb(bad, 'differ', 'differs')} from finite "
                       "differences")
    if d["nan_count"]:
        reasons.append(f"{counted(d['nan_count'], 'entry')} {verb(d['nan_count'], 'are', 'is')} NaN")
    if not d["modes"]["passed"]:
        reasons.append(f"reverse and forward mode disagree on {counted(d['modes']['mismatches'], 'entry')}")
    if d["gradient"] is not None and not d["gradient"]["passed"]:
        reasons.append(f"the gradient differs from f's finite differences at "
                       f"{counted(d['gradient']['mismatches'], 'entry')}")
    if d["unrepeatable"] is not None:
        reasons.append("f gives different values at the same inputs")
    if d["nested_derivative"] is not None:
        reasons.append(f"f takes a derivative inside ({d['nested_derivative']})")
    if strict is not None and not strict.passed:
        reasons.append("--strict: " + ", ".join(f"{p['output']} does not depend on {p['input']}"
                                                 for p in strict.data["disconnected"]))
    return reasons


def _verdict(d: dict, strict: Any) -> Verdict:
    tolerance = f"rtol={d['rtol']:g}, atol={d['atol']:g}"
    if d["passed"] and (strict is None or strict.passed):
        # entries whose differences cross a kink or a jump are not counted as agreeing: say how many
        excused = d["convention_dependent_count"]  # (entries at a kink are among them, as in the library's count)
        agree = d["entries"] - excused
        aside = f"; {excused} not counted: at or across a kink or a jump (below)" if excused else ""
        return Verdict(f"passed: {counted(agree, 'entry')} {verb(agree, 'agree', 'agrees')} with forward "
                       f"mode and finite differences{aside} ({tolerance})", True)
    if d["verdict"] == "inconclusive" and (strict is None or strict.passed):
        return Verdict(f"INCONCLUSIVE: AD differs from finite differences that cannot resolve "
                       f"{counted(d['unresolved_count'], 'entry')}: their own error exceeds the tolerance ({tolerance})",
                       False)
    return Verdict(f"FAILED: {'; '.join(_reasons(d, strict)) or 'see below'} ({tolerance})", False)


def check_sections(d: dict, what: str, strict: Any = None) -> list[Section]:
    """The report of `jaccli check` from its JSON ``check`` object `d`, for `what` (``f in f.py``); `strict` is
    the --strict verdict or None."""
    kind = "Jacobian" if d["order"] == 1 else "Hessian"
    n = len(d["blocks"])
    sections: list[Section] = [_verdict(d, strict),
                               f"check of {what}: {kind} (order {d['order']}), {counted(d['entries'], 'entry')} in "
                               f"{counted(n, 'block')}"]
    if d["worst"]:
        sections.append(Table("worst entries (AD against finite differences)",
                              ["entry", "elements", "AD", "FD", "abs err", "rel err"],
                              [[entry_at(w), w["label"], number(w["ad"]), number(w["fd"]), _err(w["abs_err"]),
                                _err(w["rel_err"])] for w in d["worst"]]))
    modes = d["modes"]
    if not modes["passed"]:
        sections.append(Table("reverse against forward mode", ["entry", "elements", "reverse", "forward"],
                              [[entry_at(w), w["label"], number(w["reverse"]), number(w["forward"])]
                               for w in modes["worst"]]))
    if d["nan_count"]:
        more = d["nan_count"] - len(d["nan"])
        sections.append(Table("NaN entries (NaN checks nothing: each fails the check)",
                              ["entry", "elements", "AD", "FD", "NaN in"],
                              [[entry_at(e), e["label"], number(e["ad"]), number(e["fd"]), e["nan_in"]]
                               for e in d["nan"]],
                              more=f"... and {more} more" if more > 0 else ""))
    if d["unresolved_count"]:
        more = d["unresolved_count"] - len(d["unresolved"])
        sections.append(Table("inconclusive entries (finite differences cannot resolve them: their own error "
                              "exceeds the tolerance)", ["entry", "elements", "AD", "FD", "FD error"],
                              [[entry_at(e), e["label"], number(e["ad"]), number(e["fd"]), _err(e["fd_error"])]
                               for e in d["unresolved"]],
                              more=f"... and {more} more" if more > 0 else ""))
    facts = {
        "finite differences": f"{d['fd']['method']} in float64, of {d['fd']['of']}, "
                              f"{counted(d['fd']['evaluations'], 'evaluation')}",
        "reverse vs forward": ("agree" if modes["passed"] else f"DISAGREE on {counted(modes['mismatches'], 'entry')}")
                              + f" ({modes_difference(modes)})",
    }
    if d["gradient"] is not None:
        g = d["gradient"]
        facts["gradient vs f"] = ("agrees" if g["passed"] else f"DIFFERS at {counted(g['mismatches'], 'entry')}") \
            + f" (max abs error {g['max_abs_err']:.3g})"
    if d["unrepeatable"] is not None:
        facts["f at the same inputs"] = f"DIFFERS between two calls (by up to {d['unrepeatable']:.3g})"
    finite = " (over the entries that are not NaN)" if d["nan_count"] else ""
    facts["max abs error"] = f"{d['max_abs_err']:.3g}{finite}"
    facts["max rel error"] = f"{d['max_rel_err']:.3g}{finite}"
    if strict is not None:
        facts["--strict"] = "every output depends on every differentiated input" if strict.passed else \
            "FAILED: " + "; ".join(f"{p['block']} is structurally zero ({p['output']} does not depend on "
                                   f"{p['input']})" for p in strict.data["disconnected"])
    sections.append(Facts(facts))
    if n > 1:
        nan = {e["block"] for e in d["nan"]}
        sections.append(Table("blocks", ["block", "checked", "entries", "max abs err", "max rel err", "result"],
                              [[b["name"], "x".join(map(str, b["shape"])), str(b["entries"]),
                                *_errors(b), _block_result(b, b["name"] in nan)] for b in d["blocks"]]))
    # An entry whose mismatch a kink excuses is listed once: with its values, among the mismatches not counted.
    excused = {entry_at(e) for e in d["convention_dependent"]}
    kink_entries = [e for e in d["kink_entries"] if entry_at(e) not in excused]
    if kink_entries:
        more = d["kink_entry_count"] - len(d["kink_entries"])
        sections.append(Table("convention-dependent entries (f is evaluated at a kink there; a mismatch "
                              "there is not a failure)", ["entry", "elements", "op", "convention"],
                              [[entry_at(e), e["label"], f"{e['op']} at {e['site']}", e["notes"] or "-"]
                               for e in kink_entries],
                              more=f"... and {more} more" if more > 0 else "", prose=["convention"]))
    if d["convention_dependent_count"]:
        more = d["convention_dependent_count"] - len(d["convention_dependent"])
        sections.append(Table("mismatches not counted (the finite-difference step crosses a kink or a jump)",
                              ["entry", "elements", "AD", "FD", "reason"],
                              [[entry_at(e), e["label"], number(e["ad"]), number(e["fd"]), e["reason"]]
                               for e in d["convention_dependent"]],
                              more=f"... and {more} more" if more > 0 else "", prose=["reason"]))
    return sections


def _errors(b: dict) -> list[str]:
    """A block's largest errors; none for a block that failed without a mismatch (NaN): "0" would read as a pass."""
    if not b["passed"] and not b["mismatches"]:
        return ["-", "-"]
    return [_err(b["max_abs_err"]), _err(b["max_rel_err"])]


def _block_result(b: dict, nan: bool) -> str:
    if b["passed"]:
        return "passed"
    if b.get("verdict") == "inconclusive":
        return f"inconclusive: {counted(b['inconclusive'], 'entry')}"
    if b["mismatches"]:
        return f"FAILED: {counted(b['mismatches'], 'mismatch')}"
    return "FAILED: NaN" if nan else "FAILED"
