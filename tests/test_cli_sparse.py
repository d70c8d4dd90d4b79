"""The command line's sparse results: jacobian/hessian --sparse, --pattern, --rows/--cols, check --sparse
and the sparsity command; files read back with scipy; errors by kind and exit code."""

from __future__ import annotations

import json
import warnings
import subprocess
import sys

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

import jaccli
from jaccli.api.sparse import sparse_run

from .helpers import assert_error, constructions, rosen_hess, rosenbrock, scale_recovered_column
from .test_cli import invoke, make_runner, write

BANDED = """import numpy as np

def f(x):
    return x ** 2 + np.pad(x[1:] * x[:-1], (0, 1)) + np.pad(np.sin(x[:-1]), (1, 0))
"""
ROSENBROCK = """import numpy as np

def f(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
"""
DENSE = "import numpy as np\n\ndef f(x):\n    return np.tanh(x) * np.sum(x)\n"
BRANCHES = """import numpy as np

def f(x):
    if x[0] > 0:
        return x[1:] * x[:-1]
    return x[1:] + x[0] * x[:-1]
"""


def _banded(x):
    return x ** 2 + np.pad(x[1:] * x[:-1], (0, 1)) + np.pad(np.sin(x[:-1]), (1, 0))


@pytest.fixture
def runner():
    return make_runner()


@pytest.fixture
def files(tmp_path):
    x = np.linspace(0.1, 2.0, 40)
    np.save(tmp_path / "x.npy", x)
    return {"dir": tmp_path, "x": x, "xs": str(tmp_path / "x.npy"), "banded": write(tmp_path, "b.py", BANDED),
            "rosen": write(tmp_path, "r.py", ROSENBROCK), "dense": write(tmp_path, "d.py", DENSE)}


def test_jacobian_sparse_npz_and_mtx_read_back_equal_to_the_dense_jacobian(runner, files):
    J = jaccli.jacobian(_banded, files["x"])
    for name in ("J.npz", "J.mtx"):
        result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "-o", str(files["dir"] / name))
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "" and f"wrote {files['dir'] / name}" in result.stderr
    assert np.array_equal(sp.load_npz(files["dir"] / "J.npz").toarray(), J)
    assert np.abs(sio.mmread(files["dir"] / "J.mtx").toarray() - J).max() == 0.0


def test_hessian_sparse_is_exactly_symmetric_and_mtx_is_written_symmetric(runner, files):
    H_ref = rosen_hess(files["x"])
    for name in ("H.npz", "H.mtx"):
        result = invoke(runner, "hessian", files["rosen"], files["xs"], "--sparse", "-o", str(files["dir"] / name))
        assert result.exit_code == 0, result.stderr
    H = sp.load_npz(files["dir"] / "H.npz")
    assert (H != H.T).nnz == 0
    assert np.allclose(H.toarray(), H_ref, rtol=1e-12, atol=1e-12)
    text = (files["dir"] / "H.mtx").read_text()
    assert text.startswith("%%MatrixMarket matrix coordinate real symmetric")
    rows = [line.split() for line in text.splitlines()[3:]]
    assert all(int(i) >= int(j) for i, j, _ in rows)  # the lower triangle only
    assert np.allclose(sio.mmread(files["dir"] / "H.mtx").toarray(), H_ref, rtol=1e-12, atol=1e-12)


def test_json_gives_coo_arrays_and_the_plan_with_exact_floats(runner, files):
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--format", "json")
    doc = json.loads(result.stdout)
    assert {"shape", "nnz", "row", "col", "data", "plan"} <= set(doc)
    J = sp.csr_array((doc["data"], (doc["row"], doc["col"])), shape=doc["shape"])
    assert doc["nnz"] == J.nnz and np.array_equal(J.toarray(), jaccli.jacobian(_banded, files["x"]))
    assert doc["plan"]["mode"] == "forward" and doc["plan"]["colors"] == 3


