"""Check a parsed expression against the allowed subset: names, functions, operators, indexes and strings."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

import numpy as np

from jaccli.engine import rules
from jaccli.engine import EXPRESSION_FUNCTIONS
from jaccli.errors import UsageError
from .evaluation import BINARY, COMPARE, CONSTANTS, SEQUENCE_HINT, UNARY, evaluate

__all__ = ["DEFAULT_FUNCTIONS", "MAX_DEPTH", "TOO_DEEP", "Checker", "normalise_functions"]

MAX_DEPTH = 100

# ---------------------------------------------------------------- default functions

rules.load_linalg()  # (with the rest, it fills EXPRESSION_FUNCTIONS; np.linalg's would otherwise wait for f)
DEFAULT_FUNCTIONS: Mapping[str, Callable[..., Any]] = MappingProxyType(EXPRESSION_FUNCTIONS)
"""Functions an expression may call, by the name written after an optional ``np.``/``numpy.``: those the
rules modules allow (`facts.allow_in_expressions`, beside each function's rules)."""

_MODULE_PREFIXES = ("np", "numpy")

# Strings are data nowhere else; these are the only places a NumPy function needs one.
_STRING_FIRST_ARGUMENT = frozenset({"einsum"})
_STRING_KEYWORDS = frozenset({"ord", "mode", "UPLO", "order"})
_SAFE_STRING = re.compile(r"[A-Za-z0-9_,.\->\s]{0,64}")
# `out=` would let an expression write into its own inputs.
_FORBIDDEN_KEYWORDS = frozenset({"out"})

TOO_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels); split it or use a .py function file"
_USE_FUNCTIONS = "use functions like sin(x) or np.sin(x)"
_ALLOWED_SUMMARY = (
    "allowed: numbers, input names, pi e inf nan, + - * / // % ** @, comparisons, "
    "indexing x[0] x[1:3] x[:, 0], tuples, and calls such as sin(x) or np.linalg.norm(x)"
)

_OPERATOR_SYMBOLS = {
    ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&",
    ast.Invert: "~", ast.Not: "not",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
}  # fmt: skip

_REFUSED_KINDS = {
    ast.Lambda: "lambda is not allowed; write the formula directly",
    ast.ListComp: "comprehensions are not allowed; use array functions such as sum(x)",
    ast.SetComp: "comprehensions are not allowed; use array functions such as sum(x)",
    ast.DictComp: "comprehensions are not allowed; use array functions such as sum(x)",
    ast.GeneratorExp: "comprehensions are not allowed; use array functions such as sum(x)",
    ast.JoinedStr: "f-strings are not allowed; expressions work on numbers only",
    ast.IfExp: "'a if c else b' is not allowed; use where(c, a, b)",
    ast.BoolOp: "'and'/'or' are not allowed; use where(c, a, b)",
    ast.NamedExpr: "':=' assignment is not allowed",
    ast.Starred: "starred arguments '*x' are not allowed",
    ast.Dict: "dict literals are not allowed",
    ast.Set: "set literals are not allowed",
}


def _is_dunder(name: str) -> bool:
    return name.startswith("__")


# ---------------------------------------------------------------- checking


