"""Run the P1-P6 benchmarks and write the results table: `python -m benchmarks.run --help`."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import importlib.metadata
import json
import os
import platform
import sys
import time
from pathlib import Path

from benchmarks import (e2e, instances, memprobe, methods, problems, readme_figures, report, scale,
                        workload_report, workload_suite, workloads)
from benchmarks.anchors import ANCHOR_LIBS, Unavailable
from benchmarks.timing import DRIFT_LIMIT, Config, Timing, drift, measure

HERE = Path(__file__).resolve().parent
ALL_LIBS = ("numpy", "jaccli") + ANCHOR_LIBS
LARGE = ("P1-n4000", "P2-n1000-m1000", "P2-n4000-m50", "P2-n50-m4000", "P3-n3000")
QUICK_INSTANCES = ("P1-n1000", "P2-n100-m100", "P2-n1000-m1000", "P2-n4000-m50", "P2-n50-m4000",
                   "P3-n1000", "P4-B256-n64", "P5-rows10-of-P2-n1000-m1000", "P6-n500")
# skipped in quick mode only, and said so in the table: their first call alone takes ~20 s
QUICK_SKIP = {("P4-B256-n64", "torch taf.jacobian fwd vec (sum trick)"):
              "skipped in quick mode (forward mode over B*64 inputs: ~20 s per call)"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# machine and versions
# ----------------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _ram_gb() -> float:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 ** 2
    except OSError:
        pass
    return float("nan")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _meta(args, cfg: Config, libs: dict[str, str]) -> dict:
    jv = _version("jaccli")
    if jv == "not installed":
        try:
            jv = getattr(__import__("jaccli"), "__version__", "source tree, no version")
        except Exception:
            jv = "not importable"
    versions = [f"python {platform.python_version()}", f"numpy {_version('numpy')}",
                f"jaccli {jv}"]
    for dist in ("torch", "jax", "jaxlib", "autograd"):
        versions.append(f"{dist} {_version(dist)}")
    if libs.get("torch") == "ok":
        import torch
        versions.append(f"torch threads {torch.get_num_threads()}")
    return {
        "command": "python -m benchmarks.run " + " ".join(sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(), "cores": os.cpu_count(), "ram_gb": _ram_gb(),
        "load_start": os.getloadavg()[0],
        "versions": ", ".join(versions),
        "libs": ", ".join(f"{k}: {v}" for k, v in libs.items()),
        "quick": args.quick,
        "method": (f"one process; per instance every method is verified against the closed form "
                   f"(first call), warmed up once, then timed in {cfg.samples} interleaved rounds "
                   f"(order rotated each round, reversed on odd rounds), each sample started "
                   f"once the process is idle (spinning BLAS/OpenMP threads parked) and, when it is "
                   f"several calls, with one untimed call (the first call after the wait is cold); "
                   f"a sample is ≥ {cfg.min_sample_s * 1e3:.0f} ms of back-to-back calls; methods over "
                   f"{cfg.method_budget_s:.0f} s per instance get fewer samples (marked *); "
                   f"float64 throughout, JAX with x64"),
    }


# ----------------------------------------------------------------------------------------------
# the run
# ----------------------------------------------------------------------------------------------
# The parts of issues 44 and 39, named in --only like e2e; a workload's id selects it alone.
PARTS = ("workloads", "replay", "spectral", "cli")
QUICK_WORKLOADS = ("rk4-lv", "loop-1000", "stack-1000", "stencil300-rows10")
WORKLOAD_IDS = tuple(w.id for w in workloads.workloads())
# What each --libs entry means among workloads.METHODS
WORKLOAD_LIBS = {"jaccli": ("jaccli", "record_once"), "torch": ("torch.",), "jax": ("jax.",),
                 "autograd": ("autograd.",)}


def _parts(args) -> dict:
    """Which of the issue 44/39 parts run: {part: bool, "workload_ids": the ids, None for all}."""
    tokens = set((args.only or "").split(","))
    picked = sorted(tokens & set(WORKLOAD_IDS))
    out: dict = {p: not args.no_workloads and (not args.only or p in tokens) for p in PARTS}
    out["workloads"] = out["workloads"] or bool(picked and not args.no_workloads)
    out["workload_ids"] = picked or (list(QUICK_WORKLOADS) if args.quick else None)
    return out


def _workload_methods(libs: tuple[str, ...]) -> list[str]:
    prefixes = tuple(p for lib in libs for p in WORKLOAD_LIBS.get(lib, ()))
    return [name for name in workloads.METHODS if name in prefixes or name.startswith(prefixes)]


def _issue44(args, ids: list[str], results: dict, libs: tuple[str, ...]) -> None:
    """The workloads, record_once on P1-P6, the spectral residual and the CLI's cost, into `results`."""
    parts = _parts(args)
    if parts["workloads"]:
        t0 = time.perf_counter()
        results["workloads"] = workload_suite.run_workloads(
            parts["workload_ids"], _workload_methods(libs), args.quick, not args.no_memory, log)
        log(f"  (workloads: {time.perf_counter() - t0:.0f} s)")
    if parts["replay"] and "jaccli" in libs:
        t0 = time.perf_counter()
        results["replay"] = {}
        for iid in ids:
            log(f"record_once on {iid}: first replay" + ("" if args.no_memory else ", peak memory"))
            costs: dict = {"first_replay": {}, "plain_in_position": {}}
            rep = results["replay"][iid] = {
                "first_replay_s": workload_suite.instance_first_replay(iid, costs=costs["first_replay"]),
                "plain_in_position_s": workload_suite.instance_plain_in_position(
                    iid, costs=costs["plain_in_position"]),
                "costs": costs}
            if not args.no_memory:
                rep["memory"] = workload_suite.instance_memory(iid)
        log(f"  (record_once on P1-P6: {time.perf_counter() - t0:.0f} s)")
    if parts["spectral"]:
        t0 = time.perf_counter()
        results["spectral"] = workload_suite.run_spectral((256,) if args.quick else (256, 4096),
                                                          workload_suite.workload_config(args.quick), log)
        log(f"  (spectral: {time.perf_counter() - t0:.0f} s)")
    if parts["cli"]:
        t0 = time.perf_counter()
        log("the command line against the library")
        results["cli_cost"] = workload_suite.run_cli_cost(50 if args.quick else 100, 3 if args.quick else 5)
        log(f"  (cli: {time.perf_counter() - t0:.0f} s)")


