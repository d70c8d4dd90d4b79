"""Choosing a colouring plan for a Jacobian (forward, reverse or bidirectional, by the number of sweeps) or a Hessian
(symmetric: star colouring, or acyclic with substitution)."""
import numpy as np
import scipy.sparse as sp

from .acyclic import best_acyclic, substitution as substitute
from .coloring import best_columns, best_rows, greedy_columns, greedy_rows
from .patterns import Bipartite, as_pattern
from .recovery import Plan, count_colors
from .star import SEQUENTIAL_STAR_ENTRIES, adjacency, best_star, symmetric_pattern

# How many split thresholds the bidirectional search tries on each side (the densest rows or columns first).
BIDIRECTIONAL_CANDIDATES = 12


def _split_colors(pattern, dense, axis, best):
    """Colours of the two halves of a split: forward columns and reverse rows. axis 0: `dense` rows go reverse and
    the other rows forward; axis 1: `dense` columns go forward and the other columns reverse."""
    m, n = pattern.shape
    if axis == 0:
        forward_part, reverse_part = pattern[np.flatnonzero(~dense)], pattern[np.flatnonzero(dense)]
        fwd = best_columns(forward_part)[0] if best else greedy_columns(forward_part)
        rev = np.full(m, -1, dtype=np.int64)
        rev[dense] = best_rows(reverse_part)[0] if best else greedy_rows(reverse_part)
        return fwd, rev
    forward_part, reverse_part = pattern[:, np.flatnonzero(dense)], pattern[:, np.flatnonzero(~dense)]
    fwd = np.full(n, -1, dtype=np.int64)
    fwd[dense] = best_columns(forward_part)[0] if best else greedy_columns(forward_part)
    rev = best_rows(reverse_part)[0] if best else greedy_rows(reverse_part)
    return fwd, rev


def _max_count(counts):
    return int(counts.max()) if len(counts) else 0


def _split_bound(pattern, dense, axis):
    """A lower bound on the sweeps of a split: the densest row of the forward part plus the densest column of the
    reverse part."""
    if axis == 0:
        fwd, rev = pattern[np.flatnonzero(~dense)], pattern[np.flatnonzero(dense)]
    else:
        fwd, rev = pattern[:, np.flatnonzero(dense)], pattern[:, np.flatnonzero(~dense)]
    return _max_count(np.diff(sp.csr_array(fwd).indptr)) + _max_count(np.diff(sp.csc_array(rev).indptr))


def bidirectional_plan(pattern, candidates=BIDIRECTIONAL_CANDIDATES):
    """Bidirectional plan by the partition heuristic: the densest rows in reverse and the rest forward, or the
    densest columns forward and the rest reverse; for each side, thresholds at the `candidates` largest distinct
    counts are tried with a natural-order greedy colouring, and the split with the fewest sweeps is coloured again
    with the best orderings. An arrowhead (dense row, dense column, diagonal) gets 1 reverse + 2 forward sweeps."""
    p = as_pattern(pattern)
    best = None
    for axis, counts in ((0, np.diff(p.indptr)), (1, np.bincount(p.indices, minlength=p.shape[1]))):
        for threshold in np.unique(counts[counts > 0])[::-1][:candidates]:
            dense = counts >= threshold
            if best is not None and _split_bound(p, dense, axis) >= best[0]:
                continue
            fwd, rev = _split_colors(p, dense, axis, best=False)
            sweeps = count_colors(fwd) + count_colors(rev)
            if best is None or sweeps < best[0]:
                best = (sweeps, axis, dense)
    if best is None:
        return Plan("bidirectional", p, np.full(p.shape[1], -1), np.full(p.shape[0], -1), np.ones(p.shape[0], bool))
    _, axis, dense = best
    fwd, rev = _split_colors(p, dense, axis, best=True)
    if axis == 0:
        return Plan("bidirectional", p, fwd, rev, reverse_rows=dense)
    return Plan("bidirectional", p, fwd, rev, forward_columns=dense)


def _has_dense_lines(bip):
    """Whether some row or column holds far more entries than the average one: the partition heuristic splits
    those off, and without any (a stencil) it only finds the unidirectional colouring again, at several times
    its cost (10^6 columns of a 5-point stencil: 3 s of the 5 s of detection and colouring)."""
    return any(counts.size and counts.max() > 2 * counts.mean() + 1 for counts in (bip.row_counts, bip.col_counts))


