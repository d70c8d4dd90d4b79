"""What an expression's operations cost: each one's output size and work, told from the shapes before it runs,
and charged against the evaluation's budget (jaccli.expr.budget)."""

from __future__ import annotations

import ast
import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from jaccli.errors import UsageError
from .budget import Budget

__all__ = ["Meter", "binary_cost", "call_cost"]


# Shape-derived sizes are Python ints: `diag(x, 10**30)` is counted exactly, never allocated.
Cost = tuple[int, int]  # elements of the largest array made, work


class Meter:
    """The running cost of one evaluation: each operation is charged before it runs, and refused (UsageError,
    naming it) once its array or the work so far would exceed the budget, or the time is up."""

    __slots__ = ("budget", "work", "deadline")

    def __init__(self, budget: Budget):
        self.budget = budget
        self.work = 0
        self.deadline = time.monotonic() + budget.seconds

    def charge(self, node: ast.AST, cost: Cost) -> None:
        """Charge the operation `node` (named in the message) `cost`, or refuse it."""
        elements, work = cost
        budget = self.budget
        self.work += work
        if elements <= budget.max_elements and self.work <= budget.max_work and time.monotonic() <= self.deadline:
            return
        what = functools.partial(operation_name, node)
        if elements > budget.max_elements:
            raise UsageError(f"expression: {what()} would make an array of {elements:,} elements, more than the "
                             f"{budget.max_elements:,} an expression may (--expr-max-elements)")
        if self.work > budget.max_work:
            raise UsageError(f"expression: {what()} would bring the work to {self.work:,} operations, more than the "
                             f"{budget.max_work:,} an expression may (--expr-max-work)")
        raise UsageError(f"expression: still evaluating at {what()} after {budget.seconds:g} s, the time an "
                         "expression may take (--expr-timeout)")

    def check_result(self, node: ast.AST, value: Any) -> None:
        """After an operation whose cost could not be told beforehand: refuse a result beyond the budget."""
        self.charge(node, (_size(value), 0))


def operation_name(node: ast.AST) -> str:
    """The operation `node`, for messages: as written when short, else its function or operator."""
    text = ast.unparse(node)
    if len(text) <= 60:
        return text
    if type(node) is ast.Call:
        return f"{ast.unparse(node.func)}(...)"
    return f"'{text[:57]}...'"


# ---------------------------------------------------------------- shapes of what an expression handles


def _shape(value: Any) -> tuple[int, ...]:
    if type(value) is np.ndarray:
        return value.shape
    if isinstance(value, (int, float, complex)):  # the constants: no shape to ask (nor getattr, refused to expressions)
        return ()
    try:
        return tuple(value.shape)  # arrays, NumPy scalars and traced values
    except AttributeError:
        pass
    if isinstance(value, (list, tuple)):
        inner = [_shape(item) for item in value]
        if inner and all(part == inner[0] for part in inner):
            return (len(value), *inner[0])
        return (sum(math.prod(part) for part in inner),)  # ragged or empty: its size is what counts
    return ()


def _size(value: Any) -> int:
    return math.prod(_shape(value))


def _broadcast(*values: Any) -> Cost:
    """Element-wise: the broadcast shape's size, once each; shapes that do not broadcast fail in NumPy."""
    shape: tuple[int, ...] = ()
    for value in values:
        other = _shape(value)
        if other == shape or not other:
            continue
        if not shape:
            shape = other
            continue
        if len(other) > len(shape):
            shape, other = other, shape
        lead = len(shape) - len(other)
        shape = shape[:lead] + tuple(a if a >= b else b for a, b in zip(shape[lead:], other))
    size = math.prod(shape)
    return size, size


def _at_most_inputs(*values: Any, **options: Any) -> Cost:
    """Reductions, reshapes, sorts, cumulative sums: an array no larger than the inputs, a pass over each."""
    sizes = [_size(value) for value in values]
    return max(sizes, default=1), sum(sizes)


def _stacked(arrays: Any, *rest: Any, **options: Any) -> Cost:
    size = sum(_size(item) for item in arrays) if isinstance(arrays, (list, tuple)) else _size(arrays)
    return size, size


def _matmul(a: Any, b: Any) -> Cost:
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _broadcast(a, b)
    inner = sa[-1]
    m = sa[-2] if len(sa) > 1 else 1
    n = sb[-1] if len(sb) > 1 else 1
    batch, _ = _broadcast(_Shaped(sa[:-2]), _Shaped(sb[:-2]))
    out = batch * m * n
    return out, out * inner


