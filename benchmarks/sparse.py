"""The sparse benchmark (issue 38, Performance): jaccli's sparse Jacobians and Hessians against scipy's sparse
finite differences, asdex and JAX's dense jit(jacfwd); colours, pieces of a first call, peak memory, the
end-to-end run from a shell, and the issue's targets as PASS/MISS.

    python -m benchmarks.sparse                 # full run, rewrites benchmarks/SPARSE_RESULTS.md (~15 min)
    python -m benchmarks.sparse --quick         # the small problems only, to benchmarks/out/
    python -m benchmarks.sparse --only bratu-n10000,arrowhead --no-memory
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from benchmarks import sparse_methods as M, sparse_problems as P
from benchmarks.memprobe import _reset_peak, _status_kb
from benchmarks.sparse_report import Result, write_report
from benchmarks.timing import quiesce

REPO = Path(__file__).resolve().parent.parent
QUICK = ("bratu-n10000", "brusselator-N32", "arrowhead-n4000")
SLOW_S = 20.0          # a method whose first call takes longer is timed by that call alone
GB = 1024 ** 3


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _check(problem: P.Problem, result: Any) -> tuple[float, float]:
    return P.max_error(problem, result), P.central_difference_check(problem, result)


def time_methods(problem: P.Problem, names: list[str], rounds: int, log: Callable[[str], None]) -> dict[str, Result]:
    """Verify each method once (its cold first call), then `rounds` interleaved rounds in a rotated order (reversed
    on odd rounds), each sample after the process went idle; small problems repeat calls to fill 0.2 s."""
    results: dict[str, Result] = {}
    runs: dict[str, Callable[[], Any]] = {}
    for name in names:
        res = results[name] = Result(name)
        try:
            run = M.BUILDERS[name](problem)
        except M.Unavailable as exc:
            res.status, res.detail = "unavailable", str(exc)
            continue
        quiesce(0.5)
        t0 = time.perf_counter()
        try:
            out = run()
        except Exception as exc:  # a failing method is a result, not a crash of the benchmark
            res.status, res.detail = "ERROR", f"{type(exc).__name__}: {exc}"[:200]
            continue
        res.first_s = time.perf_counter() - t0
        res.max_err, res.cd_err = _check(problem, out)
        del out
        if res.max_err > 1e-6:
            res.status, res.detail = "WRONG", f"max relative error {res.max_err:.2g}"
            continue
        if res.first_s > SLOW_S:
            res.samples = [res.first_s]
            res.detail = "timed by its verified first call alone"
        else:
            runs[name] = run
        log(f"  {name}: first {res.first_s:.3g} s, err {res.max_err:.1e} / cd {res.cd_err:.1e}")
    loops = {name: 1 if problem.large else max(1, int(0.2 / max(results[name].first_s, 1e-4))) for name in runs}
    order = list(runs)
    for rnd in range(rounds):
        k = rnd % max(1, len(order))
        now = order[k:] + order[:k]
        for name in (reversed(now) if rnd % 2 else now):
            quiesce(0.5)
            t0 = time.perf_counter()
            for _ in range(loops[name]):
                runs[name]()
            results[name].samples.append((time.perf_counter() - t0) / loops[name])
    for res in results.values():
        res.large = problem.large
    return results


def pieces(problem: P.Problem, rounds: int) -> dict[str, Any]:
    """The pieces of jaccli's first call, each the median (min for large problems) over `rounds`."""
    runs = [M.jaccli_pieces(problem) for _ in range(rounds)]
    pick = min if problem.large else statistics.median
    out = {k: pick(r[k] for r in runs) for k in ("record", "detect", "colour", "sweeps", "recover")}
    out.update(colors=runs[0]["colors"], mode=runs[0]["mode"])
    return out


def colours(problem: P.Problem) -> dict[str, Any]:
    import jaccli
    out: dict[str, Any] = {"jaccli plan": jaccli.sparsity(problem.f, problem.x, hessian=problem.hessian).colors,
                           "natural greedy": M.natural_greedy_colors(problem)}
    if not problem.hessian:
        out["scipy group_columns"] = M.scipy_colors(problem)
    try:
        out["asdex"] = M.asdex_colors(problem)
    except Exception as exc:  # asdex missing or failing: said in the table
        out["asdex"] = f"n/a ({type(exc).__name__})"
    return out