class Checker:
    """Walks a parsed expression once, refusing anything outside the allowed subset."""

    def __init__(self, text: str, functions: Mapping[str, Callable[..., Any]]):
        self.text = text
        self.functions = functions
        self.prefixes = {key.split(".")[0] for key in functions if "." in key}
        self.first_seen: dict[str, tuple[int, int]] = {}
        # Call and attribute nodes -> the function or constant they denote, for the evaluator.
        self.resolved: dict[ast.AST, Any] = {}

    def fail(self, message: str) -> NoReturn:
        raise UsageError(f"expression: {message}")

    def snippet(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text, node) or type(node).__name__
        segment = " ".join(segment.split())
        return segment if len(segment) <= 60 else segment[:57] + "..."

    def expr(self, node: ast.AST, depth: int, *, container_ok: bool = False) -> None:
        """Check one expression node; `container_ok` admits lists (function arguments only)."""
        if depth > MAX_DEPTH:
            self.fail(TOO_DEEP)
        kind = type(node)
        if kind is ast.Constant:
            self.constant(node)
        elif kind is ast.Name:
            self.name(node)
        elif kind is ast.Attribute:
            self.attribute(node)
        elif kind is ast.BinOp:
            if type(node.op) not in BINARY:
                self.fail(
                    f"operator '{_OPERATOR_SYMBOLS.get(type(node.op), '?')}' is not allowed; "
                    "allowed: + - * / // % ** @"
                )
            if type(node.left) in (ast.Tuple, ast.List) or type(node.right) in (ast.Tuple, ast.List):
                self.fail(f"arithmetic on tuples '{self.snippet(node)}' is not allowed; " + SEQUENCE_HINT)
            self.expr(node.left, depth + 1)
            self.expr(node.right, depth + 1)
            self.fold(node)
        elif kind is ast.UnaryOp:
            if type(node.op) not in UNARY:
                symbol = _OPERATOR_SYMBOLS.get(type(node.op), "?")
                self.fail(f"operator '{symbol}' is not allowed; allowed unary operators: + -")
            self.expr(node.operand, depth + 1)
        elif kind is ast.Compare:
            self.compare(node, depth)
        elif kind is ast.Tuple or (kind is ast.List and container_ok):
            for element in node.elts:
                if type(element) is ast.Starred:
                    self.fail(f"starred '{self.snippet(element)}' is not allowed")
                self.expr(element, depth + 1, container_ok=container_ok)
        elif kind is ast.List:
            self.fail(
                "lists are only allowed as function arguments, e.g. stack([x, y]); "
                "use a tuple 'x, y' for several outputs"
            )
        elif kind is ast.Subscript:
            self.expr(node.value, depth + 1)
            self.index(node.slice, top=True)
        elif kind is ast.Call:
            self.call(node, depth)
        elif kind in _REFUSED_KINDS:
            self.fail(f"{_REFUSED_KINDS[kind]} (in '{self.snippet(node)}')")
        else:
            self.fail(f"'{self.snippet(node)}' is not allowed; {_ALLOWED_SUMMARY}")

    def fold(self, node: ast.BinOp) -> None:
        """Work out arithmetic on constants now, so that `9**9**9` is refused before anything runs."""
        pending = [node]
        while pending:
            part = pending.pop()
            if type(part) in (ast.Call, ast.Subscript):
                return
            if type(part) is ast.Name and part.id not in CONSTANTS:
                return
            pending.extend(ast.iter_child_nodes(part))
        try:
            evaluate(node, {}, self.resolved)
        except UsageError:
            raise
        except Exception:  # noqa: BLE001 - `1/0` fails again, as Python would, when the function runs
            pass

    def constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, str):
            self.fail(
                f"string {self.snippet(node)} is not allowed; strings may only be einsum subscripts "
                f"or values of {', '.join(k + '=' for k in sorted(_STRING_KEYWORDS))}"
            )
        if value is Ellipsis:
            self.fail("'...' is only allowed inside an index, e.g. x[..., 0]")
        if not isinstance(value, (bool, int, float)):
            self.fail(f"constant {self.snippet(node)} is not allowed; only int and float numbers are")

    def name(self, node: ast.Name) -> None:
        name = node.id
        if _is_dunder(name):
            self.fail(f"name '{name}' is not allowed: names starting with '__' are reserved")
        if name in CONSTANTS:
            return
        if name in _MODULE_PREFIXES or name in self.prefixes:
            example = next((key for key in sorted(self.functions) if key.startswith(f"{name}.")), "sin")
            if name in _MODULE_PREFIXES:
                example = f"{name}.{example}"
            self.fail(f"'{name}' cannot be used on its own; call a function such as {example}(x)")
        if name in self.functions:
            self.fail(
                f"'{name}' is a function; call it, e.g. {name}(x) "
                "(inputs cannot have the name of a function or of pi, e, inf, nan)"
            )
        self.first_seen.setdefault(name, (node.lineno, node.col_offset))

    def dotted(self, node: ast.AST) -> str | None:
        """`np.linalg.norm` -> "np.linalg.norm"; None when the chain is not rooted at a plain name."""
        parts = []
        while type(node) is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if type(node) is not ast.Name:
            return None
        parts.append(node.id)
        return ".".join(reversed(parts))

    def attribute(self, node: ast.Attribute) -> None:
        dotted = self.dotted(node)
        parts = dotted.split(".") if dotted else []
        if (
            len(parts) == 2
            and parts[0] in _MODULE_PREFIXES
            and parts[1] in CONSTANTS
        ):
            self.resolved[node] = CONSTANTS[parts[1]]
            return
        hint = "use transpose(x)" if node.attr == "T" else _USE_FUNCTIONS
        self.fail(f"attribute access '{self.snippet(node)}' is not allowed; {hint}")

    def compare(self, node: ast.Compare, depth: int) -> None:
        if len(node.ops) != 1:
            self.fail(
                f"chained comparison '{self.snippet(node)}' is not allowed; "
                "compare one pair at a time, e.g. where(a < b, where(b < c, ...), ...)"
            )
        if type(node.ops[0]) not in COMPARE:
            symbol = _OPERATOR_SYMBOLS.get(type(node.ops[0]), "?")
            self.fail(f"comparison '{symbol}' is not allowed; allowed: < <= > >= == !=")
        self.expr(node.left, depth + 1)
        self.expr(node.comparators[0], depth + 1)

    def index(self, node: ast.AST, *, top: bool = False) -> None:
        """Indexes are integer constants, slices of them, `...`, or a tuple of those."""
        if type(node) is ast.Tuple and top:
            for element in node.elts:
                self.index(element)
            return
        if type(node) is ast.Slice:
            for part in (node.lower, node.upper, node.step):
                if part is not None and not self.is_int_constant(part):
                    self.bad_index(part)
            return
        if self.is_int_constant(node) or (type(node) is ast.Constant and node.value is Ellipsis):
            return
        self.bad_index(node)

    def bad_index(self, node: ast.AST) -> NoReturn:
        self.fail(
            f"index '{self.snippet(node)}' is not allowed; use integer constants and slices "
            "like x[0], x[-1], x[1:3], x[:, 0], x[::-1]"
        )

    @staticmethod
    def is_int_constant(node: ast.AST) -> bool:
        if type(node) is ast.UnaryOp and type(node.op) in UNARY:
            node = node.operand
        return type(node) is ast.Constant and type(node.value) is int

    def call(self, node: ast.Call, depth: int) -> None:
        name = self.function_name(node.func)
        self.resolved[node] = self.functions[name]
        for position, argument in enumerate(node.args):
            if type(argument) is ast.Starred:
                self.fail(f"starred argument '{self.snippet(argument)}' is not allowed")
            if position == 0 and name in _STRING_FIRST_ARGUMENT and self.is_string(argument):
                self.safe_string(argument)
            else:
                self.expr(argument, depth + 1, container_ok=True)
        seen: set[str] = set()
        for keyword in node.keywords:
            if keyword.arg is None:
                self.fail(f"keyword unpacking '**{self.snippet(keyword.value)}' is not allowed")
            if _is_dunder(keyword.arg) or keyword.arg in _FORBIDDEN_KEYWORDS:
                self.fail(f"keyword '{keyword.arg}=' is not allowed in '{self.snippet(node)}'")
            if keyword.arg in seen:
                self.fail(f"keyword '{keyword.arg}=' is given twice in '{self.snippet(node)}'")
            seen.add(keyword.arg)
            if keyword.arg in _STRING_KEYWORDS and self.is_string(keyword.value):
                self.safe_string(keyword.value)
            else:
                self.expr(keyword.value, depth + 1, container_ok=True)

    def function_name(self, func: ast.AST) -> str:
        """The key of `func` in the allowed functions, with any np./numpy. prefix removed."""
        dotted = self.dotted(func)
        if dotted is None:
            self.fail(f"only functions called by name can be called, not '{self.snippet(func)}'; "
                      "use e.g. sin(x) or np.sin(x)")
        parts = dotted.split(".")
        if any(_is_dunder(part) for part in parts):
            if len(parts) == 1:
                self.fail(f"name '{dotted}' is not allowed: names starting with '__' are reserved")
            self.fail(f"attribute access '{dotted}' is not allowed; {_USE_FUNCTIONS}")
        if len(parts) > 1 and parts[0] in _MODULE_PREFIXES:
            name = ".".join(parts[1:])
        else:
            name = dotted
        if name in self.functions:
            return name
        if len(parts) > 1 and parts[0] not in _MODULE_PREFIXES and parts[0] not in self.prefixes:
            self.fail(f"attribute access '{dotted}' is not allowed; {_USE_FUNCTIONS}")
        last = parts[-1]
        close = [key for key in sorted(self.functions) if key.rsplit(".", 1)[-1] == last]
        close = close or difflib.get_close_matches(name, list(self.functions), n=1, cutoff=0.75)
        suggestion = f" (did you mean '{close[0]}'?)" if close else ""
        self.fail(
            f"'{dotted}' is not an allowed function{suggestion}; allowed functions "
            f"(optionally prefixed with np.): {', '.join(sorted(self.functions))}"
        )

    @staticmethod
    def is_string(node: ast.AST) -> bool:
        return type(node) is ast.Constant and type(node.value) is str

    def safe_string(self, node: ast.Constant) -> None:
        if not _SAFE_STRING.fullmatch(node.value):
            self.fail(
                f"string {self.snippet(node)} is not allowed; use letters, digits and , . -> only"
            )


