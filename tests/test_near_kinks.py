"""Derivative checks at points near a kink, not at it: the finite-difference step crosses the kink."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

from jaccli.check.verification import check_derivative
from jaccli.engine.registry import PRIMITIVES
from jaccli.engine.rules import scipy_special
from jaccli.engine.facts import KINK_CROSSINGS
from tests.helpers import break_sin_away_from_zero

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NEAR = 1e-9  # far below the step eps**(1/3) ~ 6e-6: every step from x crosses the kink
QUARTER = np.pi / 4 + NEAR  # sin and cos tie at pi/4


def test_every_primitive_with_a_kink_says_when_a_step_crosses_it():
    scipy_special.install()
    assert {p for p in PRIMITIVES.values() if p.kink is not None} <= {p for p, crossed in KINK_CROSSINGS.items()
                                                                     if crossed is not None}


# Each op near its kink, its own lambda on its own line (the line the report names), the entries whose step
# crosses the kink, and the op that reports it. Before: every case failed with AD against meaningless
# finite differences (one side's slope against the mean of both), and no word of the kink.
CASES = [
    (lambda x: np.maximum(np.sin(x), np.cos(x)), [QUARTER, 0.3], {(0, 0): "np.maximum"}),
    (lambda x: np.abs(x) * 3.0, [NEAR, -2 * NEAR, 1.0], {(0, 0): "np.absolute", (1, 1): "np.absolute"}),
    (lambda x: np.fabs(x), [NEAR, 1.0], {(0, 0): "np.fabs"}),
    (lambda x: np.clip(x, -1.0, 1.0) * 2.0, [1 - NEAR, 0.3, -1 + NEAR], {(0, 0): "np.minimum", (2, 2): "np.maximum"}),
    (lambda x: np.minimum(x, 2.0 - x), [1 + NEAR, 0.0], {(0, 0): "np.minimum"}),
    (lambda x: np.fmax(x, 0.5), [0.5 + NEAR, 0.2], {(0, 0): "np.fmax"}),
    (lambda x: np.fmin(x, 0.5), [0.5 - NEAR, 0.2], {(0, 0): "np.fmin"}),
    (lambda x: np.hypot(x, 0.0), [NEAR, 2.0], {(0, 0): "np.hypot"}),
    (lambda x: np.max(x, keepdims=True), [1.0, 1.0 + NEAR, 0.5], {(0, 0): "np.max", (0, 1): "np.max"}),
    (lambda x: np.min(x, keepdims=True), [1.0, 1.0 - NEAR, 1.5], {(0, 0): "np.min", (0, 1): "np.min"}),
    (lambda x: sp.i0e(x), [NEAR, 1.0], {(0, 0): "scipy.special.i0e"}),
]


@pytest.mark.parametrize("f, x, crossing", CASES, ids=["maximum-sin-cos", "abs", "fabs", "clip-bounds", "minimum",
                                                       "fmax", "fmin", "hypot", "max", "min", "i0e"])
def test_a_step_across_a_kink_near_x_is_convention_dependent_and_named(f, x, crossing):
    rep = check_derivative(f, np.array(x))
    assert rep.passed, rep.message
    assert {(e["row"], e["col"]): e["reason"].split(" at ")[0] for e in rep.convention_dependent} == crossing
    for e in rep.convention_dependent:
        assert e["reason"].startswith(f"{e['reason'].split(' at ')[0]} at {__file__}:{f.__code__.co_firstlineno}: "
                                      "the step crosses a kink near x (not at x)")
        assert e["reason"].endswith("check at a point farther from the kink")
    assert rep.kinks == []  # no op is evaluated at a kink: that list stays the ops exactly at one


def test_a_hessian_entry_across_a_kink_near_x_needs_both_steps_to_cross_it():
    rep = check_derivative(lambda x: np.sum(np.abs(x)) + x[1] ** 2 * x[2], np.array([NEAR, 1.5, -2.0]), order=2)
    assert rep.passed and rep.gradient["passed"], rep.message
    assert [(e["row"], e["col"]) for e in rep.convention_dependent] == [(0, 0)]
    assert "np.absolute at " in rep.convention_dependent[0]["reason"]


def sin_cos_tie_and_sin(x):
    return np.stack([np.maximum(np.sin(x[0]), np.cos(x[0])), np.sin(x[0]) * 2.0, np.sin(x[1])])


def test_a_kink_near_x_does_not_excuse_a_wrong_derivative_in_a_row_or_column_that_does_not_cross_it(monkeypatch):
    # The step along x[0] crosses the tie of np.maximum (row 0 only); rows 1 and 2 see a wrong np.sin rule.
    # Rows 1 and 2 stay failures: row 1 shares the column that crosses the kink, but not the kink.
    x = np.array([QUARTER, 1.2])
    assert check_derivative(sin_cos_tie_and_sin, x).passed
    break_sin_away_from_zero(monkeypatch)
    rep = check_derivative(sin_cos_tie_and_sin, x)
    assert not rep.passed and rep.blocks[0]["mismatches"] == 2
    assert {(w["row"], w["col"]) for w in rep.worst} == {(1, 0), (2, 1)}
    assert [(e["row"], e["col"]) for e in rep.convention_dependent] == [(0, 0)]


def sin_plus_floor_of_half(x):
    return np.sin(x) + np.maximum(x, 0.5)


# Sample 0 away from the kink; in sample 1, elements 0 and 2 are within a step of np.maximum's tie.
NEAR_IN_SAMPLE_1 = np.array([[1.0, 2.0, 3.0], [0.5 + NEAR, 0.2, 0.5 - NEAR]])


@pytest.mark.parametrize("order", [1, 2])
def test_batched_kink_near_x_is_excused_in_its_own_sample(order):
    f = sin_plus_floor_of_half if order == 1 else (lambda x: np.sum(sin_plus_floor_of_half(x), axis=1))
    rep = check_derivative(f, NEAR_IN_SAMPLE_1, batch_axis=0, order=order)
    assert rep.passed, rep.message
    assert {(e["sample"], e["row"], e["col"]) for e in rep.convention_dependent} == {(1, 0, 0), (1, 2, 2)}


def test_batched_kink_near_x_in_one_sample_does_not_excuse_a_wrong_derivative_in_another(monkeypatch):
    break_sin_away_from_zero(monkeypatch)
    rep = check_derivative(lambda x: sin_plus_floor_of_half(x), NEAR_IN_SAMPLE_1, batch_axis=0)
    # the wrong rule: sample 0's diagonal, and sample 1's element 1, which is not near the kink
    assert not rep.passed and rep.blocks[0]["mismatches"] == 4
    assert {(w["sample"], w["row"], w["col"]) for w in rep.worst} <= {(0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 1, 1)}
    assert {(e["sample"], e["row"], e["col"]) for e in rep.convention_dependent} == {(1, 0, 0), (1, 2, 2)}


def test_hypot_leaving_an_axis_is_no_kink_and_excuses_no_wrong_derivative(monkeypatch):
    # hypot's kink is the point (0, 0): the step along x[1] from (1, 0) passes it at a distance 1.
    break_sin_away_from_zero(monkeypatch)
    rep = check_derivative(lambda x: np.hypot(x[0], x[1]) + np.sin(x[1] + 1.0), np.array([1.0, 0.0]))
    assert not rep.passed and rep.blocks[0]["mismatches"] == 1 and rep.convention_dependent_count == 0
