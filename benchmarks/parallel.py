"""Parallel evaluation on Dask (issue 40): --workers 2 against one process, and the costs behind a cluster.

    python -m benchmarks.parallel              # all: ~1-2 min on an idle 2-core machine
    python -m benchmarks.parallel --runs 3     # more interleaved runs of each command
    python -m benchmarks.parallel --steps 160  # a larger problem: the cluster's start-up weighs less

1. End to end, whole processes, interleaved: `jaccli jacobian f.py x.npy -o J.npy` with and without
   `--workers 2`, on a dense Jacobian of n = 3000, 40 steps of tanh and cumsum (seconds of sweeps),
   and on a small one (n = 200, 5 steps) where jaccli should keep to one process. Each saved file is
   compared with the one-process file, to the bit (the streamed run splits rows alike: same sweeps).
2. On a running LocalCluster of 2 single-threaded processes: the per-task overhead (round trip of a
   block whose work is known), the block size that keeps it under 5%, and a projection of a
   10^5 x 10^5 dense Jacobian of a 10 ms model on 100 workers from the measured per-row cost of a
   reverse sweep relative to one evaluation of f.

The machine's load (os.getloadavg) is printed before and after: the numbers mean little on a busy one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MODEL = '''\
import numpy as np


def f(x):
    y = x
    for _ in range({steps}):
        y = np.cumsum(np.tanh(y)) / y.size
    return y
'''


def _jaccli(args: list[str], cwd: Path) -> tuple[float, str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jaccli", *args], cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"jaccli {' '.join(args)} failed: {done.stderr}")
    return seconds, done.stderr


def end_to_end(n: int, steps: int, runs: int, where: Path, address: str | None) -> dict:
    """Median wall seconds of one process, of --workers 2 and (given `address`) of --scheduler on a
    running cluster of 2, and whether the files agree to the bit."""
    (where / f"f{n}.py").write_text(MODEL.format(steps=steps))
    np.save(where / f"x{n}.npy", np.linspace(-1.0, 1.0, n))
    times: dict[str, list[float]] = {"one": [], "workers": [], "scheduler": []}
    notes: dict[str, str] = {}
    options = {"one": [], "workers": ["--workers", "2"], "scheduler": ["--scheduler", address or ""]}
    for _ in range(runs):
        for how, extra in options.items():
            if how == "scheduler" and address is None:
                continue
            seconds, err = _jaccli(["jacobian", f"f{n}.py", f"x{n}.npy", "-o", f"{how}.npy", "--stats", *extra], where)
            times[how].append(seconds)
            notes[how] = "; ".join(line[len("stats: "):] for line in err.splitlines() if line.startswith("stats: "))
    one = np.load(where / "one.npy")
    same = {how: np.load(where / f"{how}.npy").tobytes() == one.tobytes() for how in times if times[how]}
    return {"times": {how: float(np.median(t)) for how, t in times.items() if t}, "same": same, "notes": notes}


def cluster_costs(client) -> dict:
    """Per-task overhead and per-row sweep cost on a LocalCluster of 2 single-threaded processes."""
    import jaccli
    from jaccli.parallel.payload import make_payload, pickled
    from jaccli.parallel.worker import call

    namespace: dict = {}
    exec(MODEL.format(steps=40), namespace)
    f = namespace["f"]
    n = 3000
    x = np.linspace(-1.0, 1.0, n)
    payload = make_payload(pickled(f), (x,), (0,), "jacobian", False, "auto")
    future = client.submit(lambda p: p, payload, pure=False)
    client.gather(client.map(call, [future] * 4, ["row_sweep"] * 4, [(0, np.arange(1))] * 4, pure=False))  # warm
    # The cost of one evaluation of f, and of reverse sweeps per row, here (one process).
    f_s = min(_timed(lambda: f(x)) for _ in range(5))
    J = jaccli.jacobian(f, x)
    per_row = {k: min(_timed(lambda: J._ev.row_sweep(0, np.arange(k))) for _ in range(3)) / k
               for k in (1, 10, 100)}
    # Per-task overhead: many blocks of one row, their round trip against the work the workers report.
    tasks = 200
    begin = time.perf_counter()
    results = client.gather(client.map(call, [future] * tasks, ["row_sweep"] * tasks,
                                       [(0, np.arange(1))] * tasks, pure=False))
    wall = time.perf_counter() - begin
    work = sum(seconds for _, seconds in results)
    overhead = (wall * 2 - work) / tasks  # two worker threads busy (or waiting) for `wall` seconds
    return {"f_s": f_s, "per_row": per_row, "overhead_s": overhead, "tasks": tasks,
            "wall_s": wall, "work_s": work}


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="interleaved runs of each end-to-end command")
    parser.add_argument("--steps", type=int, default=40,
                        help="steps of tanh and cumsum of the large problem (its seconds of sweeps grow with them)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    from jaccli.parallel.cluster import Cluster

    cluster = Cluster(workers=2, say=print)  # started as --workers starts it
    start = time.perf_counter()
    client = cluster.client()
    print(f"LocalCluster of 2 processes started in {time.perf_counter() - start:.2f} s")
    address = client.scheduler_info()["address"]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(tmp)
            for label, n, steps in (("large", 3000, args.steps), ("small", 200, 5)):
                r = end_to_end(n, steps, args.runs, where, address)
                t = r["times"]
                print(f"{label}: n = {n}, {steps} steps: one process {t['one']:.2f} s, --workers 2 {t['workers']:.2f} s "
                      f"({t['one'] / t['workers']:.2f}x), --scheduler (running, 2 workers) {t['scheduler']:.2f} s "
                      f"({t['one'] / t['scheduler']:.2f}x); the same bits as one process: {r['same']}")
                for how, note in r["notes"].items():
                    print(f"    {how}: {note}")
        c = cluster_costs(client)
    finally:
        cluster.close()
    print(f"f(x), n = 3000, 40 steps: {c['f_s'] * 1e3:.1f} ms; reverse sweep per row: "
          + ", ".join(f"{k} rows/sweep {v * 1e3:.2f} ms" for k, v in c["per_row"].items()))
    print(f"per-task overhead: {c['overhead_s'] * 1e3:.1f} ms ({c['tasks']} one-row tasks: {c['wall_s']:.2f} s wall, "
          f"{c['work_s']:.2f} s of work on the workers)")
    row_s = c["per_row"][100]
    rows_for_5pct = int(np.ceil(20 * c["overhead_s"] / row_s))
    print(f"block size for overhead under 5%: >= {rows_for_5pct} rows of this model "
          f"(work per block >= {20 * c['overhead_s'] * 1e3:.0f} ms)")
    # Projection: per-row sweep cost scales with f's cost (ratio measured here), 10^5 rows, 100 workers.
    ratio = row_s / c["f_s"]
    m, workers, f10 = 10**5, 100, 0.010
    row10 = ratio * f10
    rows_per_block = max(1, int(np.ceil(20 * c["overhead_s"] / row10)))
    blocks = int(np.ceil(m / rows_per_block))
    total = m * row10 / workers + blocks * c["overhead_s"] / workers + f10
    print(f"projection: 10^5 x 10^5 dense Jacobian of a 10 ms model on {workers} workers: a row costs "
          f"{ratio:.2f} x f = {row10 * 1e3:.1f} ms, blocks of {rows_per_block} rows ({blocks} tasks), "
          f"{total:.0f} s ({total / 60:.1f} min) of sweeps, plus 80 GB of result to store")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
