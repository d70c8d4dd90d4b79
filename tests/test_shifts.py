"""Shifts that cancel out of the outputs (engine/cancelled_shifts.py): found where they cancel, never elsewhere,
and the derivatives without them equal closed forms and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaccli
from jaccli.engine import cancelled_shifts as shifts
from jaccli.engine.sweep_plans import plan_reverse
from jaccli.engine.recording import Recording

from .helpers import central_diff


def cut_of(f, *args, wrt=0):
    """Names of the nodes a reverse sweep of f's first output does not follow out of."""
    rec = Recording(f, args, (wrt,))
    plan = plan_reverse(rec.trace, (rec.out_refs[0],), rec.in_nodes[0].deps)
    return [rec.trace.nodes[i].prim.name for i in sorted(plan.cut)]


def softmax(z):
    p = np.exp(z - z.max())
    return p / p.sum()


def logsumexp(z):
    c = np.max(z)
    return c + np.log(np.sum(np.exp(z - c)))


def stable_softmax(z):
    c = np.max(z)
    e = np.exp(z - c)
    return e / np.sum(e)


def log_softmax(z):
    c = np.max(z)
    return (z - c) - np.log(np.sum(np.exp(z - c)))


Z = np.array([0.3, -1.2, 2.0, 0.7, 1.1])


# -- where a shift cancels --------------------------------------------------------------------
@pytest.mark.parametrize("f", [logsumexp, stable_softmax, log_softmax,
                               lambda z: np.log(np.sum(np.exp(z - z.max()))) + z.max(),  # the other order
                               lambda z: np.sum(np.exp(z - np.max(z)) * 2.0) / np.sum(np.exp(z - np.max(z))),
                               lambda z: -(z - z.max()).reshape(1, -1)[0, 2] + np.log(np.sum(np.exp(z - z.max())))],
                         ids=["logsumexp", "softmax", "log_softmax", "add_back_after", "ratio_of_sums", "ce_indexed"])
def test_a_shift_that_cancels_is_cut(f):
    cut = cut_of(f, Z)
    assert cut and set(cut) == {"np.max"}  # z.max() written twice is one shift, cut as a whole
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, Z)), central_diff(f, Z), rtol=1e-7, atol=1e-8)


def test_the_cut_shift_gives_the_closed_forms_at_every_order():
    p = softmax(Z)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(logsumexp, Z)), p, rtol=1e-15, atol=1e-16)
    H = np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(np.asarray(jaccli.hessian(logsumexp, Z)), H, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(stable_softmax, Z)), H, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(log_softmax, Z)), np.eye(5) - p[None, :],
                               rtol=1e-13, atol=1e-15)
    # third derivative of logsumexp: T[i,j,k] = d/dz_k (diag(p) - p p^T)[i, j]
    third = np.asarray(jaccli.jacobian(lambda z: jaccli.hessian(logsumexp, z, create_graph=True), Z))
    d = np.eye(5)  # dH_ij/dz_k, with dp_i/dz_k = p_i d_ik - p_i p_k
    T = np.einsum("i,ij,ik->ijk", p, d, d) - np.einsum("i,j,ik->ijk", p, p, d) \
        - np.einsum("i,j,jk->ijk", p, p, d) - np.einsum("i,ij,k->ijk", p, d, p) + 2 * np.einsum("i,j,k->ijk", p, p, p)
    np.testing.assert_allclose(third, T, rtol=1e-12, atol=1e-15)


def test_the_hessians_sweeps_cut_the_shift_too():
    # the gradient recorded for a Hessian has no path through the maximum, and the forward sweep
    # over it cuts the same shift: the softmax Hessian is one rank-one term plus a diagonal
    z = 2.0 * np.random.default_rng(1).standard_normal(40)
    H = np.asarray(jaccli.hessian(logsumexp, z))
    p = softmax(z)
    np.testing.assert_allclose(H, np.diag(p) - np.outer(p, p), rtol=1e-12, atol=1e-17)
    np.testing.assert_array_equal(H, H.T)


def test_ties_of_the_maximum_leave_no_trace():
    # two equal maxima: the tie weights (1/2 each) would only ever be multiplied by a zero
    z = np.array([2.0, -1.0, 2.0, 0.5])
    p = softmax(z)
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(logsumexp, z)), p, rtol=1e-15, atol=0)
    np.testing.assert_allclose(np.asarray(jaccli.hessian(logsumexp, z)), np.diag(p) - np.outer(p, p),
                               rtol=1e-13, atol=1e-17)


