"""The C heap's thresholds, raised once so that a call's large arrays reuse the process's pages.

glibc's malloc hands an allocation above its mmap threshold (128 KB at start) a mapping of its own,
and returns the free top of its heap to the system once that exceeds its trim threshold (128 KB at
start). Freeing a mapped block raises both, to the block's size and twice it (its dynamic
threshold, up to 32 MB). A process whose largest freed array is about as large as a sweep's
blocks stays near the start: a Jacobian call at n = 256 (blocks of 0.5 MB, a few MB at its peak)
then gets its memory from the system and gives it back at every call, and touching fresh pages
costs ~700 page faults a call, more than the sweep's own work (the KS residual of
benchmarks/spectral.py; a process that had freed a larger array, NumPy's or another library's,
does not pay them). One block of `_BLOCK` bytes, mapped and freed without being touched, raises
the thresholds as such an array would: blocks below it come from the heap, and the heap keeps up
to twice it of free memory. Nothing changes where the thresholds are higher already or set by the
user (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, mallopt), nor with another C library.
"""

from __future__ import annotations

import numpy as np

_BLOCK = 8 << 20  # 8 MB: the heap keeps at most 16 MB free


def raise_thresholds() -> None:
    """Map and free one untouched block of `_BLOCK` bytes (glibc: see the module docstring)."""
    block = np.empty(_BLOCK, dtype=np.uint8)
    del block
