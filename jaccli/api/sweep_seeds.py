"""The seeds of the evaluator's sweeps, and how many go into one sweep (the memory budget)."""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np

from jaccli.engine import SparseBlock
from jaccli.errors import UsageError
from jaccli.io.byte_sizes import parse_size

DENSE_SEED_ELEMENTS = 16384
# ... unless f makes values this many times larger than the seeded side: pairwise differences
# x[:, None] - x[None, :] of 38 atoms (lj-hessian-114) carry a row and a column per seed, where a
# dense block of seeds carries all 38 x 38 x 3 (plain Hessian 23 ms dense, 4 ms structured)
DENSE_SEED_GROWTH = 16
DEFAULT_MEMORY_BUDGET = 512 * 2**20


def default_memory_budget() -> int:
    """Bytes of working memory for one batch of sweeps (chunk_size="auto"): JACCLI_MEMORY_BUDGET, a
    size as --max-memory takes it (512MiB, 2G, bytes), else DEFAULT_MEMORY_BUDGET."""
    global _BUDGET
    cached = _BUDGET  # one read: another thread may replace it meanwhile, never part of it
    environ = os.environ
    # (the variable's raw value, where os.environ keeps it: 0.06 us, where get() takes 1.8)
    raw = _ENV_DATA.get(_BUDGET_KEY) if environ is _ENVIRON and _ENV_DATA is not None else _UNREAD
    if raw is not _UNREAD and (raw is cached[2] or raw == cached[2]):
        return cached[1]
    text = environ.get(BUDGET_VARIABLE, "")
    if text == cached[0]:
        budget = cached[1]
    elif not text.strip():
        budget = DEFAULT_MEMORY_BUDGET
    else:
        try:
            budget = parse_size(text)
        except ValueError as exc:
            raise UsageError(f"the environment variable JACCLI_MEMORY_BUDGET: {exc}") from None
    _BUDGET = (text, budget, raw)
    return budget


BUDGET_VARIABLE = "JACCLI_MEMORY_BUDGET"
# The last JACCLI_MEMORY_BUDGET read: its text, its size, and its raw value in os.environ's own mapping
_UNREAD = object()
_BUDGET: tuple = (None, None, _UNREAD)
# os.environ's mapping of encoded names to encoded values (CPython's os._Environ keeps it, and every change made
# through os.environ is made there): a steady call reads the variable there (os.environ.get's encoding of the name
# and Mapping.get took 1.8 us of each P1-n100 steady call). Where os.environ is replaced or has no such mapping,
# get() reads it
_ENVIRON = os.environ
_ENV_DATA = getattr(_ENVIRON, "_data", None) if hasattr(_ENVIRON, "encodekey") else None
_BUDGET_KEY = _ENVIRON.encodekey(BUDGET_VARIABLE) if _ENV_DATA is not None else None
if type(_ENV_DATA) is not dict:
    _ENV_DATA = None


# Seeds of a whole block of up to so many rows (columns) are kept with the recording: making them
# again costs as much as a small sweep, and they are the same for every replay.
_KEPT_SEEDS = 4096


def frozen(seed: Any) -> Any:
    for a in (seed,) if type(seed) is np.ndarray else (seed.idx, seed.val, seed.u, seed.v):
        if a is not None:
            a.flags.writeable = False
    return seed


