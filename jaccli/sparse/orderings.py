"""Vertex orderings for greedy colouring (natural, strided, largest-first, smallest-last, incidence-degree, random) on
a graph given as a CSR adjacency without its diagonal."""
import heapq

import numpy as np

ORDERINGS = ("natural", "strided", "largest_first", "smallest_last", "incidence_degree", "random")


def natural(graph, seed=0):
    return np.arange(graph.shape[0])


def strided(graph, seed=0, stride=3):
    """Natural order in `stride` interleaved passes (0, 3, 6, ..., then 1, 4, ..., then 2, 5, ...). It needs no graph,
    and on some row-major stencils it beats natural order (5-point N = 100 and 1000: 6 colours instead of 7;
    Brusselator N = 32 and 256: 10 or 11 instead of 12); on others it is worse (N = 999: 9), hence only ever kept
    when it wins."""
    n = graph.shape[0]
    return np.concatenate([np.arange(offset, n, stride) for offset in range(stride)])


def random(graph, seed=0):
    return np.random.default_rng(seed).permutation(graph.shape[0])


def largest_first(graph, seed=0):
    """By decreasing degree, ties in natural order (Welsh-Powell)."""
    return np.argsort(-np.diff(graph.indptr), kind="stable")


def smallest_last(graph, seed=0):
    """Matula-Beck: repeatedly remove a vertex of least degree in what remains; colour in reverse removal order."""
    degree = np.diff(graph.indptr).tolist()
    ptr, adj = graph.indptr.tolist(), graph.indices.tolist()
    heap = [(d, v) for v, d in enumerate(degree)]
    heapq.heapify(heap)
    removed = [False] * len(degree)
    removal = []
    while heap:
        d, v = heapq.heappop(heap)
        if removed[v] or d != degree[v]:
            continue
        removed[v] = True
        removal.append(v)
        for w in adj[ptr[v]:ptr[v + 1]]:
            if not removed[w]:
                degree[w] -= 1
                heapq.heappush(heap, (degree[w], w))
    return np.array(removal[::-1], dtype=np.int64)


def incidence_degree(graph, seed=0):
    """Next the vertex with most already-ordered neighbours (ties: larger degree, then lower index)."""
    n = graph.shape[0]
    degree = np.diff(graph.indptr).tolist()
    ptr, adj = graph.indptr.tolist(), graph.indices.tolist()
    incidence = [0] * n
    heap = [(0, -degree[v], v) for v in range(n)]
    heapq.heapify(heap)
    done = [False] * n
    order = []
    while heap:
        inc, _, v = heapq.heappop(heap)
        if done[v] or -inc != incidence[v]:
            continue
        done[v] = True
        order.append(v)
        for w in adj[ptr[v]:ptr[v + 1]]:
            if not done[w]:
                incidence[w] += 1
                heapq.heappush(heap, (-incidence[w], -degree[w], w))
    return np.array(order, dtype=np.int64)


BY_NAME = {"natural": natural, "strided": strided, "largest_first": largest_first, "smallest_last": smallest_last,
           "incidence_degree": incidence_degree, "random": random}


def ordering(name, graph, seed=0):
    """The permutation of the graph's vertices that the named ordering gives."""
    try:
        return BY_NAME[name](graph, seed)
    except KeyError:
        raise ValueError(f"unknown ordering {name!r}; known: {', '.join(ORDERINGS)}") from None
