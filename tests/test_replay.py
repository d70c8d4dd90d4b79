"""record_once: a recording replayed at new inputs gives what a fresh recording gives, or is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
from jaccli.errors import StrictModeError
from tests.helpers import central_diff, rosen_hess, rosenbrock
from tests.test_compositions import assert_jacobians_match_differences, build, programs


def softmax_ce(z):
    c = np.max(z)
    return c + np.log(np.sum(np.exp(z - c))) - z[3]


def softmax_hessian(z):
    p = np.exp(z - z.max())
    p /= p.sum()
    return np.diag(p) - np.outer(p, p)


def counting(f):
    """f, and a list that grows by one each time f's Python code runs."""
    calls = []

    def g(*args):
        calls.append(1)
        return f(*args)
    return g, calls


# ---------------------------------------------------------------------------
# Replays give the right answer at the new point
# ---------------------------------------------------------------------------
def test_a_replayed_hessian_matches_the_closed_form_at_each_new_point():
    f, calls = counting(rosenbrock)
    g = jaccli.record_once(f)
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.uniform(-2, 2, 30)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(g, x)), rosen_hess(x), rtol=1e-12, atol=1e-9)
    assert (g.records, g.replays, g.misses, len(calls)) == (1, 3, 0, 1)


def test_a_replayed_jacobian_of_an_mlp_matches_the_closed_form_for_each_input():
    rng = np.random.default_rng(1)
    W1, b1, W2 = rng.standard_normal((7, 5)), rng.standard_normal(7), rng.standard_normal((3, 7))

    def mlp(x, W1):
        return W2 @ np.tanh(W1 @ x + b1)

    g = jaccli.record_once(mlp)
    for _ in range(3):
        x = rng.standard_normal(5)
        W1 = W1 + 0.1 * rng.standard_normal(W1.shape)
        Jx, JW = jaccli.jacobian(g, (x, W1))
        d = 1 - np.tanh(W1 @ x + b1) ** 2
        np.testing.assert_allclose(np.asarray(Jx), (W2 * d) @ W1, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(JW), np.einsum("ij,j,k->ijk", W2, d, x), rtol=1e-12, atol=1e-13)
    assert (g.records, g.replays) == (1, 2)


def test_every_function_of_the_api_replays_its_own_recording():
    f = jaccli.record_once(lambda x: np.sum(np.sin(x) * x ** 2))
    x1, x2 = np.array([0.3, -1.2, 2.0]), np.array([1.1, 0.4, -0.7])
    v = np.array([1.0, -2.0, 0.5])
    for x in (x1, x2):
        plain = lambda x: np.sum(np.sin(x) * x ** 2)  # noqa: E731
        grad = np.cos(x) * x ** 2 + 2 * x * np.sin(x)
        hess = np.diag(-np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x))
        np.testing.assert_allclose(jaccli.grad(f, x), grad, rtol=1e-13)
        val, vj = jaccli.vjp(f, x, np.array(2.0))
        np.testing.assert_allclose(vj, 2 * grad, rtol=1e-13)
        assert val == pytest.approx(plain(x), rel=1e-14)
        np.testing.assert_allclose(jaccli.jvp(f, x, v)[1], grad @ v, rtol=1e-13)
        val, hv = jaccli.hvp(f, x, v)
        np.testing.assert_allclose(hv, hess @ v, rtol=1e-12)
        assert val == pytest.approx(plain(x), rel=1e-14)
        H = jaccli.hessian(f, x)
        np.testing.assert_allclose(np.asarray(H), hess, rtol=1e-12, atol=1e-14)
    # f itself (grad, vjp, jvp share it) and its gradient (hvp, hessian) are recorded once each
    assert (f.records, f.misses) == (2, 0)
    assert f.replays == 2 * 5 - 2