@pytest.mark.parametrize("fmt, delimiter", [("text", " "), ("csv", ",")])
def test_text_and_csv_print_coo_triplets_with_shortest_round_trip_values(runner, files, fmt, delimiter):
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--format", fmt)
    J = jaccli.jacobian(_banded, files["x"])
    lines = result.stdout.splitlines()
    assert len(lines) == np.count_nonzero(J)
    for line in lines:
        i, j, v = line.split(delimiter)
        assert float(v) == J[int(i), int(j)] and v == repr(float(v))


def test_table_shows_a_summary_and_the_first_entries(runner, files):
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--format", "table")
    assert "shape    40 x 40" in result.stdout and "nnz      118" in result.stdout
    assert "plan     forward, 3 colours" in result.stdout and "(0, 0)" in result.stdout
    assert "98 more" in result.stdout


def test_dense_npy_is_written_only_within_the_memory_budget(runner, files):
    target = files["dir"] / "J.npy"
    ok = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "-o", str(target))
    assert ok.exit_code == 0 and np.array_equal(np.load(target), jaccli.jacobian(_banded, files["x"]))
    target.unlink()
    big = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "-o", str(target),
                 "--max-memory", "1KiB")
    message = assert_error(big, "resource_limit", 4)
    assert ".npz" in message and ".mtx" in message and not target.exists()


def test_a_dense_request_too_large_for_memory_says_to_use_sparse(runner, files):
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--max-memory", "1KiB")
    assert "--sparse" in assert_error(result, "resource_limit", 4)


def test_stats_report_colours_mode_nnz_and_timings(runner, files):
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--stats", "-o",
                    str(files["dir"] / "J.npz"))
    assert "stats: sparse: nnz 118, colours 3, mode forward, sweeps 1" in result.stderr
    assert "detection" in result.stderr and "colouring" in result.stderr and "sweeps" in result.stderr


@pytest.mark.parametrize("mode", ["forward", "reverse", "bidirectional"])
def test_mode_forces_the_side(runner, files, mode):
    doc = json.loads(invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--mode", mode,
                            "--format", "json").stdout)
    assert doc["plan"]["mode"] == mode
    J = sp.csr_array((doc["data"], (doc["row"], doc["col"])), shape=doc["shape"])
    assert np.allclose(J.toarray(), jaccli.jacobian(_banded, files["x"]), rtol=1e-14, atol=0)


def test_bidirectional_needs_sparse(runner, files):
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--mode", "bidirectional")
    assert_error(result, "usage", 2)


def test_rows_and_cols_use_fewer_colours_and_equal_the_dense_slice(runner, files):
    x = files["x"]
    J = jaccli.jacobian(_banded, x)
    whole = sparse_run(_banded, x)
    rows = sparse_run(_banded, x, rows=np.arange(5, 7))
    cols = sparse_run(_banded, x, cols=np.array([3]))
    assert whole.plan.sweeps == 3 and (rows.plan.sweeps, cols.plan.sweeps) == (2, 1)
    assert np.array_equal(rows.matrix.toarray(), J[5:7]) and np.array_equal(cols.matrix.toarray(), J[:, [3]])
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--rows", "5:7", "--cols", "0:10",
                    "--format", "json")
    doc = json.loads(result.stdout)
    got = sp.csr_array((doc["data"], (doc["row"], doc["col"])), shape=doc["shape"]).toarray()
    assert doc["shape"] == [2, 10] and np.array_equal(got, J[5:7, :10])


def test_sparsity_reports_pattern_plan_and_spy_view(runner, files):
    result = invoke(runner, "sparsity", files["banded"], files["xs"])
    assert result.exit_code == 0, result.stderr
    for text in ("40 x 40", "nnz         118", "lower 1, upper 1", "plan        forward: 3 sweeps", "\u2588"):
        assert text in result.stdout, text
    doc = json.loads(invoke(runner, "sparsity", files["banded"], files["xs"], "--format", "json").stdout)
    assert {"nnz", "colors", "mode", "shape", "density", "bandwidth", "tried", "dense_ops", "compared"} <= set(doc)
    assert (doc["nnz"], doc["colors"], doc["bandwidth"]) == (118, 3, [1, 1])
    hess = json.loads(invoke(runner, "sparsity", files["rosen"], files["xs"], "--hessian", "--format", "json").stdout)
    # substitution takes 2 colours where direct recovery needs 3; its search costs little at n = 40
    assert (hess["mode"], hess["colors"], hess["recovery"]) == ("symmetric", 2, "substitution")


