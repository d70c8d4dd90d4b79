"""A colouring plan (mode, colours per side, seeds) and the recovery of the sparse matrix from the compressed products,
gathered straight into CSR without a dense M x N array."""
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

MODES = ("forward", "reverse", "bidirectional", "symmetric")


def count_colors(colors):
    return 0 if colors is None or not len(colors) or colors.max() < 0 else int(colors.max()) + 1


def seed_matrix(colors):
    """The 0/1 seed matrix (len(colors) x K) of a colouring: column k seeds every vertex of colour k together."""
    colors = np.asarray(colors)
    seeded = np.flatnonzero(colors >= 0)
    return sp.csr_array((np.ones(len(seeded)), (seeded, colors[seeded])), shape=(len(colors), count_colors(colors)))


@dataclass(frozen=True, eq=False)
class Plan:
    """How to get a sparse Jacobian or Hessian in few sweeps.

    mode: 'forward' (J @ S, one JVP per colour), 'reverse' (S^T @ J, one VJP per colour), 'bidirectional' (both)
    or 'symmetric' (H @ S for a symmetric H: star colouring and direct recovery, or acyclic and substitution).
    column_colors / row_colors: the colour of each column (forward and symmetric) / row (reverse), -1 where nothing
    needs seeding. A bidirectional plan splits the entries by rows (reverse_rows: those rows from the reverse
    products) or by columns (forward_columns: those columns from the forward products, the rest from the reverse
    ones). tried: colours per method tried, for reports. substitution: for a symmetric plan on an acyclic colouring,
    the acyclic.Substitution that recovers H (to rounding, not exactly)."""

    mode: str
    pattern: sp.csr_array
    column_colors: np.ndarray = None
    row_colors: np.ndarray = None
    reverse_rows: np.ndarray = None
    forward_columns: np.ndarray = None
    tried: dict = field(default_factory=dict)
    substitution: object = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")

    @property
    def shape(self):
        return self.pattern.shape

    @property
    def recovery(self):
        """'substitution' for a symmetric plan on an acyclic colouring, else 'direct'."""
        return "direct" if self.substitution is None else "substitution"

    @property
    def forward_colors(self):
        """The number of forward sweeps (seeds of J @ S, or H @ S in the symmetric mode)."""
        return count_colors(self.column_colors)

    @property
    def reverse_colors(self):
        """The number of reverse sweeps (seeds of S^T @ J)."""
        return count_colors(self.row_colors)

    @property
    def sweeps(self):
        return self.forward_colors + self.reverse_colors

    def forward_seeds(self):
        """S (N x K forward colours), so that the forward products are J @ S (or H @ S)."""
        return seed_matrix(self.column_colors if self.column_colors is not None else np.full(self.shape[1], -1))

    def reverse_seeds(self):
        """S (M x K reverse colours), so that the reverse products are S^T @ J."""
        return seed_matrix(self.row_colors if self.row_colors is not None else np.full(self.shape[0], -1))

    @cached_property
    def _entries(self):
        p = self.pattern
        rows = np.repeat(np.arange(p.shape[0], dtype=np.int64), np.diff(p.indptr))
        return rows, p.indices.astype(np.int64)

    @cached_property
    def _gather(self):
        """Per stored entry: which product it comes from (True: reverse) and its flat index in that product."""
        rows, cols = self._entries
        if self.mode == "symmetric":
            return np.zeros(len(rows), dtype=bool), _symmetric_sources(rows, cols, self.column_colors)
        reverse = np.full(len(rows), self.mode == "reverse")
        if self.reverse_rows is not None:
            reverse |= self.reverse_rows[rows]
        if self.forward_columns is not None:
            reverse |= ~self.forward_columns[cols]
        flat = np.empty(len(rows), dtype=np.int64)
        f = ~reverse
        if f.any():
            flat[f] = rows[f] * self.forward_colors + self.column_colors[cols[f]]
        if reverse.any():
            flat[reverse] = self.row_colors[rows[reverse]] * self.shape[1] + cols[reverse]
        return reverse, flat

    def recover(self, *compressed):
        """The sparse matrix (CSR with the pattern's structure) from the compressed products: J @ S (M x K) for
        forward, S^T @ J (K x N) for reverse, both (in that order) for bidirectional, H @ S (N x K) for symmetric."""
        wanted = {"forward": ("forward",), "reverse": ("reverse",), "symmetric": ("forward",),
                  "bidirectional": ("forward", "reverse")}[self.mode]
        if len(compressed) != len(wanted):
            raise ValueError(f"a {self.mode} plan recovers from {len(wanted)} product(s), got {len(compressed)}")
        m, n = self.shape
        shapes = {"forward": (m, self.forward_colors), "reverse": (self.reverse_colors, n)}
        products = {}
        for side, product in zip(wanted, compressed):
            product = product.toarray() if sp.issparse(product) else np.asarray(product)
            if product.shape != shapes[side]:
                raise ValueError(f"the {side} product must have shape {shapes[side]}, got {product.shape}")
            products[side] = product.reshape(-1)
        if self.substitution is not None:
            data = self.substitution.values(products["forward"])
        else:
            reverse, flat = self._gather
            data = np.empty(len(flat), dtype=np.result_type(*products.values()))
            if "forward" in products:
                data[~reverse] = products["forward"][flat[~reverse]]
            if "reverse" in products:
                data[reverse] = products["reverse"][flat[reverse]]
        return sp.csr_array((data, self.pattern.indices.copy(), self.pattern.indptr.copy()), shape=self.shape)


def _symmetric_sources(rows, cols, colors):
    """Flat indices into H @ S (N x K) for each stored (i, j) of a symmetric pattern under a star colouring: from
    (lo, colour of hi) when lo's row has no other entry of that colour, else from (hi, colour of lo). Both (i, j) and
    (j, i) read the same place, so the result is exactly symmetric."""
    k = count_colors(colors)
    own = rows * k + colors[cols]
    keys, counts = np.unique(own, return_counts=True)
    mirror = cols * k + colors[rows]
    at = np.minimum(np.searchsorted(keys, mirror), len(keys) - 1)
    if len(keys) and not np.array_equal(keys[at], mirror):
        raise ValueError("the pattern of a symmetric plan must be symmetric")
    own_unique = counts[np.searchsorted(keys, own)] == 1
    mirror_unique = counts[at] == 1
    lo_first = rows <= cols
    lo_unique = np.where(lo_first, own_unique, mirror_unique)
    hi_unique = np.where(lo_first, mirror_unique, own_unique)
    if not np.all(lo_unique | hi_unique):
        raise ValueError("the colouring does not allow direct recovery (it is not a star colouring)")
    lo_key = np.where(lo_first, own, mirror)
    hi_key = np.where(lo_first, mirror, own)
    return np.where(lo_unique, lo_key, hi_key)
