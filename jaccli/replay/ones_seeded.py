"""A compiled sweep seeded with ones, rewritten: its multiplications by one dropped, its values without the seed axis.

An elementwise output's diagonal is one forward sweep seeded with a tangent of ones (api's
DiagonalBlocks): its program multiplies each factor of the chain rule by those ones (three of
P1-n100's nine NumPy calls) and carries a leading seed axis of length 1 that every later call
broadcasts against the recording's values (a broadcast of (1, n) against (n,) costs 2.5x the
same call on two (n,) arrays). Where the program is NumPy's elementwise functions (ufuncs) and
the finite and nonzero checks alone, neither changes a number: x * 1 is x to the bit (NaN and
infinities included) where it keeps x's dtype, and an elementwise function gives each element the
same value whatever length-1 axes its arguments carry. So `rewritten` gives the same program with
those multiplications gone, what the seed and constants alone give computed once, constants equal
throughout made scalars of their dtype, and each result given its recorded shape at the end.
Anything else (another kind of step or guard, a result that would be no fresh array of the
program's own) keeps the program as it is. The program is then checked against the usual sweep
as every program is (replays.Replayable.answer).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .codegen import STEP
from .guards import _COUNT, ErrstateRun

_NUMPY_2 = int(np.__version__.split(".")[0]) >= 2  # (NumPy 1's value-based casting: a scalar may promote otherwise)


def ones_form(seed: Any) -> bool:
    """Whether a plain array seed is all ones for good: read-only, real, every entry 1 (the diagonal's tangent)."""
    return type(seed) is np.ndarray and not seed.flags.writeable and all_ones(seed)


def all_ones(a: np.ndarray) -> bool:
    """Whether an array is real floats, at least one, every one 1 (its first entry looked at first: most are not)."""
    return a.dtype.kind == "f" and a.size > 0 and a.flat[0] == 1 and not _COUNT(a != 1)  # (ndarray.all: slower)


def rewritten(steps: list, loads: dict, results: list, ones: dict[int, np.ndarray], meta: dict) -> tuple | None:
    """(steps, loads, results) of the program seeded with `ones` (slot -> the seed, all ones) rewritten as the
    module says; None where it cannot be. `meta`: slot -> (shape, dtype) of the values the sweep made or read."""
    if not _NUMPY_2 or not ones:
        return None
    env: dict[int, tuple] = {}  # slot -> ("slot", k) read at run time, or ("const", value)
    for slot, (source, _) in loads.items():
        if slot in ones:
            env[slot] = ("const", ones[slot].dtype.type(1))  # (ones_form: all ones, a scalar of their dtype)
        elif source == "vals":
            env[slot] = ("slot", slot)
        else:
            return None
    out: list = []
    read: set[int] = set()
    for step in steps:
        k, fn, args, fills, kwargs, state, expected = step
        if expected is not STEP:
            got = _guard(step, env)
            if got is None:
                return None
            if got is not True:
                out.append(got)
                read.add(got[3][0][1])
            continue
        if type(fn) is not np.ufunc or kwargs or len(args) != fn.nin or k not in meta:
            return None
        operands = list(args)
        for i, slot, index in fills:
            if index is not None or slot not in env:
                return None
            operands[i] = env[slot]
        slots = 0
        for i, w in enumerate(operands):
            if type(w) is not tuple:
                w = operands[i] = _constant(w)
                if w is None:
                    return None
            if w[0] == "slot":
                slots += 1
        if not slots:  # (what the seed and constants alone give: computed now, as the program would)
            if not _quiet(state):
                return None
            run = ErrstateRun()  # (the step's own state, warnings off: np.errstate costs several times more)
            try:
                run.set(state)
                env[k] = ("const", _scalar(np.asarray(fn(*[w[1] for w in operands]))))
            finally:
                run.close()
            continue
        kept = _times_one(fn, operands, meta[k][1], meta)
        if kept is not None:
            env[k] = kept
            continue
        env[k] = ("slot", k)
        new_fills = []
        for i, w in enumerate(operands):
            if w[0] == "slot":
                new_fills.append((i, w[1], None))
                read.add(w[1])
        new_args = tuple([None if w[0] == "slot" else w[1] for w in operands])
        out.append((k, fn, new_args, tuple(new_fills), {}, state, STEP))
    made = {st[0] for st in out if st[6] is STEP}
    free = 1 + max([k for k in meta] + list(loads) + [-1])
    new_results = []
    state = out[-1][5] if out else None  # (the last step's error state: no change of state to reshape)
    for r in results:
        if r is None or r[0] != "slot" or r[2] is not None or r[1] not in meta:
            return None
        got = env.get(r[1])
        if got is None or got[0] != "slot" or got[1] not in made:
            return None  # (a constant, or a value the program does not make: the original hands out its own)
        out.append((free, np.ndarray.reshape, (None, meta[r[1]][0]), ((0, got[1], None),), {}, state, STEP))
        new_results.append(("slot", free, None))
        free += 1
    return out, {s: w for s, w in loads.items() if s in read}, new_results


def _guard(step: tuple, env: dict) -> Any:
    """A finite or nonzero check kept (the step, reading its value's new slot), True where it holds of
    a constant, or None: a check of another sort, or one that fails."""
    k, fn, args, fills, kwargs, state, expected = step
    if expected is not True or kwargs or len(fills) != 1 or args != (None,) or fills[0][2] is not None \
            or getattr(fn, "fused_check", None) not in ("finite", "nonzero"):
        return None
    w = env.get(fills[0][1])
    if w is None:
        return None
    if w[0] == "const":
        return True if fn(np.asarray(w[1])) is True else None
    return (k, fn, args, ((0, w[1], None),), kwargs, state, expected)


def _times_one(fn: Any, operands: list, dtype: np.dtype, meta: dict) -> tuple | None:
    """The operand that a multiplication by one gives unchanged (a value of the product's real float dtype), or None."""
    if fn is not np.multiply or dtype.kind != "f":
        return None
    for a, b in (operands, operands[::-1]):
        if a[0] == "const" and _is_one(a[1]):
            if b[0] == "slot" and b[1] in meta and (meta[b[1]][1] is dtype or meta[b[1]][1] == dtype):
                return b
    return None


def _is_one(c: Any) -> bool:
    t = type(c)
    if t is float or t is int:
        return c == 1
    return isinstance(c, (np.floating, np.integer)) and c == 1


def _constant(c: Any) -> tuple | None:
    """A constant argument as the rewritten program passes it: a Python number as it is; an array equal
    throughout, as a scalar of its dtype; an array with a leading length-1 axis (the seed's), without it."""
    if c is None or isinstance(c, (bool, int, float, np.generic)):
        return ("const", c)
    if type(c) is not np.ndarray or c.dtype.kind not in "fiub":
        return None
    return ("const", _scalar(c))


def _scalar(c: np.ndarray) -> Any:
    if c.ndim == 0:
        return c[()]
    if c.size and (c == c.flat[0]).all():
        return c.flat[0]  # (a scalar of c's dtype: promoted as c is, NumPy 2)
    while c.ndim > 1 and c.shape[0] == 1:
        c = c[0]
    return c


def _quiet(state: Any) -> bool:
    """Whether a step's error state ignores every floating-point error (a sweep's): it may then run now."""
    return isinstance(state, dict) and set(state.values()) == {"ignore"}
