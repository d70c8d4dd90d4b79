"""Runs of steps that repeat (the iterations of a Python loop in a recording), to be written as a loop.

A recording of `for _ in range(200): z = rk4_step(z)` is the same few dozen operations 200 times,
each reading the values of the iteration before. Written out as straight-line code (codegen) it
is 200 copies of the same lines: Python keeps some 300 bytes of code object per line, so a
16,000-step RK4 replay and its sweep kept 11 MB of code, more than a plain call's whole peak
(issue 44). Such a run is written once, as the body of a `for` loop over the iterations, with its
slots counted from the iteration's start.

A step is described relative to its place (the slots it reads counted back from the last slot made
so far, its constants by value where they are numbers, the values that die at it): two iterations
repeat where their descriptions are equal and the slots and the positions of the values they load
(a reverse sweep reads the replay's values backwards) advance by a fixed amount per iteration.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

# A run shorter than this (in iterations, in steps) is left straight: the loop's few lines and
# the indexing of slots from the iteration's start are not worth it.
MIN_REPS = 4
MIN_STEPS = 200

_MARK = object()  # the description of a step that repeats nothing (a guard on an array)


class Run:
    """Steps a .. a + period * reps - 1: `reps` iterations of `period` steps; `shift`: how far
    the slots move per iteration; `strides`: (step position in the body, fill position) -> how
    far the position of a loaded value moves per iteration; `stored`: the slots (of the first
    iteration) made in the body that a later iteration, a later step or the results read."""

    __slots__ = ("a", "period", "reps", "shift", "strides", "stored")

    def __init__(self, a: int, period: int, reps: int) -> None:
        self.a, self.period, self.reps = a, period, reps
        self.shift = 0
        self.strides: dict[tuple[int, int], int] = {}
        self.stored: set[int] = set()


_NONE = (type(None), "None")  # (most arguments: a value filled in; made once, not per step)


def _key(a: Any) -> Any:
    if a is None:
        return _NONE
    t = type(a)
    if t is bool or t is int or t is float or t is complex or t is str:
        return t, repr(a)  # (repr: -0.0 is not 0.0, and a nan equals itself)
    if t is tuple or t is list:
        return t, tuple(_key(x) for x in a)
    if t is slice:
        return slice, _key(a.start), _key(a.stop), _key(a.step)
    if a is Ellipsis or isinstance(a, (np.generic, np.dtype)):
        return t, repr(a)
    return "id", id(a)


def find(steps: Sequence[tuple], loads: dict, dying: dict[int, list[int]], kept: set,
         step_mark: object) -> list[Run]:
    """The runs of `steps` that repeat, in order, none overlapping."""
    n = len(steps)
    if n < MIN_STEPS:
        return []
    ids: list[int] = []
    refs: list[int] = []
    named: dict[Any, int] = {}
    ref = -1
    for j, (k, fn, args, fills, kwargs, state, expected) in enumerate(steps):
        is_step = expected is step_mark
        if is_step:
            ref = max(ref, k)
        refs.append(ref)
        if not is_step and expected is not True and expected is not False and expected is not None:
            ids.append(-1 - j)  # (unique: never equal to another's)
            continue
        where = tuple((i, "l", loads[slot][0], _key(index)) if slot in loads else (i, "m", ref - slot, _key(index))
                      for i, slot, index in fills)
        desc = (id(fn), tuple(map(_key, args)), tuple((w, _key(v)) for w, v in kwargs.items()), id(state),
                "step" if is_step else expected, k - ref if is_step else None, where,
                tuple(sorted(ref - s for s in dying.get(j, ()))))
        ids.append(named.setdefault(desc, len(named)))
    last: dict[int, int] = {}
    gaps: Counter = Counter()
    for j, d in enumerate(ids):
        if d in last:
            gaps[j - last[d]] += 1
        last[d] = j
    runs: list[Run] = []
    taken = bytearray(n)
    for p, _ in gaps.most_common(3):
        j = 0
        while j + p < n:
            if ids[j] != ids[j + p] or taken[j] or taken[j + p]:
                j += 1
                continue
            a = j
            while j + p < n and ids[j] == ids[j + p] and not taken[j + p]:
                j += 1
            run = _checked(steps, loads, refs, kept, Run(a, p, (j + p - a) // p), step_mark)
            if run is not None:
                runs.append(run)
                taken[run.a:run.a + run.period * run.reps] = b"\1" * (run.period * run.reps)
            j = max(j, a + 1)
    return sorted(runs, key=lambda r: r.a)


def _checked(steps: Sequence[tuple], loads: dict, refs: list[int], kept: set, run: Run,
             step_mark: object) -> Run | None:
    """The run, with its shift, strides and stored slots, if its iterations advance evenly and
    it is long enough; else None."""
    a, p, reps = run.a, run.period, run.reps
    if reps < MIN_REPS or p * reps < MIN_STEPS:
        return None
    run.shift = refs[a + p] - refs[a]
    if run.shift <= 0:
        return None
    made = {steps[a + t][0]: t for t in range(p) if steps[a + t][6] is step_mark}
    for t in range(p):
        for f, (_, slot, _) in enumerate(steps[a + t][3]):
            if slot in loads:
                stride = loads[steps[a + p + t][3][f][1]][1] - loads[slot][1]
                run.strides[t, f] = stride
                for r in range(2, reps):
                    if loads[steps[a + r * p + t][3][f][1]][1] - loads[slot][1] != r * stride:
                        return None
        for r in range(1, reps):
            if refs[a + r * p + t] - refs[a + t] != r * run.shift:
                return None
    # what reads each slot last: a value that an iteration makes is kept in the driver's list
    # when anything after its iteration reads it
    last: dict[int, int] = {}
    for j in range(a, len(steps)):
        for _, slot, _ in steps[j][3]:
            last[slot] = j
    for k, t in made.items():
        for r in range(reps):
            kr = k + r * run.shift
            if kr in kept or last.get(kr, -1) >= a + (r + 1) * p:
                run.stored.add(k)
                break
    return run
