"""Star colourings of a symmetric pattern (Hessians): every path on four vertices uses at least three colours, which
is what direct recovery of H from H @ S needs (Coleman & Moré 1984; Gebremedhin, Manne & Pothen 2005)."""
import numpy as np
import scipy.sparse as sp

from jaccli.engine import Phase

from .coloring import best_columns
from .effort import STAR_SECONDS_PER_STEP, worth
from .orderings import ordering
from .patterns import as_pattern
from .recovery import count_colors

# The exact greedy star colouring below steps through the graph in Python (~degree² work per vertex); above this
# many stored entries only the vectorised distance-2 colouring (always a star colouring) is used.
SEQUENTIAL_STAR_ENTRIES = 400_000
# Nor beyond this sum of squared degrees (the steps of a greedy star or acyclic colouring), once the densest
# vertices are set apart (`set_apart`): an arrowhead's hub alone would make it quadratic in n.
SEQUENTIAL_STEPS = 4_000_000
# At most this share of the vertices is set apart, each with a colour of its own.
MOST_SET_APART = 0.01


def symmetric_pattern(pattern):
    """The pattern or'ed with its transpose, with its diagonal: the structure a Hessian plan recovers."""
    p = as_pattern(pattern)
    if p.shape[0] != p.shape[1]:
        raise ValueError(f"a symmetric pattern is square, got shape {p.shape}")
    return as_pattern(p + p.T + sp.eye_array(p.shape[0], dtype=bool, format="csr"))


def adjacency(pattern):
    """The graph of a symmetric pattern: CSR without the diagonal."""
    return _off_diagonal(symmetric_pattern(pattern))


def _off_diagonal(sym):
    g = sp.csr_array(sym, copy=True)
    g.setdiag(False)
    g.eliminate_zeros()
    g.sort_indices()
    return g


def is_star_coloring(pattern, colors):
    """Whether `colors` is a proper colouring of the symmetric pattern in which no path on four vertices is
    bicoloured, checked per edge: one of its ends must see the other's colour only once among its neighbours."""
    g = adjacency(pattern)
    rows = np.repeat(np.arange(g.shape[0], dtype=np.int64), np.diff(g.indptr))
    cols = g.indices.astype(np.int64)
    colors = np.asarray(colors)
    if np.any(colors[rows] < 0) or np.any(colors[rows] == colors[cols]):
        return False
    k = count_colors(colors)
    own = rows * k + colors[cols]
    keys, counts = np.unique(own, return_counts=True)
    own_once = counts[np.searchsorted(keys, own)] == 1
    mirror_once = counts[np.searchsorted(keys, cols * k + colors[rows])] == 1
    return bool(np.all(own_once | mirror_once))


def greedy_star(graph, order):
    """Greedy star colouring in `order`: a vertex takes the smallest colour that keeps the colouring proper and leaves
    no bicoloured path on four vertices among the coloured ones, with the vertex at an end (v-w-x-y) or inside
    (w'-v-w-x). Like Gebremedhin-Manne-Pothen's Algorithm 4.1, it also keeps v apart from the coloured vertices
    two steps away through a vertex not yet coloured."""
    ptr, adj = graph.indptr.tolist(), graph.indices.tolist()
    n = graph.shape[0]
    color = [-1] * n
    seen = [dict() for _ in range(n)]   # seen[x][a]: how many coloured neighbours of x have colour a
    for v in np.asarray(order).tolist():
        nbrs = adj[ptr[v]:ptr[v + 1]]
        forbidden = set()
        by_color = {}
        for w in nbrs:
            cw = color[w]
            if cw >= 0:
                forbidden.add(cw)
                by_color.setdefault(cw, []).append(w)
            for x in adj[ptr[w]:ptr[w + 1]]:
                cx = color[x]
                if x == v or cx < 0:
                    continue
                if cw < 0 or seen[x].get(cw, 0) >= 2:
                    forbidden.add(cx)
        for ws in by_color.values():
            if len(ws) >= 2:
                for w in ws:
                    forbidden.update(color[x] for x in adj[ptr[w]:ptr[w + 1]] if x != v and color[x] >= 0)
        c = 0
        while c in forbidden:
            c += 1
        color[v] = c
        for w in nbrs:
            seen[w][c] = seen[w].get(c, 0) + 1
    return np.array(color, dtype=np.int64)


