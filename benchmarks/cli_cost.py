"""What the command line costs over the library: `jaccli jacobian f.py x.npy -o J.npy` against np.asarray(jaccli.jacobian(f, x)).

    python -m benchmarks.cli_cost [--grid 100] [--rounds 5] [--ab REV]

The function is a 5-point stencil on a grid x grid mesh (n = grid**2 inputs and outputs, a dense
n x n Jacobian). Both run in this process, alternating within each round: the library call, and the
command line through click (its JSON report's timings: everything but loading the inputs and
writing the file, which the library call does not do). With --ab REV the command line of REV
(exported as `jaccli_ab`, see benchmarks.ab) runs too. Each result is checked against the closed
form first. Prints the median seconds of each and the median per-round ratio command line / library.
"""
from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

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


def _cli(lib, folder: Path) -> tuple[float, Path]:
    from click.testing import CliRunner

    out = folder / "J.npy"
    result = CliRunner().invoke(sys.modules[f"{lib.__name__}.cli.main"].cli, ["jacobian", str(folder / "stencil.py:f"), str(folder / "x.npy"),
                                                   "-o", str(out), "--format", "json"], catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"{lib.__name__} command line failed: {result.output}")
    t = json.loads(result.stdout[:result.stdout.rindex("}") + 1])["timings"]
    return t["total_s"] - t["load_s"] - t.get("write_s", 0.0), out


def _library(lib, f, x) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    J = np.asarray(lib.jacobian(f, x))
    return time.perf_counter() - start, J


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cli_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ab", metavar="REV", help="time REV's command line too")
    args = ap.parse_args(argv)
    sides = {"library": importlib.import_module("jaccli")}
    sides["cli"] = sides["library"]
    if args.ab:
        from benchmarks.ab import export

        export(args.ab)
        sides[f"cli {args.ab}"] = importlib.import_module("jaccli_ab")
    importlib.import_module("jaccli.cli.main")
    for name, lib in sides.items():
        if name.startswith("cli"):
            importlib.import_module(f"{lib.__name__}.cli.main")
    with tempfile.TemporaryDirectory(prefix="jaccli-cli-cost-") as tmp:
        folder = Path(tmp)
        (folder / "stencil.py").write_text(STENCIL)
        x = np.linspace(0.1, 1.0, args.grid ** 2)
        np.save(folder / "x.npy", x)
        sys.path.insert(0, tmp)
        f = importlib.import_module("stencil").f
        ref = stencil_jacobian(x) if args.grid <= 100 else None
        times: dict[str, list[float]] = {name: [] for name in sides}
        for r in range(args.rounds + 1):  # round 0 checks the results and warms up
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for name in order:
                if name == "library":
                    took, J = _library(sides[name], f, x)
                else:
                    took, path = _cli(sides[name], folder)
                    J = np.load(path, mmap_mode="r") if r == 0 else None
                if r == 0 and ref is not None:
                    err = float(np.max(np.abs(J - ref)))
                    if err > 1e-9 * float(np.max(np.abs(ref))):
                        raise SystemExit(f"{name}: wrong Jacobian (max error {err:.3g})")
                del J
                if r:
                    times[name].append(took)
        lib_times = times["library"]
        print(f"stencil {args.grid}x{args.grid} (n = {args.grid ** 2}), {args.rounds} rounds; command line without "
              "loading and writing")
        for name, ts in times.items():
            ratio = statistics.median(t / b for t, b in zip(ts, lib_times))
            print(f"{name:<16} {statistics.median(ts):8.3f} s   / library {ratio:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
