"""Safe NumPy expressions for `jaccli -e`: parsed, checked whole, then evaluated by walking the tree."""

from __future__ import annotations

import ast
import difflib
import inspect
import operator
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

import numpy as np

from jaccli.errors import UsageError

__all__ = [
    "CONSTANTS",
    "DEFAULT_FUNCTIONS",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "ExpressionFunction",
    "compile_expression",
]

MAX_LENGTH = 10_000
MAX_DEPTH = 100

# Constants are reserved words: an input cannot be called `e` or `pi`.
CONSTANTS: Mapping[str, float] = MappingProxyType(
    {"pi": np.pi, "e": np.e, "inf": np.inf, "nan": np.nan}
)

# ---------------------------------------------------------------- default functions

_ELEMENTWISE = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sqrt", "cbrt", "square", "abs", "absolute", "sign",
    "maximum", "minimum", "clip", "where", "hypot", "logaddexp",
    "power", "reciprocal", "sinc", "floor", "ceil",
)  # fmt: skip
_REDUCTIONS = (
    "sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std", "cumsum", "cumprod",
)  # fmt: skip
_PRODUCTS = ("dot", "matmul", "outer", "inner", "tensordot", "einsum", "kron", "trace")
_SHAPE = (
    "reshape", "ravel", "transpose", "stack", "concatenate", "hstack", "vstack",
    "diag", "diagonal", "tril", "triu", "flip", "roll",
)  # fmt: skip
_LINALG = ("norm", "inv", "det", "solve", "slogdet", "cholesky", "eigh", "qr", "svd")

DEFAULT_FUNCTIONS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {name: getattr(np, name) for name in _ELEMENTWISE + _REDUCTIONS + _PRODUCTS + _SHAPE}
    | {f"linalg.{name}": getattr(np.linalg, name) for name in _LINALG}
)
"""Functions an expression may call, by the name written after an optional ``np.``/``numpy.``."""

_MODULE_PREFIXES = ("np", "numpy")

# Strings are data nowhere else; these are the only places a NumPy function needs one.
_STRING_FIRST_ARGUMENT = frozenset({"einsum"})
_STRING_KEYWORDS = frozenset({"ord", "mode", "UPLO", "order"})
_SAFE_STRING = re.compile(r"[A-Za-z0-9_,.\->\s]{0,64}")
# `out=` would let an expression write into its own inputs.
_FORBIDDEN_KEYWORDS = frozenset({"out"})
# Python ints grow without bound: `9**9**9` would hang the process before numpy saw anything.
_MAX_INT_BITS = 10_000

_TOO_DEEP = f"nested too deeply (more than {MAX_DEPTH} levels); split it or use a .py function file"
_USE_FUNCTIONS = "use functions like sin(x) or np.sin(x)"
_SEQUENCE_HINT = "Python would repeat or join them; use stack(...) or concatenate(...)"
_ALLOWED_SUMMARY = (
    "allowed: numbers, input names, pi e inf nan, + - * / // % ** @, comparisons, "
    "indexing x[0] x[1:3] x[:, 0], tuples, and calls such as sin(x) or np.linalg.norm(x)"
)

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


