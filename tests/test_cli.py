"""The command line through click's CliRunner: every command, option and error path.

Exit code, stdout and stderr are asserted separately. Helpers and the samples' closed-form
derivatives at the top are shared with test_cli_subprocess.py, test_cli_checks.py,
test_cli_interrupted.py and test_error_messages.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner, Result
from numpy.testing import assert_allclose, assert_array_equal

from jaccli.cli.main import cli

from .helpers import Recorder, assert_error, central_diff, invoke_recording_error

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
ROOT = SAMPLES.parent


def sample(name: str) -> str:
    return str(SAMPLES / name)


def make_runner() -> CliRunner:
    # Pinned width for click's help and rich's tables; no colour, debug or Dask scheduler from the outer shell.
    return CliRunner(env={"COLUMNS": "100", "NO_COLOR": None, "JACCLI_DEBUG": None, "FORCE_COLOR": None,
                          "DASK_SCHEDULER_ADDRESS": None})


def invoke(runner: CliRunner, *args: str, **kw) -> Result:
    return invoke_recording_error(runner, cli, list(args), **kw)


def report(result: Result) -> dict:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def data(result: Result, key: str) -> np.ndarray:
    block = report(result)["blocks"][key]
    return np.array(block["data"], dtype=float)


# ---------------------------------------------------------------- helpers and closed forms


def robot_arm_jacobian(q: np.ndarray) -> np.ndarray:
    links = np.array([1.0, 0.8, 0.5])
    t = np.cumsum(q)
    J = np.ones((3, 3))
    for i in range(3):
        J[0, i] = -np.sum(links[i:] * np.sin(t[i:]))
        J[1, i] = np.sum(links[i:] * np.cos(t[i:]))
    return J


def mlp_jacobian(x: np.ndarray) -> np.ndarray:
    with np.load(SAMPLES / "mlp_weights.npz") as w:
        W1, b1, W2 = w["W1"], w["b1"], w["W2"]
    h = np.tanh(W1 @ x + b1)
    return W2 @ np.diag(1 - h**2) @ W1


def rosenbrock_grad(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x: np.ndarray) -> np.ndarray:
    n = x.size
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
    return H


def kinetics_jacobians(c: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dc = np.array([[-k[0], k[2] * c[2], k[2] * c[1]],
                   [k[0], -2 * k[1] * c[1] - k[2] * c[2], -k[2] * c[1]],
                   [0.0, 2 * k[1] * c[1], 0.0]])
    dk = np.array([[-c[0], 0.0, c[1] * c[2]],
                   [c[0], -c[1] ** 2, -c[1] * c[2]],
                   [0.0, c[1] ** 2, 0.0]])
    return dc, dk


def heat_pde_jacobian(u: np.ndarray) -> np.ndarray:
    n = u.size
    h = 1.0 / (n + 1)
    return (np.diag(np.full(n - 1, 1.0), 1) + np.diag(np.full(n - 1, 1.0), -1) - 2 * np.eye(n)) / h**2 \
        + np.diag(np.exp(u))


def logistic_parts(w: np.ndarray, X: np.ndarray, y: np.ndarray, alpha: float = 0.01):
    p = 1 / (1 + np.exp(-(X @ w)))
    grad = X.T @ (p - y) / len(y) + alpha * w
    hess = X.T @ np.diag(p * (1 - p)) @ X / len(y) + alpha * np.eye(w.size)
    return grad, hess


def softmax_parts(z: np.ndarray, p: np.ndarray):
    s = np.exp(z) / np.exp(z).sum()
    grad = s * p.sum() - p
    hess_zz = p.sum() * (np.diag(s) - np.outer(s, s))
    hess_zp = np.outer(s, np.ones_like(p)) - np.eye(z.size)
    return grad, hess_zz, hess_zp


def load_inputs():
    """The samples' inputs, read the way the tests expect them."""
    return {
        "q": np.load(SAMPLES / "robot_arm_q.npy"),
        "mlp_x": np.load(SAMPLES / "mlp_x.npy"),
        "rosen_x": np.load(SAMPLES / "rosenbrock_x.npy"),
        "c": np.load(SAMPLES / "kinetics_c.npy"),
        "k": np.load(SAMPLES / "kinetics_k.npy"),
        "u": np.load(SAMPLES / "heat_pde_u.npy"),
        "w": np.load(SAMPLES / "logistic_w.npy"),
        "X": np.loadtxt(SAMPLES / "logistic_X.csv", delimiter=",", skiprows=1),
        "y": np.loadtxt(SAMPLES / "logistic_y.txt"),
        "z": np.load(SAMPLES / "softmax_xent_z.npy"),
        "p": np.loadtxt(SAMPLES / "softmax_xent_p.csv", delimiter=","),
    }


@pytest.fixture
def runner() -> CliRunner:
    return make_runner()


@pytest.fixture(scope="module")
def inputs() -> dict:
    return load_inputs()


def write(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------- jacobian on the samples


def test_jacobian_of_robot_arm_matches_closed_form(runner, inputs):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format", "json")
    assert_allclose(data(result, "df_dq"), robot_arm_jacobian(inputs["q"]), rtol=1e-12, atol=1e-12)
    assert result.stderr == ""


def test_a_function_file_whose_helper_module_builds_arrays_from_lists(runner, tmp_path):
    # The robot arm split over two files: np.array([...]) of traced values in the sibling module.
    write(tmp_path, "arm_geometry.py", "import numpy as np\n\ndef tip(q):\n"
                                        "    return np.array([np.cos(q[0]) + np.cos(q[0] + q[1]), "
                                        "np.sin(q[0]) + np.sin(q[0] + q[1])])\n")
    func = write(tmp_path, "arm.py", "from arm_geometry import tip\n\ndef f(q):\n    return tip(q)\n")
    result = invoke(runner, "jacobian", func, "[0.3, 0.5]", "--format", "json")
    a, b = 0.3, 0.8
    expected = [[-np.sin(a) - np.sin(b), -np.sin(b)], [np.cos(a) + np.cos(b), np.cos(b)]]
    assert_allclose(next(iter(report(result)["blocks"].values()))["data"], expected, rtol=1e-14)


def test_jacobian_plain_text_in_pipes_is_one_matrix_row_per_line(runner, inputs):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--precision", "17")
    assert result.exit_code == 0 and result.stderr == ""
    assert "\x1b[" not in result.stdout
    values = np.array([[float(v) for v in line.split()] for line in result.stdout.splitlines()])
    assert_allclose(values, robot_arm_jacobian(inputs["q"]), rtol=1e-14)


def test_jacobian_of_mlp_matches_closed_form(runner, inputs):
    result = invoke(runner, "jacobian", sample("mlp.py"), sample("mlp_x.npy"), "--format", "json")
    assert_allclose(data(result, "df_dx"), mlp_jacobian(inputs["mlp_x"]), rtol=1e-12, atol=1e-14)


def test_jacobian_binds_npz_arrays_by_key(runner, inputs):
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--format", "json")
    dc, dk = kinetics_jacobians(inputs["c"], inputs["k"])
    assert_allclose(data(result, "df_dc"), dc, rtol=1e-12)
    assert_allclose(data(result, "df_dk"), dk, rtol=1e-12)


def test_jacobian_binds_named_inputs_in_any_order(runner, inputs):
    result = invoke(runner, "jacobian", sample("kinetics.py"), f"k={sample('kinetics_k.npy')}",
                    f"c={sample('kinetics_c.npy')}", "--wrt", "k", "--format", "json")
    assert list(report(result)["blocks"]) == ["df_dk"]
    assert_allclose(data(result, "df_dk"), kinetics_jacobians(inputs["c"], inputs["k"])[1], rtol=1e-12)


def test_wrt_by_position_keeps_the_others_as_data(runner, inputs):
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_c.npy"), sample("kinetics_k.npy"),
                    "--wrt", "0", "--format", "json")
    doc = report(result)
    assert doc["wrt"] == ["c"]
    assert doc["inputs"]["k"] == {"shape": [3], "dtype": "float64", "differentiated": False}
    assert_allclose(data(result, "df_dc"), kinetics_jacobians(inputs["c"], inputs["k"])[0], rtol=1e-12)


def test_rows_computes_only_the_selected_rows(runner, inputs):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:4",
                    "--format", "json")
    block = report(result)["blocks"]["df_du"]
    assert block["shape"] == [4, 32] and block["full_shape"] == [32, 32]
    assert block["rows"] == [0, 1, 2, 3] and block["cols"] is None
    assert block["rows_evaluated"] == 4 and block["cols_evaluated"] == 0
    assert_allclose(np.array(block["data"]), heat_pde_jacobian(inputs["u"])[:4], rtol=1e-12)


def test_cols_with_forward_mode_computes_only_those_columns(runner, inputs):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--cols", "-1,0",
                    "--mode", "forward", "--format", "json")
    doc = report(result)
    block = doc["blocks"]["df_du"]
    assert block["cols"] == [31, 0] and block["cols_evaluated"] == 2 and block["rows_evaluated"] == 0
    assert doc["mode"] == "forward" and doc["mode_requested"] == "forward"
    assert_allclose(np.array(block["data"]), heat_pde_jacobian(inputs["u"])[:, [31, 0]], rtol=1e-12)


def test_rows_and_cols_from_an_index_file(runner, tmp_path, inputs):
    np.save(tmp_path / "rows.npy", np.array([5, 2]))
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"),
                    "--rows", f"@{tmp_path / 'rows.npy'}", "--cols", "1:7:2", "--format", "json")
    expected = heat_pde_jacobian(inputs["u"])[np.ix_([5, 2], [1, 3, 5])]
    assert_allclose(data(result, "df_du"), expected, rtol=1e-12)


def test_ranges_of_rows_and_cols_are_taken_as_slices_not_picked_entry_by_entry(runner, inputs, monkeypatch):
    # A copy of the cache's slice, as J[2:6] takes it: picking rows x columns by index arrays costs twice that.
    from jaccli.api.block_stores import BlockStores

    picked = []
    take = BlockStores.take
    monkeypatch.setattr(BlockStores, "take", lambda self, *a: picked.append(a) or take(self, *a))
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "2:6",
                    "--cols", "3:9", "--format", "json")
    block = report(result)["blocks"]["df_du"]
    assert block["rows_evaluated"] == 4 and block["rows"] == [2, 3, 4, 5] and block["cols"] == list(range(3, 9))
    assert_allclose(np.array(block["data"]), heat_pde_jacobian(inputs["u"])[2:6, 3:9], rtol=1e-12)
    assert picked == []
    scattered = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "2:6",
                       "--cols", "3,5", "--format", "json")
    assert_allclose(data(scattered, "df_du"), heat_pde_jacobian(inputs["u"])[2:6][:, [3, 5]], rtol=1e-12)
    assert len(picked) == 1


def test_chunk_size_sets_seeds_per_sweep(runner):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:6",
                    "--chunk-size", "2", "--format", "json")
    doc = report(result)
    assert doc["sweeps"] == 3 and doc["seeds"] == 6 and doc["chunk_size"] == 2


@pytest.mark.parametrize("value", ["auto", "AUTO", "Auto"])
def test_chunk_size_takes_auto_in_any_case_as_its_metavar_shows(runner, value):
    assert "--chunk-size N|AUTO" in invoke(runner, "jacobian", "--help").stdout
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[1, 2]", "--chunk-size", value, "--format", "json")
    assert report(result)["chunk_size"] == "auto"


@pytest.mark.parametrize("value, mode", [("AUTO", "auto"), ("Reverse", "reverse"), ("FORWARD", "forward")])
def test_mode_takes_its_keywords_in_any_case(runner, value, mode):
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[1, 2]", "--mode", value, "--format", "JSON")
    assert report(result)["mode_requested"] == mode


def test_dtype_and_format_take_their_keywords_in_any_case(runner):
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[1, 2]", "--dtype", "Float32", "--format", "Json")
    assert report(result)["dtype"] == "float32"
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[1, 2]", "--format", "CSV")
    assert result.exit_code == 0 and result.stdout.splitlines() == ["2.0,0.0", "0.0,4.0"]


def test_mode_reverse_and_forward_agree(runner):
    args = ("jacobian", sample("mlp.py"), sample("mlp_x.npy"), "--format", "json")
    rev = report(invoke(runner, *args, "--mode", "reverse"))
    fwd = report(invoke(runner, *args, "--mode", "forward"))
    assert rev["mode"] == "reverse" and fwd["mode"] == "forward"
    assert_allclose(rev["blocks"]["df_dx"]["data"], fwd["blocks"]["df_dx"]["data"], rtol=1e-12)


def test_batch_axis_gives_per_sample_blocks(runner):
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[[1, 2], [3, 4], [5, 6]]", "--batch-axis", "0",
                    "--format", "json")
    block = report(result)["blocks"]["df_dx"]
    assert block["shape"] == [3, 2, 2]
    x = np.array([[1, 2], [3, 4], [5, 6]], dtype=float)
    assert_allclose(np.array(block["data"]), np.stack([np.diag(2 * row) for row in x]))


def test_batch_axis_with_rows_is_b_r_c(runner):
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[[1, 2], [3, 4], [5, 6]]", "--batch-axis", "0",
                    "--rows", "1", "--format", "json")
    assert_allclose(data(result, "df_dx"), [[[0, 4]], [[0, 8]], [[0, 12]]])


def test_batch_axis_other_than_zero_is_a_usage_error(runner):
    result = invoke(runner, "jacobian", "-e", "x * 2", "[1, 2]", "--batch-axis", "1")
    assert_error(result, "usage", 2)


def test_batch_axis_on_a_function_mixing_samples_is_refused(runner):
    result = invoke(runner, "jacobian", "-e", "x * sum(x)", "[1, 2, 3]", "--batch-axis", "0")
    assert_error(result, "batch_mixing", 2)


def test_dtype_float32_casts_inputs_and_result(runner, tmp_path):
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--dtype", "float32",
                    "-o", str(out), "--format", "json")
    doc = report(result)
    assert doc["inputs"]["q"]["dtype"] == "float32" and doc["dtype"] == "float32"
    assert np.load(out).dtype == np.float32


def test_integer_literals_stay_integers_for_data_and_are_float64_when_differentiated(runner, tmp_path):
    func = write(tmp_path, "loop.py", "import numpy as np\n\ndef f(x, n, idx):\n"
                                      "    for _ in range(n):\n        x = np.sin(x)\n    return x[idx]\n")
    result = invoke(runner, "jacobian", func, "[1.0, 2.0, 0.5]", "n=3", "idx=[0, 2]", "--wrt", "x", "--format", "json")
    assert result.exit_code == 0, result.stderr
    x = np.array([1.0, 2.0, 0.5])
    d = np.cos(x) * np.cos(np.sin(x)) * np.cos(np.sin(np.sin(x)))
    assert_allclose(data(result, "df_dx"), np.diag(d)[[0, 2]], rtol=1e-14)
    doc = report(result)
    assert doc["inputs"]["n"]["dtype"] == "int64" and doc["inputs"]["idx"]["dtype"] == "int64"
    # typed as integers and differentiated: float64, with no warning (an integer file gets one)
    square = invoke(runner, "jacobian", "-e", "x ** 2", "[1, 2, 3]", "--format", "json")
    assert square.exit_code == 0 and "Warning" not in square.stderr, square.stderr
    assert report(square)["inputs"]["x"]["dtype"] == "float64"
    assert_allclose(data(square, "df_dx"), np.diag([2.0, 4.0, 6.0]))


