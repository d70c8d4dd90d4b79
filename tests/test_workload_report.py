"""RESULTS.md's sections for issues 44 and 39 (benchmarks/workload_report.py, workload_suite.py, run.py's
parts, readme_figures.py), fed with synthetic rows: the formatting and the PASS/MISS logic, not speed."""
import dataclasses
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import readme_figures, report, run, workload_report as wr, workload_suite, workloads
from benchmarks.timing import Config, Timing

ROUNDS = [0, 1, 2, 3, 4]


def _t(*samples: float, **kw) -> dict:
    return dataclasses.asdict(Timing(rounds=ROUNDS[:len(samples)], samples=list(samples), **kw))


def _method(family: str, *samples: float, **kw) -> dict:
    return {"family": family, "timing": _t(*samples, **kw)}


def _workload(wid: str, plain: float, once: float, torch: float, first: float, mem: tuple[float, float],
              jit: float | None = None) -> dict:
    methods = {"jaccli": _method("jaccli", *[plain] * 5), "record_once": _method("record_once", *[once] * 5),
               "torch.func.jacfwd": _method("torch.func", *[torch] * 5),
               "torch.func.jacrev": _method("torch.func", *[2 * torch] * 5),
               "autograd.jacobian": {"family": "HIPS autograd",
                                     "timing": dataclasses.asdict(Timing(status="skipped", detail="skipped: too slow"))}}
    if jit is not None:
        methods["jax.jit(jacrev)"] = _method("jax jit", *[jit] * 5)
    methods["record_once"]["first_replay_s"] = first
    return {"workload": wid, "operations": 1000, "methods": methods,
            "memory": {"jaccli": {"status": "ok", "peak_mb": mem[0]},
                       "record_once": {"status": "ok", "peak_mb": mem[1]},
                       "torch.func.jacfwd": {"status": "ok", "peak_mb": 50.0}}}


def _instance(**families: float) -> dict:
    return {"methods": {name: _method(name, *[t] * 5) for name, t in families.items()}}


def _results() -> dict:
    meta = {"command": "python -m benchmarks.run", "date": "2026-11-29 03:00 UTC", "cpu": "test CPU", "cores": 2,
            "ram_gb": 8.0, "load_start": 0.1, "load_end": 0.2, "versions": "v", "libs": "l", "quick": False,
            "method": "m"}
    return {
        "meta": meta, "notes": [], "e2e": {"numpy closed form": _t(1.0, 1.0, 1.0), "jaccli": _t(1.2, 1.2, 1.2)},
        "instances": {
            "P1-n100": _instance(**{"jaccli": 2e-4, "jaccli record_once": 5e-5, "jax jit": 1e-4}),
            "P3-n100": _instance(**{"jaccli": 6e-4, "jaccli record_once": 3e-4, "jax jit": 1e-4}),
            "P5-rows10-of-P2-n1000-m1000": _instance(**{"jaccli": 7e-4, "jaccli record_once": 3e-4,
                                                        "f, then floor rows": 2.5e-4}),
        },
        "replay": {
            "P1-n100": {"first_replay_s": [3e-4, 3e-4, 3e-4],  # 1.5x plain
                        "memory": {"jaccli": {"status": "ok", "peak_kb": 100_000, "before_kb": 99_900},
                                   "jaccli record_once": {"status": "ok", "peak_kb": 101_000, "before_kb": 100_000}}},
            "P3-n100": {"first_replay_s": [3e-3],  # 5x plain
                        "memory": {"jaccli": {"status": "ok", "peak_kb": 110_000, "before_kb": 100_000},
                                   "jaccli record_once": {"status": "ok", "peak_kb": 150_000, "before_kb": 100_000}}},
        },
        "workloads": {"samples": 5, "budget_s": 15.0, "rows": [
            _workload("rk4-lv", plain=0.16, once=0.02, torch=0.11, first=0.2, mem=(75.0, 90.0)),
            _workload("stack-1000", plain=0.1, once=0.3, torch=0.2, first=0.15, mem=(93.0, 7000.0)),
            _workload("stencil300-rows10", plain=0.015, once=0.004, torch=0.02, first=0.01, mem=(1.0, 0.5),
                      jit=0.005),
        ]},
        "spectral": {256: {"jacobian": {"jaccli jacobian": _t(*[1e-3] * 5), "jaccli once jacobian": _t(*[5e-4] * 5),
                                        "jax.jit jacrev": _t(*[4e-4] * 5), "torch.func jacrev": _t(*[2e-3] * 5)},
                           "vjp": {"jaccli vjp": _t(*[1e-4] * 5), "jaccli once vjp": _t(*[5e-5] * 5),
                                   "jax.jit value and vjp": _t(*[1e-4] * 5), "torch.func vjp": _t(*[3e-4] * 5),
                                   "HIPS autograd vjp": _t(*[2.5e-4] * 5),
                                   "jax eager value and vjp": _t(*[2e-3] * 5)}}},
        "cli_cost": {"status": "ok", "grid": 100, "rows": [
            {"phase": "load (reading f and x)", "cli_s": 0.002, "reference": "np.load(x)", "reference_s": 0.001,
             "ratio": 2.0, "runs": 5},
            {"phase": "evaluation + checks", "cli_s": 0.063, "reference": "np.asarray(jaccli.jacobian(f, x))",
             "reference_s": 0.06, "ratio": 1.05, "runs": 5}]},
    }


