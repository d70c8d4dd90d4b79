"""Greedy distance-2 column colouring engines: Jones-Plassmann rounds, recolouring by colour classes, sequential."""
import numpy as np

from . import compiled_grouping
from .bitsets import ColorSets, first_fit
from .patterns import gather_segments

# Jones-Plassmann needs as many rounds as the longest path of rising priority; orders with long such paths
# (natural order on a band) go to the sequential engine instead of paying a NumPy call per vertex.
MAX_ROUNDS = 96


def jones_plassmann(bip, priority, max_rounds=MAX_ROUNDS):
    """Greedy column colouring in decreasing `priority` (distinct integers), coloured in rounds: a column takes its
    colour once every column sharing a row with it and of higher priority has one. Equals the sequential greedy
    colouring in that order. Returns the colours (-1 for empty columns), or None when the rounds would exceed
    max_rounds (judged by the pace so far)."""
    m, n = bip.shape
    colors = np.full(n, -1, dtype=np.int64)
    # int32 where it fits: each round streams every remaining (column, row) entry several times
    index = np.int32 if max(m, n) < 2 ** 31 - 1 else np.int64
    cols = np.repeat(np.arange(n, dtype=index), bip.col_counts)
    rows = bip.col_rows.astype(index)
    priority = np.asarray(priority).astype(index)
    total = int(np.count_nonzero(bip.col_counts))
    used = ColorSets(m)
    row_max = np.full(m, -1, dtype=index)
    blocked = np.zeros(n, dtype=bool)
    done, rounds = 0, 0
    while len(cols):
        rounds += 1
        p = priority[cols]
        np.maximum.at(row_max, rows, p)
        losers = cols[row_max[rows] != p]
        row_max[rows] = -1
        blocked[losers] = True
        wait = blocked[cols]
        blocked[losers] = False
        take = ~wait
        ready_cols, ready_rows = cols[take], rows[take]
        heads = np.flatnonzero(np.concatenate(([True], ready_cols[1:] != ready_cols[:-1])))
        lengths = np.diff(np.append(heads, len(ready_cols)))
        new = first_fit(used, ready_rows, lengths)
        used.add(ready_rows, np.repeat(new, lengths))
        colors[ready_cols[heads]] = new
        cols, rows = cols[wait], rows[wait]
        done += len(heads)
        if done * max_rounds < rounds * total and len(cols):
            return None
    return colors


def recolor_by_classes(bip, colors, class_order):
    """One pass of iterated greedy (Culberson): greedy colouring that takes the colour classes whole, in class_order.
    A class is structurally orthogonal, so its columns are coloured together, and the result never has more colours."""
    used = ColorSets(bip.shape[0])
    new = np.full_like(colors, -1)
    coloured = np.flatnonzero(colors >= 0)
    rank = np.empty(len(class_order), dtype=np.int64)
    rank[class_order] = np.arange(len(class_order))
    by_class = coloured[np.argsort(rank[colors[coloured]], kind="stable")]
    bounds = np.searchsorted(rank[colors[by_class]], np.arange(len(class_order) + 1))
    for k in range(len(class_order)):
        cols = by_class[bounds[k]:bounds[k + 1]]
        if not len(cols):
            continue
        rows, lengths = gather_segments(bip.col_ptr, bip.col_rows, cols)
        got = first_fit(used, rows, lengths)
        used.add(rows, np.repeat(got, lengths))
        new[cols] = got
    return new


def sequential(bip, order):
    """Greedy column colouring in the given order, one column after the other: scipy's compiled grouping when it
    loads (see compiled_grouping), else a plain loop."""
    group_sparse = compiled_grouping.group_sparse()
    if group_sparse is None or not bip.shape[1]:
        return sequential_loop(bip, order)
    order = np.asarray(order, dtype=np.int64)
    if len(order) > 1 and np.all(order[1:] > order[:-1]):
        rows, ptr = bip.col_rows, bip.col_ptr
    else:
        rows, lengths = gather_segments(bip.col_ptr, bip.col_rows, order)
        ptr = np.concatenate(([0], np.cumsum(lengths)))
    groups = group_sparse(bip.shape[0], bip.shape[1], rows, ptr)
    colors = np.full(bip.shape[1], -1, dtype=np.int64)
    colors[order] = groups
    colors[bip.col_counts == 0] = -1  # empty columns all join group 0, so no label is skipped
    return colors


def sequential_loop(bip, order):
    """The sequential greedy colouring as a plain loop, with a Python integer as the bit set of each row."""
    m, n = bip.shape
    colors = np.full(n, -1, dtype=np.int64)
    row_bits = [0] * m
    ptr, rows = bip.col_ptr.tolist(), bip.col_rows.tolist()
    for col in np.asarray(order).tolist():
        taken = 0
        for r in rows[ptr[col]:ptr[col + 1]]:
            taken |= row_bits[r]
        if ptr[col] == ptr[col + 1]:
            continue
        color = (~taken & (taken + 1)).bit_length() - 1
        bit = 1 << color
        for r in rows[ptr[col]:ptr[col + 1]]:
            row_bits[r] |= bit
        colors[col] = color
    return colors


def greedy(bip, order):
    """Greedy column colouring in `order` (a permutation of the columns): the compiled sequential engine when it
    loads; else Jones-Plassmann when its rounds stay few, and the sequential loop otherwise (at once for the natural
    order, whose rounds on a band are as many as columns)."""
    n = bip.shape[1]
    order = np.asarray(order)
    nonempty = bip.col_counts > 0
    if len(bip.row_ptr) > 1 and bip.row_counts.max() == np.count_nonzero(nonempty):
        # a row holding every column: all columns clash, each gets its own colour (no search, no n-bit sets)
        colors = np.full(n, -1, dtype=np.int64)
        ranked = order[nonempty[order]]
        colors[ranked] = np.arange(len(ranked))
        return colors
    if compiled_grouping.group_sparse() is not None or n > 1 and np.all(order[1:] > order[:-1]):
        return sequential(bip, order)
    priority = np.empty(n, dtype=np.int64)
    priority[np.asarray(order)] = np.arange(n, 0, -1)
    colors = jones_plassmann(bip, priority)
    return sequential(bip, order) if colors is None else colors


def num_colors(colors):
    return int(colors.max()) + 1 if len(colors) and colors.max() >= 0 else 0
