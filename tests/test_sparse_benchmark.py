"""The sparse benchmark's harness at tiny sizes: closed forms, checks, methods and the report. No timings asserted."""
import math

import numpy as np
import pytest

from benchmarks import sparse_methods as M, sparse_problems as P
from benchmarks.sparse_report import Result, targets, write_report


@pytest.mark.parametrize("pid", list(P.TINY))
def test_closed_forms_agree_with_central_differences(pid):
    problem = P.load(pid)
    ref = problem.reference(problem.x)
    assert P.central_difference_check(problem, ref, entries=12) < 1e-6


@pytest.mark.parametrize("pid", list(P.TINY))
@pytest.mark.parametrize("name", ["jaccli first call", "jaccli reused pattern", "jaccli record_once",
                                  "scipy FD (pattern given)"])
def test_methods_match_the_closed_form(pid, name):
    problem = P.load(pid)
    assert P.max_error(problem, M.BUILDERS[name](problem)()) < 1e-6


def test_a_wrong_result_is_caught():
    problem = P.load("bratu-n100")
    wrong = problem.reference(problem.x) * 1.001
    assert P.max_error(problem, wrong) > 1e-4
    assert P.max_error(problem, np.eye(3)) == math.inf


def test_pieces_and_colours():
    problem = P.load("arrowhead-n30")
    got = M.jaccli_pieces(problem)
    assert got["mode"] == "bidirectional" and got["colors"] == 3
    assert M.natural_greedy_colors(problem) == 30
    assert M.natural_greedy_colors(P.load("rosenbrock-n50")) == 3


def test_report_says_pass_and_miss(tmp_path):
    def res(name, t):
        return Result(name, samples=[t], first_s=t, max_err=0.0, cd_err=0.0, large=True)

    timings = {n: res(n, t) for n, t in [("jaccli first call", 2.0), ("jaccli reused pattern", 0.5),
                                         ("jaccli record_once", 1.5), ("scipy FD (pattern given)", 3.0),
                                         ("asdex prepared", 10.0)]}
    entry = {"n": 10 ** 6, "hessian": False, "large": True, "timings": timings,
             "pieces": {"record": 0.1, "detect": 0.2, "colour": 1.0, "sweeps": 0.5, "recover": 0.2,
                        "colors": 7, "mode": "forward"},
             "colours": {"jaccli plan": 7, "natural greedy": 7, "asdex": 7},
             "e2e": {"cli": False, "python script (library)": {"status": "ok", "seconds": 2.5, "peak_mb": 900.0,
                                                               "max_err": 0.0}}}
    run = {"command": "x", "started": "now", "machine": "m", "versions": "v", "load_before": "0",
           "load_after": "0", "problems": {"bratu-n1000000": entry},
           "jax_dense": [{"n": 10 ** 4, "seconds": 300.0, "peak_gb": 2.0}]}
    verdicts = {t.strip(): v for t, _, v in targets(run)}
    assert verdicts["Bratu 10^6 ≤ 6 colours"] == "MISS"
    assert verdicts["Bratu 10^6 reused pattern (sparsity=S) ≤ 0.5x the first call, in process"] == "PASS"
    assert verdicts["same with record_once"] == "MISS"
    assert verdicts["Bratu 10^6: CLI end to end ≤ 1.0x scipy sparse FD in process"] == "n/a"
    write_report(run, tmp_path / "r.md")
    text = (tmp_path / "r.md").read_text()
    assert "| Bratu 10^6 ≤ 6 colours | 7 (forward) | MISS |" in text and "120.0x" in text