_BINARY: Mapping[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _multiply,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
    ast.MatMult: operator.matmul,
}
_UNARY: Mapping[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_COMPARE: Mapping[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
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


class _Checker:
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
            self.fail(_TOO_DEEP)
        kind = type(node)
        if kind is ast.Constant:
            self.constant(node)
        elif kind is ast.Name:
            self.name(node)
        elif kind is ast.Attribute:
            self.attribute(node)
        elif kind is ast.BinOp:
            if type(node.op) not in _BINARY:
                self.fail(
                    f"operator '{_OPERATOR_SYMBOLS.get(type(node.op), '?')}' is not allowed; "
                    "allowed: + - * / // % ** @"
                )
            if type(node.left) in (ast.Tuple, ast.List) or type(node.right) in (ast.Tuple, ast.List):
                self.fail(f"arithmetic on tuples '{self.snippet(node)}' is not allowed; " + _SEQUENCE_HINT)
            self.expr(node.left, depth + 1)
            self.expr(node.right, depth + 1)
            self.fold(node)
        elif kind is ast.UnaryOp:
            if type(node.op) not in _UNARY:
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
            _evaluate(node, {}, self.resolved)
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
        if type(node.ops[0]) not in _COMPARE:
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
        if type(node) is ast.UnaryOp and type(node.op) in _UNARY:
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


# ---------------------------------------------------------------- evaluating


def _evaluate(node: ast.AST, env: Mapping[str, Any], resolved: Mapping[ast.AST, Any]) -> Any:
    # Only node kinds the checker let through reach here; anything else is a bug, not user input.
    kind = type(node)
    if kind is ast.Constant:
        return node.value
    if kind is ast.Name:
        return env[node.id] if node.id in env else CONSTANTS[node.id]
    if kind is ast.Attribute:
        return resolved[node]
    if kind is ast.BinOp:
        left = _evaluate(node.left, env, resolved)
        right = _evaluate(node.right, env, resolved)
        if isinstance(left, (tuple, list)) or isinstance(right, (tuple, list)):
            # Sequence arithmetic repeats or joins, `(x,) * 10**9`, never what a formula means.
            raise UsageError(f"expression: arithmetic on tuples is not allowed; {_SEQUENCE_HINT}")
        return _BINARY[type(node.op)](left, right)
    if kind is ast.UnaryOp:
        return _UNARY[type(node.op)](_evaluate(node.operand, env, resolved))
    if kind is ast.Compare:
        left = _evaluate(node.left, env, resolved)
        right = _evaluate(node.comparators[0], env, resolved)
        return _COMPARE[type(node.ops[0])](left, right)
    if kind is ast.Tuple:
        return tuple(_evaluate(element, env, resolved) for element in node.elts)
    if kind is ast.List:
        return [_evaluate(element, env, resolved) for element in node.elts]
    if kind is ast.Subscript:
        return _evaluate(node.value, env, resolved)[_index(node.slice)]
    if kind is ast.Call:
        args = [_evaluate(argument, env, resolved) for argument in node.args]
        kwargs = {keyword.arg: _evaluate(keyword.value, env, resolved) for keyword in node.keywords}
        return resolved[node](*args, **kwargs)
    raise AssertionError(f"unchecked expression node {kind.__name__}")


def _index(node: ast.AST) -> Any:
    kind = type(node)
    if kind is ast.Tuple:
        return tuple(_index(element) for element in node.elts)
    if kind is ast.Slice:
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if part is None else _index(part) for part in parts))
    if kind is ast.UnaryOp:
        return _UNARY[type(node.op)](node.operand.value)
    if kind is ast.Constant:
        return node.value
    raise AssertionError(f"unchecked index node {kind.__name__}")


# ---------------------------------------------------------------- public API


class ExpressionFunction:
    """A checked expression, callable like ``def expr(x, y): return ...`` with its inputs in order.

    Attributes:
        text: the expression as written.
        params: the input names, in order of first appearance.
    """

    __name__ = "expr"
    __qualname__ = "expr"

    def __init__(
        self,
        text: str,
        tree: ast.Expression,
        params: tuple[str, ...],
        resolved: Mapping[ast.AST, Any],
    ):
        self.text = text
        self.params = params
        self.__doc__ = f"expr: {text}"
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in params]
        )
        self._body = tree.body
        self._resolved = resolved

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        env = self.__signature__.bind(*args, **kwargs).arguments
        return _evaluate(self._body, env, self._resolved)

    def __repr__(self) -> str:
        return f"ExpressionFunction({self.text!r})"


def compile_expression(
    text: str, allowed_functions: Mapping[str, Callable[..., Any]] | None = None
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

    Returns:
        An `ExpressionFunction` whose parameters are the inputs in order of first appearance.

    Raises:
        UsageError: the text is too long, too deep, not valid syntax, or uses anything not allowed.

    >>> f = compile_expression("sin(x) * y + x**2")
    >>> f.params
    ('x', 'y')
    >>> float(f(0.0, y=2.0) + f(1.0, 0.0))
    1.0
    """
    if allowed_functions is None:
        allowed_functions = DEFAULT_FUNCTIONS
    functions = _normalise_functions(allowed_functions)
    if len(text) > MAX_LENGTH:
        raise UsageError(f"expression: too long ({len(text)} characters; at most {MAX_LENGTH})")
    stripped = text.lstrip(" \t")
    shift = len(text) - len(stripped)
    stripped = stripped.rstrip()
    if not stripped:
        raise UsageError("expression: empty; write a formula such as 'sin(x) * y'")
    tree = _parse(stripped, shift)
    checker = _Checker(stripped, functions)
    try:
        checker.expr(tree.body, 1)
    except RecursionError:
        raise UsageError(f"expression: {_TOO_DEEP}") from None
    params = tuple(sorted(checker.first_seen, key=checker.first_seen.__getitem__))
    return ExpressionFunction(text, tree, params, checker.resolved)


def _normalise_functions(functions: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
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


def _parse(text: str, shift: int) -> ast.Expression:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as error:
        if "too many nested" in str(error.msg):
            raise UsageError(f"expression: {_TOO_DEEP}") from None
        raise UsageError(_syntax_message(text, error, shift)) from None
    except ValueError as error:  # null bytes on Python < 3.12
        raise UsageError(f"expression: {error}") from None
    except (RecursionError, MemoryError):
        raise UsageError(f"expression: {_TOO_DEEP}") from None


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
