"""The memory and layout of a sweep's zero blocks, as the caller keeps its result: offered rows of a store, column order."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .thread_state import ThreadSlot

# The memory offered for the next zero block of its shape and dtype (rules/_util.zero_block takes it).
OFFERED = ThreadSlot()
# The offered memory, once a zero block was made in it: the sweep owns it as it owns a fresh array.
TAKEN = ThreadSlot()
# True while the offered memory holds zeros already (rows of a store from calloc that nothing wrote yet):
# the zero block is made there without a fill (6 fills of 133 MB for a 10^4 x 10^4 Jacobian swept in 6
# blocks, half of a 1000-piece concatenation's call: issue 44).
ZEROED = ThreadSlot()
# True while a sweep runs whose result the caller keeps whole in whatever layout it has (api/evaluator.py: a
# whole Jacobian block in one sweep): a vector's cotangent block may then be made in column order.
KEPT_WHOLE = ThreadSlot()
# True while a reverse sweep runs of some rows of a whole block, whose result the caller copies into its
# store's rows (api/block_stores.copy_rows, in tiles) unless the sweep made it in the rows offered to it;
# COLUMNS once a replay's compiled sweep made a block that it reads and writes one column at a time (an
# element loop's writes y[i] = v: columns_swept): its x[i] then add columns of their cotangent block too,
# made in column order rather than in the offered rows (rules/_util.zero_block), and copied in tiles.
# (A sweep that visits few columns, a concatenation's, pays the tiled copy for nothing: 1.2x on concat-1000.)
ROWS_COPIED = ThreadSlot()
COLUMNS = "columns"


def columns_swept() -> None:
    """Say that the sweep running made a block it reads and writes one column at a time (ROWS_COPIED)."""
    if ROWS_COPIED.v is True:
        ROWS_COPIED.v = COLUMNS


def column_order_allowed() -> bool:
    """Whether a zero block asked for in column order may be made so: its sweep's result is kept whole as
    it is, or copied into rows in tiles by a caller that offered no memory to this sweep (nor it took any),
    a sweep of an element loop's writes (ROWS_COPIED)."""
    return bool(KEPT_WHOLE.v) or (ROWS_COPIED.v is COLUMNS and TAKEN.v is None)


def offer_block(block: np.ndarray | None, zeroed: bool = False) -> None:
    """Offer `block` (writable memory the caller owns and holds nothing in: rows of the store a sweep's
    result is kept in) as the next zero block of its shape and dtype, so that the result is made where it
    is kept, not copied there; None withdraws the offer, taken or not (the caller does once the sweep ends).
    `zeroed`: the block holds zeros already (it is taken without a fill)."""
    OFFERED.v = block
    ZEROED.v = zeroed and block is not None
    TAKEN.v = None


def standing_offer() -> tuple | None:
    """The offer standing now, (block, zeroed), for run_offered; None if there is none."""
    return None if OFFERED.v is None else (OFFERED.v, ZEROED.v)


def run_offered(offer: tuple | None, run: Callable[[], Any]) -> Any:
    """run() with `offer` (standing_offer's) standing again: a replay's checked compiled sweep makes its
    result where the caller keeps it, as its usual sweep does (a program keeps none of the blocks it makes
    once it has run). Withdrawn after, taken or not (TAKEN says whether it was)."""
    if offer is None:
        return run()
    offer_block(*offer)
    try:
        return run()
    finally:
        OFFERED.v = None


def usual_sweep_only(sweep: Callable[[], Any]) -> Callable[[], Any]:
    """Withdraw the offer standing now, if any, and return `sweep` (a replay's usual sweep) made to take it:
    the sweeps a replay traces into programs, and the checks of those programs, never see offered memory (a
    program would hold the offered rows as a constant); its usual sweep makes its result where a plain
    recording's would, and so does a checked program, the offer stood again for it (run_offered)."""
    offered, zeroed = OFFERED.v, ZEROED.v
    if offered is None:
        return sweep
    OFFERED.v = None

    def usual() -> Any:
        offer_block(offered, zeroed and TAKEN.v is not offered)  # (a program that failed may have written there)
        if ROWS_COPIED.v is COLUMNS:
            ROWS_COPIED.v = True  # (said by a program traced or run before: this sweep takes the rows as a plain one)
        try:
            return sweep()
        finally:
            OFFERED.v = None  # (TAKEN stays: the caller reads it as the sweep's result's memory)
    return usual


def fresh(a: Any) -> bool:
    """Whether an array a rule returned is memory of its own that the sweep may add into: a new array, or
    the offered block it was made in."""
    return a.base is None or a is TAKEN.v
