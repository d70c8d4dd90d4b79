"""Compiled sweeps: a sweep of a replayed recording, recorded once as plain operations, then rerun.

A `record_once` function replays its recording at each new point, and the lazy objects then
sweep the replay as usual: every sweep walks the plan, makes each node's rule from its new
values and accumulates the blocks. All of that is decided by the recording's structure and the
seeds alone, not by the values: the same request on the next replay does it all again to run the
same NumPy operations. So the first time a replay is swept with some seeds, the sweep is recorded
instead (`reverse`/`forward` with ``traced=True``, on an extension of the replay's own trace):
what it records is a straight list of NumPy operations from the recording's values (and the
seeds, when they are plain arrays) to the result. Later replays of the same recording run that
list on their own values, one call per operation, like jax.jit's compiled function.

The seeds of a structured block (`SparseBlock`: the identity rows of a whole Jacobian) are
constants of the program, keyed by their content: what the sweep computes from them and from
f's constants alone (the rows of W that an identity seed picks through ``W @ x``) is computed once,
when the program is recorded. A plain array seed (a product's vector) is an input of it.

A program is exact, as a replay is: every plain value that a rule derived from traced values
(whether a factor is finite, a mask, the ties of a maximum) is a guard, checked on the new values
where it was taken. If one differs, or an operation fails, the program gives None and the caller
sweeps the replay the usual way, which takes the branch the new values need.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import recording  # (a module reference: recording imports this module in turn)
from .core import Trace, forward, reverse
from .seeds import SparseBlock
from .tracer import Tracer

# Bytes of constants a program may hold (the seeds' own results, f's constants that rules read).
# Past it the sweep is made the usual way each time: it costs little next to the arithmetic then.
MAX_BYTES = 1 << 24

# A program is recorded for so many different requests per recording at most: lazy rows asked for
# in ever new blocks would otherwise each record one that is never used again.
MAX_PROGRAMS = 8


def worth_keeping(compiled: float, usual: float) -> bool:
    """Whether a program that ran in `compiled` seconds (CPU) replaces a usual sweep of `usual`."""
    return compiled < usual


class Program:
    """A recorded sweep: run(nodes, seeds) -> the sweep's results for a replay's nodes, or None."""

    __slots__ = ("size", "seed_slots", "ops", "outs")

    def run(self, nodes: list, seeds: tuple) -> list | None:
        """The results for a replay's `nodes` (of the recording the program was made from) and
        seeds of the program's form; None where a guard does not hold or an operation fails."""
        vals = [n.value for n in nodes]
        vals.extend([None] * (self.size - len(vals)))
        for slot, seed in zip(self.seed_slots, seeds):
            if slot is not None:
                if type(seed) is not np.ndarray:
                    return None
                vals[slot] = seed
        same = recording._same
        run = recording.ErrstateRun()
        try:
            # each operation and guard under the error state it was recorded under (a sweep's:
            # warnings off), entered where it changes
            for k, fn, args, fills, kwargs, state, expected in self.ops:
                if state is not run.state:
                    run.set(state)
                args = list(args)
                for i, slot, idx in fills:
                    v = vals[slot]
                    args[i] = v if idx is None else v[idx]
                value = fn(*args, **kwargs)
                if expected is _STEP:
                    vals[k] = value
                elif not same(value, expected):
                    return None
        except Exception:  # noqa: BLE001 - the usual sweep reports the failure properly
            return None
        finally:
            run.close()
        return [None if kind is None else _copy(ref) if kind is _CONST else
                vals[ref] if kind is _WHOLE else vals[ref][kind] for kind, ref in self.outs]


_STEP = object()  # in a program's list: an operation whose value is kept (else a guard's expected value)


# How a program's result is read: a whole node's value, one of a multi-output node's (its index),
# or a constant (a sweep that met no traced value: handed out as a copy)
_WHOLE = object()
_CONST = object()


def _copy(value: Any) -> Any:
    return value.copy() if type(value) is np.ndarray else value