def test_batched_jacobians_and_hessians_replay():
    g = jaccli.record_once(lambda x: np.sum(np.sin(x) ** 2, axis=1))
    rng = np.random.default_rng(2)
    for _ in range(2):
        x = rng.standard_normal((4, 3))
        J = np.asarray(jaccli.jacobian(g, x, batch_axis=0))
        np.testing.assert_allclose(J, np.sin(2 * x), rtol=1e-13)
        H = np.asarray(jaccli.hessian(g, x, batch_axis=0))
        want = np.stack([np.diag(2 * np.cos(2 * row)) for row in x])
        np.testing.assert_allclose(H, want, rtol=1e-12, atol=1e-14)
    assert g.replays == 2


def test_a_lazy_result_keeps_its_own_point_after_a_replay_at_another():
    g = jaccli.record_once(lambda x: np.exp(x) * x[::-1])
    x1, x2 = np.array([0.1, 0.2, 0.3]), np.array([-1.0, 2.0, 0.5])
    J1 = jaccli.jacobian(g, x1)          # nothing evaluated yet
    J2 = jaccli.jacobian(g, x2)
    assert g.replays == 1
    np.testing.assert_allclose(np.asarray(J2), central_diff(lambda x: np.exp(x) * x[::-1], x2), rtol=1e-8)
    np.testing.assert_allclose(np.asarray(J1), central_diff(lambda x: np.exp(x) * x[::-1], x1), rtol=1e-8)


# ---------------------------------------------------------------------------
# Guards: a value-dependent choice that changes means a fresh recording
# ---------------------------------------------------------------------------
def test_a_branch_on_a_value_is_guarded():
    def f(x):
        if x[0] > 0:
            return x ** 2
        return x ** 3
    g = jaccli.record_once(f)
    a, b = np.array([1.0, 2.0]), np.array([-1.0, 2.0])
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, a)), np.diag(2 * a))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, b)), np.diag(3 * b ** 2))
    assert (g.records, g.misses) == (2, 1)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, 2 * b)), np.diag(3 * (2 * b) ** 2))
    assert g.replays == 1  # the same branch again: replayed


def test_a_branch_through_a_traced_truth_value_is_guarded():
    def f(x):
        s = np.sum(x)
        return x * 2.0 if s else x * 3.0    # bool() of a traced array
    g = jaccli.record_once(f)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, np.array([1.0, 1.0]))), 2 * np.eye(2))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, np.array([1.0, -1.0]))), 3 * np.eye(2))
    assert g.misses == 1


@pytest.mark.parametrize("make", [
    lambda: (lambda x: np.where(x > 0, x ** 2, np.sin(x))),
    lambda: (lambda x: np.sort(x) * np.arange(1.0, 5.0)),
    lambda: (lambda x: x * x[np.argmax(x)]),
    lambda: (lambda x: x * x[x.argmax()]),
    lambda: (lambda x: x * x[np.nanargmax(x)] - x[np.nanargmin(x)]),
    lambda: (lambda x: x[np.nonzero(x > 0)] ** 2 if (x > 0).any() else x),
    lambda: (lambda x: np.maximum(x, 0.0) * np.abs(x)),
], ids=["where", "sort", "argmax", "argmax-method", "nanargmax", "nonzero", "relu-abs"])
def test_value_dependent_operations_replay_exactly(make):
    f = make()
    g = jaccli.record_once(f)
    rng = np.random.default_rng(3)
    for _ in range(6):
        x = rng.uniform(-1, 1, 4)
        got = np.asarray(jaccli.jacobian(g, x))
        np.testing.assert_allclose(got, np.asarray(jaccli.jacobian(f, x)), rtol=0, atol=0)
        np.testing.assert_allclose(got, central_diff(f, x), rtol=1e-7, atol=1e-8)
    assert g.records + g.replays == 6


def test_a_hessian_follows_the_maximum_when_it_moves():
    g = jaccli.record_once(lambda z: np.max(z) ** 2 + np.sum(z ** 2))
    z = np.array([0.5, 2.0, -1.0, 0.0, 1.0])
    for w in (z, z + 0.1, z[::-1].copy()):
        e = (w == w.max()).astype(float)
        np.testing.assert_array_equal(np.asarray(jaccli.hessian(g, w)), 2.0 * np.outer(e, e) + 2.0 * np.eye(5))
    assert (g.records, g.replays, g.misses) == (2, 1, 1)  # the maximum moved at the third point