def test_a_shift_given_as_an_input_has_a_zero_derivative():
    f = lambda z, c: c + np.log(np.sum(np.exp(z - c)))  # noqa: E731 - equals logsumexp(z) for every c
    c = np.float64(0.7)
    Jz, Jc = jaccli.jacobian(f, (Z, c))
    np.testing.assert_allclose(np.asarray(Jz), softmax(Z), rtol=1e-15, atol=1e-16)
    assert np.asarray(Jc) == 0.0
    Hzz = np.asarray(jaccli.hessian(lambda z: f(z, c), Z))
    np.testing.assert_allclose(Hzz, np.diag(softmax(Z)) - np.outer(softmax(Z), softmax(Z)), rtol=1e-13, atol=1e-16)
    (_, Hzc), (_, Hcc) = jaccli.hessian(f, (Z, c))
    assert not np.asarray(Hzc).any() and np.asarray(Hcc) == 0.0
    for mode in ("forward", "reverse"):
        assert np.asarray(jaccli.jacobian(f, (Z, c), mode=mode)[1]) == 0.0


# -- where it does not ------------------------------------------------------------------------
@pytest.mark.parametrize("f, extra", [
    (lambda z: np.log(np.sum(np.exp(z - np.max(z)))), -1.0),  # not added back
    (lambda z: np.max(z) + np.log(np.sum(np.exp(z - np.max(z)))) + np.max(z), 1.0),  # used once more
    (lambda z: 2.0 * np.max(z) + np.log(np.sum(np.exp(z - np.max(z)))), 1.0),  # added back twice
    (lambda z: np.max(z) + np.log(np.sum(np.exp(2.0 * (z - np.max(z))))) / 2.0, None),
    (lambda z: np.max(z) + np.log(np.sum(np.exp(z - np.max(z)) + 1.0)), None),  # + 1 breaks the factor out
    (lambda z: np.max(z) + np.log(np.sum(np.exp(z - np.max(z)) ** 2)), None),
    (lambda z: np.max(z) ** 2 + np.log(np.sum(np.exp(z - np.max(z)))), None),
    (lambda z: np.sum(np.exp(z - np.max(z))), None),
    (lambda z: np.max(z) + np.log(np.sum(np.exp(z - np.max(z)) * (1.0 + (z - np.max(z)) ** 2))), None),
    (lambda z: np.max(z) + np.log(np.sum(np.exp(z - np.max(z)))) + np.sum(z - np.max(z)) / 4.0, None),
    # the sum of 5 shifted entries carries -5 c, not -c: 2c - 5c - c + ... is not free of c
    (lambda z: np.max(z) + np.max(z) + np.sum(z - np.max(z)) + np.log(np.sum(np.exp(z - np.max(z)))), None),
    (lambda z: np.max(z) + np.log(np.sum(np.exp(np.exp(z - np.max(z))))), None),
    (lambda z: np.max(z) + np.log(np.sum(np.exp(z - np.max(z)) / (10.0 - np.sum(z - np.max(z))))), None),
], ids=["not_added_back", "used_again", "added_twice", "scaled", "plus_one", "squared", "c_squared", "no_log",
        "times_shifted", "sum_of_shifted", "sum_of_shifted_plain", "exp_of_exp", "over_shifted_sum"])
def test_a_shift_that_does_not_cancel_is_followed(f, extra):
    assert cut_of(f, Z) == []
    J = np.asarray(jaccli.jacobian(f, Z))
    np.testing.assert_allclose(J, central_diff(f, Z), rtol=1e-7, atol=1e-8)
    if extra is not None:  # the derivative through max(z) lands on its argmax: softmax + extra * e_k
        want = softmax(Z) + extra * (Z == Z.max())
        np.testing.assert_allclose(J, want, rtol=1e-14, atol=1e-15)


def test_a_shift_with_more_than_one_element_is_not_a_candidate():
    # a per-row maximum (keepdims) shifts each row by its own value: left to the sweeps as written
    Zb = np.array([[0.3, -1.2, 2.0], [0.7, 1.1, -0.4]])

    def row_lse(Z):
        c = np.max(Z, axis=1, keepdims=True)
        return np.sum(c + np.log(np.sum(np.exp(Z - c), axis=1, keepdims=True)))

    assert cut_of(row_lse, Zb) == []
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(row_lse, Zb)),
                               np.stack([softmax(r) for r in Zb]), rtol=1e-14, atol=1e-16)