def test_integer_inputs_are_differentiated_as_float64_with_a_warning(runner, tmp_path):
    np.save(tmp_path / "x.npy", np.array([1, 2, 3]))
    result = invoke(runner, "jacobian", "-e", "x ** 2", str(tmp_path / "x.npy"))
    assert result.exit_code == 0
    assert "Warning: input x holds int64 values; differentiated as float64" in result.stderr
    assert result.stdout.split() == ["2.0", "0.0", "0.0", "0.0", "4.0", "0.0", "0.0", "0.0", "6.0"]


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="long double is float64 here")
def test_long_double_inputs_are_computed_in_float64_with_one_warning(runner, tmp_path):
    np.save(tmp_path / "x.npy", np.array([1, 2], dtype=np.longdouble))
    result = invoke(runner, "jacobian", "-e", "x ** 2", str(tmp_path / "x.npy"), "--format", "json")
    doc = report(result)
    assert doc["inputs"]["x"]["dtype"] == "float64" and doc["blocks"]["df_dx"]["dtype"] == "float64"
    assert doc["blocks"]["df_dx"]["data"] == [[2.0, 0.0], [0.0, 4.0]]
    assert result.stderr == (f"Warning: input x holds {np.dtype(np.longdouble)} values; computed in float64 "
                             "(give float64 or float32 inputs, or --dtype float64 to silence this)\n")


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="long double is float64 here")
def test_a_long_double_result_is_written_as_json_numbers(runner, tmp_path):
    func = write(tmp_path, "m.py", "import numpy as np\n\ndef f(x):\n    return x.astype(np.longdouble) ** 2\n")
    result = invoke(runner, "jacobian", func, "[1, 2]", "--mode", "forward", "--format", "json")
    assert report(result)["blocks"]["df_dx"]["data"] == [[2.0, 0.0], [0.0, 4.0]]


@pytest.mark.parametrize("array", [np.array([1 + 1j, 2]), np.array([1.0, 2.0], dtype=object)])
def test_complex_and_object_inputs_are_one_usage_error_line(runner, tmp_path, monkeypatch, array):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", array, allow_pickle=True)
    for fmt in ("json", "text"):
        result = invoke(runner, "jacobian", "-e", "x ** 2", "x.npy", "--format", fmt)
        assert_error(result, "usage", 2)


@pytest.mark.parametrize("name, text", [("x.txt", "1,2,3\n"), ("x.txt", "1, 2\n3, 4\n"),
                                        ("x.dat", "# a comment\na,b\n1,2\n")])
