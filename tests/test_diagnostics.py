"""Tests for diagnostics: structural zeros, non-finite reports and provenance, and kinks."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

import jaccli
from jaccli.check.diagnostics import (NonfiniteMonitor, disconnected_pairs, find_kinks, first_nonfinite_primal,
    nonfinite_report, recording_of, structural_zero_message, structural_zero_warnings, trace_nonfinite)
from jaccli.engine import sweeps, user_sites
from jaccli.engine.recording import Recording
from jaccli.errors import UnsupportedOperationError
from jaccli.io.user_functions import load_function

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture
def user_file(tmp_path):
    """Write a user's f.py and load its function f; returns (f, path)."""
    def make(body: str):
        path = tmp_path / "f.py"
        path.write_text("import numpy as np\n\n\n" + textwrap.dedent(body))
        return load_function(str(path)).func, str(path)
    return make


# ---------------------------------------------------------------- structural zeros

OFFSET = np.array([1.0, 2.0])


def uses_global(x, y):
    return x * 2.0 + OFFSET  # y was meant instead of OFFSET


def test_disconnected_pairs_finds_inputs_without_a_path():
    rec = Recording(uses_global, (np.ones(2), np.ones(2)), (0, 1))
    assert disconnected_pairs(rec) == [(0, 1)]


def test_constant_output_is_disconnected_from_every_input():
    rec = Recording(lambda x, y: (x * y, OFFSET), (np.ones(2), np.ones(2)), (0, 1))
    assert disconnected_pairs(rec) == [(1, 0), (1, 1)]


def test_structural_zero_message_text():
    assert structural_zero_message("f", "x") == (
        "df_dx is structurally zero: output f does not depend on input x (no path in the recorded computation); "
        "a common cause is a function that uses a global variable instead of its argument")
    assert structural_zero_message("f0", "y", "J[0][1]").startswith("J[0][1] is structurally zero: output f0 ")


def test_structural_zero_warnings_name_outputs_and_inputs():
    rec = Recording(uses_global, (np.ones(2), np.ones(2)), (0, 1))
    (msg,) = structural_zero_warnings(rec, in_names=["x", "y"])
    assert msg.startswith("df_dy is structurally zero: output f does not depend on input y")
    assert structural_zero_warnings(Recording(lambda x: x * 2.0, (np.ones(2),), (0,))) == []


def test_an_input_used_only_through_boolean_or_integer_results_is_named(user_file):
    f, path = user_file("""\
        def f(x, y):
            mask = x > 0.0
            return np.where(mask, y, 2.0 * y) + x.astype(int)
        """)
    J = jaccli.jacobian(f, (np.array([1.0, -1.0]), np.array([3.0, 4.0])))
    assert not J[0].connected and J[0].cut_by == ("np.greater", (path, 5))  # the first cut of x
    assert J[1].connected and J[1].cut_by is None
    rec = Recording(f, (np.ones(2), np.ones(2)), (0, 1))
    (msg,) = structural_zero_warnings(rec, in_names=["x", "y"])
    assert msg.endswith(f"; x is used only through np.greater at {path}:5, whose integer or boolean result "
                        "carries no derivative")
    # An input that is not used at all keeps the usual hint.
    assert jaccli.jacobian(uses_global, (np.ones(2), np.ones(2)))[1].cut_by is None
    # A replay of a record_once function knows the same cut.
    once = jaccli.record_once(f)
    for x in ([1.2, -1.5], [1.7, -1.2]):  # the same mask and integer parts: the guards hold
        assert jaccli.jacobian(once, (np.array(x), np.ones(2)))[0].cut_by == ("np.greater", (path, 5))
    assert once.replays == 1


# ---------------------------------------------------------------- non-finite counts


def test_nonfinite_report_counts_and_lists_first_indices():
    block = np.zeros((3, 4))
    block[0, 1] = np.nan
    block[2, 0] = np.inf
    block[2, 3] = -np.inf
    report = nonfinite_report({"df/dx": block, "df/dy": np.ones(2)}, max_indices=2)
    assert report == [{"block": "df/dx", "shape": [3, 4], "nan": 1, "posinf": 1, "neginf": 1,
                       "first": [[0, 1], [2, 0]]}]
    json.dumps(report, allow_nan=False)


def test_nonfinite_report_is_empty_for_finite_blocks():
    assert nonfinite_report({"J": np.eye(2), "ints": np.arange(3)}) == []