def test_a_sum_over_entries_with_different_shifts_is_followed():
    # each row has its own c: summed over every entry, the shifts do not factor out
    Zb = np.array([[0.3, -1.2, 2.0], [0.7, 1.1, -0.4]])

    def mixed(Z):
        c = np.max(Z, axis=1, keepdims=True)
        return c[0, 0] + np.log(np.sum(np.exp(Z - c)))

    assert cut_of(mixed, Zb) == []
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(mixed, Zb)), central_diff(mixed, Zb), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_cut_shift_costs_no_rule(monkeypatch, mode):
    # no sweep asks for the derivative of z - c in c, nor for the maximum's tie weights, nor carries
    # the tangent of a shift given as an input
    made = []
    prims = {n.prim.name: n.prim for n in Recording(logsumexp, (Z,), (0,)).trace.nodes}
    for name, argnum in (("np.subtract", 1), ("np.max", 0)):
        for makers in (prims[name].vjps, prims[name].jvps):
            maker = makers[argnum]
            monkeypatch.setitem(makers, argnum, lambda *a, _m=maker, _n=name, **k: made.append(_n) or _m(*a, **k))
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(logsumexp, Z, mode=mode)), softmax(Z), rtol=1e-15, atol=1e-16)
    np.asarray(jaccli.hessian(logsumexp, Z))
    shifted = lambda z, c: c + np.log(np.sum(np.exp(z - c)))  # noqa: E731
    assert np.asarray(jaccli.jacobian(shifted, (Z, np.float64(0.7)), mode=mode)[1]) == 0.0
    assert made == []
    np.asarray(jaccli.jacobian(lambda z: np.log(np.sum(np.exp(z - np.max(z)))), Z, mode=mode))  # no cut here
    assert sorted(made) == ["np.max", "np.subtract"]


def test_two_values_of_one_argument_are_two_shifts():
    # a sum and a trace of the same matrix: the same operation on the same traced value, told apart
    # only by the subscripts; c1 is subtracted, c2 added back, and nothing cancels
    def two_shifts(z):
        m = np.reshape(z, (2, 2))
        c1, c2 = np.einsum("ij->", m), np.einsum("ii->", m)
        return c2 + np.log(np.sum(np.exp(z - c1)))

    z = np.array([0.3, -1.2, 2.0, 0.7])
    assert cut_of(two_shifts, z) == []
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(two_shifts, z)), central_diff(two_shifts, z),
                               rtol=1e-7, atol=1e-8)


def test_only_the_first_few_shifts_are_proved():
    # 20 softmaxes, each with its own shift: the first _MAX_SHIFTS are candidates, the rest are swept
    # as written (a bound on the work a plan does, not on what is correct)
    def many(z):
        return sum(logsumexp(z * k) for k in range(1, 21))

    cut = cut_of(many, Z)
    assert len(cut) == shifts._MAX_SHIFTS
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(many, Z)), sum(k * softmax(k * Z) for k in range(1, 21)),
                               rtol=1e-13, atol=1e-14)


def test_scalar_shifts_are_not_candidates():
    # exp(a - b) of one-element values (a loop of scalar operations) shifts no array: no proof is
    # tried, though this ratio is as free of max(z) as a softmax
    f = lambda z: np.exp(z[0] - np.max(z)) / np.exp(z[1] - np.max(z))  # noqa: E731
    assert cut_of(f, Z) == []
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(f, Z)), central_diff(f, Z), rtol=1e-7, atol=1e-9)


def test_a_shift_the_outputs_return_is_followed():
    def both(z):
        c = np.max(z)
        return np.stack([c + np.log(np.sum(np.exp(z - c))), c])

    assert cut_of(both, Z) == []
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(both, Z)),
                               np.stack([softmax(Z), (Z == Z.max()).astype(float)]), rtol=1e-14, atol=1e-15)


