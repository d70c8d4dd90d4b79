"""Pictures of whole matrices: --plot image files, the spy plot, max-magnitude pooling and the terminal --heatmap."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from jaccli.cli.main import cli
from jaccli.cli.render.plain import RenderBlock
from jaccli.cli.render.pooling import SignedLogScale, pool, pool_coordinates, pool_entries
from jaccli.cli.render.terminal import make_console

from .helpers import assert_error, invoke_recording_error
from .test_cli import sample

matplotlib = pytest.importorskip("matplotlib")

HEADERS = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF-"}


def invoke(*args: str):
    runner = CliRunner(env={"COLUMNS": "100", "NO_COLOR": None, "JACCLI_DEBUG": None, "FORCE_COLOR": None})
    return invoke_recording_error(runner, cli, list(args))


def assert_image(path, suffix: str) -> None:
    data = path.read_bytes()
    if suffix == ".svg":
        assert b"<svg" in data[:2000] and data.rstrip().endswith(b"</svg>")
    else:
        assert data.startswith(HEADERS[suffix])
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # atomic: no temporary left


# ---------------------------------------------------------------- pooling


def test_pooling_keeps_every_nonzero_and_its_sign():
    rng = np.random.default_rng(0)
    n, bins = 2000, 100
    row, col = rng.integers(0, n, 300), rng.integers(0, n, 300)
    matrix = np.zeros((n, n))
    matrix[row, col] = rng.normal(size=300) * 10.0 ** rng.integers(-12, 6, 300)
    pooled, row_edges, col_edges = pool(matrix, bins, bins)
    assert pooled.shape == (bins, bins)
    held = np.zeros((bins, bins), dtype=bool)
    held[np.searchsorted(row_edges, row, side="right") - 1, np.searchsorted(col_edges, col, side="right") - 1] = True
    assert np.array_equal(pooled != 0, held)
    # Each cell keeps its largest-magnitude entry, with its sign.
    for i, j in zip(*np.nonzero(held)):
        cell = matrix[row_edges[i]:row_edges[i + 1], col_edges[j]:col_edges[j + 1]]
        assert pooled[i, j] == cell.flat[np.argmax(np.abs(cell))]


def test_pooling_coordinates_matches_dense_pooling_without_a_dense_array():
    rng = np.random.default_rng(1)
    row, col = rng.integers(0, 2000, 500), rng.integers(0, 3000, 500)
    cells, _, _ = pool_coordinates(row, col, (2000, 3000), 100, 100, labels=col % 5)
    dense = np.zeros((2000, 3000))
    dense[row, col] = 1.0
    assert np.array_equal(cells > 0, pool(dense, 100, 100)[0] != 0)
    assert cells.max() <= 5


def test_pooling_stored_entries_matches_dense_pooling_without_a_dense_array():
    rng = np.random.default_rng(3)
    row, col = rng.integers(0, 2000, 600), rng.integers(0, 3000, 600)
    keep = np.unique(row * 3000 + col, return_index=True)[1]  # one value per coordinate, as a CSR matrix stores
    row, col = row[keep], col[keep]
    data = rng.normal(size=row.size) * 10.0 ** rng.integers(-8, 8, row.size)
    data[::50] = np.nan
    dense = np.zeros((2000, 3000))
    dense[row, col] = data
    pooled, _, _ = pool_entries(row, col, data, (2000, 3000), 100, 100)
    np.testing.assert_array_equal(pooled, pool(dense, 100, 100)[0])


def test_signed_log_scale_orders_magnitudes_and_keeps_zero_apart():
    scale = SignedLogScale.of(np.array([1e-3, -1.0, 10.0, 0.0]))
    levels = scale.signed(np.array([1e-3, -1.0, 10.0, 0.0, np.inf]))
    assert 0 < levels[0] < -levels[1] < levels[2] == 1.0
    assert levels[3] == 0.0 and np.isnan(levels[4])


# ---------------------------------------------------------------- images


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_jacobian_plot_writes_the_format_its_suffix_names(tmp_path, suffix):
    target = tmp_path / f"J{suffix}"
    result = invoke("jacobian", sample("kinetics.py"), sample("kinetics_c.npy"), sample("kinetics_k.npy"),
                    "--plot", str(target), "--format", "text")
    assert result.exit_code == 0, result.stderr
    assert_image(target, suffix)


def test_hessian_and_check_plot(tmp_path):
    result = invoke("hessian", sample("rosenbrock.py"), sample("rosenbrock_x.npy"), "--plot", str(tmp_path / "H.png"))
    assert result.exit_code == 0, result.stderr
    assert_image(tmp_path / "H.png", ".png")
    result = invoke("check", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--plot", str(tmp_path / "E.svg"))
    assert result.exit_code == 0, result.stderr
    assert_image(tmp_path / "E.svg", ".svg")


def test_a_diagonal_matrix_draws_a_diagonal(tmp_path):
    from matplotlib.image import imread

    from jaccli.cli.render.plots import Span, heatmap

    drawn = heatmap([[np.diag(np.arange(1.0, 7.0))]], [Span("f", 6)], [Span("x", 6)], tmp_path / "D.png")
    image = imread(tmp_path / "D.png")[..., :3]
    left, top, right, bottom = drawn.box
    for i in range(6):
        for j in range(6):
            pixel = image[int(top + (i + 0.5) * (bottom - top) / 6), int(left + (j + 0.5) * (right - left) / 6)]
            white = bool(np.all(pixel > 0.99))
            assert white == (i != j), (i, j, pixel)
            if i == j:
                assert pixel[0] > pixel[2] + 0.2  # positive: red


def test_a_sparse_diagonal_matrix_draws_a_signed_diagonal(tmp_path):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    from matplotlib.image import imread

    from jaccli.cli.render.plots import Span, sparse_heatmap

    values = np.array([1.0, -2.0, 3.0, -4.0, 5.0, -6.0])
    drawn = sparse_heatmap(scipy_sparse.diags_array(values, format="csr"), [Span("f", 6)], [Span("x", 6)],
                           tmp_path / "D.png")
    image = imread(tmp_path / "D.png")[..., :3]
    left, top, right, bottom = drawn.box
    for i in range(6):
        for j in range(6):
            pixel = image[int(top + (i + 0.5) * (bottom - top) / 6), int(left + (j + 0.5) * (right - left) / 6)]
            assert bool(np.all(pixel > 0.99)) == (i != j), (i, j, pixel)
            if i == j:  # positive red, negative blue
                assert (pixel[0] > pixel[2] + 0.2) if values[i] > 0 else (pixel[2] > pixel[0] + 0.2), (i, pixel)


def test_spy_plot_of_a_large_pattern_coloured_by_groups(tmp_path):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    from jaccli.cli.render.plots import spy

    rng = np.random.default_rng(2)
    coordinates = (rng.integers(0, 5000, 2000), rng.integers(0, 4000, 2000))
    pattern = scipy_sparse.csr_array((np.ones(2000, dtype=bool), coordinates), shape=(5000, 4000))
    spy(pattern, tmp_path / "P.png", colors=np.arange(4000) % 3)
    assert_image(tmp_path / "P.png", ".png")


def test_unknown_image_suffix_is_a_usage_error(tmp_path):
    result = invoke("jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--plot", str(tmp_path / "J.gif"))
    assert "'.gif'" in assert_error(result, "usage", 2)
    assert not list(tmp_path.iterdir())


def test_plot_without_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    result = invoke("jacobian", sample("robot_arm.py"), sample("robot_arm_q.npy"), "--plot", str(tmp_path / "J.png"))
    assert "pip install 'jaccli[plot]'" in assert_error(result, "usage", 2)


# ---------------------------------------------------------------- the terminal heatmap


def test_terminal_heatmap_shows_the_whole_matrix_and_its_legend():
    from jaccli.cli.render.heatmap import render_heatmap

    matrix = np.zeros((300, 500))
    matrix[np.arange(300), np.arange(300)] = np.linspace(-1e3, 1e-3, 300)
    matrix[299, 499] = 7.0  # the far corner survives pooling
    file = io.StringIO()
    render_heatmap(make_console(file, width=60), RenderBlock("J", matrix))
    out = file.getvalue()
    assert "the whole 300 x 500 matrix" in out and "sign: + positive, - negative" in out
    body = [line for line in out.splitlines() if line.startswith("  ") and set(line.strip()) <= set("+-.!")]
    assert body and all(len(line) <= 60 for line in body) and body[-1].rstrip().endswith("+")
    assert "largest |value| of up to" in out


def test_coloured_terminal_heatmap_has_a_scale_legend():
    from rich.console import Console

    from jaccli.cli.render.heatmap import render_heatmap

    file = io.StringIO()
    console = Console(file=file, force_terminal=True, color_system="truecolor", width=50, height=20)
    render_heatmap(console, RenderBlock("J", np.array([[1e-2, 0.0], [-3.0, 100.0]])))
    out = file.getvalue()
    assert "scale:" in out and "(log10 |value|)" in out and "positive" in out and "negative" in out
    assert "\x1b[" in out and "▀" in out


def test_an_empty_matrix_is_not_drawn(tmp_path):
    result = invoke("jacobian", "-e", "x[:0]", "x=[1,2,3]", "--plot", str(tmp_path / "J.png"))
    assert "empty (0 x 3)" in assert_error(result, "usage", 2)
    assert not list(tmp_path.iterdir())
