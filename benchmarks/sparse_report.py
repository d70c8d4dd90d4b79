"""The sparse benchmark's results: one method's timing, the issue's targets as PASS/MISS, and the Markdown file."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BRATU = "bratu-n1000000"
BRUSS = "brusselator-N32"


@dataclass
class Result:
    """One method on one problem; times in seconds."""

    name: str
    status: str = "ok"
    detail: str = ""
    first_s: float = math.nan
    max_err: float = math.nan
    cd_err: float = math.nan
    samples: list[float] = field(default_factory=list)
    large: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.samples)

    @property
    def time(self) -> float:
        """Min of repeats for a large problem (one call lasts seconds), else the median sample."""
        if not self.samples:
            return math.nan
        return min(self.samples) if self.large else statistics.median(self.samples)


def _s(t: float) -> str:
    if t != t:
        return "–"
    return f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def _time(run: dict, pid: str, method: str) -> float:
    res = run["problems"].get(pid, {}).get("timings", {}).get(method)
    return res.time if res is not None and res.ok else math.nan


def targets(run: dict) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each of issue 38's Performance targets that this run measured."""
    rows: list[tuple[str, str, str]] = []
    probs = run["problems"]
    if BRATU in probs:
        b = probs[BRATU]
        scipy = _time(run, BRATU, "scipy FD (pattern given)")
        e2e = b.get("e2e", {})
        cli = e2e.get("jaccli CLI --sparse", {})
        script = e2e.get("python script (library)", {})
        if cli.get("status") == "ok":
            ratio = cli["seconds"] / scipy
            rows.append(("Bratu 10^6: CLI end to end ≤ 1.0x scipy sparse FD in process",
                         f"{_s(cli['seconds'])} / {_s(scipy)} = {ratio:.2f}x", _verdict(ratio <= 1.0)))
        else:
            rows.append(("Bratu 10^6: CLI end to end ≤ 1.0x scipy sparse FD in process",
                         "`jaccli jacobian --sparse` is not on main: not measured", "n/a"))
        whole = cli if cli.get("status") == "ok" else script
        label = "CLI" if whole is cli else "python script (the CLI's floor)"
        if script.get("status") == "ok":
            ratio = script["seconds"] / scipy
            rows.append(("  same, python script end to end (library + save_npz) instead of the CLI",
                         f"{_s(script['seconds'])} / {_s(scipy)} = {ratio:.2f}x", _verdict(ratio <= 1.0)))
        first = _time(run, BRATU, "jaccli first call")
        rows.append(("  same, jaccli first call in process vs scipy in process",
                     f"{_s(first)} / {_s(scipy)} = {first / scipy:.2f}x", _verdict(first / scipy <= 1.0)))
        dense = run.get("jax_dense") or []
        if dense and whole.get("status") == "ok":
            top = dense[-1]
            speed = top["seconds"] / whole["seconds"]
            rows.append((f"Bratu 10^6 ({label}) ≥ 100x faster than JAX dense jit(jacfwd) at its largest n "
                         f"({top['n']:,})", f"{_s(top['seconds'])} / {_s(whole['seconds'])} = {speed:.1f}x",
                         _verdict(speed >= 100)))
            least = _time(run, BRATU, "least possible work")
            if not math.isnan(least):
                rows.append(("  the least possible work (K evaluations of f and the write, in process) against "
                             "the 1/100 of JAX's time that target allows",
                             f"{_s(least)} vs {_s(top['seconds'] / 100)}: "
                             f"{'below' if least > top['seconds'] / 100 else 'within'} reach of any method",
                             "floor" if least > top["seconds"] / 100 else "-"))
        if whole.get("status") == "ok":
            rows.append((f"Bratu 10^6 peak memory < 1 GB ({label}, whole process)", f"{whole['peak_mb']:.0f} MB",
                         _verdict(whole["peak_mb"] < 1024)))
        mem = b.get("memory", {}).get("jaccli first call", {})
        if mem.get("status") == "ok":
            peak = mem["peak_kb"] / 1024
            rows.append(("  same, jaccli first call in a fresh process (peak RSS)", f"{peak:.0f} MB",
                         _verdict(peak < 1024)))
        c = b["colours"]["jaccli plan"]
        rows.append(("Bratu 10^6 ≤ 6 colours", f"{c} ({b['pieces']['mode']})", _verdict(c <= 6)))
        reused = _time(run, BRATU, "jaccli reused pattern")
        once = _time(run, BRATU, "jaccli record_once")
        rows.append(("Bratu 10^6 reused pattern (sparsity=S) ≤ 0.5x the first call, in process",
                     f"{_s(reused)} / {_s(first)} = {reused / first:.2f}x", _verdict(reused / first <= 0.5)))
        rows.append(("  same with record_once", f"{_s(once)} / {_s(first)} = {once / first:.2f}x",
                     _verdict(once / first <= 0.5)))
    if BRUSS in probs:
        c = probs[BRUSS]["colours"]["jaccli plan"]
        rows.append(("Brusselator N=32 ≤ 12 colours", str(c), _verdict(c <= 12)))
        first, asdex = _time(run, BRUSS, "jaccli first call"), _time(run, BRUSS, "asdex prepared")
        if asdex == asdex:
            rows.append(("Brusselator N=32 detection + colouring + Jacobian within 3x asdex's prepared time",
                         f"{_s(first)} / {_s(asdex)} = {first / asdex:.2f}x", _verdict(first / asdex <= 3.0)))
    worse = [(pid, e["colours"]["jaccli plan"], e["colours"]["asdex"]) for pid, e in probs.items()
             if isinstance(e["colours"].get("asdex"), int)]
    if worse:
        bad = [w for w in worse if w[1] > w[2]]
        rows.append(("never more colours than asdex (every problem run)",
                     ", ".join(f"{p}: {a} vs {b}" for p, a, b in worse), _verdict(not bad)))
    return rows