class SweepSeeds:
    """Identity seeds for rows (reverse sweeps) and columns (forward sweeps), and chunk sizes.

    Mixed into Evaluator, whose __init__ sets what these read: rec, batch, B, M, N, chunk_size and
    memory_budget; `_has_products` is the Evaluator's.
    """

    # -- chunking --------------------------------------------------------------
    def chunk(self, needed: int, per_seed_elems: int) -> int:
        if isinstance(self.chunk_size, int):
            return max(1, min(self.chunk_size, needed))
        # One seed carries a block as large as the largest recorded value through the sweep;
        # a few such blocks are alive at once.
        largest = max(per_seed_elems, self.rec.trace.largest, max(self.M + self.N + [1]))
        per_seed = 8 * 4 * max(largest, 1)
        return max(1, min(needed, self.memory_budget // per_seed))

    # -- seeds -------------------------------------------------------------------
    def _row_seed(self, i: int, rows: np.ndarray, structured: bool = False) -> SparseBlock:
        def make(rows: np.ndarray) -> Any:
            dt = np.result_type(self.rec.outputs[i])
            return self._seed(rows, self.rec.out_shape(i), self.M[i], dt if dt.kind == "f" else np.dtype(np.float64),
                              structured)
        return self._kept_seed(("rows", i, structured), rows, self.M[i], make)

    def _col_seed(self, j: int, cols: np.ndarray, structured: bool = False) -> SparseBlock:
        def make(cols: np.ndarray) -> Any:
            return self._seed(cols, self.rec.in_shape(j), self.N[j], np.result_type(self.rec.inputs[self.rec.wrt[j]]),
                              structured)
        return self._kept_seed(("cols", j, structured), cols, self.N[j], make)

    def _seeds(self, seed_of: Callable, k: int, positions: np.ndarray, count: int) -> tuple[list, list | None]:
        """A sweep's seeds for elements `positions` of output (or input) k of `count`: the identity
        rows, and where they are dense (a small block) and the recording a replay, which may compile
        its sweeps, the same rows structured, for the compiled sweep (Recording._programmed)."""
        seed = seed_of(k, positions)
        alt = seed_of(k, positions, structured=True) if type(seed) is np.ndarray and self.rec.compiles() else None
        return ([seed if o == k else None for o in range(count)],
                None if alt is None else [alt if o == k else None for o in range(count)])

    def _kept_seed(self, what: tuple, positions: np.ndarray, size: int, make: Callable[[np.ndarray], Any]) -> Any:
        """make()'s seeds for `positions`; those of a whole block (up to _KEPT_SEEDS positions) made
        once per recording and kept with it, for its replays (a record_once function's calls),
        read-only: the shapes decide them, and no sweep writes into its seeds."""
        if positions.size != size or size > _KEPT_SEEDS:
            return make(positions)
        return self.rec.shared(what + (self.batch, self._has_products(), positions.tobytes()),
                               lambda: frozen(make(positions.copy())))  # (a copy: the seed may view it)

    def _seed(self, positions: np.ndarray, shape: tuple, per_sample: int, dtype: Any, structured: bool = False) -> Any:
        """Identity seeds e_p for p in positions; batched: e_p in every sample at once.

        Structured (SparseBlock) seeds avoid dense identity blocks. A small block through a
        recording without matrix products is the exception: its dense arithmetic costs less than
        the structured bookkeeping (measured on the benchmark's n = 100 problems), while a matrix
        product gathers a few rows from a structured seed faster than it multiplies a dense one,
        and values much larger than the seeded side (DENSE_SEED_GROWTH) broadcast a few entries
        per seed over positions a dense block would fill for every seed.
        `structured`: a structured block whatever its size (for a compiled sweep: see _seeds).
        """
        positions = np.asarray(positions, dtype=np.intp)
        if not structured and positions.size * math.prod(shape) <= DENSE_SEED_ELEMENTS and not self._has_products() \
                and self.rec.trace.largest <= DENSE_SEED_GROWTH * max(math.prod(shape), 1):
            seed = np.zeros((positions.size, math.prod(shape)), dtype=dtype)
            if self.batch:
                per_seed = positions[:, None] + per_sample * np.arange(self.B, dtype=np.intp)[None, :]
                seed[np.arange(positions.size)[:, None], per_seed] = 1.0
            else:
                seed[np.arange(positions.size), positions] = 1.0
            return seed.reshape((positions.size,) + tuple(shape))
        if self.batch:
            per_seed = positions[:, None] + per_sample * np.arange(self.B, dtype=np.intp)[None, :]
            return SparseBlock.one_hot(positions, shape, dtype, per_seed=per_seed)
        return SparseBlock.one_hot(positions, shape, dtype)
