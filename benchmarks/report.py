"""Markdown rendering of one benchmark run: targets, summary table, details, end to end, memory."""
from __future__ import annotations

import math
import statistics
from typing import Iterable

from benchmarks.timing import DRIFT_LIMIT, Timing, drift, ratio

FAMILIES = ["floor", "hand loop", "hand batched", "jaccli", "jaccli record_once", "HIPS autograd", "torch",
            "jax eager", "jax jit"]
ONCE = "jaccli record_once"
ANCHOR_FAMILIES = ("HIPS autograd", "torch", "jax eager", "jax jit")

# target 2 bounds: (instance prefix, reference family, max ratio)
BOUNDS = [("P1", "hand batched", 2.0), ("P2", "floor", 1.5), ("P3", "hand batched", 2.0),
          ("P4", "floor", 3.0), ("P5", "hand batched", 2.0), ("P6", "floor", 3.0)]
E2E_LIMIT, SCALE_LIMIT_GB, LAZY_LIMIT = 1.5, 1.5, 0.05


# ----------------------------------------------------------------------------------------------
# formatting
# ----------------------------------------------------------------------------------------------
def fmt_s(t: float) -> str:
    if t is None or not math.isfinite(t):
        return "–"
    if t >= 1.0:
        return f"{t:.3g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.3g} ms"
    return f"{t * 1e6:.3g} µs"


def fmt_cell(res: Timing, label: str = "") -> str:
    """'1.23 ms ±4%' (± half the IQR, relative), a * when samples were reduced; or the status."""
    if not res.ok:
        return _status_word(res)
    q1, q3 = res.quartiles()
    spread = 50.0 * (q3 - q1) / res.median if res.median > 0 else 0.0
    cell = f"{fmt_s(res.median)} ±{spread:.0f}%"
    if " samples" in res.note:
        cell += "*"
    return f"{cell} ({label})" if label else cell


def _status_word(res: Timing) -> str:
    if res.status == "unavailable":
        for word in ("not importable", "not selected"):
            if word in res.detail:
                return word
        return "missing"
    return res.status


def fmt_ratio(r: float) -> str:
    return f"{r:.2f}x" if math.isfinite(r) else "–"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**PASS**" if ok else "**MISS**")


# ----------------------------------------------------------------------------------------------
# analysis of one instance
# ----------------------------------------------------------------------------------------------
def timings(inst_res: dict) -> dict[str, tuple[str, Timing]]:
    """name -> (family, Timing) from the JSON form of one instance."""
    return {name: (d["family"], Timing(**d["timing"])) for name, d in inst_res["methods"].items()}


def best(tm: dict[str, tuple[str, Timing]], family: str) -> tuple[str, Timing] | None:
    """Fastest correct method of a family, else its most telling failure (or None)."""
    members = [(n, t) for n, (fam, t) in tm.items() if fam == family]
    if not members:
        return None
    ok = [(n, t) for n, t in members if t.ok]
    if ok:
        return min(ok, key=lambda nt: nt[1].median)
    for word in ("WRONG", "ERROR", "TIMEOUT", "skipped", "unavailable"):
        for n, t in members:
            if t.status == word:
                return n, t
    return members[0]


def best_anchor(tm) -> tuple[str, Timing] | None:
    cands = [b for fam in ANCHOR_FAMILIES if (b := best(tm, fam)) and b[1].ok]
    return min(cands, key=lambda nt: nt[1].median) if cands else None


