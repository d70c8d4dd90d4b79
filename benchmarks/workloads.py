"""Workloads users run beyond P1-P6 (issue 44): Python-loop ODE integrators, element loops, stacks and concatenations of many small pieces, lazy rows of a large stencil Jacobian.

    python -m benchmarks.workloads                       # every workload, every method available
    python -m benchmarks.workloads --only rk4-lv,stack-1000 --methods jaccli,record_once,torch
    python -m benchmarks.workloads --memory              # + peak RSS per method, each in a fresh process
    python -m benchmarks.workloads --probe stack-1000 record_once   # (one memory probe: a JSON line)

Every method's result is first compared with a reference (closed forms; for the integrators, RK4
applied to the variational equation); a wrong result is reported, not timed.
Times are the best of --samples calls after one warm-up call (record_once: after the recording and
REPLAYS replays, so a steady replay; its first replay and its slowest of those are reported apart,
as multiples of a plain call; its peak memory over them, as a multiple of a plain call's).
For jaccli the recorded operations per second are reported too, plain and replayed: the
per-operation overhead that dominates Python-loop code. The CLI against the library on a stencil
is benchmarks/cli_cost.py.
"""
from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from benchmarks.memprobe import _reset_peak, _status_kb

# record_once's calls timed after its recording: its first replays compile it one step a call
# (jaccli/replay/replays.py), the steady state follows
REPLAYS = 6

# ---------------------------------------------------------------- the functions, written for NumPy-like modules


def lotka_volterra(m: Any, z: Any) -> Any:
    a, b, c, d = 1.5, 1.0, 3.0, 1.0
    return m.stack([a * z[0] - b * z[0] * z[1], -c * z[1] + d * z[0] * z[1]])


def lorenz96(m: Any, z: Any) -> Any:
    return (m.roll(z, -1) - m.roll(z, 2)) * m.roll(z, 1) - z + 8.0


def rk4(rhs: Callable, steps: int = 200, h: float = 0.01) -> Callable:
    def run(m: Any, z: Any) -> Any:
        for _ in range(steps):
            k1 = rhs(m, z)
            k2 = rhs(m, z + h / 2 * k1)
            k3 = rhs(m, z + h / 2 * k2)
            k4 = rhs(m, z + h * k3)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return z
    return run


def stack(m: Any, x: Any) -> Any:
    return m.stack([x[i] * x[i + 1] for i in range(x.shape[0] - 1)])


