"""Kinks at the point, told by jacobian, hessian, grad, jvp, vjp and hvp: where f evaluates an op exactly at
its kink (abs at 0, a max/min tie, a clip bound), a derivative through it is jaccli's convention there
(docs/conventions.md), which may not be the one the user needs: a warning says so, never silence. `check`
names the entries such a kink reaches (kink_entries); `info` lists the kinks too.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from jaccli.plurals import counted

from .compute import Outcome
from .failures import shown_path
from .problem import Problem


def kinks_at(problem: Problem, outcome: Outcome | None = None, rec: Any = None) -> list[dict]:
    """``{"op", "site", "count", "notes"}`` per op of f evaluated at its kink at this point (as `jaccli info`
    reports them), from the recording of a Jacobian's `outcome`, or `rec` (f's own: a sparse Jacobian's); a
    Hessian's is of the gradient, and grad, jvp, vjp and hvp keep none: f is recorded once more for them."""
    from jaccli.check.diagnostics import recording_of
    from jaccli.engine import Recording

    if outcome is not None and outcome.command == "jacobian":
        rec = recording_of([b.lazy for b in outcome.blocks])
    if rec is None:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (NumPy's warnings of f were reported from its first run)
            rec = Recording(problem.func, problem.args, problem.wrt)
    return kink_entries(rec)


def kink_entries(rec: Any) -> list[dict]:
    """``{"op", "site", "count", "notes"}`` per op of the recording `rec` evaluated at its kink, its site as the
    user wrote the file (info's report and kinks_at's)."""
    from jaccli.check.diagnostics import find_kinks

    return [{"op": kink.op, "site": f"{shown_path(kink.file)}:{kink.line}" if kink.file else None,
             "count": kink.count, "notes": kink.notes} for kink in find_kinks(rec)]


def kink_warning(kink: dict, command: str) -> str:
    """One warning line for a kink of kinks_at, in a run of `command`."""
    at = f" at {kink['site']}" if kink["site"] else ""
    where = f"{kink['op']}{at} is at its kink here ({counted(kink['count'], 'element')})"
    if command in ("hessian", "hvp"):  # (abs's slope taken one-sided there, not the notes' first-derivative one)
        return (f"{where}: second derivatives through it use jaccli's convention (docs/conventions.md; "
                "`jaccli check --order 2` names the entries)")
    convention = kink["notes"].split(";")[0].strip()
    return (f"{where}: derivatives through it use jaccli's convention{', ' + convention if convention else ''}"
            " (docs/conventions.md; `jaccli check` names the entries)")