def write_report(run: dict, path: Path) -> None:
    lines = ["# Sparse benchmark results", "",
             "Generated by `benchmarks/sparse.py` (issue 38, Performance); see benchmarks/README.md, section "
             "*Sparse Jacobians and Hessians*. Do not edit by hand.", "",
             f"- command: `{run['command'].strip()}`",
             f"- started: {run['started']}; machine: {run['machine']}; {run['versions']}",
             f"- load average (1, 5, 15 min) before: {run['load_before']}; after: {run['load_after']}", "",
             "## Targets", "", "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {t} | {m} | {v} |" for t, m, v in targets(run)]
    lines += ["", "## Times", "",
              "Median of interleaved rounds (min of repeats for the problems marked *large*); ratio to jaccli's first "
              "call. Every result was first checked against the closed form (max relative error) and, at a few random "
              "columns, against central differences of f (cd).", ""]
    for pid, e in run["problems"].items():
        kind = "Hessian" if e["hessian"] else "Jacobian"
        lines += [f"### {pid} ({kind}, n = {e['n']:,}{', large' if e['large'] else ''})", "",
                  "| method | time | first call (cold) | / jaccli first | max err | cd err | peak RSS of the call |",
                  "|---|---|---|---|---|---|---|"]
        base = e["timings"]["jaccli first call"]
        for name, res in e["timings"].items():
            mem = e.get("memory", {}).get(name, {})
            peak = f"{(mem['peak_kb'] - mem['before_kb']) / 1024:.0f} MB (total {mem['peak_kb'] / 1024:.0f})" \
                if mem.get("status") == "ok" else "–"
            if res.status != "ok":
                lines.append(f"| {name} | {res.status}: {res.detail} | | | | | |")
                continue
            ratio = res.time / base.time if base.ok else math.nan
            lines.append(f"| {name} | {_s(res.time)} | {_s(res.first_s)} | {ratio:.2f}x | {res.max_err:.1e} | "
                         f"{res.cd_err:.1e} | {peak} |")
        p = e["pieces"]
        total = sum(p[k] for k in ("record", "detect", "colour", "sweeps", "recover"))
        lines += ["", "jaccli's first call in pieces: " + ", ".join(
            f"{k} {_s(p[k])} ({p[k] / total:.0%})" for k in ("record", "detect", "colour", "sweeps", "recover"))
            + f"; sum {_s(total)}.", "",
            "Colours: " + ", ".join(f"{k} {v}" for k, v in e["colours"].items()) + f" (jaccli's plan: {p['mode']}).",
            ""]
        if "e2e" in e:
            lines += ["End to end from process start to the written J.npz (min of 3 after a warm-up run; peak RSS of "
                      "the process):", ""]
            if not e["e2e"]["cli"]:
                lines.append("- `jaccli jacobian residual.py u.npy --sparse -o J.npz`: not run, the CLI on main has no "
                             "`--sparse` yet.")
            for name, r in e["e2e"].items():
                if isinstance(r, dict):
                    lines.append(f"- {name}: " + (f"{_s(r['seconds'])}, peak {r['peak_mb']:.0f} MB, max err "
                                                  f"{r['max_err']:.1e}" if r["status"] == "ok" else r["detail"]))
            lines.append("")
        if "profile" in e:
            lines += ["cProfile of jaccli's first call (own time, top functions):", "", "```", e["profile"], "```", ""]
    dense = run.get("jax_dense")
    if dense:
        lines += ["## JAX dense jit(jacfwd) on Bratu", "",
                  "Each size in a fresh process, compiled first; min of 3 calls; the next size is skipped when its "
                  "peak, scaled by n^2, would pass 8 GB.", "", "| n | time | peak RSS |", "|---|---|---|"]
        lines += [f"| {d['n']:,} | {_s(d['seconds'])} | {d['peak_gb']:.2f} GB |" for d in dense]
        lines.append("")
    path.write_text("\n".join(lines))
