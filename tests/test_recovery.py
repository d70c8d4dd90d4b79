"""Plans and recovery (jaccli.sparse): the compressed products J @ S, S^T @ J and H @ S give back J and H exactly."""
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from jaccli.sparse import Plan, bidirectional_plan, hessian_plan, jacobian_plan, seed_matrix
from tests.sparse_helpers import arrowhead, banded, random_patterns, random_values, stencil5


def compress(plan, J):
    """The products a sweep would compute for the plan, from an explicit matrix."""
    J = sp.csr_array(J)
    if plan.mode == "forward" or plan.mode == "symmetric":
        return (J @ plan.forward_seeds(),)
    if plan.mode == "reverse":
        return (plan.reverse_seeds().T @ J,)
    return J @ plan.forward_seeds(), plan.reverse_seeds().T @ J


def assert_exact(recovered, J):
    assert isinstance(recovered, sp.csr_array)
    assert recovered.shape == J.shape
    np.testing.assert_array_equal(recovered.toarray(), sp.csr_array(J).toarray())


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional", "auto"])
def test_jacobian_round_trip(mode):
    rng = np.random.default_rng(0)
    for p in (stencil5(10), banded(40, 2, 1, m=35), arrowhead(30), sp.random_array((40, 25), density=0.1, rng=rng)):
        J = random_values(p, rng)
        plan = jacobian_plan(p, mode)
        assert plan.mode == mode or mode == "auto"
        assert_exact(plan.recover(*[np.asarray(sp.csr_array(c).toarray()) for c in compress(plan, J)]), J)


def test_plan_reports_its_sweeps_and_seeds():
    p = banded(50, 1, 1)
    plan = jacobian_plan(p)
    assert plan.mode == "forward" and plan.sweeps == plan.forward_colors == 3 and plan.reverse_colors == 0
    S = plan.forward_seeds()
    assert S.shape == (50, 3) and np.all(S.sum(axis=1) == 1)
    assert "forward" in plan.tried  # reverse is not coloured: its bound (3 per column) cannot beat 3
    assert jacobian_plan(p, "reverse").mode == "reverse"


def test_arrowhead_auto_plan_is_bidirectional_with_three_sweeps():
    rng = np.random.default_rng(1)
    p = arrowhead(200)
    plan = jacobian_plan(p)
    assert plan.mode == "bidirectional" and plan.sweeps == 3
    J = random_values(p, rng)
    fwd, rev = compress(plan, J)
    assert fwd.shape == (200, 2) and rev.shape == (1, 200)
    assert_exact(plan.recover(fwd.toarray(), rev.toarray()), J)


def test_hessian_round_trip_is_exactly_symmetric():
    rng = np.random.default_rng(2)
    for p in (banded(60, 1, 1), banded(30, 3, 3), stencil5(9), sp.random_array((30, 30), density=0.08, rng=rng)):
        H = random_values(p, rng, symmetric=True)
        plan = hessian_plan(p, recovery="direct")
        assert plan.mode == "symmetric" and plan.recovery == "direct"
        recovered = plan.recover(H @ plan.forward_seeds())
        np.testing.assert_array_equal(recovered.toarray(), recovered.T.toarray())
        np.testing.assert_array_equal(recovered.toarray(), H.toarray())


def test_tridiagonal_hessian_takes_three_sweeps_direct_and_two_by_substitution():
    p = banded(1000, 1, 1)
    assert hessian_plan(p, recovery="direct").sweeps == 3
    assert hessian_plan(p, recovery="substitution").sweeps == 2
    assert hessian_plan(p).sweeps == 2 and hessian_plan(p).recovery == "substitution"  # no sweep estimate: search all


def test_automatic_recovery_weighs_colouring_time_against_the_sweeps_it_saves():
    # the acyclic search costs ~1.5e-5 s per graph entry (2 * 999 here, ~0.03 s) and saves one sweep of three
    p = banded(1000, 1, 1)
    cheap = hessian_plan(p, sweep_s=1e-3)
    assert cheap.recovery == "direct" and cheap.sweeps == 3
    assert not any(name.startswith("acyclic") for name in cheap.tried["symmetric"])
    costly = hessian_plan(p, sweep_s=1.0)
    assert costly.recovery == "substitution" and costly.sweeps == 2