def target2(iid: str, tm, family: str = "jaccli") -> dict:
    """Both parts of target 2 for one instance (jaccli's `family`): beat torch and HIPS; stay within the bound."""
    out: dict = {}
    jb = best(tm, family)
    j = jb[1] if jb else None
    if j is None or not j.ok:
        return {"beat": None, "beat_txt": "n/a (jaccli " + (_status_word(j) if j else "absent")
                + ")", "bound": None, "bound_txt": "n/a"}
    parts, oks = [], []
    for fam, short in (("torch", "torch"), ("HIPS autograd", "HIPS")):
        b = best(tm, fam)
        if b and b[1].ok:
            r = ratio(j, b[1])
            parts.append(f"{fmt_ratio(r)} {short}")
            oks.append(r < 1.0)
        else:
            parts.append(f"{short} {_status_word(b[1]) if b else 'absent'}")
    out["beat"] = all(oks) if oks else None
    out["beat_txt"] = f"{verdict(out['beat'])} ({', '.join(parts)})"
    out["bound"], out["bound_txt"] = None, "n/a"
    for prefix, fam, limit in BOUNDS:
        if iid.startswith(prefix):
            b = best(tm, fam)
            if b and b[1].ok:
                r = ratio(j, b[1])
                out["bound"] = r <= limit
                out["bound_txt"] = f"{verdict(out['bound'])} ({fmt_ratio(r)} ≤ {limit}x {fam})"
            else:
                out["bound_txt"] = f"n/a ({fam} missing)"
    return out


# ----------------------------------------------------------------------------------------------
# sections
# ----------------------------------------------------------------------------------------------
def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def _summary(results: dict) -> tuple[list[str], dict]:
    header = ["instance", "floor", "hand loop", "hand batched", "jaccli", "HIPS autograd",
              "torch best", "jax eager best", "jax jit best (+compile)", "jaccli / best anchor",
              "jaccli / floor", "T2: faster than torch & HIPS", "T2: bound"]
    rows, t2 = [], {}
    for iid, inst_res in results["instances"].items():
        tm = timings(inst_res)
        row = [iid]
        for fam in ["floor", "hand loop", "hand batched", "jaccli", "HIPS autograd"]:
            b = best(tm, fam)
            label = ""
            if b and fam in ("hand loop", "hand batched") and b[1].note.startswith("JVP"):
                label = "JVP"
            row.append(fmt_cell(b[1], label) if b else "–")
        for fam in ("torch", "jax eager", "jax jit"):
            b = best(tm, fam)
            if not b:
                row.append("–")
                continue
            name, t = b
            short = name.removeprefix("torch ").removeprefix("jax.")
            if fam == "jax jit" and t.ok and t.compile_s is not None:
                row.append(f"{fmt_cell(t)} (+{fmt_s(t.compile_s)}) ({short})")
            else:
                row.append(fmt_cell(t, short if t.ok else ""))
        jb = best(tm, "jaccli")
        ba, fl = best_anchor(tm), best(tm, "floor")
        j = jb[1] if jb else Timing(status="absent")
        row.append(fmt_ratio(ratio(j, ba[1])) + (f" ({ba[0]})" if ba and j.ok else "")
                   if ba else "–")
        row.append(fmt_ratio(ratio(j, fl[1])) if fl else "–")
        t2[iid] = target2(iid, tm)
        row += [t2[iid]["beat_txt"], t2[iid]["bound_txt"]]
        rows.append(row)
    return _table(header, rows), t2


def _replayed(results: dict) -> tuple[list[str], dict]:
    """Target 2 again for `jaccli.record_once(f)`: f recorded by the first call, replayed by the others."""
    rows, t2 = [], {}
    for iid, inst_res in results["instances"].items():
        tm = timings(inst_res)
        plain, once = best(tm, "jaccli"), best(tm, ONCE)
        if not once:
            continue
        t2[iid] = target2(iid, tm, ONCE)
        speedup = ratio(plain[1], once[1]) if plain else float("nan")
        rows.append([iid, fmt_cell(plain[1]) if plain else "–", fmt_cell(once[1]), fmt_ratio(speedup),
                     t2[iid]["beat_txt"], t2[iid]["bound_txt"]])
    return _table(["instance", "jaccli", "jaccli record_once", "jaccli / record_once",
                   "T2: faster than torch & HIPS", "T2: bound"], rows), t2