def _target(rows: list[list[str]], start: str) -> list[str]:
    found = [r for r in rows if r[0].startswith(start)]
    assert len(found) == 1, (start, rows)
    return found[0]


def test_targets_pass_and_miss_from_the_rows():
    rows = wr.targets(_results())
    memory = _target(rows, "44.1 replay's peak memory")
    # P1-n100's 0.1 MB vs 1 MB count at the 2 MB floor (1.00x); P3-n100: 48.8 MB vs 9.8 MB; stack: 7000 vs 93
    assert memory[3] == "**MISS**"
    assert "3 of 5" in memory[1] and "missed: P3-n100 5.00x, stack-1000 75.27x" in memory[1]
    first = _target(rows, "44.1 first replay")
    assert first[3] == "**MISS**" and "missed: P3-n100 5.00x" in first[1] and "rk4-lv" not in first[1].split("missed")[1]
    assert _target(rows, "44.2 plain jaccli / torch.func")[1] == "2 of 3; worst rk4-lv 1.45x; missed: rk4-lv 1.45x"
    once = _target(rows, "44.2 record_once / plain")
    assert once[3] == "**MISS**" and "missed: stack-1000 3.00x" in once[1]
    assert _target(rows, "44.3")[3] == "**PASS**" and "1.05x" in _target(rows, "44.3")[1]
    jit = _target(rows, "44.4 record_once / jax.jit steady state")
    assert jit[3] == "**MISS**" and "missed: P3-n100 3.00x" in jit[1] and "not measured: P6-n500" in jit[1]
    assert _target(rows, "44.4 record_once / jax.jit(vmap(vjp))")[1:] == ["1 of 1; worst stencil300-rows10 0.80x",
                                                                          "≤ 1.0x", "**PASS**"]
    least = _target(rows, "44.4 P5")
    assert least[3] == "**PASS**" and "1.20x" in least[1] and "plain jaccli 2.80x" in least[1]
    assert _target(rows, "39 spectral residual, plain jaccli / torch.func")[3] == "**PASS**"
    jit39 = _target(rows, "39 spectral residual, plain jaccli / jax.jit")
    assert jit39[3] == "**MISS**" and "missed: n=256 jacobian 2.50x" in jit39[1]
    # what eager AD costs against jit: the fastest eager peer of each product, by its median
    assert jit39[1].endswith("; the fastest eager peer / jax.jit: n=256 jacobian 5.00x (torch.func jacrev), "
                             "n=256 vjp 2.50x (HIPS autograd vjp)")
    assert "fastest eager peer" not in _target(rows, "39 spectral residual, record_once / jax.jit")[1]
    table = "\n".join(wr.spectral_table(_results()["spectral"]))
    assert "| 0.33x | 1.00x | HIPS autograd vjp: 250 µs ±0%, 2.50x |" in table
    assert _target(rows, "39 spectral residual, record_once / jax.jit")[3] == "**PASS**"


def test_a_part_not_run_is_not_measured_never_a_pass():
    results = _results()
    for key in ("workloads", "replay", "spectral", "cli_cost"):
        del results[key]
    results["cli_cost"] = {"status": "ERROR SystemExit: cli: wrong Jacobian", "rows": []}
    rows = wr.targets(results)
    assert _target(rows, "44.3")[3] == "n/a"
    assert all(r[3] == "n/a" for r in rows if not r[0].startswith("44.4")), rows
    head, body = wr.sections(results)
    assert "ERROR SystemExit: cli: wrong Jacobian" in "\n".join(body)