class _Shaped:
    """A stand-in with a shape only, for `_broadcast` over parts of shapes."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape


def _dot(a: Any, b: Any) -> Cost:
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _broadcast(a, b)
    inner = sa[-1]
    rest_b = math.prod(sb) // max(sb[-2] if len(sb) > 1 else sb[-1], 1)
    out = math.prod(sa[:-1]) * rest_b
    return out, out * inner


def _inner(a: Any, b: Any) -> Cost:
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return _broadcast(a, b)
    out = math.prod(sa[:-1]) * math.prod(sb[:-1])
    return out, out * sa[-1]


def _outer(a: Any, b: Any) -> Cost:
    out = _size(a) * _size(b)
    return out, out


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Cost:
    sa, sb = _shape(a), _shape(b)
    try:
        if isinstance(axes, int):
            axes_a = list(range(len(sa) - axes, len(sa)))
        else:
            axes_a = [axes[0]] if isinstance(axes[0], int) else list(axes[0])
        contracted = math.prod(sa[axis] for axis in axes_a)
    except (TypeError, IndexError, ValueError):
        return _outer(a, b)  # NumPy refuses such axes; the outer product bounds what it could make
    contracted = max(contracted, 1)
    out = (math.prod(sa) // contracted) * (math.prod(sb) // contracted)
    return out, out * contracted


def _einsum(subscripts: Any, *operands: Any, **options: Any) -> Cost:
    if not isinstance(subscripts, str):
        return _outer_of(operands)
    text = subscripts.replace(" ", "")
    given, arrow, wanted = text.partition("->")
    terms = given.split(",")
    if len(terms) != len(operands):
        return _outer_of(operands)  # NumPy refuses it
    sizes: dict[str, int] = {}
    extra = 1  # what `...` stands for, broadcast over the operands
    for term, operand in zip(terms, operands):
        shape = _shape(operand)
        labels = term.replace("...", "")
        covered = len(shape) - len(labels)
        if "..." in term and covered > 0:
            extra = max(extra, math.prod(shape[:covered]))
            shape = shape[covered:]
        for label, length in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), length)
    if not arrow:
        wanted = "".join(sorted(label for label in sizes if given.count(label) == 1))
    out = extra * math.prod(sizes.get(label, 1) for label in wanted.replace("...", ""))
    return out, extra * math.prod(sizes.values())


def _outer_of(operands: Sequence[Any]) -> Cost:
    out = math.prod(_size(operand) for operand in operands)
    return out, out


def _square_from_vector(v: Any, k: Any = 0, *rest: Any, **options: Any) -> Cost:
    """diag, tril, triu: a 1-D input of n makes an (n + |k|)^2 matrix (diag; tril and triu ignore k)."""
    shape = _shape(v)
    if len(shape) != 1:
        return _at_most_inputs(v)
    offset = abs(int(k)) if isinstance(k, (int, np.integer)) else 0
    side = shape[0] + offset
    return side * side, side * side


def _tril(v: Any, *rest: Any, **options: Any) -> Cost:
    return _square_from_vector(v)


def _matrices(a: Any, *rest: Any, **options: Any) -> Cost:
    """Factorisations, inverses, solves, determinants of (..., m, n): m n min(m, n) each; SVD's full U and V."""
    shape = _shape(a)
    if len(shape) < 2:
        return _at_most_inputs(a, *rest)
    m, n = shape[-2:]
    batch = math.prod(shape[:-2])
    made = batch * max(m, n) ** 2 + sum(_size(value) for value in rest)
    return made, batch * max(m, n) ** 2 * min(m, n) + sum(_size(value) for value in rest)


def _norm(a: Any, *rest: Any, **options: Any) -> Cost:
    shape = _shape(a)
    size = math.prod(shape)
    return size, size * (min(shape[-2:]) if len(shape) >= 2 else 1)


# The functions an operation's size and work are known for, by NumPy function. The rest (element-wise
# ones, reductions, reshapes) make no array larger than their inputs broadcast together; their result
# is checked after the call all the same (`Meter.check_result`), for functions added later.
_RULES: Mapping[Any, Callable[..., Cost]] = {
    np.matmul: _matmul, np.dot: _dot, np.inner: _inner, np.outer: _outer, np.kron: _outer,
    np.tensordot: _tensordot, np.einsum: _einsum,
    np.diag: _square_from_vector, np.tril: _tril, np.triu: _tril,
    np.concatenate: _stacked, np.stack: _stacked, np.hstack: _stacked, np.vstack: _stacked,
    np.linalg.inv: _matrices, np.linalg.solve: _matrices, np.linalg.cholesky: _matrices, np.linalg.det: _matrices,
    np.linalg.slogdet: _matrices, np.linalg.eigh: _matrices, np.linalg.qr: _matrices, np.linalg.svd: _matrices,
    np.linalg.norm: _norm,
    np.sum: _at_most_inputs, np.mean: _at_most_inputs, np.prod: _at_most_inputs, np.std: _at_most_inputs,
    np.var: _at_most_inputs, np.amax: _at_most_inputs, np.amin: _at_most_inputs, np.max: _at_most_inputs,
    np.min: _at_most_inputs, np.cumsum: _at_most_inputs, np.cumprod: _at_most_inputs, np.reshape: _at_most_inputs,
    np.ravel: _at_most_inputs, np.transpose: _at_most_inputs, np.roll: _at_most_inputs, np.flip: _at_most_inputs,
    np.diagonal: _at_most_inputs, np.trace: _at_most_inputs,
}  # fmt: skip


def call_cost(function: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Cost, bool]:
    """The cost of ``function(*args, **kwargs)``, and whether it is known (else: broadcast, checked after)."""
    rule = _RULES.get(function)
    if rule is None:
        return _broadcast(*args, *kwargs.values()), False
    try:
        return rule(*args, **kwargs), True
    except TypeError:  # arguments the function itself refuses: NumPy says so when it is called
        return _broadcast(*args), False


def binary_cost(op: type, left: Any, right: Any) -> Cost:
    """An operator's cost: ``@`` as matmul, the rest element-wise."""
    return _matmul(left, right) if op is ast.MatMult else _broadcast(left, right)
