"""A compiled program checks the rules' finite and nonzero guards together (issue 44, item 4): a
steady record_once call makes fewer checks of its factors, and a guard that fails still sends the
call the usual way, whose results are the plain call's, non-finite entries included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jaccli
from jaccli.replay.guards import all_hold

from jaccli.engine.rules import _util
from jaccli.engine import all_finite as _all_finite, no_zero as _no_zero  # (the two predicates the guards call)


def _elementwise(x):
    return np.sin(x) * np.exp(x) + x ** 2


def _rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _elementwise_jacobian(x):
    return np.diag(np.exp(x) * (np.sin(x) + np.cos(x)) + 2.0 * x)


class _Counted:
    """A function, counting its calls."""

    def __init__(self, fn) -> None:
        self.calls = 0
        self.fn = fn

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def _steady(g, call, x, warm=8):
    for _ in range(warm):  # (a recording is compiled one step a call: replays.py)
        call(g, x)


@pytest.mark.parametrize("name, f, call, finite", [
    # P1's sweep checks cos(x), exp(x), sin(x) finite and nonzero and x finite: 7 guards, each a
    # logical_and.reduce, before; two groups, in one call each, now (the loaded values', cos(x)'s), and
    # sin(x) and cos(x) are finite where x is (guards.implied_finite): x and exp(x) are counted
    ("elementwise jacobian", _elementwise, lambda g, x: np.asarray(jaccli.jacobian(g, x)), 2),
    # P3's call: 3 finite guards in the forward replay (one group at its end), 2 of each kind in the sweep, one
    # finite of which checked a value the replay checks (left out since: the program runs on the replay's values)
    ("rosenbrock hessian", _rosenbrock, lambda g, x: np.asarray(jaccli.hessian(g, x)), 4),
])
def test_a_steady_call_checks_its_factors_without_a_reduction_each(monkeypatch, name, f, call, finite):
    g = jaccli.record_once(f)
    rng = np.random.default_rng(0)
    _steady(g, call, rng.uniform(-1, 1, 30))
    x = rng.uniform(-1, 1, 30)
    reductions = _Counted(_util._COUNT)  # (what _all_finite and _no_zero count with)
    isfinite = _Counted(np.isfinite)
    monkeypatch.setattr(_util, "_COUNT", reductions)
    monkeypatch.setattr(np, "isfinite", isfinite)
    got = call(g, x)
    monkeypatch.undo()
    # one isfinite per value checked; P1's lone nonzero check of cos(x), its finite check left out, is the
    # rule's own predicate, which counts (its one count)
    assert reductions.calls == (f is _elementwise) and isfinite.calls == finite, name
    np.testing.assert_array_equal(got, call(f, x))  # the plain call's, to the last bit
    assert g.records == 1


@pytest.mark.parametrize("bad", [800.0, np.inf, np.nan, 0.0, -np.pi / 4])
def test_a_failing_guard_in_a_group_still_sends_the_call_the_usual_way(bad):
    # 800: exp overflows (its factor not finite); inf, nan: the input itself; 0: sin(x) is 0 (a
    # factor with a zero); -pi/4: sin + cos = 0 there (not a guard, a control)
    g = jaccli.record_once(_elementwise)
    rng = np.random.default_rng(1)
    _steady(g, lambda g, x: np.asarray(jaccli.jacobian(g, x)), rng.uniform(-1, 1, 7))
    x = rng.uniform(-1, 1, 7)
    J = jaccli.jacobian(g, x)
    np.testing.assert_allclose(np.asarray(J), _elementwise_jacobian(x), rtol=1e-13, atol=1e-13)
    assert J.stats["path"] == "compiled sweep"
    x[3] = bad
    with warnings.catch_warnings():  # (not np.errstate: a replay under another error state records afresh)
        warnings.simplefilter("ignore", RuntimeWarning)
        J = jaccli.jacobian(g, x)
        got = np.asarray(J)
        want = np.asarray(jaccli.jacobian(_elementwise, x))
    np.testing.assert_array_equal(got, want)  # NaN where the plain call has NaN, inf where it has inf
    if bad == -np.pi / 4:
        assert J.stats["path"] == "compiled sweep"
    else:
        assert J.stats["path"] != "compiled sweep"  # a guard of a group failed: swept as usual


def _values(rng, kind, size):
    if kind == "python float":
        return float(rng.uniform(-1, 1))
    if kind == "int":
        return rng.integers(-2, 3, size)
    if kind == "0-d":
        return np.array(rng.uniform(-1, 1))
    if kind == "float32":
        return rng.uniform(-1, 1, (size, 2)).astype(np.float32)
    if kind == "strided":
        return rng.uniform(-1, 1, (size, 4))[:, ::2].T
    return rng.uniform(-1, 1, size)


@pytest.mark.parametrize("kinds", [("float64", "float64", "float64"), ("float64", "float32", "0-d"),
                                   ("strided", "float64"), ("int", "float64"), ("python float", "float64")])
@pytest.mark.parametrize("size", [1, 5, 5000])
def test_all_hold_is_the_verdict_of_every_guard(kinds, size):
    rng = np.random.default_rng(size)
    for trial in range(40):
        values = [_values(rng, k, size) for k in kinds]
        for v in values:
            if type(v) is np.ndarray and v.size and trial % 2:
                bad = rng.choice([np.inf, -np.inf, np.nan, 0.0, -0.0]) if v.dtype.kind == "f" else 0
                v.reshape(-1)[rng.integers(v.size)] = bad
        n = int(rng.integers(0, len(values) + 1))
        finite, nonzero = values[:n], values[n:]
        want = all(_all_finite(v) for v in finite) and all(_no_zero(v) for v in nonzero)
        assert all_hold(_all_finite, _no_zero, n, *finite, *nonzero) is want


@pytest.mark.parametrize("value", [0.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e-320])
@pytest.mark.parametrize("kind", [float, np.float64])
def test_all_hold_checks_a_float_scalar_itself_with_the_predicates_verdict(value, kind):
    # a factor made of NumPy scalars (P6's 1 / sum, its -1 / sum**2): checked without a call of the predicate
    v = kind(value)
    for n in (0, 1):
        want = bool(_all_finite(v)) if n else bool(_no_zero(v))
        assert all_hold(None, None, n, v) is want  # (None for the predicates: a call of one would raise)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128,
                                   np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 5)])
def test_all_hold_counts_any_array_of_the_rules_predicates_with_their_verdict(dtype, shape):
    # an array is counted whatever its dtype where the predicate is the rules' own (they count so too):
    # a non-finite entry (NaN, inf, -inf; in a complex number's either part) or a zero in any position fails
    size = int(np.prod(shape))
    base = np.full(shape, 3, dtype)
    cases = [base]
    for k in range(size):
        kinds = [0] if np.dtype(dtype).kind in "iub" else [0, np.nan, np.inf, -np.inf, -0.0]
        if np.dtype(dtype).kind == "c":
            kinds += [complex(0, np.inf), complex(np.nan, 1), complex(0, 1)]
        for bad in kinds:
            v = base.copy()
            v.reshape(-1)[k] = bad
            cases.append(v)
    for v in cases:
        for other in (np.ones(4), np.array([np.inf, 1.0])):
            for n, values in ((1, (v,)), (2, (other, v)), (1, (v, other)), (0, (v,)), (0, (other, v))):
                want = all(_all_finite(u) for u in values[:n]) and all(_no_zero(u) for u in values[n:])
                assert all_hold(_all_finite, _no_zero, n, *values) is want
    assert all_hold(_all_finite, _no_zero, 0, np.ones(3, np.float32), np.array([0.0, 1.0], np.float32)[1:]) is True


def test_all_hold_gives_an_array_not_of_floats_to_any_other_predicate():
    calls = []

    def finite(v):
        calls.append(v)
        return False

    ints = np.arange(1, 4)
    assert all_hold(finite, None, 1, ints) is False and calls == [ints]
    assert all_hold(finite, None, 1, np.ones(3)) is True and calls == [ints]  # (a float array: counted)
    assert all_hold(None, finite, 0, ints) is False and calls == [ints, ints]


def _bounded(x):
    return np.sin(np.cos(x)) * np.tanh(x) + np.arctan(x) * x


def _bounded_jacobian(x):
    return np.diag(-np.cos(np.cos(x)) * np.sin(x) * np.tanh(x) + np.sin(np.cos(x)) * (1 - np.tanh(x) ** 2)
                   + x / (1 + x * x) + np.arctan(x))


@pytest.mark.parametrize("bad", [None, np.inf, -np.inf, np.nan])
def test_a_bounded_functions_finite_check_is_its_arguments(monkeypatch, bad):
    # sin, cos, tanh, arctan of a finite real value are finite (engine's FINITE_ON_FINITE): their
    # results' checks are left out where their argument's is made; a non-finite x still fails it
    g = jaccli.record_once(_bounded)
    call = lambda g, x: np.asarray(jaccli.jacobian(g, x))  # noqa: E731
    rng = np.random.default_rng(2)
    _steady(g, call, rng.uniform(-1, 1, 9), warm=10)
    x = rng.uniform(-1, 1, 9)
    if bad is not None:
        x[4] = bad
    isfinite = _Counted(np.isfinite)
    monkeypatch.setattr(np, "isfinite", isfinite)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        J = jaccli.jacobian(g, x)
        got = np.asarray(J)
        monkeypatch.undo()
        want = np.asarray(jaccli.jacobian(_bounded, x))
    np.testing.assert_array_equal(got, want)
    if bad is None:
        np.testing.assert_allclose(got, _bounded_jacobian(x), rtol=1e-13, atol=1e-15)
        # x, 1 - tanh(x)**2 and 1 / (1 + x * x): the five others (sin(cos(x)), tanh(x), arctan(x), the
        # sweep's cos(cos(x)) and -sin(x)) follow from x's
        assert J.stats["path"] == "compiled sweep" and isfinite.calls == 3
    else:
        assert J.stats["path"] != "compiled sweep"  # x's check failed: swept as usual, NaN as the plain call


def test_implied_finite_needs_a_real_argument_known_finite_and_one_plain_argument():
    from types import SimpleNamespace as N

    from jaccli.engine.rules.elementwise import cos, exp, sin
    from jaccli.replay.guards import implied_finite

    def node(k, prim, parent=None, value=np.zeros(3), args=(None,), kwargs=None, index=None):
        return N(index=k, prim=prim, parents=() if parent is None else ((0, parent, index),), args=args,
                 kwargs=kwargs or {}, value=value)

    def check(n):
        return N(expected=True, fn=N(fused_check="finite"), refs=((0, n, None),), args=(None,), kwargs={})

    x, z = node(0, None, args=()), node(1, None, value=np.zeros(3, complex), args=())
    s, c, e = node(2, sin, x), node(3, cos, node(9, sin, x)), node(4, exp, x)
    chain = node(5, cos, s)
    cases = [(check(x), True), (check(s), False), (check(c), False), (check(e), True), (check(chain), False),
             (check(node(6, sin, z)), True), (check(node(7, sin, x, kwargs={"where": True})), True),
             (check(node(8, sin, x, index=0)), True), (check(node(10, cos, node(11, exp, x))), True)]
    guards = [g for g, _ in cases]
    dropped = implied_finite(guards, frozenset())
    # left out: sin(x), cos(sin(x)) (sin(x) unchecked, itself finite where x is), cos(s); kept: x (an input),
    # exp (unbounded), sin of a complex value, with keywords, of an item, cos(exp(x))
    assert [id(g) not in dropped for g, _ in cases] == [kept for _, kept in cases]
    assert implied_finite(guards[1:2], frozenset({0})) == {id(guards[1])}  # x found finite by the replay
    assert implied_finite(guards[1:2], frozenset()) == set()  # nothing says x is finite
