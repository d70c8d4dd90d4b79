"""Colourings of sparsity patterns (jaccli.sparse): validity by brute force, and colour counts against known optima."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from jaccli.sparse import (ORDERINGS, best_columns, best_rows, best_star, bidirectional_plan, greedy_columns,
                           greedy_rows, greedy_star, improve, is_star_coloring, jacobian_plan)
from jaccli.sparse import compiled_grouping, greedy as engines
from jaccli.sparse.acyclic import best_acyclic, greedy_acyclic
from jaccli.sparse.orderings import ordering
from jaccli.sparse.patterns import Bipartite, column_graph
from jaccli.sparse.star import adjacency
from tests.sparse_helpers import (arrowhead, assert_acyclic_coloring, assert_column_coloring, assert_row_coloring,
                                  assert_star_coloring, banded, block_diagonal, n_colors, optimal_star_colors,
                                  random_patterns, stencil5)


@pytest.mark.parametrize("order", ORDERINGS)
def test_every_ordering_gives_a_valid_column_and_row_coloring(order):
    p = stencil5(9)
    assert_column_coloring(p, greedy_columns(p, order))
    rect = sp.random_array((30, 20), density=0.15, rng=np.random.default_rng(1), format="csr")
    assert_column_coloring(rect, greedy_columns(rect, order))
    assert_row_coloring(rect, greedy_rows(rect, order))


def test_tridiagonal_takes_three_colors():
    p = banded(100, 1, 1)
    colors, tried = best_columns(p)
    assert_column_coloring(p, colors)
    assert n_colors(colors) == 3 and tried["natural"] == 3
    assert n_colors(best_rows(p)[0]) == 3


@pytest.mark.parametrize("b", [1, 2, 3, 5])
def test_band_of_half_bandwidth_b_takes_2b_plus_1(b):
    p = banded(60, b, b)
    colors, _ = best_columns(p)
    assert_column_coloring(p, colors)
    assert n_colors(colors) == 2 * b + 1


def test_five_point_stencil_takes_at_most_six():
    # the optimum is 5 ((i + 2j) mod 5); natural-order greedy gives 7 (sparsity.md §4.2)
    for N in (12, 40):
        p = stencil5(N)
        colors, tried = best_columns(p)
        assert_column_coloring(p, colors)
        assert tried["natural"] == 7
        assert n_colors(colors) <= 6


def test_periodic_roll_stencils():
    n = 30  # a circulant tridiagonal (np.roll by ±1): 3 colours when 3 divides n
    i = np.arange(n)
    p = sp.csr_array((np.ones(3 * n, dtype=bool), (np.tile(i, 3), np.concatenate([i, (i + 1) % n, (i - 1) % n]))))
    colors, _ = best_columns(p)
    assert_column_coloring(p, colors)
    assert n_colors(colors) == 3
    torus = stencil5(20, periodic=True)
    colors, _ = best_columns(torus)
    assert_column_coloring(torus, colors)
    assert 5 <= n_colors(colors) <= 8


def test_block_diagonal_takes_the_block_size():
    p = block_diagonal(7, 4)
    for colors in (best_columns(p)[0], best_rows(p)[0]):
        assert n_colors(colors) == 4


def test_arrowhead_takes_n_one_way_and_three_sweeps_both_ways():
    n = 40
    p = arrowhead(n)
    assert n_colors(best_columns(p)[0]) == n
    plan = bidirectional_plan(p)
    assert plan.sweeps == 3 and plan.reverse_colors == 1 and plan.forward_colors == 2
    auto = jacobian_plan(p)
    assert auto.mode == "bidirectional" and auto.sweeps == 3
    assert jacobian_plan(p.T).sweeps == 3


def test_jones_plassmann_equals_the_sequential_greedy_in_the_same_order():
    rng = np.random.default_rng(3)
    p = sp.random_array((80, 60), density=0.06, rng=rng, format="csr") + sp.eye_array(80, 60)
    bip = Bipartite.from_pattern(p)
    for order in (rng.permutation(60), np.argsort(-bip.col_counts, kind="stable")):
        priority = np.empty(60, dtype=np.int64)
        priority[order] = np.arange(60, 0, -1)
        jp = engines.jones_plassmann(bip, priority, max_rounds=10 ** 6)
        np.testing.assert_array_equal(jp, engines.sequential(bip, order))
        np.testing.assert_array_equal(jp, engines.sequential_loop(bip, order))


def test_more_than_64_colors_and_empty_columns():
    p = sp.csr_array(np.ones((3, 150), dtype=bool))
    p = sp.hstack([p, sp.csr_array((3, 5), dtype=bool)]).tocsr()
    for order in ("natural", "random", "largest_first"):
        colors = greedy_columns(p, order)
        assert n_colors(colors) == 150 and np.all(colors[150:] == -1)
        assert_column_coloring(p, colors)


def test_iterated_greedy_never_adds_colors():
    p = stencil5(15)
    start = greedy_columns(p, "random")
    better = improve(p, start)
    assert_column_coloring(p, better)
    assert n_colors(better) <= n_colors(start)


def test_star_coloring_of_tridiagonal_and_banded_hessians():
    for b, expected in ((1, 3), (2, 5)):
        p = banded(7, b, b)
        assert optimal_star_colors(p) == expected  # exhaustive, on 7 vertices
        colors, _ = best_star(banded(50, b, b))
        assert_star_coloring(banded(50, b, b), colors)
        assert n_colors(colors) == expected


def test_star_coloring_of_a_grid_hessian():
    p = stencil5(12)
    colors, _ = best_star(p)
    assert_star_coloring(p, colors)
    assert n_colors(colors) <= 6  # star chromatic number of a grid: 5


def test_acyclic_colorings_of_known_graphs():
    # a path is a tree (2 colours); the grid needs 3, greedy gets at most 4 (sparsity.md §7.3: H2 acyclic <= 4)
    for p, most in ((banded(40, 1, 1), 2), (stencil5(12), 4), (banded(30, 2, 2), 3)):
        g = adjacency(p)
        colors, tried = best_acyclic(g)
        assert_acyclic_coloring(p, colors)
        assert n_colors(colors) <= most


def test_distance2_colorings_are_star_colorings_and_a_plain_proper_coloring_is_not():
    p = stencil5(6)
    assert is_star_coloring(p, greedy_columns(p))
    checker = np.add.outer(np.arange(6), np.arange(6)).ravel() % 2  # proper, but with bicoloured paths
    assert not is_star_coloring(p, checker)


def test_column_graph_of_an_arrowhead():
    p = arrowhead(10)
    g = column_graph(Bipartite.from_pattern(p))
    assert g.nnz == 2 * 9 + 9 * 8  # column 0 meets all, and every pair of others meets in row 0


@settings(max_examples=60, deadline=None)
@given(random_patterns(), st.sampled_from(ORDERINGS))
def test_random_patterns_get_valid_colorings(case, order):
    p, _ = case
    assert_column_coloring(p, greedy_columns(p, order))
    assert_row_coloring(p, greedy_rows(p, order))
    colors, _ = best_columns(p)
    assert_column_coloring(p, colors)


@settings(max_examples=40, deadline=None)
@given(random_patterns(square=True), st.sampled_from(["natural", "largest_first", "random"]))
def test_random_symmetric_patterns_get_star_colorings(case, order):
    p, _ = case
    g = adjacency(p)
    colors = greedy_star(g, ordering(order, g))
    assert_star_coloring(p, colors)
    assert is_star_coloring(p, colors)
    best, _ = best_star(p)
    assert_star_coloring(p, best)


@settings(max_examples=40, deadline=None)
@given(random_patterns(square=True), st.sampled_from(["natural", "largest_first", "random"]))
def test_random_symmetric_patterns_get_acyclic_colorings(case, order):
    p, _ = case
    g = adjacency(p)
    assert_acyclic_coloring(p, greedy_acyclic(g, ordering(order, g)))


@pytest.fixture
def numpy_engines(monkeypatch):
    """Greedy colouring without scipy's compiled grouping, as where it fails to load."""
    monkeypatch.setattr(compiled_grouping, "_loaded", None)