def test_strict_limit_counts_equality_as_a_miss():
    assert wr.count({"a": 1.0}, 1.0) == (True, "1 of 1; worst a 1.00x")
    assert wr.count({"a": 1.0}, 1.0, strict=True)[0] is False
    assert wr.count({"a": float("nan")}, 1.0) == (None, "not measured")


def test_memory_ratio_floors_small_increments():
    assert wr.memory_ratio({"status": "ok", "peak_mb": 0.5}, {"status": "ok", "peak_mb": 0.1}) == 1.0
    assert wr.memory_ratio({"status": "ok", "peak_mb": 30.0}, {"status": "ok", "peak_mb": 10.0}) == 3.0
    assert np.isnan(wr.memory_ratio({"status": "ERROR"}, {"status": "ok", "peak_mb": 10.0}))


def test_results_md_has_the_new_sections_and_the_readme_takes_its_figures():
    results = _results()
    text = report.render(results, wr.sections(results))
    titles = re.findall(r"^## (.*)$", text, re.M)
    assert titles.index("Targets") < titles.index("Issue 44 and 39 targets") < titles.index(
        "In process, steady state (median ± half IQR, per call)")
    for start in ("Workloads of issue 44", "Workloads: peak memory", "record_once on P1-P6",
                  "Spectral PDE residual", "The command line against the library"):
        assert any(t.startswith(start) for t in titles), start
    assert "| rk4-lv | 1000 | 160 ms ±0% | 20 ms ±0% | 110 ms ±0% (jacfwd) | – | – | skipped: too slow | " \
           "1.45x | 1.45x | 0.12x | 1.25x | 6,250/s | 50,000/s |" in text
    assert "| stack-1000 | 93 MB | 7000 MB | 50 MB (torch.func.jacfwd) | – | – | – | 75.27x |" in text
    assert "| P3-n100 | 600 µs ±0% | 3 ms (1 trials) | 5.00x | – | – | – | – | 10 MB | 49 MB | 5.00x |" in text
    assert "| evaluation + checks | 63 ms | 60 ms | 1.05x | np.asarray(jaccli.jacobian(f, x)) |" in text
    block = readme_figures.render(text)
    assert "- **MISS**, 44.2 record_once / plain jaccli, each workload: 2 of 3; worst stack-1000 3.00x" in block
    assert "| rk4-lv | 160 ms | 20 ms | 110 ms (jacfwd) | 1.45x | 0.12x | 1.20x |" in block
    # a RESULTS.md from before these sections still makes its block, without them
    assert "Issues 44" not in readme_figures.render(report.render(results))


def test_only_selects_the_parts_and_workloads():
    def parts(*argv):
        ap_args = type("A", (), {"only": None, "quick": False, "no_workloads": False})()
        for k, v in zip(argv[::2], argv[1::2]):
            setattr(ap_args, k, v)
        return run._parts(ap_args)
    assert parts() == {"workloads": True, "replay": True, "spectral": True, "cli": True, "workload_ids": None}
    assert parts("no_workloads", True) == {"workloads": False, "replay": False, "spectral": False, "cli": False,
                                           "workload_ids": None}
    assert parts("only", "P1,rk4-lv,cli") == {"workloads": True, "replay": False, "spectral": False, "cli": True,
                                              "workload_ids": ["rk4-lv"]}
    assert parts("quick", True)["workload_ids"] == list(run.QUICK_WORKLOADS)
    assert run._workload_methods(("numpy", "jaccli", "torch")) == ["jaccli", "record_once", "torch.func.jacrev",
                                                                   "torch.func.jacfwd"]


