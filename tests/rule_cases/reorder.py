"""Rows for the reordering family: flip, rot90, roll, sort and sliding windows."""

import numpy as np

from . import Case, r

WINDOWS = "np.lib.stride_tricks.sliding_window_view"
windows = np.lib.stride_tricks.sliding_window_view

CASES = [
    Case("np.flip", lambda x: np.flip(x) ** 3, (r(2, 3),), order=3, id="flip-axis-none"),
    Case("np.flip", lambda x: np.sin(np.flip(x, -1)), (r(2, 3),), id="flip-axis-int"),
    Case("np.flip", lambda x: np.flip(x, (0, 2)) * x, (r(2, 3, 2),), id="flip-axis-tuple"),
    Case("np.fliplr", lambda x: np.fliplr(x) * x, (r(3, 3),)),
    Case("np.flipud", lambda x: np.flipud(x) ** 2, (r(3, 2),)),
    Case("np.rot90", lambda x: np.rot90(x) ** 2, (r(2, 3),)),
    Case("np.rot90", lambda x: np.rot90(x, 2) * x, (r(3, 3),), id="rot90-half-turn"),
    Case("np.rot90", lambda x: np.rot90(x, -1, axes=(2, 1)) ** 2, (r(2, 3, 4),), id="rot90-three-quarters-axes"),
    Case("np.rot90", lambda x: np.rot90(x, 4) * x, (r(2, 2),), id="rot90-full-turn"),
    Case("np.roll", lambda x: np.sin(np.roll(x, 2)), (r(2, 3),), order=3, id="roll-axis-none"),
    Case("np.roll", lambda x: np.sin(np.roll(x, -1, axis=1)), (r(2, 3),), id="roll-axis-int"),
    Case("np.roll", lambda x: np.roll(x, (1, 2), axis=(0, -1)) * x, (r(2, 3),), id="roll-axis-tuple"),
    Case(WINDOWS, lambda x: np.sum(windows(x, 3) ** 2, axis=-1) * x[1:-1], (r(6),), order=3, id="windows-1d"),
    Case(WINDOWS, lambda x: np.sin(windows(x, (2, 3))), (r(3, 4),), id="windows-2d"),
    Case(WINDOWS, lambda x: windows(x, 2, axis=0) ** 2, (r(3, 4),), id="windows-axis-0"),
    Case(WINDOWS, lambda x: windows(x, window_shape=(2, 2), axis=(-1, 0)) ** 3, (r(3, 2, 4),),
         id="windows-axes-tuple"),
    Case(WINDOWS, lambda x: np.cos(windows(x, (2, 2), axis=(1, 1))), (r(2, 5),), id="windows-same-axis-twice"),
    Case(WINDOWS, lambda x: windows(x, 4, writeable=True).mean(axis=-1) ** 2, (r(5),), id="windows-writeable-read"),
    Case("np.sort", lambda x: np.sort(x) ** 3, (r(3, 4),), order=3),
    Case("np.sort", lambda x: np.sin(np.sort(x, axis=0)), (r(3, 4),), id="sort-axis-0"),
    Case("np.sort", lambda x: np.sort(x, axis=None) * np.arange(12.0), (r(3, 4),), id="sort-axis-none"),
    Case("np.partition", lambda x: np.partition(x, [1, 3], axis=1) ** 2 + np.partition(x, 1, axis=None)[:12].reshape(3, 4),
         (r(3, 4),)),
    Case("np.unique", lambda x: np.unique(np.concatenate([x, x[:2]]), return_counts=True)[0] ** 2, (r(5),)),
    Case("np.trim_zeros", lambda x: np.trim_zeros(np.concatenate([np.zeros(2), x, np.zeros(1)])) ** 2, (r(4),)),
    Case(("np.maximum.accumulate", "np.minimum.accumulate"),
         lambda x: np.maximum.accumulate(x, axis=1) ** 2 + np.minimum.accumulate(x) * x, (r(3, 5),),
         id="running-extremes"),
]
