"""Peak memory of one method on one instance, each in a fresh process.

    python -m benchmarks.memprobe P2-n1000-m1000 "torch func.jacrev"
    python -m benchmarks.memprobe P2-n1000-m1000 "jaccli record_once" --steady

prints one JSON line: the process's peak RSS (VmHWM) during the call, its RSS just before the
call (library imported, data built, jit compiled), its memory in transparent huge pages before and
after (huge_base_kb, huge_after_kb), and whether the result was correct. The
high-water mark is reset after setup (/proc/self/clear_refs), so the peak is the call's own.

`--steady` (issue 44's replay against a plain call): every method makes one call first (record_once's
recording, a plain call's warm-up), then STEADY_CALLS measured calls (record_once's replays that
compile it one step a call included); `base_kb` is the RSS before the first call, so that each
method is charged for what its first call left (the recording record_once keeps; the freed pages
a plain call's warm-up leaves resident, which its later calls reuse).
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

STEADY_CALLS = 6  # (benchmarks.workloads.REPLAYS)


def _status_kb(key: str, source: str = "/proc/self/status") -> int:
    """The kB on the line `key:` of the kernel's report `source` (this process's status by default); -1 if none."""
    with open(source) as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def _huge_kb(rollup: str = "/proc/self/smaps_rollup") -> int:
    """The process's anonymous memory in transparent huge pages (AnonHugePages of `rollup`), kB; -1 where the
    kernel does not say. NumPy asks for huge pages for arrays of 4 MB and more: one 2 MB page, taken where a
    few rows of such an array are written, is a step of 2 MB in a small peak."""
    try:
        return _status_kb("AnonHugePages", rollup)
    except OSError:  # (no such report: a kernel before 4.14, or no /proc)
        return -1


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")      # 5: reset the peak RSS to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def main(argv: list[str]) -> int:
    from benchmarks import instances, methods

    steady = "--steady" in argv
    iid, name = [a for a in argv if a != "--steady"]
    inst = instances.load(iid)
    out: dict = {"iid": iid, "method": name}
    try:
        prep = methods.find(inst, name).build(inst)
    except methods.Unavailable as exc:
        out.update(status="unavailable", detail=str(exc))
        print(json.dumps(out))
        return 0
    gc.collect()
    out["huge_base_kb"] = _huge_kb()  # (from where the peak is counted: base_kb's moment, or before_kb's)
    if steady:
        out["base_kb"] = _status_kb("VmRSS")
        prep.run()  # the warm-up, record_once's recording: before the reset
        gc.collect()
    out["reset"] = _reset_peak()
    out["before_kb"] = _status_kb("VmRSS")
    try:
        for _ in range(STEADY_CALLS if steady else 1):
            result = prep.run()
    except Exception as exc:
        out.update(status="ERROR", detail=f"{type(exc).__name__}: {exc}"[:300])
        print(json.dumps(out))
        return 0
    out["peak_kb"] = _status_kb("VmHWM")
    out["huge_after_kb"] = _huge_kb()
    ok, err, why = instances.check(inst, result)
    out.update(status="ok" if ok else "WRONG", detail=why, max_err=err)
    print(json.dumps(out))
    return 0


def probe(iid: str, name: str, timeout_s: float = 600.0, steady: bool = False) -> dict:
    """Run main() in a fresh child process and return its JSON report (`steady`: main's --steady)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.memprobe", iid, name] + ["--steady"] * steady,
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"iid": iid, "method": name, "status": "TIMEOUT", "detail": f"> {timeout_s} s"}
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        return {"iid": iid, "method": name, "status": "ERROR", "detail": tail[:300]}
    return json.loads(lines[-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