def test_a_wrong_method_is_reported_and_never_timed():
    good = workloads.Workload("tiny", lambda m, x: m.stack([x[0] * x[1], x[1]]), np.array([2.0, 3.0]),
                              lambda x: np.array([[x[1], x[0]], [0.0, 1.0]]))
    bad = dataclasses.replace(good, reference=lambda x: np.eye(2))
    cfg = Config(samples=2, min_sample_s=0.0, method_budget_s=2.0, call_timeout_s=30.0, quiesce_max_s=0.0)
    ok = workload_suite.run_workload(good, ["jaccli", "record_once"], cfg, lambda s: None)
    assert all(Timing(**d["timing"]).ok for d in ok["methods"].values())
    assert ok["methods"]["record_once"]["first_replay_s"] > 0 and ok["operations"] > 0
    wrong = workload_suite.run_workload(bad, ["jaccli", "record_once"], cfg, lambda s: None)
    for d in wrong["methods"].values():
        assert d["timing"]["status"] == "WRONG" and not d["timing"]["samples"]
    assert "first_replay_s" not in wrong["methods"]["record_once"] and "operations" not in wrong


def test_a_skipped_peer_says_why_and_is_not_called():
    calls = []
    tiny = workloads.Workload("loop-10000", lambda m, x: calls.append(m.__name__) or m.sin(x), np.array([0.5, 1.0]),
                              lambda x: np.diag(np.cos(x)))
    cfg = Config(samples=2, min_sample_s=0.0, method_budget_s=2.0, call_timeout_s=30.0, quiesce_max_s=0.0)
    row = workload_suite.run_workload(tiny, ["jaccli", "autograd.jacobian", "jax.jit(jacfwd)"], cfg, lambda s: None)
    assert Timing(**row["methods"]["jaccli"]["timing"]).ok
    for name in ("autograd.jacobian", "jax.jit(jacfwd)"):
        assert row["methods"][name]["timing"]["status"] == "skipped"
        assert row["methods"][name]["timing"]["detail"] == workload_suite.SKIPPED[("loop-10000",
                                                                                   workload_suite.family(name))]
    assert set(calls) == {"numpy"}
    assert "skipped: 10^4 reverse passes" in "\n".join(wr.workloads_table({"rows": [row]}))


def test_a_jit_compile_is_kept_apart_from_the_samples(monkeypatch):
    tiny = workloads.Workload("tiny", lambda m, x: m.sin(x), np.array([0.5, 1.0]), lambda x: np.diag(np.cos(x)))
    calls = []

    def compiled(w):
        def run(x):
            calls.append(1)
            if len(calls) == 1:
                import time
                time.sleep(0.3)  # the compile: longer than the whole budget
            return np.diag(np.cos(x))
        return run
    monkeypatch.setitem(workloads.METHODS, "jax.jit(fake)", compiled)
    cfg = Config(samples=2, min_sample_s=0.0, method_budget_s=0.2, call_timeout_s=30.0, quiesce_max_s=0.0)
    res = Timing(**workload_suite.run_workload(tiny, ["jax.jit(fake)"], cfg, lambda s: None)
                 ["methods"]["jax.jit(fake)"]["timing"])
    assert res.ok and res.compile_s >= 0.3 and max(res.samples) < 0.1


def test_a_first_replay_is_timed_right_after_its_recording_the_idle_wait_before_both(monkeypatch):
    # after an idle wait any call costs 2-3x its steady time on a shared machine, and the plain
    # call it is compared with is timed after an untimed one: a wait between the recording and
    # the replay billed the replay for it (RESULTS.md's 2.6-3.3x first replays)
    events = []
    monkeypatch.setattr(workload_suite, "quiesce", lambda s: events.append("wait"))

    def make():
        return lambda x: events.append("record" if x[0] == 1.0 else "replay")
    times, _ = workload_suite.first_replays(make, np.ones(2), 2)
    assert events == ["wait", "record", "replay"] * 2 and len(times) == 2


def test_the_traced_memory_ratio_reads_the_tracemalloc_peaks_and_a_target_row_judges_them():
    once = {"status": "ok", "peak_mb": 30.0, "traced_peak_mb": 12.0}
    plain = {"status": "ok", "peak_mb": 10.0, "traced_peak_mb": 16.0}
    assert wr.memory_ratio(once, plain) == 3.0
    assert wr.memory_ratio(once, plain, wr.traced_mb) == 0.75
    assert np.isnan(wr.memory_ratio({"status": "ok", "peak_mb": 3.0}, plain, wr.traced_mb))
    results = _results()
    for row, (p_mb, o_mb) in zip(results["workloads"]["rows"][:2], [(18.0, 13.0), (19.0, 40.0)]):
        row["memory"]["jaccli"]["traced_peak_mb"] = p_mb
        row["memory"]["record_once"]["traced_peak_mb"] = o_mb
    traced = _target(wr.targets(results), "44.1 the same by tracemalloc")
    assert traced[3] == "**MISS**" and traced[1].startswith("1 of 2") and "missed: stack-1000 2.11x" in traced[1]
    assert "not measured: stencil300-rows10" in traced[1]
    table = "\n".join(wr.workload_memory_table(results["workloads"]))
    assert "| 18 MB | 13 MB | 0.72x |" in table


