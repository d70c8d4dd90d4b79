"""Where arrays' elements lie in memory: their addresses, and whether two arrays are the same memory."""

from __future__ import annotations

import numpy as np

TOO_HARD = getattr(np, "exceptions", np).TooHardError  # np.exceptions is NumPy >= 1.25


def same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a and b are the same elements of memory, in the same layout."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.shape == b.shape
            and a.strides == b.strides)


def element_addresses(a: np.ndarray) -> np.ndarray:
    """The address of every element of a (same shape as a)."""
    out = np.full(a.shape, a.__array_interface__["data"][0], dtype=np.intp)
    for axis, (n, stride) in enumerate(zip(a.shape, a.strides)):
        out += (np.arange(n, dtype=np.intp) * stride).reshape((n,) + (1,) * (a.ndim - axis - 1))
    return out