def drifts(results: dict) -> dict[str, float]:
    """Each instance's probe drift (timing.probe's slowest reading over its fastest), where it was probed."""
    got = {iid: drift(inst.get("probe_s", [])) for iid, inst in results.get("instances", {}).items()}
    return {iid: d for iid, d in got.items() if math.isfinite(d)}


def drifted(results: dict, among: Iterable[str] | None = None) -> str:
    """'P1-n100 1.61x, ...': the instances (of `among`, if given) whose probe drifted over DRIFT_LIMIT."""
    return _over(drifts(results), among)


def _over(got: dict[str, float], among: Iterable[str] | None = None) -> str:
    return ", ".join(f"{iid} {d:.2f}x" for iid, d in got.items()
                     if d > DRIFT_LIMIT and (among is None or iid in among))


def _steadiness(results: dict) -> str:
    got = drifts(results)
    if not got:
        return "no instance probed"
    worst = max(got, key=got.get)
    over = _over(got)
    tail = f"over {DRIFT_LIMIT}x, whose ratios may not hold in a calmer run: {over}" if over \
        else f"none over {DRIFT_LIMIT}x"
    return (f"the probe's slowest over fastest reading, per instance: median {statistics.median(got.values()):.2f}x, "
            f"worst {worst} {got[worst]:.2f}x; {tail}")


def _details(results: dict) -> list[str]:
    lines = []
    for iid, inst_res in results["instances"].items():
        lines += ["", f"### {iid}", ""]
        probes = inst_res.get("probe_s", [])
        if probes:
            lines += [f"The probe before each round and after the last: {fmt_s(min(probes))} – {fmt_s(max(probes))}"
                      f" (drift {drift(probes):.2f}x).", ""]
        rows = []
        for name, (fam, t) in timings(inst_res).items():
            if t.ok:
                q1, q3 = t.quartiles()
                rows.append([name, fmt_s(t.median), f"{fmt_s(q1)} – {fmt_s(q3)}",
                             f"{fmt_s(min(t.samples))} – {fmt_s(max(t.samples))}",
                             f"{len(t.samples)} × {t.loops}", fmt_s(t.first_s),
                             fmt_s(t.compile_s) if t.compile_s is not None else "",
                             f"{t.max_err:.1e}", t.note])
            else:
                rows.append([name, _status_word(t), "", "", "", fmt_s(t.first_s), "",
                             f"{t.max_err:.1e}" if math.isfinite(t.max_err) else "",
                             t.detail.replace("|", "/")[:160]])
        lines += _table(["method", "median", "IQR", "min – max", "samples × loops",
                         "first call", "compile", "max abs err", "note"], rows)
    return lines


def _e2e(results: dict) -> tuple[list[str], bool | None, str]:
    e2e = results.get("e2e")
    if not e2e:
        return ["Not run (`--no-e2e`, or `--only` without `e2e`)."], None, "not run"
    tm = {n: Timing(**d) for n, d in e2e.items()}
    base = tm.get("numpy closed form")
    rows = []
    for name, t in tm.items():
        r = ratio(t, base) if base else float("nan")
        if t.ok:
            q1, q3 = t.quartiles()
            rows.append([name, fmt_s(t.median), f"{fmt_s(q1)} – {fmt_s(q3)}",
                         f"{fmt_s(min(t.samples))} – {fmt_s(max(t.samples))}",
                         len(t.samples), fmt_ratio(r), "saved J checked"])
        else:
            rows.append([name, _status_word(t), "", "", "", "", t.detail.replace("|", "/")[:160]])
    j = tm.get("jaccli")
    r = ratio(j, base) if j and base else float("nan")
    ok = (r <= E2E_LIMIT) if math.isfinite(r) else None
    measured = fmt_ratio(r) if math.isfinite(r) else f"jaccli {_status_word(j) if j else 'absent'}"
    return _table(["process (start to saved .npy)", "median", "IQR", "min – max", "runs",
                   "/ numpy script", "check"], rows), ok, measured