@settings(max_examples=40, deadline=None)
@given(random_patterns(), st.sampled_from(ORDERINGS))
def test_the_numpy_engines_give_the_colors_of_the_compiled_one(case, order):
    p, _ = case
    compiled = greedy_columns(p, order)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled_grouping, "_loaded", None)
        np.testing.assert_array_equal(greedy_columns(p, order), compiled)


def test_the_compiled_engine_loads_and_colors_a_stencil():
    assert compiled_grouping.group_sparse() is not None
    assert n_colors(greedy_columns(stencil5(30))) == 7


def test_five_point_stencil_without_the_compiled_engine(numpy_engines):
    p = stencil5(20)
    colors, tried = best_columns(p)
    assert_column_coloring(p, colors)
    assert tried["natural"] == 7 and n_colors(colors) <= 6


@settings(max_examples=60, deadline=None)
@given(random_patterns(size=40))
def test_the_best_coloring_is_never_worse_than_natural_order(case):
    p, _ = case
    colors, _ = best_columns(p)
    assert n_colors(colors) <= n_colors(greedy_columns(p, "natural"))
    rows, _ = best_rows(p)
    assert n_colors(rows) <= n_colors(greedy_rows(p, "natural"))


def test_coloring_does_not_import_scipy_optimize():
    code = ("import sys, numpy as np, scipy.sparse as sp; import jaccli.sparse as s; "
            "p = sp.random_array((300, 300), density=0.01, rng=np.random.default_rng(0), format='csr'); "
            "s.best_columns(p); s.best_star(p); s.jacobian_plan(p); "
            "assert 'scipy.optimize' not in sys.modules, sorted(m for m in sys.modules if 'optimize' in m)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_sequential_orderings_run_only_when_the_sweeps_they_may_save_cost_more():
    p = stencil5(100)  # 2.5e5 edges: each sequential search is estimated above effort.AFFORDABLE_S
    full = best_columns(p)[1]
    assert {"smallest_last", "incidence_degree"} <= set(full)
    cheap_colors, cheap = best_columns(p, sweep_s=1e-6)  # saving a sweep of 1 us never pays for a sequential search
    assert not {"smallest_last", "incidence_degree", "random", "iterated_greedy"} & set(cheap)
    assert {"natural", "strided"} <= set(cheap) and cheap_colors.max() + 1 == min(cheap.values())
    assert best_columns(p, sweep_s=10.0)[1] == full  # a costly sweep: everything runs, as without an estimate
    # a small graph gets every search however cheap its sweeps: it costs less than anyone waits for
    assert {"smallest_last", "incidence_degree"} <= set(best_columns(stencil5(8), sweep_s=1e-9)[1])


@pytest.mark.parametrize("n", [30, 50_000])
def test_an_arrowhead_hessian_takes_two_colours_in_linear_time(n):
    from jaccli.sparse import hessian_plan, is_star_coloring

    rows = np.concatenate([np.arange(n), np.zeros(n - 1, int), np.arange(1, n)])
    cols = np.concatenate([np.arange(n), np.arange(1, n), np.zeros(n - 1, int)])
    p = sp.csr_array((np.ones(rows.size, bool), (rows, cols)), shape=(n, n))
    plan = hessian_plan(p, recovery="direct", sweep_s=1e-6)  # the hub set apart: no quadratic star search
    assert plan.sweeps == 2 and is_star_coloring(p, plan.column_colors)
    H = sp.csr_array((np.arange(1.0, rows.size + 1), (rows, cols)), shape=(n, n))
    H = H + H.T
    assert (plan.recover(H @ plan.forward_seeds()) != H).nnz == 0
