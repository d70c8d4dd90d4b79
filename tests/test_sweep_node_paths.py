"""The cheaper sweep paths of the common small nodes (issue 44): a product's and a sum's rule where no
broadcast is undone, a permutation's transpose (np.roll's) as a gather by its inverse, the finite and
nonzero guards by counting, and the zero block of a Jacobian swept in parts made in the memory of the
block before it; the results are the closed forms and central differences, in both modes."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.engine.rules._util import recycle_block, zero_block
from jaccli.engine import all_finite as _all_finite, no_zero as _no_zero

from .helpers import central_diff

MODES = ["reverse", "forward"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shift", [1, -2, 7, 0])
def test_a_roll_is_its_permutation_in_both_modes(mode, shift):
    x = np.linspace(0.5, 1.5, 6)
    J = np.asarray(jaccli.jacobian(lambda x: np.roll(x, shift), x, mode=mode))
    np.testing.assert_array_equal(J, np.roll(np.eye(6), shift, axis=0))


@pytest.mark.parametrize("mode", MODES)
def test_rolls_are_recorded_and_swept_without_numpys_take_wrapper(monkeypatch, mode):
    def f(x):
        return (np.roll(x, -1) - np.roll(x, 2)) * np.roll(x, 1) - x

    taken = []
    take = np.take
    monkeypatch.setattr(np, "take", lambda *a, **kw: taken.append(a) or take(*a, **kw))
    x = np.linspace(7.5, 8.5, 7)
    J = np.asarray(jaccli.jacobian(f, x, mode=mode))
    assert taken == []  # (ndarray.take: a sweep transposes every roll of an integrator's steps)
    np.testing.assert_allclose(J, central_diff(f, x), rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_a_roll_along_an_axis_of_a_matrix_inside_a_product_is_the_central_difference(mode):
    def f(x):
        u = x.reshape(3, 4)
        return (np.roll(u, -1, axis=1) * u + np.roll(u, 2, axis=0) ** 2).ravel()

    x = np.linspace(-1.0, 1.3, 12)
    J = np.asarray(jaccli.jacobian(f, x, mode=mode))
    np.testing.assert_allclose(J, central_diff(f, x), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_products_and_sums_with_and_without_broadcasting_are_the_closed_forms(mode):
    # x * y, x - y, x + y on equal shapes (the short rules) and on broadcast shapes (the general ones)
    def f(v):
        x, y, row, s = v[:6].reshape(2, 3), v[6:12].reshape(2, 3), v[12:15], v[15]
        return np.concatenate([(x * y).ravel(), (x - y).ravel(), (y + x).ravel(), (x * row).ravel(),
                               (row - x).ravel(), (x * s).ravel(), (s - y).ravel(), [s * s, v[0] - s]])

    v = np.linspace(-1.2, 1.7, 16)
    J = np.asarray(jaccli.jacobian(f, v, mode=mode))
    np.testing.assert_allclose(J, central_diff(f, v), rtol=1e-8, atol=1e-9)
    x, y, row, s = v[:6], v[6:12], np.tile(v[12:15], 2), v[15]
    np.testing.assert_array_equal(J[:6, :6], np.diag(y))  # d(x * y)/dx, exactly
    np.testing.assert_array_equal(J[6:12, 6:12], -np.eye(6))  # d(x - y)/dy
    np.testing.assert_array_equal(J[18:24, :6], np.diag(row))  # d(x * row)/dx
    np.testing.assert_array_equal(J[30:36, 15], x)  # d(x * s)/ds


@pytest.mark.parametrize("mode", MODES)
def test_a_product_with_an_infinite_factor_still_gives_exactly_zero_where_its_cotangent_is_a_structural_zero(mode):
    # y = where(x > 0, x * (1 / x1), 0): at x1 = 0 the factor 1/x1 is inf; the branch not taken sends 0
    def f(x):
        return np.where(x[:2] > 5.0, x[:2] * (1.0 / x[2]), 0.0)

    x = np.array([1.0, 2.0, 0.0])
    with np.errstate(divide="ignore"):
        J = np.asarray(jaccli.jacobian(f, x, mode=mode))
    np.testing.assert_array_equal(J, np.zeros((2, 3)))


def test_a_value_times_itself_makes_and_applies_one_rule_in_reverse(monkeypatch):
    from jaccli.engine.rules.elementwise import multiply

    made = []
    for argnum, maker in list(multiply.vjps.items()):
        monkeypatch.setitem(multiply.vjps, argnum, lambda *a, _k=argnum, _m=maker, **kw: made.append(_k) or _m(*a, **kw))
    x, v = np.linspace(-1.5, 2.5, 7), np.linspace(0.3, 1.1, 7)
    value, got = jaccli.vjp(lambda x: x * x * 3.0, x, v)
    assert made == [0, 0]  # x * x's argument 1 sends argument 0's cotangent back again; (x * x) * 3.0's one rule
    np.testing.assert_array_equal(got, 2.0 * (3.0 * v * x))  # (the sum of two equal products doubles exactly)
    np.testing.assert_array_equal(value, x * x * 3.0)
    _, got = jaccli.vjp(lambda x: x * (x + 0.0), x, v)  # two values: both rules
    np.testing.assert_array_equal(got, 2.0 * (v * x))


@pytest.mark.parametrize("mode", MODES)
def test_a_value_times_itself_with_an_infinite_entry_is_the_product_of_two_values(mode):
    # the rule's factor is inf at x1: where the branch is not taken, the cotangent is a structural zero
    def square(x):
        return np.where(x < 5.0, x * x, 0.0)

    def product(x):
        return np.where(x < 5.0, x * (x + 0.0), 0.0)

    x = np.array([1.0, np.inf, -3.0])
    with np.errstate(invalid="ignore"):
        J = np.asarray(jaccli.jacobian(square, x, mode=mode))
        np.testing.assert_array_equal(J, np.asarray(jaccli.jacobian(product, x, mode=mode)))
    np.testing.assert_array_equal(J, np.diag([2.0, 0.0, -6.0]))


def test_the_guards_count_as_the_reductions_did():
    for value, finite, nonzero in [(np.array([1.0, -2.0]), True, True), (np.array([1.0, np.inf]), False, True),
                                   (np.array([np.nan, 1.0]), False, True), (np.array([0.0, 1.0]), True, False),
                                   (np.zeros((0, 3)), True, True), (np.array(-0.0), True, False)]:
        assert _all_finite(value) is finite and _no_zero(value) is nonzero, value
    assert _all_finite(3.0) and not _all_finite(float("nan")) and _no_zero(2) and not _no_zero(0.0)


def test_a_large_zero_block_given_back_is_made_again_in_its_memory_as_zeros():
    shape = (1100, 2000)  # 17.6 MB: large enough to be kept
    z = zero_block(shape, np.dtype(np.float64))
    z[:, 5] = 3.0
    recycle_block(z)
    again = zero_block(shape, np.dtype(np.float64))
    assert again is z and not again.any()
    recycle_block(np.ones(shape))  # not one zero_block made: not taken
    fresh = zero_block(shape, np.dtype(np.float64))
    assert fresh is not z and not fresh.any()
    recycle_block(fresh)
    other = zero_block((2000, 1100), np.dtype(np.float64))  # another shape: fresh zeros
    assert other is not fresh and not other.any() and fresh.shape == shape


@pytest.mark.parametrize("mode", MODES)
def test_an_element_loop_swept_in_blocks_over_reused_memory_is_the_closed_form_every_call(mode):
    n = 2100  # blocks of 1050 rows of 2100: 17.6 MB each, made in the memory of the block before

    def f(x):
        y = np.zeros_like(x)
        for i in range(n):
            y[i] = x[i] * x[(i + 1) % n]
        return y

    def closed_form(x):
        J = np.zeros((n, n))
        i = np.arange(n)
        J[i, i] += x[(i + 1) % n]
        J[i, (i + 1) % n] += x
        return J

    x1, x2 = np.linspace(0.5, 1.5, n), np.linspace(-1.0, 2.0, n)
    J1 = np.asarray(jaccli.jacobian(f, x1, mode=mode, chunk_size=n // 2))
    J2 = np.asarray(jaccli.jacobian(f, x2, mode=mode, chunk_size=n // 2))
    np.testing.assert_array_equal(J1, closed_form(x1))  # (the first, after the second reused memory)
    np.testing.assert_array_equal(J2, closed_form(x2))


def test_a_plain_calls_sweep_of_a_short_recording_makes_no_plan_and_passes_by_nodes_off_the_paths(monkeypatch):
    # the one sweep of a plain vjp visits every node from the output's down (first_sweep_order):
    # nodes that no seed reaches, that depend on no input, or that come after the output get no
    # cotangent; the product is the central differences' all the same, and no plan is made
    from jaccli.engine import sweep_plans
    from jaccli.engine.recording import Recording

    made = []
    needed = sweep_plans._needed
    monkeypatch.setattr(sweep_plans, "_needed", lambda *a: made.append(1) or needed(*a))
    c = np.linspace(1.0, 2.0, 5)

    def f(x, y):
        unused = np.sin(x) * 3.0  # reaches no output  # noqa: F841
        plain = np.cos(c) * 2.0  # depends on no input
        out = x * y + plain * np.tanh(y) + (x * x).sum()
        after = out * 4.0  # recorded after the output  # noqa: F841
        return out

    x, y, v = np.linspace(0.3, 0.9, 5), np.linspace(-0.5, 0.5, 5), np.linspace(1.0, -1.0, 5)
    rec = Recording(f, (x, y), (0, 1))
    got = rec.vjp([v[None]])
    assert made == []
    rec.vjp([v[None]])  # a second sweep (a Jacobian's next block) makes the plan, for every sweep after it
    assert made == [1]
    for k, arg in enumerate((x, y)):
        other = (lambda a: f(a, y)) if k == 0 else (lambda a: f(x, a))
        np.testing.assert_allclose(got[k][0], central_diff(other, arg).T @ v, rtol=1e-7, atol=1e-8)
    # a recording with an exp has its plan made, for the shifts it may cut (engine/cancelled_shifts.py)
    del made[:]
    rec = Recording(lambda z: np.log(np.exp(z - z.max()).sum()) + z.max(), (x,), (0,))  # logsumexp
    np.testing.assert_allclose(rec.vjp([np.ones((1,))])[0][0], np.exp(x) / np.exp(x).sum(), rtol=1e-12)
    assert made  # (and the shift cut: test_shifts.py)


def test_undoing_a_broadcast_in_a_plain_sweep_sums_without_numpys_sum_wrapper(monkeypatch):
    # x * row, x * s, col - x and a (2, 1) column: the cotangent of each broadcast argument is summed over
    # the axes it was broadcast along, by np.add.reduce on a plain block (what np.sum calls after its dispatch)
    def f(v):
        x, row, s, col = v[:6].reshape(2, 3), v[6:9], v[9], v[10:12].reshape(2, 1)
        return np.concatenate([(x * row).ravel(), (x * s).ravel(), (col - x).ravel(), (np.sin(col) * x).ravel()])

    summed = []
    total = np.sum
    monkeypatch.setattr(np, "sum", lambda *a, **kw: summed.append(a) or total(*a, **kw))
    v, w = np.linspace(-1.2, 1.7, 12), np.linspace(0.5, -1.5, 24)
    value, got = jaccli.vjp(f, v, w)
    assert summed == []
    monkeypatch.setattr(np, "sum", total)
    np.testing.assert_allclose(got, central_diff(f, v).T @ w, rtol=1e-8, atol=1e-9)
    np.testing.assert_array_equal(value, f(v))
    np.testing.assert_array_equal(got, jaccli.vjp(f, v, w, create_graph=True)[1])  # (a traced sweep's np.sum)


def test_a_plain_vjp_through_every_kind_of_node_is_the_central_difference():
    # a plain sweep's common nodes skip the steps of the others (a joint rule, an update into a sum,
    # x * x, a traced sweep): complex results of a real argument, a piecewise constant, a node of
    # two outputs, a shift cut out of a softmax, x * x, all agree with central differences and with
    # the traced sweep of create_graph
    def f(x):
        r = np.fft.irfft(np.fft.rfft(x) * (1 + 0.5j), n=len(x))
        frac, whole = np.modf(x * 1.7)
        s = np.exp(x - x.max())
        return r + np.floor(x) * x + frac * whole + s / s.sum() + x * x + np.abs(x + 1j * x[::-1])

    x, v = np.linspace(0.3, 2.9, 8), np.linspace(1.0, -0.7, 8)
    value, got = jaccli.vjp(f, x, v)
    np.testing.assert_allclose(got, central_diff(f, x).T @ v, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(value, f(x), rtol=1e-14)  # (the transforms' fast path: within an ulp of np.fft's)
    np.testing.assert_array_equal(got, jaccli.vjp(f, x, v, create_graph=True)[1])
