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

An element loop (`y[i] = x[i] * x[i + 1]` for i in range(n)) makes iterations whose index constants
differ (`(i,)`, `i + 1`): written out straight, its thousands of lines cost a compile of 3-5 plain
calls (issue 44). So where no run repeats exactly, steps are compared again with their int
constants (an int argument, an int in a tuple or list argument, a slice's bound) left out, and a
run is kept where each such constant moves by a fixed step from one iteration to the next over
the whole run (`counted`): the loop's body computes it from the loop counter, the same int the
straight-line code would pass. Where the progression breaks (an index wrapped by `%` at the end)
the run stops before the iteration that breaks it, which stays straight. Such a run may also read
values made before it at a pace of its own (`far`: a stack's sweep reads its cotangent's parts,
made at once, one an iteration), where an exact one reads them at the run's shift.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Sequence

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

    __slots__ = ("a", "period", "reps", "shift", "strides", "stored", "counted", "far")

    def __init__(self, a: int, period: int, reps: int) -> None:
        self.a, self.period, self.reps = a, period, reps
        self.shift = 0
        self.strides: dict[tuple[int, int], int] = {}
        self.stored: set[int] = set()
        # (step position in the body, argument position) -> {path in the argument: (first, step)}:
        # the int constants that move by `step` per iteration (path: see `_ints`)
        self.counted: dict[tuple[int, int], dict[tuple, tuple[int, int]]] = {}
        # slot (of the first iteration) -> how far it moves per iteration, for the values made
        # before the run that its iterations read at another pace than `shift` (a stack's sweep
        # reads the parts of its cotangent one by one, made all at once before the loop)
        self.far: dict[int, int] = {}


_NONE = (type(None), "None")  # (most arguments: a value filled in; made once, not per step)


_AN_INT = (int, "?")  # an int constant's key where ints are left out (see `_key`)


def _key(a: Any, ints: list | None = None) -> Any:
    """A key that tells constants apart as a call would (1, 1.0, True; -0.0, 0.0); with `ints`,
    the key leaves out the ints (an int argument, the ints of a tuple or list, a slice's bounds),
    which it appends there in order."""
    if a is None:
        return _NONE
    t = type(a)
    if t is int and ints is not None:
        ints.append(a)
        return _AN_INT
    if t is bool or t is int or t is float or t is complex or t is str:
        return t, repr(a)  # (repr: -0.0 is not 0.0, and a nan equals itself)
    if t is tuple or t is list:
        return t, tuple([_key(x, ints) for x in a])
    if t is slice:
        return slice, _key(a.start, ints), _key(a.stop, ints), _key(a.step, ints)
    if a is Ellipsis or isinstance(a, (np.generic, np.dtype)):
        return t, repr(a)
    return "id", id(a)


def find(steps: Sequence[tuple], loads: dict, dying: dict[int, list[int]], kept: set,
         step_mark: object) -> list[Run]:
    """The runs of `steps` that repeat, in order, none overlapping: first those whose iterations
    are equal, then, among the steps left, those whose int constants count (see the module's doc)."""
    n = len(steps)
    if n < MIN_STEPS:
        return []
    refs: list[int] = []
    ref = -1
    for k, *_, expected in steps:
        if expected is step_mark:
            ref = max(ref, k)
        refs.append(ref)
    runs: list[Run] = []
    taken = bytearray(n)
    read_last: dict[int, int] = {}  # slot -> the last step that reads it
    for j, step in enumerate(steps):
        for _, slot, _ in step[3]:
            read_last[slot] = j
    for ids in _ids(steps, loads, dying, refs, step_mark):
        _add_runs(ids, steps, loads, dying, refs, kept, read_last, step_mark, taken, runs)
    return sorted(runs, key=lambda r: r.a)


def _ids(steps: Sequence[tuple], loads: dict, dying: dict[int, list[int]], refs: list[int],
         step_mark: object) -> tuple[list[int], list[int]]:
    """Each step's description as a number, equal for equal ones (unique for one that repeats
    nothing): exactly, and with its int arguments and which values it reads and lets go left
    out (left to _checked, which allows a value made before the run read at a pace of its own).
    An exact description is the other with what it leaves out, each made once a step."""
    exact: list[int] = []
    loose: list[int] = []
    named: dict[Any, int] = {}
    named_exact: dict[Any, int] = {}
    keywords: dict[int, Any] = {}
    # id of an argument tuple -> the number of its key, and its ints: steps share their equal tuples
    # (codegen._shared), a loop's iterations the same few, whose keys are made (and hashed in each
    # description) once here, not once a step (`steps` holds the tuples meanwhile)
    arg_keys: dict[int, tuple] = {}
    numbered: dict[Any, int] = {}
    for j, (k, fn, args, fills, kwargs, state, expected) in enumerate(steps):
        is_step = expected is step_mark
        if not is_step and expected is not True and expected is not False and expected is not None:
            exact.append(-1 - j)  # (unique: never equal to another's)
            loose.append(-1 - j)
            continue
        ref = refs[j]
        known = arg_keys.get(id(args))
        if known is None:
            ints: list[int] = []
            key = tuple([_key(a, ints) for a in args])
            known = arg_keys[id(args)] = (numbered.setdefault(key, len(numbered)), tuple(ints))
        kw = keywords.get(id(kwargs))  # (a loop's steps share their keywords)
        if kw is None:
            key = ("keywords", tuple([(w, _key(v)) for w, v in kwargs.items()]))
            kw = keywords[id(kwargs)] = (kwargs, numbered.setdefault(key, len(numbered)))
        gone = dying.get(j, ())
        desc = (id(fn), known[0], kw[1], id(state),
                "step" if is_step else expected, k - ref if is_step else None,
                tuple([(i, loads[slot][0] if slot in loads else None, _NONE if index is None else _key(index))
                       for i, slot, index in fills]),
                len(gone))
        d = named.setdefault(desc, len(named))
        loose.append(d)
        exact.append(named_exact.setdefault(
            (d, known[1], tuple([ref - slot for _, slot, _ in fills if slot not in loads]),
             tuple(sorted([ref - slot for slot in gone])) if gone else ()), len(named_exact)))
    return exact, loose


def _add_runs(ids: list[int], steps: Sequence[tuple], loads: dict, dying: dict[int, list[int]], refs: list[int],
              kept: set, read_last: dict[int, int], step_mark: object, taken: bytearray, runs: list[Run]) -> None:
    """Adds to `runs` (and marks `taken`) the runs of repeating `ids` over the steps not taken."""
    n = len(steps)
    last: dict[int, int] = {}
    gaps: Counter = Counter()
    for j, d in enumerate(ids):
        if taken[j]:
            continue
        if d in last:
            gaps[j - last[d]] += 1
        last[d] = j
    for p, _ in gaps.most_common(3):
        j = 0
        while j + p < n:
            if ids[j] != ids[j + p] or taken[j] or taken[j + p]:
                j += 1
                continue
            a = j
            while j + p < n and ids[j] == ids[j + p] and not taken[j + p]:
                j += 1
            run = _checked(steps, loads, dying, refs, kept, read_last, Run(a, p, (j + p - a) // p), step_mark)
            if run is None:
                j = max(j, a + 1)
                continue
            runs.append(run)
            j = run.a + run.period * run.reps  # (the steps after a run cut short may start another)
            taken[run.a:j] = b"\1" * (j - run.a)


def _ints(a: Any, path: tuple = ()) -> list[tuple[tuple, int]]:
    """The int constants in an argument: (path, value); a path indexes into tuples and lists, and
    into a slice as (start, stop, step)."""
    t = type(a)
    if t is int:
        return [(path, a)]
    if t is slice:
        a = (a.start, a.stop, a.step)
    elif t is not tuple and t is not list:
        return []
    return [found for i, x in enumerate(a) for found in _ints(x, path + (i,))]


def _at(a: Any, path: tuple) -> Any:
    for i in path:
        a = (a.start, a.stop, a.step)[i] if type(a) is slice else a[i]
    return a


def counted_source(a: Any, paths: dict[tuple, tuple[int, int]], const: Callable[[Any], str],
                   path: tuple = ()) -> str:
    """Source that makes argument `a` in iteration `r` of a loop: its ints at `paths` ((first,
    step) each) computed from r, the rest as `const` names them."""
    if path in paths:
        first, step = paths[path]
        return "r" if (first, step) == (0, 1) else f"({first} + r * {step})"
    if not any(q[:len(path)] == path for q in paths):
        return const(a)
    t = type(a)
    parts = [counted_source(x, paths, const, path + (i,))
             for i, x in enumerate((a.start, a.stop, a.step) if t is slice else a)]
    if t is slice:
        return f"slice({', '.join(parts)})"
    return f"({', '.join(parts)},)" if t is tuple else f"[{', '.join(parts)}]"


def _checked(steps: Sequence[tuple], loads: dict, dying: dict[int, list[int]], refs: list[int], kept: set,
             read_last: dict[int, int], run: Run, step_mark: object) -> Run | None:
    """The run, with its shift, strides, counted constants and stored slots, if its iterations
    advance evenly and it is long enough; else None. It is cut short before the first iteration
    that does not advance as the ones before. `read_last`: slot -> the last step that reads it."""
    a, p, reps = run.a, run.period, run.reps
    if reps < MIN_REPS or p * reps < MIN_STEPS:
        return None
    shift = run.shift = refs[a + p] - refs[a]
    if shift <= 0:
        return None
    made: set[int] | None = None  # the slots the run's steps make (read where a value is read at a pace of its own)
    pace: dict[int, int] = {}  # slot -> how far what reads it moves per iteration
    for t in range(p):
        for f, (_, slot, _) in enumerate(steps[a + t][3]):
            if slot in loads:
                stride = run.strides[t, f] = loads[steps[a + p + t][3][f][1]][1] - loads[slot][1]
                reps = next((r for r in range(2, reps)
                             if loads[steps[a + r * p + t][3][f][1]][1] - loads[slot][1] != r * stride), reps)
                continue
            stride = steps[a + p + t][3][f][1] - slot
            if pace.setdefault(slot, stride) != stride:
                return None
            reps = next((r for r in range(2, reps) if steps[a + r * p + t][3][f][1] - slot != r * stride), reps)
            if stride != shift:
                if made is None:
                    made = {steps[j][0] for j in range(a, a + p * run.reps) if steps[j][6] is step_mark}
                if any(slot + r * stride in made for r in range(reps)):
                    return None
                run.far[slot] = stride
        reps = next((r for r in range(1, reps) if refs[a + r * p + t] - refs[a + t] != r * shift), reps)
        gone = dying.get(a + t, ())
        if gone:
            paced = [(slot, pace.get(slot, shift)) for slot in gone]
            reps = next((r for r in range(1, reps) if sorted(dying.get(a + r * p + t, ()))
                         != sorted([slot + r * d for slot, d in paced])), reps)
        else:  # (none dies at the first iteration's step: none may at the later ones')
            reps = next((r for r in range(1, reps) if dying.get(a + r * p + t)), reps)
        for i, arg in enumerate(steps[a + t][2]):
            for path, first in _ints(arg):
                step = _at(steps[a + p + t][2][i], path) - first
                reps = next((r for r in range(2, reps) if _at(steps[a + r * p + t][2][i], path) != first + r * step),
                            reps)
                if step:
                    run.counted.setdefault((t, i), {})[path] = first, step
    if reps < MIN_REPS or p * reps < MIN_STEPS:
        return None
    run.reps = reps
    made_here = {steps[a + t][0]: t for t in range(p) if steps[a + t][6] is step_mark}
    # a value that an iteration makes is kept in the driver's list when anything after its iteration
    # reads it (what reads it last: from the whole program, as a read before the run is never after it)
    for k in made_here:
        for r in range(reps):
            kr = k + r * shift
            if kr in kept or read_last.get(kr, -1) >= a + (r + 1) * p:
                run.stored.add(k)
                break
    return run
