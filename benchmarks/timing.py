"""Interleaved timing: verify once, warm up, then rotate the methods within each sample round.

A sample is the mean over `loops` back-to-back calls (loops chosen so a sample lasts at least
`min_sample_s`, as timeit's autorange does). Ratios between two methods are the median of the
per-round ratios: both were measured within seconds of each other, so machine drift cancels.
"""
from __future__ import annotations

import gc
import math
import signal
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from benchmarks.instances import Instance, check


@dataclass
class Config:
    samples: int = 7               # sample rounds per instance
    min_sample_s: float = 0.05     # a sample lasts at least this long (loops of fast calls)
    method_budget_s: float = 40.0  # above this per method, fewer samples (said in the table)
    call_timeout_s: float = 300.0  # one call longer than this: TIMEOUT, method dropped
    quiesce_max_s: float = 0.5     # longest wait for the process to go idle before a sample


@dataclass
class Timing:
    """What happened to one method on one instance; times in seconds."""

    status: str = "ok"              # ok | WRONG | ERROR | TIMEOUT | unavailable
    detail: str = ""
    max_err: float = float("nan")
    first_s: float = float("nan")   # the verified first call (cold)
    compile_s: float | None = None
    loops: int = 1
    rounds: list[int] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    note: str = ""                  # e.g. fewer samples, forward mode

    def add_note(self, text: str) -> None:
        self.note = f"{self.note}; {text}" if self.note else text

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    def quartiles(self) -> tuple[float, float]:
        s = sorted(self.samples)
        if len(s) < 4:
            return s[0], s[-1]
        q = statistics.quantiles(s, n=4, method="inclusive")
        return q[0], q[2]


def ratio(a: Timing, b: Timing) -> float:
    """Median over shared rounds of a/b (median-of-medians ratio if they share too few)."""
    if not (a.ok and b.ok):
        return float("nan")
    bs = dict(zip(b.rounds, b.samples))
    per_round = [t / bs[r] for r, t in zip(a.rounds, a.samples) if r in bs]
    if len(per_round) >= 3:
        return statistics.median(per_round)
    return a.median / b.median


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout()


def call_with_timeout(fn: Callable[[], object], seconds: float):
    """fn() that raises _Timeout after `seconds` (checked between bytecodes, main thread only)."""
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def quiesce(max_s: float, step_s: float = 0.005, idle_cpu_s: float = 0.0005) -> float:
    """Sleep until this process uses no CPU, at most max_s; return the time waited.

    After a call, worker threads keep spinning: OpenBLAS's for ~100 ms of a full core here,
    torch's OpenMP ones for a few ms. On a 2-core machine that spin would be billed to whichever
    method runs next, so each sample starts only once process_time (all threads) stops moving.
    """
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_s:
        c0 = time.process_time()
        time.sleep(step_s)
        if time.process_time() - c0 < idle_cpu_s:
            break
    return time.perf_counter() - t0


def _one_sample(run: Callable[[], object], loops: int, lead_in: bool = False) -> float:
    """Seconds per call over `loops` back-to-back calls; `lead_in`: after one untimed call.

    A sample starts in an idle process (see quiesce), and the first call after the wait runs with
    cold caches and sleeping BLAS threads: measured here at 1.5-3x a steady call (P4), and more
    so for a method with more code. A sample of several calls times the steady state it claims
    to, so it starts with one call that is not timed.
    """
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        if lead_in:
            run()
        t0 = time.perf_counter()
        for _ in range(loops):
            run()        # result dropped at once: each call pays for its own allocation
        return (time.perf_counter() - t0) / loops
    finally:
        if gc_was_on:
            gc.enable()


MAX_LOOPS = 10000


def steady_call_s(run: Callable[[], object], cfg: Config) -> float:
    """Seconds per call of `run` back to back, from which a sample's loops are counted: samples of 1, then
    10 or more calls (each after an untimed one, _one_sample), until one lasts a tenth of a sample.

    One call after the idle wait is not it: P1-n100's second call after quiesce() took 3.7x a call of
    a sample, so its loops were counted from that and a sample lasted 14 ms, jax.jit's 5 ms, where
    min_sample_s says 50 (the run's first lines log each method's warm time and loops)."""
    loops = 1
    while True:
        per = call_with_timeout(lambda: _one_sample(run, loops, lead_in=True), (loops + 1) * cfg.call_timeout_s)
        if per * loops >= cfg.min_sample_s / 10 or loops >= MAX_LOOPS:
            return per
        loops = min(MAX_LOOPS, max(10 * loops, math.ceil(cfg.min_sample_s / 10 / max(per, 1e-7))))


def _verify(inst: Instance, run, cfg: Config, res: Timing) -> bool:
    quiesce(cfg.quiesce_max_s)
    t0 = time.perf_counter()
    try:
        out = call_with_timeout(run, cfg.call_timeout_s)
    except _Timeout:
        res.status, res.detail = "TIMEOUT", f"first call > {cfg.call_timeout_s:.0f} s"
        return False
    except Exception as exc:   # any failure of the method under test is a result, not a crash
        res.status, res.detail = "ERROR", f"{type(exc).__name__}: {exc}"[:300]
        return False
    res.first_s = time.perf_counter() - t0
    ok, err, why = check(inst, out)
    res.max_err = err
    if not ok:
        res.status, res.detail = "WRONG", why
    return ok