def concatenate(m: Any, x: Any) -> Any:
    return m.concatenate([m.sin(x[10 * i:10 * i + 10]) * x[10 * i] for i in range(x.shape[0] // 10)])


def element_loop_numpy(x: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    y = np.zeros_like(x)
    for i in range(n):
        y[i] = x[i] * x[(i + 1) % n]
    return y


def element_loop_stacked(m: Any, x: Any) -> Any:
    # Peers without in-place writes into a fresh array: the same products, stacked.
    n = x.shape[0]
    return m.stack([x[i] * x[(i + 1) % n] for i in range(n)])


def lennard_jones(m: Any, x: Any) -> Any:
    """The energy of atoms at x (3 coordinates each): 4 (r^-12 - r^-6) summed over pairs (issue 43's Hessian)."""
    X = x.reshape(-1, 3)
    d = X[:, None, :] - X[None, :, :]
    i, j = np.triu_indices(X.shape[0], 1)
    inv6 = 1.0 / m.sum(d * d, axis=-1)[i, j] ** 3
    return m.sum(4.0 * (inv6 * inv6 - inv6))


def stencil(m: Any, x: Any) -> Any:
    g = int(round(x.shape[0] ** 0.5))
    u = x.reshape(g, g)
    # torch has no pad of its own; HIPS autograd's pad rule needs the mode spelled out
    p = m.pad(u, 1, mode="constant") if hasattr(m, "pad") else m.nn.functional.pad(u, (1, 1, 1, 1))
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u
    return (lap + u ** 3).reshape(-1)


# ---------------------------------------------------------------- references


def _lv_jacobian(z: np.ndarray) -> np.ndarray:
    a, b, c, d = 1.5, 1.0, 3.0, 1.0
    return np.array([[a - b * z[1], -b * z[0]], [d * z[1], -c + d * z[0]]])


def _l96_jacobian(z: np.ndarray) -> np.ndarray:
    n = z.size
    i = np.arange(n)
    A = -np.eye(n)
    A[i, (i + 1) % n] += z[(i - 1) % n]
    A[i, (i - 2) % n] -= z[(i - 1) % n]
    A[i, (i - 1) % n] += z[(i + 1) % n] - z[(i - 2) % n]
    return A


def _rk4_tangent(rhs: Callable, jac: Callable, steps: int = 200, h: float = 0.01) -> Callable:
    """d z(T) / d z0 in closed form: RK4 applied to the variational equation M' = J(z) M
    (Lorenz-96 is chaotic: its entries reach 10^6, beyond what central differences resolve)."""
    def run(z: np.ndarray) -> np.ndarray:
        M = np.eye(z.size)
        for _ in range(steps):
            k1, A1 = rhs(np, z), jac(z) @ M
            z2, M2 = z + h / 2 * k1, M + h / 2 * A1
            k2, A2 = rhs(np, z2), jac(z2) @ M2
            z3, M3 = z + h / 2 * k2, M + h / 2 * A2
            k3, A3 = rhs(np, z3), jac(z3) @ M3
            z4, M4 = z + h * k3, M + h * A3
            k4, A4 = rhs(np, z4), jac(z4) @ M4
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            M = M + h / 6 * (A1 + 2 * A2 + 2 * A3 + A4)
        return M
    return run


def _stack_ref(x: np.ndarray) -> np.ndarray:
    n = x.size
    J = np.zeros((n - 1, n))
    J[np.arange(n - 1), np.arange(n - 1)] = x[1:]
    J[np.arange(n - 1), np.arange(1, n)] += x[:-1]
    return J


def _loop_ref(x: np.ndarray) -> np.ndarray:
    n = x.size
    J = np.zeros((n, n))
    i = np.arange(n)
    J[i, i] += x[(i + 1) % n]
    J[i, (i + 1) % n] += x
    return J


def _concat_ref(x: np.ndarray) -> np.ndarray:
    n = x.size
    J = np.zeros((n, n))
    i = np.arange(n)
    J[i, i] = np.cos(x) * x[i // 10 * 10]
    J[i, i // 10 * 10] += np.sin(x)
    return J


def _lj_hessian(x: np.ndarray) -> np.ndarray:
    """Closed form: per pair, E(s) of s = |r|^2 with r = x_i - x_j; d2E/dx_i2 = 2 E'(s) I + 4 E''(s) r r^T."""
    X = x.reshape(-1, 3)
    H = np.zeros((x.size, x.size))
    for i in range(len(X)):
        for j in range(i + 1, len(X)):
            r = X[i] - X[j]
            s = r @ r
            block = 2 * 4 * (-6 * s ** -7 + 3 * s ** -4) * np.eye(3) + 4 * 4 * (42 * s ** -8 - 12 * s ** -5) * np.outer(r, r)
            for a, b, sign in ((i, i, 1), (j, j, 1), (i, j, -1), (j, i, -1)):
                H[3 * a:3 * a + 3, 3 * b:3 * b + 3] += sign * block
    return H


def _lj_atoms(n: int = 38) -> np.ndarray:
    """n atoms near a cubic lattice of spacing 1.1 (around the pair potential's minimum), slightly shaken."""
    grid = np.stack(np.meshgrid(np.arange(4), np.arange(4), np.arange(3), indexing="ij"), -1).reshape(-1, 3)[:n]
    return (1.1 * grid + 0.05 * np.random.default_rng(0).standard_normal((n, 3))).ravel()


def _stencil_rows_ref(x: np.ndarray, rows: int) -> np.ndarray:
    g = int(round(x.size ** 0.5))
    J = np.zeros((rows, x.size))
    for r in range(rows):
        i, j = divmod(r, g)
        J[r, r] = -4.0 + 3 * x[r] ** 2
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= i + di < g and 0 <= j + dj < g:
                J[r, (i + di) * g + j + dj] += 1.0
    return J


@dataclass
class Workload:
    id: str
    f: Callable  # f(m, x) for a NumPy-like module m
    x: np.ndarray
    reference: Callable[[np.ndarray], np.ndarray]
    rows: int | None = None  # only these first rows of the Jacobian (lazy rows)
    numpy_f: Callable | None = None  # jaccli's f when it differs from f(np, .) (in-place writes)
    peers: bool = True  # whether the peers differentiate it (an unrolled 10^4 loop: jit compiles for minutes)
    hessian: bool = False  # the Hessian of a scalar f, not the Jacobian (jaccli only)


def workloads() -> list[Workload]:
    lv, l96 = rk4(lotka_volterra), rk4(lorenz96)
    z_lv, z_l96 = np.array([1.0, 1.5]), 8.0 + np.linspace(-0.5, 0.5, 100)
    out = [
        Workload("rk4-lv", lv, z_lv, _rk4_tangent(lotka_volterra, _lv_jacobian)),
        Workload("rk4-l96", l96, z_l96, _rk4_tangent(lorenz96, _l96_jacobian)),
    ]
    for n in (1000, 10000):
        out.append(Workload(f"loop-{n}", element_loop_stacked, np.linspace(0.5, 1.5, n), _loop_ref,
                            numpy_f=element_loop_numpy, peers=n <= 1000))
    for n in (1000, 3000):
        out.append(Workload(f"stack-{n}", stack, np.linspace(0.5, 1.5, n), _stack_ref))
    out.append(Workload("concat-1000", concatenate, np.linspace(0.5, 1.5, 10000), _concat_ref))
    out.append(Workload("lj-hessian-114", lennard_jones, _lj_atoms(), _lj_hessian, peers=False, hessian=True))
    out.append(Workload("stencil300-rows10", stencil, np.linspace(0.1, 1.0, 300 * 300),
                        lambda x: _stencil_rows_ref(x, 10), rows=10))
    return out


# ---------------------------------------------------------------- methods


class Unavailable(Exception):
    pass


def _jaccli(w: Workload, once: bool) -> Callable[[np.ndarray], np.ndarray]:
    import jaccli

    f = w.numpy_f or (lambda x: w.f(np, x))
    if once:
        f = jaccli.record_once(f)
    if w.hessian:
        return lambda x: np.asarray(jaccli.hessian(f, x))
    if w.rows is not None:
        return lambda x: np.asarray(jaccli.jacobian(f, x)[:w.rows])
    return lambda x: np.asarray(jaccli.jacobian(f, x))


def _torch(w: Workload, how: str) -> Callable[[np.ndarray], np.ndarray]:
    try:
        import torch
        from torch import func
    except ImportError as exc:
        raise Unavailable("torch not installed") from exc
    torch.set_default_dtype(torch.float64)
    f = (lambda t: w.f(torch, t)) if w.rows is None else (lambda t: w.f(torch, t)[:w.rows])
    if w.rows is not None:
        def rows(x):  # vmap of a vjp over the 10 seed rows
            t = torch.from_numpy(x)
            _, pull = func.vjp(f, t)
            return func.vmap(pull)(torch.eye(w.rows, dtype=torch.float64))[0].numpy()
        return rows
    jac = func.jacrev(f) if how == "jacrev" else func.jacfwd(f)
    return lambda x: jac(torch.from_numpy(x)).numpy()


def _jax(w: Workload, how: str, jit: bool) -> Callable[[np.ndarray], np.ndarray]:
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
    except ImportError as exc:
        raise Unavailable("jax not installed") from exc
    f = lambda t: w.f(jnp, t)  # noqa: E731
    if w.rows is not None:
        def rows(x):
            _, pull = jax.vjp(f, x)
            return jax.vmap(pull)(jnp.eye(w.rows, x.size))[0]  # not eye(n)[:rows]: 65 GB at n = 9·10^4
        run = rows
    else:
        run = jax.jacrev(f) if how == "jacrev" else jax.jacfwd(f)
    if jit:
        run = jax.jit(run)
    return lambda x: np.asarray(run(jnp.asarray(x)))


def _autograd(w: Workload) -> Callable[[np.ndarray], np.ndarray]:
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError as exc:
        raise Unavailable("autograd not installed") from exc
    if w.rows is not None:
        return lambda x: autograd.jacobian(lambda t: w.f(anp, t)[:w.rows])(x)
    return lambda x: autograd.jacobian(lambda t: w.f(anp, t))(x)


METHODS: dict[str, Callable[[Workload], Callable]] = {
    "jaccli": lambda w: _jaccli(w, False),
    "record_once": lambda w: _jaccli(w, True),
    "torch.func.jacrev": lambda w: _torch(w, "jacrev"),
    "torch.func.jacfwd": lambda w: _torch(w, "jacfwd"),
    "jax.jacrev": lambda w: _jax(w, "jacrev", False),
    "jax.jacfwd": lambda w: _jax(w, "jacfwd", False),
    "jax.jit(jacrev)": lambda w: _jax(w, "jacrev", True),
    "jax.jit(jacfwd)": lambda w: _jax(w, "jacfwd", True),
    "autograd.jacobian": _autograd,
}


def _selected(spec: str | None) -> list[str]:
    if not spec:
        return list(METHODS)
    return [m for m in METHODS if any(m == s or m.startswith(s + ".") or m.startswith(s + "(") or
                                      (s == "jax" and m.startswith("jax")) for s in spec.split(","))]


def _check(w: Workload, got: Any, ref: np.ndarray) -> str | None:
    got = np.asarray(got, dtype=float).reshape(ref.shape)
    scale = max(float(np.max(np.abs(ref))), 1.0)
    tol = 1e-9
    err = float(np.max(np.abs(got - ref)))
    return None if err <= tol * scale else f"WRONG (max error {err:.3g})"


def _best(run: Callable[[], Any], samples: int) -> float:
    best = float("inf")
    for _ in range(samples):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _operations(w: Workload) -> int:
    import jaccli

    f = w.numpy_f or (lambda x: w.f(np, x))
    return (jaccli.hessian if w.hessian else jaccli.jacobian)(f, w.x)._ev.rec.trace.size()


def time_workload(w: Workload, methods: list[str], samples: int) -> dict:
    ref = w.reference(w.x)
    row: dict[str, Any] = {"workload": w.id, "methods": {}}
    plain = None
    for name in methods:
        if not w.peers and name not in ("jaccli", "record_once"):
            row["methods"][name] = "skipped (" + ("a Hessian" if w.hessian else "an unrolled loop of 10^4 steps") + ")"
            continue
        try:
            fn = METHODS[name](w)
            got = fn(w.x)  # the recording (record_once), the compilation (jit)
        except Unavailable as exc:
            row["methods"][name] = f"unavailable ({exc})"
            continue
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run the workload is reported
            row["methods"][name] = f"ERROR {type(exc).__name__}: {str(exc)[:80]}"
            continue
        wrong = _check(w, got, ref)
        if wrong:
            row["methods"][name] = wrong
            continue
        entry: dict[str, Any] = {}
        if name == "record_once":
            x1 = w.x * (1 + 1e-3)
            start = time.perf_counter()
            fn(x1)
            entry["first_replay_s"] = time.perf_counter() - start
            entry["replays_s"] = [entry["first_replay_s"]]
            for k in range(2, REPLAYS + 1):  # a recording is compiled by its replays, one step a call (replay/replays.py)
                start = time.perf_counter()
                fn(w.x * (1 + k * 1e-3))
                entry["replays_s"].append(time.perf_counter() - start)
        else:
            fn(w.x)
        entry["s"] = _best(lambda: fn(w.x), samples)
        if name == "jaccli":
            plain = entry["s"]
        row["methods"][name] = entry
    if plain is not None:
        ops = _operations(w)
        row["operations"] = ops
        row["ops_per_s_plain"] = ops / plain
        once = row["methods"].get("record_once")
        if isinstance(once, dict):
            row["ops_per_s_replayed"] = ops / once["s"]
            once["first_replay_over_plain"] = once["first_replay_s"] / plain
            once["worst_replay_over_plain"] = max(once["replays_s"]) / plain
    return row


# ---------------------------------------------------------------- memory, each in a fresh process


def probe(wid: str, name: str, traced: bool = False) -> dict:
    """Peak memory of a method's steady calls, in this (fresh) process; one JSON line.

    Every method makes one call first (its warm-up: record_once's recording, a jit's compilation),
    then the measured calls at new points: jaccli's two methods REPLAYS each (record_once's replays
    that compile it one step a call included), a peer one. jaccli's two methods are measured from
    before their first call (`peak_mb`: the peak RSS over the RSS before it; `traced`: instead, the
    peak of what Python and NumPy hold, tracemalloc started before it), so each is charged for what
    its first call left: record_once for the recording it keeps, a plain call for the freed pages
    its warm-up left resident, which its later calls reuse (rk4-lv: the warm-up peaks at 22 MB and
    leaves 18 MB resident, 3 MB live; measured from after it, as this probe did before, a plain
    call rose 4.6 MB where the replays, after a recording that keeps 15 MB, rose 19). The peers are
    measured from after their warm-up (`peak_mb`, as `over_warm_mb` for jaccli's), a jit's
    compilation not counted."""
    w = next(w for w in workloads() if w.id == wid)
    out: dict[str, Any] = {"workload": wid, "method": name}
    ours = name in ("jaccli", "record_once")
    try:
        fn = METHODS[name](w)
    except Unavailable as exc:
        return {**out, "status": f"unavailable ({exc})"}
    gc.collect()
    if traced:
        tracemalloc.start()
    start = _status_kb("VmRSS")
    got = fn(w.x)  # the warm-up: the recording, the compilation
    del got
    gc.collect()
    tracemalloc.reset_peak()
    held = 0 if ours else tracemalloc.get_traced_memory()[0]
    out["reset"] = _reset_peak()
    before = _status_kb("VmRSS")
    calls = REPLAYS if ours else 1
    for k in range(calls):
        got = fn(w.x * (1 + k * 1e-3))
    if traced:
        out["traced_peak_mb"] = (tracemalloc.get_traced_memory()[1] - held) / 2**20
        tracemalloc.stop()
    else:
        peak = _status_kb("VmHWM")
        out["peak_mb"] = (peak - (start if ours else before)) / 1024
        out["over_warm_mb"] = (peak - before) / 1024
    wrong = _check(w, got, w.reference(w.x * (1 + (calls - 1) * 1e-3)))
    out["status"] = wrong or "ok"
    return out


def memory(w: Workload, methods: list[str]) -> dict[str, Any]:
    found = {}
    for name in methods:
        if not w.peers and name not in ("jaccli", "record_once"):
            continue
        # tracemalloc sees Python's and NumPy's allocations, not torch's or jax's own allocators: jaccli's two methods only
        for extra in ([], ["--traced"]) if name in ("jaccli", "record_once") else ([],):
            done = subprocess.run([sys.executable, "-m", "benchmarks.workloads", "--probe", w.id, name, *extra],
                                  capture_output=True, text=True, timeout=1800)
            try:
                found.setdefault(name, {}).update(json.loads(done.stdout.strip().splitlines()[-1]))
            except (IndexError, json.JSONDecodeError):
                found[name] = {"status": f"ERROR {done.stderr.strip()[-200:]}"}
                break
    return found


def _cell(entry: Any) -> str:
    if isinstance(entry, dict):
        return f"{entry['s'] * 1e3:.1f} ms"
    return str(entry)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.workloads", description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="workload ids, comma-separated")
    ap.add_argument("--methods", help="method names or prefixes (jaccli, record_once, torch, jax, autograd)")
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="peak RSS per method, each in a fresh process")
    ap.add_argument("--probe", nargs=2, metavar=("WORKLOAD", "METHOD"), help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)  # (--probe: tracemalloc's peak, see probe)
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(*args.probe, traced=args.traced)))
        return 0
    methods = _selected(args.methods)
    chosen = [w for w in workloads() if not args.only or w.id in args.only.split(",")]
    rows = []
    for w in chosen:
        row = time_workload(w, methods, args.samples)
        if args.memory:
            row["memory"] = memory(w, methods)
        rows.append(row)
        print(f"## {w.id}" + (f"  ({row['operations']} recorded operations: {row['ops_per_s_plain']:,.0f}/s plain, "
                              f"{row.get('ops_per_s_replayed', 0):,.0f}/s replayed)" if "operations" in row else ""))
        for name, entry in row["methods"].items():
            extra = ""
            if isinstance(entry, dict) and "first_replay_over_plain" in entry:
                extra = (f"  first replay {entry['first_replay_over_plain']:.2f}x plain, "
                         f"worst of {REPLAYS} replays {entry['worst_replay_over_plain']:.2f}x")
            mem = row.get("memory", {}).get(name)
            if mem:
                extra += f"  peak {mem['peak_mb']:.0f} MB" if "peak_mb" in mem else f"  memory: {mem['status']}"
                plain_mem = row["memory"].get("jaccli", {}).get("peak_mb")
                if name == "record_once" and "peak_mb" in mem and plain_mem:
                    extra += f" ({mem['peak_mb'] / plain_mem:.2f}x plain)"
                if "traced_peak_mb" in mem:
                    extra += f", traced {mem['traced_peak_mb']:.1f} MB"
                    plain_traced = row["memory"].get("jaccli", {}).get("traced_peak_mb")
                    if name == "record_once" and plain_traced:
                        extra += f" ({mem['traced_peak_mb'] / plain_traced:.2f}x plain)"
            print(f"  {name:<20} {_cell(entry)}{extra}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
