"""End to end: whole processes that load P2-n100-m100, compute its Jacobian and save a .npy.

The jaccli command (`jaccli jacobian f.py x.npy -o J.npy`) is timed from process start to exit
against a plain NumPy script doing the closed form, and against JAX, PyTorch and HIPS autograd
scripts where those are installed. Runs are interleaved; every saved file is checked.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks import problems
from benchmarks.timing import Timing

IID = "P2-n100-m100"
REPO = Path(__file__).resolve().parent.parent

F_PY = '''\
import os

import numpy as np

_w = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights.npz"))
W1, b1, W2, b2 = _w["W1"], _w["b1"], _w["W2"], _w["b2"]


def f(x):
    return W2 @ np.tanh(W1 @ x + b1) + b2
'''

_LOAD = '''\
import sys
import numpy as np
w = np.load("weights.npz")
W1, b1, W2, b2 = w["W1"], w["b1"], w["W2"], w["b2"]
x = np.load("x.npy")
'''

SCRIPTS = {
    "numpy closed form": ("numpy", _LOAD + '''\
h = np.tanh(W1 @ x + b1)
np.save(sys.argv[1], (W2 * (1.0 - h * h)) @ W1)
'''),
    "jax jit(jacrev)": ("jax", '''\
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
''' + _LOAD + '''\
W1, b1, W2, b2, x = map(jnp.asarray, (W1, b1, W2, b2, x))
J = jax.jit(jax.jacrev(lambda x: W2 @ jnp.tanh(W1 @ x + b1) + b2))(x)
np.save(sys.argv[1], np.asarray(J))
'''),
    "torch autograd.functional": ("torch", '''\
import torch
''' + _LOAD + '''\
W1, b1, W2, b2, x = map(torch.from_numpy, (W1, b1, W2, b2, x))
J = torch.autograd.functional.jacobian(lambda x: W2 @ torch.tanh(W1 @ x + b1) + b2, x)
np.save(sys.argv[1], J.numpy())
'''),
    "HIPS autograd": ("autograd", '''\
import autograd
import autograd.numpy as anp
''' + _LOAD + '''\
J = autograd.jacobian(lambda x: W2 @ anp.tanh(W1 @ x + b1) + b2)(x)
np.save(sys.argv[1], J)
'''),
}


def jaccli_command() -> list[str] | None:
    """The installed `jaccli` next to this interpreter, else `python -m jaccli`, else None."""
    exe = Path(sys.executable).parent / "jaccli"
    if exe.exists():
        return [str(exe)]
    sys.path.insert(0, str(REPO))
    try:
        found = importlib.util.find_spec("jaccli.__main__") is not None
    except (ImportError, ValueError):
        found = False
    finally:
        sys.path.remove(str(REPO))
    return [sys.executable, "-m", "jaccli"] if found else None


def _byte_compile_jaccli() -> None:
    """Write jaccli's bytecode, as `pip install .` does at install time.

    An editable install (or PYTHONDONTWRITEBYTECODE in the environment) would otherwise make
    every timed process compile jaccli's sources again: a cost users of an installed jaccli
    never pay, while the NumPy script's imports come byte-compiled.
    """
    spec = importlib.util.find_spec("jaccli")
    if spec is None or not spec.submodule_search_locations:
        return
    env = {k: v for k, v in child_env().items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", *spec.submodule_search_locations],
                   env=env, capture_output=True, check=False)


def child_env() -> dict[str, str]:
    """Same environment for every process; the repo on the path only matters for `-m jaccli`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def _write_inputs(tmp: Path) -> None:
    x, (W1, b1, W2, b2) = problems.data(IID)
    np.savez(tmp / "weights.npz", W1=W1, b1=b1, W2=W2, b2=b2)
    np.save(tmp / "x.npy", x)
    (tmp / "f.py").write_text(F_PY)


def _run_once(cmd: list[str], tmp: Path, out: Path, timeout_s: float) -> tuple[float, str]:
    """(seconds, error text or '') for one process; the saved file is checked afterwards."""
    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=tmp, env=child_env(), capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return float("nan"), f"TIMEOUT > {timeout_s:.0f} s"
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return dt, f"ERROR exit {proc.returncode}: {tail[:250]}"
    return dt, ""


def _check_file(out: Path, ref: np.ndarray) -> str:
    if not out.exists():
        return "WRONG: no file written"
    J = np.load(out)
    if J.shape != ref.shape:
        return f"WRONG: shape {J.shape}, expected {ref.shape}"
    err = float(np.max(np.abs(J - ref)))
    return "" if err <= 1e-9 * max(1.0, float(np.abs(ref).max())) else f"WRONG: max err {err:.3g}"


def _fail(res: Timing, err: str) -> None:
    """err starts with WRONG, ERROR or TIMEOUT; that word becomes the status."""
    res.status, res.detail = err.split()[0].rstrip(":"), err


def run_e2e(runs: int, unavailable: Callable[[str], str], timeout_s: float = 300.0,
            log: Callable[[str], None] = lambda s: None) -> dict[str, Timing]:
    """Interleaved end-to-end timings; key "jaccli" is the CLI, the others are SCRIPTS.

    `unavailable(lib)` says why an anchor's script cannot run ("" when it can).
    """
    ref = problems.reference(IID)
    results: dict[str, Timing] = {}
    cmds: dict[str, list[str]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="jaccli-e2e-"))
    try:
        _write_inputs(tmp)
        jcmd = jaccli_command()
        _byte_compile_jaccli()
        if jcmd is None:
            results["jaccli"] = Timing(status="unavailable",
                                       detail="no `jaccli` executable and no jaccli.__main__")
        else:
            cmds["jaccli"] = jcmd + ["jacobian", "f.py", "x.npy", "-o", "{out}"]
        for name, (lib, src) in SCRIPTS.items():
            why = unavailable(lib) if lib != "numpy" else ""
            if why:
                results[name] = Timing(status="unavailable", detail=f"{lib}: {why}")
                continue
            script = tmp / f"script_{lib}.py"
            script.write_text(src)
            cmds[name] = [sys.executable, script.name, "{out}"]
        live = []
        for name, cmd in cmds.items():     # warm-up run (disk cache, __pycache__) + check
            res = results[name] = Timing()
            out = tmp / f"J_{len(results)}.npy"
            cmd = [c.replace("{out}", out.name) for c in cmd]
            cmds[name] = cmd
            dt, err = _run_once(cmd, tmp, out, timeout_s)
            err = err or _check_file(out, ref)
            res.first_s = dt
            if err:
                _fail(res, err)
                log(f"  e2e {name}: {err}")
                continue
            live.append((name, out))
        for rnd in range(runs):
            k = rnd % max(1, len(live))
            order = live[k:] + live[:k]
            for name, out in order:
                res = results[name]
                if res.status != "ok":
                    continue
                dt, err = _run_once(cmds[name], tmp, out, timeout_s)
                err = err or _check_file(out, ref)
                if err:
                    _fail(res, err)
                    continue
                res.rounds.append(rnd)
                res.samples.append(dt)
        for name, res in results.items():
            if res.ok:
                log(f"  e2e {name}: median {res.median * 1e3:.0f} ms over {len(res.samples)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results
