"""The benchmark harness itself: shared data, NumPy floors, and the check-before-timing rule.

No timings are asserted here, and neither torch nor JAX is needed.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import floors, instances, problems
from benchmarks.timing import Config, Timing, measure

PROBLEMS_MD = Path(__file__).resolve().parents[1] / "benchmarks" / "problems.md"
SMALL = [iid for iid, _, _ in problems.INSTANCES if iid not in ("P1-n4000", "P3-n3000")]


def _md_checksums() -> dict[str, dict]:
    """The checksum table at the end of problems.md, parsed."""
    rows = {}
    for line in PROBLEMS_MD.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.match(r"P\d-", cells[0]):
            iid, x0, x_sum, params, f_sum, ref_abs = cells
            rows[iid] = {
                "x0": float(x0), "x_sum": float(x_sum), "f_sum": float(f_sum),
                "ref_abs_sum": float(ref_abs),
                "params_sum": [] if params == "–" else [float(p) for p in params.split(",")],
            }
    return rows


def test_problems_checksums_match_problems_md():
    expected = _md_checksums()
    got = problems.fingerprint()
    assert set(expected) == set(got) == {iid for iid, _, _ in problems.INSTANCES}
    for iid, exp in expected.items():
        for key in ("x0", "x_sum", "f_sum", "ref_abs_sum"):
            np.testing.assert_allclose(got[iid][key], exp[key], rtol=1e-12, err_msg=f"{iid} {key}")
        np.testing.assert_allclose(got[iid]["params_sum"], exp["params_sum"], rtol=1e-12,
                                   err_msg=f"{iid} params_sum")


@pytest.mark.parametrize("iid", SMALL)
@pytest.mark.parametrize("floor", [floors.closed_form, floors.hand_loop, floors.hand_batched])
def test_floor_reproduces_the_reference(iid, floor):
    inst = instances.load(iid)
    ok, err, why = instances.check(inst, floor(inst)())
    assert ok, why


def test_least_work_for_lazy_rows_reproduces_the_reference_rows():
    # P5's "f, then floor rows": the least a lazy J that runs f can cost (target 4's context line)
    inst = instances.load("P5-rows10-of-P2-n1000-m1000")
    ok, err, why = instances.check(inst, floors.f_then_rows(inst)())
    assert ok, why
    from benchmarks.methods import methods_for
    assert "f, then floor rows" in [m.name for m in methods_for(inst, ("numpy",))]
    assert "f, then floor rows" not in [m.name for m in methods_for(instances.load("P2-n100-m100"), ("numpy",))]


def test_wrong_result_is_reported_and_never_timed():
    inst = instances.load("P2-n100-m100")
    good = floors.closed_form(inst)
    runs = {"good": good, "wrong": lambda: good() + 1e-3, "broken": lambda: 1 / 0}
    results = {name: Timing() for name in runs}
    measure(inst, runs, Config(samples=2, min_sample_s=0.0, method_budget_s=60.0), results)
    assert results["good"].ok and len(results["good"].samples) == 2
    assert results["wrong"].status == "WRONG" and results["wrong"].samples == []
    assert results["broken"].status == "ERROR" and "ZeroDivisionError" in results["broken"].detail


def test_scale_check_reads_the_saved_diagonal(tmp_path):
    from benchmarks.scale import _check

    x = problems.p1_data(600)
    J = problems.jac_p1(x)
    np.save(tmp_path / "J.npy", J)
    assert _check(tmp_path / "J.npy", x, blocks=4, size=64) == ""
    J[5, 5] += 1.0
    np.save(tmp_path / "J.npy", J)
    assert _check(tmp_path / "J.npy", x, blocks=4, size=64).startswith("WRONG: diagonal")


@pytest.mark.parametrize("iid", ["P1-n100", "P3-n100", "P5-rows10-of-P2-n1000-m1000", "P6-n500"])
def test_record_once_method_replays_and_reproduces_the_reference(iid, monkeypatch):
    import jaccli
    from benchmarks.methods import find
    from jaccli.replay.record_once import record_once

    made = []
    monkeypatch.setattr(jaccli, "record_once", lambda f: made.append(record_once(f)) or made[-1])
    inst = instances.load(iid)
    run = find(inst, "jaccli record_once").build(inst).run
    for _ in range(3):  # the first call records f, the others replay it
        ok, err, why = instances.check(inst, run())
        assert ok, why
    assert (made[0].records, made[0].replays, made[0].misses) == (1, 2, 0)


def test_a_sample_of_several_calls_starts_with_one_untimed_call():
    # The first call after the idle wait is cold; a sample times the steady calls after it.
    import time

    from benchmarks.timing import _one_sample

    calls = []

    def run():
        calls.append(None)
        if len(calls) == 1:
            time.sleep(0.06)

    per_call = _one_sample(run, 3, lead_in=True)
    assert len(calls) == 4
    assert per_call < 0.01
    calls.clear()
    assert _one_sample(run, 3) > 0.015  # without the lead-in the cold call is in the mean




def _modelled_samples(monkeypatch, per_call):
    """timing._one_sample replaced by a model, `per_call(loops)` seconds a call for a sample of `loops` calls (no
    clock: the suite's load would move a measured one), and the loops of each sample asked for."""
    from benchmarks import timing

    asked = []

    def one_sample(run, loops, lead_in=False):
        asked.append(loops)
        return per_call(loops)
    monkeypatch.setattr(timing, "_one_sample", one_sample)
    return asked


def test_a_samples_loops_are_counted_from_the_steady_calls_not_the_cold_ones(monkeypatch):
    # The second call after the idle wait is still cold (here 4 ms); calls in a row take 0.1 ms. Counted from the
    # cold one, as before, a sample lasted 13 x 0.1 ms where min_sample_s says 50 ms (P1-n100's: 14 ms)
    from benchmarks.timing import steady_call_s

    asked = _modelled_samples(monkeypatch, lambda loops: 0.004 if loops == 1 else 1e-4)
    assert steady_call_s(lambda: None, Config(min_sample_s=0.05)) == 1e-4 and asked == [1, 10, 100]
    inst = instances.load("P2-n100-m100")
    results = {"cold start": Timing()}
    asked.clear()
    measure(inst, {"cold start": floors.closed_form(inst)}, Config(samples=2, min_sample_s=0.05), results)
    got = results["cold start"]
    assert got.ok and got.samples == [1e-4, 1e-4] and got.loops == 500 and asked == [1, 10, 100, 500, 500]


def test_a_slow_methods_loops_are_counted_from_one_call_after_the_untimed_one(monkeypatch):
    from benchmarks.timing import steady_call_s

    asked = _modelled_samples(monkeypatch, lambda loops: 0.02)
    assert steady_call_s(lambda: None, Config(min_sample_s=0.05)) == 0.02 and asked == [1]

@pytest.mark.parametrize("iid", ["P2-n100-m100", "P3-n100", "P6-n500"])
def test_the_overhead_diagnostics_time_one_and_the_same_vjp_every_way(iid):
    # benchmarks/overhead.py times f + a hand-written VJP against jaccli's and the anchors'; each
    # way must compute that VJP (vjp_ways checks them against the hand-written one, which is
    # checked here against central differences of f along v)
    from benchmarks.instances import load
    from benchmarks.overhead import vjp_ways

    hand, ways, v = vjp_ways(iid)
    assert {"jaccli", "record_once"} <= set(ways)
    inst = load(iid)
    u = np.random.default_rng(1).standard_normal(inst.x.shape)
    h = 1e-6
    along = (np.dot(v, inst.f(inst.x + h * u)) - np.dot(v, inst.f(inst.x - h * u))) / (2 * h)
    np.testing.assert_allclose(np.dot(hand(v)[1], u), along, rtol=1e-6)
    np.testing.assert_array_equal(hand(v)[0], inst.f(inst.x))


def test_cli_cost_returns_a_row_per_phase_each_checked_against_the_closed_form(monkeypatch):
    from benchmarks import cli_cost

    monkeypatch.setattr(cli_cost.os, "sync", lambda: None)  # (a machine-wide flush: not needed to see the rows)
    rows = cli_cost.phases(grid=4, rounds=1, processes=0)
    assert [r["phase"] for r in rows] == ["load (reading f and x)", "evaluation (f loaded to J in memory)",
                                          "checks (NaN/inf scan, verdicts)", "evaluation + checks",
                                          "write -o J.npy (atomic, fsync)", "write -o J.npy (atomic, fsync)"]
    for row in rows:
        assert set(row) == {"phase", "cli_s", "reference", "reference_s", "ratio", "runs"} and row["runs"] == 1
        assert row["cli_s"] >= 0 and row["ratio"] == pytest.approx(row["cli_s"] / row["reference_s"])


def test_cli_cost_refuses_a_wrong_jacobian(monkeypatch):
    from benchmarks import cli_cost

    monkeypatch.setattr(cli_cost.os, "sync", lambda: None)
    monkeypatch.setattr(cli_cost, "stencil_jacobian", lambda x: np.zeros((x.size, x.size)))
    with pytest.raises(SystemExit, match="wrong Jacobian"):
        cli_cost.phases(grid=3, rounds=1, processes=0)


def test_ab_runs_the_workloads_plain():
    import jaccli
    from benchmarks.ab import workload_runner
    from benchmarks.workloads import _check, workloads

    w = next(w for w in workloads() if w.id == "stack-1000")
    w.x = w.x[:50]  # (a small one: the harness, not the speed)
    assert _check(w, workload_runner(jaccli, w)(), w.reference(w.x)) is None


def test_ab_runs_p5s_rows_as_the_benchmark_does(capsys):
    # (benchmarks.ab asked P5's instance for its whole Jacobian, where its check wants the 10 rows,
    # and stopped: "wrong result")
    from benchmarks import ab

    assert ab.main(["HEAD", "--only", "P5-rows10-of-P2-n1000-m1000", "--rounds", "1", "--min-sample", "0.001"]) == 0
    lines = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln.startswith("P5-")]
    assert [ln[1] for ln in lines] == ["plain", "record_once"], lines


