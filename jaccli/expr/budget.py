"""The limits an expression's evaluation runs under: elements per array, work in all, seconds; and their default."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_BUDGET", "Budget", "default_budget", "set_default_budget"]


@dataclass(frozen=True)
class Budget:
    """What one evaluation of an expression may cost.

    Attributes:
        max_elements: elements in any one array an operation makes (10**7: 80 MB of float64).
        max_work: multiply-adds (or element operations) of all the operations together (10**9: about a second).
        seconds: wall-clock time of the whole evaluation.
    """

    max_elements: int = 10**7
    max_work: int = 10**9
    seconds: float = 10.0


DEFAULT_BUDGET = Budget()
_DEFAULT = [DEFAULT_BUDGET]


def default_budget() -> Budget:
    """The budget of expressions compiled without one: `DEFAULT_BUDGET`, or what `set_default_budget` set."""
    return _DEFAULT[0]


def set_default_budget(budget: Budget) -> None:
    """Make `budget` the default of the expressions compiled from now on (the command line's options)."""
    _DEFAULT[0] = budget