def test_a_whitespace_text_file_with_commas_says_to_use_csv(runner, tmp_path, monkeypatch, name, text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    result = invoke(runner, "jacobian", "-e", "x ** 2", name)
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("command, x, vectors", [
    ("jvp", "[1, 2]", ["[1, nan]"]), ("vjp", "[1, 2]", ["[nan, 1]", "[2]"]), ("vjp", "[1, 2]", ["[1, 1]", "inf"]),
    ("jvp", "[[1, 2], [3, 4]]", ["[[1, 1], [-inf, 0]]"]),
])
def test_a_non_finite_vector_names_its_position(runner, tmp_path, command, x, vectors):
    func = write(tmp_path, "m.py", "import numpy as np\n\ndef f(x):\n"
                 "    return np.array([x.flat[0] * x.flat[1], x.flat[1]]), x.sum()\n")
    args = [a for v in vectors for a in ("--vector", v)]
    result = invoke(runner, command, func, x, *args)
    assert_error(result, "usage", 2)
    assert "getitem" not in result.stderr


def test_quiet_silences_warnings(runner, tmp_path):
    np.save(tmp_path / "x.npy", np.array([1, 2, 3]))
    result = invoke(runner, "jacobian", "-e", "x ** 2", str(tmp_path / "x.npy"), "-q")
    assert result.exit_code == 0 and result.stderr == ""


def test_disconnected_input_is_a_warning_and_structural_zero(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x, y):\n    return x * 2.0\n")
    result = invoke(runner, "jacobian", func, "[1, 2]", "[3]", "--format", "json")
    doc = report(result)
    assert doc["blocks"]["df_dy"]["connected"] is False
    assert doc["blocks"]["df_dy"]["data"] == [[0.0], [0.0]]
    assert doc["warnings"] == ["df_dy is structurally zero: output f does not depend on input y (no path in the "
                               "recorded computation); a common cause is a function that uses a global variable "
                               "instead of its argument"]
    assert "Warning: df_dy is structurally zero" in result.stderr


def test_strict_fails_with_exit_1_on_a_disconnected_input(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x, y):\n    return x * 2.0\n")
    result = invoke(runner, "jacobian", func, "[1, 2]", "[3]", "--strict", "--format", "text")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --strict: ") and "independent of input 1 ('y')" in lines[0]
    # as --compare, the result
    assert result.stdout == "# df_dx shape=2x2\n2.0 0.0\n0.0 2.0\n# df_dy shape=2x1\n0.0\n0.0\n"


def test_strict_passes_when_everything_is_connected(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--strict")
    assert result.exit_code == 0


def test_np_array_of_traced_values_in_a_function_file(runner, tmp_path):
    func = write(tmp_path, "m.py", "import numpy as np\n\ndef f(x):\n    return np.array([x[0] * x[1], x[0]])\n")
    result = invoke(runner, "jacobian", func, "[2, 3]", "--format", "json")
    assert report(result)["blocks"]["df_dx"]["data"] == [[3.0, 2.0], [1.0, 0.0]]


def test_function_named_g_gives_keys_dg_dx(runner, tmp_path):
    func = write(tmp_path, "m.py", "def helper(x):\n    return x\n\ndef g(x):\n    return 3.0 * x\n")
    result = invoke(runner, "jacobian", f"{func}:g", "[1, 2]", "--format", "json")
    assert list(report(result)["blocks"]) == ["dg_dx"]


def test_only_public_function_is_used_without_f(runner, tmp_path):
    func = write(tmp_path, "m.py", "def _helper(x):\n    return x\n\ndef energy(q):\n    return q ** 2\n")
    result = invoke(runner, "jacobian", func, "[1, 2]", "--format", "json")
    assert list(report(result)["blocks"]) == ["denergy_dq"]


def test_several_candidates_without_f_are_listed(runner, tmp_path):
    func = write(tmp_path, "m.py", "def a(x):\n    return x\n\ndef b(x):\n    return x\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "usage", 2)


def test_tuple_outputs_give_numbered_keys(runner):
    result = invoke(runner, "jacobian", "-e", "x * y, x + y", "x=[1, 2]", "y=3", "--format", "json")
    doc = report(result)
    assert list(doc["blocks"]) == ["df0_dx", "df0_dy", "df1_dx", "df1_dy"]
    assert doc["blocks"]["df0_dy"]["shape"] == [2] and doc["blocks"]["df0_dy"]["data"] == [1.0, 2.0]
    assert doc["blocks"]["df1_dx"]["data"] == [[1.0, 0.0], [0.0, 1.0]]


def test_full_block_shape_is_out_shape_plus_in_shape(runner, tmp_path):
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", "-e", "transpose(x) * 2", "[[1, 2, 3], [4, 5, 6]]", "-o", str(out))
    assert result.exit_code == 0
    J = np.load(out)
    assert J.shape == (3, 2, 2, 3)
    assert J[2, 1, 1, 2] == 2.0 and J[2, 1, 0, 2] == 0.0


# ---------------------------------------------------------------- hessian, grad and products


def test_hessian_of_rosenbrock_matches_closed_form(runner, inputs):
    result = invoke(runner, "hessian", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--format", "json")
    doc = report(result)
    assert doc["mode"] == "forward-over-reverse"
    assert_allclose(data(result, "d2f_dx_dx"), rosenbrock_hessian(inputs["rosen_x"]), rtol=1e-12)


def test_hessian_reverse_over_reverse_agrees(runner, inputs):
    result = invoke(runner, "hessian", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--mode", "reverse",
                    "--format", "json")
    assert report(result)["mode"] == "reverse-over-reverse"
    assert_allclose(data(result, "d2f_dx_dx"), rosenbrock_hessian(inputs["rosen_x"]), rtol=1e-12)


def test_hessian_of_logistic_wrt_weights_reads_csv_and_txt(runner, inputs):
    result = invoke(runner, "hessian", sample("logistic.py"), sample("logistic_w.npy"), sample("logistic_X.csv"),
                    sample("logistic_y.txt"), "--wrt", "w", "--format", "json")
    _, hess = logistic_parts(inputs["w"], inputs["X"], inputs["y"])
    assert list(report(result)["blocks"]) == ["d2f_dw_dw"]
    assert_allclose(data(result, "d2f_dw_dw"), hess, rtol=1e-10)


def test_hessian_blocks_for_two_inputs(runner, inputs):
    result = invoke(runner, "hessian", sample("softmax_xent.py"), sample("softmax_xent_z.npy"),
                    sample("softmax_xent_p.csv"), "--format", "json")
    _, hzz, hzp = softmax_parts(inputs["z"], inputs["p"])
    assert list(report(result)["blocks"]) == ["d2f_dz_dz", "d2f_dz_dp", "d2f_dp_dz", "d2f_dp_dp"]
    assert_allclose(data(result, "d2f_dz_dz"), hzz, rtol=1e-10, atol=1e-14)
    assert_allclose(data(result, "d2f_dz_dp"), hzp, rtol=1e-10, atol=1e-14)
    assert_allclose(data(result, "d2f_dp_dz"), hzp.T, rtol=1e-10, atol=1e-14)
    assert_allclose(data(result, "d2f_dp_dp"), np.zeros((5, 5)), atol=1e-14)


def test_hessian_rows_selection(runner, inputs):
    result = invoke(runner, "hessian", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--rows", "2",
                    "--format", "json")
    block = report(result)["blocks"]["d2f_dx_dx"]
    assert block["shape"] == [1, 6] and block["rows_evaluated"] == 1
    assert_allclose(np.array(block["data"]), rosenbrock_hessian(inputs["rosen_x"])[[2]], rtol=1e-12)


def test_hessian_of_a_vector_function_is_a_usage_error(runner):
    result = invoke(runner, "hessian", sample("robot_arm.py"), sample("robot_arm_q.npy"))
    assert_error(result, "usage", 2)


def test_grad_of_rosenbrock(runner, inputs):
    result = invoke(runner, "grad", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--format", "json")
    doc = report(result)
    assert doc["blocks"]["df_dx"]["shape"] == [6] and doc["sweeps"] == 1 and doc["mode"] == "reverse"
    assert_allclose(data(result, "df_dx"), rosenbrock_grad(inputs["rosen_x"]), rtol=1e-12)


def test_grad_text_is_one_row(runner, inputs):
    result = invoke(runner, "grad", sample("logistic.py"), sample("logistic_w.npy"), sample("logistic_X.csv"),
                    sample("logistic_y.txt"), "--wrt", "w", "--precision", "17")
    assert result.exit_code == 0
    grad, _ = logistic_parts(inputs["w"], inputs["X"], inputs["y"])
    assert_allclose([float(v) for v in result.stdout.split()], grad, rtol=1e-12)
    assert len(result.stdout.splitlines()) == 1


def test_grad_of_softmax_xent(runner, inputs):
    result = invoke(runner, "grad", sample("softmax_xent.py"), sample("softmax_xent_z.npy"),
                    sample("softmax_xent_p.csv"), "--wrt", "z", "--format", "json")
    assert_allclose(data(result, "df_dz"), softmax_parts(inputs["z"], inputs["p"])[0], rtol=1e-12, atol=1e-15)


def test_grad_of_a_vector_function_is_a_usage_error(runner):
    result = invoke(runner, "grad", sample("robot_arm.py"), sample("robot_arm_q.npy"))
    assert_error(result, "usage", 2)


def test_vjp_is_v_transposed_times_j(runner, inputs):
    v = [0.5, -1.0, 2.0]
    result = invoke(runner, "vjp", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--vector", str(v),
                    "--format", "json")
    doc = report(result)
    assert list(doc["blocks"]) == ["vjp_q"] and doc["mode"] == "reverse"
    assert_allclose(data(result, "vjp_q"), np.array(v) @ robot_arm_jacobian(inputs["q"]), rtol=1e-12)


def test_jvp_is_j_times_v(runner, inputs):
    v = [0.5, -1.0, 2.0]
    result = invoke(runner, "jvp", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--vector", str(v),
                    "--format", "json")
    assert_allclose(data(result, "jvp_f"), robot_arm_jacobian(inputs["q"]) @ v, rtol=1e-12)


def test_jvp_with_named_vectors_for_two_inputs(runner, inputs):
    vc, vk = [1.0, 0.0, 2.0], [0.0, 1.0, -1.0]
    result = invoke(runner, "jvp", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--vector", f"k={vk}",
                    "--vector", f"c={vc}", "--format", "json")
    dc, dk = kinetics_jacobians(inputs["c"], inputs["k"])
    assert_allclose(data(result, "jvp_f"), dc @ vc + dk @ vk, rtol=1e-12)


def test_jvp_vectors_from_an_npz(runner, inputs, tmp_path):
    vc, vk = np.array([1.0, 0.0, 2.0]), np.array([0.0, 1.0, -1.0])
    np.savez(tmp_path / "v.npz", c=vc, k=vk)
    result = invoke(runner, "jvp", sample("kinetics.py"), sample("kinetics_c.npy"), sample("kinetics_k.npy"),
                    "--vector", str(tmp_path / "v.npz"), "--format", "json")
    dc, dk = kinetics_jacobians(inputs["c"], inputs["k"])
    assert_allclose(data(result, "jvp_f"), dc @ vc + dk @ vk, rtol=1e-12)


def test_inputs_and_vectors_from_npz_files_mixing_unnamed_and_named_arrays(runner, inputs, tmp_path):
    np.savez(tmp_path / "in.npz", inputs["c"], k=inputs["k"])
    vc, vk = np.array([1.0, 0.0, 2.0]), np.array([0.0, 1.0, -1.0])
    np.savez(tmp_path / "v.npz", vc, k=vk)
    result = invoke(runner, "jvp", sample("kinetics.py"), str(tmp_path / "in.npz"), "--vector",
                    str(tmp_path / "v.npz"), "--format", "json")
    dc, dk = kinetics_jacobians(inputs["c"], inputs["k"])
    assert_allclose(data(result, "jvp_f"), dc @ vc + dk @ vk, rtol=1e-12)


def test_vjp_of_tuple_outputs_takes_named_vectors(runner):
    result = invoke(runner, "vjp", "-e", "x * y, x + y", "x=[1, 2]", "y=[3, 4]", "--vector", "f1=[1, 1]",
                    "--vector", "f0=[1, 0]", "--format", "json")
    doc = report(result)
    # v0 . d(xy) + v1 . d(x+y): for x it is v0*y + v1, for y it is v0*x + v1.
    assert doc["blocks"]["vjp_x"]["data"] == [4.0, 1.0]
    assert doc["blocks"]["vjp_y"]["data"] == [2.0, 1.0]


@pytest.mark.parametrize("archive", [{"f0": [1.0, 0.0], "f1": [1.0, 1.0]}, {"arr_0": [1.0, 0.0], "f1": [1.0, 1.0]}])
def test_vjp_of_tuple_outputs_takes_its_vectors_from_an_npz(runner, tmp_path, archive):
    # Named per output as the man page says (f0=, f1=), or the first positionally (np.savez(file, v0, f1=v1))
    np.savez(tmp_path / "v.npz", **{k: np.array(v) for k, v in archive.items()})
    result = invoke(runner, "vjp", "-e", "x * y, x + y", "x=[1, 2]", "y=[3, 4]", "--vector", str(tmp_path / "v.npz"),
                    "--format", "json")
    doc = report(result)
    assert doc["blocks"]["vjp_x"]["data"] == [4.0, 1.0]  # v0 * y + v1
    assert doc["blocks"]["vjp_y"]["data"] == [2.0, 1.0]  # v0 * x + v1


@pytest.mark.parametrize("command, arrays, more", [
    ("hvp", {"x": [1.0, 0.0]}, ("--vector", "[0, 1]")),  # an npz's vector, then one more
    ("jvp", {"arr_0": [1.0, 0.0], "arr_1": [0.0, 1.0]}, ()),  # two unnamed vectors for one input
])
def test_too_many_vectors_from_an_npz_is_a_usage_error(runner, tmp_path, command, arrays, more):
    np.savez(tmp_path / "v.npz", **{k: np.array(v) for k, v in arrays.items()})
    result = invoke(runner, command, "-e", "sum(x ** 3)" if command == "hvp" else "x ** 2", "x=[1, 2]",
                    "--vector", str(tmp_path / "v.npz"), *more)
    assert_error(result, "usage", 2)
    assert "2 vectors given for 1 differentiated input (x)" in result.stderr


@pytest.mark.parametrize("command, vectors, labels", [
    ("grad", (), {"df_dx": ("f", "x"), "df_dy": ("f", "y")}),
    ("vjp", ("--vector", "[1, 0]"), {"vjp_x": ("f", "x"), "vjp_y": ("f", "y")}),
    ("hvp", ("--vector", "[1, 0]", "--vector", "[0, 1]"), {"hvp_x": ("f", "x"), "hvp_y": ("f", "y")}),
    ("jvp", ("--vector", "[1, 0]", "--vector", "[0, 1]"), {"jvp_f": ("f", None)}),
])
def test_vector_blocks_name_what_they_are_the_derivative_of(runner, command, vectors, labels):
    expr = "sum(x * y) ** 2" if command in ("grad", "hvp") else "x * y ** 2"
    result = invoke(runner, command, "-e", expr, "x=[1, 2]", "y=[3, 4]", *vectors, "--format", "json")
    assert result.exit_code == 0, result.stderr
    blocks = report(result)["blocks"]
    assert {k: (b["output"], b["input"]) for k, b in blocks.items()} == labels
    one = invoke(runner, "jvp", "-e", "x ** 2", "x=[1, 2]", "--vector", "[1, 0]", "--format", "json")
    assert (report(one)["blocks"]["jvp_f"]["output"], report(one)["blocks"]["jvp_f"]["input"]) == ("f", "x")


def test_jvp_of_tuple_outputs_gives_one_block_per_output(runner):
    result = invoke(runner, "jvp", "-e", "x * y, x + y", "x=[1, 2]", "y=[3, 4]", "--vector", "[1, 0]",
                    "--vector", "[0, 1]", "--format", "text")
    assert result.exit_code == 0
    assert result.stdout == "# jvp_f0 shape=2\n3.0 2.0\n# jvp_f1 shape=2\n1.0 1.0\n"


def test_hvp_is_h_times_v(runner, inputs):
    v = np.arange(6.0)
    result = invoke(runner, "hvp", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--vector",
                    str(v.tolist()), "--format", "json")
    assert_allclose(data(result, "hvp_x"), rosenbrock_hessian(inputs["rosen_x"]) @ v, rtol=1e-12)


def test_hvp_vector_from_a_file(runner, inputs, tmp_path):
    v = np.linspace(-1, 1, 3)
    np.save(tmp_path / "v.npy", v)
    result = invoke(runner, "hvp", sample("logistic.py"), sample("logistic_w.npy"), sample("logistic_X.csv"),
                    sample("logistic_y.txt"), "--wrt", "w", "--vector", str(tmp_path / "v.npy"), "--format", "json")
    _, hess = logistic_parts(inputs["w"], inputs["X"], inputs["y"])
    assert_allclose(data(result, "hvp_w"), hess @ v, rtol=1e-10)


def test_vector_of_the_wrong_size_is_a_usage_error(runner):
    result = invoke(runner, "jvp", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--vector", "[1, 2]")
    assert_error(result, "usage", 2)
    # with several inputs the message names the input, not "Entry 0 in v"
    two = invoke(runner, "jvp", "-e", "x * y", "x=[1, 2]", "y=[3, 4]", "--vector", "[1, 0]", "--vector", "[1, 0, 0]")
    assert_error(two, "usage", 2)


def test_vector_with_an_axis_of_length_1_is_reshaped(runner):
    flat = invoke(runner, "jvp", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--vector", "[1, 0, 0]")
    row = invoke(runner, "jvp", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--vector", "[[1, 0, 0]]")
    assert flat.exit_code == 0 and row.exit_code == 0, row.stderr
    assert row.stdout == flat.stdout


def test_missing_vector_is_a_usage_error(runner):
    result = invoke(runner, "jvp", sample("robot_arm.py"), sample("robot_arm_q.npy"))
    assert_error(result, "usage", 2)


def test_vector_for_an_unknown_name_is_a_usage_error(runner):
    result = invoke(runner, "jvp", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--vector", "z=[1, 2, 3]")
    assert_error(result, "usage", 2)


def test_too_few_vectors_is_a_usage_error(runner):
    result = invoke(runner, "hvp", "-e", "sum(x * y)", "x=[1, 2]", "y=[3, 4]", "--vector", "x=[1, 0]")
    assert_error(result, "usage", 2)


def test_too_many_vectors_is_a_usage_error(runner):
    result = invoke(runner, "jvp", "-e", "x * 2", "[1, 2]", "--vector", "[1, 0]", "--vector", "[0, 1]")
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("expression", ["sin(x)", "concatenate([sin(x), cos(x)])"])
def test_vjp_vector_given_twice_for_one_output_says_so(runner, expression):
    # Two vectors of 3 fit an output of 6 when stacked: refused all the same, not read as one vector.
    result = invoke(runner, "vjp", "-e", expression, "x=[1, 2, 3]", "--vector", "[1, 1, 1]", "--vector",
                    "[1, 0, 0]")
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("vectors", [("[1, 0]",), ("[1, 0]",) * 3])
def test_vjp_vector_count_for_tuple_outputs_names_the_outputs(runner, vectors):
    args = [a for v in vectors for a in ("--vector", v)]
    result = invoke(runner, "vjp", "-e", "x * y, x + y", "x=[1, 2]", "y=[3, 4]", *args)
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("given", [("f1=1.0",), ("f2=1.0",), ("f0=[1, 1]", "f2=1")])
def test_vjp_of_a_tuple_names_the_output_whose_vector_is_missing(runner, tmp_path, given):
    func = write(tmp_path, "pair.py", "import numpy as np\ndef f(x):\n    return x * 2, x.sum()\n")
    result = invoke(runner, "vjp", func, "[1.0, 2.0]", *(a for v in given for a in ("--vector", v)))
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("command", ["jvp", "hvp"])
def test_jvp_and_hvp_vector_given_twice_for_one_input_says_what_to_do(runner, command):
    result = invoke(runner, command, "-e", "sum(x ** 3)", "x=[1, 2]", "--vector", "[1, 0]", "--vector", "[0, 1]")
    assert_error(result, "usage", 2)


# ---------------------------------------------------------------- expressions


@pytest.mark.parametrize("name", ["e", "pi", "inf", "nan", "sin", "np"])
def test_an_input_named_after_a_constant_or_function_of_the_expression_says_what_the_name_is(runner, name):
    result = invoke(runner, "jacobian", "-e", "e * x + sin(x)", "x=[1.0, 2.0]", f"{name}=2.0")
    assert_error(result, "usage", 2)


def test_an_archive_array_named_after_a_constant_of_the_expression_says_what_the_name_is(runner, tmp_path):
    np.savez(tmp_path / "in.npz", x=np.ones(2), e=np.ones(2))
    result = invoke(runner, "jacobian", "-e", "x * 2", str(tmp_path / "in.npz"))
    assert_error(result, "usage", 2)


def test_an_unknown_input_of_an_expression_names_the_expression(runner):
    result = invoke(runner, "jacobian", "-e", "x * y", "x=1.0", "z=2.0")
    assert_error(result, "usage", 2)


def test_expression_inputs_bind_positionally_in_order_of_appearance(runner):
    result = invoke(runner, "grad", "-e", "sum(sin(x) * y)", "[0, 1]", "[2, 3]", "--format", "json")
    doc = report(result)
    assert doc["function"] == {"kind": "expression", "text": "sum(sin(x) * y)", "name": "f"}
    assert_allclose(doc["blocks"]["df_dx"]["data"], np.cos([0, 1]) * [2, 3], rtol=1e-14)
    assert_allclose(doc["blocks"]["df_dy"]["data"], np.sin([0, 1]), rtol=1e-14)


def test_expression_with_forbidden_code_is_a_usage_error(runner):
    result = invoke(runner, "jacobian", "-e", "__import__('os').system('echo hi')", "x=1")
    assert_error(result, "usage", 2)


def test_expression_syntax_error_is_one_line(runner):
    result = invoke(runner, "jacobian", "-e", "x +", "x=1")
    assert_error(result, "usage", 2)


def test_expression_unknown_input_name(runner):
    result = invoke(runner, "jacobian", "-e", "x * 2", "y=1")
    assert_error(result, "usage", 2)


def test_nonfinite_values_are_strings_in_json_and_numpy_warnings_are_reported(runner):
    result = invoke(runner, "jacobian", "-e", "sqrt(x), -sqrt(y)", "x=0", "y=-1", "--format", "json")
    doc = report(result)
    assert doc["blocks"]["df0_dx"]["data"] == "inf" and doc["blocks"]["df1_dy"]["data"] == "nan"
    assert doc["blocks"]["df0_dy"]["data"] == 0.0
    assert "RuntimeWarning: invalid value encountered in sqrt" in doc["warnings"]
    assert "Warning: RuntimeWarning: invalid value encountered in sqrt" in result.stderr
    assert "sweeps.py" not in result.stderr and "tape.py" not in result.stderr


# ---------------------------------------------------------------- output files


def test_output_npy_holds_the_full_block(runner, tmp_path, inputs):
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == f"wrote {out}: df_dq (3, 3)\n"
    assert_allclose(np.load(out, allow_pickle=False), robot_arm_jacobian(inputs["q"]), rtol=1e-12)


def test_output_npz_holds_every_block_and_metadata(runner, tmp_path, inputs):
    out = tmp_path / "J.npz"
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "-o", str(out),
                    "--rows", "0:2")
    assert result.exit_code == 0
    with np.load(out, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["__meta__", "df_dc", "df_dk"]
        meta = json.loads(str(archive["__meta__"]))
        dc, dk = kinetics_jacobians(inputs["c"], inputs["k"])
        assert_allclose(archive["df_dc"], dc[:2], rtol=1e-12)
        assert_allclose(archive["df_dk"], dk[:2], rtol=1e-12)
    assert meta["schema"] == 1 and meta["command"] == "jacobian" and meta["jaccli"] == "0.1.0"
    assert meta["function"]["name"] == "f" and meta["function"]["kind"] == "file"
    assert meta["inputs"]["c"]["shape"] == [3] and meta["mode"] == "reverse"
    assert meta["blocks"]["df_dc"]["rows"] == [0, 1] and meta["blocks"]["df_dc"]["cols"] is None
    assert meta["argv"][0] == "jacobian" and "--rows" in meta["argv"]
    assert "data" not in meta["blocks"]["df_dc"]


def test_output_csv_holds_the_matrix(runner, tmp_path, inputs):
    out = tmp_path / "J.csv"
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:3",
                    "-o", str(out))
    assert result.exit_code == 0
    assert_allclose(np.loadtxt(out, delimiter=","), heat_pde_jacobian(inputs["u"])[:3], rtol=1e-15)


def test_output_txt_keeps_every_digit_whatever_the_precision(runner, tmp_path):
    # --precision is for the table view (issue 41): a file reads back exactly.
    out = tmp_path / "J.txt"
    result = invoke(runner, "jacobian", "-e", "x / 3", "[1, 2]", "-o", str(out), "--precision", "3")
    assert result.exit_code == 0
    assert out.read_text() == f"{1 / 3!r} 0.0\n0.0 {1 / 3!r}\n"


def test_output_csv_of_a_matrix_output_is_flattened_to_m_by_n(runner, tmp_path):
    out = tmp_path / "J.csv"
    result = invoke(runner, "jacobian", "-e", "x * 2", "[[1, 2], [3, 4]]", "-o", str(out))
    assert result.exit_code == 0
    assert_allclose(np.loadtxt(out, delimiter=","), 2 * np.eye(4))


def test_output_json_holds_blocks_and_meta(runner, tmp_path, inputs):
    out = tmp_path / "H.json"
    result = invoke(runner, "hessian", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "-o", str(out))
    assert result.exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["meta"]["command"] == "hessian" and doc["meta"]["schema"] == 1
    assert doc["blocks"]["d2f_dx_dx"]["shape"] == [6, 6]
    assert_allclose(doc["blocks"]["d2f_dx_dx"]["data"], rosenbrock_hessian(inputs["rosen_x"]), rtol=1e-12)


def test_several_blocks_in_npy_is_refused_before_any_work(runner, tmp_path):
    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "-o", str(out))
    assert_error(result, "usage", 2)
    assert out.read_bytes() == b"precious"


@pytest.mark.parametrize("command, target, extra", [
    ("jacobian", "J.npy", ()), ("hessian", "H.csv", ()), ("grad", "g.txt", ()),
    ("vjp", "v.npy", ("--vector", "[1]")), ("hvp", "h.npy", ("--vector", "[1]", "--vector", "[1]")),
    ("jacobian", "J.csv", ("--batch-axis", "0", "--wrt", "x")),
])
def test_a_target_that_cannot_hold_the_result_is_refused_before_f_runs(runner, tmp_path, command, target, extra):
    # Refused before f runs: a slow f, or one with side effects, would run for nothing.
    func = write(tmp_path, "m.py", "import numpy as np\n\ndef f(x, y):\n    print('F RAN')\n"
                                   "    return np.sum(x * y)\n")
    result = invoke(runner, command, func, "[1]", "[2]", *extra, "-o", str(tmp_path / target))
    assert_error(result, "usage", 2)
    assert "F RAN" not in result.stderr and not (tmp_path / target).exists()


@pytest.mark.parametrize("command, extra", [("jacobian", ()), ("jvp", ("--vector", "[1, 1]"))])
def test_a_tuple_output_in_npy_says_npz_and_not_wrt(runner, tmp_path, command, extra):
    func = write(tmp_path, "m.py", "def f(x):\n    return x * 2.0, x.sum()\n")
    result = invoke(runner, command, func, "[1, 2]", *extra, "-o", str(tmp_path / "J.npy"))
    assert_error(result, "usage", 2)
    assert "--wrt" not in result.stderr and not (tmp_path / "J.npy").exists()


def test_unknown_output_extension_is_a_usage_error(runner, tmp_path):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "-o", str(tmp_path / "J.mat"))
    assert_error(result, "usage", 2)


def test_output_into_a_missing_directory_is_a_usage_error(runner, tmp_path):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "-o", str(tmp_path / "nope" / "J.npy"))
    assert_error(result, "usage", 2)


def test_batched_result_to_csv_is_refused(runner, tmp_path):
    result = invoke(runner, "jacobian", "-e", "x * 2", "[[1], [2]]", "--batch-axis", "0",
                    "-o", str(tmp_path / "J.csv"))
    assert_error(result, "usage", 2)


def test_format_json_with_output_prints_the_report_without_data(runner, tmp_path):
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", str(out),
                    "--format", "json")
    doc = report(result)
    assert doc["output"] == str(out) and "data" not in doc["blocks"]["df_dq"]
    assert "write_s" in doc["timings"]


def test_an_error_in_jaccli_itself_is_exit_70_and_asks_for_a_report(runner, tmp_path, monkeypatch):
    # A bug in jaccli's own code is not the function's failure (exit 3). Here: a chunk size of the
    # wrong type, which the evaluator's loop over chunks fails on.
    from jaccli.api.evaluator import Evaluator

    monkeypatch.setattr(Evaluator, "chunk", lambda self, needed, per_seed_elems: "3")
    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--mode", "reverse",
                    "-o", str(out))
    assert_error(result, "internal", 70)
    assert out.read_bytes() == b"precious"
    debug = invoke(runner, "--debug", "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"),
                   "--mode", "reverse")
    assert debug.exit_code == 70 and "Traceback" in debug.stderr and "_sweep_blocks" in debug.stderr


@pytest.mark.parametrize("body", ["return np.linalg.slogdet(np.outer(x, x))[1]"], ids=["singular-matrix"])
def test_an_error_that_the_input_or_f_causes_in_jaccli_code_stays_exit_3(runner, tmp_path, body):
    # A LinAlgError raised in jaccli's code (a rule at a singular matrix) comes from f or its input, not
    # from a bug in jaccli. (A ragged list of outputs, [x, x[:2]], was the other case: it is a tuple now.)
    func = write(tmp_path, "m.py", f"import numpy as np\n\ndef f(x):\n    {body}\n")
    result = invoke(runner, "jacobian", func, "[1, 2, 3]")
    assert_error(result, "function_failed", 3)
    assert "internal error" not in result.stderr


def test_an_error_state_that_raises_in_the_function_file_does_not_break_the_sweeps(runner, tmp_path):
    # np.seterr(all="raise") is for f's arithmetic; sqrt'(0) = inf in a rule is reported, not raised.
    func = write(tmp_path, "m.py", "import numpy as np\nnp.seterr(all='raise')\n\n"
                                   "def f(x):\n    return np.sqrt(x) * 2.0\n")
    saved = np.geterr()
    try:
        result = invoke(runner, "jacobian", func, "[0, 4]", "--format", "json")
    finally:
        np.seterr(**saved)  # the module set it for this whole process (the CLI's own is one command)
    assert result.exit_code == 0, result.stderr
    assert_allclose(data(result, "df_dx"), [[np.inf, 0.0], [0.0, 0.5]])
    assert "non-finite" in result.stderr or "inf" in result.stderr


def test_error_while_evaluating_leaves_the_target_unchanged(runner, tmp_path, monkeypatch):
    import jaccli.cli.commands.run as run_module

    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")

    def fail(outcome):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "evaluate", fail)
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", str(out))
    assert_error(result, "interrupted", 130)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]


