"""Column colourings (forward mode) and row colourings (reverse mode) of a Jacobian pattern: greedy distance-2
colouring in a chosen vertex ordering, and the best over several orderings refined by iterated greedy."""
import numpy as np

from . import greedy as _greedy
from .orderings import ORDERINGS, ordering
from .patterns import Bipartite, column_graph

# smallest-last and incidence-degree are sequential by nature (a heap step per vertex, ~1 µs each in Python):
# the automatic choice skips them on graphs with more edges than this, where they would cost seconds.
SEQUENTIAL_ORDER_EDGES = 2_000_000
DEFAULT_ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "random")


class _Shape:
    """Stands for the graph where an ordering needs only the vertex count."""

    def __init__(self, n):
        self.shape = (n, n)


def _bipartite(pattern):
    return pattern if isinstance(pattern, Bipartite) else Bipartite.from_pattern(pattern)


def _graph_for(bip, name, cache):
    if name in ("natural", "random"):
        return _Shape(bip.shape[1])
    if "graph" not in cache:
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
    orders; the colour count never grows. Stops after `passes` or two passes without a gain."""
    bip = _bipartite(pattern)
    rng = np.random.default_rng(seed)
    best, stale = colors, 0
    current = colors
    for k in range(passes):
        count = _greedy.num_colors(current)
        if count <= 1:
            break
        sizes = np.bincount(current[current >= 0], minlength=count)
        class_order = (np.arange(count)[::-1], np.argsort(-sizes, kind="stable"), rng.permutation(count))[k % 3]
        current = _greedy.recolor_by_classes(bip, current, class_order)
        if _greedy.num_colors(current) < _greedy.num_colors(best):
            best, stale = current, 0
        else:
            stale += 1
            if stale >= 3:
                break
    return best


def best_columns(pattern, orders=None, *, improve_passes=12, seed=0):
    """The column colouring with the fewest colours over `orders` (default: every ordering, the sequential ones only
    on graphs they colour in well under a second), then refined by iterated greedy. Returns (colors, tried) with
    tried = {ordering: colours} for the report."""
    bip = _bipartite(pattern)
    if orders is None:
        edges_bound = int(np.sum(bip.row_counts.astype(np.int64) ** 2))
        orders = [o for o in DEFAULT_ORDERS
                  if edges_bound <= SEQUENTIAL_ORDER_EDGES or o not in ("smallest_last", "incidence_degree")]
    cache, tried, best = {}, {}, None
    for name in orders:
        colors = greedy_columns(bip, name, seed=seed, _cache=cache)
        tried[name] = _greedy.num_colors(colors)
        if best is None or tried[name] < _greedy.num_colors(best):
            best = colors
    if best is None:
        best = np.full(bip.shape[1], -1, dtype=np.int64)
    if improve_passes:
        best = improve(bip, best, improve_passes, seed)
        tried["iterated_greedy"] = _greedy.num_colors(best)
    return best, tried


def best_rows(pattern, orders=None, *, improve_passes=12, seed=0):
    """Like best_columns, for the rows (reverse mode)."""
    return best_columns(_bipartite(pattern).transpose(), orders, improve_passes=improve_passes, seed=seed)


__all__ = ["ORDERINGS", "greedy_columns", "greedy_rows", "best_columns", "best_rows", "improve"]
