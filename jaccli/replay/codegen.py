"""Straight-line NumPy code: a list of recorded operations and guards made into one Python function.

A replay of a recording, and a compiled sweep (compiled_sweeps), run a fixed list of NumPy
calls on new values, checking guards (plain values derived from traced ones: masks, branches,
whether a factor is finite) where they were taken. Walking such a list in a loop costs far more
than the calls on small arrays (each step unpacks its arguments, fills in the values it reads
and looks up its error state); so the list is written out once as the source of a function, with
one local variable per value, as a person would write it by hand, and compiled. Running it is
then the NumPy calls and little else.

The function returns None where a guard does not hold or a call raises: the caller then takes
its usual way, which reports errors properly.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from jaccli.engine import SparseBlock

from . import step_loops
from .guards import ErrstateRun, all_hold, leave_state, same, state_entered

# A step: (k, fn, args, fills, kwargs, state, expected).
#   k: the slot its value goes to (a guard's k is unused);
#   args: fn's positional arguments, None where `fills` puts a value;
#   fills: (position in args, slot, output index or None): args[position] = value of slot[, index];
#   state: the error state (np.geterr()'s form) to run it under, None for the caller's;
#   expected: STEP for an operation; for a guard, the value fn must give again.
STEP = object()
_UNKNOWN = object()  # the error state at the top of a loop whose body changes it


# Steps per compiled function: a long recording (a Python loop: tens of thousands of steps) is
# written out as functions of so many steps each, compiled one at a time, which a driver calls in
# turn. Python's compiler needs some kilobytes a line while it compiles (its tree of the source):
# one function of 27,000 lines took 100 MB more than a plain call's whole peak (issue 44), and a
# chunk of 1000 steps (2000 lines, 3 KB each) took 2x a plain call's peak on small recordings (a
# stack of 400 products: 8 MB against 4).
CHUNK = 250


def compile_steps(steps: Sequence[tuple], loads: dict[int, tuple[str, int]], results: Sequence[tuple],
                  name: str = "steps") -> Callable[..., list | None]:
    """The steps as one function ``run(vals, seeds=()) -> results, or None``.

    loads: slot -> ("vals" or "seeds", position) for the values the steps read that no step
    makes (the recording's, the inputs, the seeds); results: what run returns, in order:
    ("slot", k, index or None) for a value, ("copy", value) for a constant handed out as a copy,
    ("block", shape, parts) for a structured block made of its four parts (each one of the two
    before, or None).
    """
    if len(steps) <= CHUNK:
        steps = fused_guards(steps, loads, _kept(results))
    w = _Writer(steps, loads, results)
    if len(steps) <= CHUNK:
        w.token = leave_state is not None  # (the state left by a local token, not an ErrstateRun's methods)
        body = [f"        v{slot} = {source}[{at}]" for slot, (source, at) in loads.items()]
        body += w.steps(0, len(steps), "        ")
        body.append(f"        return [{', '.join(w.result(r, w.local) for r in results)}]")
        if not w.sets_state:  # no step changes the error state (P1's forward replay): no state to keep
            return w.compiled([f"def {name}(vals, seeds=()):", "    try:", *body, *_closing()[:2]], name)
        if w.token:
            return w.compiled([f"def {name}(vals, seeds=()):", "    token = None", "    try:", *body,
                               *_closing()[:3], "        if token is not None:", "            _leave(token)"], name)
        return w.compiled([f"def {name}(vals, seeds=()):", "    run = _Run()", "    try:", *body, *_closing()], name)
    size = 1 + max([k for k, *_ in steps] + list(loads) + [-1])
    lines = [f"def {name}(vals, seeds=()):", "    run = _Run()", "    try:", f"        s = [None] * {size}"]
    # (the parts read what they load where they read it: `s` holds the loaded values the results read)
    lines += [f"        s[{slot}] = {source}[{at}]" for slot, (source, at) in loads.items() if slot in w.kept]
    for c, (start, stop, run) in enumerate(_parts(steps, loads, w)):
        part = f"{name}_{c}"
        w.compiled(w.chunk(part, start, stop) if run is None else w.loop(part, run), part)
        lines += [f"        if {part}(s, vals, seeds, run) is None:", "            return None"]
    if [r and r[:3] for r in results] == [("slot", k, None) for k in range(size)]:
        lines.append("        return s")  # (a forward replay's every value)
    elif all(r is not None and r[0] == "slot" and r[2] is None for r in results):
        lines.append(f"        return [s[k] for k in {w.const(tuple(r[1] for r in results))}]")
    else:
        lines.append(f"        return [{', '.join(w.result(r, w.stored) for r in results)}]")
    return w.compiled(lines + _closing(), name)


def fused_guards(steps: Sequence[tuple], loads: dict, kept: set[int]) -> list[tuple]:
    """The steps with their finite and nonzero guards (the rules' checks of a factor) checked
    together: those of values the program loads, at its start; those of values it returns (alive
    to its end anyway: every value of a forward replay), at its end; the others in runs of
    consecutive ones, where they were taken (moving them later would keep their values alive
    longer). Each group is one step of guards.all_hold, whose verdict is all of theirs: a guard
    that fails anywhere makes the program give None, wherever it is checked. So a small sweep
    makes one call per group and no reduction, not a call and a reduction per guard (P1's sweep
    made 7, as did P3's call)."""
    made = {k for k, _, _, _, _, _, expected in steps if expected is STEP}
    first: list[tuple] = []
    last: list[tuple] = []
    out: list[tuple] = []
    run: list[tuple] = []
    for s in steps:
        slot = _fusable(s)
        if slot is None:
            out += _grouped(run)
            run = []
            out.append(s)
        elif slot in loads and slot not in made:
            first.append(s)
        elif slot in kept:
            last.append(s)
        else:
            run.append(s)
    return _grouped(first) + out + _grouped(run) + _grouped(last)


def _fusable(s: tuple) -> int | None:
    """The slot a finite or nonzero guard checks (one value, nothing else); None for any other step."""
    _, fn, args, fills, kwargs, _, expected = s
    if (expected is not True and expected is not np.True_) or kwargs or len(fills) != 1 or args != (None,) \
            or getattr(fn, "fused_check", None) not in ("finite", "nonzero"):
        return None
    return fills[0][1]


def _grouped(guards: list[tuple]) -> list[tuple]:
    """One all_hold step for these guards (none for none, the guard itself for one)."""
    if len(guards) < 2:
        return list(guards)
    fns: dict[str, Any] = {}
    reads: dict[str, list] = {"finite": [], "nonzero": []}
    for _, fn, _, fills, _, _, _ in guards:
        kind = fn.fused_check
        fns[kind] = fn
        value = fills[0][1:]
        if value not in reads[kind]:  # (the same check of the same value, repeated by two rules)
            reads[kind].append(value)
    values = reads["finite"] + reads["nonzero"]
    fills = tuple((3 + i, slot, index) for i, (slot, index) in enumerate(values))
    args = (fns.get("finite"), fns.get("nonzero"), len(reads["finite"])) + (None,) * len(values)
    return [(-1, all_hold, args, fills, {}, guards[0][5], True)]


def _parts(steps: Sequence[tuple], loads: dict, w: "_Writer") -> list[tuple]:
    """The driver's parts in order: (start, stop, None) for straight chunks of at most CHUNK
    steps, (start, stop, run) for a run of repeating steps written as a loop (step_loops)."""
    parts: list[tuple] = []
    at = 0
    for run in step_loops.find(steps, loads, w.dying, w.kept, STEP) + [None]:
        stop = len(steps) if run is None else run.a
        parts += [(i, min(i + CHUNK, stop), None) for i in range(at, stop, CHUNK)]
        if run is not None:
            at = run.a + run.period * run.reps
            parts.append((run.a, at, run))
    return parts


def _closing() -> list[str]:
    return ["    except Exception:",  # the caller's usual way reports the failure properly
            "        return None",
            "    finally:",
            "        if run.state is not None:",  # (else close() changes nothing: two calls saved)
            "            run.close()"]


class _Writer:
    """Writes compile_steps' source: the constants it names, the steps, the results."""

    def __init__(self, steps: Sequence[tuple], loads: dict, results: Sequence[tuple]) -> None:
        self.consts: dict[str, Any] = {"_same": same, "_Run": ErrstateRun, "_copy": _copy, "_block": SparseBlock,
                                       "_enter": state_entered, "_leave": leave_state}
        self.token = False  # (whether the steps' lines keep the error state's token in a local: compile_steps)
        self.steps_, self.loads, self.results = steps, loads, results
        self.kept = _kept(results)
        self.dying = _dying(steps, loads, self.kept)
        self.state: Any = None
        self.sets_state = False  # (whether a step's line changes the error state: `run` is then needed)
        self.checked: set[tuple] = set()  # the guards already written: (fn, arguments, expected value)
        self.named: dict[int, str] = {}  # id of a constant -> its name (consts keeps it alive)

    def const(self, value: Any) -> str:
        # One name per object: a loop's recording calls the same few functions with the same
        # keywords thousands of times (a name each would be kept with the compiled code).
        key = self.named.get(id(value))
        if key is None:
            key = self.named[id(value)] = f"c{len(self.consts)}"
            self.consts[key] = value
        return key

    def local(self, slot: int, index: Any) -> str:
        return f"v{slot}" if index is None else f"v{slot}[{self.const(index)}]"

    def stored(self, slot: int, index: Any) -> str:
        """A value as the driver of chunks reads it, from `s`."""
        return f"s[{slot}]" if index is None else f"s[{slot}][{self.const(index)}]"

    def steps(self, start: int, stop: int, pad: str) -> list[str]:
        lines: list[str] = []
        put = lines.append
        for j in range(start, stop):
            k, fn, args, fills, kwargs, step_state, expected = self.steps_[j]
            if j - 1 in self.dying and j > start:
                put(f"{pad}del {', '.join(f'v{slot}' for slot in self.dying[j - 1])}")
            if expected is not STEP:
                # A guard that an earlier one repeats (the same function of the same values, which
                # no later step changes: each slot is assigned once) gives the same verdict: a sweep
                # checks that a factor is finite at each rule that reads it.
                key = (id(fn), fills, tuple(map(id, args)), tuple((w, id(v)) for w, v in kwargs.items()),
                       id(expected))
                if key in self.checked:
                    continue
                self.checked.add(key)
            self.write(put, pad, self.steps_[j], {i: self.local(slot, index) for i, slot, index in fills})
        if stop - 1 in self.dying:
            put(f"{pad}del {', '.join(f'v{slot}' for slot in self.dying[stop - 1])}")
        return lines

    def write(self, put: Callable[[str], None], pad: str, step: tuple, filled: dict[int, str]) -> None:
        """One step's lines, its arguments at `filled`'s positions read as given there."""
        k, fn, args, _, kwargs, step_state, expected = step
        if step_state is not self.state:
            put(f"{pad}token = _enter({self.const(step_state)}, token)" if self.token
                else f"{pad}run.set({self.const(step_state)})")
            self.state = step_state
            self.sets_state = True
        words = [filled[i] if i in filled else self.const(a) for i, a in enumerate(args)]  # (a constant may be None)
        if kwargs:
            words.append(f"**{self.const(kwargs)}")
        call = f"{self.const(fn)}({', '.join(words)})"
        if expected is STEP:
            put(f"{pad}v{k} = {call}")
        elif expected is True or expected is False or expected is None:
            put(f"{pad}if {call} is not {expected}:")  # same's verdict for these singletons, without the call
            put(f"{pad}    return None")
        elif expected is np.True_ or expected is np.False_:  # (NumPy's two: a factor's check of a NumPy scalar)
            put(f"{pad}if {call} is not {self.const(expected)}:")
            put(f"{pad}    return None")
        else:
            put(f"{pad}if not _same({call}, {self.const(expected)}):")
            put(f"{pad}    return None")

    def loop(self, name: str, run: step_loops.Run) -> list[str]:
        """A run of repeating steps as a function of the driver's list `s` that loops over its
        iterations: iteration r's slots are the first's plus r * shift, its loaded positions the
        first's plus r * stride, its counted int constants the first's plus r * step; a value the iteration made is a local, one made before it is
        read from `s` (and cleared there when read for the last time)."""
        a, p = run.a, run.period
        pad = "        "
        body: list[str] = []
        put = body.append
        states = {id(self.steps_[a + t][5]) for t in range(p)}
        head = [f"def {name}(s, vals, seeds, run):"]
        if len(states) == 1 and self.steps_[a][5] is not self.state:
            head.append(f"    run.set({self.const(self.steps_[a][5])})")
        self.state = self.steps_[a][5] if len(states) == 1 else _UNKNOWN
        head += [f"    for r in range({run.reps}):", f"        b = r * {run.shift}"]
        here: set[int] = set()
        for t in range(p):
            k, _, _, fills, _, _, expected = self.steps_[a + t]
            filled = {}
            for f, (i, slot, index) in enumerate(fills):
                if slot in self.loads:
                    source, at = self.loads[slot]
                    stride = run.strides[t, f]
                    word = f"{source}[{at} + r * {stride}]" if stride else f"{source}[{at}]"
                else:
                    word = f"v{slot}" if slot in here else self.read_in_loop(slot, run)
                filled[i] = word if index is None else f"{word}[{self.const(index)}]"
            for i, arg in enumerate(self.steps_[a + t][2]):  # (its ints that count with the iterations)
                if (t, i) in run.counted:
                    filled[i] = step_loops.counted_source(arg, run.counted[t, i], self.const)
            self.write(put, pad, self.steps_[a + t], filled)
            if expected is STEP:
                here.add(k)
                if k in run.stored:
                    put(f"{pad}s[{k} + b] = v{k}")
            for slot in self.dying.get(a + t, ()):
                put(f"{pad}del v{slot}" if slot in here else f"{pad}{self.read_in_loop(slot, run)} = None")
        if len(states) > 1:
            self.state = self.steps_[a + p - 1][5]
        return head + body + ["    return True"]

    @staticmethod
    def read_in_loop(slot: int, run: step_loops.Run) -> str:
        """Where iteration r of a loop finds a value made before it, in the driver's list `s`."""
        return f"s[{slot} + r * {run.far[slot]}]" if slot in run.far else f"s[{slot} + b]"

    def chunk(self, name: str, start: int, stop: int) -> list[str]:
        """Steps start..stop as a function of the driver's list `s`: the values they read that
        earlier chunks made are taken from it (and cleared there when read for the last time),
        those that later chunks or the results read are put into it."""
        made = {self.steps_[j][0] for j in range(start, stop) if self.steps_[j][6] is STEP}
        read = {slot for j in range(start, stop) for _, slot, _ in self.steps_[j][3]}
        dying_here = {slot for j in range(start, stop) for slot in self.dying.get(j, ())}
        lines = [f"def {name}(s, vals, seeds, run):"]
        for slot in sorted(read - made):
            if slot in self.loads:
                lines.append(f"    v{slot} = {self.loads[slot][0]}[{self.loads[slot][1]}]")
            elif slot in dying_here:
                lines.append(f"    v{slot}, s[{slot}] = s[{slot}], None")
            else:
                lines.append(f"    v{slot} = s[{slot}]")
        lines += self.steps(start, stop, "    ")
        lines += [f"    s[{slot}] = v{slot}" for slot in sorted(made - dying_here)]
        lines.append("    return True")
        return lines

    def result(self, r: tuple | None, read: Callable[[int, Any], str]) -> str:
        if r is None:
            return "None"
        if r[0] == "slot":
            return read(r[1], r[2])
        if r[0] == "block":  # a structured block from its parts: SparseBlock(shape, idx, val, u, v)
            return f"_block({self.const(r[1])}, {', '.join(self.result(p, read) for p in r[2])})"
        return f"_copy({self.const(r[1])})"

    def compiled(self, lines: list[str], name: str) -> Callable:
        code = compile("\n".join(lines), f"<jaccli {name}>", "exec")
        exec(code, self.consts)  # noqa: S102 - source made from the recording's own steps, no user text
        return self.consts[name]


def _kept(results: Sequence[tuple]) -> set[int]:
    """The slots that the results read."""
    kept = {r[1] for r in results if r is not None and r[0] == "slot"}
    kept.update(p[1] for r in results if r is not None and r[0] == "block" for p in r[2]
                if p is not None and p[0] == "slot")
    return kept


def _dying(steps: Sequence[tuple], loads: dict, kept: set[int]) -> dict[int, list[int]]:
    """Step position -> the slots made by steps that nothing reads after it (to `del` there).

    A sweep's program makes a value per operation, most read once or twice right after: a local
    kept to the end would hold them all at once, where the usual sweep lets each go (issue 44:
    a stack of 999 products held 7 GB of cotangent blocks). Values the program returns are kept,
    so a forward replay, which returns every value, deletes none.
    """
    last: dict[int, int] = {}
    for j, (k, _, _, fills, _, _, expected) in enumerate(steps):
        for _, slot, _ in fills:
            last[slot] = j
        if expected is STEP and k not in last:
            last[k] = j  # (a value nothing reads goes at once)
    dying: dict[int, list[int]] = {}
    for slot, j in last.items():
        if slot not in kept and slot not in loads:
            dying.setdefault(j, []).append(slot)
    return dying


# Steps' argument tuples, shared (see `_shared`): a program of 16,000 steps of a Python loop holds
# few different ones (25 on the RK4 integrator of issue 44), but made one per step, with its own
# small constants (an index's `(1,)`), held from the replay that traces a sweep to the one that
# compiles it, and for every node by a forward replay.
_SHARED: dict = {}
_SHARED_MAX = 1024
_INT = {int}


def _shared(value: tuple, key: Any) -> tuple:
    """The tuple already kept for `key` (a value equal to `value` in type and content), or `value`."""
    got = _SHARED.get(key)
    if got is None:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()  # (only a cache: what steps hold stays theirs)
        got = _SHARED[key] = value
    return got


def args_key(args: list) -> tuple | None:
    """A key that tells argument lists apart as their calls would (1, 1.0, True and -0.0, 0.0
    differ); None for one that holds anything but None, plain scalars and tuples of ints (made
    fast: a replay makes one per recorded operation)."""
    key = []
    for a in args:
        t = type(a)
        if a is None:
            key.append(None)
        elif t is int or t is bool or t is str:
            key.append((t, a))
        elif t is float:
            key.append((t, a) if a else (t, repr(a)))  # (0.0 == -0.0; nan is never found again)
        elif t is complex:
            key.append((t, repr(a)))
        elif t is tuple and set(map(type, a)) <= _INT:
            key.append((t, a))
        else:
            return None
    return tuple(key)


def step(k: int, fn: Any, args: tuple, refs: tuple, kwargs: dict, state: Any, expected: Any) -> tuple:
    """A step of fn(args) whose arguments at `refs` ((position, node, output index or None): the
    recorded values) are filled from the nodes' slots: those places are left empty, so that the
    step holds no value of the recording it was made from. Its argument tuple is shared with
    earlier steps' equal ones (`_shared`)."""
    args = list(args)
    fills = []
    for i, node, index in refs:
        args[i] = None
        fills.append((i, node.index, index))
    key = args_key(args)
    if key is None:
        args = tuple(args)
    else:
        got = _SHARED.get(key)
        args = tuple(args) if got is None else got
        if got is None:
            _shared(args, key)
    return k, fn, args, tuple(fills), kwargs, state, expected


def node_step(node: Any, errstates: dict) -> tuple:
    """The step of a recorded node (its primitive's impl on its arguments, under its error state)."""
    return step(node.index, node.prim.impl, node.args, node.parents, node.kwargs, errstates.get(node.index), STEP)


def written_step(node: Any, errstates: dict) -> tuple:
    """The step of a node that f wrote into its argument 0's memory (Primitive.in_place): the replay
    writes into that memory again, so that a loop of y[i] = v keeps one array (a copy where the
    memory is not a plain array of the replay's own, as Replayable.replay's node by node)."""
    fn = _WRITERS.get(node.prim)
    if fn is None:
        fn = _WRITERS[node.prim] = _writer(node.prim)
    return step(node.index, fn, node.args, node.parents, node.kwargs, errstates.get(node.index), STEP)


_WRITERS: dict = {}  # primitive -> its written_step function (one each: a loop's steps hold the same one)


def _writer(prim: Any) -> Callable:
    def write(x: Any, *args: Any, **kwargs: Any) -> Any:
        if type(x) is np.ndarray and x.base is None and x.flags.writeable and x.dtype.kind in "fc":
            part, values = prim.in_place(x, *args, **kwargs)
            part[...] = values
            return x
        return prim.impl(x, *args, **kwargs)
    return write


def guard_step(guard: Any) -> tuple:
    """The step of a recorded guard: its function must give its recorded value again."""
    return step(-1, guard.fn, guard.args, guard.refs, guard.kwargs, guard.errstate, guard.expected)


def _copy(value: Any) -> Any:
    return value.copy() if type(value) is np.ndarray else value
