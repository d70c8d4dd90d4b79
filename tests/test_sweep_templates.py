"""A gradient's sweep replayed when f records the same operations again gives what tracing it gives."""

from __future__ import annotations

import threading
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
from jaccli.api import recorded_functions
from jaccli.replay import sweep_templates
from jaccli.engine.recording import Recording
from tests.helpers import rosen_hess, rosenbrock
from tests.test_compositions import build, fd_jacobian, programs
from tests.test_replay import softmax_ce, softmax_hessian
from tests.test_rules import CASES


@pytest.fixture
def replays(monkeypatch):
    """Templates start empty; the list tells, for each gradient recorded, how its sweep came:
    "replayed" from a template, "traced" with no template yet, or "retraced" although f had one
    (f recorded other operations, or a guard failed)."""
    sweep_templates.clear()
    seen = []
    gradient = sweep_templates.gradient

    def spy(f, key, trace, ref, shape, sweep, said=None):
        had = isinstance(sweep_templates._TEMPLATES.get(sweep_templates._key_of(f), {}).get(key),
                         sweep_templates._Template)
        traced = []

        def counted():
            traced.append(1)
            return sweep()
        out = gradient(f, key, trace, ref, shape, counted, said)
        seen.append("replayed" if not traced else "retraced" if had else "traced")
        return out
    monkeypatch.setattr(sweep_templates, "gradient", spy)
    yield seen
    sweep_templates.clear()


def warm(f, x, replays, **kw):
    """Two recordings of f: the second leaves a template (a function recorded once leaves none)."""
    for _ in range(2):
        jaccli.hessian(f, x, **kw)
    assert replays == ["traced", "traced"]
    del replays[:]


def traced_afresh(f, x, **kw):
    """The Hessian with the gradient's sweep traced (no template to replay)."""
    sweep_templates.clear()
    H = jaccli.hessian(f, x, **kw)
    return H if isinstance(H, tuple) else np.asarray(H)


def test_a_newton_loop_replays_the_sweep_and_matches_the_closed_form(replays):
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.uniform(-2, 2, 30)
        np.testing.assert_allclose(np.asarray(jaccli.hessian(rosenbrock, x)), rosen_hess(x), rtol=1e-12, atol=1e-9)
    assert replays == ["traced", "traced", "replayed", "replayed", "replayed"]


def test_stats_say_a_hessian_came_from_a_sweep_template(replays):
    rng = np.random.default_rng(15)
    paths = [jaccli.hessian(rosenbrock, rng.uniform(-2, 2, 12)).stats["path"] for _ in range(4)]
    assert paths == ["recording", "recording", "sweep template", "sweep template"]
    assert replays == ["traced", "traced", "replayed", "replayed"]


def test_a_function_recorded_once_makes_no_template(replays):
    for _ in range(3):
        jaccli.hessian(lambda x: rosenbrock(x), np.linspace(-1, 1, 5))  # a new function each time
    assert replays == ["traced"] * 3
    assert len(sweep_templates._TEMPLATES) <= 1  # only entries of functions still alive


def test_a_method_replays_although_each_access_makes_a_new_bound_method(replays):
    class Model:
        def __init__(self, scale):
            self.scale = scale

        def loss(self, x):
            return np.sum(self.scale * x ** 3)

    model = Model(2.0)
    for x in (np.array([1.0, 2.0]), np.array([3.0, -1.0]), np.array([0.5, 0.5])):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(model.loss, x)), np.diag(12.0 * x), rtol=1e-15)
    other = Model(5.0)  # the same function, another instance: its constant differs
    np.testing.assert_allclose(np.asarray(jaccli.hessian(other.loss, np.array([1.0, 1.0]))), 30.0 * np.eye(2))
    assert replays == ["traced", "traced", "replayed", "retraced"]


def test_a_replayed_sweep_is_bit_for_bit_the_traced_one(replays):
    x0, x1 = np.linspace(-1, 1, 12), np.linspace(0.3, 1.7, 12)
    warm(rosenbrock, x0, replays)
    got = np.asarray(jaccli.hessian(rosenbrock, x1))
    assert replays == ["replayed"]
    np.testing.assert_array_equal(got, traced_afresh(rosenbrock, x1))


def peaked(z):
    """A function whose derivatives follow the maximum: max(z)**2 + sum(z**2)."""
    return np.max(z) ** 2 + np.sum(z ** 2)


def peaked_hessian(z):
    e = (z == z.max()).astype(float)
    return 2.0 * np.outer(e, e) + 2.0 * np.eye(z.size)


