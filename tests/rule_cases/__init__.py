"""The rules table: one row per supported NumPy function, checked by tests/test_rules.py.

Each family module defines CASES, a list of `Case`. A row names the registry entry it covers,
a function written in plain NumPy, and inputs inside the function's domain (the domain lives
here, not in `if` branches of the test).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class Case:
    covers: str | tuple[str, ...]  # registry names, e.g. "np.sin" or ("np.max", "np.amax")
    fn: Callable[..., Any]
    args: tuple  # float64 inputs inside the domain
    wrt: tuple[int, ...] = (0,)
    order: int = 2  # highest order checked: 2 = rule of the rule; 3 adds third derivatives
    rtol: float = 1e-6
    atol: float = 1e-7
    id: str = ""
    kw: dict = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.covers,) if isinstance(self.covers, str) else tuple(self.covers)

    def __str__(self) -> str:
        return self.id or self.names[0]


_rng = np.random.default_rng(1234)


def r(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    """Random float64 array with entries in (lo, hi); a fixed stream so the table is reproducible."""
    return _rng.uniform(lo, hi, size=shape)


def pos(*shape: int, lo: float = 0.5, hi: float = 2.0) -> np.ndarray:
    return r(*shape, lo=lo, hi=hi)


def spd(n: int) -> np.ndarray:
    """A well-conditioned symmetric positive definite matrix."""
    a = r(n, n)
    return a @ a.T + n * np.eye(n)