def jacobian_plan(pattern, mode="auto", orders=None, sweep_s=None):
    """The plan for a sparse Jacobian with the given pattern (M x N): 'forward' (column colouring), 'reverse' (row
    colouring), 'bidirectional', or 'auto': the fewest sweeps among the three (ties: forward, then reverse).
    `sweep_s`: the estimated seconds of one sweep, which bounds the colouring search (`effort.worth`)."""
    if mode not in ("auto", "forward", "reverse", "bidirectional"):
        raise ValueError(f"mode must be auto, forward, reverse or bidirectional, got {mode!r}")
    p = as_pattern(pattern)
    bip = Bipartite.from_pattern(p)
    # the densest row bounds the forward colours, the densest column the reverse ones: the side with the lower
    # bound goes first, and a side whose bound cannot beat the plan in hand is not coloured at all
    sides = {"forward": _max_count(bip.row_counts), "reverse": _max_count(bip.col_counts)}
    # a structurally symmetric pattern has the same row colourings as column colourings: one side is enough
    mirror = mode == "auto" and p.shape[0] == p.shape[1] and (p != p.T).nnz == 0
    plans = []
    for side in sorted(sides, key=sides.get):
        if mode not in ("auto", side) or (plans and (mirror or sides[side] >= min(plan.sweeps for plan in plans))):
            continue
        if side == "forward":
            colors, tried = best_columns(bip, orders, sweep_s=sweep_s)
            plans.append(Plan("forward", p, column_colors=colors, tried={"forward": tried}))
        else:
            colors, tried = best_rows(bip, orders, sweep_s=sweep_s)
            plans.append(Plan("reverse", p, row_colors=colors, tried={"reverse": tried}))
    if mode == "bidirectional" or (mode == "auto" and min(plan.sweeps for plan in plans) > 2
                                   and _has_dense_lines(bip)):
        plans.append(bidirectional_plan(p))
    chosen = min(plans, key=lambda plan: (plan.sweeps, ("forward", "reverse", "bidirectional").index(plan.mode)))
    tried = {}
    for plan in plans:
        tried.update(plan.tried or {plan.mode: {"sweeps": plan.sweeps}})
    return Plan(chosen.mode, p, chosen.column_colors, chosen.row_colors, chosen.reverse_rows, chosen.forward_columns,
                tried)


RECOVERIES = ("auto", "direct", "substitution")


def hessian_plan(pattern, recovery="auto", sweep_s=None):
    """The plan for a sparse Hessian from the symmetrised pattern (with its diagonal, which the recovered matrix
    always stores). 'direct': a star colouring, H read back exactly from H @ S. 'substitution': an acyclic
    colouring (a tridiagonal: 2 colours instead of 3), H recovered by substitution along its two-coloured trees,
    whose sums carry rounding error (both give an exactly symmetric H). 'auto': the star colouring, or the acyclic
    one when it has fewer colours and its search may pay (`effort.worth`, with `sweep_s` the estimated seconds of
    one sweep; graphs over SEQUENTIAL_STAR_ENTRIES entries stay direct)."""
    if recovery not in RECOVERIES:
        raise ValueError(f"recovery must be auto, direct or substitution, got {recovery!r}")
    sym = symmetric_pattern(pattern)
    if recovery == "substitution":
        acyclic, tried = best_acyclic(adjacency(sym))
        return Plan("symmetric", sym, column_colors=acyclic, tried={"symmetric": tried},
                    substitution=substitute(sym, acyclic))
    colors, tried = best_star(sym, sweep_s=sweep_s)
    if recovery == "auto" and sym.nnz - sym.shape[0] <= SEQUENTIAL_STAR_ENTRIES:
        acyclic, more = best_acyclic(adjacency(sym), sweep_s=sweep_s, above=count_colors(colors))
        tried.update(more)
        if acyclic is not None and count_colors(acyclic) < count_colors(colors):
            return Plan("symmetric", sym, column_colors=acyclic, tried={"symmetric": tried},
                        substitution=substitute(sym, acyclic))
    return Plan("symmetric", sym, column_colors=colors, tried={"symmetric": tried})