# ---------------------------------------------------------------- memory budget and streaming


def test_large_result_is_streamed_to_npy_and_equals_the_in_memory_one(runner, tmp_path, inputs):
    small, big = tmp_path / "small.npy", tmp_path / "big.npy"
    base = ("jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"))
    assert invoke(runner, *base, "-o", str(small)).exit_code == 0
    result = invoke(runner, *base, "-o", str(big), "--max-memory", "2KiB", "--format", "json")
    doc = report(result)
    assert doc["streamed"] is True and doc["sweeps"] > 1
    assert "(streamed)" in result.stderr
    assert_allclose(np.load(big), np.load(small), rtol=0)
    assert_allclose(np.load(big), heat_pde_jacobian(inputs["u"]), rtol=1e-12)


def test_a_streamed_result_the_disk_cannot_hold_points_to_sparse(runner, tmp_path, monkeypatch):
    import shutil

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage._replace(free=1000))
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o", str(out),
                    "--max-memory", "2KiB")
    assert_error(result, "resource_limit", 4)
    assert "free some space or write elsewhere; or, if the matrix is sparse, compute it with --sparse " \
           f"(-o {tmp_path / 'J.npz'}), which writes only its nonzeros" in result.stderr
    assert not out.exists()


def test_streaming_keeps_the_full_shape_of_matrix_outputs(runner, tmp_path):
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", "-e", "x ** 2", "[[1, 2, 3], [4, 5, 6]]", "-o", str(out),
                    "--max-memory", "200")
    assert result.exit_code == 0 and "(streamed)" in result.stderr
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=float)
    assert_allclose(np.load(out), (2 * x.reshape(-1) * np.eye(6)).reshape(2, 3, 2, 3))


def test_streamed_result_is_not_shown_but_the_json_report_is(runner, tmp_path):
    base = ("jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o", str(tmp_path / "J.npy"),
            "--max-memory", "4KiB")
    table = invoke(runner, *base, "--format", "table")
    assert table.exit_code == 0 and table.stdout == ""
    assert "Note: the result was streamed to" in table.stderr
    doc = report(invoke(runner, *base, "--format", "json"))
    assert doc["streamed"] is True and "data" not in doc["blocks"]["df_du"]


@pytest.mark.parametrize("rows, count", [((), 32), (("--rows", "3:20"), 17)])
def test_a_streamed_json_report_counts_the_rows_written(runner, tmp_path, rows, count):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), *rows, "-o",
                    str(tmp_path / "J.npy"), "--max-memory", "4KiB", "--format", "json")
    doc = report(result)
    assert doc["streamed"] is True and doc["blocks"]["df_du"]["rows_evaluated"] == count


def test_quiet_output_file_prints_nothing(runner, tmp_path):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o",
                    str(tmp_path / "J.npy"), "-q")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""


def test_streaming_a_selection(runner, tmp_path, inputs):
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "3:20",
                    "--cols", "0:10", "-o", str(out), "--max-memory", "300")
    assert result.exit_code == 0 and "(streamed)" in result.stderr
    assert_allclose(np.load(out), heat_pde_jacobian(inputs["u"])[3:20, :10], rtol=1e-12)


BATCHED = ("import numpy as np\n\ndef f(X):\n    return np.stack([np.sin(X[:, :2]) * X[:, 2:3], X[:, 1:3] ** 2], "
           "axis=1)\n\ndef s(X):\n    return (X ** 3).sum(1) * X[:, 0]\n")


@pytest.mark.parametrize("selection", [(), ("--rows", "1:3"), ("--rows", "0,3", "--cols", "2,0")])
def test_per_sample_jacobians_over_the_memory_budget_are_streamed(runner, tmp_path, selection):
    (tmp_path / "b.py").write_text(BATCHED)
    X = np.random.default_rng(1).standard_normal((7, 3))
    np.save(tmp_path / "X.npy", X)
    base = ("jacobian", str(tmp_path / "b.py"), str(tmp_path / "X.npy"), "--batch-axis", "0", *selection)
    assert invoke(runner, *base, "-o", str(tmp_path / "ref.npy")).exit_code == 0
    result = invoke(runner, *base, "-o", str(tmp_path / "J.npy"), "--max-memory", "200", "--format", "json")
    doc = report(result)
    assert doc["streamed"] is True and doc["sweeps"] > 1
    streamed = np.load(tmp_path / "J.npy")
    assert_array_equal(streamed, np.load(tmp_path / "ref.npy"))
    # per sample b: d f[b, i, k] / d X[b, j], from central differences of each sample alone
    def one_sample(x):
        return np.concatenate([np.sin(x[:2]) * x[2], x[1:3] ** 2])

    want = np.stack([central_diff(one_sample, X[b]) for b in range(7)])
    if selection:
        want = want[:, [1, 2]] if selection[1] == "1:3" else want[:, [0, 3]][:, :, [2, 0]]
    else:
        want = want.reshape(7, 2, 2, 3)
    assert_allclose(streamed, want, rtol=1e-6, atol=1e-8)


def test_per_sample_hessians_over_the_memory_budget_are_streamed(runner, tmp_path):
    (tmp_path / "b.py").write_text(BATCHED)
    X = np.random.default_rng(2).standard_normal((6, 3))
    np.save(tmp_path / "X.npy", X)
    out = tmp_path / "H.npy"
    result = invoke(runner, "hessian", f"{tmp_path / 'b.py'}:s", str(tmp_path / "X.npy"), "--batch-axis", "0",
                    "-o", str(out), "--max-memory", "100")
    assert result.exit_code == 0 and "(streamed)" in result.stderr
    # s per sample: (sum x^3) x0; H = 6 diag(x) x0 + 3 (x^2 e0^T + e0 (x^2)^T)
    want = np.stack([6 * np.diag(x) * x[0] + 3 * (np.outer(x ** 2, np.eye(3)[0]) + np.outer(np.eye(3)[0], x ** 2))
                     for x in X])
    assert_allclose(np.load(out), want, rtol=1e-13, atol=1e-13)


def test_a_single_row_per_sample_cannot_be_streamed(runner, tmp_path):
    (tmp_path / "b.py").write_text(BATCHED)
    np.save(tmp_path / "X.npy", np.ones((40, 3)))
    result = invoke(runner, "jacobian", f"{tmp_path / 'b.py'}:s", str(tmp_path / "X.npy"), "--batch-axis", "0",
                    "-o", str(tmp_path / "J.npy"), "--max-memory", "100")
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("extra", [("--rows", "3"), ("--rows", "1", "--batch-axis", "0")])
def test_a_single_row_selected_cannot_be_streamed_either(runner, tmp_path, extra):
    np.save(tmp_path / "X.npy", np.linspace(0.5, 1.5, 300).reshape(3, 100))
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", "-e", "sin(x) * x[..., :1]", str(tmp_path / "X.npy"), *extra, "-o", str(out),
                    "--max-memory", "1KiB")
    assert_error(result, "usage", 2)
    assert not out.exists()
    two = invoke(runner, "jacobian", "-e", "sin(x) * x[..., :1]", str(tmp_path / "X.npy"), "--rows", "1:3",
                 "-o", str(out), "--max-memory", "1KiB")
    assert two.exit_code == 0 and "(streamed)" in two.stderr


def test_failed_stream_leaves_the_target_unchanged(runner, tmp_path, monkeypatch):
    from jaccli.io.writers import NpyStreamWriter

    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")
    calls = []

    def write(self, start, block):
        calls.append(start)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return original(self, start, block)

    original = NpyStreamWriter.write
    monkeypatch.setattr(NpyStreamWriter, "write", write)
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o", str(out),
                    "--max-memory", "1KiB")
    assert_error(result, "function_failed", 3)
    assert "disk on fire" in result.stderr  # the function's own words, passed on
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]


def test_large_result_without_a_file_says_how_large_and_what_to_do(runner):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--max-memory", "1KiB")
    assert_error(result, "resource_limit", 4)


def test_large_result_to_npz_cannot_stream(runner, tmp_path):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--max-memory", "1KiB",
                    "-o", str(tmp_path / "J.npz"))
    assert_error(result, "resource_limit", 4)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("size", ["lots", "0", "-5M", "1XB"])
def test_bad_max_memory_is_a_usage_error(runner, size):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "--max-memory", size)
    assert_error(result, "usage", 2)


# ---------------------------------------------------------------- stdout formats


def test_table_format_has_header_labels_and_no_escape_codes_in_a_pipe(runner):
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--format", "table")
    assert result.exit_code == 0 and result.stderr == ""
    out = result.stdout
    assert "\x1b[" not in out
    # Issue 41: a header of two lines in words users know; --stats adds the details.
    lines = out.splitlines()
    assert lines[0].startswith("Jacobian of f in ") and lines[0].endswith("kinetics.py with respect to c (3,), k (3,)")
    assert lines[1].startswith("  df_dc (3, 3), df_dk (3, 3) float64, complete; 1 sweep in reverse mode; ")
    assert lines[2].startswith("╭─ df_dc")
    for fragment in ("df_dc  shape=(3, 3)", "df_dk  shape=(3, 3)", "f[2]", "c[0]", "k[1]"):
        assert fragment in out, fragment
    stats = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--format", "table",
                   "--stats").stdout
    for fragment in ("inputs:", "c (3,) float64, k (3,) float64", "mode:", "evaluated df_dc:", "3 of 3 rows"):
        assert fragment in stats, fragment


def test_table_header_says_which_rows_and_columns_and_diagonal_in_words(runner):
    result = invoke(runner, "jacobian", "-e", "sin(x)", "[1, 2, 3]", "--rows", "0:2", "--format", "table")
    header = " ".join(result.stdout.split("╭")[0].split())
    assert "df_dx (2, 3) float64, 2 of 3 rows; 1 sweep in forward mode (elementwise: the diagonal)" in header
    assert "mode: diagonal" not in result.stdout and "0 of 3 columns" not in result.stdout