def test_a_plain_call_is_timed_in_the_first_replays_position_the_second_call_after_the_wait(monkeypatch):
    # the first replay is the second call after an idle wait: a plain call timed there says what
    # part of its ratio to the steady plain median the position takes
    events = []
    monkeypatch.setattr(workload_suite, "quiesce", lambda s: events.append("wait"))
    inst = SimpleNamespace(x=np.ones(2))
    monkeypatch.setattr(workload_suite.instances, "load", lambda iid: inst)
    plain = SimpleNamespace(build=lambda i: SimpleNamespace(run=lambda: events.append("call")))
    monkeypatch.setattr(workload_suite.methods, "find", lambda i, name: plain if name == "jaccli" else None)
    times = workload_suite.instance_plain_in_position("P1-n100", 3)
    assert events == ["wait", "call", "call"] * 3 and len(times) == 3 and all(t >= 0 for t in times)


def test_the_replay_table_shows_the_plain_call_in_the_first_replays_position():
    results = _results()
    results["replay"]["P1-n100"]["plain_in_position_s"] = [2e-4, 1.5e-4, 2.5e-4]  # the first replay: 3e-4
    table = "\n".join(wr.replay_table(results))
    assert "plain call in its position (median)" in table and "first replay / that" in table
    p1 = next(line for line in table.splitlines() if line.startswith("| P1-n100 "))
    assert "| 1.50x | 200 µs | 1.50x |" in p1
    p3 = next(line for line in table.splitlines() if line.startswith("| P3-n100 "))
    assert "| – | – | – | – |" in p3  # (a run without the measurement)


def test_the_first_replay_target_compares_a_p_instance_with_a_plain_call_in_its_position():
    # both the second call after the same idle wait; the steady median's ratio stays in the row where over the limit
    results = _results()
    results["replay"]["P1-n100"]["plain_in_position_s"] = [1e-4, 1e-4, 1e-4]  # first replay 3e-4: 3.00x that
    results["replay"]["P3-n100"]["plain_in_position_s"] = [2e-3, 2e-3]  # first replay 3e-3: 1.50x; 5.00x steady
    first = _target(wr.targets(results), "44.1 first replay")
    assert first[3] == "**MISS**" and "missed: P1-n100 3.00x" in first[1] and "P3-n100 1.50x" not in first[1]
    assert first[1].endswith("; against the steady median instead: P3-n100 5.00x (a plain call in that position: "
                             "3.33x)"), first[1]
    results["replay"]["P1-n100"]["plain_in_position_s"] = [2e-4]  # 1.50x that, and 1.50x the steady median
    first = _target(wr.targets(results), "44.1 first replay")
    assert first[3] == "**PASS**" and first[1].startswith("5 of 5;"), first[1]


def test_the_replay_table_puts_thread_cpu_faults_and_collections_beside_the_wall_clock_ratio():
    # a first replay far slower than a plain call by the clock but not by its thread's CPU waited
    # (the machine); one that faulted in pages or collected garbage paid for it
    results = _results()
    results["replay"]["P1-n100"]["plain_in_position_s"] = [2e-4, 1.5e-4, 2.5e-4]
    results["replay"]["P1-n100"]["costs"] = {
        "first_replay": {"cpu_s": [1e-4, 1.2e-4, 3e-4], "faults": [40, 50, 60], "gcs": [1, 1, 0]},
        "plain_in_position": {"cpu_s": [1e-4, 1e-4, 1e-4], "faults": [0, 2, 1], "gcs": [0, 0, 0]}}
    table = "\n".join(wr.replay_table(results))
    assert "thread CPU: first replay / that" in table
    p1 = next(line for line in table.splitlines() if line.startswith("| P1-n100 "))
    assert "| 1.50x | 200 µs | 1.50x | 1.20x | 50, 1; 1, 0 |" in p1