def key_of(kind: str, wrt: tuple, seeds: tuple) -> tuple | None:
    """The request a program answers: the sweep's kind, which inputs are differentiated, and each
    seed's form (None: not seeded; a plain array's shape and dtype; a structured block's content)."""
    forms = []
    for s in seeds:
        if s is None:
            forms.append(None)
        elif type(s) is np.ndarray:
            forms.append(("array", s.shape, s.dtype.str))
        elif type(s) is SparseBlock:
            parts = tuple(None if p is None else (p.shape, p.dtype.str, p.tobytes())
                          for p in (s.idx, s.val, s.u, s.v))
            forms.append(("block", s.shape, parts))
        else:
            return None
    return kind, wrt, tuple(forms)


def record(trace: Trace, kind: str, starts: tuple, seeds: tuple, ends: tuple) -> Program | None:
    """The program of one sweep of `trace`, recorded by sweeping it with its operations traced;
    None when it cannot be one.

    kind "reverse": `starts` are (node, output index) pairs seeded with cotangents, `ends` input
    nodes. kind "forward": `starts` are input nodes seeded with tangents, `ends` (node, index) pairs.
    """
    ext = Trace()  # the trace's operations, then the sweep's (the nodes are shared, not copied)
    n = len(trace.nodes)
    ext.nodes = list(trace.nodes)
    ext.inputs = list(trace.inputs)
    ext.errstate = trace.errstate
    traced_seeds, seed_slots = [], []
    for s in seeds:
        if type(s) is np.ndarray:
            t = ext.new_input(s)
            traced_seeds.append(t)
            seed_slots.append(t._node.index)
        else:
            traced_seeds.append(s)
            seed_slots.append(None)
    if kind == "reverse":
        out = reverse(ext, starts, tuple(traced_seeds), ends, traced=True)
    else:
        out = forward(ext, starts, tuple(traced_seeds), ends, traced=True)
    return _program(ext, n, seed_slots, out)


def _program(ext: Trace, n: int, seed_slots: list, out: list) -> Program | None:
    budget = MAX_BYTES
    seeded = {s for s in seed_slots if s is not None}
    entries = []  # (position, order, op): guards go before the operation they were taken before
    for node in ext.nodes[n:]:
        k = node.index
        if k in seeded:
            continue
        value = node.value
        if type(value) is not np.ndarray and not isinstance(value, np.generic):
            return None  # a structured block or a tuple: sweep as usual
        op = _op(k, node.prim.impl, node.args, node.parents, node.kwargs, ext.errstates.get(k), _STEP)
        if op is None:
            return None
        budget -= sum(a.nbytes for a in op[2] if type(a) is np.ndarray)
        if budget < 0:
            return None
        entries.append((k, 1, op))
    for guard in ext.guards:
        op = _op(-1, guard.fn, guard.args, guard.refs, guard.kwargs, guard.errstate, guard.expected)
        if op is None:
            return None
        entries.append((guard.pos, 0, op))
    entries.sort(key=lambda e: (e[0], e[1]))  # stable: guards at one position keep their order
    outs = []
    for o in out:
        if o is None:
            outs.append((None, None))
        elif type(o) is Tracer:
            if o._trace is not ext:
                return None
            outs.append((_WHOLE if o._idx is None else o._idx, o._node.index))
        elif type(o) is np.ndarray or type(o) is SparseBlock:
            outs.append((_CONST, o))
        else:
            return None
    prog = Program()
    prog.size = len(ext.nodes)
    prog.seed_slots = tuple(seed_slots)
    prog.ops = tuple(op for _, _, op in entries)
    prog.outs = tuple(outs)
    return prog


def _op(k: int, fn: Any, args: tuple, refs: tuple, kwargs: dict, state: Any, expected: Any) -> tuple | None:
    """One entry of a program: fn's arguments with the places of recorded values left empty (the
    program holds no value of the recording it was made from), and where to fill them from."""
    args = list(args)
    fills = []
    for i, parent, idx in refs:
        args[i] = None
        fills.append((i, parent.index, idx))
    for a in args:
        if type(a) is Tracer or type(a) is SparseBlock:  # another recording's value; a structured block
            return None
    return k, fn, tuple(args), tuple(fills), kwargs, state, expected