def _memory(results: dict) -> list[str]:
    mem = results.get("memory")
    if not mem:
        return ["Not run (`--no-memory`, or no large instance selected)."]
    rows = []
    for iid, probes in mem.items():
        for name, d in probes.items():
            if d.get("status") == "ok":
                peak, before = d["peak_kb"] / 1024, d["before_kb"] / 1024
                rows.append([iid, name, f"{peak:.0f}", f"{before:.0f}", f"{peak - before:.0f}",
                             "" if d.get("reset") else "peak not reset after setup"])
            else:
                rows.append([iid, name, d.get("status", "?"), "", "",
                             d.get("detail", "").replace("|", "/")[:160]])
    return _table(["instance", "method", "peak RSS MB", "RSS before call MB",
                   "call's peak over that MB", "note"], rows)


def _scale(results: dict) -> tuple[list[str], bool | None, str]:
    sc = results.get("scale")
    if not sc:
        return ["Not run (needs `--scale`; writes a 3.2 GB file to a temp dir)."], None, "not run"
    lines = [f"`{sc.get('command', 'jaccli jacobian f.py x.npy -o J.npy --chunk-size auto')}`,"
             f" P1's f at n = {sc['n']} ({sc['file_gb']:.1f} GB file)", ""]
    if sc["status"] != "ok" and "peak_rss_gb" not in sc:
        lines.append(f"Status: {sc['status']}: {sc.get('detail', '')}")
        return lines, None if sc["status"] in ("unavailable", "SKIPPED") else False, sc["status"]
    peak = sc["peak_rss_gb"]
    lines += _table(["wall time", "peak RSS (ru_maxrss)", "of which anon / file pages "
                     "(sampled every 50 ms)", "limit", "file check"],
                    [[fmt_s(sc.get("seconds", float("nan"))), f"{peak:.2f} GB",
                      f"{sc.get('sampled_peak_anon_gb', 0):.2f} GB / "
                      f"{sc.get('sampled_peak_file_gb', 0):.2f} GB",
                      f"{sc['limit_gb']} GB",
                      "diagonal and off-diagonal blocks correct" if sc["status"] == "ok"
                      else sc.get("detail", "")]])
    ok = sc["status"] == "ok" and peak < sc["limit_gb"]
    return lines, ok, f"{peak:.2f} GB, {'file correct' if sc['status'] == 'ok' else sc['status']}"


def _lazy(results: dict) -> tuple[bool | None, str]:
    inst = results["instances"].get("P5-rows10-of-P2-n1000-m1000")
    if not inst:
        return None, "P5 not run"
    tm = timings(inst)
    lazy, full = tm.get("jaccli"), tm.get("jaccli full J, then rows")
    if not (lazy and full and lazy[1].ok and full[1].ok):
        return None, f"jaccli {_status_word(lazy[1]) if lazy else 'absent'}"
    r = ratio(lazy[1], full[1])
    txt = f"{100 * r:.1f}% ({fmt_s(lazy[1].median)} vs {fmt_s(full[1].median)})"
    least = tm.get("f, then floor rows")
    if least and least[1].ok:
        # What no lazy J can go below: it evaluates f (to know its shape), then the rows.
        txt += (f"; f then the 10 rows in closed form, the least a lazy J that runs f can cost: "
                f"{100 * ratio(least[1], full[1]):.1f}% ({fmt_s(least[1].median)})")
    return r <= LAZY_LIMIT, txt