def _select(args) -> list[str]:
    ids = [iid for iid, _, _ in problems.INSTANCES]
    if args.quick and not args.only:
        ids = [i for i in ids if i in QUICK_INSTANCES]
    if args.only:
        tokens = [t for t in args.only.split(",")
                  if t and t not in ("e2e", "scale") + PARTS + WORKLOAD_IDS]
        ids = [i for i in ids if any(i == t or i.startswith(t + "-") for t in tokens)]
    return ids


def _run_instance(iid: str, libs: tuple[str, ...], cfg: Config, quick: bool) -> dict:
    inst = instances.load(iid)
    out: dict = {"methods": {}}
    runs, results = {}, {}
    for m in methods.methods_for(inst, libs):
        res = results[m.name] = Timing()
        out["methods"][m.name] = {"lib": m.lib, "family": m.family}
        if quick and (iid, m.name) in QUICK_SKIP:
            res.status, res.detail = "skipped", QUICK_SKIP[(iid, m.name)]
            continue
        try:
            prep = m.build(inst)
        except Unavailable as exc:
            res.status, res.detail = "unavailable", str(exc)
            continue
        except Exception as exc:   # a broken adapter or library is reported, not fatal
            res.status, res.detail = "ERROR", f"setup: {type(exc).__name__}: {exc}"[:300]
            continue
        res.compile_s, res.note = prep.compile_s, prep.note
        runs[m.name] = prep.run
    out["probe_s"] = []  # (timing.probe before each round and after the last: the machine's steadiness)
    measure(inst, runs, cfg, results, log, out["probe_s"])
    moved = drift(out["probe_s"])
    if moved > DRIFT_LIMIT:
        log(f"  the probe drifted {moved:.2f}x during {iid}")
    for name, res in results.items():
        out["methods"][name]["timing"] = dataclasses.asdict(res)
    return out