def test_the_cut_belongs_to_the_outputs_swept():
    # output 0 is free of c, output 1 is not: a sweep of output 0 alone cuts, a sweep of both does not
    def two(z):
        c = np.max(z)
        return c + np.log(np.sum(np.exp(z - c))), c * z[0]

    rec = Recording(two, (Z,), (0,))
    deps = rec.in_nodes[0].deps
    assert plan_reverse(rec.trace, (rec.out_refs[0],), deps).cut
    assert not plan_reverse(rec.trace, tuple(rec.out_refs), deps).cut
    J0, J1 = jaccli.jacobian(two, Z)
    np.testing.assert_allclose(np.asarray(J0), softmax(Z), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(np.asarray(J1), central_diff(lambda z: two(z)[1], Z), rtol=1e-7, atol=1e-8)


# -- random expressions of a shift, against finite differences ----------------------------------
# Each expression is a function of z and c = max(z); some cancel c, most do not. Whatever the analysis
# decides, the gradient must be the true one.
_LEAVES = st.sampled_from(["c", "z", "z - c", "c - z", "lse", "softmax"])


def _expressions():
    def extend(children):
        return st.one_of(
            st.tuples(st.sampled_from(["exp", "neg", "sum", "max", "reshape", "first"]), children),
            st.tuples(st.sampled_from(["add", "sub", "mul", "div", "logsum"]), children, children))
    return st.recursive(_LEAVES, extend, max_leaves=6)


def _build(expr, z, c):
    if isinstance(expr, str):
        if expr == "lse":
            return c + np.log(np.sum(np.exp(z - c)))
        if expr == "softmax":
            return np.exp(z - c) / np.sum(np.exp(z - c))
        return {"c": c, "z": z, "z - c": z - c, "c - z": c - z}[expr]
    op, *args = expr
    vals = [_build(a, z, c) for a in args]
    if op == "exp":
        return np.exp(0.3 * vals[0])
    if op == "neg":
        return -vals[0]
    if op == "sum":
        return np.sum(vals[0])
    if op == "max":
        return np.max(vals[0])
    if op == "reshape":
        return np.reshape(vals[0], (1, -1)) if np.ndim(vals[0]) == 1 else vals[0]
    if op == "first":
        return np.ravel(vals[0])[0]
    a, b = vals
    if np.ndim(a) == 2 or np.ndim(b) == 2:
        a, b = np.ravel(a), np.ravel(b)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / (2.0 + b * b)
    return np.log(np.sum(np.exp(0.3 * a))) + b  # "logsum"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_expressions())
def test_random_expressions_of_a_shift_have_the_true_gradient(expr):
    z = np.array([0.31, -0.72, 0.93, 0.18])  # one clear maximum: finite differences stay on one side

    def f(z):
        return np.sum(_build(expr, z, np.max(z)))

    got = np.asarray(jaccli.jacobian(f, z))
    want = central_diff(f, z)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("outputs", ["first", "both"])
def test_a_plan_by_marks_is_the_plan_by_sets(outputs):
    # (sweep_plans._needed walks marks by index down from the highest output: the nodes a search from the
    # outputs meets, not past a cut, highest index first)
    from jaccli.engine import sweep_plans

    def by_sets(refs, deps, cut):
        needed, stack = set(), [n for n, _ in refs if n.deps & deps]
        while stack:
            node = stack.pop()
            needed.add(node.index)
            stack += [p for _, p, _ in node.parents if p.deps & deps and p.index not in needed | cut]
        return sorted(needed, reverse=True)

    def f(z):
        c = np.max(z)
        unused = np.sin(z) * 3.0  # on no path to an output
        return c + np.log(np.sum(np.exp(z - c))), unused[0] * 0.0 + c * z[1]

    rec = Recording(f, (Z,), (0,))
    refs = (rec.out_refs[0],) if outputs == "first" else tuple(rec.out_refs)
    deps = rec.in_nodes[0].deps
    plans = []
    for cut in (frozenset(), frozenset(n.index for n in rec.trace.nodes if n.prim.name == "np.max")):
        plan = sweep_plans._needed(rec.trace, refs, deps, cut)
        plans.append([n.index for n in plan])
        assert plans[-1] == by_sets(refs, deps, cut) and plan.cut == cut
    assert plans[1] != plans[0]
    np.testing.assert_allclose(np.asarray(jaccli.jacobian(lambda z: f(z)[0], Z)), softmax(Z), rtol=1e-14, atol=1e-16)
