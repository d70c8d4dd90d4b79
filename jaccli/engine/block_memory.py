"""Memory a caller offers a sweep for its result's zero block: the rows of the store the result is kept in."""

from __future__ import annotations

from typing import Any

import numpy as np

from .thread_state import ThreadSlot

# The memory offered for the next zero block of its shape and dtype (rules/_util.zero_block takes it).
OFFERED = ThreadSlot()
# The offered memory, once a zero block was made in it: the sweep owns it as it owns a fresh array.
TAKEN = ThreadSlot()


def offer_block(block: np.ndarray | None) -> None:
    """Offer `block` (writable memory the caller owns and holds nothing in: rows of the store a sweep's
    result is kept in) as the next zero block of its shape and dtype, so that the result is made where it
    is kept, not copied there; None withdraws the offer, taken or not (the caller does once the sweep ends)."""
    OFFERED.v = block
    TAKEN.v = None


def fresh(a: Any) -> bool:
    """Whether an array a rule returned is memory of its own that the sweep may add into: a new array, or
    the offered block it was made in."""
    return a.base is None or a is TAKEN.v