def test_recover_keeps_the_pattern_and_rejects_wrong_products():
    p = banded(10, 1, 1)
    plan = jacobian_plan(p, "forward")
    out = plan.recover(np.zeros((10, 3)))
    assert out.nnz == p.nnz  # explicit zeros stay: the structure is the pattern's
    with pytest.raises(ValueError):
        plan.recover(np.zeros((10, 4)))
    with pytest.raises(ValueError):
        plan.recover(np.zeros((10, 3)), np.zeros((1, 10)))
    with pytest.raises(ValueError):
        Plan("sideways", p)


def test_symmetric_recovery_refuses_a_coloring_that_is_not_star():
    p = stencil5(4)
    checker = (np.add.outer(np.arange(4), np.arange(4)).ravel() % 2).astype(np.int64)
    plan = Plan("symmetric", sp.csr_array(p + sp.eye_array(16, dtype=bool)), column_colors=checker)
    with pytest.raises(ValueError):
        plan.recover(np.zeros((16, 2)))


def test_seed_matrix_skips_unseeded_vertices():
    S = seed_matrix(np.array([0, -1, 1, 0]))
    np.testing.assert_array_equal(S.toarray(), [[1, 0], [0, 0], [0, 1], [1, 0]])


@settings(max_examples=60, deadline=None)
@given(random_patterns(size=30, max_density=0.6), st.sampled_from(["forward", "reverse", "bidirectional", "auto"]))
def test_random_jacobians_recover_exactly(case, mode):
    p, rng = case
    J = random_values(p, rng)
    plan = jacobian_plan(p, mode)
    assert_exact(plan.recover(*compress(plan, J)), J)


@settings(max_examples=40, deadline=None)
@given(random_patterns(square=True, size=30, max_density=0.6))
def test_random_hessians_recover_exactly_and_symmetric(case):
    p, rng = case
    H = random_values(p, rng, symmetric=True)
    plan = hessian_plan(p, recovery="direct")
    recovered = plan.recover(H @ plan.forward_seeds())
    dense = recovered.toarray()
    np.testing.assert_array_equal(dense, dense.T)
    np.testing.assert_array_equal(dense, H.toarray())


def test_bidirectional_split_by_columns_recovers():
    rng = np.random.default_rng(4)
    p = sp.csr_array(arrowhead(25).T.toarray() | banded(25, 1, 0).toarray())
    plan = bidirectional_plan(p)
    J = random_values(p, rng)
    assert_exact(plan.recover(*compress(plan, J)), J)


def assert_close_and_symmetric(recovered, H):
    dense = recovered.toarray()
    np.testing.assert_array_equal(dense, dense.T)
    np.testing.assert_allclose(dense, H.toarray(), rtol=0, atol=1e-12 * max(1.0, abs(H).max()))


def test_substitution_takes_fewer_sweeps_and_recovers_to_rounding():
    rng = np.random.default_rng(5)
    for p, direct, acyclic in ((banded(500, 1, 1), 3, 2), (stencil5(15), 6, 4)):
        plan = hessian_plan(p, recovery="substitution")
        assert hessian_plan(p, recovery="direct").sweeps == direct and plan.sweeps == acyclic
        H = random_values(plan.pattern, rng, symmetric=True)
        assert_close_and_symmetric(plan.recover(H @ plan.forward_seeds()), H)
        with pytest.raises(ValueError):
            plan.recover(np.zeros((p.shape[0], acyclic + 1)))


@settings(max_examples=40, deadline=None)
@given(random_patterns(square=True, size=30, max_density=0.6))
def test_random_hessians_recover_by_substitution(case):
    p, rng = case
    plan = hessian_plan(p, recovery="substitution")
    H = random_values(plan.pattern, rng, symmetric=True)
    assert_close_and_symmetric(plan.recover(H @ plan.forward_seeds()), H)