def test_the_hessian_follows_the_maximum_when_it_moves(replays):
    z = np.array([0.5, 2.0, -1.0, 0.0, 1.0])
    warm(peaked, z, replays)
    for w in (z + 0.1, z[::-1].copy()):
        np.testing.assert_array_equal(np.asarray(jaccli.hessian(peaked, w)), peaked_hessian(w))
    # the maximum's tie weights are a guard: kept at z + 0.1, not where the maximum moved
    assert replays == ["replayed", "retraced"]


def test_the_softmax_hessian_needs_no_guard_on_its_maximum(replays):
    # softmax_ce subtracts max(z) and adds it back: the shift cancels, so the gradient's sweep never
    # reads the maximum's tie weights, and a template holds wherever the maximum is
    z = np.array([0.5, 2.0, -1.0, 0.0, 1.0])
    warm(softmax_ce, z, replays)
    for w in (z + 0.1, z[::-1].copy()):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(softmax_ce, w)), softmax_hessian(w),
                                   rtol=1e-12, atol=1e-15)
    assert replays == ["replayed", "replayed"]


def test_a_tie_of_the_maximum_at_the_new_point_is_traced_afresh(replays):
    f = lambda x: np.max(x) ** 2 + np.sum(x ** 2)  # noqa: E731
    warm(f, np.array([3.0, 1.0, 2.0]), replays)
    tie = np.array([3.0, 3.0, 2.0])
    got = np.asarray(jaccli.hessian(f, tie))
    assert replays == ["retraced"]
    np.testing.assert_array_equal(got, traced_afresh(f, tie))
    w = np.array([0.5, 0.5, 0.0])  # a tie splits the maximum's derivative evenly
    np.testing.assert_allclose(got, 2.0 * np.eye(3) + 2.0 * np.outer(w, w), rtol=1e-15)


def test_a_factor_that_is_no_longer_finite_is_traced_afresh(replays):
    f = lambda x: np.sum(np.sqrt(x) * x)  # noqa: E731
    warm(f, np.array([1.0, 4.0]), replays)
    points = (np.array([4.0, 1.0]), np.array([0.0, 4.0]))  # at 0, sqrt's factor 1 / (2 sqrt(x)) is inf
    got = [np.asarray(jaccli.hessian(f, x)) for x in points]
    assert replays == ["replayed", "retraced"]
    for H, x in zip(got, points):
        np.testing.assert_array_equal(H, traced_afresh(f, x))


W = np.array([[1.0, 2.0], [0.5, -1.0]])


def _tanh_sum(x):
    return np.sum(np.tanh(W @ x))


def _tanh_sum_hessian(x, A):
    t = np.tanh(A @ x)
    return A.T @ np.diag(-2 * t * (1 - t ** 2)) @ A


def test_a_constant_changed_in_place_between_calls_is_traced_afresh(replays):
    x = np.array([0.3, -0.2])
    warm(_tanh_sum, x, replays)
    W[0, 0] = 3.0
    try:
        got = np.asarray(jaccli.hessian(_tanh_sum, x))
        np.testing.assert_allclose(got, _tanh_sum_hessian(x, W), rtol=1e-13)
    finally:
        W[0, 0] = 1.0
    assert replays == ["retraced"]


def test_a_new_constant_equal_to_the_old_one_replays_even_after_the_old_one_changes(replays, monkeypatch):
    x = np.array([0.3, -0.2])
    first = W.copy()
    monkeypatch.setitem(globals(), "W", first)
    warm(_tanh_sum, x, replays)
    second = first.copy()
    first[:] = 7.0  # the array the template was made with changes; f now uses an equal copy of its old values
    monkeypatch.setitem(globals(), "W", second)
    got = np.asarray(jaccli.hessian(_tanh_sum, x))
    assert replays == ["replayed"]
    np.testing.assert_allclose(got, _tanh_sum_hessian(x, second), rtol=1e-13)


def test_a_constant_of_another_memory_layout_is_traced_afresh(replays, monkeypatch):
    # equal values, but BLAS may round a transposed operand differently: the sweep is traced again
    x = np.array([0.3, -0.2])
    monkeypatch.setitem(globals(), "W", np.ascontiguousarray(W))
    warm(_tanh_sum, x, replays)
    monkeypatch.setitem(globals(), "W", np.asfortranarray(W))
    np.testing.assert_allclose(np.asarray(jaccli.hessian(_tanh_sum, x)), _tanh_sum_hessian(x, W), rtol=1e-13)
    assert replays == ["retraced"]


