"""The runs behind RESULTS.md's sections for issues 44 and 39: the workloads, record_once's first replay and peak memory on P1-P6, the spectral residual, the CLI against the library.

Timing is timing.py's (verification first, idle waits, interleaved rounds); the functions, their
references and the memory probes are workloads.py's, memprobe.py's, spectral.py's and cli_cost.py's.
Every function here returns plain JSON-able data that workload_report.py renders.
"""
from __future__ import annotations

import dataclasses
import gc
import statistics
import time
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

try:
    import resource
except ImportError:  # pragma: no cover - not on Windows
    resource = None

from benchmarks import instances, memprobe, methods, workloads
from benchmarks.instances import check
from benchmarks.workload_report import MEMORY_RUNS, huge_mb, increment_mb
from benchmarks.timing import SETTLING_REPLAYS, Config, Timing, measure, quiesce

JACCLI, ONCE = "jaccli", "record_once"
# The peers' columns: a family is its fastest correct method.
FAMILIES = {"torch.func": "torch.func.", "jax eager": "jax.jac", "jax jit": "jax.jit(",
            "HIPS autograd": "autograd."}
# Methods not run on a workload, and why (their cells say it). Keys: (workload, family or method).
# JAX compiles the unrolled Python loop: the compile times were measured on the shared 2-core machine.
_INTEGRATOR_JIT = "skipped: jit compiles the 200-step unrolled integrator for minutes (> 120 s)"
_JACREV_JIT = "skipped: jit(jacrev) of 1000 unrolled pieces compiles for > 5 min (jit(jacfwd): ~25 s of CPU)"
# torch.func.jacrev vmaps the VJP over n cotangents, and each piece's indexing VJP makes an n-wide
# zero cotangent: 159 s at loop-1000 on the loaded machine, where jacfwd took 0.4 s.
_TORCH_JACREV = "skipped: vmap of the VJP over n cotangents, each piece an n-wide zero (loop-1000: 159 s, jacfwd 0.4 s)"
_JAX_JACREV = "skipped: eager jacrev of the unrolled pieces (loop-1000: 77 s on the loaded machine, jacfwd 2.7 s)"
SKIPPED = {
    ("loop-1000", "jax.jacrev"): _JAX_JACREV,
    ("stack-1000", "jax.jacrev"): _JAX_JACREV,
    ("concat-1000", "jax.jacrev"): _JAX_JACREV,
    ("stack-3000", "jax.jacrev"): _JAX_JACREV,
    ("loop-10000", "jax.jacrev"): _JAX_JACREV,
    ("stack-1000", "torch.func.jacrev"): _TORCH_JACREV,
    ("concat-1000", "torch.func.jacrev"): _TORCH_JACREV,
    ("stack-3000", "torch.func.jacrev"): _TORCH_JACREV,
    ("loop-10000", "torch.func.jacrev"): _TORCH_JACREV,
    ("rk4-lv", "jax jit"): _INTEGRATOR_JIT,
    ("rk4-l96", "jax jit"): _INTEGRATOR_JIT,
    ("loop-1000", "jax.jit(jacrev)"): _JACREV_JIT,
    ("stack-1000", "jax.jit(jacrev)"): _JACREV_JIT,
    ("concat-1000", "jax.jit(jacrev)"): _JACREV_JIT,
    ("stack-3000", "jax jit"): "skipped: jit of 3000 unrolled pieces compiles for minutes (1000: ~25 s of CPU)",
    ("loop-10000", "jax jit"): "skipped: jit compiles the 10^4-step unrolled loop for minutes",
    ("stack-3000", "HIPS autograd"): "skipped: 3000 reverse passes, each piece's VJP a 3000-wide zero (> 120 s here)",
    ("concat-1000", "HIPS autograd"): "skipped: 10^4 reverse passes, one per output (> 120 s here)",
    ("loop-10000", "HIPS autograd"): "skipped: 10^4 reverse passes over a 3·10^4-node graph (~100x its n = 1000 time)",
}


def family(name: str) -> str:
    """The column a workloads.METHODS name belongs to."""
    if name in (JACCLI, ONCE):
        return name
    for fam, prefix in FAMILIES.items():
        if name.startswith(prefix):
            return fam
    raise KeyError(name)


def workload_config(quick: bool) -> Config:
    if quick:
        return Config(samples=3, min_sample_s=0.005, method_budget_s=3.0, call_timeout_s=120.0)
    return Config(samples=5, min_sample_s=0.05, method_budget_s=10.0, call_timeout_s=300.0)


def _timed_call(fn: Callable[[], Any]) -> tuple[float, Any]:
    quiesce(0.5)
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


FIRST_REPLAY_TRIALS = 5  # one wall-clock sample swung rk4-lv's first replay between 1.7x and 3.1x a plain call, and
# a median of 3 took one event twice (P2-n100-m100: 555, 548, 303 us against a steady 252 us)


