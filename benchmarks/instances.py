"""One benchmark instance: its data, its NumPy function and its closed-form reference."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np

from benchmarks import problems


@dataclass
class Instance:
    """Everything a method needs to compute one instance of problems.md.

    `f` is the plain NumPy function handed to jaccli; for "rows" (P5) it is the *full* P2
    function, since choosing the rows is the job of the lazy object, not of f.
    """

    iid: str
    kind: str                 # "jac" | "hess" | "batch" | "rows"
    prob: str                 # "P1" .. "P6"
    p: dict
    x: np.ndarray
    params: tuple
    f: Callable

    @cached_property
    def ref(self) -> np.ndarray:
        """Closed-form result; computed on first use so memory probes can measure without it."""
        return problems.reference(self.iid)

    @property
    def rows(self) -> int:
        return self.p.get("rows", 0)


def _numpy_f(prob: str, params: tuple) -> Callable:
    if prob == "P1":
        return problems.f_p1
    if prob in ("P2", "P5"):
        W1, b1, W2, b2 = params
        return lambda x: W2 @ np.tanh(W1 @ x + b1) + b2
    if prob == "P3":
        return problems.f_p3
    if prob == "P4":
        (A,) = params
        return lambda X: np.tanh(X @ A)
    if prob == "P6":
        return problems.f_p6
    raise KeyError(prob)


def load(iid: str) -> Instance:
    """Build the instance `iid` (a key of problems.INSTANCE)."""
    kind, p = problems.INSTANCE[iid]
    x, params = problems.data(iid)
    return Instance(iid=iid, kind=kind, prob=p["prob"], p=p, x=x, params=params,
                    f=_numpy_f(p["prob"], params))


def check(inst: Instance, result) -> tuple[bool, float, str]:
    """Compare a method's result with the closed form: (ok, max abs error, reason if not ok).

    The tolerance is relative to the largest reference entry: P3 entries reach 1e4, P6 ones 1e-1,
    and every correct AD result so far agrees to ~1e-13 relative.
    """
    try:
        arr = np.asarray(result, dtype=np.float64)
    except Exception as exc:  # a method returned something that is not an array
        return False, float("nan"), f"not an array: {type(exc).__name__}: {exc}"
    if arr.shape != inst.ref.shape:
        return False, float("nan"), f"shape {arr.shape}, expected {inst.ref.shape}"
    err = float(np.max(np.abs(arr - inst.ref))) if arr.size else 0.0
    tol = 1e-9 * max(1.0, float(np.max(np.abs(inst.ref))))
    if not np.isfinite(err) or err > tol:
        return False, err, f"max abs error {err:.3g} > {tol:.3g}"
    return True, err, ""