def test_table_header_of_an_empty_result_says_nothing_was_left_to_compute(runner):
    result = invoke(runner, "jacobian", "-e", "sin(x)", "x=[]", "--format", "table")
    header = " ".join(result.stdout.split("╭")[0].split())
    assert "df_dx (0, 0) float64, complete; no sweep (nothing left to compute);" in header
    assert "already computed" not in header


def test_table_uses_the_terminals_height(runner):
    tall = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--color", "always",
                  env={"LINES": "60"})
    assert "f[15]" in tall.stdout and "showing 32 of 32 rows" in tall.stdout  # every row (not every column)
    short = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--color", "always",
                   env={"LINES": "20"})
    assert "showing 10 of 32 rows" in short.stdout


def test_table_is_the_default_on_a_terminal(runner, monkeypatch):
    import jaccli.cli.render.colour as colour_module

    monkeypatch.setattr(colour_module, "_is_terminal", lambda file: True)
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"))
    assert result.exit_code == 0 and "df_dq  shape=(3, 3)" in result.stdout and "q[2]" in result.stdout


def test_table_of_a_large_matrix_is_truncated_in_the_middle(runner):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--format", "table")
    assert result.exit_code == 0
    assert "showing 20 of 32 rows" in result.stdout and "f[31]" in result.stdout and "f[15]" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_table_labels_unravel_nd_indices(runner):
    result = invoke(runner, "jacobian", "-e", "x * 2", "[[1, 2], [3, 4]]", "--format", "table")
    assert "f[1,0]" in result.stdout and "x[0,1]" in result.stdout


def test_table_of_a_gradient_lists_input_elements(runner):
    result = invoke(runner, "grad", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--format", "table")
    assert result.exit_code == 0 and "x[5]" in result.stdout and "Gradient of f in" in result.stdout


def test_table_of_batched_blocks_shows_a_few_samples(runner):
    result = invoke(runner, "jacobian", "-e", "x * 2", "[[1], [2], [3], [4], [5], [6]]", "--batch-axis", "0",
                    "--format", "table")
    assert result.exit_code == 0
    assert "df_dx[3]" in result.stdout and "df_dx[4]" not in result.stdout
    assert "showing 4 of 6 samples" in result.stdout


def test_labels_of_batched_blocks_name_the_sample_too(runner, tmp_path):
    # Entries of panel df_dx[2] are d f[2,0] / d x[2,0]: their labels name the sample too.
    x = "[[0.1, 0.2], [0.3, 0.4], [0.5, 0.0]]"
    table = invoke(runner, "jacobian", "-e", "log(x) * 3.0", x, "--batch-axis", "0", "--format", "table").stdout
    panel = table[table.index("df_dx[2]"):]
    assert "x[2,0]" in panel and "x[2,1]" in panel and "f[2,0]" in panel and "f[2,1]" in panel
    assert "x[0,0]" not in panel and "f[0,0]" not in panel
    doc = json.loads(invoke(runner, "jacobian", "-e", "log(x) * 3.0", x, "--batch-axis", "0", "--format", "json",
                            "--fail-on-nonfinite").stdout)
    assert doc["nonfinite"][0]["labels"] == ["f[2,1], x[2,1]"]
    np.save(tmp_path / "ref.npy", np.zeros((3, 2, 2)))
    doc = json.loads(invoke(runner, "jacobian", "-e", "tanh(x) * 3.0", x, "--batch-axis", "0", "--compare",
                            str(tmp_path / "ref.npy"), "--format", "json").stdout)
    worst = doc["compare"]["worst"]
    assert worst and all(w["label"] == "f[{0},{1}], x[{0},{2}]".format(*w["index"]) for w in worst)
    doc = report(invoke(runner, "check", "-e", "tanh(x) * 3.0", x, "--batch-axis", "0", "--format", "json"))
    labels = {(w["sample"], w["row"], w["col"]): w["label"] for w in doc["check"]["worst"]}
    assert labels and all(label == f"f[{s},{r}], x[{s},{c}]" for (s, r, c), label in labels.items())
    scalar = invoke(runner, "jacobian", "-e", "x * 2.0", "[1.0, 2.0, 3.0]", "--batch-axis", "0", "--format",
                    "table").stdout  # one element per sample: x[2], not x
    assert "x[2]" in scalar[scalar.index("df_dx[2]"):]


def test_heatmap_table_renders(runner):
    result = invoke(runner, "hessian", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--format", "table",
                    "--heatmap", "--no-color")
    assert result.exit_code == 0 and "colour: |value|/" in result.stdout and "\x1b[" not in result.stdout


def test_csv_format_on_stdout(runner, inputs):
    result = invoke(runner, "jacobian", sample("mlp.py"), sample("mlp_x.npy"), "--format", "csv", "--precision", "17")
    assert result.exit_code == 0
    assert_allclose(np.loadtxt(result.stdout.splitlines(), delimiter=","), mlp_jacobian(inputs["mlp_x"]), rtol=1e-14)


def test_csv_of_several_blocks_reads_block_by_block_with_numpy(runner):
    import csv
    import io
    import re

    args = ("jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"))
    expected = {key: np.array(block["data"]) for key, block in report(invoke(runner, *args, "--format", "json"))
                ["blocks"].items()}
    text = invoke(runner, *args, "--format", "csv").stdout
    # A header line is one CSV field: no comma inside it for a reader that does not skip comments.
    headers = [row for row in csv.reader(io.StringIO(text)) if row[0].startswith("#")]
    assert [len(row) for row in headers] == [1, 1]
    parts = re.split(r"^(# .*)\n", text, flags=re.MULTILINE)[1:]
    assert len(parts) == 4
    for header, body in zip(parts[::2], parts[1::2]):
        key, shape = re.fullmatch(r"# (\w+) shape=(\d+(?:x\d+)*)", header).groups()
        block = np.loadtxt(io.StringIO(header + "\n" + body), delimiter=",", comments="#", ndmin=2)
        assert_allclose(block.reshape([int(n) for n in shape.split("x")]), expected[key], rtol=1e-5)
    # The whole output, comments skipped, is the blocks' rows one after the other.
    assert np.genfromtxt(io.StringIO(text), delimiter=",", comments="#").shape == (6, 3)


def test_text_of_several_blocks_has_headers(runner):
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--format", "text")
    lines = result.stdout.splitlines()
    assert lines[0] == "# df_dc shape=3x3" and lines[4] == "# df_dk shape=3x3"


def test_precision_limits_digits_of_the_table(runner):
    result = invoke(runner, "jacobian", "-e", "x / 3", "[1]", "--precision", "2", "--format", "table")
    assert " 0.33 " in result.stdout and "0.333" not in result.stdout


def test_precision_out_of_range_is_a_usage_error(runner):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "--precision", "0")
    assert_error(result, "usage", 2)


def test_json_report_has_every_documented_key(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format", "json")
    doc = report(result)
    assert set(doc) == {"schema", "jaccli", "command", "argv", "function", "inputs", "wrt", "dtype", "batch_axis",
                        "chunk_size", "mode", "mode_requested", "blocks", "sweeps", "seeds", "streamed", "output",
                        "timings", "warnings", "nonfinite", "nonfinite_origin", "kinks", "compare", "strict",
                        "passed"}
    assert doc["nonfinite"] == [] and doc["nonfinite_origin"] is None and doc["compare"] is None
    assert doc["kinks"] == []
    assert doc["strict"] is None
    assert doc["passed"] is None
    assert doc["schema"] == 1 and doc["command"] == "jacobian" and doc["output"] is None
    assert doc["function"]["kind"] == "file" and doc["function"]["name"] == "f"
    assert doc["inputs"] == {"q": {"shape": [3], "dtype": "float64", "differentiated": True}}
    block = doc["blocks"]["df_dq"]
    assert set(block) == {"kind", "output", "input", "shape", "full_shape", "dtype", "rows", "cols", "data",
                          "rows_evaluated", "cols_evaluated", "connected"}
    assert block["kind"] == "jacobian" and block["output"] == "f" and block["input"] == "q"
    assert doc["sweeps"] == 1 and doc["seeds"] == 3 and doc["streamed"] is False
    assert set(doc["timings"]) == {"load_s", "record_s", "evaluate_s", "total_s"}
    assert doc["warnings"] == [] and doc["mode"] == "reverse" and doc["chunk_size"] == "auto"


@pytest.mark.parametrize("command, extra", [("jacobian", ()), ("hessian", ()), ("grad", ()),
                                            ("jvp", ("--vector", "[1, 0]")), ("vjp", ("--vector", "1")),
                                            ("hvp", ("--vector", "[1, 0]"))])
def test_every_command_prints_one_json_object(runner, command, extra):
    result = invoke(runner, command, "-e", "sum(x ** 3)", "[1, 2]", *extra, "--format", "json")
    doc = report(result)
    assert doc["schema"] == 1 and doc["command"] == command and doc["blocks"]
    assert len(result.stdout.strip().splitlines()) == 1


def test_stats_go_to_stderr(runner):
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:4", "--stats",
                    "--format", "json")
    assert json.loads(result.stdout)["blocks"]["df_du"]["rows_evaluated"] == 4
    stats = result.stderr.splitlines()
    assert stats[0] == "stats: df_du: 4 of 32 rows, 0 of 32 columns"
    assert stats[1] == "stats: sweeps: 1, seeds: 4, chunk size: auto, mode: reverse, path: recording"
    assert stats[2].startswith("stats: time: load ") and "total" in stats[2]


def test_progress_observer_sees_the_sweeps_of_a_command(runner, monkeypatch):

    import jaccli.cli.commands.run as run_module
    from jaccli.engine import observing

    recorder = Recorder()
    seen = recorder.events
    monkeypatch.setattr(run_module, "observed", lambda out: observing(recorder))
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--chunk-size", "8",
                    "--rows", "0:16")
    assert result.exit_code == 0
    assert seen[:2] == [("start", "recording f (operations)", None), "finish"]
    assert seen[2:] == [("start", "reverse sweeps (rows)", 16), 8, 8, "finish"]  # --chunk-size is obeyed


def test_a_streamed_result_reports_the_rows_it_writes_and_only_those(runner, monkeypatch, tmp_path):
    import jaccli.cli.commands.run as run_module
    from jaccli.engine import observing

    recorder = Recorder()
    seen = recorder.events
    monkeypatch.setattr(run_module, "observed", lambda out: observing(recorder))
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o",
                    str(tmp_path / "J.npy"), "--max-memory", "2KiB")
    assert result.exit_code == 0 and "(streamed)" in result.stderr
    at = seen.index(("start", "writing J.npy (rows)", 32))
    assert seen[-1] == "finish" and sum(seen[at + 1:-1]) == 32 and len(seen[at + 1:-1]) > 1


def test_no_progress_observer_when_stderr_is_not_a_terminal_or_under_quiet(monkeypatch):
    import io

    from jaccli.cli.commands.run import observed
    from jaccli.cli.commands.settings import Output
    from jaccli.engine import current_observer

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stderr", io.StringIO())
    with observed(Output()):
        assert current_observer() is None
    monkeypatch.setattr("sys.stderr", Terminal())
    with observed(Output(quiet=True)):
        assert current_observer() is None
    with observed(Output()):
        assert current_observer() is not None
    assert current_observer() is None


# ---------------------------------------------------------------- errors


def test_missing_function_file(runner):
    result = invoke(runner, "jacobian", "nope.py", "[1]")
    assert_error(result, "usage", 2)


def test_missing_func_and_inputs(runner):
    result = invoke(runner, "jacobian")
    assert_error(result, "usage", 2)


def test_missing_input_file(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), "missing.npy")
    assert_error(result, "usage", 2)


def test_unreadable_literal(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), "[1, 2")
    assert_error(result, "usage", 2)


def test_pickled_npy_is_refused(runner, tmp_path):
    np.save(tmp_path / "x.npy", np.array([object()], dtype=object), allow_pickle=True)
    result = invoke(runner, "jacobian", sample("robot_arm.py"), str(tmp_path / "x.npy"))
    assert_error(result, "usage", 2)


def test_extra_input(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "[1]")
    assert_error(result, "usage", 2)


def test_missing_input(runner):
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_c.npy"))
    assert_error(result, "usage", 2)


def test_unknown_input_name(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), "x=[1, 2, 3]")
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("wrt", ["z", "c,c", "5", "c,"])
def test_bad_wrt(runner, wrt):
    result = invoke(runner, "jacobian", sample("kinetics.py"), sample("kinetics_inputs.npz"), "--wrt", wrt)
    assert_error(result, "usage", 2)


def test_wrt_on_an_input_left_at_its_default(runner):
    result = invoke(runner, "grad", sample("logistic.py"), sample("logistic_w.npy"), sample("logistic_X.csv"),
                    sample("logistic_y.txt"), "--wrt", "alpha")
    assert_error(result, "usage", 2)


def test_defaulted_parameter_can_be_given_by_name(runner, inputs):
    result = invoke(runner, "grad", sample("logistic.py"), sample("logistic_w.npy"), sample("logistic_X.csv"),
                    sample("logistic_y.txt"), "alpha=0.5", "--wrt", "w,alpha", "--format", "json")
    doc = report(result)
    grad, _ = logistic_parts(inputs["w"], inputs["X"], inputs["y"], alpha=0.5)
    assert_allclose(doc["blocks"]["df_dw"]["data"], grad, rtol=1e-12)
    assert_allclose(doc["blocks"]["df_dalpha"]["data"], 0.5 * np.sum(inputs["w"] ** 2), rtol=1e-12)


@pytest.mark.parametrize("spec", ["1:2:0", "a", "99", ""])
def test_bad_rows(runner, spec):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--rows", spec)
    assert_error(result, "usage", 2)


def test_bad_cols_names_the_block_when_there_are_several(runner):
    result = invoke(runner, "jacobian", "-e", "x * y", "x=[1, 2]", "y=3", "--cols", "1")
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_bad_chunk_size(runner, value):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "--chunk-size", value)
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("option, value", [("--mode", "sideways"), ("--format", "xml"), ("--dtype", "int8")])
def test_bad_choice(runner, option, value):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", option, value)
    assert_error(result, "usage", 2)


def test_shape_mismatch_inside_the_function_is_a_usage_error(runner, tmp_path):
    func = write(tmp_path, "m.py", "import numpy as np\n\ndef f(x, y):\n    z = x * 2\n    return z + y\n")
    result = invoke(runner, "jacobian", func, "[1, 2, 3]", "[1, 2]")
    assert_error(result, "usage", 2)