def render(results: dict, more: tuple[list[str], list[str]] = ([], [])) -> str:
    """RESULTS.md's text; `more`: a targets table placed after P1-P6's, and sections after theirs."""
    meta = results["meta"]
    summary, t2 = _summary(results)
    replayed, t2_once = _replayed(results)
    e2e_lines, e2e_ok, e2e_txt = _e2e(results)
    scale_lines, scale_ok, scale_txt = _scale(results)
    lazy_ok, lazy_txt = _lazy(results)

    def count(key: str, t2: dict = t2) -> tuple[bool | None, str]:
        vals = {iid: v[key] for iid, v in t2.items() if v[key] is not None}
        if not vals:
            return None, "no jaccli results"
        misses = [iid for iid, ok in vals.items() if not ok]
        txt = f"{len(vals) - len(misses)} of {len(vals)} instances"
        return not misses, txt + (f"; missed: {', '.join(misses)}" if misses else "")

    beat_ok, beat_txt = count("beat")
    bound_ok, bound_txt = count("bound")
    beat_once_ok, beat_once_txt = count("beat", t2_once)
    bound_once_ok, bound_once_txt = count("bound", t2_once)
    lines = [f"# jaccli benchmark results{' (quick mode)' if meta['quick'] else ''}", "",
             f"Generated by `{meta['command']}` on {meta['date']}.", "",
             f"* Machine: {meta['cpu']}, {meta['cores']} logical cores, {meta['ram_gb']:.1f} GB RAM"
             f" (1-min load average {meta['load_start']:.2f} at start, "
             f"{meta.get('load_end', float('nan')):.2f} at end)",
             f"* Versions: {meta['versions']}",
             f"* Libraries: {meta['libs']}",
             f"* Method: {meta['method']}",
             f"* Steadiness of the machine (`benchmarks.timing.probe`, fixed work before each round and after the "
             f"last): {_steadiness(results)}", "",
             "## Targets", ""]
    lines += _table(["target", "measured (this run)", "limit", "result"], [
        ["1. end to end: `jaccli jacobian` on P2-n100-m100 / numpy script", e2e_txt,
         f"≤ {E2E_LIMIT}x", verdict(e2e_ok)],
        ["2a. in process: faster than torch best and HIPS autograd", beat_txt, "every instance",
         verdict(beat_ok)],
        ["2b. in process: P2 ≤ 1.5x floor; P4, P6 ≤ 3x floor; P1, P3, P5 ≤ 2x hand batched",
         bound_txt, "every instance", verdict(bound_ok)],
        ["3. scale: 20000² Jacobian to .npy, `--chunk-size auto`", scale_txt,
         f"peak RSS < {SCALE_LIMIT_GB} GB, file correct", verdict(scale_ok)],
        ["4. lazy rows: P5 (10 of 1000 rows) / full P2-n1000-m1000 Jacobian", lazy_txt,
         f"≤ {LAZY_LIMIT:.0%}", verdict(lazy_ok)],
    ])
    lines += ["", "Targets 2a and 2b count `jaccli.jacobian(f, x)` as is: f recorded on every call. "
              "With `f = jaccli.record_once(f)` (recorded once, then replayed at each call, as "
              "`jax.jit` traces once; see the section below) they measure:", ""]
    lines += _table(["target, with `record_once`", "measured (this run)", "limit", "result"], [
        ["2a. in process: faster than torch best and HIPS autograd", beat_once_txt, "every instance",
         verdict(beat_once_ok)],
        ["2b. in process: the same bounds", bound_once_txt, "every instance", verdict(bound_once_ok)],
    ])
    lines += more[0]
    lines += ["", "## In process, steady state (median ± half IQR, per call)", "",
              "Each jaccli call includes `jaccli.jacobian(...)`/`hessian(...)` and `np.asarray`. "
              "Ratios are medians of per-round ratios. `*`: fewer samples (see details).", ""]
    lines += summary
    if results.get("notes"):
        lines += [""] + [f"* {n}" for n in results["notes"]]
    lines += ["", "## In process with `record_once` (f recorded by the first call, replayed after)", "",
              "The verified first call records f; every timed call replays the recording (guards "
              "checked) and sweeps it.", ""]
    lines += replayed
    lines += ["", "## End to end (target 1)", ""] + e2e_lines
    lines += ["", "## Peak memory, large instances (each method in a fresh process)", ""]
    lines += _memory(results)
    lines += ["", "## Scale (target 3)", ""] + scale_lines
    lines += more[1]
    lines += ["", "## Every method, every instance", ""] + _details(results)
    return "\n".join(lines) + "\n"
