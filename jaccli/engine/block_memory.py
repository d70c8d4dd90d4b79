"""The memory and layout of a sweep's zero blocks, as the caller keeps its result: offered rows of a store, column order."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .thread_state import ThreadSlot

# The memory offered for the next zero block of its shape and dtype (rules/_util.zero_block takes it).
OFFERED = ThreadSlot()
# The offered memory, once a zero block was made in it: the sweep owns it as it owns a fresh array.
TAKEN = ThreadSlot()
# True while a sweep runs whose result the caller keeps whole in whatever layout it has (api/evaluator.py: a
# whole Jacobian block in one sweep): a vector's cotangent block may then be made in column order.
KEPT_WHOLE = ThreadSlot()


def offer_block(block: np.ndarray | None) -> None:
    """Offer `block` (writable memory the caller owns and holds nothing in: rows of the store a sweep's
    result is kept in) as the next zero block of its shape and dtype, so that the result is made where it
    is kept, not copied there; None withdraws the offer, taken or not (the caller does once the sweep ends)."""
    OFFERED.v = block
    TAKEN.v = None


def usual_sweep_only(sweep: Callable[[], Any]) -> Callable[[], Any]:
    """Withdraw the offer standing now, if any, and return `sweep` (a replay's usual sweep) made to take it:
    a replay's compiled sweeps, and the sweeps it traces into programs, never see offered memory (a program
    may keep the blocks it makes, or hold the offered rows as a constant); its usual sweep makes its result
    where a plain recording's would."""
    offered = OFFERED.v
    if offered is None:
        return sweep
    OFFERED.v = None

    def usual() -> Any:
        offer_block(offered)
        try:
            return sweep()
        finally:
            OFFERED.v = None  # (TAKEN stays: the caller reads it as the sweep's result's memory)
    return usual


def fresh(a: Any) -> bool:
    """Whether an array a rule returned is memory of its own that the sweep may add into: a new array, or
    the offered block it was made in."""
    return a.base is None or a is TAKEN.v