@pytest.mark.parametrize("view", [lambda a: a.T, lambda a: a[::-1, ::2], lambda a: np.broadcast_to(a[:1], a.shape),
                                  lambda a: a], ids=["transposed", "strided", "broadcast", "contiguous"])
def test_a_templates_copy_keeps_the_memory_layout(view):
    a = view(np.arange(24.0).reshape(4, 6))
    copy = sweep_templates._layout_copy(a, [1 << 20])
    assert copy.strides == a.strides and not np.shares_memory(copy, a)
    np.testing.assert_array_equal(copy, a)


def test_a_keyword_of_another_value_is_traced_afresh(replays):
    spec = ["ij,j->i"]
    A = np.array([[1.0, 2.0], [0.0, 3.0]])
    f = lambda x: np.sum(np.einsum(spec[0], A, x) ** 2)  # noqa: E731  (the subscripts are a keyword)
    x = np.array([1.0, -2.0])
    warm(f, x, replays)
    spec[0] = "ji,j->i"
    np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x)), 2.0 * A @ A.T, rtol=1e-15)
    assert replays == ["retraced"]


def test_f_returning_another_of_the_values_it_computes_is_traced_afresh(replays):
    which = [0]

    def f(x):
        cubes, squares = np.sum(x ** 3), np.sum(x ** 2)
        return (cubes, squares)[which[0]]

    x = np.array([1.0, 2.0])
    warm(f, x, replays)
    which[0] = 1
    np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x)), 2.0 * np.eye(2), rtol=1e-15)
    assert replays == ["retraced"]


def test_the_same_operations_on_another_line_are_traced_afresh(replays):
    # the recorded sweep names the user's line of each operation (errors, `jaccli check`)
    first = [True]

    def f(x):
        if first[0]:
            return np.sum(np.sin(x))
        return np.sum(np.sin(x))

    x = np.array([0.1, 0.2])
    warm(f, x, replays)
    first[0] = False
    rec = recorded_functions.gradient_recording(f, (x,), (0,), False, False)
    assert replays == ["retraced"]
    lines = {n.site[1] - f.__code__.co_firstlineno for n in rec.trace.nodes if n.site}
    assert 3 in lines and 2 not in lines  # the second return's line, never the first's


def test_a_closure_that_now_holds_another_value_is_traced_afresh(replays):
    scale = [2.0]
    f = lambda x: np.sum(scale[0] * x ** 3)  # noqa: E731
    x = np.array([1.0, -2.0])
    warm(f, x, replays)
    scale[0] = 5.0
    np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x)), np.diag(30.0 * x), rtol=1e-15)
    assert replays == ["retraced"]


def test_a_branch_that_f_takes_differently_records_other_operations(replays):
    def f(x):
        if x.sum() > 0:
            return np.sum(x ** 3)
        return np.sum(np.sin(x))

    warm(f, np.array([1.0, 2.0]), replays)
    for x in (np.array([-1.0, -2.0]), np.array([3.0, 1.0])):
        expected = np.diag(6.0 * x) if x.sum() > 0 else np.diag(-np.sin(x))
        np.testing.assert_allclose(np.asarray(jaccli.hessian(f, x)), expected, rtol=1e-14)
    assert replays == ["retraced", "retraced"]  # each point took the other branch from the last one's


@pytest.mark.parametrize("second", [np.linspace(0.1, 1, 5), np.linspace(0.1, 1, 4).astype(np.float32)],
                         ids=["shape", "dtype"])
def test_another_shape_or_dtype_is_traced_afresh(replays, second):
    warm(rosenbrock, np.linspace(0.1, 1, 4), replays)
    H = jaccli.hessian(rosenbrock, second)
    assert np.asarray(H).dtype == second.dtype
    np.testing.assert_allclose(np.asarray(H), rosen_hess(second.astype(float)), rtol=1e-5)
    assert replays == ["retraced"]


def test_another_floating_point_error_state_is_traced_afresh(replays):
    f = lambda x: np.sum(np.log(x) * x)  # noqa: E731
    warm(f, np.array([1.0, 2.0]), replays)
    jaccli.hessian(f, np.array([3.0, 1.0]))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(f, np.array([2.0, 4.0]))), np.diag([0.5, 0.25]))
    assert replays == ["replayed", "retraced"]


def test_constants_past_the_size_limit_make_no_template(replays, monkeypatch):
    monkeypatch.setattr(sweep_templates, "MAX_BYTES", W.nbytes - 1)
    x = np.array([0.3, -0.2])
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(jaccli.hessian(_tanh_sum, x)), _tanh_sum_hessian(x, W), rtol=1e-13)
    assert replays == ["traced"] * 3


