"""Structural proof that a recording keeps samples apart along axis 0 (for batch_axis=0).

Each recorded node gets a verdict from a rule of its primitive: its axis 0 holds the samples
and sample b of its value depends only on sample b of its traced arguments. Elementwise
operations, products with a constant matrix on the right, reductions and indexing that leave
axis 0 alone, and reshapes and transposes that keep it in front all qualify. A primitive with no
rule, or any use that breaks the pattern, gives no proof; the caller then checks numerically.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .core import Node
from .tracer import Tracer


def _shape(x: Any) -> tuple:
    return np.shape(x._value if type(x) is Tracer else x)


def _traced_args(node: Node) -> list[int]:
    return [argnum for argnum, _, _ in node.parents]


def _elementwise(node: Node, B: int) -> bool:
    out = np.shape(node.value)
    if not out or out[0] != B:
        return False
    for argnum in _traced_args(node):
        if _shape(node.args[argnum]) != out and np.shape(node.args[argnum])[:1] != (B,):
            return False
        if len(np.shape(node.args[argnum])) != len(out):
            return False  # a traced operand broadcast along the sample axis
    return all(np.ndim(a) < len(out) or np.shape(a)[0] in (1, B)
               for k, a in enumerate(node.args) if k not in _traced_args(node) and hasattr(a, "shape"))


def _matmul(node: Node, B: int) -> bool:
    a, b = node.args[0], node.args[1]
    traced = _traced_args(node)
    return traced == [0] and np.ndim(a) == 2 and np.shape(a)[0] == B and np.ndim(b) == 2


def _reduce(node: Node, B: int) -> bool:
    axes = node.args[1]
    return np.shape(node.args[0])[:1] == (B,) and 0 not in axes and np.shape(node.value)[:1] == (B,)


def _reshape(node: Node, B: int) -> bool:
    return np.shape(node.args[0])[:1] == (B,) and np.shape(node.value)[:1] == (B,)


def _transpose(node: Node, B: int) -> bool:
    return tuple(node.args[1])[:1] == (0,) and np.shape(node.value)[:1] == (B,)


def _getitem(node: Node, B: int) -> bool:
    idx = node.args[1]  # a full basic index over every axis
    return bool(idx) and idx[0] == slice(None) and np.shape(node.value)[:1] == (B,)


def _where(node: Node, B: int) -> bool:
    return _elementwise(node, B) and np.ndim(node.args[0]) <= len(np.shape(node.value))


_RULES: dict[str, Callable[[Node, int], bool]] = {
    "np.matmul": _matmul, "np.sum": _reduce, "np.max": _reduce, "np.min": _reduce, "np.prod": _reduce,
    "reshape": _reshape, "transpose": _transpose, "getitem": _getitem, "np.where": _where,
    "np.copy": _reshape, "astype": _reshape,
}


def _rule(node: Node) -> Callable[[Node, int], bool] | None:
    rule = _RULES.get(node.prim.name)
    if rule is not None:
        return rule
    from .registry import REGISTRY

    entry = REGISTRY.get(node.prim.name)
    if entry is not None and entry.family == "elementwise":
        return _elementwise
    return None


def separable(trace: Any, B: int) -> bool:
    """Whether every recorded operation provably keeps samples (axis 0) apart."""
    for node in trace.nodes:
        if not node.parents:
            continue  # an input or a traced constant
        rule = _rule(node)
        try:
            proven = rule is not None and not node.prim.multi_out and rule(node, B)
        except (IndexError, TypeError, ValueError):
            proven = False  # arguments not laid out as the rule expects: no proof
        if not proven:
            return False
    return True
