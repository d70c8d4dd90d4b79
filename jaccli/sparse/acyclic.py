"""Acyclic colourings of a symmetric pattern (every cycle has three colours, so each pair of colours spans a forest)
and recovery of H from H @ S by substitution along those forests (Coleman & Cai 1986; Gebremedhin et al. 2009)."""
from dataclasses import dataclass

import numpy as np

from jaccli.engine import Phase


def greedy_acyclic(graph, order):
    """Greedy acyclic colouring in `order` (graph: CSR without diagonal): a vertex takes the smallest colour c unused
    by its neighbours such that no two of its neighbours of one colour b are already joined in the (c, b) forest,
    which would close a two-coloured cycle. The forests are kept as union-find sets keyed by (vertex, pair)."""
    ptr, adj = graph.indptr.tolist(), graph.indices.tolist()
    color = [-1] * graph.shape[0]
    parent = {}

    def find(x):
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while x != root:
            parent[x], x = root, parent.get(x, x)
        return root

    for v in np.asarray(order).tolist():
        by_color = {}
        for w in adj[ptr[v]:ptr[v + 1]]:
            if color[w] >= 0:
                by_color.setdefault(color[w], []).append(w)
        c = 0
        while True:
            if c not in by_color and all(_apart(find, ws, (min(c, b), max(c, b)))
                                         for b, ws in by_color.items() if len(ws) > 1):
                break
            c += 1
        color[v] = c
        for b, ws in by_color.items():
            pair = (min(c, b), max(c, b))
            for w in ws:
                parent[find((w, pair))] = find((v, pair))
    return np.array(color, dtype=np.int64)


def _apart(find, vertices, pair):
    roots = [find((w, pair)) for w in vertices]
    return len(set(roots)) == len(roots)


@dataclass(frozen=True, eq=False)
class Substitution:
    """Where each stored entry of H comes from under an acyclic colouring with k colours.

    The forests of all colour pairs are laid out in depth-first preorder: node t stands for vertex node_vertex[t] in
    the forest of the pair (its colour, node_other[t]), and its residual is (H @ S)[node_vertex[t], node_other[t]],
    the sum of H over its edges in that forest. The edge from node t to its parent is the alternating sum of the
    residuals of t's subtree (positions t .. subtree_end[t] - 1), i.e. a difference of prefix sums."""

    k: int
    node_vertex: np.ndarray
    node_other: np.ndarray
    node_sign: np.ndarray
    entry_child: np.ndarray      # per stored entry: the child node of its edge, or -1 on the diagonal
    subtree_end: np.ndarray
    diagonal_flat: np.ndarray    # per stored entry: flat index of (i, colour of i), used on the diagonal

    def values(self, product):
        flat = product.reshape(-1)
        residual = flat[self.node_vertex * self.k + self.node_other] * self.node_sign
        prefix = np.concatenate(([0.0], np.cumsum(residual)))
        off = self.entry_child >= 0
        child = self.entry_child[off]
        data = np.empty(len(self.entry_child), dtype=np.result_type(product, np.float64))
        data[off] = self.node_sign[child] * (prefix[self.subtree_end[child]] - prefix[child])
        data[~off] = flat[self.diagonal_flat[~off]]
        return data


def substitution(pattern, colors):
    """The Substitution of a symmetric CSR pattern (with its diagonal) under the acyclic colouring `colors`."""
    n = pattern.shape[0]
    k = int(colors.max()) + 1 if n else 0
    rows = np.repeat(np.arange(n), np.diff(pattern.indptr)).tolist()
    cols = pattern.indices.tolist()
    col = colors.tolist()
    forests = {}
    for i, j in zip(rows, cols):
        if i != j:
            forests.setdefault((min(col[i], col[j]), max(col[i], col[j])), {}).setdefault(i, []).append(j)
    node_vertex, node_other, node_sign, subtree_end = [], [], [], []
    child_of_edge = {}
    for pair, adjacency in forests.items():
        seen = set()
        for root in adjacency:
            if root in seen:
                continue
            seen.add(root)
            stack = [(root, -1, 1.0)]
            while stack:
                v, up, sign = stack.pop()
                if v is None:
                    subtree_end[up] = len(node_vertex)
                    continue
                t = len(node_vertex)
                node_vertex.append(v)
                node_other.append(pair[1] if col[v] == pair[0] else pair[0])
                node_sign.append(sign)
                subtree_end.append(-1)
                if up >= 0:
                    child_of_edge[(min(v, up), max(v, up))] = t
                stack.append((None, t, sign))
                for w in adjacency[v]:
                    if w not in seen:
                        seen.add(w)
                        stack.append((w, v, -sign))
    entry_child = [-1 if i == j else child_of_edge[(min(i, j), max(i, j))] for i, j in zip(rows, cols)]
    return Substitution(k, np.array(node_vertex, dtype=np.int64), np.array(node_other, dtype=np.int64),
                        np.array(node_sign, dtype=np.float64), np.array(entry_child, dtype=np.int64),
                        np.array(subtree_end, dtype=np.int64),
                        np.array(rows, dtype=np.int64) * k + colors[np.array(rows, dtype=np.int64)])


def best_acyclic(graph, orders=("natural", "largest_first", "smallest_last"), seed=0, *, sweep_s=None, above=None):
    """The acyclic colouring with the fewest colours over `orders`, stopping at 2 (a forest). With `sweep_s`
    (seconds of one sweep) an ordering runs only when it may save more sweeps, below `above` colours (the plan in
    hand), than it costs (`effort.worth`). Returns (colors or None when none ran, tried)."""
    from .effort import ACYCLIC_SECONDS_PER_ENTRY, worth
    from .orderings import ordering
    best, tried = None, {}
    bound = 2 if graph.nnz else 1
    with Phase("acyclic colouring (orderings)", len(orders)) as progress:
        for name in orders:
            now = above if best is None else int(best.max()) + 1
            if now is not None and not worth(ACYCLIC_SECONDS_PER_ENTRY * graph.nnz, now, bound, sweep_s):
                break
            colors = greedy_acyclic(graph, ordering(name, graph, seed))
            tried[f"acyclic_{name}"] = int(colors.max()) + 1 if len(colors) else 0
            progress.advance(1)
            if best is None or colors.max() < best.max():
                best = colors
            if len(best) and best.max() + 1 <= bound:
                break
    return best, tried
