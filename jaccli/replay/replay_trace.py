"""Replays as compiled code, and their nodes made only when a sweep needs them.

A `record_once` function replays its recording at each new point (Replayable.replay). The replay
runs the recorded operations and checks the guards, which a `Forward` does as one compiled
function (codegen). Most requests on a replay are then answered by a compiled sweep
(compiled_sweeps), which reads the replay's values only: the `Node` objects of the usual
tape, with their rules, would be made for nothing. So a replay's trace is a `ReplayTrace`,
which holds the values and makes its nodes the first time anything reads them: a usual sweep,
the diagnostics, a program being recorded.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from . import partial_forward
from .codegen import CHUNK, args_key, compile_steps, guard_step, node_step, written_step
from .program_passes import faster_step
from jaccli.engine import INPUT, LEVELS, Node, Trace, errstate_token


class Forward:
    """A recording's operations and guards as one function of its inputs' values, and what a
    replay needs to make its nodes: each node's structure row (_row); `in_place`: the indices of the
    nodes written into their argument's memory, as f wrote them. `steps` and `loads`: what `run` was
    compiled from, where the replays may run a partial_forward.Split of it (else None); `reads`: the
    nodes whose values the compiled sweeps run on the replays read; `parts`: the Splits by `reads`."""

    __slots__ = ("run", "extra", "structure", "in_at", "inputs_at", "plans", "in_place", "steps", "loads", "reads",
                 "parts")

    def values(self, inputs: list) -> list | None:
        """Every node's value at new values of the inputs (in the recording's `wrt` order);
        None where a guard does not hold or an operation fails."""
        return self.run(inputs, self.extra)


def compile_forward(trace: Trace, guards: list, in_nodes: list, errstate: dict) -> Forward | None:
    """The Forward of a closed recording, replayed under `errstate`. Where f wrote in place (a loop of
    y[i] = v keeps one array), so does the replay (codegen.written_step), into memory that is its own: an
    array a step made from no constant array (None otherwise: Replayable.replay then goes node by node)."""
    nodes = trace.nodes
    in_place = frozenset(n.index for n in nodes if n.in_place)
    for k in in_place:
        written = next(p for a, p, _ in nodes[k].parents if a == 0)
        if written.index not in in_place and (written.prim is INPUT or _reads_constant_arrays(written)) \
                and not written.prim.constant:  # (zeros_like and the like: a new array, whatever they read)
            return None
    in_pos = {n.index: p for p, n in enumerate(in_nodes)}
    steps, loads, structure, extra = [], {}, [], []
    rows: dict = {}  # structure rows by content: one per different operation (see _row)
    g = 0
    for node in nodes:
        k = node.index
        while g < len(guards) and guards[g].pos <= k:
            steps.append(guard_step(guards[g]))
            g += 1
        if node.prim is INPUT:
            if k in in_pos:
                loads[k] = ("vals", in_pos[k])
            else:
                loads[k] = ("seeds", len(extra))
                extra.append(node.value)
            structure.append((INPUT, (), {}, (), node.deps, node.site))
            continue
        s = (written_step if k in in_place else node_step)(node, trace.errstates)
        structure.append(_row(rows, k, node, s))
        # (a long recording's steps as they are: its loops are found by their steps' functions and arguments)
        steps.append(faster_step(node, s) if len(nodes) <= CHUNK and k not in in_place else s)
    steps.extend(guard_step(guard) for guard in guards[g:])
    fw = Forward()
    fw.run = compile_steps(steps, loads, [("slot", k, None) for k in range(len(nodes))], "replay")
    fw.extra = tuple(extra)
    fw.structure = tuple(structure)
    fw.in_at = tuple(n.index for n in in_nodes)
    fw.inputs_at = tuple(n.index for n in trace.inputs)
    fw.plans = (len(nodes), {})  # the sweep plans of every replay, by node index (Trace.shared_plans)
    fw.in_place = in_place
    keep = partial_forward.keeps_steps(steps, in_place, trace.errstates, errstate)
    fw.steps, fw.loads = (steps, loads) if keep else (None, None)
    fw.reads, fw.parts = frozenset(), {}
    return fw


def _reads_constant_arrays(node: Node) -> bool:
    """Whether node's arguments hold an array that is no recorded value (f's constant, which an
    operation may hand back as its result: the replay must not write into it)."""
    filled = {a for a, _, _ in node.parents}
    return any(isinstance(a, np.ndarray) for i, a in enumerate(node.args) if i not in filled)


def _row(rows: dict, k: int, node: Node, step: tuple) -> tuple:
    """Node k's structure row: (prim, arguments with the places of recorded values empty, keywords,
    where those are filled from as (position, how many nodes back, output index), dependencies,
    site); the row of an earlier node where it is the same.

    A loop in f records the same few operations over and over, each reading the values the same
    number of nodes back: the rows of a 200-step RK4's 16,000 nodes are a few dozen different ones.
    A row of its own per node (slots counted from the start, a site tuple each) was 4-5 MB, kept
    with the compiled forward replay as long as the recording (issue 44: a quarter of a plain
    call's peak)."""
    fills = tuple((i, k - slot, index) for i, slot, index in step[3])
    kwargs = node.kwargs
    words = args_key(list(kwargs.values())) if kwargs else ()
    key = (node.prim, id(step[2]), id(kwargs) if words is None else (tuple(kwargs), words), fills, node.deps,
           node.site)
    row = rows.get(key)
    if row is None:
        # (the key holds the arguments by id: the row holds them alive while rows is in use)
        row = rows[key] = (node.prim, step[2], kwargs, fills, node.deps, node.site)
    return row


_MAKING = threading.Lock()  # a replay read by two threads at once makes its nodes once
_COMPLETING = threading.Lock()  # ... and the values a Split left for later


def _made_on_read(slot: Any) -> property:
    """A Trace attribute that a ReplayTrace fills the first time it is read."""

    def get(self: "ReplayTrace") -> Any:
        if self._pending is not None:
            self._make()
        return slot.__get__(self, Trace)

    def put(self: "ReplayTrace", value: Any) -> None:
        slot.__set__(self, value)

    return property(get, put)


class ReplayTrace(Trace):
    """A replay's trace: its values at once, its nodes when first read (see the module's doc)."""

    __slots__ = ("_vals", "_pending", "_rest")

    def __init__(self, vals: list, forward: Forward, template: Trace, rest: tuple | None = None) -> None:
        # Trace.__init__'s fields set here, once each: its nodes and inputs are made on read (from
        # `forward`), not set to empty lists through the properties first (P1-n100's steady call
        # makes one of these: 2.6 us that way, under 1 us this way)
        self._pending = forward
        self._vals = vals
        self._rest = rest  # (a Split's values: the Split and the error state to make the rest under, see values())
        self.level = next(LEVELS)
        self._plans = {}
        self.shared_plans = forward.plans
        self.largest = template.largest  # the same shapes (a shape taken from a value is guarded)
        self.guards = None
        self.errstate = errstate_token()
        self.errstates = template.errstates
        self.views = {}
        self.cuts = template.cuts  # the same structure: the same operations cut the same inputs
        self.outer = False
        self.nonfinite = {}
        self.severed = None

    nodes = _made_on_read(Trace.nodes)
    inputs = _made_on_read(Trace.inputs)

    def values(self) -> list:
        if self._rest is not None:
            self._complete()
        return self._vals

    def values_for(self, reads: frozenset) -> list:
        rest = self._rest
        if rest is not None and not reads <= rest[0].made:
            self._complete()
        return self._vals

    def value_at(self, k: int) -> Any:
        rest = self._rest
        if rest is not None and k not in rest[0].made:
            self._complete()
        return self._vals[k]

    def _complete(self) -> None:
        """The values a partial_forward.Split left for later, made (once, whichever thread asks first)."""
        with _COMPLETING:
            rest = self._rest
            if rest is not None:
                partial_forward.completed(rest[0], self._vals, rest[1])
                self._rest = None

    def size(self) -> int:
        return self.shared_plans[0]  # (the forward's node count: a trace without_values has no values)

    def without_values(self, forward: Forward) -> "ReplayTrace":
        """This trace (made by `forward`) as a later replay reads it: its error states, cuts and
        sizes, no value and no node."""
        return ReplayTrace(None, forward, self)

    def _make(self) -> None:
        if self._rest is not None:
            self._complete()
        with _MAKING:
            forward = self._pending
            if forward is None:
                return
            nodes = nodes_of(forward.structure, self._vals)
            for k in forward.in_place:
                nodes[k].in_place = True
            Trace.nodes.__set__(self, nodes)
            Trace.inputs.__set__(self, [nodes[i] for i in forward.inputs_at])
            self._pending = None


def nodes_of(structure: tuple, vals: list) -> list:
    """The nodes of a recording of `structure` (Forward.structure) with the values `vals`."""
    nodes: list = []
    for k, (prim, args, kwargs, fills, deps, site) in enumerate(structure):
        parents = ()
        if fills:
            args = list(args)
            for i, back, index in fills:
                v = vals[k - back]
                args[i] = v if index is None else v[index]
            args = tuple(args)
            parents = tuple((i, nodes[k - back], index) for i, back, index in fills)
        node = Node(prim, args, kwargs, parents, vals[k], deps, site)
        node.index = k
        nodes.append(node)
    return nodes
