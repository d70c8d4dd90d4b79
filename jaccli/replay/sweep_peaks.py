"""What the usual sweep of a recording holds at its peak, told from the recording's structure alone.

A traced sweep (compiled_sweeps) may hold as much as the usual sweep would: its program is no memory
trap then. Before tracing, what the usual sweep will hold is told from the nodes on its path, their
values' sizes and the number of seeds, as so many dense blocks.
"""

from __future__ import annotations

import heapq
from typing import Any

from jaccli.engine import ELEMENTWISE


def usual_peak(outputs: tuple, inputs: tuple, k: int, floor: int) -> int:
    """Bytes of large blocks the usual sweep of `k` seeds holds at once at least: the most that one
    rule on its path holds, its node's blocks beside its parents' (k per value, dense), counting
    those of `floor` bytes or more. Where the intermediates are larger than the results (a pair energy's
    Hessian: 114 tangents of its 38 x 38 x 3 differences beside a 114 x 114 result), the usual sweep
    holds them too, and a traced sweep that holds no more is no trap."""
    mask = 0
    for node in inputs:
        mask |= node.deps
    needed = {n.index: n for n, _ in outputs if n.deps & mask}
    todo = [-i for i in needed]  # (by index, highest first: a parent's index is below its node's)
    heapq.heapify(todo)
    peak = 0
    while todo:
        node = needed[-heapq.heappop(todo)]
        held, edges, seen = 0, 0, set()
        for _, parent, i in node.parents:
            if parent.deps & mask:
                edges += 1
                if (parent.index, i) not in seen:
                    seen.add((parent.index, i))
                    held += _block(parent.value, i, k, floor)
                if parent.index not in needed:
                    needed[parent.index] = parent
                    heapq.heappush(todo, -parent.index)
        # an elementwise rule of several traced arguments makes a term as large as its block per
        # argument, then their sum (d * d: d's tangents, two products, their sum)
        made = edges + 1 if node.prim.structure == ELEMENTWISE and edges > 1 else 1
        peak = max(peak, held + made * _block(node.value, None, k, floor))
    return peak


def _block(value: Any, i: int | None, k: int, floor: int) -> int:
    """Bytes of k tangents (or cotangents) of a node's value (output i of a tuple), when `floor` or more."""
    if i is not None and type(value) is tuple:
        value = value[i]
    elif type(value) is tuple:
        return sum(_block(v, None, k, floor) for v in value)
    made = k * getattr(value, "nbytes", 8)
    return made if made >= floor else 0
