"""Evaluate a checked expression by walking its tree: the operators, the constants and ExpressionFunction."""

from __future__ import annotations

import ast
import inspect
import operator
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from jaccli.errors import UsageError
from .budget import Budget, default_budget
from .cost import Meter, binary_cost, call_cost

__all__ = ["BINARY", "COMPARE", "CONSTANTS", "SEQUENCE_HINT", "UNARY", "ExpressionFunction", "evaluate"]

# Constants are reserved words: an input cannot be called `e` or `pi`.
CONSTANTS: Mapping[str, float] = MappingProxyType(
    {"pi": np.pi, "e": np.e, "inf": np.inf, "nan": np.nan}
)

# Python ints grow without bound: `9**9**9` would hang the process before numpy saw anything.
_MAX_INT_BITS = 10_000
SEQUENCE_HINT = "Python would repeat or join them; use stack(...) or concatenate(...)"

# ---------------------------------------------------------------- operators


def _check_int_size(bits: int) -> None:
    if bits > _MAX_INT_BITS:
        raise UsageError(
            f"expression: integer constant arithmetic is too large (over {_MAX_INT_BITS} bits); "
            "use floats, e.g. 9.0**99 instead of 9**99"
        )


def _power(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        _check_int_size(b * abs(a).bit_length())
    return operator.pow(a, b)


def _multiply(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        _check_int_size(a.bit_length() + b.bit_length())
    return operator.mul(a, b)


BINARY: Mapping[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _multiply,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
    ast.MatMult: operator.matmul,
}
UNARY: Mapping[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
COMPARE: Mapping[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


# ---------------------------------------------------------------- evaluating


def evaluate(node: ast.AST, env: Mapping[str, Any], resolved: Mapping[ast.AST, Any], meter: Meter | None = None) -> Any:
    """The value of the checked `node`; with a `meter`, each operation is charged (and maybe refused) before it runs."""
    # Only node kinds the checker let through reach here; anything else is a bug, not user input.
    kind = type(node)
    if kind is ast.Constant:
        return node.value
    if kind is ast.Name:
        return env[node.id] if node.id in env else CONSTANTS[node.id]
    if kind is ast.Attribute:
        return resolved[node]
    if kind is ast.BinOp:
        left = evaluate(node.left, env, resolved, meter)
        right = evaluate(node.right, env, resolved, meter)
        if isinstance(left, (tuple, list)) or isinstance(right, (tuple, list)):
            # Sequence arithmetic repeats or joins, `(x,) * 10**9`, never what a formula means.
            raise UsageError(f"expression: arithmetic on tuples is not allowed; {SEQUENCE_HINT}")
        if meter is not None:
            meter.charge(node, binary_cost(type(node.op), left, right))
        return BINARY[type(node.op)](left, right)
    if kind is ast.UnaryOp:
        operand = evaluate(node.operand, env, resolved, meter)
        if meter is not None:
            meter.charge(node, binary_cost(ast.UAdd, operand, 0))
        return UNARY[type(node.op)](operand)
    if kind is ast.Compare:
        left = evaluate(node.left, env, resolved, meter)
        right = evaluate(node.comparators[0], env, resolved, meter)
        if meter is not None:
            meter.charge(node, binary_cost(ast.Eq, left, right))
        return COMPARE[type(node.ops[0])](left, right)
    if kind is ast.Tuple:
        return tuple(evaluate(element, env, resolved, meter) for element in node.elts)
    if kind is ast.List:
        return [evaluate(element, env, resolved, meter) for element in node.elts]
    if kind is ast.Subscript:  # constant indexes and slices: never more than the array indexed
        return evaluate(node.value, env, resolved, meter)[_index(node.slice)]
    if kind is ast.Call:
        args = [evaluate(argument, env, resolved, meter) for argument in node.args]
        kwargs = {keyword.arg: evaluate(keyword.value, env, resolved, meter) for keyword in node.keywords}
        if meter is None:
            return resolved[node](*args, **kwargs)
        cost, known = call_cost(resolved[node], args, kwargs)
        meter.charge(node, cost)
        result = resolved[node](*args, **kwargs)
        if not known:
            meter.check_result(node, result)
        return result
    raise AssertionError(f"unchecked expression node {kind.__name__}")


def _index(node: ast.AST) -> Any:
    kind = type(node)
    if kind is ast.Tuple:
        return tuple(_index(element) for element in node.elts)
    if kind is ast.Slice:
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if part is None else _index(part) for part in parts))
    if kind is ast.UnaryOp:
        return UNARY[type(node.op)](node.operand.value)
    if kind is ast.Constant:
        return node.value
    raise AssertionError(f"unchecked index node {kind.__name__}")


# ---------------------------------------------------------------- the checked expression as a function


# The evaluation runs below a frame of a file named "<expression>": jaccli's messages name the
# innermost frame outside jaccli and NumPy as where an operation was written, which is then this
# one, not the command line's code that called the expression.
def _IN_EXPRESSION(evaluate, body, env, resolved, meter): return evaluate(body, env, resolved, meter)  # noqa: E704


_IN_EXPRESSION.__code__ = _IN_EXPRESSION.__code__.replace(co_filename="<expression>", co_firstlineno=1)


class ExpressionFunction:
    """A checked expression, callable like ``def expr(x, y): return ...`` with its inputs in order.

    Attributes:
        text: the expression as written.
        params: the input names, in order of first appearance.
        reserved: names that cannot be inputs (constants, functions, module names) -> what they
            are in the expression, for messages: ``{"e": "the constant 2.718281828459045", ...}``.
        budget: what each call may cost (`jaccli.expr.cost.Budget`): an operation beyond it is
            refused before it runs (UsageError), as is going on past its time.
    """

    __name__ = "expr"
    __qualname__ = "expr"

    def __init__(
        self,
        text: str,
        tree: ast.Expression,
        params: tuple[str, ...],
        resolved: Mapping[ast.AST, Any],
        reserved: Mapping[str, str] | None = None,
        budget: Budget | None = None,
    ):
        self.text = text
        self.params = params
        self.reserved = MappingProxyType(dict(reserved or {}))
        self.__doc__ = f"expr: {text}"
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in params]
        )
        self._body = tree.body
        self._resolved = resolved
        self.budget = default_budget() if budget is None else budget

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        env = self.__signature__.bind(*args, **kwargs).arguments
        return _IN_EXPRESSION(evaluate, self._body, env, self._resolved, Meter(self.budget))

    def __repr__(self) -> str:
        return f"ExpressionFunction({self.text!r})"