def test_sparsity_names_compared_values_and_dense_operations(runner, tmp_path):
    func = write(tmp_path, "g.py", "import numpy as np\n\ndef f(x):\n    if x[0] > 0:\n"
                 "        return np.linalg.inv(x.reshape(2, 2)).ravel()\n    return x\n")
    result = invoke(runner, "sparsity", func, "[2, 0, 0, 2]")
    assert "np.linalg.inv at" in result.stdout and "g.py:5" in result.stdout
    assert "compared traced values" in result.stdout and "g.py:4" in result.stdout


def test_spy_view_keeps_every_nonzero_when_pooled():
    from jaccli.cli.commands.sparsity_report import spy_lines

    pattern = sp.csr_array(([True, True], ([0, 399], [399, 0])), shape=(400, 400))
    lines = spy_lines(pattern, 20, 5)
    assert len(lines) == 5 and all(len(line) <= 20 for line in lines)
    assert lines[0].endswith("\u2580") and lines[-1].startswith("\u2584")


def test_a_saved_pattern_is_reused_and_a_wrong_one_refused(runner, files):
    P = str(files["dir"] / "P.npz")
    assert invoke(runner, "sparsity", files["banded"], files["xs"], "-o", P).exit_code == 0
    reused = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--pattern", P, "--stats",
                    "--format", "json")
    assert reused.exit_code == 0 and "detection 0.0 ms" in reused.stderr
    other = write(files["dir"], "o.py", "import numpy as np\n\ndef f(x):\n    return np.cumsum(x)\n")
    for args in ([files["banded"], "[1, 2, 3]"], [other, files["xs"]], [files["rosen"], files["xs"], "--pattern", P]):
        cmd = "hessian" if files["rosen"] in args else "jacobian"
        result = invoke(runner, cmd, *args, "--sparse", *([] if "--pattern" in args else ["--pattern", P]))
        assert assert_error(result, "usage", 2).startswith(f"--pattern {P}: ")
    np.save(files["dir"] / "not.npy", np.ones(3))
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--pattern",
                    str(files["dir"] / "not.npy"))
    assert_error(result, "usage", 2)


def test_a_changed_control_path_with_a_pattern_is_refused(runner, tmp_path):
    func = write(tmp_path, "g.py", BRANCHES)
    P = str(tmp_path / "P.npz")
    assert invoke(runner, "sparsity", func, "[1, 2, 3, 4]", "-o", P).exit_code == 0
    same = invoke(runner, "jacobian", func, "[2, 3, 4, 5]", "--sparse", "--pattern", P)
    assert same.exit_code == 0, same.stderr
    changed = invoke(runner, "jacobian", func, "[-1, 2, 3, 4]", "--sparse", "--pattern", P)
    assert "jaccli sparsity" in assert_error(changed, "usage", 2)


def test_check_sparse_passes_and_reports_disagreements(runner, files, monkeypatch):
    ok = invoke(runner, "check", files["banded"], files["xs"], "--sparse")
    assert ok.exit_code == 0 and "passed" in ok.stdout
    doc = json.loads(invoke(runner, "check", files["rosen"], files["xs"], "--sparse", "--order", "2",
                            "--format", "json").stdout)
    assert doc["passed"] is True and doc["rows"] == [] and doc["cols"] == []
    scale_recovered_column(monkeypatch, 7)
    bad = invoke(runner, "check", files["banded"], files["xs"], "--sparse", "--format", "json")
    assert bad.exit_code == 1
    doc = json.loads(bad.stdout.splitlines()[0])
    assert doc["passed"] is False and doc["cols"] == [7] and set(doc["rows"]) <= {6, 7, 8}


def test_a_dense_pattern_works_and_says_dense_output_would_be_cheaper(runner, files):
    result = invoke(runner, "jacobian", files["dense"], "[1, 2, 3, 4]", "--sparse", "--format", "json")
    assert result.exit_code == 0
    assert "the matrix is dense (density 1" in result.stderr and "cheaper" in result.stderr
    assert json.loads(result.stdout)["nnz"] == 16