def reserved_names(functions: Mapping[str, Callable[..., Any]]) -> dict[str, str]:
    """What each name that cannot be an input is in an expression: constants, functions, module names.

    Args:
        functions: the allowed functions, as `normalise_functions` returns them.

    >>> reserved = reserved_names(normalise_functions({"sin": np.sin, "linalg.norm": np.linalg.norm}))
    >>> reserved["e"], reserved["sin"], reserved["linalg"]
    ('the constant 2.718281828459045', 'a function', 'a module name (as in linalg.norm)')
    """
    names = {name: f"a module name (as in {name}.sin)" for name in _MODULE_PREFIXES}
    for key in functions:
        head, dot, _ = key.partition(".")
        if dot:
            names.setdefault(head, f"a module name (as in {key})")
        else:
            names[key] = "a function"
    names.update({name: f"the constant {value!r}" for name, value in CONSTANTS.items()})
    return names


def normalise_functions(functions: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The allowed functions keyed as the checker looks them up: dotted names without np./numpy."""
    table = {}
    for key, function in functions.items():
        parts = key.split(".")
        if parts[0] in _MODULE_PREFIXES and len(parts) > 1:
            parts = parts[1:]
        if not all(part.isidentifier() and not _is_dunder(part) for part in parts):
            raise ValueError(f"allowed function name {key!r} must be dotted identifiers without '__'")
        if not callable(function):
            raise ValueError(f"allowed function {key!r} is not callable")
        table[".".join(parts)] = function
    return table