def test_a_softmax_hessian_replays_wherever_its_maximum_is():
    # the maximum is a shift that cancels (engine/cancelled_shifts.py): no sweep reads its tie weights
    g = jaccli.record_once(softmax_ce)
    z = np.array([0.5, 2.0, -1.0, 0.0, 1.0])
    for w in (z, z + 0.1, z[::-1].copy()):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(g, w)), softmax_hessian(w), rtol=1e-12, atol=1e-15)
    assert (g.records, g.replays, g.misses) == (1, 2, 0)


def test_a_rule_that_depends_on_finiteness_is_guarded():
    f = lambda x: np.sum(np.sqrt(x) * x)  # noqa: E731
    g = jaccli.record_once(f)
    for x in (np.array([1.0, 4.0]), np.array([0.0, 4.0]), np.array([9.0, 1.0])):
        np.testing.assert_array_equal(np.asarray(jaccli.hessian(g, x)), np.asarray(jaccli.hessian(f, x)))
    np.testing.assert_allclose(np.asarray(jaccli.hessian(g, np.array([9.0, 1.0]))),
                               np.diag(0.75 / np.sqrt([9.0, 1.0])), rtol=1e-14)


def test_a_changed_data_argument_is_recorded_afresh_even_when_changed_in_place():
    g = jaccli.record_once(lambda x, A: np.tanh(A @ x))
    x, A = np.array([0.2, -0.4]), np.array([[1.0, 2.0], [3.0, 4.0]])

    def want(A):
        return (1 - np.tanh(A @ x) ** 2)[:, None] * A
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, (x, A), wrt=0)), want(A), rtol=1e-14)
    A[0, 0] = -5.0                      # the same object, new contents
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, (x, A), wrt=0)), want(A), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, (x, A.copy()), wrt=0)), want(A), rtol=1e-14)
    assert (g.records, g.misses, g.replays) == (2, 1, 1)


def test_each_shape_has_its_own_recording():
    g = jaccli.record_once(lambda x: np.cumsum(x) ** 2)
    for n in (3, 4, 3, 4, 5):
        x = np.linspace(0.1, 1.0, n)
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)),
                                   2 * np.cumsum(x)[:, None] * np.tri(n), rtol=1e-13)
    assert (g.records, g.replays) == (3, 2)


def test_the_oldest_signature_is_forgotten_beyond_the_limit():
    g = jaccli.record_once(lambda x: x * 2.0, max_signatures=2)
    for n in (1, 2, 3, 1):
        jaccli.jacobian(g, np.ones(n))
    assert (g.records, g.replays) == (4, 0)
    jaccli.jacobian(g, np.ones(1))
    assert g.replays == 1
    g.clear()
    jaccli.jacobian(g, np.ones(1))
    assert g.records == 5


def test_a_failure_at_the_new_point_is_reported_as_f_reports_it():
    def f(x):
        if (x < 0).any():
            raise ValueError("x must be positive")
        return np.log(x)
    g = jaccli.record_once(f)
    jaccli.jacobian(g, np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="x must be positive"):
        jaccli.jacobian(g, np.array([1.0, -2.0]))


def test_an_operation_that_fails_in_a_replay_falls_back_to_recording():
    f = lambda x: np.linalg.inv(np.reshape(x, (2, 2)))  # noqa: E731
    g = jaccli.record_once(f)
    jaccli.jacobian(g, np.array([2.0, 0.0, 0.0, 1.0]))
    with pytest.raises(np.linalg.LinAlgError):
        jaccli.jacobian(g, np.array([1.0, 1.0, 1.0, 1.0]))
    assert g.misses == 1


def test_strict_mode_still_checks_a_replayed_hessian():
    g = jaccli.record_once(lambda x, y: np.sum(x ** 2) + np.sum(y))
    args = (np.ones(2), np.ones(2))
    jaccli.hessian(g, args)
    with pytest.raises(StrictModeError):
        jaccli.hessian(g, args, strict=True)
    assert g.replays == 1