def test_nonfinite_report_is_not_fooled_by_a_sum_that_overflows_or_cancels():
    # The report first sums each block (one pass, no copy); a sum says "maybe" only, never "finite".
    big = np.full((3, 2), 1e308)
    assert nonfinite_report({"J": big}) == []
    cancelling = np.array([np.inf, -np.inf, 1.0])
    assert nonfinite_report({"J": cancelling})[0]["posinf"] == 1


# ---------------------------------------------------------------- provenance


def test_nan_from_log_of_a_negative_number_is_traced_to_the_forward_evaluation(user_file):
    f, path = user_file("""\
        def f(x):
            y = x * 2.0
            return np.log(y) + 1.0
        """)
    J = jaccli.jacobian(f, np.array([1.0, -1.0]))
    prov = trace_nonfinite(lambda: np.asarray(J), J)
    assert (prov.op, prov.sweep, prov.file, prov.line, prov.values) == ("np.log", "forward evaluation", path, 6, "nan")
    assert prov.element == [1] and not prov.inactive_where
    assert prov.message == f"np.log produced nan in the forward evaluation at {path}:6 (element (1,))"


@pytest.mark.parametrize("body, line", [
    ("def f(x):\n    return np.sqrt(x)\n", 5),
    ("def f(x):\n    s = np.sqrt(x ** 2)\n    return np.sum(s)\n", 5),
], ids=["sqrt", "sum-sqrt-square"])
def test_inf_from_sqrt_at_zero_is_traced_to_the_reverse_sweep(user_file, body, line):
    f, path = user_file(body)
    J = jaccli.jacobian(f, np.array([0.0, 1.0]), mode="reverse")
    prov = trace_nonfinite(lambda: np.asarray(J), J)
    assert (prov.op, prov.sweep, prov.file, prov.line, prov.values) == ("np.sqrt", "reverse sweep", path, line, "inf")
    assert prov.element == [0]
    assert "sqrt'(0) = inf" in prov.message


def test_inf_from_sqrt_in_forward_mode_is_traced_to_the_forward_sweep(user_file):
    f, path = user_file("def f(x):\n    return np.sqrt(x)\n")
    J = jaccli.jacobian(f, np.array([0.0, 1.0]), mode="forward")
    prov = trace_nonfinite(lambda: np.asarray(J), J)
    assert (prov.op, prov.sweep, prov.line) == ("np.sqrt", "forward sweep", 5)


def test_nan_in_the_branch_where_does_not_take_is_masked_and_not_reported(user_file):
    f, _ = user_file("def f(x):\n    return np.where(x > 0, np.log(x), x)\n")
    J = jaccli.jacobian(f, np.array([-1.0, 2.0]))
    result = trace_nonfinite(lambda: np.asarray(J), J)
    assert result is None
    np.testing.assert_array_equal(np.asarray(J), [[1.0, 0.0], [0.0, 0.5]])


def test_where_branch_whose_own_derivative_is_nan_leaks_nothing_in_either_mode(user_file):
    # sqrt'(-1) is NaN in the branch np.where did not take: the masked cotangent is exactly zero
    # and the elementwise rules keep 0 * NaN at 0, so the result is finite and nothing is reported.
    f, path = user_file("def f(x):\n    return np.where(x > 0, np.sqrt(x), 0.0)\n")
    x = np.array([-1.0, 4.0])
    for mode in ("reverse", "forward"):
        J = jaccli.jacobian(f, x, mode=mode)
        assert trace_nonfinite(lambda: np.asarray(J), J) is None
        np.testing.assert_array_equal(np.asarray(J), [[0.0, 0.0], [0.0, 0.25]])