def test_call_costs_counts_the_blocks_thread_cpu_page_faults_and_collections():
    import gc
    import mmap
    costs: dict = {}
    with workload_suite.call_costs(costs):
        # 64 MB of fresh pages, touched (a new anonymous mapping: malloc might hand out pages an earlier
        # test touched and freed, jaccli's heap thresholds keeping large blocks in the heap)
        with mmap.mmap(-1, 1 << 26) as fresh:
            np.frombuffer(fresh, dtype=np.uint8)[:] = 1
        gc.collect()
    with workload_suite.call_costs(costs):
        pass
    assert costs["cpu_s"][0] > costs["cpu_s"][1] >= 0
    # (32: the count of 2 MB huge pages; gc.collect(): one full collection)
    assert costs["faults"][0] >= 32 and costs["gcs"] == [1, 0]
    with workload_suite.call_costs(None):  # (nothing asked, nothing counted)
        pass


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux's /proc/self/smaps_rollup")
def test_memprobe_reports_the_huge_pages_of_its_process(capsys):
    # memprobe in this process, on a small instance: its JSON line says how much memory was in transparent huge
    # pages before and after the calls, read from the kernel (not -1, its "not known")
    from benchmarks import memprobe

    assert memprobe.main(["P1-n100", "jaccli", "--steady"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["status"] == "ok"
    assert type(line["huge_base_kb"]) is int and type(line["huge_after_kb"]) is int
    assert line["huge_base_kb"] >= 0 and line["huge_after_kb"] >= 0


def test_memprobe_reads_anon_huge_pages_from_the_rollup(tmp_path):
    from benchmarks import memprobe

    rollup = tmp_path / "smaps_rollup"
    rollup.write_text("Rss:               45120 kB\nAnonymous:         30000 kB\nAnonHugePages:      6144 kB\n"
                      "ShmemPmdMapped:        0 kB\n")
    assert memprobe._huge_kb(str(rollup)) == 6144
    rollup.write_text("Rss:               45120 kB\n")  # (a kernel that does not say)
    assert memprobe._huge_kb(str(rollup)) == -1
    assert memprobe._huge_kb(str(tmp_path / "missing")) == -1


def test_instance_memory_takes_each_methods_median_run_of_fresh_processes_and_shows_every_run(monkeypatch):
    peaks = {"jaccli": [1.7, 1.6, 1.8], "jaccli record_once": [2.0, 4.0, 2.1]}  # (MB: one heap extension in 4.0)
    calls = []

    huge = {"jaccli": [0, 0, 0], "jaccli record_once": [0, 2048, 0]}  # (kB of huge pages each run took)

    def probe(iid, name, steady=False):
        calls.append((iid, name, steady))
        k = sum(1 for c in calls if c[1] == name) - 1
        mb = peaks[name][k]
        return {"status": "ok", "peak_mb": mb, "huge_base_kb": 4096, "huge_after_kb": 4096 + huge[name][k]} \
            if mb is not None else {"status": "ERROR", "detail": "boom"}

    monkeypatch.setattr(workload_suite.memprobe, "probe", probe)
    mem = workload_suite.instance_memory("P5-rows10-of-P2-n1000-m1000")
    assert len(calls) == 2 * wr.MEMORY_RUNS and all(steady for _, _, steady in calls)
    assert wr.increment_mb(mem["jaccli"]) == 1.7 and wr.increment_mb(mem["jaccli record_once"]) == 2.1
    assert mem["jaccli record_once"]["runs_mb"] == [2.0, 4.0, 2.1]
    assert wr.memory_ratio(mem["jaccli record_once"], mem["jaccli"]) == 2.1 / 2.0
    assert wr._mem_cell(mem["jaccli record_once"]) == "2 MB (runs: 2.0, 4.0, 2.1; in huge pages: 0.0, 2.0, 0.0)"
    assert wr._mem_cell(mem["jaccli"]) == "2 MB (runs: 1.7, 1.6, 1.8)"  # (none taken: not said)
    assert math.isnan(wr.huge_mb({"status": "ok", "peak_mb": 1.0, "huge_base_kb": -1, "huge_after_kb": 0}))
    peaks["jaccli"] = [1.7, None, 1.8]
    calls.clear()
    mem = workload_suite.instance_memory("P5-rows10-of-P2-n1000-m1000")
    assert mem["jaccli"]["status"] == "ERROR"  # (a failed run is reported, never hidden by the median)
