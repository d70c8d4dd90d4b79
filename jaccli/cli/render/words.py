"""The words people read for jaccli's internal names: sweep kinds as --mode and the docs say them."""

from __future__ import annotations

_MODES = {
    "reverse": "reverse mode",
    "forward": "forward mode",
    "diagonal": "forward mode (elementwise: the diagonal)",
    "forward-over-reverse": "forward-over-reverse mode",
    "reverse-over-reverse": "reverse-over-reverse mode",
    "cached": "no new sweep (already computed)",
}


def mode_words(mode: str) -> str:
    """A report's ``mode`` (``reverse+diagonal``) as words.

    >>> mode_words("reverse+diagonal")
    'reverse mode and forward mode (elementwise: the diagonal)'
    """
    return " and ".join(_MODES.get(part, part) for part in mode.split("+"))


_RESULTS = {"jacobian": "Jacobian", "hessian": "Hessian", "grad": "Gradient", "jvp": "Jacobian-vector product",
            "vjp": "Vector-Jacobian product", "hvp": "Hessian-vector product"}


def result_words(command: str) -> str:
    """What a command computes, as a title says it: ``Vector-Jacobian product`` for vjp."""
    return _RESULTS.get(command, command.capitalize())
