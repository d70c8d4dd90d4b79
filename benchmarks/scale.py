"""Scale target: a dense 20000 x 20000 Jacobian of P1's f written to .npy by the jaccli command.

Peak RSS of the jaccli process comes from wait4's rusage, taken by a small launcher process:
Linux folds the RSS of the process that forked the child (its memory before exec) into the
child's ru_maxrss, and this benchmark process holds gigabytes by then. The 3.2 GB file
lives in a temp dir, is checked through a memory map (the whole diagonal against the closed
form, random blocks off the diagonal must be zero) and is deleted afterwards.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks import problems
from benchmarks.e2e import child_env, jaccli_command

# Runs the command given in argv[2:] with only the standard library loaded; polls wait4 so a
# hung run can time out, and samples RssAnon/RssFile every 50 ms: ru_maxrss counts both, and
# file pages (an output written through a memmap) are cheap for the kernel to drop.
LAUNCHER = '''
import json, os, subprocess, sys, time
timeout_s, cmd = float(sys.argv[1]), sys.argv[2:]
peaks, t0 = {}, time.perf_counter()
with open("stdout.txt", "w") as so, open("stderr.txt", "w") as se:
    proc = subprocess.Popen(cmd, stdout=so, stderr=se)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open(f"/proc/{proc.pid}/status") as fh:
                for line in fh:
                    key = line.split(":")[0]
                    if key in ("RssAnon", "RssFile"):
                        peaks[key] = max(peaks.get(key, 0), int(line.split()[1]))
        except OSError:
            pass
        if time.perf_counter() - t0 > timeout_s:
            proc.kill()
            proc.wait()
            print(json.dumps({"timeout": True}))
            sys.exit(0)
        time.sleep(0.05)
print(json.dumps({"timeout": False, "seconds": time.perf_counter() - t0, "peaks": peaks,
                  "exit": os.waitstatus_to_exitcode(status), "maxrss_kb": usage.ru_maxrss}))
'''

F_PY = '''\
import numpy as np


def f(x):
    return np.sin(x) * np.exp(x) + x ** 2
'''


def _check(path: Path, x: np.ndarray, blocks: int = 12, size: int = 256) -> str:
    n = x.shape[0]
    J = np.load(path, mmap_mode="r")
    if J.shape != (n, n) or J.dtype != np.float64:
        return f"WRONG: {J.shape} {J.dtype}, expected ({n}, {n}) float64"
    d = np.exp(x) * (np.sin(x) + np.cos(x)) + 2.0 * x
    i = np.arange(n)
    diag_err = float(np.max(np.abs(J[i, i] - d)))
    if diag_err > 1e-9 * max(1.0, float(np.abs(d).max())):
        return f"WRONG: diagonal max err {diag_err:.3g}"
    rng = np.random.default_rng(1)
    checked = 0
    while checked < blocks:                       # blocks that hold no diagonal entry
        r, c = (int(v) for v in rng.integers(0, n - size, size=2))
        if abs(r - c) < size:
            continue
        if np.any(J[r:r + size, c:c + size]):
            return f"WRONG: nonzero entries in off-diagonal block at ({r}, {c})"
        checked += 1
    r = int(rng.integers(0, n - size))                  # a block on the diagonal: zero elsewhere
    if not np.array_equal(np.asarray(J[r:r + size, r:r + size]) != 0, np.diag(d[r:r + size] != 0)):
        return f"WRONG: diagonal block at {r} has nonzero off-diagonal entries"
    return ""


def run_scale(n: int = 20000, limit_gb: float = 1.5, timeout_s: float = 3600.0,
              log: Callable[[str], None] = lambda s: None) -> dict:
    """Run `jaccli jacobian f.py x.npy -o J.npy --chunk-size auto`; report time, peak RSS, check."""
    out: dict = {"n": n, "limit_gb": limit_gb, "file_gb": n * n * 8 / 1e9}
    cmd = jaccli_command()
    if cmd is None:
        out.update(status="unavailable", detail="no `jaccli` executable and no jaccli.__main__")
        return out
    tmp = Path(tempfile.mkdtemp(prefix="jaccli-scale-"))
    try:
        free = shutil.disk_usage(tmp).free
        if free < n * n * 8 * 1.2:
            out.update(status="SKIPPED", detail=f"only {free / 1e9:.1f} GB free in {tmp}")
            return out
        (tmp / "f.py").write_text(F_PY)
        x = problems.p1_data(n)          # the P1 recipe (fresh default_rng(0)) at n = 20000
        np.save(tmp / "x.npy", x)
        cmd = cmd + ["jacobian", "f.py", "x.npy", "-o", "J.npy", "--chunk-size", "auto"]
        out["command"] = " ".join(["jaccli"] + cmd[-7:])
        log(f"  scale: {out['command']} in {tmp}")
        launcher = subprocess.run([sys.executable, "-c", LAUNCHER, str(timeout_s)] + cmd,
                                  cwd=tmp, env=child_env(), capture_output=True, text=True)
        lines = [ln for ln in launcher.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            out.update(status="ERROR", detail=f"launcher: {launcher.stderr.strip()[-250:]}")
            return out
        rep = json.loads(lines[-1])
        if rep["timeout"]:
            out.update(status="TIMEOUT", detail=f"> {timeout_s:.0f} s")
            return out
        out["seconds"] = rep["seconds"]
        out["peak_rss_gb"] = rep["maxrss_kb"] * 1024 / 1e9          # ru_maxrss is in KiB
        out["sampled_peak_anon_gb"] = rep["peaks"].get("RssAnon", 0) * 1024 / 1e9
        out["sampled_peak_file_gb"] = rep["peaks"].get("RssFile", 0) * 1024 / 1e9
        code = rep["exit"]
        if code != 0:
            tail = ((tmp / "stderr.txt").read_text().strip().splitlines() or ["?"])[-1]
            out.update(status="ERROR", detail=f"exit {code}: {tail[:250]}")
            return out
        t0 = time.perf_counter()
        err = _check(tmp / "J.npy", x)
        out["check_seconds"] = time.perf_counter() - t0
        out.update(status="WRONG" if err else "ok", detail=err)
        log(f"  scale: {out['seconds']:.1f} s, peak RSS {out['peak_rss_gb']:.2f} GB, "
            f"{err or 'file checked'}")
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