def test_side_effects_run_only_when_f_is_recorded():
    f, calls = counting(lambda x: np.sin(x))
    g = jaccli.record_once(f)
    for k in range(5):
        jaccli.jacobian(g, np.full(3, float(k)))
    assert len(calls) == 1
    assert g(np.zeros(2)).tolist() == [0.0, 0.0] and len(calls) == 2  # calling it calls f


def test_inside_an_outer_differentiation_it_records_as_usual():
    inner = jaccli.record_once(lambda y: np.sum(y ** 3))

    def outer(x):
        return jaccli.grad(inner, x, create_graph=True) * x
    x = np.array([0.5, -1.5])
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(outer, x)), np.diag(9 * x ** 2), rtol=1e-13)
    assert inner.replays == 0


def test_record_once_wraps_a_function_once():
    f = lambda x: x  # noqa: E731
    g = jaccli.record_once(jaccli.record_once(f))
    assert g.__wrapped__ is f
    with pytest.raises(TypeError):
        jaccli.record_once(3)


# ---------------------------------------------------------------------------
# Property: on random programs, a replay at a second point is a fresh recording there
# ---------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1), st.sampled_from(["reverse", "forward", "auto"]))
def test_random_programs_replay_to_the_fresh_result(program, seed, mode):
    sx, sy, steps = program
    rng = np.random.default_rng(seed)
    f = build(steps)
    g = jaccli.record_once(f)
    x0, y0 = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
    jaccli.jacobian(g, (x0, y0), mode=mode)
    x, y = rng.uniform(-1, 1, sx), rng.uniform(-1, 1, sy)
    jx, jy = assert_jacobians_match_differences(g, f, x, y, mode)
    assert g.replays == 1
    fx, fy = jaccli.jacobian(f, (x, y), mode=mode)
    np.testing.assert_array_equal(np.asarray(jx), np.asarray(fx))
    np.testing.assert_array_equal(np.asarray(jy), np.asarray(fy))


# ---------------------------------------------------------------------------
# What the caller does with its arrays between calls, and what f catches
# ---------------------------------------------------------------------------
def test_a_data_array_changed_in_place_then_passed_again_as_a_copy_of_its_old_contents():
    g = jaccli.record_once(lambda x, A: A @ x)
    A, x = np.eye(2), np.ones(2)
    jaccli.jacobian(g, (x, A), wrt=0)
    old = A.copy()
    A[:] = 100.0                      # the recorded call's array, changed after the call
    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, (x, old), wrt=0)), np.eye(2))
    assert g.replays == 1


def test_an_input_updated_in_place_is_a_new_point():
    def f(x):
        return x * x.value ** 2      # a plain copy of x's value: guarded whole
    g = jaccli.record_once(f)
    x = np.array([1.0, 2.0])
    jaccli.jacobian(g, x)
    x -= 0.5                          # an optimiser's step on the same object
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(g, x)), np.diag(x ** 2), rtol=1e-15)
    assert g.misses == 1


def test_a_lazy_result_is_not_changed_by_a_later_update_of_its_input():
    x = np.array([0.5, 1.5])
    J = jaccli.jacobian(lambda x: x ** 3, x)
    want = np.diag(3 * x ** 2)
    x += 1.0
    np.testing.assert_allclose(np.asarray(J), want, rtol=1e-15)


def test_an_exception_that_f_catches_is_guarded():
    def f(a):
        A = np.reshape(a, (2, 2))
        try:
            L = np.linalg.cholesky(A)
            return np.sum(L ** 2)
        except np.linalg.LinAlgError:
            return np.sum(A ** 4)
    g = jaccli.record_once(f)
    indefinite, definite = np.array([1.0, 2.0, 2.0, 1.0]), np.array([2.0, 0.5, 0.5, 2.0])
    for a in (indefinite, definite, indefinite):
        np.testing.assert_allclose(jaccli.grad(g, a), jaccli.grad(f, a), rtol=1e-14)
    assert g.misses == 2


def test_the_callers_floating_point_error_state_is_respected():
    g = jaccli.record_once(lambda x: np.log(x))
    jaccli.jacobian(g, np.array([1.0, 2.0]))
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            jaccli.jacobian(g, np.array([-1.0, 2.0]))