def test_matmul_mismatch_inside_the_function_is_a_usage_error(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(A, x):\n    return A @ x\n")
    result = invoke(runner, "jacobian", func, "[[1, 2], [3, 4]]", "[1, 2, 3]")
    assert_error(result, "usage", 2)


def test_index_out_of_bounds_inside_the_function_is_the_function_failing(runner):
    result = invoke(runner, "jacobian", sample("kinetics.py"), "c=[1, 2]", f"k={sample('kinetics_k.npy')}")
    assert_error(result, "function_failed", 3)  # (issue 42: exit 3, as for x[10**20])


def test_exception_raised_by_the_function_is_exit_3_with_its_line(runner, tmp_path):
    func = write(tmp_path, "m.py", "def helper(x):\n    raise ValueError('shape is bad')\n\n"
                                   "def f(x):\n    return helper(x)\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "function_failed", 3)


def test_runtime_error_in_the_function_is_exit_3(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x):\n    return x / undefined_name\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "function_failed", 3)


def test_syntax_error_in_the_function_file_is_exit_3(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x):\n    return x +\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "function_failed", 3)


def test_function_returning_a_string_is_exit_3(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x):\n    return 'no'\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "function_failed", 3)


def test_unsupported_operation_is_exit_3_with_its_line(runner, tmp_path):
    func = write(tmp_path, "m.py", "import numpy as np\n\ntwice = np.frompyfunc(lambda v: 2 * v, 1, 1)\n\n"
                                   "def f(x):\n    return twice(x)\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "unsupported_operation", 3)


def test_escaping_the_trace_is_exit_3(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x):\n    return float(x[0]) * x\n")
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "escaped_tracing", 3)


def test_an_array_changed_after_an_operation_used_it_is_exit_3(runner, tmp_path):
    source = ("import numpy as np\n"
              "def f(x):\n"
              "    buf = np.ones(2)\n"
              "    y = x * buf\n"
              "    buf[0] = 3.0\n"
              "    return y * buf\n")
    func = write(tmp_path, "m.py", source)
    result = invoke(runner, "jacobian", func, "[1, 2]")
    assert_error(result, "escaped_tracing", 3)


def test_debug_shows_the_traceback(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x):\n    raise RuntimeError('boom')\n")
    result = invoke(runner, "jacobian", func, "[1, 2]", "--debug")
    assert result.exit_code == 3
    assert "Traceback (most recent call last)" in result.stderr and "RuntimeError: boom" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("Error: ")


def test_debug_before_the_command_and_from_the_environment(runner, tmp_path):
    func = write(tmp_path, "m.py", "def f(x):\n    raise RuntimeError('boom')\n")
    assert "Traceback" in invoke(runner, "--debug", "jacobian", func, "[1]").stderr
    assert "Traceback" in invoke(runner, "jacobian", func, "[1]", env={"JACCLI_DEBUG": "1"}).stderr


@pytest.mark.parametrize("value", ["1GiB!", "abc", "-1", "0"])
@pytest.mark.parametrize("command", ["jacobian", "info"])
def test_a_memory_budget_in_the_environment_that_names_no_size_is_exit_2_before_f_runs(runner, tmp_path, value,
                                                                                       command):
    func = write(tmp_path, "m.py", "import numpy as np\n\ndef f(x):\n    print('F RAN')\n    return x ** 2\n")
    result = invoke(runner, command, func, "[1, 2]", env={"JACCLI_MEMORY_BUDGET": value})
    assert_error(result, "usage", 2)
    assert "F RAN" not in result.stderr


def test_a_memory_budget_in_the_environment_takes_sizes_as_max_memory_does(runner, tmp_path):
    np.save(tmp_path / "x.npy", np.linspace(0.1, 1.0, 200))

    def sweeps(budget):
        env = {} if budget is None else {"JACCLI_MEMORY_BUDGET": budget}
        result = invoke(runner, "jacobian", "-e", "sin(x) * x[0]", str(tmp_path / "x.npy"), "--chunk-size", "auto",
                        "--mode", "reverse", "--format", "json", env=env)
        return report(result)["sweeps"]

    assert sweeps(None) == sweeps("") == 1
    assert sweeps("8KiB") > sweeps("64KiB") > 1


# ---------------------------------------------------------------- version, help, completion


def test_version_prints_jaccli_numpy_and_python(runner):
    import platform

    result = invoke(runner, "--version")
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.splitlines() == ["jaccli 0.1.0", f"numpy {np.__version__}",
                                          f"python {platform.python_version()}"]


@pytest.mark.parametrize("command", ["jacobian", "hessian", "grad", "jvp", "vjp", "hvp"])
def test_help_warns_that_func_runs_as_the_user_and_points_to_the_exit_codes(runner, command):
    # Issue 41: the exit statuses are listed once, in `jaccli --help` (tests/test_cli_help.py).
    result = invoke(runner, command, "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "your own code: jaccli runs the file with your rights" in text
    assert "-e EXPR is safe on untrusted text" in text
    assert "exit statuses: jaccli --help, man jaccli" in text


def test_group_help_lists_commands_and_exit_codes(runner):
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    for word in ("jacobian", "hessian", "grad", "jvp", "vjp", "hvp", "Exit status", "runs the file with your rights"):
        assert word in result.stdout
    for code in ("0 success", "1 a check you asked for failed", "2 usage error", "3 the function failed",
                 "4 resource limit"):
        assert code in " ".join(result.stdout.split())


def test_shell_completion_script_and_command_names(runner):
    script = runner.invoke(cli, [], prog_name="jaccli", env={"_JACCLI_COMPLETE": "bash_source"})
    assert script.exit_code == 0 and "_jaccli_completion" in script.stdout
    words = runner.invoke(cli, [], prog_name="jaccli", env={"_JACCLI_COMPLETE": "bash_complete",
                                                           "COMP_WORDS": "jaccli h", "COMP_CWORD": "1"})
    assert words.stdout.split() == ["plain,hessian", "plain,hvp"]
    files = runner.invoke(cli, [], prog_name="jaccli", env={"_JACCLI_COMPLETE": "bash_complete",
                                                           "COMP_WORDS": "jaccli jacobian sam", "COMP_CWORD": "2"})
    assert files.stdout.split() == ["file,sam"]


# ---------------------------------------------------------------- the man page

MAN_PAGE = ROOT / "man" / "jaccli.1"


def _all_options() -> list[tuple[str, str]]:
    found = [("jaccli", opt) for p in cli.params if isinstance(p, click.Option) for opt in p.opts + p.secondary_opts]
    for name, command in cli.commands.items():
        for param in command.get_params(click.Context(command)):
            if isinstance(param, click.Option):
                found += [(name, opt) for opt in param.opts + param.secondary_opts]
    return found


def test_man_page_documents_every_option_of_every_command():
    text = MAN_PAGE.read_text()
    missing = sorted({f"{name} {opt}" for name, opt in _all_options() if opt.replace("-", "\\-") not in text})
    assert not missing, f"options missing from man/jaccli.1: {missing}"


def test_man_page_and_ops_help_name_every_family_of_the_registry(runner):
    from jaccli.engine import rules  # noqa: F401  (importing the rules fills the registry)
    from jaccli.engine.registry import REGISTRY
    from jaccli.engine.rules import every_rule

    every_rule()  # the test extras have SciPy: its families are listed as well

    families = sorted({entry.family for entry in REGISTRY.values()})
    assert "elementwise" in families and "" not in families
    entry = MAN_PAGE.read_text().split('\n.BI \\-\\-family " NAMES"\n')[1].split("\n.TP\n")[0]
    listed = entry.split("(")[1].split(")")[0]
    assert [name.strip() for name in " ".join(listed.split()).split(",")] == families
    # ops --help names two as an example (elementwise,linalg); if it ever lists more, it must list them all.
    text = " ".join(invoke(runner, "ops", "--help").stdout.split())
    named = [name for name in families if name in text]
    assert len(named) <= 2 or named == families, named


def test_man_page_has_the_standard_sections_and_every_command():
    text = MAN_PAGE.read_text()
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS", "FILES", "EXAMPLES"):
        assert f"\n.SH {section}\n" in text, section
    commands = text.split("\n.SH COMMANDS\n")[1].split("\n.SH ")[0]
    for name in cli.commands:
        assert f".B {name}\n" in commands, name
    status = text.split("\n.SH EXIT STATUS\n")[1].split("\n.SH ")[0]
    for code in range(5):
        assert f".B {code}\n" in status


def test_man_page_documents_every_json_report_key(runner):
    doc = report(invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--format", "json"))
    section = MAN_PAGE.read_text().split("\n.SH JSON REPORT\n")[1].split("\n.SH ")[0]
    block_keys = set(doc["blocks"]["df_dq"])
    for key in set(doc) | block_keys | set(doc["timings"]):
        assert key in section, key
    import jaccli.cli.commands.report as report_module

    for key in set(doc) | block_keys:
        assert f"``{key}``" in report_module.__doc__, key


def test_readme_stats_example_shows_every_stats_line(runner):
    readme = (ROOT / "README.md").read_text()
    example = readme.split("--rows 0:4 --cols 0:5 --stats\n")[1].split("\n\n")[0]
    documented = [line.strip() for line in example.splitlines() if line.strip().startswith("stats:")]
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "--rows", "0:4",
                    "--cols", "0:5", "--stats")
    printed = [line for line in result.stderr.splitlines() if line.startswith("stats:")]
    assert len(documented) == len(printed) == 3
    assert documented[:2] == printed[:2]
    # Times differ from run to run; the line names the same phases.
    assert re.sub(r"[0-9.]+ ms", "T", documented[2]) == re.sub(r"[0-9.]+ ms", "T", printed[2])


def test_man_example_of_the_linalg_family_names_the_np_linalg_functions_listed_elsewhere(runner):
    text = MAN_PAGE.read_text()
    example = " ".join(text.split("\njaccli ops \\-\\-family linalg\n")[0].split("\n.PP\n")[-2].split())
    listed = report(invoke(runner, "ops", "--format", "json"))["operations"]
    elsewhere = [row for row in listed if row["name"].startswith("np.linalg.") and row["family"] != "linalg"]
    assert elsewhere
    for row in elsewhere:
        short = row["name"].removeprefix("np.linalg.")
        assert re.search(rf"\b{short}\b", example), (row["name"], example)
        assert re.search(rf"\b{short}\b[^;(]* under {row['family']}\b", example), (row["name"], row["family"])


def test_precision_is_for_the_table_and_json_text_and_csv_keep_every_digit(runner):
    doc = report(invoke(runner, "jacobian", "-e", "x / 3.0", "x=1.0", "--format", "json", "--precision", "2"))
    assert doc["blocks"]["df_dx"]["data"] == 1 / 3
    for fmt in ("csv", "text"):
        assert invoke(runner, "jacobian", "-e", "x / 3.0", "x=1.0", "--format", fmt, "--precision", "2").stdout \
            == f"{1 / 3!r}\n"
    entry = " ".join(MAN_PAGE.read_text().split('\n.BI \\-\\-precision " N"\n')[1].split("\n.TP\n")[0].split())
    assert "in the table view" in entry and "JSON" in entry and "every digit" in entry
    help_text = " ".join(invoke(runner, "jacobian", "--help").stdout.split())
    assert "JSON keep every digit" in help_text


def test_a_count_of_one_takes_the_singular_in_every_message(runner, tmp_path):
    ref = tmp_path / "ref.npy"
    np.save(ref, np.array(2.0))
    one = ("-e", "x * 2.0", "x=1.0")
    texts = {
        "info": (invoke(runner, "info", *one, "--format", "text").stdout, "chunk size 1, 1 sweep\n"),
        "nonfinite": (invoke(runner, "jacobian", "-e", "log(x)", "x=0.0").stderr, "holds 1 inf (of 1 entry)"),
        "check": (invoke(runner, "check", *one, "--format", "text").stdout, "1 entry in 1 block"),
        "compare": (invoke(runner, "jacobian", *one, "--compare", str(ref)).stderr, "passed: the 1 entry agrees"),
        "mismatch": (invoke(runner, "jacobian", "-e", "x * 3.0", "x=1.0", "--compare", str(ref)).stderr,
                     "FAILED: 1 of 1 entry differs"),
        "stats": (invoke(runner, "jacobian", *one, "--stats").stderr, "df_dx: 1 of 1 row, 0 of 1 column"),
        "rows": (invoke(runner, "jacobian", "-e", "x * 2.0", "[1.0]", "--rows", "3").stderr, "range for 1 row"),
        "vector": (invoke(runner, "vjp", "-e", "x[0:1] * 2.0", "[1.0, 2.0]", "--vector", "[1, 2]").stderr,
                   "a flat v of 1 entry is also read"),
    }
    for name, (text, expected) in texts.items():
        assert expected in text, (name, text)
        assert not re.search(r"\b1 (entries|sweeps|rows|columns|blocks|evaluations|vectors|outputs)\b", text), name


def _timing_keys(result: Result) -> set[str]:
    return set(report(result)["timings"])


def test_timing_keys_are_the_documented_ones_in_reports_and_files(runner, tmp_path):
    arm = (sample("robot_arm.py"), sample("robot_arm_q.npy"))
    always = {"load_s", "record_s", "evaluate_s", "total_s"}
    in_files = {"load_s", "record_s", "evaluate_s"}
    assert _timing_keys(invoke(runner, "jacobian", *arm, "--format", "json")) == always
    for command, extra in (("grad", ()), ("vjp", ("--vector", "[1, 0, 0]")), ("hessian", ())):
        func = (sample("rosenbrock.py"), sample("rosenbrock_x.npy")) if command != "vjp" else arm
        assert _timing_keys(invoke(runner, command, *func, *extra, "--format", "json")) == always, command
    assert _timing_keys(invoke(runner, "check", *arm, "--format", "json")) == always | {"check_s"}
    reference = tmp_path / "ref.npy"
    assert _timing_keys(invoke(runner, "jacobian", *arm, "-o", str(reference), "--format", "json")) \
        == always | {"write_s"}
    compared = invoke(runner, "jacobian", *arm, "--compare", str(reference), "--format", "json")
    assert _timing_keys(compared) == always | {"check_s"}
    # A streamed result is written while it is evaluated: its writing is in evaluate_s.
    streamed = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o",
                      str(tmp_path / "big.npy"), "--max-memory", "4KiB", "--format", "json")
    assert report(streamed)["streamed"] and _timing_keys(streamed) == always
    # A file's metadata is made before the file is written: no write_s, no total_s.
    invoke(runner, "jacobian", *arm, "-o", str(tmp_path / "J.json"))
    assert set(json.loads((tmp_path / "J.json").read_text())["meta"]["timings"]) == in_files
    invoke(runner, "jacobian", *arm, "-o", str(tmp_path / "J.npz"), "--compare", str(reference))
    with np.load(tmp_path / "J.npz") as archive:
        assert set(json.loads(str(archive["__meta__"]))["timings"]) == in_files | {"check_s"}
    entry = " ".join(MAN_PAGE.read_text().split("\n.B timings\n")[1].split("\n.TP\n")[0].split())
    assert "total_s (the whole run), always; check_s (the checking) only for check and with" in entry
    assert "write_s (writing the .B \\-o file) only when a file was written and not streamed" in entry
    assert "it has load_s, record_s, evaluate_s and check_s as above, and never write_s or total_s" in entry


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings():
    done = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN_PAGE)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == ""