# ---------------------------------------------------------------------------------------------
# Fresh processes: peak memory, JAX's dense Jacobian, the run from a shell
# ---------------------------------------------------------------------------------------------
def probe_main(pid: str, name: str) -> None:
    """In a fresh process: build the method, reset the peak RSS, run it once; print one JSON line."""
    problem = P.load(pid)
    out: dict[str, Any] = {"pid": pid, "method": name}
    try:
        run = M.jax_dense(problem) if name == "jax dense" else M.BUILDERS[name](problem)
        out["build_peak_kb"] = _status_kb("VmHWM")
        out["reset"] = _reset_peak()
        out["before_kb"] = _status_kb("VmRSS")
        times = []
        for _ in range(3 if name == "jax dense" else 1):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        out.update(status="ok", peak_kb=_status_kb("VmHWM"), seconds=min(times))
    except M.Unavailable as exc:
        out.update(status="unavailable", detail=str(exc))
    except Exception as exc:
        out.update(status="ERROR", detail=f"{type(exc).__name__}: {exc}"[:200])
    print(json.dumps(out))


def probe(pid: str, name: str, timeout_s: float = 900.0) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.sparse", "--probe", pid, name], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=timeout_s)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"pid": pid, "method": name, "status": "ERROR", "detail": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def jax_dense_scaling(log: Callable[[str], None], sides: tuple[int, ...] = (100, 120, 140, 160, 180, 200)) -> list[dict]:
    """JAX's dense jit(jacfwd) on Bratu at growing n, each in a fresh process, stopping before a size whose
    peak (scaled by n^2 from the last one) would pass 8 GB."""
    rows: list[dict] = []
    for side in sides:
        if rows and rows[-1].get("peak_gb", 0) * (side / rows[-1]["side"]) ** 4 > 8.0:
            break
        got = probe_with_problem(side, "jax dense")
        if got.get("status") != "ok":
            log(f"  jax dense n={side * side}: {got.get('status')} {got.get('detail', '')}")
            break
        got.update(side=side, n=side * side,
                   peak_gb=max(got["peak_kb"], got.get("build_peak_kb", 0)) / 1024 ** 2)
        rows.append(got)
        log(f"  jax dense n={side * side}: {got['seconds']:.3g} s, peak {got['peak_gb']:.2f} GB")
    return rows


def probe_with_problem(side: int, name: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.sparse", "--probe-bratu", str(side), name], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"status": "ERROR", "detail": proc.stderr.strip()[-200:]}


RESIDUAL = '''"""2-D Bratu residual (the sparse benchmark's problem)."""
from typing import Any

import numpy as np

LAMBDA = {lam}


{source}

def f(u):
    return bratu(u)
'''

SCRIPT = ("import numpy as np, runpy, scipy.sparse as sp, jaccli; "
          "f = runpy.run_path('residual.py')['f']; u = np.load('u.npy'); "
          "sp.save_npz('J.npz', jaccli.sparse_jacobian(f, u))")


def cli_has_sparse() -> bool:
    exe = Path(sys.executable).with_name("jaccli")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "jaccli"]
    out = subprocess.run(cmd + ["jacobian", "--help"], capture_output=True, text=True)
    return "--sparse" in out.stdout


def end_to_end(problem: P.Problem, runs: int, log: Callable[[str], None]) -> dict:
    """From process start to the written J.npz, in a temp dir: the CLI when it has --sparse, and a Python
    script doing the same through the library (the CLI's floor); each run's peak RSS from GNU time."""
    import inspect

    import scipy.sparse as sp

    exe = Path(sys.executable).with_name("jaccli")
    cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "jaccli"]
    commands = {"python script (library)": [sys.executable, "-c", SCRIPT]}
    has_cli = cli_has_sparse()
    if has_cli:
        commands["jaccli CLI --sparse"] = cli + ["jacobian", "residual.py", "u.npy", "--sparse", "-o", "J.npz"]
    out: dict[str, Any] = {"cli": has_cli}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "residual.py").write_text(RESIDUAL.format(lam=P.LAMBDA, source=inspect.getsource(P.bratu)))
        np.save(d / "u.npy", problem.x)
        for name, cmd in commands.items():
            times, peaks = [], []
            for _ in range(runs + 1):  # the first run warms the file cache, untimed
                (d / "J.npz").unlink(missing_ok=True)
                quiesce(0.5)
                t0 = time.perf_counter()
                # GNU time forks the command from its own small image: wait4 on a child of this process
                # would count the pages it shares with this one before exec (GBs after asdex ran here)
                child = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", str(d / "rss")] + cmd, cwd=d,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                _, status, _ = os.wait4(child.pid, 0)
                elapsed = time.perf_counter() - t0
                if status != 0:
                    out[name] = {"status": "ERROR", "detail": child.stderr.read().decode()[-200:]}
                    break
                times.append(elapsed)
                peaks.append(int((d / "rss").read_text().split()[-1]) / 1024)
            else:
                err = P.max_error(problem, sp.load_npz(d / "J.npz"))
                out[name] = {"status": "ok", "seconds": min(times[1:]), "all": times[1:], "peak_mb": max(peaks),
                             "max_err": err}
                log(f"  {name}: {min(times[1:]):.3g} s, peak {max(peaks):.0f} MB, err {err:.1e}")
    return out


