"""Column colourings (forward mode) and row colourings (reverse mode) of a Jacobian pattern: greedy distance-2
colouring in a chosen vertex ordering, and the best over several orderings refined by iterated greedy."""
import numpy as np

from jaccli.engine import Phase

from . import greedy as _greedy
from .effort import IMPROVE_SECONDS_PER_EDGE, ORDERING_SECONDS_PER_EDGE, worth
from .orderings import ORDERINGS, ordering
from .patterns import Bipartite, column_graph

# Sizes are bounded by sum over rows of nnz(row)**2, which bounds the edges of the column-intersection graph.
# Smallest-last and incidence-degree are sequential by nature (a heap step per edge, ~1 µs in Python) and random
# order runs ~30 Jones-Plassmann rounds: the automatic choice uses them up to SMALL_GRAPH_EDGES only.
SMALL_GRAPH_EDGES = 1_000_000
# Above this the column-intersection graph is not built (an arrowhead's is dense), and above SMALL_GRAPH_EDGES
# largest-first does without it (the product costs more than the colouring): it then ranks by the sum over the
# column's rows of (nnz(row) - 1), the degree counted with repeats.
GRAPH_EDGES_LIMIT = 30_000_000
DEFAULT_ORDERS = ("natural", "strided", "largest_first", "smallest_last", "incidence_degree", "random")
# Above SMALL_GRAPH_EDGES the automatic choice keeps to what colours 1e6 columns in well under a second: natural
# order (the best or tied on the bands measured), strided order (better on some row-major stencils) and one pass of iterated greedy (a second gained no
# colour on the stencils and Brusselators measured, at ~0.3 s per pass for 1e6 columns).
LARGE_DEFAULT_ORDERS = ("natural", "strided")
LARGE_IMPROVE_PASSES = 1


class _Stub:
    """Stands for the graph where an ordering needs only the vertex count, or only the degrees."""

    def __init__(self, n, degrees=None):
        self.shape = (n, n)
        if degrees is not None:
            self.indptr = np.concatenate(([0], np.cumsum(degrees)))


def _edges_bound(bip):
    return int(np.sum(bip.row_counts.astype(np.int64) ** 2))


def _bipartite(pattern):
    return pattern if isinstance(pattern, Bipartite) else Bipartite.from_pattern(pattern)


def _graph_for(bip, name, cache):
    if name in ("natural", "strided", "random"):
        return _Stub(bip.shape[1])
    if "graph" not in cache:
        if name == "largest_first" and _edges_bound(bip) > SMALL_GRAPH_EDGES or _edges_bound(bip) > GRAPH_EDGES_LIMIT:
            if name != "largest_first":
                raise ValueError(f"the {name} ordering needs the column-intersection graph, too large here "
                                 f"(up to {_edges_bound(bip):,} edges); use natural or largest_first")
            repeats = np.repeat(bip.row_counts - 1, bip.row_counts)
            by_column = np.zeros(bip.shape[1], dtype=np.int64)
            np.add.at(by_column, bip.row_cols, repeats)
            return _Stub(bip.shape[1], by_column)
        cache["graph"] = column_graph(bip)
    return cache["graph"]


def greedy_columns(pattern, order="natural", *, seed=0, _cache=None):
    """Greedy distance-2 colouring of the columns of `pattern` (M x N): columns sharing a row get different colours,
    so the columns of one colour can be seeded together in one forward sweep. `order` is the name of an ordering
    or a permutation of the columns. Returns the colour of each column, -1 for columns with no nonzero."""
    bip = _bipartite(pattern)
    if isinstance(order, str):
        order = ordering(order, _graph_for(bip, order, {} if _cache is None else _cache), seed)
    return _greedy.greedy(bip, order)


def greedy_rows(pattern, order="natural", *, seed=0):
    """Greedy distance-2 colouring of the rows (rows sharing a column differ): the reverse-mode compression."""
    return greedy_columns(_bipartite(pattern).transpose(), order, seed=seed)


def improve(pattern, colors, passes=12, seed=0):
    """Iterated greedy (Culberson & Luo): recolour whole colour classes in reversed, largest-first and random class
    orders; the colour count never grows. Stops after `passes` or three passes in a row without a gain."""
    bip = _bipartite(pattern)
    rng = np.random.default_rng(seed)
    best, stale = colors, 0
    current = colors
    with Phase("colouring: iterated greedy (passes)", passes) as progress:
        for k in range(passes):
            count = _greedy.num_colors(current)
            if count <= 1:
                break
            sizes = np.bincount(current[current >= 0], minlength=count)
            class_order = (np.arange(count)[::-1], np.argsort(-sizes, kind="stable"), rng.permutation(count))[k % 3]
            current = _greedy.recolor_by_classes(bip, current, class_order)
            progress.advance(1)
            if _greedy.num_colors(current) < _greedy.num_colors(best):
                best, stale = current, 0
            else:
                stale += 1
                if stale >= 3:
                    break
    return best


def best_columns(pattern, orders=None, *, improve_passes=None, seed=0, sweep_s=None):
    """The column colouring with the fewest colours over `orders` (default: every ordering on graphs up to
    SMALL_GRAPH_EDGES, natural and strided order above; it stops at the lower bound, the densest row), then refined by
    iterated greedy (default 12 passes, 1 above SMALL_GRAPH_EDGES). With `sweep_s`, the estimated seconds of one
    sweep, an ordering or the refinement runs only when it may save more sweeps than it costs (`effort.worth`);
    natural order always runs. Returns (colors, tried) with tried = {ordering: colours} for the report."""
    bip = _bipartite(pattern)
    edges = _edges_bound(bip)
    small = edges <= SMALL_GRAPH_EDGES
    if orders is None:
        orders = DEFAULT_ORDERS if small else LARGE_DEFAULT_ORDERS
    if improve_passes is None:
        improve_passes = 12 if small else LARGE_IMPROVE_PASSES
    # no colouring beats the densest row: stop searching once it is reached
    bound = int(bip.row_counts.max()) if bip.shape[0] else 0
    cache, tried, best = {}, {}, None
    with Phase("colouring (orderings)", len(orders)) as progress:
        for name in orders:
            if best is not None and not worth(ORDERING_SECONDS_PER_EDGE.get(name, 0.0) * edges,
                                              _greedy.num_colors(best), bound, sweep_s):
                progress.advance(1)
                continue
            colors = greedy_columns(bip, name, seed=seed, _cache=cache)
            tried[name] = _greedy.num_colors(colors)
            progress.advance(1)
            if best is None or tried[name] < _greedy.num_colors(best):
                best = colors
            if tried[name] <= bound:
                break
    if best is None:
        best = np.full(bip.shape[1], -1, dtype=np.int64)
    # above SMALL_GRAPH_EDGES a pass costs ~0.4 s at 1e6 columns and gained nothing within one colour of the bound
    # (the 5-point stencil at 6): it runs only farther from it
    if improve_passes and worth(IMPROVE_SECONDS_PER_EDGE * edges * improve_passes, _greedy.num_colors(best),
                                bound + (0 if small else 1), sweep_s):
        best = improve(bip, best, improve_passes, seed)
        tried["iterated_greedy"] = _greedy.num_colors(best)
    return best, tried


def best_rows(pattern, orders=None, *, improve_passes=None, seed=0, sweep_s=None):
    """Like best_columns, for the rows (reverse mode)."""
    return best_columns(_bipartite(pattern).transpose(), orders, improve_passes=improve_passes, seed=seed,
                        sweep_s=sweep_s)


__all__ = ["ORDERINGS", "greedy_columns", "greedy_rows", "best_columns", "best_rows", "improve"]
