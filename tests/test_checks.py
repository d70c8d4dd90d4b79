"""Tests for derivative checks: array comparison, finite differences, and check_derivative verdicts."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

import jaccli
from jaccli.check.verification import DEFAULT_TOLERANCES, check_derivative, compare_arrays, default_tolerances
from jaccli.engine.registry import PRIMITIVES
from jaccli.engine.tracer import primal
from jaccli.errors import ConstantUnderOuterWarning, UsageError
from jaccli.check.finite_differences import finite_difference_jacobian
from jaccli.io.user_functions import bind_inputs, load_function
from tests.helpers import break_sin_away_from_zero

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def line_of(func, text: str) -> int:
    """Line number of the first source line of `func` containing `text`."""
    lines, start = inspect.getsourcelines(func)
    return start + next(k for k, line in enumerate(lines) if text in line)


# ---------------------------------------------------------------- compare_arrays


def test_compare_identical_arrays_pass_with_zero_error():
    a = np.arange(6.0).reshape(2, 3)
    rep = compare_arrays(a, a.copy())
    assert rep.passed and rep.max_abs_err == 0.0 and rep.max_rel_err == 0.0 and rep.worst == []
    assert rep.message == "all 6 entries agree within rtol=1e-05, atol=1e-07; max abs error 0, max rel error 0"


def test_compare_reports_worst_entry_in_block_shape():
    ref = np.ones((2, 3, 4))
    got = ref.copy()
    got[1, 2, 3] = 1.5
    got[0, 1, 0] = 1.0 + 1e-9
    rep = compare_arrays(got, ref, rtol=1e-6, atol=0.0)
    assert not rep.passed and rep.mismatches == 1
    assert rep.worst[0]["index"] == [1, 2, 3]
    assert rep.worst[0]["abs_err"] == pytest.approx(0.5) and rep.worst[0]["rel_err"] == pytest.approx(0.5)
    assert rep.worst[1]["index"] == [0, 1, 0]
    assert rep.max_abs_err == pytest.approx(0.5)
    assert "1 of 24 entries differ" in rep.message and "worst at (1, 2, 3): 1.5 vs 1.0" in rep.message


def test_compare_nan_in_one_array_is_a_mismatch_whatever_the_tolerance():
    rep = compare_arrays(np.array([1.0, np.nan]), np.array([1.0, 2.0]), rtol=1e9, atol=1e9)
    assert not rep.passed and rep.nonfinite_mismatches == 1
    assert rep.worst == [{"index": [1], "computed": "nan", "reference": 2.0, "abs_err": None, "rel_err": None,
                          "allowed": pytest.approx(1e9 + 2e9)}]
    assert rep.max_abs_err == 0.0  # taken over entries finite in both


def test_compare_matching_nan_and_inf_are_equal_but_opposite_infs_are_not():
    assert compare_arrays(np.array([np.nan, np.inf]), np.array([np.nan, np.inf])).passed
    rep = compare_arrays(np.array([np.inf]), np.array([-np.inf]))
    assert not rep.passed and rep.worst[0]["computed"] == "inf" and rep.worst[0]["reference"] == "-inf"


def test_compare_shape_mismatch_is_a_usage_error():
    with pytest.raises(UsageError):
        compare_arrays(np.zeros((2, 3)), np.zeros((3, 2)))


def test_compare_excluded_entries_do_not_count():
    rep = compare_arrays(np.array([1.0, 5.0]), np.array([1.0, 2.0]), exclude=np.array([False, True]))
    assert rep.passed and rep.excluded == 1 and rep.max_abs_err == 0.0
    assert rep.mismatch.tolist() == [False, True]


def test_compare_error_estimate_widens_the_allowance():
    assert not compare_arrays(np.array([1.001]), np.array([1.0])).passed
    assert compare_arrays(np.array([1.001]), np.array([1.0]), err=np.array([0.01])).passed


def test_compare_report_is_strict_json():
    rep = compare_arrays(np.array([np.inf, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]))
    d = json.loads(json.dumps(rep.to_dict(), allow_nan=False))
    assert d["mismatches"] == 2 and d["nonfinite_mismatches"] == 1 and d["shape"] == [3]
    assert d["worst"][1] == {"index": [2], "computed": 1.0, "reference": 0.0, "abs_err": 1.0, "rel_err": None,
                             "allowed": 1e-7}


# ---------------------------------------------------------------- finite differences


class Counting:
    """Wraps f, counting calls and remembering the dtypes it was called with."""

    def __init__(self, f):
        self.f, self.calls, self.dtypes = f, 0, set()

    def __call__(self, x):
        self.calls += 1
        self.dtypes.add(np.asarray(x).dtype)
        return self.f(x)


def test_fd_matches_closed_form_of_a_steep_function():
    x = np.array([0.3, -0.2, 0.1])
    fd = finite_difference_jacobian(lambda x: np.exp(20.0 * x) * x[::-1], x)
    exact = np.diag(20.0 * np.exp(20.0 * x) * x[::-1]) + np.exp(20.0 * x)[:, None] * np.eye(3)[::-1]
    assert_allclose(fd, exact, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("richardson, calls", [(True, 4), (False, 2)])
def test_fd_evaluates_f_only_for_requested_columns(richardson, calls):
    f = Counting(lambda x: np.sin(x) * x.sum())
    x = np.linspace(0.1, 0.9, 5)
    fd = finite_difference_jacobian(f, x, rows=[4, 0], cols=[2], richardson=richardson)
    assert f.calls == calls
    exact = np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]
    assert fd.shape == (2, 1)
    assert_allclose(fd, exact[[4, 0]][:, [2]], rtol=1e-8)


def test_fd_runs_in_float64_for_float32_inputs():
    f = Counting(lambda x: x ** 2)
    fd = finite_difference_jacobian(f, np.array([1.0, 2.0], dtype=np.float32))
    assert f.dtypes == {np.dtype(np.float64)} and fd.dtype == np.float64
    assert_allclose(fd, np.diag([2.0, 4.0]), rtol=1e-9)


def test_fd_hessian_differentiates_the_ad_gradient():
    x = np.array([0.5, -1.0, 2.0])
    fd = finite_difference_jacobian(lambda x: np.sum(x ** 3) * x[0], x, order=2)
    exact = np.diag(6.0 * x * x[0])
    exact[0, :] += 3.0 * x ** 2
    exact[:, 0] += 3.0 * x ** 2
    assert_allclose(fd, exact, rtol=1e-9, atol=1e-9)


def test_fd_tuple_outputs_and_second_input():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    prod, total = finite_difference_jacobian(lambda x, y: (x * y, np.sum(x) + y), (x, y), 1, cols=[1])
    assert_allclose(prod, [[0.0], [2.0]], atol=1e-9)
    assert_allclose(total, [[0.0], [1.0]], atol=1e-9)


def test_fd_batched_columns_perturb_every_sample_at_once():
    f = Counting(lambda x: x ** 2 * x[:, :1])
    x = np.arange(1.0, 7.0).reshape(3, 2)
    fd = finite_difference_jacobian(f, x, batch_axis=0)
    assert fd.shape == (3, 2, 2) and f.calls == 8
    expected = np.stack([[[3 * a * a, 0.0], [b * b, 2 * a * b]] for a, b in x])
    assert_allclose(fd, expected, rtol=1e-9)


# ---------------------------------------------------------------- check_derivative on the samples

SAMPLE_CASES = [
    ("robot_arm.py", ["robot_arm_q.npy"], None, 1),
    ("mlp.py", ["mlp_x.npy"], None, 1),
    ("rosenbrock.py", ["rosenbrock_x.npy"], None, 2),
    ("kinetics.py", ["kinetics_inputs.npz"], None, 1),
    ("heat_pde.py", ["heat_pde_u.npy"], None, 1),
    ("logistic.py", ["logistic_w.npy", "logistic_X.csv", "logistic_y.txt"], "w", 2),
    ("softmax_xent.py", ["softmax_xent_z.npy", "softmax_xent_p.csv"], "z", 2),
]


@pytest.mark.parametrize("name, sources, wrt, order", SAMPLE_CASES, ids=[c[0] for c in SAMPLE_CASES])
def test_samples_pass_the_check(name, sources, wrt, order):
    lf = load_function(str(SAMPLES / name))
    args = tuple(bind_inputs(lf, [str(SAMPLES / s) for s in sources]).values())
    for o in range(1, order + 1):
        rep = check_derivative(lf.func, args, wrt=wrt, order=o)
        assert rep.passed, rep.message
        assert rep.modes["passed"] and rep.max_rel_err < 1e-7 and rep.kinks == []
        assert rep.message.startswith("check passed: reverse mode, forward mode and finite differences agree")


def test_sample_with_two_inputs_checks_every_block():
    lf = load_function(str(SAMPLES / "kinetics.py"))
    args = tuple(bind_inputs(lf, [str(SAMPLES / "kinetics_inputs.npz")]).values())
    rep = check_derivative(lf.func, args)
    assert [b["name"] for b in rep.blocks] == ["df/dc", "df/dk"]
    assert all(b["shape"] == [3, 3] for b in rep.blocks)


def test_check_computes_only_the_requested_slice():
    lf = load_function(str(SAMPLES / "heat_pde.py"))
    u = np.load(SAMPLES / "heat_pde_u.npy")
    rep = check_derivative(lf.func, u, rows=[0, 1], cols=[0, 1, 2])
    assert rep.passed and rep.blocks[0]["shape"] == [2, 3]
    assert rep.fd["evaluations"] == 14  # 3 columns, 4 evaluations each, and 2 calls at u (does f repeat?)


# ---------------------------------------------------------------- broken rules fail


def three_outputs(x):
    return np.stack([x[0] * x[1], x[1] ** 2, np.sin(x[2])])


X3 = np.array([0.4, -0.7, 1.1])


def test_broken_reverse_rule_fails_and_points_at_the_entry(monkeypatch):
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * 2.0 * np.cos(x)))
    rep = check_derivative(three_outputs, X3)
    assert not rep.passed
    assert (rep.worst[0]["row"], rep.worst[0]["col"], rep.worst[0]["mode"]) == (2, 2, "reverse")
    assert rep.worst[0]["ad"] == pytest.approx(2 * np.cos(1.1)) and rep.worst[0]["fd"] == pytest.approx(np.cos(1.1))
    assert not rep.modes["passed"] and rep.modes["mismatches"] == 1
    assert (rep.modes["worst"][0]["row"], rep.modes["worst"][0]["col"]) == (2, 2)
    assert rep.blocks[0]["mismatches"] == 1
    assert rep.message.startswith("check FAILED: 1 of 9 entries differs from finite differences")
    assert "reverse and forward mode disagree on 1 entry " in rep.message
    assert "worst df/dx[2, 2]" in rep.message


def test_consistently_broken_rules_agree_across_modes_but_fail_against_fd(monkeypatch):
    wrong = lambda ans, x, **kw: (lambda g: g * 2.0 * np.cos(x))  # noqa: E731
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, wrong)
    monkeypatch.setitem(PRIMITIVES["np.sin"].jvps, 0, wrong)
    rep = check_derivative(three_outputs, X3)
    assert rep.modes["passed"] and not rep.passed
    assert (rep.worst[0]["row"], rep.worst[0]["col"], rep.worst[0]["mode"]) == (2, 2, "reverse")
    assert all(w["abs_err"] < 1e-8 for w in rep.worst[1:])  # the others differ by rounding only
    assert rep.max_abs_err == pytest.approx(np.cos(1.1), rel=1e-6)


def test_broken_second_order_rule_fails_the_hessian_check_only(monkeypatch):
    # Right first derivative, but cos(x) is taken as a constant: the rule of the rule is wrong.
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0,
                        lambda ans, x, **kw: (lambda g, c=np.cos(primal(x)): g * c))
    x = np.array([0.1, 1.5, 0.7])
    assert check_derivative(lambda x: np.sum(np.sin(x)), x).passed
    rep = check_derivative(lambda x: np.sum(np.sin(x)), x, order=2)
    assert not rep.passed and rep.modes["passed"] and rep.gradient["passed"]
    assert (rep.worst[0]["row"], rep.worst[0]["col"]) == (1, 1)
    assert rep.worst[0]["fd"] == pytest.approx(-np.sin(1.5), rel=1e-8)
    assert rep.fd["of"] == "the AD gradient"


# ---------------------------------------------------------------- kinks and jumps


def relu(x):
    return np.maximum(x, 0.0) * 2.0


def test_kink_is_listed_with_its_site_and_affected_entries():
    rep = check_derivative(relu, np.array([0.0, 0.5, -1.0]))
    assert rep.passed and rep.convention_dependent_count == 0  # central differences also give 1/2
    (kink,) = rep.kinks
    assert kink["op"] == "np.maximum" and kink["count"] == 1
    assert kink["file"] == __file__ and kink["line"] == line_of(relu, "np.maximum")
    assert kink["rows"] == {"df/dx": [0]} and kink["cols"] == {"df/dx": [0]}
    assert "ties split evenly" in kink["notes"]


def max_of(x):
    return np.max(x, keepdims=True)


def test_mismatch_at_a_tie_is_convention_dependent_not_a_failure():
    rep = check_derivative(max_of, np.zeros(3))
    assert rep.passed and rep.convention_dependent_count == 3
    entry = rep.convention_dependent[0]
    assert (entry["row"], entry["col"], entry["ad"], entry["fd"]) == (0, 0, pytest.approx(1 / 3), pytest.approx(0.5))
    assert entry["reason"].startswith(f"np.max at {__file__}:{line_of(max_of, 'np.max')}: evaluated at a kink")
    assert "3 convention-dependent entries" in rep.message


def abs_and_sin(x):
    return np.stack([np.abs(x[0]) * 3.0, np.sin(x[1])])


def test_kink_elsewhere_does_not_hide_a_broken_rule(monkeypatch):
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * 0.0))
    monkeypatch.setitem(PRIMITIVES["np.sin"].jvps, 0, lambda ans, x, **kw: (lambda t: t * 0.0))
    rep = check_derivative(abs_and_sin, np.array([0.0, 1.0]))
    assert not rep.passed
    assert (rep.worst[0]["row"], rep.worst[0]["col"]) == (1, 1)
    assert rep.kinks[0]["op"] == "np.absolute" and rep.kinks[0]["rows"] == {"df/dx": [0]}


@pytest.mark.parametrize("f, x, words", [
    (lambda x: np.where(x > 0, x, 0.0), np.array([0.0, 0.5]), "np.where at"),
    (lambda x: np.floor(x) * x, np.array([1.0, 0.5]), "a step function changes value"),
    # x1 at its step, with a traced x2: the step is still seen, though x2 is differentiated
    (lambda x: np.heaviside(x, x + 0.5), np.array([0.0, 0.5]), "a step function changes value"),
], ids=["where-condition", "floor-step", "heaviside-step"])
def test_steps_across_jumps_are_convention_dependent(f, x, words):
    rep = check_derivative(f, x)
    assert rep.passed and rep.convention_dependent_count == 1
    assert (rep.convention_dependent[0]["row"], rep.convention_dependent[0]["col"]) == (0, 0)
    assert words in rep.convention_dependent[0]["reason"]


SYMMETRIC_A = np.array([[2.0, 0.3, 0.1], [0.3, 3.0, 0.2], [0.1, 0.2, 4.0]])
UNSYMMETRIC_A = np.array([[2.0, 0.3, 0.1], [0.7, 3.0, 0.2], [0.5, 0.4, 4.0]])


@pytest.mark.parametrize("f", [np.linalg.eigvalsh, lambda a: np.linalg.eigh(a)[0],
                               lambda a: np.linalg.cholesky(a + 3 * np.eye(3))], ids=["eigvalsh", "eigh", "cholesky"])
@pytest.mark.parametrize("a", [SYMMETRIC_A, UNSYMMETRIC_A], ids=["symmetric", "unsymmetric"])
def test_a_step_along_one_off_diagonal_entry_of_eighs_matrix_agrees_with_numpy(f, a):
    # A step along A[0, 1] changes a triangle NumPy does not read: the derivative is that of NumPy's
    # function (0 there), so every entry is checked, none excused.
    rep = check_derivative(f, a)
    assert rep.passed and rep.convention_dependent_count == 0


def test_a_symmetrised_matrix_is_checked_in_full_and_a_wrong_eigh_rule_still_fails(monkeypatch):
    sym = check_derivative(lambda a: np.linalg.eigvalsh((a + a.T) / 2), UNSYMMETRIC_A)
    assert sym.passed and sym.convention_dependent_count == 0
    monkeypatch.setitem(PRIMITIVES["np.linalg.eigvalsh"].vjps, 0, lambda ans, a, **kw: (lambda g: 0.0 * g[..., None] * a))
    monkeypatch.setitem(PRIMITIVES["np.linalg.eigvalsh"].jvps, 0, lambda ans, a, **kw: (lambda t: 0.0 * t[..., 0]))
    assert not check_derivative(np.linalg.eigvalsh, UNSYMMETRIC_A).passed  # the diagonal still counts


def _cubes(z):
    return np.sum(z ** 3)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("closure", [False, True], ids=["argument", "closure"])
def test_a_derivative_f_takes_without_create_graph_fails_the_check_and_says_where(create_graph, closure):
    # Without create_graph the inner gradient is a constant to AD (torch's rule) but not to finite
    # differences; the argument it feeds changes within each step, which is no jump to excuse.
    if closure:
        def f(x):
            return x + jaccli.grad(lambda z: np.sum(z ** 2 * x ** 2), np.ones(3), create_graph=create_graph)
    else:
        def f(x):
            return x + jaccli.grad(_cubes, x, create_graph=create_graph)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantUnderOuterWarning)
        rep = check_derivative(f, np.array([1.0, 2.0, 3.0]))
    if create_graph:
        assert rep.passed and rep.nested_derivative is None and rep.convention_dependent_count == 0
        return
    line = f.__code__.co_firstlineno + 1
    assert not rep.passed and rep.blocks[0]["mismatches"] == 3 and rep.convention_dependent_count == 0
    assert rep.nested_derivative == f"{__file__}:{line}" == rep.to_dict()["nested_derivative"]
    assert f"takes a derivative at {__file__}:{line} without create_graph=True" in rep.message


def test_fd_error_at_a_kink_with_zero_cotangent_is_within_the_fd_error_estimate():
    # d/dx of max(x) * x is exactly 0 at x = 0, but differences across the tie are O(h).
    rep = check_derivative(lambda x: np.max(x, keepdims=True) * x, np.zeros(2))
    assert rep.passed and rep.convention_dependent_count == 0
    assert 1e-7 < rep.max_abs_err < 1e-5 and rep.kinks[0]["rows"] == {"df/dx": []}


def test_python_branch_inside_the_step_is_convention_dependent():
    def f(x):
        return x * 2.0 if x[0] > 0 else x * 3.0

    rep = check_derivative(f, np.array([0.0, 0.5]))
    assert rep.passed and rep.convention_dependent_count == 2
    assert {e["col"] for e in rep.convention_dependent} == {0}


def test_hessian_kink_needs_both_row_and_column_to_cross_it():
    rep = check_derivative(lambda x: np.sum(np.abs(x)) + x[1] ** 2 * x[2], np.array([0.0, 1.5, -2.0]), order=2)
    assert rep.passed
    assert rep.kinks[0]["rows"] == {"d2f/dxdx": [0]} and rep.kinks[0]["cols"] == {"d2f/dxdx": [0]}
    assert [(e["row"], e["col"]) for e in rep.convention_dependent] == [(0, 0)]


# ---------------------------------------------------------------- options and the report


def test_batched_check_reports_samples(monkeypatch):
    monkeypatch.setitem(PRIMITIVES["np.sin"].vjps, 0, lambda ans, x, **kw: (lambda g: g * 2.0 * np.cos(x)))
    x = np.array([[1.4, 1.4], [1.4, 0.0], [1.4, 1.4]])  # relative error 1 at sample 1, element 1
    rep = check_derivative(lambda x: np.sin(x) + x ** 2, x, batch_axis=0)
    assert not rep.passed and rep.blocks[0]["shape"] == [3, 2, 2]
    assert (rep.worst[0]["sample"], rep.worst[0]["row"], rep.worst[0]["col"]) == (1, 1, 1)


def test_batched_hessian_check_passes():
    rep = check_derivative(lambda x: np.sum(np.sin(x) ** 2, axis=1), np.arange(6.0).reshape(3, 2),
                           batch_axis=0, order=2)
    assert rep.passed and rep.blocks[0]["shape"] == [3, 2, 2] and rep.gradient["passed"]


# Sample 0 away from any kink, sample 1 at one: all three of its elements tie for the max (AD gives
# each 1/3, central differences 1/2), or sit at np.where's switch.
TWO_SAMPLES = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])


def sin_plus_max(x):
    return np.sin(x) + np.max(x, axis=1, keepdims=True)


def sin_plus_where(x):
    return np.sin(x) + np.where(x > 0, x, 0.0)


def sin_sum_plus_max(x):
    return np.sum(np.sin(x), axis=1) + np.max(x, axis=1)


def sin_plus_sign(x):
    return np.sin(x) + np.sign(x)


def sin_plus_argmax(x):
    # a jump in an index (not an elementwise op's argument): found from steps of sample groups
    return np.sin(x) + np.take_along_axis(x, np.argmax(x, axis=1, keepdims=True), axis=1)


@pytest.mark.parametrize("f, mismatches, excused", [(sin_plus_max, 3, 9), (sin_plus_where, 3, 3),
                                                    (sin_plus_sign, 3, 3), (sin_plus_argmax, 3, 9)],
                         ids=["kink", "jump", "step-function", "index-jump"])
def test_batched_kink_in_one_sample_does_not_excuse_a_wrong_derivative_in_another(monkeypatch, f, mismatches,
                                                                                  excused):
    # The step along element c moves every sample at once: a kink (jump) that sample 1 crosses must
    # not excuse the mismatches of column c in the other samples.
    break_sin_away_from_zero(monkeypatch)
    rep = check_derivative(lambda x: f(x), TWO_SAMPLES, batch_axis=0)  # a new f: nothing recorded reused
    assert not rep.passed and rep.blocks[0]["mismatches"] == mismatches
    assert {(w["sample"], w["row"], w["col"]) for w in rep.worst} == {(0, 0, 0), (0, 1, 1), (0, 2, 2)}
    assert rep.convention_dependent_count == excused and {e["sample"] for e in rep.convention_dependent} == {1}


def sin_plus_ones_at_argmax(x):
    # the index jumps at sample 1's tie, but the values it picks are all 1: no mismatch there
    return np.sin(x) + np.take_along_axis(x * 0.0 + 1.0, np.argmax(x, axis=1, keepdims=True), axis=1)


def test_batched_jump_in_a_sample_without_mismatches_excuses_no_other_sample(monkeypatch):
    # The index jump belongs to sample 1, which no step of the mismatching samples (0 and 2) moves.
    break_sin_away_from_zero(monkeypatch)
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.5, 0.5, 2.5]])
    rep = check_derivative(lambda x: sin_plus_ones_at_argmax(x), x, batch_axis=0)
    assert not rep.passed and rep.blocks[0]["mismatches"] == 6 and rep.convention_dependent_count == 0
    assert {w["sample"] for w in rep.worst} == {0, 2}


def test_batched_gradient_check_excuses_only_the_sample_that_crosses_the_kink(monkeypatch):
    # Order 2 checks the AD gradient against differences of f: sample 1's tie must not excuse
    # sample 0's wrong gradient.
    break_sin_away_from_zero(monkeypatch)
    rep = check_derivative(lambda x: sin_sum_plus_max(x), TWO_SAMPLES, batch_axis=0, order=2)
    assert not rep.passed and not rep.gradient["passed"] and rep.gradient["mismatches"] == 3
    assert {w["sample"] for w in rep.gradient["worst"]} == {0}


@pytest.mark.parametrize("f, order, block", [(sin_plus_max, 1, "df/dx"), (sin_sum_plus_max, 2, "d2f/dxdx")],
                         ids=["jacobian", "hessian"])
def test_batched_kink_is_excused_in_its_own_sample_and_named_with_it(f, order, block):
    rep = check_derivative(f, TWO_SAMPLES, batch_axis=0, order=order)
    assert rep.passed and rep.convention_dependent_count == 9
    assert {(e["sample"], e["row"], e["col"]) for e in rep.convention_dependent} \
        == {(1, r, c) for r in range(3) for c in range(3)}
    (kink,) = rep.kinks
    assert kink["op"] == "np.max" and kink["entry_count"] == {block: 9}
    assert kink["entries"][block] == [{"sample": 1, "row": r, "col": c} for r in range(3) for c in range(3)]


def sin_plus_switch(x):
    return np.sin(x) + np.where(np.sum(x, axis=1, keepdims=True) > 0, x ** 2, -x)


def sin_sum_plus_max_of_pair(x):
    return np.sum(np.sin(x), axis=1) + np.max(x[:, :2], axis=1)


@pytest.fixture
def step_crossings(monkeypatch):
    """The StepCrossings that check_derivative makes (each counts its recordings of f)."""
    import jaccli.check.verification as checks

    made = []

    class Kept(checks.StepCrossings):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(checks, "StepCrossings", Kept)
    return made


@pytest.mark.parametrize("k", [1, 5, 16])
@pytest.mark.parametrize("f, order, per_sample", [(sin_plus_switch, 1, 16), (sin_sum_plus_max_of_pair, 2, 4)],
                         ids=["jump", "hessian-kink"])
def test_batched_check_records_f_twice_per_column_however_many_samples_cross(rng, step_crossings, k, f, order,
                                                                            per_sample):
    # The first k of 16 samples sit at np.where's switch (their sum is 0), or at a tie of max(x[0], x[1]).
    x = rng.uniform(0.5, 1.5, size=(16, 4))
    if f is sin_plus_switch:
        x[:k, 1], x[:k, 3] = -x[:k, 0], -x[:k, 2]
    else:
        x[:k, 1] = x[:k, 0]
    rep = check_derivative(f, x, batch_axis=0, order=order)
    assert rep.passed and rep.convention_dependent_count == per_sample * k
    assert {e["sample"] for e in rep.convention_dependent} <= set(range(k))
    (cross,) = step_crossings
    assert cross.recordings == 1 + 2 * 4


def sin_plus_picked_max(x):
    return np.sin(x) + x[np.arange(x.shape[0]), np.argmax(x, axis=1)][:, None]


def sin_plus_top_two_by_argsort(x):
    return np.sin(x) + np.sum(np.take_along_axis(x, np.argsort(x, axis=1)[:, -2:], axis=1), axis=1, keepdims=True)


def sin_plus_top_two_by_sort(x):
    return np.sin(x) + np.sum(np.sort(x, axis=1)[:, -2:], axis=1, keepdims=True)


@pytest.mark.parametrize("k", [1, 5, 16])
@pytest.mark.parametrize("f", [sin_plus_picked_max, sin_plus_top_two_by_argsort, sin_plus_top_two_by_sort],
                         ids=["argmax", "argsort", "sort"])
def test_batched_index_jump_is_placed_without_recording_f_per_sample_group(rng, step_crossings, k, f):
    # The op's output elements that the new index moves are placed in samples by the reverse sweep,
    # as a np.where condition is. Sort: the second largest moves to an entry sliced off, which no
    # output reads.
    # The first k of 16 samples tie for their largest (argmax) or second largest (top two) entry.
    x = rng.uniform(0.0, 1.0, size=(16, 4))
    x[:k, 1] = x[:k, 2] = 1.5
    if f is not sin_plus_picked_max:
        x[:k, 3] = 3.0
    rep = check_derivative(lambda x: f(x), x, batch_axis=0)
    assert rep.passed and rep.convention_dependent_count == 2 * 4 * k  # columns 1 and 2, every row
    assert {e["sample"] for e in rep.convention_dependent} == set(range(min(k, 20 // 8 + 1)))
    (cross,) = step_crossings
    assert cross.recordings == 1 + 2 * 2


def per_sample_loop(x):
    return np.stack([np.sin(r) * 2.0 if np.sum(r) > 0 else np.cos(r) for r in x])


@pytest.mark.parametrize("f", [sin_plus_picked_max, sin_plus_top_two_by_argsort, sin_plus_top_two_by_sort,
                               per_sample_loop], ids=["argmax", "argsort", "sort", "control-flow"])
def test_batched_jumps_excuse_what_checks_of_each_sample_alone_excuse(monkeypatch, f):
    # A wrong np.sin rule (right at 0 only) in every sample; samples 1, 2, 4 and 6 of 8 at a tie or at
    # the branch's switch. Reference: each sample checked on its own (B=1). Before (control flow):
    # passed; the steps of sample groups could not tell several samples that switch branch apart
    # and took every sample their bits allow, the others too: every mismatch excused.
    break_sin_away_from_zero(monkeypatch)
    x = np.random.default_rng(3).uniform(0.2, 1.0, size=(8, 4))
    at = [1, 2, 4, 6]
    if f is per_sample_loop:
        x[at] = [0.5, -0.5, 0.25, -0.25]  # sums to exactly 0
    else:
        x[at, 1] = x[at, 2] = 1.5
        if f is not sin_plus_picked_max:
            x[at, 3] = 3.0
    rep = check_derivative(lambda x: f(x), x, batch_axis=0)
    alone = [check_derivative(lambda x: f(x), x[s:s + 1], batch_axis=0) for s in range(len(x))]
    assert not rep.passed
    assert rep.blocks[0]["mismatches"] == sum(r.blocks[0]["mismatches"] for r in alone) > 0
    assert rep.convention_dependent_count == sum(r.convention_dependent_count for r in alone) > 0
    assert {w["sample"] for w in rep.worst} <= {s for s, r in enumerate(alone) if not r.passed}
    assert {e["sample"] for e in rep.convention_dependent} <= set(at)


def test_kink_entries_are_the_rows_that_reach_the_kink_elements_each_column_crosses():
    # abs at 0 in elements 0 and 2: row 0 sees element 0 only, row 2 element 2 only, so the
    # entries are (0, 0) and (2, 2), not every row that sees a kink times every column that crosses one.
    rep = check_derivative(lambda x: np.abs(x) + x[1], np.array([0.0, 1.0, 0.0]))
    (kink,) = rep.kinks
    assert kink["rows"] == {"df/dx": [0, 2]} and kink["cols"] == {"df/dx": [0, 2]}
    assert kink["entries"] == {"df/dx": [{"row": 0, "col": 0}, {"row": 2, "col": 2}]}


def test_tolerances_default_from_the_dtype():
    assert default_tolerances(np.float64) == DEFAULT_TOLERANCES[8] == (1e-5, 1e-7)
    assert default_tolerances(np.float16) == DEFAULT_TOLERANCES[2]
    rep = check_derivative(lambda x: np.exp(x) * x, np.arange(3, dtype=np.float32))
    assert rep.passed and (rep.rtol, rep.atol) == DEFAULT_TOLERANCES[4]
    assert check_derivative(lambda x: np.exp(x), np.ones(2), rtol=0.5, atol=0.0).rtol == 0.5


def test_tuple_outputs_and_inputs_name_their_blocks():
    rep = check_derivative(lambda x, y: (x * y, np.sum(x) + y[0]), (np.arange(3.0), np.ones(3)),
                           rows=[0], cols=[1, 2])
    assert rep.passed
    assert [b["name"] for b in rep.blocks] == ["df0/dx", "df0/dy", "df1/dx", "df1/dy"]


def test_out_of_range_rows_are_a_usage_error():
    with pytest.raises(UsageError):
        check_derivative(np.sin, np.zeros(3), rows=[5])


def test_check_report_is_strict_json_with_documented_keys():
    rep = check_derivative(max_of, np.zeros(3))
    d = json.loads(json.dumps(rep.to_dict(), allow_nan=False))
    assert set(d) == {"passed", "order", "rtol", "atol", "max_abs_err", "max_rel_err", "worst", "modes", "blocks",
                      "kinks", "convention_dependent", "convention_dependent_count", "nan", "nan_count", "gradient",
                      "fd", "unrepeatable", "nested_derivative", "message", "verdict", "unresolved",
                      "unresolved_count"}
    assert set(d["modes"]) == {"passed", "rtol", "atol", "max_abs_err", "max_rel_err", "mismatches", "excluded",
                               "nonfinite_mismatches", "worst"}
    assert set(d["kinks"][0]) == {"op", "file", "line", "site", "count", "notes", "rows", "cols", "entries",
                                  "entry_count"}
    assert d["fd"]["method"] == "central differences with Richardson extrapolation"


def test_nonfinite_derivative_fails_the_check():
    rep = check_derivative(np.sqrt, np.array([0.0, 1.0]))
    assert not rep.passed
    # the step to -h leaves sqrt's domain: the entry is NaN in the finite differences, a failure of its own
    assert rep.nan_count == 1 and rep.nan[0]["ad"] == "inf" and (rep.nan[0]["row"], rep.nan[0]["col"]) == (0, 0)
    assert rep.nan[0]["nan_in"] == "finite differences"


def test_a_function_that_differs_between_calls_at_the_same_inputs_fails_the_check():
    # Noise looks like a jump within each step: it must not excuse those entries.
    rng = np.random.default_rng()

    def noisy(x):
        return np.sin(x) + 1e-6 * rng.standard_normal(x.shape)

    x = np.array([0.1, 0.2, 0.3])
    report = check_derivative(noisy, x)
    assert not report.passed
    assert 0 < report.unrepeatable < 1e-4
    assert report.message.startswith("check FAILED: f gives different values at the same inputs (two calls "
                                     "differ by up to")
    assert report.to_dict()["unrepeatable"] == report.unrepeatable
    clean = check_derivative(np.sin, x)
    assert clean.passed and clean.unrepeatable is None and clean.to_dict()["unrepeatable"] is None


def test_nan_at_the_same_place_in_both_calls_is_not_a_difference():
    report = check_derivative(lambda x: np.where(x > 0, np.sqrt(np.abs(x)), np.nan), np.array([-1.0, 2.0]))
    assert report.unrepeatable is None