def profile_first_call(problem: P.Problem, top: int = 22) -> str:
    """cProfile of jaccli's first call, the functions with the most own time."""
    prof = cProfile.Profile()
    prof.enable()
    M.jaccli_first(problem)()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime").print_stats(top)
    text = buf.getvalue()
    return text[text.find("ncalls") if "ncalls" in text else 0:].rstrip()


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.sparse")
    ap.add_argument("--quick", action="store_true", help="the small problems, 3 rounds, no JAX scaling")
    ap.add_argument("--only", default="", help="problem ids or prefixes, comma-separated")
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--out", default="")
    ap.add_argument("--probe", nargs=2, metavar=("PROBLEM", "METHOD"), help=argparse.SUPPRESS)
    ap.add_argument("--probe-bratu", nargs=2, metavar=("SIDE", "METHOD"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.probe:
        probe_main(*args.probe)
        return 0
    if args.probe_bratu:
        side = int(args.probe_bratu[0])
        P.BUILDERS[f"bratu-n{side * side}"] = lambda: P._bratu(side)
        probe_main(f"bratu-n{side * side}", args.probe_bratu[1])
        return 0

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    wanted = [w for w in args.only.split(",") if w]
    ids = [pid for pid in P.BUILDERS if (pid.startswith(tuple(wanted)) if wanted else
                                         (not args.quick or pid in QUICK))]
    full = not (args.quick or wanted or args.no_memory)
    run: dict[str, Any] = {"command": "python -m benchmarks.sparse " + " ".join(argv if argv is not None else sys.argv[1:]),
                           "load_before": _load(), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
                           "versions": _versions(), "problems": {}}
    for pid in ids:
        problem = P.load(pid)
        log(f"{pid} (n = {problem.n})")
        rounds = args.rounds or (3 if problem.large or args.quick else 7)
        entry: dict[str, Any] = {"n": problem.n, "hessian": problem.hessian, "large": problem.large}
        entry["timings"] = time_methods(problem, list(M.BUILDERS), rounds, log)
        entry["pieces"] = pieces(problem, rounds)
        entry["colours"] = colours(problem)
        if not args.no_memory:
            entry["memory"] = {name: probe(pid, name) for name in M.BUILDERS
                               if entry["timings"][name].status == "ok"}
        if pid == "bratu-n1000000":
            entry["e2e"] = end_to_end(problem, 3, log)
            entry["profile"] = profile_first_call(problem)
        run["problems"][pid] = entry
    if not args.quick and (not wanted or "jax" in wanted):
        log("JAX dense jit(jacfwd) on Bratu, growing n")
        run["jax_dense"] = jax_dense_scaling(log)
    run["load_after"] = _load()
    out = Path(args.out) if args.out else (REPO / "benchmarks" / ("SPARSE_RESULTS.md" if full else
                                                                   "out/SPARSE_RESULTS-partial.md"))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(run, out)
    log(f"wrote {out}")
    return 0


def _versions() -> str:
    import scipy

    import jaccli
    parts = [f"numpy {np.__version__}", f"scipy {scipy.__version__}", f"jaccli {getattr(jaccli, '__version__', '?')}"]
    from importlib.metadata import PackageNotFoundError, version
    for mod in ("jax", "asdex"):
        try:
            parts.append(f"{mod} {version(mod)}")
        except PackageNotFoundError:
            parts.append(f"{mod} missing")
    return ", ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