def test_an_error_state_set_inside_f_is_replayed():
    def f(x):
        with np.errstate(invalid="raise"):
            try:
                return np.sqrt(x) * 2.0
            except FloatingPointError:
                return x * 0.0
    g = jaccli.record_once(f)
    for x in (np.array([1.0, 4.0]), np.array([-1.0, 4.0]), np.array([9.0, 4.0])):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, x)), np.asarray(jaccli.jacobian(f, x)))


def test_a_constant_output_changed_by_the_caller_is_not_replayed():
    g = jaccli.record_once(lambda x: (np.sum(x ** 2), np.zeros(2)))
    v = (np.float64(1.0), np.ones(2))
    value, _ = jaccli.vjp(g, np.array([1.0, 2.0]), v)
    value[1][:] = 7.0
    value, _ = jaccli.vjp(g, np.array([3.0, 4.0]), v)
    np.testing.assert_array_equal(value[1], np.zeros(2))
    assert g.replays == 1


@pytest.mark.parametrize("first, second", [
    (np.array([0.0, 1.0]), np.array([-0.0, 1.0])),                                  # signed zero
    (np.ma.array([1.0, 2.0], mask=[0, 1]), np.ma.array([1.0, 2.0], mask=[1, 0])),  # another mask
], ids=["signed-zero", "masked"])
def test_data_that_compares_equal_but_is_not_the_same_is_recorded_afresh(first, second):
    f = lambda x, c: x / c if not np.ma.isMaskedArray(c) else x * np.ma.filled(c, 0.0)  # noqa: E731
    g = jaccli.record_once(f)
    x = np.array([1.0, 1.0])
    with np.errstate(divide="ignore"):
        jaccli.jacobian(g, (x, first), wrt=0)
        got = np.asarray(jaccli.jacobian(g, (x, second), wrt=0))
        np.testing.assert_array_equal(got, np.asarray(jaccli.jacobian(f, (x, second), wrt=0)))
    assert g.replays == 0


def test_data_in_dicts_replays_and_object_arrays_do_not_crash():
    g = jaccli.record_once(lambda x, d: d["w"] * x)
    for _ in range(3):
        jaccli.jacobian(g, (np.ones(2), {"w": np.array([2.0, 3.0])}), wrt=0)
    assert g.replays == 2
    h = jaccli.record_once(lambda x, objs: x * objs[0])
    objs = np.empty(1, dtype=object)
    objs[0] = np.array([2.0, 3.0])
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(h, (np.ones(2), objs), wrt=0)), np.diag([2.0, 3.0]))
    assert h.replays == 0


def test_a_data_argument_that_cannot_be_compared_is_passed_as_it_is_and_never_replayed():
    # A random Generator that f draws from: the caller's generator advances as without record_once,
    # and every call records afresh (its state cannot be compared with the recording's).
    def f(x, rng):
        return x * rng.standard_normal(x.shape)

    x = np.ones(3)
    g = jaccli.record_once(f)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, (x, rng_a), wrt=0)),
                                      np.asarray(jaccli.jacobian(f, (x, rng_b), wrt=0)))
    assert g.replays == 0 and g.records == 3
    # a module (xp=np) or a lock: no deep copy, so f gets the object it was given
    import threading
    h = jaccli.record_once(lambda x, xp, lock: xp.sin(x))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(h, (x, np, threading.Lock()), wrt=0)), np.diag(np.cos(x)))


def test_a_dict_with_the_same_items_in_another_order_is_recorded_afresh():
    f = lambda x, w: x * np.array(list(w.values()))  # noqa: E731 - f sees the dict's order
    g = jaccli.record_once(f)
    x = np.ones(2)
    jaccli.jacobian(g, (x, {"a": 1.0, "b": 2.0}), wrt=0)
    got = np.asarray(jaccli.jacobian(g, (x, {"b": 2.0, "a": 1.0}), wrt=0))
    np.testing.assert_array_equal(got, np.diag([2.0, 1.0]))
    assert g.replays == 0