def first_replays(make: Callable[[], Callable[[np.ndarray], Any]], x: np.ndarray, trials: int,
                  costs: dict | None = None) -> tuple[list[float], Callable[[np.ndarray], Any]]:
    """Seconds of record_once's first replay (at a point moved by 1e-3) right after its recording
    at x, in `trials` fresh wrappers; and the last wrapper, recorded and replayed. `costs`, when
    given, gets call_costs' lists for the same calls.

    The idle wait comes before the recording, not between it and the replay: after a wait, any
    call (a plain one too) costs 2-3x its steady time on the shared machine, its caches left to
    other processes (P2-n100-m100: a plain call 940 us after 0.5 s asleep, 300 us steady, thread
    CPU), and the plain median it is compared with is timed after an untimed call (timing.py)."""
    times, fn = [], None
    for _ in range(trials):
        fn = make()
        quiesce(0.5)
        fn(x)
        times.append(costed(lambda: fn(x * (1 + 1e-3)), costs))
    return times, fn


def costed(call: Callable[[], Any], costs: dict | None) -> float:
    """Seconds of call(), wall clock; what else it cost into `costs` (call_costs)."""
    with call_costs(costs):
        start = time.perf_counter()
        call()
        return time.perf_counter() - start


@contextmanager
def call_costs(costs: dict | None):
    """Append to costs' lists what the timed block cost besides its wall-clock time: this thread's CPU
    seconds ("cpu_s"), its minor page faults ("faults") and the collections of the garbage collector
    ("gcs"). A wall-clock time far above the CPU time is time the thread waited (the machine, not the
    code); faults and collections say what the code paid that a steady call does not."""
    if costs is None:
        yield
        return
    faults = (lambda: resource.getrusage(resource.RUSAGE_THREAD).ru_minflt) \
        if hasattr(resource, "RUSAGE_THREAD") else (lambda: 0)  # (Linux's)
    gcs = lambda: sum(g["collections"] for g in gc.get_stats())  # noqa: E731
    f0, g0, c0 = faults(), gcs(), time.thread_time()
    yield
    c1, f1, g1 = time.thread_time(), faults(), gcs()
    costs.setdefault("cpu_s", []).append(c1 - c0)
    costs.setdefault("faults", []).append(f1 - f0)
    costs.setdefault("gcs", []).append(g1 - g0)


def _failure(exc: BaseException) -> Timing:
    if isinstance(exc, workloads.Unavailable):
        return Timing(status="unavailable", detail=str(exc))
    return Timing(status="ERROR", detail=f"setup: {type(exc).__name__}: {exc}"[:300])


def run_workload(w: workloads.Workload, names: list[str], cfg: Config, log: Callable[[str], None]) -> dict:
    """One workload: every method verified and timed in interleaved rounds; record_once's first
    replay apart; the recorded operations of one plain call."""
    target = SimpleNamespace(iid=w.id, ref=w.reference(w.x))
    results: dict[str, Timing] = {}
    runs: dict[str, Callable[[], Any]] = {}
    first: list[float] = []
    for name in names:
        skip = SKIPPED.get((w.id, name)) or SKIPPED.get((w.id, family(name)))
        if w.hessian and name not in (JACCLI, ONCE):
            skip = "skipped: a Hessian (issue 43's first-replay case); the peers' methods here are Jacobians"
        if skip:
            results[name] = Timing(status="skipped", detail=skip)
            continue
        results[name] = Timing()
        try:
            if name == ONCE:
                make = lambda: workloads.METHODS[ONCE](w)  # noqa: E731
                first, fn = first_replays(make, w.x, FIRST_REPLAY_TRIALS)
                for k in range(2, 2 + SETTLING_REPLAYS):
                    fn(w.x * (1 + k * 1e-3))
            else:
                fn = workloads.METHODS[name](w)
                if family(name) == "jax jit":
                    # compiled before measure(): a compile longer than the budget would be its only sample
                    results[name].compile_s, _ = _timed_call(lambda: fn(w.x))
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run the workload is a result
            results[name] = _failure(exc)
            continue
        runs[name] = (lambda fn: lambda: fn(w.x))(fn)
    measure(target, runs, cfg, results, log)
    row: dict[str, Any] = {"workload": w.id, "methods": {}}
    for name, res in results.items():
        row["methods"][name] = {"family": family(name), "timing": dataclasses.asdict(res)}
    if first and results.get(ONCE, Timing(status="absent")).ok:
        row["methods"][ONCE]["first_replay_s"] = statistics.median(first)
    if results.get(JACCLI, Timing(status="absent")).ok:
        row["operations"] = workloads._operations(w)
    return row


def memory_names(row: dict) -> list[str]:
    """jaccli, record_once and each peer family's fastest correct method."""
    picked = [n for n in (JACCLI, ONCE) if n in row["methods"]]
    for fam in FAMILIES:
        ok = [(Timing(**d["timing"]).median, n) for n, d in row["methods"].items()
              if d["family"] == fam and Timing(**d["timing"]).ok]
        if ok:
            picked.append(min(ok)[1])
    return picked