@pytest.mark.parametrize("command", [["jacobian", "--sparse"], ["sparsity"]])
def test_without_scipy_sparse_says_how_to_install_it(runner, files, monkeypatch, command):
    for name in ("scipy", "scipy.sparse", "scipy.io"):
        monkeypatch.setitem(sys.modules, name, None)
    result = invoke(runner, command[0], files["banded"], files["xs"], *command[1:])
    assert "pip install 'jaccli[sparse]'" in assert_error(result, "usage", 2)


def test_real_processes_write_npz_and_report_sparsity(files):
    target = files["dir"] / "J.npz"
    done = subprocess.run([sys.executable, "-m", "jaccli", "jacobian", files["banded"], files["xs"], "--sparse", "-o",
                           str(target)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(sp.load_npz(target).toarray(), jaccli.jacobian(_banded, files["x"]))
    report = subprocess.run([sys.executable, "-m", "jaccli", "sparsity", files["banded"], files["xs"], "--format",
                             "json"], capture_output=True, text=True)
    assert report.returncode == 0 and json.loads(report.stdout)["colors"] == 3


def test_library_rows_of_a_hessian_equal_the_dense_slice():
    x = np.linspace(0.1, 2.0, 30)
    H = jaccli.sparse_hessian(rosenbrock, x, rows=[2, 3])
    assert np.allclose(H.toarray(), rosen_hess(x)[2:4], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("rows, cols", [
    (np.arange(30) % 7 == 3, None),  # a boolean mask: its True rows, not rows 0 and 1
    (None, np.arange(30) >= 27),
    ([-1, -30, 4], [0, -2]),  # negative indices count from the end, in the order given
    (slice(2, 20, 5), slice(None, None, -3)),
    (np.int64(7), 3),  # one index
    (lambda m: np.arange(m) % 2 == 0, None),  # a function of the length, giving a mask
])
@pytest.mark.parametrize("hessian", [False, True], ids=["jacobian", "hessian"])
def test_library_selections_index_as_numpy_indexes_a_vector(rows, cols, hessian):
    x = np.linspace(0.1, 2.0, 30)
    dense = rosen_hess(x) if hessian else np.asarray(jaccli.jacobian(_banded, x))
    got = (jaccli.sparse_hessian(rosenbrock, x, rows=rows, cols=cols) if hessian
           else jaccli.sparse_jacobian(_banded, x, rows=rows, cols=cols)).toarray()
    every = np.arange(30)
    want = dense[np.atleast_1d(every[rows(30) if callable(rows) else rows] if rows is not None else every)]
    want = want[:, np.atleast_1d(every[cols] if cols is not None else every)]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("rows, error", [(np.ones(29, dtype=bool), IndexError), ([30], IndexError), ([-31], IndexError),
                                         ([1.0, 2.0], TypeError), (np.zeros((2, 2), dtype=int), IndexError)])
def test_library_selections_out_of_range_or_of_another_kind_are_refused(rows, error):
    x = np.linspace(0.1, 2.0, 30)
    with pytest.raises(error, match="rows"):
        jaccli.sparse_jacobian(_banded, x, rows=rows)


def test_the_terminal_view_of_sparsity_draws_the_spy_view_with_rich(runner, files):
    result = invoke(runner, "sparsity", files["banded"], files["xs"], "--format", "table", "--no-color")
    assert result.exit_code == 0, result.stderr
    assert "plan        forward: 3 sweeps" in result.stdout and "\u2588" in result.stdout


def test_several_inputs_give_one_stacked_matrix_and_json_files_read_back(runner, tmp_path):
    func = write(tmp_path, "g.py", "import numpy as np\n\ndef f(x, y):\n    return x[1:] * y[:-1] + np.sin(x[:-1])\n")
    target = tmp_path / "J.json"
    result = invoke(runner, "jacobian", func, "[1, 2, 3, 4]", "[5, 6, 7, 8]", "--sparse", "-o", str(target))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(target.read_text())
    J = sp.csr_array((doc["data"], (doc["row"], doc["col"])), shape=doc["shape"]).toarray()
    Jx, Jy = jaccli.jacobian(lambda x, y: x[1:] * y[:-1] + np.sin(x[:-1]), (np.arange(1.0, 5), np.arange(5.0, 9)))
    assert np.array_equal(J, np.hstack([np.asarray(Jx), np.asarray(Jy)])) and doc["meta"]["plan"]["colors"] >= 2
    assert doc["meta"]["layout"] == {"rows": [{"name": "f", "shape": [3], "start": 0, "stop": 3}],
                                     "cols": [{"name": "x", "shape": [4], "start": 0, "stop": 4},
                                              {"name": "y", "shape": [4], "start": 4, "stop": 8}]}
    assert "(rows f [0:3); columns x [0:4), y [4:8))" in result.stderr
    mtx = tmp_path / "J.mtx"
    assert invoke(runner, "jacobian", func, "[1, 2, 3, 4]", "[5, 6, 7, 8]", "--sparse", "-o", str(mtx)).exit_code == 0
    assert mtx.read_text().splitlines()[1] == "%jaccli: rows f [0:3); columns x [0:4), y [4:8)"
    assert np.array_equal(sio.mmread(mtx).toarray(), J)


def test_recovery_by_substitution_takes_fewer_sweeps_and_says_so(runner, files):
    H_ref = rosen_hess(files["x"])
    docs = {}
    for recovery in ("direct", "substitution"):
        result = invoke(runner, "hessian", files["rosen"], files["xs"], "--sparse", "--recovery", recovery,
                        "--format", "json")
        assert result.exit_code == 0, result.stderr
        docs[recovery] = doc = json.loads(result.stdout)
        H = sp.csr_array((doc["data"], (doc["row"], doc["col"])), shape=doc["shape"]).toarray()
        assert np.array_equal(H, H.T)
        np.testing.assert_allclose(H, H_ref, rtol=0, atol=1e-12 * np.abs(H_ref).max())
        assert doc["plan"]["recovery"] == recovery
    assert (docs["direct"]["plan"]["colors"], docs["substitution"]["plan"]["colors"]) == (3, 2)
    report = invoke(runner, "sparsity", files["rosen"], files["xs"], "--hessian", "--recovery", "substitution")
    assert "plan        symmetric: 2 sweeps (2 forward, 0 reverse), recovered by substitution" in report.stdout
    reuse = files["dir"] / "P.npz"
    assert invoke(runner, "sparsity", files["rosen"], files["xs"], "--hessian", "--recovery", "substitution",
                  "-o", str(reuse)).exit_code == 0
    result = invoke(runner, "hessian", files["rosen"], files["xs"], "--sparse", "--pattern", str(reuse),
                    "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["plan"]["recovery"] == "substitution" and doc["plan"]["colors"] == 2
    H = sp.csr_array((doc["data"], (doc["row"], doc["col"])), shape=doc["shape"]).toarray()
    np.testing.assert_allclose(H, H_ref, rtol=0, atol=1e-12 * np.abs(H_ref).max())
    assert_error(invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--recovery", "direct"),
                 "usage", 2)
    assert_error(invoke(runner, "sparsity", files["banded"], files["xs"], "--recovery", "direct"), "usage", 2)


def test_sparse_plot_draws_the_result_and_check_sparse_refuses_it(runner, files):
    target = files["dir"] / "J.png"
    result = invoke(runner, "jacobian", files["banded"], files["xs"], "--sparse", "--plot", str(target))
    assert result.exit_code == 0, result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {target}" in result.stderr
    assert_error(invoke(runner, "check", files["banded"], files["xs"], "--sparse", "--plot", str(target)), "usage", 2)


def test_sparsity_plot_draws_the_pattern_coloured_by_colour_group(runner, files):
    import matplotlib.image

    target = files["dir"] / "pattern.png"
    result = invoke(runner, "sparsity", files["banded"], files["xs"], "--plot", str(target))
    assert result.exit_code == 0, result.stderr
    assert f"wrote {target}" in result.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(target)[..., :3]
    # three colour groups: the entries are drawn in (at least) three distinct non-grey colours
    colours = {tuple(np.round(p, 2)) for p in pixels.reshape(-1, 3) if np.ptp(p) > 0.2}
    assert len(colours) >= 3
    bad = invoke(runner, "sparsity", files["banded"], files["xs"], "--plot", str(files["dir"] / "pattern.bmp"))
    assert_error(bad, "usage", 2)


def test_sparse_json_reports_open_with_the_keys_of_every_report(runner, files):
    import jaccli as package

    for args in (["jacobian", files["banded"], files["xs"], "--sparse"],
                 ["check", files["banded"], files["xs"], "--sparse"],
                 ["sparsity", files["banded"], files["xs"]]):
        result = invoke(runner, *args, "--format", "json")
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        assert list(doc)[:4] == ["schema", "jaccli", "command", "argv"]
        assert doc["jaccli"] == package.__version__ and doc["command"] == args[0] and "--sparse" in doc["argv"] \
            or args[0] == "sparsity"


def test_json_gives_each_block_keyed_and_nested_as_the_dense_result(runner, tmp_path):
    func = write(tmp_path, "g.py", "import numpy as np\n\ndef f(x, y):\n    return x[1:] * y[:-1], np.sin(x) * 2\n")
    args = ("jacobian", func, "[1, 2, 3, 4]", "[5, 6, 7, 8]", "--format", "json")
    sparse, dense = (json.loads(invoke(runner, *args, *extra).stdout) for extra in (["--sparse"], []))
    assert set(sparse["blocks"]) == set(dense["blocks"]) == {"df0_dx", "df0_dy", "df1_dx", "df1_dy"}
    for key, block in sparse["blocks"].items():
        got = sp.csr_array((block["data"], (block["row"], block["col"])), shape=block["shape"]).toarray()
        want = np.asarray(dense["blocks"][key]["data"], dtype=float).reshape(block["shape"])
        assert np.array_equal(got, want), key
        assert block["full_shape"] == dense["blocks"][key]["full_shape"]
    hess = write(tmp_path, "h.py", "import numpy as np\n\ndef f(x, y):\n    return np.sum(x ** 2 * y[:3]) + np.sum(y ** 3)\n")
    doc = json.loads(invoke(runner, "hessian", hess, "[1, 2, 3]", "[5, 6, 7, 8]", "--sparse", "--format", "json").stdout)
    assert set(doc["blocks"]) == {"d2f_dx_dx", "d2f_dx_dy", "d2f_dy_dx", "d2f_dy_dy"}
    assert doc["blocks"]["d2f_dx_dy"]["shape"] == [3, 4] and doc["layout"]["cols"][1]["start"] == 3


@pytest.mark.parametrize("command, func, args, lines", [
    # f's own inf (log(0)) is named at its line; the values say it is the second element
    ("jacobian", "nan.py", ("[1.0, 0.0, 4.0]",),
     ["the sparse Jacobian holds 1 inf (of 3 entries), at (f[1], x[1])",
      "first non-finite value: np.log produced inf in the forward evaluation at {source}:4 (element (1,))"]),
    # a rule's inf (sqrt'(0)), found by one JVP along the column with the monitor on
    ("jacobian", None, ("sqrt(x) * y", "x=[0.0, 1.0]", "y=[2.0, 3.0]"),
     ["the sparse Jacobian holds 1 inf (of 4 entries), at (f[0], x[0])",
      "first non-finite value: np.sqrt produced inf in the forward sweep (element (0,)) (sqrt'(0) = inf, reported "
      "as non-finite, not hidden)"]),
    ("hessian", None, ("sum(sqrt(x) * x)", "x=[1.0, 0.0]"),
     ["the sparse Hessian holds 1 NaN (of 2 entries), at (x[1], x[1])",
      "first non-finite value: np.sqrt produced nan in the reverse sweep (element (1,)) (sqrt' = inf here met a zero "
      "cotangent: the derivative here exists only as a limit)"]),
])
def test_a_sparse_result_holding_nan_or_inf_says_so_and_names_the_operation(runner, tmp_path, command, func, args,
                                                                              lines):
    # as the dense result's warnings do (command-line.md, Streams), in the JSON report's warnings too
    if func is not None:
        source = write(tmp_path, func, "import numpy as np\n\ndef f(x):\n    return np.sqrt(x) + np.log(x)\n")
        head = [source]
        lines = [line.format(source=source) for line in lines]
    else:
        head = ["-e"]
    result = invoke(runner, command, *head, *args, "--sparse", "--format", "json")
    assert result.exit_code == 0, result.stderr
    for line in lines:
        assert f"Warning: {line}\n" in result.stderr
    doc = json.loads(result.stdout)
    assert all(line in doc["warnings"] for line in lines)
    assert len(doc["nonfinite"]) == 1 and doc["nonfinite_origin"]["message"] == lines[1].split(": ", 1)[1]
    dense = json.loads(invoke(runner, command, *head, *args, "--format", "json").stdout)
    assert dense["nonfinite"][0]["labels"] == doc["nonfinite"][0]["labels"]  # the dense result's entry too


def test_a_finite_sparse_result_has_no_nonfinite_entries_and_a_selection_names_rows_and_columns(runner):
    result = invoke(runner, "jacobian", "-e", "x[1:] * x[:-1]", "x=[0.5, 1.0, 2.0]", "--sparse", "--format", "json")
    doc = json.loads(result.stdout)
    assert (doc["nonfinite"], doc["nonfinite_origin"], doc["warnings"]) == ([], None, [])
    picked = invoke(runner, "jacobian", "-e", "sqrt(x)", "x=[1.0, 0.0, 4.0]", "--sparse", "--rows", "1:3")
    assert "Warning: the sparse Jacobian holds 1 inf (of 2 entries), at (row 0, col 1)\n" in picked.stderr


@pytest.mark.parametrize("call, what", [
    (lambda x: jaccli.sparse_jacobian(lambda x: np.exp(1j * x), x), "complex outputs"),
    (lambda x: jaccli.sparsity(lambda x: np.exp(1j * x), x), "complex outputs"),
    (lambda x: jaccli.sparse_jacobian(lambda z: np.abs(z) ** 2, x + 1j), "a complex input"),
    (lambda x: jaccli.sparse_jacobian(lambda z: z[1:] * z[:-1], x + 1j), "a complex input"),
    (lambda x: jaccli.sparse_hessian(lambda z: np.sum(np.abs(z) ** 2), x + 1j), "a complex input"),
    (lambda x: jaccli.sparse_jacobian(lambda x, c: x * np.abs(c), (x, x + 1j), wrt=0), None),  # complex data: fine
])
def test_sparse_results_of_complex_functions_are_refused_in_one_clear_error(call, what):
    x = np.arange(1.0, 6.0)
    if what is None:
        np.testing.assert_allclose(call(x).toarray(), np.diag(np.abs(x + 1j)), rtol=1e-15)
        return
    with pytest.raises(jaccli.errors.UnsupportedOperationError,
                       match=f"sparse Jacobians and Hessians are of real functions, and f has {what}; use "
                             "jaccli.jacobian"):
        call(x)


def test_jacobian_sparse_of_a_complex_function_is_a_usage_error(runner, tmp_path):
    func = write(tmp_path, "c.py", "import numpy as np\n\ndef f(x):\n    return np.exp(1j * x)\n")
    result = invoke(runner, "jacobian", func, "[1.0, 2.0]", "--sparse")
    assert assert_error(result, "usage", 2) == ("--sparse is for real functions, and f has complex outputs; leave out "
                                                "--sparse (docs/complex.md)")


def test_check_sparse_refuses_a_result_of_another_shape_and_names_the_hessian_flag():
    f = lambda x: np.sum(x ** 3)  # noqa: E731
    x = np.linspace(0.5, 1.5, 5)
    H = jaccli.sparse_hessian(f, x)
    assert jaccli.check_sparse(f, x, H, hessian=True).passed
    with pytest.raises(ValueError, match="the result to check is 5 x 5, and the Jacobian of f at these inputs is 1 x 5; "
                                         "it is the Hessian's shape: give hessian=True"):
        jaccli.check_sparse(f, x, H)
    g = lambda x: x[1:] * x[:-1]  # noqa: E731
    with pytest.raises(ValueError, match="is 39 x 40, and the Jacobian of f at these inputs is 49 x 50$"):
        jaccli.check_sparse(g, np.ones(50), jaccli.sparse_jacobian(g, np.ones(40)))
    with pytest.raises(TypeError, match="not list of shape"):
        jaccli.check_sparse(g, np.ones(50), [1.0, 2.0])
    with pytest.raises(ValueError, match="is 6 x 6, and the Jacobian of f at these inputs is 5 x 6$"):  # no Hessian
        jaccli.check_sparse(g, np.ones(6), np.zeros((6, 6)))


def test_check_sparse_takes_a_dense_matrix_and_finds_its_wrong_entry():
    g = lambda x: x[1:] * x[:-1]  # noqa: E731
    x = np.linspace(0.5, 1.5, 6)
    J = np.array(jaccli.jacobian(g, x))
    assert jaccli.check_sparse(g, x, J).passed
    J[2, 4] = 1.0  # outside the pattern
    found = jaccli.check_sparse(g, x, J)
    assert not found.passed and list(found.rows) == [2] and list(found.cols) == [4]


def test_a_saved_pattern_is_taken_by_its_path_and_anything_else_is_refused(tmp_path):
    x = np.linspace(0.1, 2.0, 30)
    jaccli.sparsity(_banded, x).save(tmp_path / "P.npz")
    for given in (tmp_path / "P.npz", str(tmp_path / "P.npz")):
        J = jaccli.sparse_jacobian(_banded, x, sparsity=given)
        assert np.array_equal(J.toarray(), np.asarray(jaccli.jacobian(_banded, x)))
    with pytest.raises(jaccli.errors.UsageError, match="cannot read the pattern"):
        jaccli.sparse_jacobian(_banded, x, sparsity=tmp_path / "missing.npz")
    with pytest.raises(TypeError, match="sparsity should be a Sparsity"):
        jaccli.sparse_jacobian(_banded, x, sparsity=3)


@pytest.mark.parametrize("expression, kinked", [("abs(x[1:] - x[:-1])", True), ("sqrt(x) * x[::-1]", False)])
def test_jacobian_sparse_records_f_once_for_its_kinks_and_nonfinite_report_too(runner, monkeypatch, expression, kinked):
    # the run's own recording tells its kinks (and the first non-finite value's operation): f is not recorded again
    from jaccli.engine import recording

    made = constructions(monkeypatch, recording.Recording)
    result = invoke(runner, "jacobian", "-e", expression, "x=[0.0, 0.0, 1.0]", "--sparse")
    assert result.exit_code == 0, result.stderr
    assert ("is at its kink here" in result.stderr) == kinked and ("first non-finite value" in result.stderr) != kinked
    assert len(made) == 1


@pytest.mark.parametrize("made", [np.ones_like, np.zeros_like, lambda u: np.full_like(u, 3.0)],
                         ids=["ones_like", "zeros_like", "full_like"])
def test_a_pattern_holds_at_a_point_with_zeros_where_f_makes_arrays_like_its_input(made, tmp_path):
    # np.ones_like(u) records u's value as a plain argument: its zeros made another fingerprint, and the pattern of
    # a branchless f was refused (--pattern) or detected again at a point holding an exact 0
    def f(u):
        return u[1:] * 2.0 + made(u)[1:] * u[:-1]

    S = jaccli.sparsity(f, np.arange(1.0, 6.0))
    S.save(tmp_path / "P.npz")
    at = np.arange(0.0, 5.0)  # u[0] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (SparsityChangedWarning: detected again)
        J = jaccli.sparse_jacobian(f, at, sparsity=S)
    assert np.array_equal(J.toarray(), np.asarray(jaccli.jacobian(f, at)))
    result = invoke(make_runner(), "jacobian", "-e", "u * 2.0", "u=[0.0, 1.0]", "--sparse", "--pattern",
                    str(tmp_path / "P.npz"))
    assert_error(result, "usage", 2)  # (another function's pattern is still refused)