def _memory(ids: list[str], res: dict, libs: tuple[str, ...], quick: bool) -> dict:
    """Peak RSS probes on the large instances: floors, jaccli, and each library's fastest."""
    mem: dict = {}
    for iid in ids:
        if iid not in LARGE:
            continue
        tm = report.timings(res["instances"][iid])
        fams = ["floor", "hand batched", "jaccli"]
        if not quick:
            fams += ["hand loop", "HIPS autograd", "torch", "jax jit"]
        names = []
        for fam in fams:
            b = report.best(tm, fam)
            if b and b[1].ok:
                names.append(b[0])
            elif b and fam == "jaccli":
                names.append(b[0])       # probe it anyway: the table says why it failed
        mem[iid] = {}
        for name in names:
            log(f"  memory {iid}: {name}")
            mem[iid][name] = memprobe.probe(iid, name)
    return mem


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="development mode: 9 instances, 3 samples, short budgets (1-2 min)")
    ap.add_argument("--only", help="comma-separated instance ids or prefixes (P2, P2-n100-m100);"
                    " add 'e2e', 'scale', 'workloads', 'replay', 'spectral', 'cli' or a workload's id"
                    f" ({', '.join(WORKLOAD_IDS)}) to also run those (--only e2e: that alone)")
    ap.add_argument("--libs", default=",".join(ALL_LIBS),
                    help=f"comma-separated subset of {','.join(ALL_LIBS)}")
    ap.add_argument("--samples", type=int, help="sample rounds per instance (default 7, quick 3)")
    ap.add_argument("--e2e-runs", type=int, help="end-to-end runs per process (default 10/3)")
    ap.add_argument("--no-e2e", action="store_true", help="skip the end-to-end timing")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-RSS probes")
    ap.add_argument("--no-workloads", action="store_true",
                    help="skip the slow parts of issues 44 and 39: the workloads, record_once's first replay "
                    "and memory on P1-P6, the spectral residual, the CLI against the library")
    ap.add_argument("--scale", action="store_true",
                    help="also run target 3 (20000 x 20000 Jacobian, writes 3.2 GB to a temp dir)")
    ap.add_argument("--out", type=Path, help="markdown output (default: benchmarks/RESULTS.md for"
                    " a full run, benchmarks/out/RESULTS-partial.md otherwise)")
    args = ap.parse_args(argv)

    libs = tuple(lib for lib in args.libs.split(",") if lib)
    bad = [lib for lib in libs if lib not in ALL_LIBS]
    if bad:
        ap.error(f"unknown --libs {bad}; choose from {','.join(ALL_LIBS)}")
    cfg = (Config(samples=3, min_sample_s=0.005, method_budget_s=3.0, call_timeout_s=120.0)
           if args.quick else Config())
    if args.samples:
        cfg.samples = args.samples
    ids = _select(args)
    if not ids and not args.only:
        ap.error("no instance selected")
    partial = args.quick or bool(args.only) or set(libs) != set(ALL_LIBS) or args.no_workloads
    out_md = args.out or (HERE / "out" / "RESULTS-partial.md" if partial else HERE / "RESULTS.md")

    t_start = time.perf_counter()
    status = methods.library_status(libs)
    missing = [lib for lib in ANCHOR_LIBS if lib in libs and status[lib] != "ok"]
    log(f"libraries: {status}")
    if missing:
        log(f"anchors missing: {', '.join(missing)} (pip install -e '.[bench]')")
    results: dict = {"meta": _meta(args, cfg, status), "instances": {}, "notes": []}
    if missing:
        results["notes"].append(f"Anchors not installed: {', '.join(missing)} "
                                "(`pip install -e '.[bench]'`); their columns say `missing`.")
    for iid in ids:
        log(f"{iid}")
        t0 = time.perf_counter()
        results["instances"][iid] = _run_instance(iid, libs, cfg, args.quick)
        gc.collect()
        log(f"  ({time.perf_counter() - t0:.1f} s)")
    if args.quick and not args.only:
        results["notes"].append("Quick mode: " + "; ".join(QUICK_SKIP.values()) + "; instances "
                                "P1-n100, P1-n4000, P3-n100, P3-n3000 not run.")

    run_e2e = not args.no_e2e and (not args.only or "e2e" in args.only.split(","))
    if run_e2e:
        log("end to end")
        runs = args.e2e_runs or (3 if args.quick else 10)
        e2e_res = e2e.run_e2e(runs, lambda lib: "" if status.get(lib) == "ok" else status[lib],
                              log=log)
        results["e2e"] = {k: dataclasses.asdict(v) for k, v in e2e_res.items()}
    if not args.no_memory:
        log("peak memory")
        results["memory"] = _memory(ids, results, libs, args.quick)
    _issue44(args, ids, results, libs)
    if args.scale or "scale" in (args.only or "").split(","):
        log("scale")
        results["scale"] = scale.run_scale(log=log)
    results["meta"]["total_s"] = time.perf_counter() - t_start
    results["meta"]["load_end"] = os.getloadavg()[0]
    results["meta"]["method"] += f"; whole run {results['meta']['total_s']:.0f} s"

    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(report.render(results, workload_report.sections(results)))
    out_json = HERE / "out" / (out_md.stem + ".json")
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(results, indent=1, default=str))
    log(f"wrote {out_md} and {out_json} in {results['meta']['total_s']:.0f} s")
    if out_md.resolve() == readme_figures.RESULTS.resolve():
        readme_figures.main([])  # README's and docs' figures follow the new RESULTS.md
    return 0


if __name__ == "__main__":
    sys.exit(main())
