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

from .guards import ErrstateRun, same

# A step: (k, fn, args, fills, kwargs, state, expected).
#   k: the slot its value goes to (a guard's k is unused);
#   args: fn's positional arguments, None where `fills` puts a value;
#   fills: (position in args, slot, output index or None): args[position] = value of slot[, index];
#   state: the error state (np.geterr()'s form) to run it under, None for the caller's;
#   expected: STEP for an operation; for a guard, the value fn must give again.
STEP = object()


def compile_steps(steps: Sequence[tuple], loads: dict[int, tuple[str, int]], results: Sequence[tuple],
                  name: str = "steps") -> Callable[..., list | None]:
    """The steps as one function ``run(vals, seeds=()) -> results, or None``.

    loads: slot -> ("vals" or "seeds", position) for the values the steps read that no step
    makes (the recording's, the inputs, the seeds); results: what run returns, in order:
    ("slot", k, index or None) for a value, ("copy", value) for a constant handed out as a copy,
    ("block", shape, parts) for a structured block made of its four parts (each one of the two
    before, or None).
    """
    consts: dict[str, Any] = {"_same": same, "_Run": ErrstateRun, "_copy": _copy, "_block": SparseBlock}
    lines = [f"def {name}(vals, seeds=()):", "    run = _Run()", "    try:"]
    put = lines.append

    def const(value: Any) -> str:
        key = f"c{len(consts)}"
        consts[key] = value
        return key

    def read(slot: int, index: Any) -> str:
        return f"v{slot}" if index is None else f"v{slot}[{const(index)}]"

    for slot, (source, at) in loads.items():
        put(f"        v{slot} = {source}[{at}]")
    dying = _dying(steps, loads, results)
    state: Any = None
    checked: set[tuple] = set()  # the guards already written: (fn, arguments, expected value)
    for j, (k, fn, args, fills, kwargs, step_state, expected) in enumerate(steps):
        if j - 1 in dying:
            put(f"        del {', '.join(f'v{slot}' for slot in dying[j - 1])}")
        if expected is not STEP:
            # A guard that an earlier one repeats (the same function of the same values, which
            # no later step changes: each slot is assigned once) gives the same verdict: a sweep
            # checks that a factor is finite at each rule that reads it.
            key = (id(fn), fills, tuple(map(id, args)), tuple((w, id(v)) for w, v in kwargs.items()),
                   id(expected))
            if key in checked:
                continue
            checked.add(key)
        if step_state is not state:
            put(f"        run.set({const(step_state)})")
            state = step_state
        filled = {i: read(slot, index) for i, slot, index in fills}
        words = [filled[i] if i in filled else const(a) for i, a in enumerate(args)]  # (a constant may be None)
        if kwargs:
            words.append(f"**{const(kwargs)}")
        call = f"{const(fn)}({', '.join(words)})"
        if expected is STEP:
            put(f"        v{k} = {call}")
        elif expected is True or expected is False or expected is None:
            put(f"        if {call} is not {expected}:")  # same's verdict for these singletons, without the call
            put("            return None")
        else:
            put(f"        if not _same({call}, {const(expected)}):")
            put("            return None")

    def result(r: tuple) -> str:
        if r is None:
            return "None"
        if r[0] == "slot":
            return read(r[1], r[2])
        if r[0] == "block":  # a structured block from its parts: SparseBlock(shape, idx, val, u, v)
            return f"_block({const(r[1])}, {', '.join(result(p) for p in r[2])})"
        return f"_copy({const(r[1])})"

    if len(steps) - 1 in dying:
        put(f"        del {', '.join(f'v{slot}' for slot in dying[len(steps) - 1])}")
    out = [result(r) for r in results]
    put(f"        return [{', '.join(out)}]")
    put("    except Exception:")  # the caller's usual way reports the failure properly
    put("        return None")
    put("    finally:")
    put("        run.close()")
    code = compile("\n".join(lines), f"<jaccli {name}>", "exec")
    exec(code, consts)  # noqa: S102 - source made above from the recording's own steps, no user text
    return consts[name]


def _dying(steps: Sequence[tuple], loads: dict, results: Sequence[tuple]) -> dict[int, list[int]]:
    """Step position -> the slots made by steps that nothing reads after it (to `del` there).

    A sweep's program makes a value per operation, most read once or twice right after: a local
    kept to the end would hold them all at once, where the usual sweep lets each go (issue 44:
    a stack of 999 products held 7 GB of cotangent blocks). Values the program returns are kept,
    so a forward replay, which returns every value, deletes none.
    """
    kept = {r[1] for r in results if r is not None and r[0] == "slot"}
    kept.update(p[1] for r in results if r is not None and r[0] == "block" for p in r[2]
                if p is not None and p[0] == "slot")
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


def step(k: int, fn: Any, args: tuple, refs: tuple, kwargs: dict, state: Any, expected: Any) -> tuple:
    """A step of fn(args) whose arguments at `refs` ((position, node, output index or None): the
    recorded values) are filled from the nodes' slots: those places are left empty, so that the
    step holds no value of the recording it was made from."""
    args = list(args)
    fills = []
    for i, node, index in refs:
        args[i] = None
        fills.append((i, node.index, index))
    return k, fn, tuple(args), tuple(fills), kwargs, state, expected


def node_step(node: Any, errstates: dict) -> tuple:
    """The step of a recorded node (its primitive's impl on its arguments, under its error state)."""
    return step(node.index, node.prim.impl, node.args, node.parents, node.kwargs, errstates.get(node.index), STEP)


def guard_step(guard: Any) -> tuple:
    """The step of a recorded guard: its function must give its recorded value again."""
    return step(-1, guard.fn, guard.args, guard.refs, guard.kwargs, guard.errstate, guard.expected)


def _copy(value: Any) -> Any:
    return value.copy() if type(value) is np.ndarray else value
