"""A record_once call's cost, part by part, against jax.jit and the hand-batched NumPy, in one process.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.per_call [--only P1-n100,P3-n100,P6-n500] [--rounds 9]

For each instance, in alternating order within each round (wall-clock time, median over rounds; not
thread CPU time, which misses the work JAX's runtime does in threads of its own):
jaccli's record_once call ``np.asarray(jaccli.jacobian(once, x))`` (or ``hessian``), the compiled
parts it runs (the compiled forward replay with its guards, the compiled sweeps with theirs, the
exact-symmetric Hessian assembly), the rest (the Python work of the call: arguments, the replay's
entry, the evaluator, the lazy object), the hand-batched NumPy, and jax.jit's best method when
JAX is installed. The compiled parts' time is what a call costs at the least while those parts
are what they are (issue 44, item 4).
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from typing import Callable

import numpy as np

from benchmarks import methods
from benchmarks.anchors import Unavailable
from benchmarks.instances import check, load

DEFAULT = "P1-n100,P3-n100,P6-n500"
# record_once calls before timing: its replays compile the recording one step a call (the forward
# replay, then each sweep traced, compiled, checked), and a steady-state call is what is timed
WARM_CALLS = 10


class PartTimer:
    """Time spent inside the wrapped functions, by label, while installed."""

    def __init__(self) -> None:
        self.spent: dict[str, int] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: object, name: str, label: str) -> None:
        original = getattr(owner, name)
        setattr(owner, name, self.timed(original, label))
        self._undo.append(lambda: setattr(owner, name, original))

    def timed(self, fn: Callable, label: str) -> Callable:
        """fn, its time spent counted under `label`."""
        def timed(*args, **kwargs):
            start = time.perf_counter_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[label] = self.spent.get(label, 0) + time.perf_counter_ns() - start
        timed.original = fn
        return timed

    def wrap_routes(self, label: str) -> None:
        """Count under `label` the programs that steady calls run by their lane's Route (replay/pending_replays.py),
        which calls the program's function itself, not Program.run: each route that record_once's replays take
        while installed has its function timed (and given back by remove())."""
        record_once = importlib.import_module("jaccli.replay.record_once")  # (the package names its function so)
        original, routes = record_once.route_for, []

        def timed_route_for(kept, ran):
            route = original(kept, ran)
            if route.fn is not None and not hasattr(route.fn, "original"):
                route.fn = self.timed(route.fn, label)
                routes.append(route)
            return route
        record_once.route_for = timed_route_for

        def undo() -> None:
            record_once.route_for = original
            for route in routes:
                route.fn = route.fn.original
        self._undo.append(undo)

    def remove(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def _per_call(run: Callable[[], object], calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        run()
    return (time.perf_counter_ns() - start) / calls / 1e3


def parts(iid: str, rounds: int, calls: int, anchors: bool = True) -> dict[str, float]:
    """Median wall-clock microseconds per call of each part and method on instance `iid`
    (`anchors`: jax.jit's methods too, where JAX is installed)."""
    from jaccli.api import hessian_evaluator, steady_blocks
    from jaccli.replay import compiled_sweeps, partial_forward, replay_trace

    inst = load(iid)
    once = methods.find(inst, "jaccli record_once").build(inst).run
    ok, err, why = check(inst, once())
    if not ok:
        raise SystemExit(f"{iid}: jaccli record_once gives a wrong result ({why}, max error {err:.3g})")
    runs = {"hand batched": methods.find(inst, "hand batched").build(inst).run}
    jits = [m for m in methods.methods_for(inst) if anchors and m.lib == "jax" and m.family == "jax jit"]
    for m in jits:
        try:
            runs[m.name] = m.build(inst).run
        except Unavailable:
            pass
    for run in runs.values():
        run()
    for _ in range(WARM_CALLS):  # (record_once compiles a recording one step a call: replays.py)
        once()
    timer = PartTimer()
    timer.wrap(replay_trace.Forward, "values", "compiled forward")
    timer.wrap(partial_forward.Split, "values", "compiled forward")  # (a replay of the values its sweeps read)
    timer.wrap(compiled_sweeps.Program, "run", "compiled sweeps")
    timer.wrap_routes("compiled sweeps")  # (a steady call's program, run by its lane's route)
    timer.wrap(hessian_evaluator, "symmetric_from_structure", "symmetric assembly")
    timer.wrap(steady_blocks, "symmetric_from_structure", "symmetric assembly")  # (a steady call's, at once)
    rows: dict[str, list[float]] = {}
    try:
        for r in range(rounds):
            for name, run in ([("record_once", once)] + list(runs.items()))[::1 if r % 2 == 0 else -1]:
                timer.spent.clear()
                rows.setdefault(name, []).append(_per_call(run, calls))
                if name == "record_once":
                    for label, ns in timer.spent.items():
                        rows.setdefault(label, []).append(ns / calls / 1e3)
    finally:
        timer.remove()
    out = {name: statistics.median(v) for name, v in rows.items()}
    out["the rest (Python)"] = out["record_once"] - sum(out.get(k, 0.0) for k in
                                                       ("compiled forward", "compiled sweeps", "symmetric assembly"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.per_call", description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=DEFAULT, help=f"instance ids (default {DEFAULT})")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=300, help="calls per sample")
    args = ap.parse_args(argv)
    print("us per call (wall clock), median of rounds")
    for iid in args.only.split(","):
        got = parts(iid, args.rounds, args.calls)
        print(f"{iid}: " + ", ".join(f"{k} {v:.1f}" for k, v in got.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