@pytest.mark.parametrize("bad", [-1, 0, 2.5, True, "8"])
def test_max_signatures_must_be_a_positive_int(bad):
    with pytest.raises(ValueError):
        jaccli.record_once(np.sin, max_signatures=bad)


def test_a_record_once_function_copies_and_pickles_without_its_recordings():
    import copy
    import pickle

    g = jaccli.record_once(np.sin, max_signatures=3)
    jaccli.jacobian(g, np.ones(2))
    for other in (copy.copy(g), copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert other.__wrapped__ is np.sin and other.max_signatures == 3 and other.records == 0
        np.testing.assert_allclose(np.asarray(jaccli.jacobian(other, np.ones(2))), np.diag(np.cos(np.ones(2))))


def test_a_data_argument_in_another_memory_layout_is_recorded_afresh():
    f = lambda x, d: x * np.ravel(d, order="K")  # noqa: E731
    g = jaccli.record_once(f)
    d = np.arange(1.0, 7.0).reshape(2, 3)
    x = np.ones(6)
    for data in (d, np.asfortranarray(d)):
        np.testing.assert_array_equal(jaccli.vjp(g, (x, data), np.ones(6), wrt=0)[0], f(x, data))
    assert g.replays == 0 and g.records == 2


def test_a_dict_keyed_by_objects_reaches_f_as_it_is():
    class Param:
        pass

    p, q = Param(), Param()
    f = lambda x, d: x * d[p] + x ** 2 * d[q]  # noqa: E731
    g = jaccli.record_once(f)
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(jaccli.jacobian(g, (x, {p: 2.0, q: 1.0}), wrt=0)), np.diag([4.0, 6.0]))


@pytest.mark.parametrize("hessian", [False, True])
def test_a_steady_replay_keeps_the_recording_it_was_replayed_from(hessian):
    # Once kept without its values, what a steady call keeps is the same object on every call (no
    # second copy and trace made per call); each call still replays at its own point.
    f = (lambda x: np.sum(np.sin(x) * x ** 2)) if hessian else (lambda x: np.exp(x) * np.cos(x))
    g = jaccli.record_once(f)
    make = jaccli.hessian if hessian else jaccli.jacobian
    kept = []
    for k in range(8):
        x = np.linspace(-1.0, 1.0, 5) + 0.1 * k
        A = np.asarray(make(g, x))
        np.testing.assert_allclose(A, np.asarray(make(f, x)), rtol=1e-13, atol=1e-15)
        kept.append(g._cache[next(iter(g._cache))])
    assert kept[-1] is kept[-2] is kept[-3] and kept[-1].trace.values() is None
    assert (g.records, g.replays, g.misses) == (1, 7, 0)


@pytest.mark.parametrize("first_inside", [False, True])
def test_a_call_under_the_other_eigh_convention_records_afresh_and_each_convention_replays_its_own(first_inside):
    # jaccli.symmetric_derivatives() decides how eigvalsh is differentiated: a recording made under one convention
    # replayed under the other gave that other convention's derivative silently
    rng = np.random.default_rng(24)
    A = rng.standard_normal((4, 4))
    A = A + A.T
    f = lambda A: np.linalg.eigvalsh(A) ** 2  # noqa: E731
    with jaccli.symmetric_derivatives():
        symmetric = np.asarray(jaccli.jacobian(f, A))
    default = np.asarray(jaccli.jacobian(f, A))
    assert not np.allclose(symmetric, default)  # (the two conventions differ here: the test can fail)
    g = jaccli.record_once(f)
    order = [True, False] if first_inside else [False, True]
    for k in range(3):  # each convention recorded once, then replayed (the steady way too)
        for inside in order:
            B = A + 0.01 * k * np.eye(4)
            if inside:
                with jaccli.symmetric_derivatives():
                    got, want = np.asarray(jaccli.jacobian(g, B)), np.asarray(jaccli.jacobian(f, B))
            else:
                got, want = np.asarray(jaccli.jacobian(g, B)), np.asarray(jaccli.jacobian(f, B))
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert (g.records, g.replays) == (2, 4)
