"""Safe NumPy expressions for `jaccli -e`: parsed, checked whole, then evaluated by walking the tree."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from jaccli.errors import UsageError
# The checker and the evaluator live in their own modules; their public names are re-exported here.
from .checker import DEFAULT_FUNCTIONS, MAX_DEPTH, TOO_DEEP, Checker, normalise_functions, reserved_names
from .budget import Budget
from .evaluation import CONSTANTS, ExpressionFunction

__all__ = [
    "CONSTANTS",
    "DEFAULT_FUNCTIONS",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "ExpressionFunction",
    "compile_expression",
]

MAX_LENGTH = 10_000


def compile_expression(
    text: str, allowed_functions: Mapping[str, Callable[..., Any]] | None = None, budget: Budget | None = None
) -> ExpressionFunction:
    """Check `text` as a NumPy expression and return it as a function of its free names.

    Nothing in `text` runs here; calling the result walks the checked tree and calls only the
    allowed functions and arithmetic operators on the values passed in.

    Names: `pi`, `e`, `inf`, `nan` (also `np.pi`...) are constants and function names are
    functions, so neither can be an input; every other name is an input.

    Args:
        text: e.g. ``"sin(x) * exp(y) + x**2"``; ``"x*y, x+y"`` returns a tuple of outputs.
        allowed_functions: callable names to functions; keys like ``"sin"`` or ``"linalg.norm"``
            (callable as ``sin``, ``np.sin``, ``numpy.sin``, ``linalg.norm``, ``np.linalg.norm``).
            Defaults to `DEFAULT_FUNCTIONS`.
        budget: what one call may cost: elements per array, work in all, seconds
            (`jaccli.expr.cost.Budget`); defaults to `jaccli.expr.cost.default_budget()`, 10**7
            elements, 10**9 multiply-adds, 10 s. Each operation's size and work are told from the
            shapes before it runs: `sum(diag(x, 15000))` is refused without allocating anything.

    Returns:
        An `ExpressionFunction` whose parameters are the inputs in order of first appearance.

    Raises:
        UsageError: the text is too long, too deep, not valid syntax, or uses anything not allowed;
            when called, an operation beyond the budget.

    >>> f = compile_expression("sin(x) * y + x**2")
    >>> f.params
    ('x', 'y')
    >>> float(f(0.0, y=2.0) + f(1.0, 0.0))
    1.0
    """
    if allowed_functions is None:
        allowed_functions = DEFAULT_FUNCTIONS
    functions = normalise_functions(allowed_functions)
    if len(text) > MAX_LENGTH:
        raise UsageError(f"expression: too long ({len(text)} characters; at most {MAX_LENGTH})")
    stripped = text.lstrip(" \t")
    shift = len(text) - len(stripped)
    stripped = stripped.rstrip()
    if not stripped:
        raise UsageError("expression: empty; write a formula such as 'sin(x) * y'")
    tree = _parse(stripped, shift)
    checker = Checker(stripped, functions)
    try:
        checker.expr(tree.body, 1)
    except RecursionError:
        raise UsageError(f"expression: {TOO_DEEP}") from None
    params = tuple(sorted(checker.first_seen, key=checker.first_seen.__getitem__))
    return ExpressionFunction(text, tree, params, checker.resolved, reserved_names(functions), budget)


def _parse(text: str, shift: int) -> ast.Expression:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as error:
        if "too many nested" in str(error.msg):
            raise UsageError(f"expression: {TOO_DEEP}") from None
        raise UsageError(_syntax_message(text, error, shift)) from None
    except ValueError as error:  # null bytes on Python < 3.12
        raise UsageError(f"expression: {error}") from None
    except (RecursionError, MemoryError):
        raise UsageError(f"expression: {TOO_DEEP}") from None


def _syntax_message(text: str, error: SyntaxError, shift: int) -> str:
    lineno = error.lineno or 1
    column = error.offset or 1
    lines = text.splitlines() or [""]
    line = lines[min(lineno, len(lines)) - 1]
    if lineno == 1:
        column += shift
        line = " " * shift + line
    where = f"column {column}" if len(lines) == 1 else f"line {lineno}, column {column}"
    message = f"expression: invalid syntax at {where}: {error.msg}"
    if len(line) <= 200:
        message += f"\n  {line}\n  {' ' * (column - 1)}^"
    return message