def test_the_library_never_imports_click_or_rich():
    import re

    package = ROOT / "jaccli"
    offenders = []
    for path in package.rglob("*.py"):
        if path == package / "__main__.py" or package / "cli" in path.parents:
            continue
        if re.search(r"^\s*(import|from)\s+(click|rich)\b", path.read_text(), re.MULTILINE):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders


def test_elementwise_jacobian_reports_one_diagonal_sweep(runner):
    result = invoke(runner, "jacobian", "-e", "sin(x) * exp(x)", "[0.5, 1.0, 1.5]", "--format", "json")
    doc = report(result)
    x = np.array([0.5, 1.0, 1.5])
    assert doc["mode"] == "diagonal" and doc["sweeps"] == 1
    assert_allclose(data(result, "df_dx"), np.diag(np.exp(x) * (np.sin(x) + np.cos(x))), rtol=1e-13)
    forced = report(invoke(runner, "jacobian", "-e", "sin(x) * exp(x)", "[0.5, 1.0, 1.5]", "--mode", "reverse",
                           "--format", "json"))
    assert forced["mode"].startswith("reverse") and forced["sweeps"] == 1 and forced["seeds"] == 3


def test_info_plans_a_diagonal_block_as_one_sweep(runner):
    doc = report(invoke(runner, "info", "-e", "tanh(x) + x ** 2", "[1, 2, 3, 4]", "--format", "json"))
    block = doc["blocks"]["df_dx"]
    assert block["mode"] == "diagonal" and block["sweeps"] == 1
    dense = report(invoke(runner, "info", "-e", "x * x[0]", "[1, 2, 3, 4]", "--format", "json"))
    assert dense["blocks"]["df_dx"]["mode"] == "reverse" and dense["blocks"]["df_dx"]["sweeps"] == 1


@pytest.mark.parametrize("expr, inputs", [
    ("sin(x) * y", ("x=[1, 2, 3]", "y=[2, 3, 4]")),  # before: info planned 1 sweep, jacobian ran 2
    ("(sin(x) * y, x ** 2)", ("x=[1, 2, 3]", "y=[2, 3, 4]")),
    ("sin(x) * y + sum(z)", ("x=[1, 2, 3]", "y=[2, 3, 4]", "z=[1, 2]")),
    ("(x * y, exp(y))", ("x=[1, 2]", "y=[3, 4]")),
])
def test_info_plans_the_sweeps_jacobian_runs_for_blocks_sharing_diagonals(runner, expr, inputs):
    plan = report(invoke(runner, "info", "-e", expr, *inputs, "--format", "json"))
    done = report(invoke(runner, "jacobian", "-e", expr, *inputs, "--format", "json"))
    assert plan["sweeps"] == done["sweeps"] == sum(b["sweeps"] for b in plan["blocks"].values())
    assert plan["mode"] == done["mode"]


# ---------------------------------------------------------------- regressions: stdout, exits, writes, usage


CHATTY = "import numpy as np\nprint('loading')\n\ndef f(x):\n    print('evaluating')\n    return np.sum(np.sin(x))\n"


@pytest.mark.parametrize("command, extra", [("jacobian", ()), ("hessian", ()), ("grad", ()),
                                            ("jvp", ("--vector", "[1, 0]")), ("vjp", ("--vector", "1")),
                                            ("hvp", ("--vector", "[1, 0]")), ("check", ()), ("info", ())])
def test_what_the_function_prints_goes_to_stderr_and_json_stays_valid(runner, tmp_path, command, extra):
    func = write(tmp_path, "chatty.py", CHATTY)
    result = invoke(runner, command, func, "[0.5, 1.0]", *extra, "--format", "json")
    assert isinstance(report(result), dict)  # the whole of stdout is one JSON object
    assert "loading" not in result.stdout and "evaluating" not in result.stdout
    assert "loading" in result.stderr and "evaluating" in result.stderr


def test_what_the_function_prints_stays_out_of_plain_results(runner, tmp_path):
    func = write(tmp_path, "chatty.py", CHATTY)
    result = invoke(runner, "grad", func, "[0, 0]", "--format", "text")
    assert result.exit_code == 0 and result.stdout == "1.0 1.0\n"


@pytest.mark.parametrize("command", ["check", "jacobian", "info"])
@pytest.mark.parametrize("call", ["sys.exit(0)", "raise SystemExit(4)", "sys.exit()"])
def test_sys_exit_in_the_function_is_exit_3_not_jaccli_exiting(runner, tmp_path, command, call):
    func = write(tmp_path, "bye.py", f"import sys\n\ndef f(x):\n    {call}\n    return x\n")
    result = invoke(runner, command, func, "[1, 2]")
    assert_error(result, "function_failed", 3)


@pytest.mark.parametrize("command", ["check", "jacobian", "info"])
def test_keyboard_interrupt_raised_by_the_function_is_exit_3_not_an_interruption(runner, tmp_path, command):
    # A real Ctrl-C: test_cli_subprocess.
    func = write(tmp_path, "stop.py", "def f(x):\n    raise KeyboardInterrupt\n")
    result = invoke(runner, command, func, "[1, 2]")
    assert_error(result, "function_failed", 3)


@pytest.mark.parametrize("command", ["check", "jacobian", "info"])
def test_keyboard_interrupt_raised_by_the_function_file_as_it_loads_is_exit_3(runner, tmp_path, command):
    # A signal raises jaccli's Terminated, so a plain KeyboardInterrupt while the file runs is its
    # own raise, a failure like any other exception there.
    func = write(tmp_path, "stop.py", "import numpy as np\nraise KeyboardInterrupt\n\ndef f(x):\n    return x\n")
    result = invoke(runner, command, func, "[1, 2]")
    assert_error(result, "function_failed", 3)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("nth", [1, 2], ids=["probing-the-directory", "writing"])
@pytest.mark.parametrize("streamed", [False, True], ids=["in-memory", "streamed"])
def test_a_signal_right_after_a_temporary_file_is_made_leaves_no_file(runner, tmp_path, monkeypatch, signal_handlers,
                                                                      streamed, nth, signame):
    import signal

    from jaccli.io import atomic

    made = []
    real_mkstemp = atomic.mkstemp

    def mkstemp(target):
        fd, name = real_mkstemp(target)
        made.append(name)
        if len(made) == nth:
            signal.raise_signal(getattr(signal, signame))  # its handler runs here, as at any bytecode
        return fd, name

    monkeypatch.setattr(atomic, "mkstemp", mkstemp)
    func = write(tmp_path, "f.py", "import numpy as np\n\ndef f(x):\n    return np.tanh(x)\n")
    np.save(tmp_path / "x.npy", np.linspace(-1, 1, 200))
    limit = ["--max-memory", "100K"] if streamed else []  # the 320 KB Jacobian is streamed to disk
    result = invoke(runner, "jacobian", func, str(tmp_path / "x.npy"), "-o", str(tmp_path / "J.npy"), *limit)
    stopped = "interrupted" if signame == "SIGINT" else f"stopped by {signame}"
    assert_error(result, "interrupted", 128 + getattr(signal, signame))
    assert stopped in result.stderr
    assert len(made) == nth
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py", "x.npy"]


def _fail_writes(monkeypatch, error: OSError) -> None:
    import jaccli.io.writers as writers

    def broken(fh, **kwargs):
        fh.write(b"partial")
        raise error

    monkeypatch.setattr(writers, "_write_npy", broken)
    monkeypatch.setattr(writers, "_write_bytes", broken)


@pytest.mark.parametrize("suffix", [".npy", ".json"])
@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), OSError("60000 requested and 7664 written")])
def test_full_disk_while_writing_is_exit_4_and_keeps_the_old_file(runner, tmp_path, monkeypatch, suffix, error):
    out = tmp_path / f"J{suffix}"
    out.write_bytes(b"precious")
    _fail_writes(monkeypatch, error)
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", str(out))
    assert_error(result, "resource_limit", 4)
    assert "differentiating" not in result.stderr
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError(30, "Read-only file system")])
def test_other_write_errors_are_usage_errors_naming_the_file(runner, tmp_path, monkeypatch, error):
    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")
    _fail_writes(monkeypatch, error)
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o", str(out))
    assert_error(result, "usage", 2)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_output_where_no_file_can_be_created_is_a_usage_error(runner):
    result = invoke(runner, "jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "-o",
                    "/proc/jaccli-test.npy")
    assert_error(result, "usage", 2)


RAN = "import numpy as np\n\ndef f(x):\n    print('f ran')\n    return np.sin(x) * np.sum(x)\n"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("command, extra", [("jacobian", ()), ("jacobian", ("--max-memory", "16")), ("grad", ()),
                                            ("vjp", ("--vector", "[1, 1]"))])
@pytest.mark.parametrize("expression", [False, True])
def test_output_where_no_file_can_be_created_is_refused_before_anything_runs(runner, tmp_path, monkeypatch,
                                                                             command, extra, expression):
    import jaccli.cli.commands.run as run_module

    loaded: list = []
    load_problem = run_module.load_problem
    monkeypatch.setattr(run_module, "load_problem", lambda *a: loaded.append(a) or load_problem(*a))
    func = ("-e", "sin(x) * sum(x)") if expression else (write(tmp_path, "ran.py", RAN),)
    if command == "grad":
        func = ("-e", "sum(sin(x))") if expression else (write(tmp_path, "ran.py", RAN.replace("* np.sum", "@")),)
    result = invoke(runner, command, *func, "x=[0.5, 1.0]", *extra, "-o", "/proc/jaccli-test.npy")
    # One line, no "f ran": neither the function nor the expression was even loaded.
    assert_error(result, "usage", 2)
    assert loaded == []


def test_read_only_output_file_is_refused_before_anything_runs(runner, tmp_path):
    # Also as root, who may write any file (CI containers): before, root's run replaced it.
    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")
    out.chmod(0o444)
    for func in (write(tmp_path, "ran.py", RAN),), ("-e", "sin(x) * sum(x)"):
        result = invoke(runner, "jacobian", *func, "x=[0.5, 1.0]", "-o", str(out))
        assert_error(result, "usage", 2)
        assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy", "ran.py"]


def test_writable_output_file_in_a_directory_that_takes_no_new_file_says_the_directory(runner, tmp_path,
                                                                                       monkeypatch):
    # The kernel's refusal of a new file in a read-only directory (root may write there: simulated).
    import errno

    from jaccli.io import atomic

    out = tmp_path / "ro" / "J.npy"
    out.parent.mkdir()
    out.write_bytes(b"precious")
    mkstemp = atomic.mkstemp

    def refuse(target):
        if target.parent.resolve() == out.parent.resolve():
            raise PermissionError(errno.EACCES, "Permission denied", str(target.parent / "x.tmp"))
        return mkstemp(target)

    monkeypatch.setattr(atomic, "mkstemp", refuse)
    result = invoke(runner, "jacobian", "-e", "sin(x)", "x=[0.5, 1.0]", "-o", str(out))
    assert_error(result, "usage", 2)
    assert out.read_bytes() == b"precious"
    monkeypatch.chdir(out.parent)
    result = invoke(runner, "jacobian", "-e", "sin(x)", "x=[0.5, 1.0]", "-o", "J.npy")
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("command, args, read", [
    ("jacobian", ("{x}",), "x"),
    ("jacobian", ("x={x}",), "x"),
    ("jacobian", ("{x}", "--compare", "{ref}"), "ref"),
    ("vjp", ("{x}", "--vector", "{ref}"), "ref"),
    ("jacobian", ("{x}", "--rows", "@{rows}"), "rows"),
])
@pytest.mark.parametrize("expression", [False, True])
@pytest.mark.parametrize("spelling", ["same", "relative", "link"])
def test_output_that_is_one_of_the_files_read_is_refused(runner, tmp_path, monkeypatch, command, args, read,
                                                         expression, spelling):
    files = {"x": tmp_path / "x.npy", "ref": tmp_path / "ref.npy", "rows": tmp_path / "rows.npy"}
    np.save(files["x"], np.array([0.5, 1.0]))
    np.save(files["ref"], np.ones(2) if command == "vjp" else np.eye(2))
    np.save(files["rows"], np.array([0]))
    before = {p: p.read_bytes() for p in files.values()}
    (tmp_path / "link.npy").symlink_to(files[read])
    monkeypatch.chdir(tmp_path)
    out = {"same": str(files[read]), "relative": f"./{files[read].name}", "link": "link.npy"}[spelling]
    func = ("-e", "sin(x) * sum(x)") if expression else (write(tmp_path, "ran.py", RAN),)
    result = invoke(runner, command, *func, *(a.format(**files) for a in args), "-o", out)
    assert_error(result, "usage", 2)
    assert {p: p.read_bytes() for p in files.values()} == before


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_streamed_write_where_no_file_can_be_created_is_a_usage_error_not_a_full_disk(runner, monkeypatch):
    import jaccli.cli.commands.run as run_module

    # As if /proc had been writable when -o was checked: the streamed write itself must say exit 2.
    monkeypatch.setattr(run_module, "check_output", lambda out, sources, **kw: None)
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o",
                    "/proc/jaccli-test.npy", "--max-memory", "1KiB")
    assert_error(result, "usage", 2)


def test_full_disk_while_streaming_is_exit_4_and_keeps_the_old_file(runner, tmp_path, monkeypatch):
    import errno
    import os

    out = tmp_path / "J.npy"
    out.write_bytes(b"precious")

    def full(fd, data, position):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    result = invoke(runner, "jacobian", sample("heat_pde.py"), sample("heat_pde_u.npy"), "-o", str(out),
                    "--max-memory", "1KiB")
    assert_error(result, "resource_limit", 4)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npy"]


def _zip(path: Path, members: dict) -> str:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return str(path)


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize("members", [
    {"x.npy": b"junk bytes, not an array"}, {"x.npy": _npy_bytes(np.ones(3)), "readme.txt": b"hello"},
    {"x.npy": _npy_bytes(np.ones(30))[:150]},
])
def test_broken_npz_member_is_a_usage_error_naming_it(runner, tmp_path, members):
    archive = _zip(tmp_path / "in.npz", members)
    result = invoke(runner, "jacobian", "-e", "x", archive)
    assert_error(result, "usage", 2)


