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
when the program is recorded. Scaled by the recording's values, such a block keeps its structure
with traced parts (seeds.TRACED_PARTS), so the program computes the parts alone, as the usual
sweep does: a Hessian's identity tangents through a softmax stay diag(p) - p p^T, never a dense
n x n block. A plain array seed (a product's vector) is an input of the program.

A program is exact, as a replay is: every plain value that a rule derived from traced values
(whether a factor is finite, a mask, the ties of a maximum) is a guard, checked on the new values
where it was taken. If one differs, or an operation fails, the program gives None and the caller
sweeps the replay the usual way, which takes the branch the new values need.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from .codegen import compile_steps, guard_step, node_step
from .guards import finite_check, implied_finite
from .ones_seeded import ones_form
from .program_passes import simplified
from .sweep_peaks import usual_peak
from jaccli.engine import (COPIES_SUM, TRACED_PARTS, WRITES_ARGUMENT, Guard, SparseBlock, Trace, Tracer,
                           forward, reverse)

# Bytes of constants a program may hold (the seeds' own results, f's constants that rules read).
# Past it the sweep is made the usual way each time: it costs little next to the arithmetic then.
MAX_BYTES = 1 << 24

# A traced sweep that copies a sum of so many bytes to add a small part to it (COPIES_SUM) stops:
# the usual sweep adds such parts in place, its program would copy the sum per part (a stack of
# 999 products: 999 copies of a 999 x 1000 block). Stopped at the first, the traced sweep holds
# two such blocks at most, as the usual sweep holds one (issue 44: it took 26 before its budget
# ran out, and peaked at 1.6x a plain call with the stack of 2999).
LARGE_SUM = 1 << 20

# A program is recorded for so many different requests per recording at most: lazy rows asked for
# in ever new blocks would otherwise each record one that is never used again.
MAX_PROGRAMS = 8


# Numbers a program's results may hold per recorded operation (see worth_keeping).
MAX_STORED_PER_NODE = 1 << 16


def worth_keeping(got: list, want: list, nodes: int) -> bool:
    """Whether a new program, whose first results `got` agree with the usual sweep's `want` on a
    recording of `nodes` operations, replaces the usual sweep. Decided by what the program
    computes, never by a clock, so that the same call takes the same way in every run.

    A program runs the usual sweep's NumPy operations without its bookkeeping (a node, a rule and
    a plan entry per recorded operation, some microseconds each), and computes what depends on
    the seeds and f's constants alone once. It is not kept where that gains nothing:
    - where it densifies what the usual sweep keeps structured (a block's entries and low-rank
      part made one dense block): its results hold more numbers than the usual sweep's;
    - where the arithmetic dwarfs the bookkeeping, over MAX_STORED_PER_NODE numbers of results per
      recorded operation (the benchmark's P4-B256-n64, 2^20 numbers from 3 operations; P2-n1000-m1000):
      the gain is a few percent at most there, and a program's operations are not always the usual
      sweep's (a product's traced form), which can cost as much."""
    return fits(list(map(stored, got)), want, nodes)


def fits(sizes: list, want: list, nodes: int) -> bool:
    """worth_keeping, from the numbers each of the program's results holds (`stored`)."""
    return all(n <= stored(w) for n, w in zip(sizes, want)) and sum(sizes) <= MAX_STORED_PER_NODE * max(nodes, 1)


# A program is checked once (agrees) by holding its first results beside the usual sweep's. Where
# those take over CHECK_FLOOR bytes, more than the replay's values, and over CHECKED_PER_NODE numbers
# per recorded operation, that second copy is the call's peak (P2-n4000-m50's 50 x 4000 Jacobian from
# 6 operations on a 4000-vector: 1.64x a plain call's peak, issue 44), and the program saves little:
# its gain is the bookkeeping of few operations beside arithmetic on many numbers. A loop's or a
# stack's thousands of operations keep their programs, and so do results no larger than the values
# a replay holds anyway (10 rows of a 300 x 300-grid stencil from 15 operations on 90,000-vectors).
CHECK_FLOOR = 1 << 20
CHECKED_PER_NODE = 1 << 14


def checkable(numbers: int, trace: Trace) -> bool:
    """Whether a program whose results hold `numbers` numbers (`stored`) on `trace` may be checked, and
    so kept: see CHECK_FLOOR."""
    nodes = trace.size()
    if numbers * 8 <= CHECK_FLOOR or numbers <= CHECKED_PER_NODE * max(nodes, 1):
        return True
    return numbers * 8 <= sum(getattr(v, "nbytes", 0) for v in trace.values())


def stored(block: Any) -> int:
    """How many numbers a sweep's result holds: a dense block's size, a structured block's parts'."""
    if block is None:
        return 0
    if type(block) is SparseBlock:
        return sum(np.size(p) for p in (block.idx, block.val, block.u, block.v) if p is not None)
    return int(np.size(block))


class Program:
    """A recorded sweep: run(vals, seeds) -> the sweep's results for a replay's values, or None.
    `checked`: whether its results were found to be the usual sweep's (`agrees`), on the replay
    after the one that recorded it (replays.Replayable.answer)."""

    __slots__ = ("seed_slots", "fn", "checked", "reads")

    def run(self, vals: list, seeds: tuple) -> list | None:
        """The results for a replay's values `vals` (of the nodes of the recording the program was
        made from) and seeds of the program's form; None where a guard does not hold or an
        operation fails."""
        for slot, seed in zip(self.seed_slots, seeds):
            if slot is not None and type(seed) is not np.ndarray:
                return None
        return self.fn(vals, seeds)


def key_of(kind: str, wrt: tuple, seeds: tuple) -> tuple | None:
    """The request a program answers: the sweep's kind, which inputs are differentiated, and each
    seed's form (None: not seeded; a plain array's shape and dtype; a structured block's content)."""
    forms = []
    for s in seeds:
        if s is None:
            forms.append(None)
        elif type(s) is np.ndarray:  # (all ones for good: a program may rely on it, see ones_seeded)
            forms.append(("ones" if ones_form(s) else "array", s.shape, s.dtype.str))
        elif type(s) is SparseBlock:
            if s.form is None or any(p is not None and p.flags.writeable for p in (s.idx, s.val, s.u, s.v)):
                # (kept only for a block that nobody can change: the seeds an Evaluator keeps)
                s.form = ("block", s.shape, tuple(None if p is None else (p.shape, p.dtype.str, p.tobytes())
                                                  for p in (s.idx, s.val, s.u, s.v)))
            forms.append(s.form)
        else:
            return None
    return kind, wrt, tuple(forms)


# A traced sweep of more steps than this keeps no note of its values' shapes and dtypes, and its program is
# not simplified (program_passes): the passes save a few microseconds of Python a call on small programs,
# and the notes of a 200-step RK4's sweep held 2 MB more at once than the replay would otherwise (issue 44.1)
_META_UP_TO = 4096


class _Lean(list):
    """A traced sweep's nodes, each letting go of its values once recorded (and the guards'
    traced arguments). A recorded sweep would otherwise keep every value it made, where the usual
    sweep lets each go once used (issue 44: 999 blocks of 999 x 1000 for a stack of 999
    products, 7 GB). What the program needs is kept: each node's operation, its constant
    arguments, and whether its value is a plain array (`plain`, by node index).

    `budget`: bytes the sweep may make in all; past it, recording stops (_TooLarge). So it does
    when the arrays that its nodes keep as constants (what the seeds give through f's constants:
    a dense block of identity seeds scattered, masked, sliced) pass MAX_BYTES, which a program may
    not hold: each is a block as large as the result, and a stack of 999 products held eight of
    them (60 MB next to the usual sweep's 27) before the program was refused for them (issue 44).

    `room`: bytes of blocks of LARGE_SUM or more (made by its nodes, or constants they read) the
    sweep may hold at once (sweep_room); past it, recording stops too."""

    def __init__(self, nodes: list = (), budget: float = float("inf"), room: float = float("inf")) -> None:
        super().__init__(nodes)
        self.plain: dict[int, bool] = {}
        # node index -> its plain array's (shape, dtype), for program_passes; None past _META_UP_TO entries
        self.meta: dict[int, tuple] | None = {}
        self.budget = budget
        self.held = MAX_BYTES
        self.room = _Room(room)
        self.blocks: list = []  # weak references to the large blocks it holds (see _Room)

    def append(self, item: Any) -> None:
        super().append(item)
        if type(item) is Guard:
            item.args = _without_refs(item.args, item.refs)
            return
        value, args = item.value, item.args
        self.plain[item.index] = plain = type(value) is np.ndarray or isinstance(value, np.generic)
        if plain and self.meta is not None:
            if len(self.meta) < _META_UP_TO:
                self.meta[item.index] = (value.shape, value.dtype)
            else:
                self.meta = None
        # (let go of the values first: a refused sweep's last node would hold its blocks)
        item.value = None  # (the sweep reads it from its Tracer, which goes once used)
        item.args = _without_refs(args, item.parents)
        # (a step that writes into its argument's memory makes none: the sum it adds into is counted once)
        made = 0 if item.prim in WRITES_ARGUMENT else getattr(value, "nbytes", 0)
        self.budget -= made
        if self.budget < 0:
            raise _TooLarge
        if made >= LARGE_SUM and type(value) is np.ndarray and value.base is None:
            if item.prim in COPIES_SUM and made >= 16 * getattr(args[1], "nbytes", made):
                raise _TooLarge  # (see LARGE_SUM)
            self._hold(value)
        for a in item.args:
            if type(a) is np.ndarray:
                self.held -= a.nbytes
                # a constant block that the seeds gave (made dense by a rule), read through views
                owner = a if a.base is None else a.base
                if type(owner) is np.ndarray and owner.nbytes >= LARGE_SUM and id(owner) not in self.room.held:
                    self._hold(owner)
        if self.held < 0:
            raise _TooLarge

    def _hold(self, block: np.ndarray) -> None:
        self.room.left -= block.nbytes
        self.blocks.append(_Block(block, self.room.let_go, block.nbytes))
        self.room.held.add(id(block))
        if self.room.left < 0:
            raise _TooLarge


class _Room:
    """What a traced sweep may still hold of large blocks (sweep_room): a block's bytes are given
    back when it goes. (Apart from _Lean, whose blocks' weak references call let_go: a cycle through
    _Lean would keep a refused sweep's nodes until the collector runs.)"""

    __slots__ = ("left", "held")

    def __init__(self, left: float) -> None:
        self.left = left
        self.held: set[int] = set()  # ids of the blocks held

    def let_go(self, block: "_Block") -> None:
        self.left += block.nbytes
        self.held.discard(block.id)


class _Block(weakref.ref):
    """A weak reference to a large block a traced sweep made, that knows its size once it is gone."""

    __slots__ = ("nbytes", "id")

    def __new__(cls, value: Any, callback: Any, nbytes: int) -> "_Block":
        return super().__new__(cls, value, callback)

    def __init__(self, value: Any, callback: Any, nbytes: int) -> None:
        super().__init__(value, callback)
        self.nbytes = nbytes
        self.id = id(value)


class _TooLarge(Exception):
    pass


def sweep_budget(trace: Trace, seeds: tuple) -> float:
    """Bytes a sweep of K seeds may make in all for its program to be recorded: 4 K times the
    recording's values (a sweep carries K cotangents or tangents per value), MAX_BYTES at least.

    Past it the traced sweep makes far larger blocks than the values it pulls back through:
    a traced rule that densifies what the usual sweep adds in place (a stack of 999 products of
    scalars: a 999 x 1000 block per product, 16 GB made, 70 s). Its program would cost that on
    every call, so the sweep is made the usual way."""
    k = max((s.shape[0] for s in seeds if s is not None and len(s.shape)), default=1)
    held = sum(getattr(v, "nbytes", 0) for v in trace.values())
    return 4 * k * held + MAX_BYTES


def sweep_room(kind: str, starts: tuple, ends: tuple, seeds: tuple) -> float:
    """Bytes of large blocks (LARGE_SUM or more) a traced sweep may hold at once: what the usual
    sweep holds at its peak (its results, or where larger its largest rule's blocks: sweep_peaks)
    and 4 MB. A traced rule that makes dense in several steps what the usual sweep adds in place (a
    structured block added into a sum: 5 blocks as large as the result at once for 200 pieces
    concatenated, 4.3x a plain call's peak; a stack's seeds made dense, then its sum, then a copy of
    it: 1.6x) makes a program that cannot pay off, and peaks above a plain call: the sweep is made
    the usual way (issue 44). Smaller blocks are not counted: the benchmark's programs, which pay
    off, never hold one."""
    k = max((s.shape[0] for s in seeds if s is not None and len(s.shape)), default=1)
    if kind == "reverse":
        values = [n.value for n in ends]
        outputs, inputs = starts, ends
    else:
        values = [n.value if i is None else n.value[i] for n, i in ends]
        outputs, inputs = ends, starts
    results = k * sum(np.size(v) * np.asarray(v).itemsize for v in values)
    # and the seeds made dense, which the usual sweep may make too (a join's rule makes a structured
    # block of identity seeds dense once, rather than slicing it per piece: a stack of products)
    seeded = sum(math.prod(s.shape) * np.dtype(s.dtype).itemsize for s in seeds if s is not None)
    return max(results, usual_peak(outputs, inputs, k, LARGE_SUM)) + seeded + 4 * LARGE_SUM


def _large_arrays(trace: Trace) -> set[int]:
    """ids of the arrays of LARGE_SUM bytes or more that the recording holds (its values, f's
    constants): a traced sweep that reads them holds nothing new (sweep_room)."""
    found = set()
    for node in trace.nodes:
        for a in (node.value, *node.args):
            if type(a) is np.ndarray and a.nbytes >= LARGE_SUM:
                found.add(id(a if a.base is None else a.base))
    return found


def _without_refs(args: tuple, refs: tuple) -> tuple:
    if not refs:
        return args
    args = list(args)
    for i, _, _ in refs:
        args[i] = None
    return tuple(args)


def record(trace: Trace, kind: str, starts: tuple, ends: tuple, seeds: tuple) -> Program | None:
    """The program of one sweep of `trace`, recorded by sweeping it with its operations traced;
    None when it cannot be one. (`traced`, then `Traced.compiled`: the two halves, which a replay
    may make on two calls, see replays.Replayable.answer.)

    kind "reverse": `starts` are (node, output index) pairs seeded with cotangents, `ends` input
    nodes. kind "forward": `starts` are input nodes seeded with tangents, `ends` (node, index) pairs.
    """
    made = traced(trace, kind, starts, ends, seeds)
    return None if made is None else made.compiled()


class Traced:
    """A sweep recorded as a program's steps, not yet compiled (codegen.compile_steps): what it
    holds is the steps' functions, constants and slots, no value of the replay it was made from;
    `sizes`: how many numbers each of its results held (`stored`), for `fits`."""

    __slots__ = ("steps", "loads", "results", "seed_slots", "sizes")

    def compiled(self) -> Program | None:
        prog = Program()
        prog.seed_slots = self.seed_slots
        prog.fn = compile_steps(self.steps, self.loads, self.results, "sweep")
        prog.checked = False
        prog.reads = frozenset([at for source, at in self.loads.values() if source == "vals"])  # (a replay's values)
        return prog


def traced(trace: Trace, kind: str, starts: tuple, ends: tuple, seeds: tuple,
           finite: frozenset = frozenset()) -> Traced | None:
    """One sweep of `trace` (as for `record`) with its operations traced, as the steps of a
    program; None when it cannot be one. `finite`: the recording's values (by node index) that every
    replay has found all finite before its program runs (guards.found_finite): their guards of the same are
    left out (P6's exponentials were checked twice a call, by the replay and by its sweep)."""
    ext = Trace()  # the trace's operations, then the sweep's (the nodes are shared, not copied)
    n = len(trace.nodes)
    ext.nodes = _Lean(trace.nodes, sweep_budget(trace, seeds), sweep_room(kind, starts, ends, seeds))
    ext.nodes.room.held.update(_large_arrays(trace))
    ext.guards = _Lean()
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
    was, TRACED_PARTS.v = TRACED_PARTS.v, True  # structured seeds keep their structure, their parts traced
    try:
        if kind == "reverse":
            out = reverse(ext, starts, tuple(traced_seeds), ends, traced=True)
        else:
            out = forward(ext, starts, tuple(traced_seeds), ends, traced=True)
    except _TooLarge:
        return None
    finally:
        TRACED_PARTS.v = was
    ones = {slot: s for slot, s in zip(seed_slots, seeds) if slot is not None and ones_form(s)}
    return _program(ext, n, seed_slots, out, ones, finite)


def _program(ext: Trace, n: int, seed_slots: list, out: list, ones: dict,
             finite: frozenset = frozenset()) -> Traced | None:
    budget = MAX_BYTES
    seeded = {s for s in seed_slots if s is not None}
    guards = []  # (position, op): each goes before the operation it was taken before
    prims = {}  # slot -> the primitive of the step that makes it (program_passes)
    implied = implied_finite(ext.guards, finite)
    for guard in ext.guards:
        if id(guard) in implied or (finite and finite_check(guard) and guard.refs[0][1].index in finite):
            continue  # (found finite by the replay whose values the program runs on, or by another check)
        op = _plain_only(guard_step(guard))
        if op is None:
            return None
        guards.append((guard.pos, op))
    ext.guards.clear()  # (they refer to nodes: see below)
    nodes = ext.nodes
    ops = []  # the sweep's steps, from the last
    for k in range(len(nodes) - 1, n - 1, -1):
        node = nodes[k]
        # (each node goes once it is a step: the sweep's nodes and the program's steps are never
        # all held at once, 2x a plain call's peak on issue 44's RK4 loop; from the last, so that
        # no later node's parents hold it any more: from the first, every node stayed to the end,
        # 29 MB against a plain call's 18 on the same loop's replay that traces its sweep)
        nodes[k] = None
        if k in seeded:
            continue
        if not nodes.plain.get(k, False):
            return None  # a structured block or a tuple: sweep as usual
        op = _plain_only(node_step(node, ext.errstates))
        node.parents = ()
        if op is None:
            return None
        budget -= sum(a.nbytes for a in op[2] if type(a) is np.ndarray)
        if budget < 0:
            return None
        ops.append(op)
        prims[k] = node.prim
    ops.reverse()
    steps = _merged(guards, ops)
    del ops
    results = [_result(o, ext) for o in out]
    if any(r is None for r in results):
        return None
    # Every slot from n on that is not a seed is made by a step (else the sweep was refused above): only
    # the slots read below n, and the seeds, are loaded. (No set of every step's slot, nor a sorted list
    # of entries, beside the steps: with them, the steps of a 200-step RK4's sweep peaked 2.8 MB above
    # the traced sweep's nodes, issue 44.1.)
    loads = {}
    read = {r[1] for r in results if r[0] == "slot"}
    read.update(p[1] for r in results if r[0] == "block" for p in r[2] if p is not None and p[0] == "slot")
    read.update(slot for st in steps for _, slot, _ in st[3] if slot < n or slot in seeded)
    for slot in sorted(read):
        if slot >= n and slot not in seeded:
            continue
        loads[slot] = ("seeds", seed_slots.index(slot)) if slot in seeded else ("vals", slot)
    steps, loads, results = simplified(steps, loads, results, ones, nodes, prims)
    made = Traced()
    made.steps, made.loads, made.results, made.seed_slots = steps, loads, results, tuple(seed_slots)
    made.sizes = [stored(_valued(o)) for o in out]
    return made


def _merged(guards: list, ops: list) -> list:
    """A traced sweep's steps in order: `ops` (its operations' steps, by slot) with each of `guards`
    ((position, step), in the order taken) before the first operation at or after its position."""
    if not guards:
        return ops
    guards.sort(key=_position)  # (stable: guards at one position keep their order)
    steps = []
    g, last = 0, len(guards)
    for op in ops:
        k = op[0]
        while g < last and guards[g][0] <= k:
            steps.append(guards[g][1])
            g += 1
        steps.append(op)
    steps.extend(op for _, op in guards[g:])
    return steps


def _position(entry: tuple) -> int:
    return entry[0]


def _valued(o: Any) -> Any:
    """A traced sweep's result with its traced values (or parts) as plain ones."""
    if type(o) is Tracer:
        return o._value
    if type(o) is SparseBlock and o.traced:
        return SparseBlock(o.shape, *(p._value if type(p) is Tracer else p for p in (o.idx, o.val, o.u, o.v)))
    return o


def _result(o: Any, ext: Trace) -> tuple | None:
    """How the program gives back one of the sweep's results (codegen): a traced value's
    slot, a constant, or a structured block rebuilt from its parts; None for what it cannot."""
    if o is None or type(o) is np.ndarray:
        return ("copy", o)
    if type(o) is Tracer:
        return ("slot", o._node.index, o._idx) if o._trace is ext else None
    if type(o) is SparseBlock:
        if not o.traced:
            return ("copy", o)
        parts = tuple(None if p is None else _result(p, ext) for p in (o.idx, o.val, o.u, o.v))
        for p, r in zip((o.idx, o.val, o.u, o.v), parts):
            if p is not None and (r is None or r[0] not in ("slot", "copy")):
                return None  # a part it cannot give back: the program is refused, never the part dropped
        return ("block", o.shape, parts)
    return None


def _plain_only(op: tuple) -> tuple | None:
    """A step of a program (codegen); None for one that holds another recording's traced
    value or a structured block."""
    if any(type(a) is Tracer or type(a) is SparseBlock for a in op[2]):
        return None
    return op