# record_once compiles a recording over its first replays, one step a call (replay/replays.py: the
# forward replay at the second, then each sweep traced, compiled, checked): the steady state that is
# timed starts after them.
SETTLING_REPLAYS = 6


# The machine's steadiness: the same fixed work (probe) timed before each round and after the last. A shared
# machine's neighbours take CPU time by phases of seconds to minutes, which slow every method measured in them;
# per-round ratios cancel what lasts a round, not a phase that starts or ends within one. Where the probe's
# slowest reading is more than DRIFT_LIMIT times its fastest, the report names the instance: its ratios may
# not hold in a calmer run.
DRIFT_LIMIT = 1.25
_PROBE = np.linspace(0.0, 1.0, 4096)


def probe() -> float:
    """Seconds of a fixed single-threaded piece of work (NumPy ufuncs on 4096 floats and a Python loop, ~1 ms):
    the fastest of three runs."""
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        a = _PROBE
        for _ in range(20):
            a = np.sin(a) * 0.5 + a.sum() * 1e-9
        total = 0
        for k in range(3000):
            total += k & 7
        best = min(best, time.perf_counter() - t0)
    return best


def drift(probes: list[float]) -> float:
    """The slowest probe reading over the fastest; nan with fewer than two."""
    return max(probes) / min(probes) if len(probes) >= 2 and min(probes) > 0 else float("nan")


def measure(inst: Instance, runs: dict[str, Callable[[], object]], cfg: Config,
            results: dict[str, Timing], log: Callable[[str], None] = lambda s: None,
            probes: list[float] | None = None) -> None:
    """Time every method of `runs` on `inst`, filling `results[name]` (pre-created); `probes`, if given, gets
    the probe's seconds before each round and after the last."""
    live: dict[str, int] = {}                # name -> samples wanted
    for name, run in runs.items():
        res = results[name]
        if not _verify(inst, run, cfg, res):
            log(f"  {name}: {res.status} {res.detail}")
            continue
        if res.first_s >= cfg.method_budget_s:
            # one call fills the budget: its cold start is noise next to it, so it is the sample
            res.rounds, res.samples = [0], [res.first_s]
            res.add_note(f"1 of {cfg.samples} samples: the verified first call "
                         f"({res.first_s:.3g} s)")
            log(f"  {name}: verified (err {res.max_err:.1e}), {res.first_s:.3g} s: one sample")
            continue
        # warm-up; a cold first call is not what a steady-state user pays
        warm = res.first_s
        if res.first_s < cfg.method_budget_s / 4:
            quiesce(cfg.quiesce_max_s)
            try:
                settle = SETTLING_REPLAYS if "once" in name else 0  # (record_once; the spectral "jaccli once" lines)
                for _ in range(settle if res.first_s * settle < cfg.method_budget_s / 4 else 0):
                    run()
                warm = steady_call_s(run, cfg)
            except _Timeout:
                res.status, res.detail = "TIMEOUT", "warm-up call"
                continue
            except Exception as exc:
                res.status, res.detail = "ERROR", f"warm-up: {type(exc).__name__}: {exc}"[:300]
                continue
        res.loops = max(1, min(MAX_LOOPS, math.ceil(cfg.min_sample_s / max(warm, 1e-7))))
        want = cfg.samples
        if warm * res.loops * cfg.samples > cfg.method_budget_s:
            want = max(1, int(cfg.method_budget_s // (warm * res.loops)))
            if want < cfg.samples:
                res.add_note(f"{want} of {cfg.samples} samples ({warm:.2g} s per call)")
        live[name] = want
        log(f"  {name}: verified (err {res.max_err:.1e}), first {res.first_s * 1e3:.3g} ms,"
            f" warm {warm * 1e3:.3g} ms, loops {res.loops}, samples {want}")

    names = list(live)
    for rnd in range(cfg.samples):
        if probes is not None and names:
            quiesce(cfg.quiesce_max_s)
            probes.append(probe())
        k = rnd % max(1, len(names))
        order = names[k:] + names[:k]
        if rnd % 2:
            order.reverse()
        for name in order:
            res = results[name]
            if res.status != "ok" or len(res.samples) >= live[name]:
                continue
            quiesce(cfg.quiesce_max_s)
            try:
                lead_in = res.loops > 1  # a one-call sample is long: its cold start is noise
                t = call_with_timeout(lambda: _one_sample(runs[name], res.loops, lead_in),
                                      cfg.call_timeout_s * (res.loops + lead_in))
            except _Timeout:
                res.status, res.detail = "TIMEOUT", f"sample in round {rnd}"
                continue
            except Exception as exc:
                res.status, res.detail = "ERROR", f"round {rnd}: {type(exc).__name__}: {exc}"
                continue
            res.rounds.append(rnd)
            res.samples.append(t)
    if probes is not None and names:
        quiesce(cfg.quiesce_max_s)
        probes.append(probe())
