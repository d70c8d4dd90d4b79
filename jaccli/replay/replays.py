"""Replayable: a recording that runs again at new values of its inputs, and answers its sweeps from compiled ones.

`record_once` keeps one per input signature. Its `replay(args)` runs the recorded operations on
the new values, every guard checked (compiled into one function by replay_trace, or node by node
where the recording wrote in place), and gives a new Replayable that shares what the structure
decides with the recording: the compiled forward replay, the compiled sweeps (compiled_sweeps),
the answers of `shared`. A replay answers a sweep request from its compiled sweep where there is
one; `path` says which way its results were made.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from jaccli.engine import (INPUT, MONITOR, Node, Recording, Trace, Tracer, Unique, current_errstate, pause_for,
                           plan_form, private_copy, private_float, renewed_plan, rewritable, run_offered,
                           standing_offer, usual_sweep_only, write_in_place)

from . import compiled_sweeps, replay_trace, result_checks
from .guards import ErrstateRun, found_finite, guards_hold, same, snapshot, substituted
from .pending_replays import COMPILED_SWEEP, NO_PAUSE as _NO_PAUSE, PendingReplay, by_output, replayed_by

REPLAY = "replay"

# A recording is compiled by its replays in turn, one step of the work a call (see Replayable.__init__):
# the first replay runs node by node and compiles nothing, the COMPILE_FORWARD_AT-th compiles the
# forward replay, and each later one takes each of its sweep requests one step further: its sweep
# traced as a program's steps, those steps compiled, the program's first results checked against
# the usual sweep's, then the program run.
COMPILE_FORWARD_AT = 2


class Replayable(Recording):
    """f recorded at `args` (inputs in `wrt` traced) so that it can be replayed at new values."""

    def __init__(self, f: Callable, args: Sequence[Any], wrt: Sequence[int]) -> None:
        wrt = tuple(wrt)
        # Data arguments as they were, for replay() to compare against; f gets copies of its
        # own, so that the recording's constants do not change when the caller's arrays do.
        data = snapshot(args, wrt)
        errstate = current_errstate()
        call_args = list(args)
        for i, snap in data.items():
            if type(snap) is not Unique:  # comparable, so copied: f gets a copy of its own too
                call_args[i] = private_copy(args[i])
            # else f gets the object itself (a random Generator that f draws from, a module, a
            # file): it is never the same as the snapshot (`same`), so every call records afresh
        super().__init__(f, call_args, wrt, guarded=True)
        self._data = data
        self._errstate = errstate
        # Constant outputs as recorded, for replays to hand out copies of (the caller owns these).
        self._consts = tuple(None if r is not None else private_copy(v) for r, v in zip(self.out_refs, self.outputs))
        # The compiled sweeps, shared with the replays: request -> Program, or False where the
        # sweep is made the usual way. A replay records them.
        self._programs: dict = {}
        self._replayed = False
        # ... and the replays' compiled form: [Forward, None if not made yet, or False where a
        # replay runs node by node]
        self._forward: list = [None]
        # How many replays were made of this recording (shared with them), and which one this is.
        # Compiling costs about what a call costs, whatever the size: Python compiles a line about
        # as fast as f records an operation; tracing a sweep as a program costs the sweep plus what
        # recording f costs; checking the program costs a sweep. Done in one call, that was up to
        # 3.3 plain calls (issue 44's Lotka-Volterra integrator, 16,000 operations), and 3-7 for
        # the benchmark's small Hessians (issue 43: 8-10 for a Lennard-Jones Hessian). So each
        # replay does one step of it (COMPILE_FORWARD_AT): no call costs much more than 2 plain
        # calls, and a recording replayed once (a second call, which proves nothing about reuse)
        # compiles nothing.
        self._made = [0]
        self._nth = 0
        # The sorts of request (_sort_of) whose sweep was refused as a program when traced (shared
        # with the replays): a Jacobian's later blocks of rows, which would each be traced and
        # refused in turn (6 traces of 0.2-1.8 s on the call that traces, issue 44's
        # concatenation), are swept as usual at once.
        self._refused: set = set()
        self._advanced: set = set()  # the requests this call took a step further (one step each)
        self.ran: tuple | None = None  # the last request a checked program answered (see rerun)

    def __getattr__(self, name: str) -> Any:
        # A replay's nodes are made when first read (replay_trace): so are these lists of them.
        if name == "outputs" and type(self.__dict__.get("trace")) is _ReplayTrace and self.trace._vals is not None:
            self.outputs = self._outputs_of(self.trace.values())  # (a partial_forward.Split's replay: made now)
            return self.outputs
        if name in ("in_nodes", "out_refs") and "_forward" in self.__dict__:
            fw = self._forward[0]
            nodes = self.trace.nodes
            self.in_nodes = [nodes[k] for k in fw.in_at]
            self.out_refs = [None if at is None else (nodes[at[0]], at[1]) for at in self.outs_at]
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def compiles(self) -> bool:
        return self._replayed

    def replayable(self) -> "Replayable":
        return self  # (as a PendingReplay's makes it)

    def kept_between_calls(self, source: "Replayable | None" = None) -> "Replayable":
        """What record_once keeps of this recording for the next replay: a replay made by the compiled
        forward replay without its values (its trace's values and the nodes and rules a usual sweep
        made of them; its outputs stay), which the next replay does not read; the caller's lazy object holds
        the replay itself. Kept, they were all alive beside the next replay's own (issue 44: a
        replay's values, nodes and rules, 11 MB of the 29 MB peak of a 200-step RK4's third replay,
        against 18 MB for a plain call). Any other recording is kept as it is: the next replay
        reads its nodes (replayed node by node, or compiled from them).

        `source`: the kept recording this one was replayed from. Where that is already such a replay
        without values, of the same compiled forward replay, it is kept again, given this one's
        inputs and outputs: it is then what this one's kept form would be, and a steady call makes
        no second object and trace (P1-n100: 2 us of 42)."""
        if type(self.trace) is not _ReplayTrace:
            return self
        if source is not None:
            kept_trace = source.trace
            forward = self._forward
            if type(kept_trace) is _ReplayTrace and kept_trace._vals is None and source._forward is forward \
                    and kept_trace._pending is forward[0]:
                source.inputs = self.inputs  # (a thread replaying from it reads either)
                if "outputs" in self.__dict__:  # (a Split's replay's, where they are made already)
                    source.outputs = self.outputs
                else:
                    source.__dict__.pop("outputs", None)
                return source
        kept = object.__new__(Replayable)
        kept.__dict__.update(self.__dict__)
        kept.trace = self.trace.without_values(self._forward[0])
        kept.ran = None  # (its seeds: api's steady blocks keep what they rerun themselves)
        kept.__dict__.pop("in_nodes", None)  # (made on read, from the nodes: see __getattr__)
        kept.__dict__.pop("out_refs", None)
        return kept

    def replay(self, args: Sequence[Any], pending: bool = False) -> "Replayable | PendingReplay | None":
        """The same recording at new values of the traced inputs, without calling f; None if it can't be.

        A replay runs each recorded operation again on the new values and checks every guard
        (the plain results that f or a rule derived from traced values: comparisons, masks,
        branches, permutations) where it was taken. It returns None, and the caller records f
        afresh, when a traced input changed shape or dtype, a data argument changed, a guard
        gives a different result, or an operation fails: the fresh recording then takes the
        branch f takes and reports errors as usual. Constants that f captured (globals,
        closures, random draws) are replayed as they were recorded. `pending`: a PendingReplay where it can
        be one (its values, the Replayable made when needed: a steady call's, see pending_replays).
        """
        inputs = self.inputs
        if len(args) != len(inputs) or current_errstate() is not self._errstate:  # (one dict per state)
            return None
        new_in = []
        try:
            for i in self.wrt:
                a = args[i]
                old = inputs[i]
                if type(a) is np.ndarray:
                    dtype = a.dtype
                    if dtype.kind == "f" and dtype.itemsize >= 4:
                        a = a.copy("K")  # (what private_float makes of a float array, without its checks)
                    else:
                        a = private_float(a)
                        dtype = a.dtype
                    if a.shape != old.shape or (dtype is not old.dtype and dtype != old.dtype):
                        return None
                else:
                    if type(a) is Tracer:
                        return None
                    a = private_float(a)
                    if a.shape != old.shape or a.dtype != old.dtype:
                        return None
                new_in.append(a)
            if self._data:
                for i, snap in self._data.items():
                    if not same(args[i], snap):
                        return None
        except Exception:  # noqa: BLE001 - an argument that cannot be read or compared: record afresh
            return None
        if self._traced_constants is not False and self.has_traced_constants():  # (False: computed, none)
            return None
        made = self._made
        made[0] += 1
        nth = made[0]
        trace = self.trace
        if type(trace) is not _ReplayTrace:
            _forget_rules(trace)
        fw = self._forward[0]
        if fw is None and nth < COMPILE_FORWARD_AT:
            return self._replay_nodes(args, new_in, nth)
        if fw is None:
            try:
                with pause_for(self.trace):  # (making a step a node would otherwise run the collector over them all)
                    fw = replay_trace.compile_forward(self.trace, self.guards, self.in_nodes, self._errstate) or False
            except Exception:  # noqa: BLE001 - a recording that cannot be written out replays node by node
                fw = False
            self._forward[0] = fw
        if fw is False:
            return self._replay_nodes(args, new_in, nth)
        return replayed_by(self, fw, args, new_in, nth, pending)

    def _replay_nodes(self, args: Sequence[Any], new_in: list, nth: int) -> "Replayable | None":
        """replay() node by node, for a recording whose replay writes in place as f did."""
        new_in = {node.index: a for node, a in zip(self.in_nodes, new_in)}
        errstates = self.trace.errstates
        old_nodes = self.trace.nodes
        trace = Trace()
        trace.guards = None
        vals: list = [None] * len(old_nodes)
        nodes: list = [None] * len(old_nodes)
        guards, g = self.guards, 0
        largest = 1
        pause = pause_for(self.trace)
        pause.__enter__()
        run = ErrstateRun()
        try:
            # under the caller's error state, as when f was recorded (checked above), or the one
            # an operation was recorded under (f's own np.errstate blocks, a sweep's)
            for k, node in enumerate(old_nodes):
                g = guards_hold(guards, g, k, vals, run)
                if g is None:
                    return None
                run.set(errstates.get(k))
                if node.prim is INPUT:
                    value, finite = new_in.get(k, node.value), None
                    args_k = ()
                else:
                    args_k = substituted(node.args, node.parents, vals) if node.parents else node.args
                    written = nodes[node.parents[0][1].index] if node.in_place else None
                    if written is not None and rewritable(written):
                        # written into its argument's memory when recorded: again, so that a loop
                        # of y[i] = v keeps one array in the replay too
                        value, finite = write_in_place(node.prim, written, args_k, node.kwargs, trace.nonfinite)
                    else:
                        value, finite = node.prim.impl(*args_k, **node.kwargs), None
                new = Node(node.prim, args_k, node.kwargs,
                           tuple((a, nodes[p.index], i) for a, p, i in node.parents), value, node.deps, node.site)
                new.index = k
                if finite is not None:
                    new.in_place, new.finite = True, finite
                nodes[k] = new
                vals[k] = value
                size = getattr(value, "size", 1)
                if type(size) is int and size > largest:
                    largest = size
            if guards_hold(guards, g, None, vals, run) is None:
                return None
        except Exception:  # noqa: BLE001 - recording f afresh reports the failure properly
            return None
        finally:
            run.close()
            pause.__exit__(None, None, None)
        trace.nodes = nodes
        trace.errstates = errstates
        trace.inputs = [nodes[n.index] for n in self.trace.inputs]
        trace.largest = largest
        trace.cuts = self.trace.cuts  # the same structure: the same operations cut the same inputs
        # The sweep plans depend on the structure only: the same nodes, renewed. (A copy: a sweep in
        # another thread may be adding a plan to this recording's trace meanwhile.)
        for key, plan in self.trace._plans.copy().items():
            trace._plans[key] = renewed_plan(plan_form(plan), nodes)
        rec = self._replayed_as(trace, args, [nodes[n.index].value for n in self.in_nodes], vals, nth)
        rec.in_nodes = [nodes[n.index] for n in self.in_nodes]
        rec.out_refs = [None if r is None else (nodes[r[0].index], r[1]) for r in self.out_refs]
        return rec

    def _replayed_as(self, trace: Trace, args: Sequence[Any], in_values: list, vals: list, nth: int,
                     made: frozenset | None = None) -> "Replayable":
        """The replay number `nth` with `trace` (its nodes' values `vals`, those at `made` alone where it is
        given: its outputs are made when read; `in_values`: the inputs' in `wrt` order)."""
        rec = object.__new__(Replayable)
        fields = rec.__dict__
        fields.update(self._shared_fields())
        # (its own fields set in the dict too: one store each. A dict of the fields' handed to the object
        # instead (rec.__dict__ = ...) costs as much to make, and each attribute read of the replay
        # then costs 1.8x as much, its callers' reads too: CPython 3.11's reads of an object's
        # own dict are slower where the dict was assigned)
        fields["trace"] = trace
        if len(args) == 1 and len(in_values) == 1:  # (f's one argument, differentiated: a steady call's)
            fields["inputs"] = (in_values[0],)
        else:
            inputs = list(args)
            for i, value in zip(fields["wrt"], in_values):
                inputs[i] = value
            fields["inputs"] = tuple(inputs)
        fields["_nth"] = nth
        fields["_advanced"] = set()
        outs = fields["_outs"]
        if made is not None and (outs is None or not made.issuperset(outs)):
            return rec  # (its outputs made when read: __getattr__)
        if outs is None:
            fields["outputs"] = self._outputs_of(vals)
        elif len(outs) == 1:
            fields["outputs"] = (vals[outs[0]],)
        else:
            fields["outputs"] = tuple([vals[k] for k in outs])
        return rec

    def _outputs_of(self, vals: list) -> tuple:
        """The outputs, from every node's values `vals`."""
        return tuple([private_copy(c) if at is None else vals[at[0]] if at[1] is None else vals[at[0]][at[1]]
                      for c, at in zip(self._consts, self.outs_at)])

    def _shared_fields(self) -> dict:
        """What every replay of this recording holds as it is (the same structure and sizes: the same
        answers) or starts from, made once and handed on: one update of a replay's attributes, not
        twenty assignments (P1-n100: a replay per call)."""
        shared = self.__dict__.get("_fields")
        if shared is None:
            shared = {name: getattr(self, name) for name in (
                "wrt", "out_is_tuple", "outs_at", "live", "_consts", "guards", "kept", "_data", "_errstate",
                "structure", "_programs", "_forward", "_made", "_refused")}
            shared.update(_traced_constants=False, sweeps=0, ran=None, _replayed=True, path=REPLAY)
            # the nodes the outputs are, where each is a whole node's value (none constant): or None
            shared["_outs"] = None if any(at is None or at[1] is not None for at in self.outs_at) \
                else tuple([at[0] for at in self.outs_at])
            shared["_fields"] = self._fields = shared
        return shared

    def answer(self, kind: str, request: tuple, seeds: tuple, where: Callable[[], tuple[tuple, tuple]],
               sweep: Callable[[], list], alt: tuple | None = None) -> list:
        """The sweep's results: from its compiled sweep (compiled_sweeps) where there is one.

        A request gets its program over the replays after the one that compiles the forward
        replay, one step a call (see __init__), each call sweeping as usual meanwhile: its sweep
        traced as a program's steps (`compiled_sweeps.traced`; none where it cannot be one), those
        steps compiled, then the program run beside the usual sweep and
        kept if it gives its results (`agrees`) in a form no larger and where it gains
        (`worth_keeping`, which reads the results' structure, never a clock); else the request is
        marked to be swept as usual. Later replays run the program; one whose guard fails is swept
        as usual. The recording that f made itself, and its first replay, record none.

        `alt`: the seeds in another form, which the program is recorded and run with while it is
        worth keeping: a small block of identity seeds is swept faster dense as usual, but as a
        structured block once compiled, where the bookkeeping is done when it is recorded (P3's
        tridiagonal Hessian, n = 100). The usual sweep keeps `seeds`, so that a replay swept as
        usual gives what a fresh recording gives, to the last bit.
        """
        if not self._replayed:
            return sweep()
        offer = standing_offer()
        sweep = usual_sweep_only(sweep)  # (the caller's memory, offered for the result: see block_memory)
        key = None if MONITOR.v is not None else compiled_sweeps.key_of(kind, request, seeds)  # (diagnostics watch each rule)
        swapped = False
        if key is not None and alt is not None:
            alt_key = compiled_sweeps.key_of(kind, request, alt)
            if alt_key is not None and self._programs.get(alt_key) is not False:
                key, seeds = alt_key, alt  # (the program's seeds from here on; the usual sweep keeps its own)
                swapped = True
        prog = None if key is None else self._programs.get(key)
        if type(prog) is compiled_sweeps.Program and prog.checked:
            # (its result made in the offered memory too: a store's rows, written where they are kept)
            with pause_for(self.trace):
                out = run_offered(offer, lambda: prog.run(self.trace.values_for(prog.reads), seeds))
            if out is not None:
                self._read(prog)
                self.path = COMPILED_SWEEP
                self.ran = (kind, prog, seeds)
                return out
            return sweep()
        # A recording that writes in place (a loop of y[i] = v) is swept in place as f wrote it; a
        # program's traced writes copy the array each time (4x the usual sweep on issue 44's loop).
        if prog is False or key is None or self._nth <= COMPILE_FORWARD_AT or not self._forward[0] \
                or key in self._advanced \
                or (prog is None and (len(self._programs) >= compiled_sweeps.MAX_PROGRAMS
                                      or _sort_of(key) in self._refused)):
            return sweep()
        self._advanced.add(key)
        # Tracing and compiling come before the usual sweep, checking after it: so the traced
        # sweep's blocks and the compiler's tree are gone when the usual sweep makes its own, and
        # the usual sweep's results are not held meanwhile (issue 44: a replay peaked at 1.6-1.8x
        # a plain call with the two at once on a stack of products, 1.5x on an RK4 loop).
        # Tracing costs more than the sweep (1.1-2.5 of it): not where the program would be refused
        # for the numbers its results hold (fits). Where dense results could hold that many, the
        # usual sweep comes first and its results say whether they do (P4-B256-n64, P2-n1000-m1000:
        # traced and refused, 2.1-3.6 plain calls on that call).
        checking = type(prog) is compiled_sweeps.Program
        out = None
        bound = compiled_sweeps.MAX_STORED_PER_NODE * max(self.trace.size(), 1)
        try:
            if prog is None:
                with pause_for(self.trace):
                    starts, ends = where()
                    dense = _dense_size(kind, seeds, ends)
                    large = not swapped and (dense > bound or not compiled_sweeps.checkable(dense, self.trace))
                if large:
                    out = sweep()
                if out is None or _keepable(out, bound, self.trace):
                    with pause_for(self.trace):
                        prog = compiled_sweeps.traced(self.trace, kind, starts, ends, seeds,
                                                    finite=found_finite(self.guards))
                if prog is None:
                    self._refused.add(_sort_of(key))
            elif not checking:
                with pause_for(self.trace):
                    prog = prog.compiled()
                # (the traced steps go before the usual sweep: they held 7 MB of a 200-step RK4's)
                self._programs[key] = prog
        except Exception:  # noqa: BLE001 - a sweep that cannot be recorded as a program is swept as usual
            prog = None
        if out is None:
            out = sweep()
        try:
            if type(prog) is compiled_sweeps.Traced and not (compiled_sweeps.fits(prog.sizes, out, self.trace.size())
                                                             and _keepable(out, bound, self.trace)):
                prog = None  # (no use compiling and checking what would not be kept)
                self._refused.add(_sort_of(key))
            elif checking:
                # (the usual sweep's mostly-zero results by their entries meanwhile: Entries)
                out = result_checks.compacted(out)
                with pause_for(self.trace):
                    got = prog.run(self.trace.values(), seeds)
                prog.checked = got is not None and result_checks.agrees(got, out) \
                    and compiled_sweeps.worth_keeping(got, out, self.trace.size())
                prog = prog if prog.checked else None
                if prog is not None:  # (the program's results, to rounding, where the usual sweep's were compacted)
                    out = [g if type(w) is result_checks.Entries else w for g, w in zip(got, out)]
        except Exception:  # noqa: BLE001 - a program that fails its check is swept as usual
            prog = None
        self._programs[key] = False if prog is None else prog
        return result_checks.restored(out)

    def rerun(self, ran: tuple) -> list | None:
        """What vjp or jvp (structured) gives for the request that a checked program answered on an
        earlier replay of this recording (`ran`: its `ran` then), from that program at this replay's
        values, without making the request again (its seeds, its key, the program's lookup): a
        caller that asks the same thing on every call (a lazy block's whole-block route, api's
        steady_blocks) keeps `ran` and comes here. None where the program's guard fails, or where
        the diagnostics watch the rules: the caller then makes the request the usual way."""
        if MONITOR.v is not None:
            return None
        kind, prog, seeds = ran
        pause = pause_for(self.trace)
        if pause is _NO_PAUSE:
            out = prog.run(self.trace.values_for(prog.reads), seeds)
        else:
            with pause:
                out = prog.run(self.trace.values_for(prog.reads), seeds)
        if out is None:
            return None
        self._read(prog)
        self.sweeps += 1
        self.path = COMPILED_SWEEP
        return by_output(kind, out, self.live)

    def _read(self, prog: compiled_sweeps.Program) -> None:
        """Note the values a program run on this replay read: the next replays make those first (partial_forward)."""
        fw = self._forward[0]
        if fw and not prog.reads <= fw.reads:
            fw.reads = fw.reads | prog.reads


def _forget_rules(trace: Trace) -> None:
    """Let go of the rules that the sweeps of the call that made `trace` (a recording, or a replay node by
    node) cached on its nodes: a replay of it makes nodes of its own, and the rules would otherwise stay
    beside them while record_once keeps it (issue 44.1: 4.5 MB of a 200-step RK4's, on its first two
    replays). Emptied, not dropped: a sweep of it in another thread meanwhile makes what it reads again."""
    for node in trace.nodes:
        if node._vjps:
            node._vjps.clear()
        if node._jvps:
            node._jvps.clear()


_ReplayTrace = replay_trace.ReplayTrace


def _sort_of(key: tuple) -> tuple:
    """A request's sort: its key (compiled_sweeps.key_of) without the seeds' shapes and contents,
    which differ from one block of a Jacobian's rows (or columns) to the next."""
    kind, wrt, forms = key
    return kind, wrt, tuple(None if f is None else (f[0], len(f[1])) for f in forms)


def _keepable(out: list, bound: int, trace: Trace) -> bool:
    """Whether the usual sweep's results `out` leave room for a program: no more numbers than `bound`,
    and a check of it (compiled_sweeps.checkable) that would not hold a second copy of many."""
    numbers = sum(map(compiled_sweeps.stored, out))
    return numbers <= bound and compiled_sweeps.checkable(numbers, trace)


def _dense_size(kind: str, seeds: tuple, ends: tuple) -> int:
    """How many numbers a sweep's results hold at most: dense blocks of as many rows as seeds."""
    k = max((s.shape[0] for s in seeds if s is not None and len(s.shape)), default=1)
    if kind == "reverse":
        return k * sum(int(np.size(node.value)) for node in ends)
    return k * sum(int(np.size(node.value if i is None else node.value[i])) for node, i in ends)