def set_apart(graph, steps=SEQUENTIAL_STEPS):
    """(hubs, rest): the fewest densest vertices whose removal brings the sum of the other vertices' squared degrees
    within `steps`, and the graph on the others; None when that would take more than MOST_SET_APART of them.

    A vertex coloured with a colour of its own is on no two-coloured path or cycle, so a star (acyclic) colouring
    of the rest with each hub in a new colour is a star (acyclic) colouring of the whole: an arrowhead Hessian's
    hub and the diagonal rest take 2 colours, found in linear time instead of quadratic."""
    degree = np.diff(graph.indptr).astype(np.int64)
    order = np.argsort(-degree, kind="stable")
    squares = degree[order] ** 2
    left = np.concatenate((np.cumsum(squares[::-1])[::-1], [0]))  # left[k]: the sum without the k densest
    k = int(np.argmax(left <= steps))
    if k > MOST_SET_APART * graph.shape[0]:
        return None
    hubs = np.sort(order[:k])
    keep = np.ones(graph.shape[0], dtype=bool)
    keep[hubs] = False
    coo = graph.tocoo()
    inside = keep[coo.row] & keep[coo.col]
    rest = sp.csr_array((np.ones(int(inside.sum()), dtype=bool), (coo.row[inside], coo.col[inside])),
                        shape=graph.shape)
    rest.sort_indices()
    return hubs, rest


def with_hubs_apart(colour, order_name, seed, hubs_rest):
    """`colour(graph, order)` on the graph less its hubs (`set_apart`'s rest), each hub then in a colour of its
    own."""
    hubs, rest = hubs_rest
    colors = colour(rest, ordering(order_name, rest, seed))
    first = int(colors.max()) + 1 if len(colors) else 0
    colors[hubs] = first + np.arange(len(hubs))
    return colors


def star_lower_bound(graph):
    """3 when the graph has a path on four vertices or a triangle (an edge whose ends both have other neighbours),
    else 2 with an edge, else 1."""
    degree = np.diff(graph.indptr)
    if not graph.nnz:
        return 1
    rows = np.repeat(np.arange(graph.shape[0]), degree)
    return 3 if np.any((degree[rows] >= 2) & (degree[graph.indices] >= 2)) else 2


def best_star(pattern, orders=("natural", "largest_first", "smallest_last", "random"), *, seed=0, sweep_s=None):
    """The star colouring with the fewest colours among the greedy star colourings in `orders` (graphs up to
    SEQUENTIAL_STAR_ENTRIES entries) and the best distance-2 colouring of the pattern (any distance-2 colouring of a
    symmetric pattern is a star colouring). With `sweep_s` (seconds of one sweep), a sequential star colouring
    runs only when it may save more sweeps than it costs (`effort.worth`). Returns (colors, tried)."""
    sym = symmetric_pattern(pattern)
    colors, tried = best_columns(sym, seed=seed, sweep_s=sweep_s)
    tried = {f"distance2_{name}": count for name, count in tried.items()}
    # the graph has the entries of sym less its diagonal: not built when the sequential search would not run
    entries = sym.nnz - sym.shape[0]
    graph = _off_diagonal(sym) if entries <= SEQUENTIAL_STAR_ENTRIES else None
    apart = set_apart(graph) if graph is not None else None
    if apart is not None:
        bound = star_lower_bound(graph)
        steps = float(np.sum(np.diff(apart[1].indptr).astype(np.int64) ** 2))
        with Phase("star colouring (orderings)", len(orders)) as progress:
            for name in orders:
                if not worth(STAR_SECONDS_PER_STEP * steps, count_colors(colors), bound, sweep_s):
                    break
                candidate = with_hubs_apart(greedy_star, name, seed, apart)
                tried[f"star_{name}"] = count_colors(candidate)
                progress.advance(1)
                if count_colors(candidate) < count_colors(colors):
                    colors = candidate
    # isolated vertices have only the diagonal: every colour works, and a colour no-one uses would cost a sweep
    colors = np.where(colors < 0, 0, colors)
    return colors, tried
