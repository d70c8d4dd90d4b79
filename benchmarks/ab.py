"""A/B in one process: jaccli as committed at REV against the working tree, on benchmark instances.

    python -m benchmarks.ab REV [--only P1-n100,P3-n100] [--rounds 15]
    python -m benchmarks.ab REV --only rk4-lv,stack-1000    # workloads of benchmarks/workloads.py too

REV's `jaccli/` is exported with `git archive` into a temporary folder as the package `jaccli_ab`
(its absolute `jaccli` imports renamed), so both versions run in this process on the same
instances, in alternating order within each round; a refactor is measured before and after this
way (same machine, same load, same NumPy). Each side runs plain (f recorded on every call) and
through `record_once` (after its first REPLAYS replays, which compile it). The ratio is the
median over rounds of after / before: below 1 is faster.

A workload whose calls make and free arrays of several MB (stencil300-rows10: 7.2 MB of rows a call) runs
at a speed that depends on where glibc serves them from (heap memory used before, zeroed by calloc, or
fresh pages), and one side's history can set that for a whole run: HEAD against HEAD gave 1.45x and 1.66x
on its record_once in two runs, 1.01x in a third (one side's samples 2.2-3.8 ms). Run such a workload more
than once, or with MALLOC_MMAP_THRESHOLD_=131072 in the environment: every such array is then fresh pages
on both sides alike (1.015x; each call slower, 3.5-4 ms).
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import io
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks.instances import check, load
from benchmarks.methods import jaccli_run
from benchmarks.workloads import REPLAYS, Workload, _check, workloads

DEFAULT = "P1-n100,P2-n100-m100,P3-n100,P6-n500,P2-n1000-m1000,P3-n3000"
_ABSOLUTE = re.compile(r"\b(from|import)(\s+)jaccli\b")
_BARE = re.compile(r"^(\s*)import jaccli$", re.MULTILINE)  # (code then says jaccli.jacobian)


def export(rev: str, name: str = "jaccli_ab") -> Path:
    """REV's package, renamed to `name`, in a new temporary folder that is put on sys.path (and removed
    when the process ends: every A/B run left a copy of the package in /tmp)."""
    root = Path(tempfile.mkdtemp(prefix="jaccli-ab-"))
    atexit.register(shutil.rmtree, root, True)
    tar = subprocess.run(["git", "archive", rev, "jaccli"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(root, filter="data")
    (root / "jaccli").rename(root / name)
    for path in (root / name).rglob("*.py"):
        path.write_text(_ABSOLUTE.sub(rf"\1\2{name}", _BARE.sub(rf"\1import {name} as jaccli", path.read_text())))
    sys.path.insert(0, str(root))
    return root


def workload_runner(lib, w: Workload, once: bool = False) -> Callable[[], np.ndarray]:
    """A workload's Jacobian, f recorded on every call or through record_once (its first rows
    only, where it says so)."""
    f = w.numpy_f or (lambda x: w.f(np, x))
    if once:
        f = lib.record_once(f)
    if w.hessian:
        return lambda: np.asarray(lib.hessian(f, w.x))
    if w.rows is not None:
        return lambda: np.asarray(lib.jacobian(f, w.x)[:w.rows])
    return lambda: np.asarray(lib.jacobian(f, w.x))


def sample(run: Callable[[], object], min_s: float) -> float:
    """Mean seconds per call over enough back-to-back calls to last min_s."""
    loops, start = 0, time.perf_counter()
    while True:
        run()
        loops += 1
        took = time.perf_counter() - start
        if took >= min_s:
            return took / loops


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the 'before' commit (any git revision)")
    ap.add_argument("--only", default=DEFAULT, help=f"instance ids (default {DEFAULT})")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--min-sample", type=float, default=0.05, help="seconds each sample lasts at least")
    args = ap.parse_args(argv)
    export(args.rev)
    sides = {"before": importlib.import_module("jaccli_ab"), "after": importlib.import_module("jaccli")}
    print(f"A/B: before = {args.rev} (as jaccli_ab), after = the working tree; {args.rounds} rounds, "
          "median of per-round ratios after/before")
    print(f"{'instance':<28} {'method':<12} {'before':>10} {'after':>10} {'ratio':>7}")
    loads = {w.id: w for w in workloads()}
    for iid in args.only.split(","):
        work = loads.get(iid)
        inst = load(iid) if work is None else None
        for once in (False, True):
            runs = {}
            for side, lib in sides.items():
                run = jaccli_run(inst, False, once, lib) if work is None else workload_runner(lib, work, once)
                if work is None:
                    ok, err, why = check(inst, run())
                    if not ok:
                        raise SystemExit(f"{iid} {side}: wrong result ({why}, max error {err:.3g})")
                elif (wrong := _check(work, run(), work.reference(work.x))) is not None:
                    raise SystemExit(f"{iid} {side}: {wrong}")
                for _ in range(1 + REPLAYS * once):  # (record_once compiles over its first replays)
                    run()
                runs[side] = run
            times: dict[str, list[float]] = {"before": [], "after": []}
            for r in range(args.rounds):
                order = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in order:
                    times[side].append(sample(runs[side], args.min_sample))
            ratio = statistics.median(a / b for a, b in zip(times["after"], times["before"]))
            b, a = min(times["before"]), min(times["after"])
            method = "record_once" if once else "plain"
            print(f"{iid:<28} {method:<12} {b * 1e6:>8.0f}us {a * 1e6:>8.0f}us {ratio:>7.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
