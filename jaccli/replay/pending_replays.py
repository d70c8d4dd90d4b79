"""A replay's values, its Replayable made when something first needs one.

A record_once function's steady call (api/steady_calls.py) replays the kept recording at the new point,
runs the program its last call ran at the replay's values, and assembles the block: it reads the values
and nothing else of the replay. So `Replayable.replay(args, pending=True)` gives those values as a
`PendingReplay`, which runs such a program itself (`rerun`), and makes the Replayable (its trace, its
fields, the record_once bookkeeping it takes part in) when anything else is asked of the replay: an
evaluator, a row, its nodes (`replayable()`). P1-n100's steady call made one each time, of 6 nodes.

Only for a replay by a compiled forward replay, of a small recording (its sweeps pause no collector),
of f's one argument, from the recording kept without values that record_once keeps again
(Replayable.kept_between_calls): any other replay is made as it always is.

A steady call's lane (api/steady_calls.Lane) replays the same recording and reruns the same program at
every call: what replayed_by and rerun decide on the way (which Split makes the values, whether the
recording is small, whether the program reads only values made, whether its seeds are of its form, where
its results go) is the same each time while the values the programs read are. So the lane keeps it, as
a `Route`, and its calls take it straight (P1-n100: a few of the 20 us a steady call spent beside NumPy).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from jaccli.engine import MONITOR, Trace, pause_for

from . import partial_forward
from .replay_trace import ReplayTrace

COMPILED_SWEEP = "compiled sweep"  # (Replayable.path, where a compiled sweep made the results: replays.py's too)
NO_PAUSE = pause_for(Trace())  # (what pause_for gives a small recording: a context that does nothing)


def replayed_by(rec: Any, fw: Any, args: Sequence[Any], new_in: list, nth: int, pending: bool) -> Any:
    """The replay number `nth` of the recording `rec` (a Replayable) at `args` by its compiled forward replay `fw`,
    given the differentiated inputs `new_in` (copies, checked: Replayable.replay); with `pending`, a PendingReplay
    where it can be one (see the module's doc); None where a guard fails or an operation raises."""
    trace = rec.trace
    split = partial_forward.split_of(fw) if fw.reads else None  # (the values the programs run read, first)
    run = fw if split is None else split
    pause = pause_for(trace)
    if pause is NO_PAUSE:  # (a small recording's: its run alone, no context entered and left)
        vals = run.values(new_in)
    else:
        with pause:
            vals = run.values(new_in)
    if vals is None:
        return None
    replayed = PendingReplay(rec, args, vals, nth, split, trace)
    if pending and pause is NO_PAUSE and len(args) == 1 and len(fw.in_at) == 1 \
            and type(trace) is ReplayTrace and trace._vals is None and trace._pending is fw:
        return replayed  # (kept again by record_once, as kept_between_calls keeps such a replay)
    return replayed.replayable()


class PendingReplay:
    """The replay number `nth` of the recording `kept`, at `args`: its values `vals` (those at `split.made`
    alone, where a partial_forward.Split made them) and the trace `trace` it is replayed from. Read and
    rerun by one thread at a time (the caller's lock: steady_calls.Deferred's)."""

    __slots__ = ("kept", "args", "vals", "nth", "split", "trace", "sweeps", "rec", "kept_as", "route")

    def __init__(self, kept: Any, args: Sequence[Any], vals: list, nth: int, split: Any, trace: ReplayTrace) -> None:
        self.kept, self.args, self.vals, self.nth, self.split, self.trace = kept, args, vals, nth, split, trace
        self.sweeps = 0
        self.rec = None
        self.kept_as = None  # (how record_once keeps `kept`, where record_once made it: RecordOnce.replayed_again)
        self.route = None  # (the Route that made it, where a lane's did: Route.replayed)

    @property
    def structure(self) -> dict:
        return self.kept.structure

    def compiles(self) -> bool:
        return True  # (a replay: compiled forward, and compiled sweeps)

    def replayable(self) -> Any:
        """The Replayable this replay is (what Replayable.replay gives without `pending`), made once."""
        rec = self.rec
        if rec is None:
            kept, vals, split = self.kept, self.vals, self.split
            fw = kept._forward[0]
            in_at = fw.in_at
            trace = ReplayTrace(vals, fw, self.trace, None if split is None else (split, kept._errstate))
            rec = kept._replayed_as(trace, self.args, [vals[in_at[0]]] if len(in_at) == 1 else [vals[k] for k in in_at],
                                    vals, self.nth, None if split is None else split.made)
            if self.sweeps:
                rec.sweeps, rec.path = self.sweeps, COMPILED_SWEEP
            self.rec = rec
        return rec

    def kept_between_calls(self, source: Any) -> Any:
        """What record_once keeps for the next replay: `source`, the recording replayed, given this replay's
        input (as Replayable.kept_between_calls keeps it)."""
        source.inputs = (self.vals[self.kept._forward[0].in_at[0]],)  # (a thread replaying from it reads either)
        source.__dict__.pop("outputs", None)  # (made when read, from the values: this replay's are not made yet)
        return source

    def rerun(self, ran: tuple) -> list | None:
        """Replayable.rerun at this replay's values: run here while they hold what the program reads and the
        Replayable is not made; else by the Replayable (made now), which makes the rest of the values first."""
        route = self.route
        if route is not None and ran is route.ran and self.rec is None:  # (the route's program: decided there)
            if MONITOR.v is not None:
                return None
            out = route.fn(self.vals, route.seeds)
            if out is None:
                return None
            self.sweeps += 1
            return out if route.live is None else by_output("forward", out, route.live)
        kind, prog, seeds = ran
        split = self.split
        if self.rec is not None or (split is not None and not prog.reads <= split.made):
            return self.replayable().rerun(ran)
        if MONITOR.v is not None:
            return None
        out = prog.run(self.vals, seeds)
        if out is None:
            return None
        self.kept._read(prog)
        self.sweeps += 1
        return by_output(kind, out, self.kept.live)


def by_output(kind: str, out: list, live: list) -> list:
    """A rerun program's results `out` as its request gives them: jvp's (forward), one per output, None for an
    output that no sweep reaches (not `live`); vjp's as they are, one per differentiated input."""
    if kind == "forward":
        got = iter(out)
        return [next(got) if is_live else None for is_live in live]
    return out


class Route:
    """How a lane's steady calls replay a recording kept without values (by its compiled forward replay `fw`,
    from its trace `trace`) and rerun the program `ran` at the replay, decided by route_of while fw.reads is
    `reads`: `run` makes the values (the Split `split` for them, or fw itself), `fn` and `seeds` are the
    program's, and `live` maps its results to the outputs (None: as they are). `run` is None where the lane's
    replays cannot take a route (they then go replayed_by's way) while `reads` holds. Kept with the recording
    (route_for), which it does not hold."""

    __slots__ = ("fw", "reads", "trace", "run", "split", "ran", "fn", "seeds", "live")

    def replayed(self, kept: Any, x: np.ndarray, nth: int) -> Any:
        """replayed_by(kept, fw, (x,), [x.copy("K")], nth, pending=True), the replay number `nth` of the recording
        `kept` at x (the caller checked x as replayed_again does), where the route still holds (else that call)."""
        fw, trace = self.fw, self.trace
        if self.run is None or fw.reads is not self.reads or kept.trace is not trace or trace._vals is not None \
                or trace._pending is not fw or kept._forward[0] is not fw:
            return replayed_by(kept, kept._forward[0], (x,), [x.copy("K")], nth, True)
        vals = self.run.values([x.copy("K")])
        if vals is None:
            return None
        new = PendingReplay(kept, (x,), vals, nth, self.split, trace)
        new.route = self
        return new


def route_of(kept: Any, ran: tuple) -> Route:
    """The Route of the replays of `kept` (a lane's recording) and of the program `ran` (kind, Program, seeds)
    that its steady calls rerun, for the values the programs read now; its `run` is None where replayed_by would
    not make a PendingReplay, or rerun would not run the program on one at once (see the module's doc)."""
    route = Route()
    fw, trace = kept._forward[0], kept.trace
    kind, prog, seeds = ran
    route.fw, route.trace, route.ran, route.run = fw, trace, ran, None
    route.reads = fw.reads if fw else None
    if not fw or type(trace) is not ReplayTrace or len(fw.in_at) != 1 or pause_for(trace) is not NO_PAUSE:
        return route
    split = partial_forward.split_of(fw) if fw.reads else None
    if not prog.reads <= fw.reads or (split is not None and not prog.reads <= split.made) \
            or any(slot is not None and type(seed) is not np.ndarray for slot, seed in zip(prog.seed_slots, seeds)):
        return route  # (rerun's way: the program reads values left for later, or its seeds are not its form)
    live = kept.live
    route.run, route.split, route.fn, route.seeds = (fw if split is None else split), split, prog.fn, seeds
    route.live = None if kind != "forward" or all(live) else tuple(live)
    return route


ROUTES = "routes"  # (a kept recording's Routes by id of their program, in its __dict__: route_for)


def route_for(kept: Any, ran: tuple) -> Route:
    """The Route of `kept`'s replays and the program `ran` for the values its programs read now: kept with
    `kept` (a lane's recording, kept between calls) and made again when those values change."""
    routes = kept.__dict__.get(ROUTES)
    if routes is None:
        routes = kept.__dict__[ROUTES] = {}
    route = routes.get(id(ran))  # (the route holds `ran`: the id is its while the route is kept)
    fw = kept._forward[0]
    if route is None or route.ran is not ran or route.reads is not (fw.reads if fw else None):
        if len(routes) >= MAX_ROUTES:
            routes.clear()
        route = routes[id(ran)] = route_of(kept, ran)
    return route


MAX_ROUTES = 8  # (one per lane of the recording: a block's class and mode)
