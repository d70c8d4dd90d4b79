"""Structural proof that a recording keeps samples apart along axis 0 (for batch_axis=0).

Each recorded node gets a verdict from the rule of its primitive (`facts.SAMPLE_RULES`, declared
beside the primitive; the rules shared by several families are here): its axis 0 holds the samples
and sample b of its value depends only on sample b of its traced arguments. Elementwise
operations, products with a constant matrix on the right, reductions and indexing that leave
axis 0 alone, and reshapes and transposes that keep it in front all qualify. A primitive with no
rule, or any use that breaks the pattern, gives no proof; the caller then checks numerically.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tape import Node
from .facts import SAMPLE_RULES
from .tracer import Tracer


def _shape(x: Any) -> tuple:
    return np.shape(x._value if type(x) is Tracer else x)


def traced_args(node: Node) -> list[int]:
    """The positions of a node's traced arguments."""
    return [argnum for argnum, _, _ in node.parents]


def elementwise(node: Node, B: int) -> bool:
    """The rule of an elementwise primitive: every operand keeps the samples on axis 0 (or is
    broadcast along it without being traced)."""
    out = np.shape(node.value)
    if not out or out[0] != B:
        return False
    for argnum in traced_args(node):
        if _shape(node.args[argnum]) != out and np.shape(node.args[argnum])[:1] != (B,):
            return False
        if len(np.shape(node.args[argnum])) != len(out):
            return False  # a traced operand broadcast along the sample axis
    return all(np.ndim(a) < len(out) or np.shape(a)[0] in (1, B)
               for k, a in enumerate(node.args) if k not in traced_args(node) and hasattr(a, "shape"))


def leading_axis_kept(node: Node, B: int) -> bool:
    """The rule of a primitive of argument 0 whose output keeps that argument's sample axis in front
    (a reshape, a copy, a cast)."""
    return np.shape(node.args[0])[:1] == (B,) and np.shape(node.value)[:1] == (B,)


def separable(trace: Any, B: int) -> bool:
    """Whether every recorded operation provably keeps samples (axis 0) apart (`SAMPLE_RULES`)."""
    for node in trace.nodes:
        if not node.parents:
            continue  # an input or a traced constant
        rule = SAMPLE_RULES.get(node.prim)
        try:
            proven = rule is not None and not node.prim.multi_out and rule(node, B)
        except (IndexError, TypeError, ValueError):
            proven = False  # arguments not laid out as the rule expects: no proof
        if not proven:
            return False
    return True