@pytest.mark.parametrize("args", [
    ("jacobian", "-e", "x", "[1]", "--mode", "x"), ("jacobian", "-e", "x", "[1]", "--precision", "0"),
    ("jacobian", "-e", "x", "[1]", "--rtol", "-1"), ("jacobian", "-e", "x", "[1]", "--chunk-size", "0"),
    ("jacobian", "-e", "x", "[1]", "--format", "xml"), ("jacobian", "-e", "x", "[1]", "--bogus"),
    ("check", "-e", "x", "[1]", "--order", "3"), ("vjp", "-e", "x", "[1]"), ("ops", "--family", "nope"), ("nope",),
    ("--bogus", "jacobian"),
])
def test_click_usage_errors_are_one_line_with_a_help_hint(runner, args):
    result = invoke(runner, *args)
    assert_error(result, "usage", 2)
    assert "Usage:" not in result.stderr


@pytest.mark.parametrize("number", ["-1.5", "-2", "-.5", "-1e3", "-inf"])
def test_negative_number_input_says_how_to_give_it(runner, tmp_path, number):
    func = write(tmp_path, "neg.py", "import numpy as np\n\ndef f(x):\n    return np.sin(x)\n")
    result = invoke(runner, "jacobian", func, number)
    assert_error(result, "usage", 2)
    # Both ways the message offers work.
    for args in ((func, f"x={number}"), ("--rows", "0", func, "--", number)):
        assert invoke(runner, "jacobian", *args).exit_code == 0
    assert_error(invoke(runner, "jacobian", func, "-q1"), "usage", 2)


def test_no_command_still_prints_the_help(runner):
    result = invoke(runner)
    assert "Usage:" in result.stdout + result.stderr and "Commands:" in result.stdout + result.stderr


def test_float32_overflow_is_one_warning_line_silenced_by_quiet(runner):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = invoke(runner, "jacobian", "-e", "x", "x=[1e300, 1, -1e300]", "--dtype", "float32")
        quiet = invoke(runner, "jacobian", "-e", "x", "x=[1e300]", "--dtype", "float32", "-q")
    assert not [w for w in caught if "overflow" in str(w.message)]
    assert result.exit_code == 0
    assert result.stderr.splitlines() == ["Warning: input x overflows float32: 2 entries become inf"]
    assert quiet.exit_code == 0 and quiet.stderr == "" and quiet.stdout == "1.0\n"


@pytest.mark.parametrize("command", ["info", "jacobian"])
def test_literal_beyond_float64_is_one_warning_line_as_a_float32_overflow(runner, command):
    # As a --dtype float32 overflow does, an overflow of float64 warns.
    result = invoke(runner, command, "-e", "x * 2.0", "[1e400, 1.0, -1e999, inf]", "--format", "json")
    line = "input x overflows float64: 2 entries become inf (a number beyond 1.8e308 in its literal)"
    assert result.exit_code == 0 and result.stderr.splitlines() == [f"Warning: {line}"]
    assert json.loads(result.stdout)["warnings"] == [line]
    both = invoke(runner, command, "-e", "x * 2.0", "x=1e400", "--dtype", "float32", "-q")
    assert both.exit_code == 0 and both.stderr == ""
    one = invoke(runner, command, "-e", "x * 2.0", "x=1e400", "--dtype", "float32")
    assert one.stderr == "Warning: input x overflows float64: 1 entry becomes inf (a number beyond 1.8e308 in its " \
                         "literal)\n"


@pytest.mark.parametrize("suffix, text", [(".csv", "x\n1e400, 1.0\n-1e999, inf\n-Infinity, 2\n"),
                                          (".txt", "# x\n1e400 1.0\n-1e999 inf\n-Infinity 2\n")])
@pytest.mark.parametrize("command", ["info", "jacobian"])
def test_text_file_number_beyond_float64_warns_as_a_literal_does(runner, tmp_path, command, suffix, text):
    source = write(tmp_path, "x" + suffix, text)
    result = invoke(runner, command, "-e", "x * 2.0", source, "--format", "json")
    line = f"input x overflows float64: 2 entries become inf (a number beyond 1.8e308 in {source})"
    assert result.exit_code == 0 and result.stderr.splitlines() == [f"Warning: {line}"]
    assert json.loads(result.stdout)["warnings"] == [line]
    assert invoke(runner, command, "-e", "x * 2.0", source, "-q").stderr == ""
    plain = write(tmp_path, "inf" + suffix, text.replace("1e400", "inf").replace("1e999", "inf"))
    assert invoke(runner, command, "-e", "x * 2.0", plain).stderr == ""  # inf written as such: data


@pytest.mark.parametrize("command", ["info", "jacobian"])
def test_an_integer_literal_beyond_int64_warns_that_it_is_float64(runner, command):
    # Integer literals promise int64.
    args = ("-e", "x * sum(n)", "x=[1.0, 2.0]", "--wrt", "x", "--format", "json")
    result = invoke(runner, command, *args, "n=[1, 99999999999999999999, -99999999999999999999]")
    line = ("input n overflows int64: 2 integers beyond 9.2e18 in its literal, so it is float64, not the int64 of "
            "an integer literal (write its numbers as floats, with a decimal point or an exponent, to silence this)")
    assert result.exit_code == 0 and result.stderr.splitlines() == [f"Warning: {line}"]
    assert json.loads(result.stdout)["warnings"] == [line]
    for fine in ("n=9223372036854775807", "n=-9223372036854775808", "n=1e20"):  # int64's ends; a float
        assert invoke(runner, command, *args, fine).stderr == ""
    assert invoke(runner, command, *args, "n=99999999999999999999", "-q").stderr == ""
    # differentiated, an integer literal is float64 all the same: nothing to warn about
    assert invoke(runner, command, "-e", "x * n", "x=[1.0, 2.0]", "n=99999999999999999999").stderr == ""


@pytest.mark.parametrize("command", ["info", "jacobian"])
def test_positional_input_on_a_parameter_bound_by_name_is_a_usage_error(runner, tmp_path, command):
    func = write(tmp_path, "ab.py", "def f(a, b):\n    return a * b[0]\n")
    result = invoke(runner, command, func, "[1., 2, 3]", "a=[5., 6]")
    assert_error(result, "usage", 2)
    assert invoke(runner, command, func, "[1., 2, 3]", "b=[5., 6]").exit_code == 0


@pytest.mark.parametrize("signature, inputs", [("*args", ("[1.0, 2.0]",)), ("*args", ()),
                                              ("**kw", ("x=[1.0, 2.0]",))])
def test_function_without_named_parameters_says_how_to_name_its_inputs(runner, tmp_path, signature, inputs):
    func = write(tmp_path, "star.py", f"import numpy as np\n\ndef f({signature}):\n    return np.sin(1.0)\n")
    result = invoke(runner, "jacobian", func, *inputs)
    assert_error(result, "usage", 2)
    assert "takes no inputs" not in result.stderr


@pytest.mark.parametrize("expression, point, reference", [
    ("x ** 2", "[1, 2]", [[np.nan, 0.0], [0.0, 4.0]]),  # a NaN in the reference, the result finite
    ("sqrt(x)", "[-1, 4]", [[0.5, 0.0], [0.0, 0.25]]),  # a NaN in the result, the reference finite
])
def test_compare_nan_against_a_number_is_a_mismatch_not_an_error_of_0(runner, tmp_path, expression, point,
                                                                       reference):
    np.save(tmp_path / "ref.npy", np.array(reference))
    out = tmp_path / "J.npy"
    result = invoke(runner, "jacobian", "-e", expression, point, "--compare", str(tmp_path / "ref.npy"),
                    "-o", str(out))
    assert result.exit_code == 1, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("--compare: 1 of 4 entries differ", len("Error: "))
    assert "(1 of them NaN or inf against a different value); worst df_dx[0, 0]" in error
    assert "(max abs error 0, max rel error 0 where both are finite; 1 NaN or inf against a different value)" \
        in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("path", ["", " "])
def test_empty_output_path_is_a_usage_error(runner, path):
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "-o", path)
    assert_error(result, "usage", 2)


def test_help_of_commands_without_o_does_not_mention_the_o_file():
    for name, command in cli.commands.items():
        if any(p.name == "output" for p in command.params):
            continue
        for param in command.params:
            assert "-o " not in (getattr(param, "help", "") or ""), (name, param.name)
    check_option = next(p for p in cli.commands["check"].params if p.name == "fail_on_nonfinite")
    assert "NaN or inf" in check_option.help


@pytest.mark.parametrize("under", ["J.npy", "a/J.npy"])
def test_output_below_an_existing_file_says_it_is_not_a_directory(runner, tmp_path, under):
    (tmp_path / "x3.npy").write_bytes(b"a file")
    target = tmp_path / "x3.npy" / under
    result = invoke(runner, "jacobian", "-e", "x", "[1]", "-o", str(target))
    assert_error(result, "usage", 2)


def test_long_literal_input_is_read_as_numbers(runner):
    values = list(range(300))
    result = invoke(runner, "grad", "-e", "sum(x)", str(values), "--format", "json")
    assert_allclose(data(result, "df_dx"), np.ones(300))


def test_errors_and_kinks_in_an_expression_are_placed_in_the_expression(runner):
    # The site is the expression, not the innermost frame outside jaccli (click's decorators.py).
    result = invoke(runner, "jacobian", "-e", "sum(x, axis=x)", "x=[1.0, 2.0]")
    assert_error(result, "escaped_tracing", 3)
    assert "click" not in result.stderr
    result = invoke(runner, "check", "-e", "abs(x)", "x=[0.0, 1.0]", "--format", "json")
    assert result.exit_code == 0 and "<expression>:1" in result.stdout and "click" not in result.stdout


def test_keyword_only_parameters_are_inputs_by_name(runner, tmp_path):
    # def f(x, *, w, scale=2.0): keyword-only inputs bind by name, can be differentiated, and
    # the function receives them by keyword.
    path = tmp_path / "kw.py"
    path.write_text("import numpy as np\ndef f(x, *, w, scale=2.0):\n    return scale * np.tanh(w * x)\n")
    x, w = np.array([0.3, -0.7]), np.array([1.5, 0.5])
    out = report(invoke(runner, "jacobian", str(path), "[0.3, -0.7]", "w=[1.5, 0.5]", "scale=3",
                        "--wrt", "x,w", "--format", "json"))
    assert out["wrt"] == ["x", "w"] and list(out["blocks"]) == ["df_dx", "df_dw"]
    sech2 = 1.0 - np.tanh(w * x) ** 2
    assert_allclose(np.array(out["blocks"]["df_dx"]["data"]), np.diag(3 * w * sech2), rtol=1e-12)
    assert_allclose(np.array(out["blocks"]["df_dw"]["data"]), np.diag(3 * x * sech2), rtol=1e-12)
    missing = invoke(runner, "jacobian", str(path), "[0.3, -0.7]")
    assert missing.exit_code == 2
    assert missing.stderr == ("Error: missing input for parameter 'w' of f: give it by name, as w=SOURCE "
                              "(w is keyword-only)\n")


# ---------------------------------------------------------------- files that exist but cannot be read


def _refusing_to_read(monkeypatch, refused: str) -> None:
    """open() of `refused` fails as without read permission (which root, running these tests, would pass)."""
    import builtins
    import errno
    import os

    real_open = builtins.open

    def fake_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.basename(os.fspath(file)) == refused:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", fake_open)


@pytest.mark.parametrize("refused, args", [
    ("secret.npy", ["jacobian", "-e", "x ** 2", "secret.npy"]),
    ("secret.npz", ["jacobian", "-e", "x ** 2", "secret.npz"]),
    ("secret.npy", ["jacobian", "-e", "x ** 2", "x.npy", "--rows", "@secret.npy"]),
    ("secret.npy", ["jvp", "-e", "x ** 2", "x.npy", "--vector", "secret.npy"]),
    ("secret.npy", ["jacobian", "-e", "x ** 2", "x.npy", "--compare", "secret.npy"]),
    ("secret.py", ["jacobian", "secret.py", "x.npy"]),
], ids=["input", "npz-input", "rows-file", "vector", "compare", "function-file"])
def test_a_file_that_cannot_be_read_is_a_usage_error_that_says_so(runner, tmp_path, monkeypatch, refused, args):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.array([0.5, 1.5]))
    np.save("secret.npy", np.array([0, 1]))
    np.savez("secret.npz", x=np.array([0.5, 1.5]))
    Path("secret.py").write_text("def f(x):\n    return x\n")
    _refusing_to_read(monkeypatch, refused)
    assert_error(invoke(runner, *args), "usage", 2)


def test_an_os_error_on_a_file_jaccli_opens_is_not_the_functions_failure():
    import errno

    from jaccli.cli.commands.failures import translate

    denied = translate(PermissionError(errno.EACCES, "Permission denied", "blocked/J.npy"))
    assert (denied.exit_code, denied.format_message()) == (
        2, "cannot use blocked/J.npy: Permission denied; check the path and its permissions")
    assert translate(OSError(errno.EBADF, "Bad file descriptor", 3)).exit_code == 3  # no file named: as before
    full = translate(OSError(errno.ENOSPC, "No space left on device", "J.npy"))
    assert full.exit_code == 4 and full.format_message().startswith("cannot use J.npy: the disk is full")


def test_main_called_in_process_leaves_the_collector_on_when_it_ends_before_the_users_code(capsys):
    # The console entry point keeps Python's garbage collector off while it starts up; a run that ends
    # before the user's module loads (a usage error) must not leave it off in a process that goes on
    import gc

    from jaccli.cli.main import main

    assert gc.isenabled()
    with pytest.raises(SystemExit) as ended:
        main(["jacobian", "--no-such-option"])
    assert ended.value.code == 2
    assert gc.isenabled()
    assert "no-such-option" in capsys.readouterr().err


def test_the_man_page_is_installed_beside_the_executable():
    # `pip install .` puts man/jaccli.1 in <prefix>/share/man/man1, where `man jaccli` looks for the jaccli
    # on PATH; an editable install (development) installs no data files, so there the declaration is checked
    import os
    import sys
    import sysconfig
    import tomllib

    infos = sorted(Path(sysconfig.get_paths()["purelib"]).glob("jaccli-*.dist-info"))
    assert infos, "jaccli is not installed in this environment"
    origin = infos[-1] / "direct_url.json"
    editable = origin.exists() and json.loads(origin.read_text()).get("dir_info", {}).get("editable", False)
    if editable:
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
        assert declared == {"share/man/man1": ["man/jaccli.1"]}
        return
    installed = Path(sys.prefix) / "share" / "man" / "man1" / "jaccli.1"
    assert installed.read_text() == MAN_PAGE.read_text()
    if shutil.which("man"):
        env = dict(os.environ, PATH=f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("MANPATH", None)
        found = subprocess.run(["man", "-w", "jaccli"], capture_output=True, text=True, env=env)
        assert found.stdout.strip() == str(installed)