def run_workloads(ids: list[str] | None, names: list[str] | None, quick: bool, memory: bool,
                  log: Callable[[str], None]) -> dict:
    cfg = workload_config(quick)
    names = names or list(workloads.METHODS)
    rows = []
    for w in workloads.workloads():
        if ids and w.id not in ids:
            continue
        log(f"workload {w.id}")
        t0 = time.perf_counter()
        row = run_workload(w, names, cfg, log)
        if memory:
            log(f"  memory {w.id}")
            row["memory"] = workloads.memory(w, memory_names(row))
        row["seconds"] = time.perf_counter() - t0
        log(f"  ({w.id}: {row['seconds']:.0f} s)")
        rows.append(row)
    return {"samples": cfg.samples, "budget_s": cfg.method_budget_s, "rows": rows}


# ---------------------------------------------------------------- P1-P6: record_once's first replay and peak memory


def instance_first_replay(iid: str, trials: int = FIRST_REPLAY_TRIALS, costs: dict | None = None) -> list[float]:
    """Seconds of record_once's first replay on a P instance (the same x: a replay is a replay);
    `costs`: first_replays'."""
    inst = instances.load(iid)
    method = methods.find(inst, "jaccli record_once")

    def make():
        run = method.build(inst).run
        return lambda x: run()
    times, _ = first_replays(make, inst.x, trials, costs)
    return times


def instance_plain_in_position(iid: str, trials: int = FIRST_REPLAY_TRIALS, costs: dict | None = None) -> list[float]:
    """Seconds of a plain call timed where instance_first_replay times the first replay: the second
    call after an idle wait (the first call after the wait stands for the recording).

    The first replay is compared with the plain call's steady median, timed in back-to-back calls;
    a call right after the wait pays for caches and threads left idle, whatever it runs (the idle
    run of 10ef85a: P2-n100-m100's first replays 555, 548 and 303 us against a steady 252 us, where
    its thread CPU is 0.7-1.0x a plain call's in either position). This says what part of the
    ratio the position takes. `costs`: first_replays'."""
    inst = instances.load(iid)
    run = methods.find(inst, "jaccli").build(inst).run
    times = []
    for _ in range(trials):
        quiesce(0.5)
        run()
        times.append(costed(run, costs))
    return times


def instance_memory(iid: str, runs: int = MEMORY_RUNS) -> dict:
    """memprobe's steady peak RSS of plain calls and of replays (each after one call: the warm-up, the
    recording; from the RSS before it, see memprobe's --steady): of `runs` fresh processes each, the run
    of the median peak, with every run's peak (MB) as its `runs_mb`."""
    out = {}
    for name in ("jaccli", "jaccli record_once"):
        probes = [memprobe.probe(iid, name, steady=True) for _ in range(runs)]
        ok = sorted((p for p in probes if p.get("status") == "ok"), key=increment_mb)
        if len(ok) < len(probes):  # (a failed run is reported as it failed)
            out[name] = next(p for p in probes if p.get("status") != "ok")
            continue
        out[name] = dict(ok[(len(ok) - 1) // 2], runs_mb=[round(increment_mb(p), 2) for p in probes],
                         runs_huge_mb=[round(huge_mb(p), 2) for p in probes])
    return out


# ---------------------------------------------------------------- issue 39's spectral residual


def run_spectral(sizes: tuple[int, ...], cfg: Config, log: Callable[[str], None]) -> dict:
    """spectral.py's methods, full Jacobian and VJP apart, each checked against jaccli's plain result."""
    from benchmarks import spectral

    out = {}
    for n in sizes:
        log(f"spectral n = {n}")
        ways = spectral._methods(n)
        out[n] = {}
        for kind, base in (("jacobian", "jaccli jacobian"), ("vjp", "jaccli vjp")):
            mine = {name: fn for name, fn in ways.items() if ("vjp" in name) == (kind == "vjp")}
            target = SimpleNamespace(iid=f"spectral-{n}-{kind}", ref=np.asarray(ways[base]()))
            results = {name: Timing() for name in mine}
            measure(target, mine, cfg, results, log)
            out[n][kind] = {name: dataclasses.asdict(res) for name, res in results.items()}
    return out


# ---------------------------------------------------------------- issue 44's item 3: the CLI against the library


def run_cli_cost(grid: int, rounds: int, processes: int = 1) -> dict:
    """cli_cost.phases(): the command line against the library phase by phase (its rows as they are)."""
    from benchmarks import cli_cost

    try:
        rows = cli_cost.phases(grid, rounds, processes)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a failing command line is a result
        return {"status": f"ERROR {type(exc).__name__}: {exc}"[:300], "rows": []}
    return {"status": "ok", "grid": grid, "rows": rows}
