"""What is known about each primitive beyond its rules: one table per fact, keyed by the Primitive.

The rules module that defines a primitive fills its rows, beside the primitive (as JAX fills
``batching.primitive_batchers[p]`` beside ``p``); the code that needs a fact reads its table.
tests/test_rules.py fails when a primitive lacks a fact its family needs.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

# The keys are core.Primitive objects, not imported here: core's own modules read these tables.
_Primitive = _Node = Any

NOT_SEPARABLE = None
SAMPLE_RULES: dict[_Primitive, Callable[[_Node, int], bool] | None] = {}
"""batch_axis=0 (sample_independence): rule(node, B) says whether a recorded node keeps the B samples
along axis 0 apart; NOT_SEPARABLE: the primitive gives no such proof. Every primitive has a row."""

NO_KINK = None
KINK_CROSSINGS: dict[_Primitive, Callable[[tuple, tuple], Any] | None] = {}
"""crossed(at, moved): which elements of the output a step crosses the kink of (`Primitive.kink`)
between x and a point a step away, from (ans, *args) at both (check/kinks); NO_KINK: nowhere is its
derivative a convention. Every elementwise primitive and every primitive with a kink has a row."""

SHIFT_FORMS: dict[_Primitive, str] = {}
"""How a scalar shift c passes through the primitive (cancelled_shifts), one of FORMS. A primitive
without a row ends the proof that c cancels."""
FORMS = frozenset({"add", "subtract", "negative", "exp", "log", "multiply", "divide", "sum",
                   "extreme",  # a max or min reduction
                   "move"})  # entries of argument 0 moved around or picked (a reshape, an index)

STRUCTURES: dict[_Primitive, Any] = {}
"""Which elements of its arguments each element of the result depends on (engine/structure.py's
classes), for sparsity detection. Elementwise primitives (`Primitive.structure`), constants and
primitives with a zero derivative need no row; every other primitive has one (Dense() at least)."""

MATRIX_PRODUCTS: set[_Primitive] = set()
"""Products that contract an axis: they gather a few rows of a structured seed faster than they
multiply a dense one (api/evaluator picks its seeds by this)."""

HEAVIER_IN_REVERSE: set[_Primitive] = set()
"""Primitives whose reverse rule makes more passes over a block than their forward rule (a real FFT's
transpose conjugates and weights the spectrum besides transforming it): a square Jacobian too large
for the caches, of a recording that holds one, is swept forward by mode="auto" (api/evaluator)."""

COPIES_SUM: set[_Primitive] = set()
"""Primitives that a traced sweep records where the usual sweep adds in place into a sum it owns
(Primitive.vjp_into, for vjp_add): each gives a copy of its argument 0 with a few entries added. A
compiled sweep of many of them copies the whole sum per contribution (replay/compiled_sweeps)."""

WRITES_ARGUMENT: set[_Primitive] = set()
"""Primitives whose implementation writes its result into argument 0's memory and returns that array:
the steps of a compiled sweep that add into a sum the program owns (engine/sweeps.py's ADD_INTO), as
the usual sweep adds in place. A traced sweep counts no new memory for them (replay/compiled_sweeps)."""


SELF_PAIRED: set[_Primitive] = set()
"""Two-argument primitives whose reverse rules for arguments 0 and 1 send back one cotangent where both
arguments are one value (x * x: g * x each, made from the same factor): the plain reverse sweep applies
argument 0's rule and sends its cotangent back for both (engine/sweeps.py)."""


FINITE_ON_FINITE: set[_Primitive] = set()
"""One-argument primitives whose result is finite wherever their real argument is (sin, cos, tanh, -x, |x|):
a compiled sweep's check that such a result is finite is implied by the check of its argument
(replay/guards.implied_finite), and left out."""


REAL_COTANGENTS: set[_Primitive] = set()
"""Primitives of a complex result whose reverse rules send a real argument a real cotangent already
(rfftn's transpose is an irfftn): the sweeps use the rule as it is, without tape.real_cotangent's
wrapper, a call more for every cotangent sent back."""


MAY_FAIL: set[_Primitive] = set()
"""Primitives whose implementation raises at some values of arguments of the recorded shapes and dtypes (a
singular matrix's inverse, a decomposition of a matrix holding NaN): a replay runs them even where nothing
reads their value, so that it fails where f would, and f is recorded afresh and raises as it does
(replay/partial_forward). Every np.linalg and scipy.linalg primitive has a row, or does not raise at a
singular, NaN or infinite matrix (tests/test_partial_forward.py)."""


CONDITION_ARGUMENTS: dict[_Primitive, int] = {}
"""The position of the argument that is a condition (np.where's 0): a report names it "its condition"
(check/branch_changes)."""

EXPRESSION_FUNCTIONS: dict[str, Callable] = {}
"""The NumPy functions a -e expression may call, by the name written after np. ("linalg.norm")."""


def allow_in_expressions(*names: str) -> None:
    """Let -e expressions call these NumPy functions (dotted names below np., as "linalg.norm")."""
    for name in names:
        function: Any = np
        for part in name.split("."):
            function = getattr(function, part)
        EXPRESSION_FUNCTIONS[name] = function

SECOND_ORDER_FORMS: dict[_Primitive, _Primitive] = {}
"""prim -> the primitive a gradient that is differentiated again records in its place (second_order.py):
where a derivative of first order is a convention at a kink, the one a smooth composition needs for
its second derivative to come out right (abs: one-sided at 0, in rules/elementwise.py)."""
CREATE_GRAPH_FORMS: dict[_Primitive, _Primitive] = {}
"""prim -> the primitive a create_graph derivative that an enclosing level differentiates records in its
place (second_order.py): the primitive's own first derivatives everywhere (the values the user gets),
with a NaN, reported, where a second derivative through its convention at a kink has no value (hypot
and norm: SECOND_ORDER_FORMS's; abs: its slope's derivative at 0, in rules/elementwise.py)."""

LIMIT_WORDS: dict[_Primitive, str] = {}
"""What a non-finite report says where a zero value met the primitive's non-finite derivative (limits.py),
for a primitive whose name alone does not say it well (the gradient x / norm(x) of hypot and norm)."""

CONVENTION_WORDS: dict[_Primitive, str] = {}
"""What a non-finite report says where the primitive's NaN derivative marks a derivative that depends on
a convention at a kink (abs's slope at 0 in a create_graph gradient: rules/elementwise.py)."""
