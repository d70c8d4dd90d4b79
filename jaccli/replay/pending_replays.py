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
"""

from __future__ import annotations

from typing import Any, Sequence

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

    __slots__ = ("kept", "args", "vals", "nth", "split", "trace", "sweeps", "rec", "kept_as")

    def __init__(self, kept: Any, args: Sequence[Any], vals: list, nth: int, split: Any, trace: ReplayTrace) -> None:
        self.kept, self.args, self.vals, self.nth, self.split, self.trace = kept, args, vals, nth, split, trace
        self.sweeps = 0
        self.rec = None
        self.kept_as = None  # (how record_once keeps `kept`, where record_once made it: RecordOnce.replayed_again)

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