@pytest.mark.parametrize("taken, not_taken, second, third", [
    (lambda x: x ** 2, lambda x: x ** 1.5, 2.0, 0.0),        # dfactor of 1.5 x**0.5 is inf at 0
    (lambda x: x ** 3, lambda x: x ** 2.5, 0.0, 6.0),        # inf at third order
    (lambda x: x ** 2, lambda x: np.float_power(x, 1.25), 2.0, 0.0),
    (lambda x: x ** 2, lambda x: x * np.sqrt(x), 2.0, 0.0),
], ids=["power-1.5", "power-2.5", "float_power-1.25", "x-sqrt-x"])
def test_where_branch_not_taken_leaks_nothing_into_higher_derivatives_in_any_mode(taken, not_taken, second, third):
    # At x = 0, np.where takes `taken`; the branch not taken has an infinite derivative of its
    # rule's factor there. Forward over reverse multiplies the masked (zero) cotangent by it.
    f = lambda x: np.sum(np.where(x > 0, not_taken(x), taken(x)))  # noqa: E731
    x = np.array([0.0, 4.0])
    h_at_4 = np.asarray(jaccli.hessian(lambda y: np.sum(not_taken(y)), x))[1, 1]
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x, mode=mode)), [[second, 0.0], [0.0, h_at_4]])
    np.testing.assert_allclose(jaccli.hvp(f, x, np.array([1.0, 0.0]))[1], [second, 0.0])
    for mode in ("forward", "reverse"):
        t = np.asarray(jaccli.jacobian(lambda y: jaccli.hessian(f, y, create_graph=True), x, mode=mode))
        assert t[0, 0, 0] == third and np.isfinite(t).all()


def test_a_product_with_a_zero_value_factor_and_an_infinite_tangent_is_nan_in_forward_mode_as_in_reverse():
    # d/dx (x * sqrt(x)) at 0 is 0 only as a limit: the chain rule meets x = 0 (a value, not a structural
    # zero) times sqrt'(0) = inf, in reverse mode as a zero cotangent, in forward mode as a zero factor.
    # Both are NaN (issue 43: never a 0 that the rules cannot justify); entries no seed reaches stay 0.
    x = np.array([0.0, 4.0])
    for mode in ("forward", "reverse"):
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(np.asarray(jaccli.jacobian(lambda y: y * np.sqrt(y), x, mode=mode)),
                                          [[np.nan, 0.0], [0.0, 3.0]])


@pytest.mark.parametrize("f", [
    lambda y: np.maximum(np.sqrt(y), 1.0),
    lambda y: np.minimum(np.sqrt(y), -1.0),
    lambda y: np.clip(np.sqrt(y), 1.0, 3.0),
], ids=["maximum", "minimum", "clip"])
def test_a_branch_not_taken_by_max_min_or_clip_leaks_nothing_in_forward_mode(f):
    # sqrt'(0) = inf meets the zero factor of the side maximum did not take: the forward rule of
    # every elementwise function (not only multiply's) keeps that product at 0, as reverse mode does.
    x = np.array([0.0, 4.0])
    with np.errstate(divide="ignore"):
        forward = np.asarray(jaccli.jacobian(f, x, mode="forward"))
        reverse = np.asarray(jaccli.jacobian(f, x, mode="reverse"))
    np.testing.assert_array_equal(forward, reverse)
    assert forward[0, 0] == 0.0


def test_nonfinite_input_is_reported_as_the_input():
    J = jaccli.jacobian(lambda x, y: x * y, (np.array([1.0, np.nan]), np.ones(2)))
    prov = trace_nonfinite(lambda: [np.asarray(b) for b in J], J)
    assert (prov.op, prov.sweep, prov.values) == ("input 0", "input", "nan")
    assert prov.message == "input 0 already holds nan"


def test_first_nonfinite_primal_is_none_for_finite_outputs():
    rec = Recording(lambda x: np.where(x > 0, np.log(x), 0.0), (np.array([-1.0, 1.0]),), (0,))
    assert first_nonfinite_primal(rec) is None


def test_monitor_is_removed_afterwards_even_on_errors():
    with pytest.raises(ZeroDivisionError):
        with NonfiniteMonitor():
            assert sweeps.MONITOR.v is not None
            raise ZeroDivisionError
    assert sweeps.MONITOR.v is None


def test_provenance_to_dict_is_strict_json():
    J = jaccli.jacobian(np.sqrt, np.array([0.0]))
    d = trace_nonfinite(lambda: np.asarray(J), J).to_dict()
    assert set(d) == {"op", "sweep", "file", "line", "values", "element", "inactive_where", "notes", "message"}
    json.dumps(d, allow_nan=False)


def test_recording_of_lazy_objects():
    J = jaccli.jacobian(lambda x, y: x * y, (np.ones(2), np.ones(2)))
    assert isinstance(recording_of(J), Recording) and recording_of(J[0].matrix) is recording_of(J[0])
    assert recording_of(np.ones(2)) is None


# ---------------------------------------------------------------- kinks


def kinked(x):
    a = np.abs(x)
    return np.maximum(a, 1.0)


