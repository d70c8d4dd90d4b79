"""record_once call by call: the recording and each replay that compiles, against a plain call, per problem and workload.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.call_by_call [--only P2-n100-m100,rk4-lv] [--trials 5] [--wall]

record_once compiles a recording one step a call (jaccli/replay/replays.py: replay 1 node by node,
2 compiles the forward replay, 3 traces each sweep as a program, 4 compiles it, 5 checks it, 6 and
later run it). For every P instance and workload (issues 43 and 44: no call above about 2x a plain
call), each of `--trials` fresh record_once wrappers is called CALLS times back to back (the
workloads at a point moved by 1e-3 a call, the P instances at their x, as RESULTS.md's first
replay); a plain call's time is the median of as many plain calls, interleaved with the wrappers'.
Printed: each call's median over the trials / the plain call's median. Thread CPU time by default
(the machine is shared; OPENBLAS_NUM_THREADS=1 keeps BLAS in this thread), `--wall` for wall clock.
`--cold` waits for the process to go idle before every timed call, plain ones too (the way
workload_suite.first_replays times a first replay). `--fresh` runs each case in a process of its
own, one wrapper: what a script that makes one record_once function sees, with what its process
does once (the first compile, the first traced sweep) in its calls.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

from benchmarks import instances, methods, problems, workloads
from benchmarks.timing import quiesce

CALLS = 8  # the recording and replays 1-7: the last compiling replay (5) and two that run the programs


def _at_x(run: Callable[[], Any]) -> Callable[[int], Any]:
    return lambda k: run()


def _moved(fn: Callable[[np.ndarray], Any], x: np.ndarray) -> Callable[[int], Any]:
    return lambda k: fn(x * (1 + k * 1e-3))


def _cases(only: set[str] | None) -> list[tuple[str, Callable[[], Callable[[int], Any]], Callable[[int], Any]]]:
    """(id, a maker of a fresh record_once wrapper's call taking the call's number, the plain call) per case."""
    out = []
    for iid in problems.INSTANCE:
        if only and iid not in only:
            continue
        inst = instances.load(iid)
        once, plain = methods.find(inst, "jaccli record_once"), methods.find(inst, "jaccli")
        out.append((iid, lambda m=once, i=inst: _at_x(m.build(i).run), _at_x(plain.build(inst).run)))
    for w in workloads.workloads():
        if (only and w.id not in only) or (not only and w.id == "loop-10000"):  # (2 s a call: on request)
            continue
        out.append((w.id, lambda w=w: _moved(workloads._jaccli(w, True), w.x), _moved(workloads._jaccli(w, False), w.x)))
    return out


def _timed(run: Callable[[], Any], clock: Callable[[], int], cold: bool) -> float:
    if cold:
        quiesce(0.5)
    t0 = clock()
    run()
    return (clock() - t0) / 1e9


def calls(make: Callable[[], Callable[[int], Any]], plain: Callable[[int], Any], trials: int,
          clock: Callable[[], int] = time.thread_time_ns, cold: bool = False) -> tuple[list[float], float]:
    """Median seconds of each of a fresh record_once wrapper's first CALLS calls, and of a plain call."""
    plain(0)
    plain(0)
    per_call: list[list[float]] = [[] for _ in range(CALLS)]
    plains = []
    for _ in range(trials):
        fn = make()
        for k in range(CALLS):
            per_call[k].append(_timed(lambda: fn(k), clock, cold))
            plains.append(_timed(lambda: plain(k), clock, cold))
    return [statistics.median(t) for t in per_call], statistics.median(plains)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.call_by_call", description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="instance and workload ids, comma-separated (default: all but loop-10000)")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--wall", action="store_true", help="wall-clock time, not this thread's CPU time")
    ap.add_argument("--cold", action="store_true", help="wait for the process to go idle before each timed call")
    ap.add_argument("--fresh", action="store_true", help="each case in a process of its own, one wrapper")
    ap.add_argument("--rows", action="store_true", help=argparse.SUPPRESS)  # (the table's rows alone: --fresh's)
    args = ap.parse_args(argv)
    clock = time.perf_counter_ns if args.wall else time.thread_time_ns
    only = set(args.only.split(",")) if args.only else None
    if not args.rows:
        how = "one wrapper in a process of its own" if args.fresh else f"median of {args.trials} fresh wrappers"
        print(f"record_once call k / a plain call ({'wall clock' if args.wall else 'thread CPU'}, {how}"
              f"{', each call after an idle wait' if args.cold else ''})")
        print(f"| case | plain | recording | {' | '.join(f'replay {k}' for k in range(1, CALLS))} | worst replay |")
        print("|---|---|---|" + "---|" * CALLS, flush=True)
    if args.fresh:
        flags = [f for f, on in (("--wall", args.wall), ("--cold", args.cold)) if on]
        for cid, _, _ in _cases(only):
            subprocess.run([sys.executable, "-m", "benchmarks.call_by_call", "--only", cid, "--trials", "1",
                            "--rows"] + flags, check=True)
        return 0
    for cid, make, plain in _cases(only):
        got, base = calls(make, plain, args.trials, clock, args.cold)
        ratios = [t / base for t in got]
        print(f"| {cid} | {base * 1e3:.3g} ms | " + " | ".join(f"{r:.2f}x" for r in ratios)
              + f" | {max(ratios[1:]):.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
