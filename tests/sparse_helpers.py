"""Patterns with known optimal colourings, and brute-force checkers of colourings, for the sparse tests."""
import itertools

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st


def banded(n, lower, upper, m=None):
    m = n if m is None else m
    i, j = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return sp.csr_array((j - i <= upper) & (i - j <= lower))


def stencil5(N, periodic=False):
    """The 2-D 5-point stencil pattern on an N x N grid (Dirichlet, or periodic as with np.roll)."""
    idx = np.arange(N * N).reshape(N, N)
    rows, cols = [idx.ravel()], [idx.ravel()]
    for axis in (0, 1):
        for shift in (1, -1):
            nb = np.roll(idx, shift, axis=axis)
            keep = np.ones((N, N), dtype=bool)
            if not periodic:
                sl = [slice(None)] * 2
                sl[axis] = 0 if shift == 1 else -1
                keep[tuple(sl)] = False
            rows.append(idx[keep])
            cols.append(nb[keep])
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(len(r), dtype=bool), (r, c)), shape=(N * N, N * N))


def arrowhead(n):
    p = sp.lil_array((n, n), dtype=bool)
    p.setdiag(True)
    p[0, :] = True
    p[:, 0] = True
    return sp.csr_array(p)


def block_diagonal(blocks, size):
    return sp.csr_array(sp.block_diag([np.ones((size, size), dtype=bool)] * blocks))


def n_colors(colors):
    colors = np.asarray(colors)
    return int(colors.max()) + 1 if len(colors) and colors.max() >= 0 else 0


def assert_column_coloring(pattern, colors):
    """Brute force: every non-empty column has a colour, and in each row at most one column of each colour."""
    dense = np.asarray(sp.csr_array(pattern).toarray() != 0)
    colors = np.asarray(colors)
    assert colors.shape == (dense.shape[1],)
    assert np.all(colors[dense.any(axis=0)] >= 0)
    for c in range(n_colors(colors)):
        assert np.all(dense[:, colors == c].sum(axis=1) <= 1), f"colour {c} is not structurally orthogonal"


def assert_row_coloring(pattern, colors):
    assert_column_coloring(sp.csr_array(pattern).T, colors)


def assert_star_coloring(pattern, colors):
    """Brute force: proper on the graph of the symmetric pattern, and no path on four vertices with two colours."""
    dense = sp.csr_array(pattern).toarray() != 0
    dense = dense | dense.T
    np.fill_diagonal(dense, False)
    colors = np.asarray(colors)
    n = len(colors)
    assert np.all(colors >= 0)
    adj = [np.flatnonzero(dense[v]) for v in range(n)]
    for a in range(n):
        for b in adj[a]:
            assert colors[a] != colors[b], f"edge {a}-{b} has one colour"
            for c in adj[b]:
                if c == a:
                    continue
                for d in adj[c]:
                    if d in (a, b):
                        continue
                    assert not (colors[a] == colors[c] and colors[b] == colors[d]), f"{a}-{b}-{c}-{d} is bicoloured"


def optimal_star_colors(pattern, limit=6):
    """The star chromatic number of a small symmetric pattern by exhaustive search (tiny graphs only)."""
    n = pattern.shape[0]
    for k in range(1, limit + 1):
        for colors in itertools.product(range(k), repeat=n):
            try:
                assert_star_coloring(pattern, colors)
                return k
            except AssertionError:
                continue
    return None


def random_values(pattern, rng, symmetric=False):
    """A random matrix with exactly the given structure (values never zero), CSR."""
    p = sp.csr_array(pattern, dtype=bool)
    if symmetric:
        p = sp.csr_array(p + p.T)
    m = sp.csr_array((rng.uniform(0.5, 2.0, p.nnz) * rng.choice([-1, 1], p.nnz), p.indices, p.indptr), shape=p.shape)
    if symmetric:
        m = sp.csr_array(sp.triu(m) + sp.triu(m, k=1).T)
    return m


@st.composite
def random_patterns(draw, square=False, size=25, max_density=0.5):
    """A random boolean pattern (CSR) and the generator it came from, for property tests."""
    m = draw(st.integers(1, size))
    n = m if square else draw(st.integers(1, size))
    density = draw(st.floats(0.0, max_density))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    return sp.random_array((m, n), density=density, rng=rng, format="csr") != 0, rng


def assert_acyclic_coloring(pattern, colors):
    """Brute force: proper, and the edges between any two colour classes form a forest (no two-coloured cycle)."""
    dense = sp.csr_array(pattern).toarray() != 0
    dense = dense | dense.T
    np.fill_diagonal(dense, False)
    colors = np.asarray(colors)
    i, j = np.nonzero(np.triu(dense))
    assert np.all(colors[i] != colors[j])
    for a, b in itertools.combinations(range(n_colors(colors)), 2):
        parent = list(range(len(colors)))

        def find(x):
            while parent[x] != x:
                x = parent[x]
            return x
        for u, v in zip(i, j):
            if {colors[u], colors[v]} == {a, b}:
                ru, rv = find(u), find(v)
                assert ru != rv, f"colours {a} and {b} close a cycle at edge {u}-{v}"
                parent[ru] = rv