@pytest.mark.parametrize("iid", ["P1-n100", "P3-n100"])
def test_per_call_parts_add_up_to_the_record_once_call(iid):
    from benchmarks.per_call import parts

    got = parts(iid, rounds=1, calls=2, anchors=False)
    compiled = [k for k in ("compiled forward", "compiled sweeps", "symmetric assembly") if k in got]
    assert "compiled forward" in compiled and "compiled sweeps" in compiled and "hand batched" in got
    assert ("symmetric assembly" in compiled) == (iid == "P3-n100")
    assert got["the rest (Python)"] == pytest.approx(got["record_once"] - sum(got[k] for k in compiled))
    assert all(v > 0 for k, v in got.items() if k != "the rest (Python)")


def test_call_by_call_times_the_recording_and_seven_replays_against_a_plain_call():
    from benchmarks import call_by_call

    (iid, make, plain), = call_by_call._cases({"P1-n100"})
    got, base = call_by_call.calls(make, plain, trials=1)
    assert iid == "P1-n100" and len(got) == call_by_call.CALLS == 8 and base > 0 and all(t > 0 for t in got)


def test_the_ab_copy_of_the_package_replays_record_once_functions_as_the_package_does():
    # benchmarks.ab loads a revision's package as jaccli_ab: what the package finds by module name
    # (record_once's modules, loaded only when used) must be the copy's own, or the copy records f
    # again on every call of a record_once function and an A/B of record_once compares nothing real
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    code = ("import sys; sys.path.insert(0, '.')\n"
            "import numpy as np\nfrom benchmarks import ab\nab.export('HEAD')\nimport jaccli_ab\n"
            "g = jaccli_ab.record_once(lambda x: np.sin(x) * x)\n"
            "for k in range(4):\n    np.asarray(jaccli_ab.jacobian(g, np.linspace(0.1, 1.0, 5) + k))\n"
            "print(g.replays, g.misses, 'jaccli' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "0", "False"]


def test_the_probe_is_timed_before_each_round_and_after_the_last():
    inst = instances.load("P1-n100")
    results, probes = {"floor": Timing()}, []
    measure(inst, {"floor": floors.closed_form(inst)}, Config(samples=3, min_sample_s=0.0), results, probes=probes)
    assert len(results["floor"].samples) == 3
    assert len(probes) == 4 and all(0 < p < 1 for p in probes)


def test_instances_whose_probe_drifted_are_named_with_their_ratios():
    from benchmarks import report, workload_report

    results = {"instances": {"P1-n100": {"probe_s": [1e-3, 1.1e-3, 1.7e-3], "methods": {}},
                             "P3-n100": {"probe_s": [1e-3, 1.01e-3], "methods": {}},
                             "P2-n100-m100": {"probe_s": [1e-3, 2e-3], "methods": {}},
                             "P6-n500": {"methods": {}}}}
    assert report.drifted(results) == "P1-n100 1.70x, P2-n100-m100 2.00x"
    assert report.drifted(results, workload_report.JIT_INSTANCES) == "P1-n100 1.70x"
    assert "worst P2-n100-m100 2.00x" in report._steadiness(results)
    row = [r for r in workload_report.targets(results) if r[0].startswith("44.4 record_once / jax.jit steady")]
    assert row and row[0][1].endswith("; the probe drifted on P1-n100 1.70x")
    calm = {"instances": {"P1-n100": {"probe_s": [1e-3, 1.1e-3], "methods": {}}}}
    assert report.drifted(calm) == "" and "none over" in report._steadiness(calm)
    row = [r for r in workload_report.targets(calm) if r[0].startswith("44.4 record_once / jax.jit steady")]
    assert "probe" not in row[0][1]