def test_hvp_and_batched_hessians_replay(replays):
    rng = np.random.default_rng(4)
    for _ in range(3):
        x, v = rng.uniform(-1, 1, 6), rng.standard_normal(6)
        np.testing.assert_allclose(jaccli.hvp(rosenbrock, x, v)[1], rosen_hess(x) @ v, rtol=1e-12, atol=1e-9)
    batched = lambda X: np.sum(X ** 3, axis=1)  # noqa: E731
    for _ in range(3):
        X = rng.uniform(-1, 1, (4, 3))
        H = np.asarray(jaccli.hessian(batched, X, batch_axis=0))
        np.testing.assert_allclose(H, np.stack([np.diag(6 * row) for row in X]), rtol=1e-14)
    assert replays == ["traced", "traced", "replayed"] * 2


def test_strict_mode_checks_a_replayed_hessian(replays):
    f = lambda x, y: np.sum(x ** 2) + np.sum(y)  # noqa: E731
    args = (np.array([1.0, 2.0]), np.array([3.0]))
    warm(f, args, replays)
    with pytest.raises(jaccli.errors.StrictModeError):
        jaccli.hessian(f, args, strict=True)
    assert replays == ["replayed"]


def test_threads_replaying_one_template_each_get_their_own_hessian(replays):
    warm(rosenbrock, np.linspace(-1, 1, 20), replays)
    points = [np.random.default_rng(k).uniform(-2, 2, 20) for k in range(8)]
    results: dict = {}

    def work(k):
        for _ in range(5):
            results[k] = np.asarray(jaccli.hessian(rosenbrock, points[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, x in enumerate(points):
        np.testing.assert_allclose(results[k], rosen_hess(x), rtol=1e-12, atol=1e-9)
    assert replays == ["replayed"] * 40


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("f, hessian", [(rosenbrock, rosen_hess), (softmax_ce, softmax_hessian)], ids=["rosen", "softmax"])
def test_replays_share_the_outer_sweeps_plans(replays, monkeypatch, mode, f, hessian):
    from jaccli.engine import sweep_plans

    made, rules = [], []
    needed = sweep_plans._needed
    monkeypatch.setattr(sweep_plans, "_needed", lambda *a: made.append(1) or needed(*a))
    # the outer sweeps leave softmax_ce's shift out too (a plan's cut): no rule of the maximum is made
    prims = {n.prim.name: n.prim for n in Recording(softmax_ce, (np.ones(9),), (0,)).trace.nodes}
    for name, argnum in (("np.subtract", 1), ("np.max", 0)):
        for makers in (prims[name].vjps, prims[name].jvps):
            maker = makers[argnum]
            monkeypatch.setitem(makers, argnum, lambda *a, _m=maker, _n=name, **k: rules.append(_n) or _m(*a, **k))
    rng = np.random.default_rng(5)
    points = [rng.uniform(-1.5, 1.5, 9) for _ in range(5)]
    for x in points[:2]:
        np.asarray(jaccli.hessian(f, x, mode=mode))  # the second makes the template and its plans
    del made[:], rules[:]
    for x in points[2:]:
        got = np.asarray(jaccli.hessian(f, x, mode=mode))
        np.testing.assert_allclose(got, hessian(x), rtol=1e-12, atol=1e-12)
    assert replays == ["traced", "traced", "replayed", "replayed", "replayed"]
    assert made == []  # no plan was made again: the template's served every replay
    if f is softmax_ce:
        assert rules == []
    monkeypatch.setattr(sweep_plans, "_needed", needed)
    np.testing.assert_array_equal(got, traced_afresh(f, points[-1], mode=mode))


def shifted(z, c):
    return c + np.log(np.sum(np.exp(z - c)))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_shift_given_as_an_input_stays_cut_in_replays(replays, monkeypatch, mode):
    rules = []
    prims = {n.prim.name: n.prim for n in Recording(shifted, (np.ones(4), 0.5), (0, 1)).trace.nodes}
    for makers in (prims["np.subtract"].vjps, prims["np.subtract"].jvps):
        maker = makers[1]
        monkeypatch.setitem(makers, 1, lambda *a, _m=maker, **k: rules.append(1) or _m(*a, **k))
    rng = np.random.default_rng(6)
    for _ in range(5):
        z, c = rng.uniform(-2, 2, 4), np.float64(rng.uniform(-1, 1))
        H = jaccli.hessian(shifted, (z, c), mode=mode)
        p = np.exp(z - z.max()) / np.sum(np.exp(z - z.max()))
        np.testing.assert_allclose(np.asarray(H[0][0]), np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-14)
        assert not np.asarray(H[0][1]).any() and not np.asarray(H[1][0]).any() and np.asarray(H[1][1]) == 0.0
    assert replays == ["traced", "traced", "replayed", "replayed", "replayed"]
    assert rules == []  # no sweep carries c's derivative, in the traced calls nor in the replays


def test_shared_plans_serve_only_outputs_inside_the_shared_part():
    from jaccli.engine import sweep_plans, tape

    trace = tape.Trace()
    trace.shared_plans = (4, {})
    assert sweep_plans._shared(trace, ("fwd", ((3, None),), 1)) is trace.shared_plans[1]
    assert sweep_plans._shared(trace, ("fwd", ((3, None), (4, None)), 1)) is None  # node 4 is past the shared part
    trace.shared_plans = None
    assert sweep_plans._shared(trace, ("rev", ((0, None),), 1)) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1), st.sampled_from(["reverse", "forward"]))
def test_random_programs_replay_to_the_traced_hessian(program, seed, mode):
    sx, sy, steps = program
    rng = np.random.default_rng(seed)
    f = build(steps)
    y = rng.uniform(-1, 1, sy)

    def loss(x):
        return np.sum(np.sin(f(x, y)))

    sweep_templates.clear()
    for _ in range(2):
        jaccli.hessian(loss, rng.uniform(-1, 1, sx), mode=mode)
    x = rng.uniform(-1, 1, sx)
    traced = []
    gradient = sweep_templates.gradient

    def spy(f, key, trace, ref, shape, sweep, said=None):
        return gradient(f, key, trace, ref, shape, lambda: traced.append(1) or sweep())
    sweep_templates.gradient = spy
    try:
        H = np.asarray(jaccli.hessian(loss, x, mode=mode))
    finally:
        sweep_templates.gradient = gradient
    assert traced == []  # replayed
    np.testing.assert_array_equal(H, traced_afresh(loss, x, mode=mode))
    fd = fd_jacobian(lambda x: jaccli.grad(loss, x), (x,), 0)
    np.testing.assert_allclose(H, fd, rtol=1e-4, atol=1e-5)


def _blocks(H):
    if isinstance(H, tuple):
        return [b for row in H for b in (_blocks(row))]
    return [np.asarray(H)]


def _loss_template(*args, _fn=None, _vs=None):
    out = _fn(*args)
    return sum(np.sum(v * o) for v, o in zip(_vs, out if isinstance(out, tuple) else (out,)))


def _scalarised(fn, args, rng):
    """<v, fn(*args)> for a fixed random v, as a function of fn's own module (whose np it sees)."""
    out = fn(*args)
    vs = [rng.standard_normal(np.shape(o)) for o in (out if isinstance(out, tuple) else (out,))]
    loss = types.FunctionType(_loss_template.__code__, getattr(fn, "__globals__", globals()), "loss")
    loss.__kwdefaults__ = {"_fn": fn, "_vs": vs}
    return loss


# Rows whose function writes into an array (y[i] = v, fill): a recording written in place makes
# no template, and its gradient's sweep is traced each time.
WRITES_IN_PLACE = {"x.copy()", "x.fill()", "setitem-basic", "setitem-broadcast", "np.zeros_like", "np.ones_like",
                   "np.full_like", "np.empty_like"}


@pytest.mark.parametrize("case", [c for c in CASES if c.order >= 2], ids=str)
def test_every_rule_replays_to_the_traced_hessian_at_a_moved_point(case, replays):
    """Every primitive's sweep, replayed at a point moved by 0.1% (guards decide), is the traced one."""
    rng = np.random.default_rng(7)
    loss = _scalarised(case.fn, case.args, rng)
    warm(loss, case.args, replays, wrt=case.wrt)
    moved = list(case.args)
    for j in case.wrt:
        moved[j] = moved[j] * (1.0 + 1e-3 * rng.uniform(-1, 1, np.shape(moved[j])))
    got = _blocks(jaccli.hessian(loss, tuple(moved), wrt=case.wrt))
    fresh = _blocks(traced_afresh(loss, tuple(moved), wrt=case.wrt))
    expected = ("traced",) if str(case) in WRITES_IN_PLACE else ("replayed", "retraced")  # retraced: a guard
    assert replays[0] in expected and replays[1:] == ["traced"]  # the moved point, then traced afresh
    for a, b in zip(got, fresh):
        np.testing.assert_array_equal(a, b)