def test_find_kinks_lists_ops_at_their_kinks_with_sites():
    rec = Recording(kinked, (np.array([0.0, 1.0, -3.0, 0.0]),), (0,))
    kinks = find_kinks(rec)
    assert [(k.op, k.count) for k in kinks] == [("np.absolute", 2), ("np.maximum", 1)]
    assert kinks[0].file == __file__ and kinks[1].line == kinks[0].line + 1
    assert kinks[0].mask.tolist() == [True, False, False, True]
    assert kinks[0].to_dict()["notes"] == "abs'(0) = 0 (the subgradient of least norm); of complex values: hypot(real, imag)"


def test_no_kinks_away_from_them():
    assert find_kinks(Recording(kinked, (np.array([0.5, 2.0, -3.0]),), (0,))) == []


def test_a_tie_in_a_shift_that_cancels_is_no_kink_but_the_same_max_elsewhere_is():
    # f is smooth at logsumexp's tie, and no derivative goes through the max.
    def logsumexp(z):
        c = np.max(z)
        return c + np.log(np.sum(np.exp(z - c))) - z[1]

    def largest(z):
        c = np.max(z)
        return c + np.sum(np.exp(z - c))  # c does not cancel: its tie is a convention

    z = np.array([1.0, 2.0, 2.0, -1.0])
    assert find_kinks(Recording(logsumexp, (z,), (0,))) == []
    assert [(k.op, k.count) for k in find_kinks(Recording(largest, (z,), (0,)))] == [("np.max", 1)]


def test_every_operation_a_hessian_records_belongs_to_a_line_of_the_users_function(user_file):
    # The gradient's own operations (recorded by the rules, their makers, and the sums of
    # cotangents) are what a NaN report or an error points at: each must name the user's line.
    f, path = user_file("""\
        def f(x):
            y = x ** 3
            z = np.sin(y) * x
            return np.sum(z) + x[0] * x[1]
        """)
    H = jaccli.hessian(f, np.array([0.3, 0.7, 1.1]))
    nodes = [n for n in recording_of(H).trace.nodes if n.parents]
    assert nodes
    assert {n.site for n in nodes} <= {(path, 4), (path, 5), (path, 6), (path, 7)}  # 4: def f, the reshapes


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_sweep_that_fails_leaves_no_site_behind(mode):
    # A sweep points later recordings at its nodes' lines while it runs; an error inside it
    # (scipy.special.iv has no derivative in its order) must not leave that attribution set.
    import scipy.special as sp

    with pytest.raises(UnsupportedOperationError):
        np.asarray(jaccli.jacobian(lambda x: sp.iv(x, 3.0), np.array([1.5, 2.0]), mode=mode))
    assert user_sites.RULE_SITE.v is None


def test_sweep_bound_bounds_structured_entries_and_refuses_what_it_cannot():
    from types import SimpleNamespace

    from jaccli.check.diagnostics import SweepBound
    from jaccli.engine import SparseBlock

    bound = SweepBound()
    idx = np.array([[0, 1], [1, 1]])
    bound([SparseBlock((2, 3), idx, np.array([[1.0, -2.0], [0.5, 0.5]])), None])
    assert bound.bound == 4.0 and bound.proves_finite(SimpleNamespace(sweeps=1), np.float64)
    assert not bound.proves_finite(SimpleNamespace(sweeps=2), np.float64)  # a sweep it did not see
    assert not bound.proves_finite(SimpleNamespace(sweeps=1), np.int64)
    low = SweepBound()
    low([SparseBlock((2, 3), idx[:, :0], np.zeros((2, 0)), np.array([[2.0], [-3.0]]), np.array([[1.0, 4.0, 0.0]]))])
    assert low.bound == 12.0  # rank 1 * max|u| * max|v|
    # Entries that are finite, but whose sum in one cell need not be: no proof.
    huge = SweepBound()
    huge([SparseBlock((1, 3), np.array([[2, 2]]), np.array([[1e308, 1e308]]))])
    assert not huge.proves_finite(SimpleNamespace(sweeps=1), np.float64)
    for bad in (np.nan, np.inf, -np.inf):
        dense = SweepBound()
        dense([np.array([[1.0, bad, 2.0]])])
        assert not dense.proves_finite(SimpleNamespace(sweeps=1), np.float64)
    single = SweepBound()
    single([np.array([2e38])])
    assert single.proves_finite(SimpleNamespace(sweeps=1), np.float64)
    assert not single.proves_finite(SimpleNamespace(sweeps=1), np.float32)  # 2 * 2e38 > float32's 3.4e38
