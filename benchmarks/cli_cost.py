"""What the command line costs over the library, phase by phase: `jaccli jacobian f.py x.npy -o J.npy` against np.asarray(jaccli.jacobian(f, x)).

    python -m benchmarks.cli_cost [--grid 100] [--rounds 5] [--processes 3] [--ab REV]

The function is a 5-point stencil on a grid x grid mesh (n = grid**2 inputs and outputs, a dense
n x n Jacobian). In this process, alternating within each round, the command line runs through
click and the library call runs beside it; the command line's phases come from its JSON report's
timings (load_s, record_s, evaluate_s, write_s, total_s):

- load: reading f and x (load_s), against np.load of x (f is imported already);
- evaluation: from f loaded to J in memory (record_s + evaluate_s), against the library call;
- checks: everything else before the write (the NaN/inf scan, --fail-on-nonfinite's verdict, the
  run's own glue): total_s - load_s - record_s - evaluate_s - write_s, as a share of the library call;
- evaluation + checks (the issue's figure: total_s - load_s - write_s) against the library call;
- write: the -o file (write_s: an atomic write, fsync'ed before its rename, metadata included)
  against np.save of the same array to a file beside it, and against np.save then os.fsync (the
  same durability). Every write is followed by an untimed os.sync(), so that none pays for the
  writeback the one before left in the page cache.

With --processes N > 0, two more rows from fresh processes (median of N, alternating): start-up
(`python -c "import jaccli.cli.main"` against `python -c "import jaccli"`) and end to end (the
`jaccli` executable with -o against `python -c` running the library call and np.save, and with
os.fsync after it; an untimed os.sync() before each). With
--ab REV the command line of REV (exported as `jaccli_ab`, see benchmarks.ab) runs in this process
too (its evaluation + checks). Each result is checked against the closed form first. Ratios are the
median of the per-round ratios. `phases()` returns the rows (for RESULTS.md).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

STENCIL = '''\
import numpy as np


def f(x):
    n = int(round(np.sqrt(x.shape[0])))
    u = x.reshape(n, n)
    p = np.pad(u, 1)
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u
    return (lap + u ** 3).ravel()
'''


def stencil_jacobian(x: np.ndarray) -> np.ndarray:
    """Closed form: the 5-point Laplacian with zero boundary plus diag(3 x**2)."""
    g = int(round(np.sqrt(x.size)))
    one = -2.0 * np.eye(g) + np.eye(g, k=1) + np.eye(g, k=-1)
    return np.kron(one, np.eye(g)) + np.kron(np.eye(g), one) + np.diag(3.0 * x ** 2)


def _cli(lib: Any, folder: Path) -> tuple[dict[str, float], Path]:
    """One command line run in this process: its phases in seconds, and the file it wrote."""
    from click.testing import CliRunner

    out = folder / "J.npy"
    result = CliRunner().invoke(sys.modules[f"{lib.__name__}.cli.main"].cli,
                                ["jacobian", str(folder / "stencil.py:f"), str(folder / "x.npy"), "-o", str(out),
                                 "--format", "json"], catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"{lib.__name__} command line failed: {result.output}")
    t = json.loads(result.stdout[:result.stdout.rindex("}") + 1])["timings"]
    write = t.get("write_s", 0.0)
    evaluation = t["record_s"] + t["evaluate_s"]
    return {"load": t["load_s"], "evaluation": evaluation, "checks": t["total_s"] - t["load_s"] - evaluation - write,
            "evaluation + checks": t["total_s"] - t["load_s"] - write, "write": write}, out


def _library(lib: Any, f: Any, x: np.ndarray) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    J = np.asarray(lib.jacobian(f, x))
    return time.perf_counter() - start, J


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _save(path: Path, J: np.ndarray) -> tuple[float, float]:
    """Seconds np.save takes, and with os.fsync after it; then an untimed os.sync()."""
    start = time.perf_counter()
    with open(path, "wb") as fh:
        np.save(fh, J)
        fh.flush()
        saved = time.perf_counter() - start
        os.fsync(fh.fileno())
    synced = time.perf_counter() - start
    os.sync()
    return saved, synced


def _process(argv: list[str], cwd: Path) -> float:
    os.sync()  # (no run pays for the writeback of the one before)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


LIBRARY_SCRIPT = ("import numpy as np, jaccli; from stencil import f; "
                  "np.save('J_lib.npy', np.asarray(jaccli.jacobian(f, np.load('x.npy'))))")
FSYNC = "; import os; fd = os.open('J_lib.npy', os.O_RDONLY); os.fsync(fd)"


def _row(phase: str, cli: list[float], reference: str, ref: list[float] | None, runs: int) -> dict:
    row = {"phase": phase, "cli_s": statistics.median(cli), "reference": reference,
           "reference_s": statistics.median(ref) if ref else None, "runs": runs}
    row["ratio"] = statistics.median(c / r for c, r in zip(cli, ref)) if ref else None
    return row


def phases(grid: int = 100, rounds: int = 5, processes: int = 3, ab: str | None = None) -> list[dict]:
    """Time the command line against the library on the grid x grid stencil, phase by phase.

    Returns one dict per row: ``phase``, ``cli_s`` (median seconds), ``reference`` (what it is
    compared with), ``reference_s``, ``ratio`` (median per-round cli / reference) and ``runs``;
    a --ab REV row is named "evaluation + checks (REV)".
    """
    jaccli = importlib.import_module("jaccli")
    sides = {"cli": jaccli}
    if ab:
        from benchmarks.ab import export

        export(ab)
        sides[ab] = importlib.import_module("jaccli_ab")
    for lib in sides.values():
        importlib.import_module(f"{lib.__name__}.cli.main")
    with tempfile.TemporaryDirectory(prefix="jaccli-cli-cost-") as tmp:
        folder = Path(tmp)
        (folder / "stencil.py").write_text(STENCIL)
        x = np.linspace(0.1, 1.0, grid ** 2)
        np.save(folder / "x.npy", x)
        sys.path.insert(0, tmp)
        try:
            sys.modules.pop("stencil", None)
            f = importlib.import_module("stencil").f
            rows = _in_process(sides, folder, f, x, grid, rounds)
            if processes > 0:
                rows += _processes(folder, processes)
        finally:
            sys.path.remove(tmp)
            sys.modules.pop("stencil", None)
    return rows


def _in_process(sides: dict[str, Any], folder: Path, f: Any, x: np.ndarray, grid: int, rounds: int) -> list[dict]:
    ref = stencil_jacobian(x) if grid <= 100 else None
    cli: dict[str, dict[str, list[float]]] = {name: {} for name in sides}
    lib_s: list[float] = []
    load_s: list[float] = []
    save_s: list[float] = []
    fsync_s: list[float] = []
    names = ["library", *sides]
    for r in range(rounds + 1):  # round 0 checks the results and warms up
        for name in (names if r % 2 == 0 else names[::-1]):
            if name == "library":
                took, J = _library(sides["cli"], f, x)
                saved, synced = _save(folder / "J_lib.npy", J)
                loaded = _timed(lambda: np.load(folder / "x.npy"))
            else:
                times, path = _cli(sides[name], folder)
                os.sync()
                J = np.load(path, mmap_mode="r") if r == 0 else None
            if r == 0 and ref is not None:
                err = float(np.max(np.abs(J - ref)))
                if err > 1e-9 * float(np.max(np.abs(ref))):
                    raise SystemExit(f"{name}: wrong Jacobian (max error {err:.3g})")
            del J
            if not r:
                continue
            if name == "library":
                lib_s.append(took)
                save_s.append(saved)
                fsync_s.append(synced)
                load_s.append(loaded)
            else:
                for phase, seconds in times.items():
                    cli[name].setdefault(phase, []).append(seconds)
    own = cli["cli"]
    rows = [_row("load (reading f and x)", own["load"], "np.load(x)", load_s, rounds),
            _row("evaluation (f loaded to J in memory)", own["evaluation"], "np.asarray(jaccli.jacobian(f, x))",
                 lib_s, rounds),
            _row("checks (NaN/inf scan, verdicts)", own["checks"], "share of the library call", lib_s, rounds),
            _row("evaluation + checks", own["evaluation + checks"], "np.asarray(jaccli.jacobian(f, x))", lib_s,
                 rounds),
            _row("write -o J.npy (atomic, fsync)", own["write"], "np.save(J)", save_s, rounds),
            _row("write -o J.npy (atomic, fsync)", own["write"], "np.save(J), os.fsync", fsync_s, rounds)]
    for name in sides:
        if name != "cli":
            rows.append(_row(f"evaluation + checks ({name})", cli[name]["evaluation + checks"],
                             "np.asarray(jaccli.jacobian(f, x))", lib_s, rounds))
    return rows


def _processes(folder: Path, runs: int) -> list[dict]:
    exe = shutil.which("jaccli", path=str(Path(sys.executable).parent)) or "jaccli"
    py = sys.executable
    command = [exe, "jacobian", "stencil.py:f", "x.npy", "-o", "J.npy", "--quiet"]
    pairs = [("start-up (import)", [py, "-c", "import jaccli.cli.main"], "import jaccli", [py, "-c", "import jaccli"]),
             ("end to end (process)", command, "the library call, np.save", [py, "-c", LIBRARY_SCRIPT]),
             ("end to end (process)", command, "the library call, np.save, os.fsync", [py, "-c", LIBRARY_SCRIPT + FSYNC])]
    rows = []
    for phase, cli_argv, what, ref_argv in pairs:
        cli, ref = [], []
        _process(cli_argv, folder), _process(ref_argv, folder)  # warm the file cache
        for r in range(runs):
            order = [(cli_argv, cli), (ref_argv, ref)]
            for argv, into in (order if r % 2 == 0 else order[::-1]):
                into.append(_process(argv, folder))
        rows.append(_row(phase, cli, f"python -c: {what}", ref, runs))
    return rows


def print_rows(rows: list[dict], grid: int) -> None:
    print(f"stencil {grid}x{grid} (n = {grid ** 2}); median seconds, ratio = median per-round cli / reference")
    print(f"{'phase':<40} {'cli':>9} {'reference':>9} {'ratio':>6}  reference")
    for row in rows:
        ref = f"{row['reference_s']:9.3f}" if row["reference_s"] is not None else f"{'':>9}"
        ratio = f"{row['ratio']:6.2f}" if row["ratio"] is not None else f"{'':>6}"
        print(f"{row['phase']:<40} {row['cli_s']:9.3f} {ref} {ratio}  {row['reference']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cli_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--processes", type=int, default=3, help="fresh-process runs of each (0: none)")
    ap.add_argument("--ab", metavar="REV", help="time REV's command line too")
    args = ap.parse_args(argv)
    print_rows(phases(args.grid, args.rounds, args.processes, args.ab), args.grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
