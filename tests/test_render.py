"""Tests for jaccli.cli.render.terminal: tables, heatmaps, plain text and the progress bar, on pinned-width consoles."""

from __future__ import annotations

import doctest
import io
import time
import re

import numpy as np
import pytest
from rich.console import Console

import jaccli.cli.render.terminal
import jaccli.cli.render.plain
import jaccli.cli.render.progress
import jaccli.cli.render.reports
from jaccli.cli.render.terminal import (ProgressReporter, RenderBlock, RenderHeader, format_plain, make_console,
    make_progress, print_report_table, render_table)

ESC = "\x1b["


class FakeTerminal(io.StringIO):
    """A StringIO that says it is a terminal, as sys.stdout does in an interactive shell."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.fixture
def colour_env(monkeypatch):
    """A colour-capable terminal environment, whatever the test runner's own is."""
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLORTERM", "truecolor")


def render(blocks, header=None, *, width=100, file=None, **options) -> str:
    file = io.StringIO() if file is None else file
    render_table(make_console(file, width=width), header, blocks, **options)
    return file.getvalue()


def labelled(matrix: np.ndarray, key: str = "df_dx") -> RenderBlock:
    rows, cols = matrix.shape
    return RenderBlock(
        key,
        matrix,
        row_labels=[f"f[{i}]" for i in range(rows)],
        col_labels=[f"x[{j}]" for j in range(cols)],
    )


# ---------------------------------------------------------------- tables


def test_table_shows_header_labels_and_values():
    matrix = np.array([[1.0, -2.5, 0.0], [3.25, 4.0, 1e-9]])
    header = RenderHeader("Jacobian of f at x (samples/mlp.py)", {"shape": "(2, 3)", "mode": "reverse"})
    out = render([labelled(matrix)], header)
    assert "Jacobian of f at x (samples/mlp.py)" in out
    assert "shape:" in out and "(2, 3)" in out and "mode:" in out and "reverse" in out
    assert "df_dx" in out and "shape=(2, 3)" in out
    for label in ("f[0]", "f[1]", "x[0]", "x[1]", "x[2]"):
        assert label in out
    for number in ("-2.5", "3.25", "1e-09"):
        assert number in out


def test_table_without_labels_uses_indices():
    out = render([RenderBlock("H", np.arange(6.0).reshape(2, 3))])
    lines = out.splitlines()
    header_line = next(line for line in lines if "0" in line and "1" in line and "2" in line)
    assert header_line.split("│")[1].split() == ["0", "1", "2"]


def test_numbers_use_the_given_precision():
    out = render([RenderBlock("g", np.array([[np.pi, -np.e]]))], precision=3)
    assert "3.14" in out and "-2.72" in out
    assert "3.142" not in out


def test_negative_zeros_show_as_zero_in_tables_and_keep_their_bits_in_text_and_csv():
    # 0 times a negative number: a derivative block of -0.0 entries reads as 0, as it is, for people; text
    # and csv are for machines and write each float64 exactly, as the .csv file does (issue 41).
    matrix = np.array([[-0.0, -1e-300, 2.0], [0.0, -0.0, -3.5]])
    table = render([RenderBlock("H", matrix)])
    assert "-0 " not in table and "-0\n" not in table and "-1e-300" in table and "-3.5" in table
    text = format_plain([RenderBlock("H", matrix)], headers=False)
    assert text == "-0.0 -1e-300 2.0\n0.0 -0.0 -3.5\n"
    assert format_plain([RenderBlock("H", matrix)], delimiter=",", headers=False) == "-0.0,-1e-300,2.0\n0.0,-0.0,-3.5\n"


def test_large_matrix_is_cut_in_the_middle(rng):
    out = render([labelled(rng.normal(size=(100, 100)))], width=200)
    assert "…" in out
    for label in ("f[0]", "f[9]", "f[90]", "f[99]", "x[0]", "x[99]"):
        assert label in out
    for label in ("f[10]", "f[50]", "f[89]", "x[10]", "x[50]", "x[94]"):
        assert label not in out
    assert "showing 20 of 100 rows, 10 of 100 columns" in out


def test_truncation_limits_are_options(rng):
    out = render([labelled(rng.normal(size=(10, 10)))], max_rows=4, max_cols=2)
    assert {"f[0]", "f[1]", "f[8]", "f[9]", "x[0]", "x[9]"} <= set(out.replace("│", " ").split())
    assert "f[2]" not in out and "x[1]" not in out


def test_narrow_console_shows_fewer_whole_columns(rng):
    out = render([labelled(rng.normal(size=(3, 30)))], width=50)
    assert all(len(line) <= 50 for line in out.splitlines())
    # Numbers are never cut: every cell still has its full digits or a lone ellipsis.
    cells = [cell for line in out.splitlines()[3:6] for cell in line.strip("│ ").split()[1:]]
    assert cells and all(cell == "…" or not cell.endswith("…") for cell in cells)
    assert "x[0]" in out and "x[29]" in out


# Values whose exponent a squeezed cell would drop (the tester saw "5.5e+…" at 30 columns).
WIDE_VALUES = np.diag([1.23456789e6, -9.87654321e-7, 5.5e12])
WIDE_TEXT = {"1.23457e+06", "-9.87654e-07", "5.5e+12", "0"}


def cut_words(out: str) -> list[str]:
    """Words that end or start in an ellipsis: text that rich cut (a lone '…' marks hidden rows or columns)."""
    return [word for word in re.findall(r"\S*…\S*", out) if word != "…"]


@pytest.mark.parametrize("width", range(16, 61, 2))
def test_numbers_are_printed_whole_or_not_at_all_at_any_width(width):
    out = render([labelled(WIDE_VALUES)], width=width)
    assert cut_words(out) == []
    cells = " ".join(line for line in out.splitlines() if "showing" not in line and "columns" not in line)
    numbers = [word for word in cells.replace("│", " ").split() if re.fullmatch(r"-?[0-9][0-9.e+-]*", word)]
    assert numbers and set(numbers) <= WIDE_TEXT
    assert "1.23457e+06" in out


@pytest.mark.parametrize("width", [16, 20, 24, 30, 40])
def test_a_vector_keeps_every_number_and_label_at_narrow_widths(width):
    values = np.array([1.23456789e6, -9.87654321e-7, 5.5e12])
    out = render([RenderBlock("df_dx", values, row_labels=["f[0]", "f[1]", "f[2]"], shape=(3,))], width=width)
    assert cut_words(out) == []
    for text in ("1.23457e+06", "-9.87654e-07", "5.5e+12", "f[0]", "f[2]"):
        assert text in out, (width, out)


@pytest.mark.parametrize("width", range(16, 81, 4))
def test_header_never_breaks_a_shape_or_a_dtype(width):
    header = RenderHeader("Jacobian of f", {"inputs": "x (3,) float64, y (2, 2) float32",
                                            "result": "df_dx (3, 3), df_dy (3, 2, 2)"})
    out = render([labelled(np.eye(2))], header, width=width)
    assert cut_words(out) == []
    for text in ("(3,)", "float64", "(2, 2)", "float32", "(3, 3)", "(3, 2, 2)"):
        assert any(text in line for line in out.splitlines()), (width, text, out)


OPS_LIKE = [["np.linalg.matrix_power", "linalg", "derived", "yes", "any",
             "the derivative of A^n is a sum of products (n >= 0); negative n goes through inv"],
            ["np.linalg.tensorsolve", "linalg", "primitive", "no", "2", "-"]]


@pytest.mark.parametrize("width", range(20, 121, 5))
def test_report_tables_show_names_whole_and_wrap_only_prose(width):
    console = make_console(io.StringIO(), width=width)
    print_report_table(console, "supported functions", ["name", "family", "kind", "reverse", "order", "notes"],
                       OPS_LIKE, prose=["notes"])
    out = console.file.getvalue()
    assert "…" not in out
    words = out.split()
    for row in OPS_LIKE:
        for cell in row[:5]:
            assert cell in words, (width, cell, out)
    assert "inv" in words and "negative" in words


@pytest.mark.parametrize("width", [30, 40, 60, 80, 100])
def test_report_tables_keep_a_shape_on_one_line(width):
    console = make_console(io.StringIO(), width=width)
    print_report_table(console, "jacobian blocks", ["block", "shape", "matrix", "dtype", "bytes", "connected", "mode"],
                       [["df_du", "(32, 32)", "32 x 32", "float64", "8192 B (8.0 KiB)", "yes", "reverse"]],
                       wrap=["bytes"])
    out = console.file.getvalue()
    assert "…" not in out
    for text in ("df_du", "(32, 32)", "32 x 32", "float64", "(8.0 KiB)", "connected", "reverse"):
        assert any(text in line for line in out.splitlines()), (width, text, out)
    if width >= 80:  # a standard terminal keeps the table
        assert "(32, 32)  32 x 32  float64" in out


def test_nan_and_inf_are_shown_and_highlighted(colour_env):
    block = RenderBlock("J", np.array([[np.nan, np.inf], [-np.inf, 1.0]]))
    plain = render([block])
    assert "nan" in plain and "inf" in plain and "-inf" in plain
    coloured = render([block], file=FakeTerminal())
    assert "1;31" in coloured  # bold red


def test_zero_dimensional_block_is_one_value():
    out = render([RenderBlock("df_dx", np.float64(2.5), shape=())])
    assert "df_dx" in out and "shape=()" in out and "2.5" in out


def test_one_dimensional_block_is_a_column_with_labels():
    out = render([RenderBlock("grad", np.array([1.5, -2.0, 3.0]), col_labels=["x[0]", "x[1]", "x[2]"])])
    rows = [line.strip("│ ").split() for line in out.splitlines() if "x[" in line]
    assert rows == [["x[0]", "1.5"], ["x[1]", "-2"], ["x[2]", "3"]]


def test_empty_block_says_so():
    assert "(empty)" in render([RenderBlock("J", np.zeros((0, 3)))])


def test_wrong_label_count_is_a_programming_error():
    with pytest.raises(ValueError):
        render([RenderBlock("J", np.zeros((3, 2)), row_labels=["a", "b"])])


def test_more_than_two_dimensions_is_a_programming_error():
    with pytest.raises(ValueError):
        RenderBlock("J", np.zeros((2, 2, 2)))


def test_labels_are_printed_verbatim_not_as_markup():
    out = render([RenderBlock("J", np.eye(2), row_labels=["[bold]a[/bold]", "b"], col_labels=["[red]", "y"])])
    assert "[bold]a[/bold]" in out and "[red]" in out


# ---------------------------------------------------------------- colour and terminals


def test_no_escape_codes_when_not_a_terminal(colour_env, rng):
    out = render([labelled(rng.normal(size=(5, 5)))], RenderHeader("t", {"a": "b"}), heatmap=True)
    assert ESC not in out


def test_force_color_colours_a_pipe_unless_color_never(colour_env, monkeypatch, rng):
    # FORCE_COLOR is honoured as rich and force-color.org read it; --color never still wins.
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert ESC in render([labelled(rng.normal(size=(5, 5)))], RenderHeader("t", {"a": "b"}), heatmap=True)
    file = io.StringIO()
    render_table(make_console(file, color="never", width=80), None, [RenderBlock("J", np.eye(3))], heatmap=True)
    assert ESC not in file.getvalue()


def test_no_escape_codes_when_no_color_is_set(colour_env, monkeypatch, rng):
    monkeypatch.setenv("NO_COLOR", "1")
    out = render([labelled(rng.normal(size=(5, 5)))], RenderHeader("t", {"a": "b"}), heatmap=True, file=FakeTerminal())
    assert ESC not in out


def test_empty_no_color_does_not_disable_colour(colour_env, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "")
    assert make_console(FakeTerminal(), width=80).color_system is not None


def test_no_color_argument_overrides_environment(colour_env):
    out = render([RenderBlock("J", np.eye(3))], file=FakeTerminal(), heatmap=True)
    assert ESC in out
    file = FakeTerminal()
    render_table(make_console(file, no_color=True, width=80), None, [RenderBlock("J", np.eye(3))], heatmap=True)
    assert ESC not in file.getvalue()


def test_heatmap_colours_backgrounds_by_magnitude(colour_env):
    file = FakeTerminal()
    console = Console(file=file, force_terminal=True, color_system="truecolor", width=100)
    render_table(console, None, [RenderBlock("J", np.array([[0.0, 1.0], [-4.0, 2.0]]))], heatmap=True)
    out = file.getvalue()
    backgrounds = {part for part in out.split(ESC) if ";48;2;" in part or part.startswith("48;2;")}
    assert len(backgrounds) == 3  # three distinct non-zero magnitudes, three colours
    assert re.search(r"\x1b\[2m *0\x1b\[0m", out)  # the exact zero is dim, with no background
    assert "colour: |value|/4" in out


def test_without_heatmap_cells_have_no_background(colour_env):
    file = FakeTerminal()
    console = Console(file=file, force_terminal=True, color_system="truecolor", width=100)
    render_table(console, None, [RenderBlock("J", np.array([[0.0, 1.0], [-4.0, 2.0]]))])
    assert "48;2;" not in file.getvalue()


def test_make_console_respects_pinned_width():
    console = make_console(io.StringIO(), width=33)
    assert console.width == 33 and not console.is_terminal


# ---------------------------------------------------------------- plain text


def test_format_plain_text_exact():
    block = RenderBlock("df_dx", np.array([[1.0, 0.5, -2.0], [1e-10, 123456789.0, 0.0]]))
    assert format_plain([block], precision=4) == "# df_dx shape=2x3\n1 0.5 -2\n1e-10 1.235e+08 0\n"


def test_format_plain_csv_without_headers_is_pure_data():
    block = RenderBlock("df_dx", np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert format_plain([block], precision=6, delimiter=",", headers=False) == "1,2\n3,4\n"


def test_format_plain_several_blocks_always_have_headers():
    blocks = [RenderBlock("df_dx", np.eye(2)), RenderBlock("df_dy", np.array([7.0]), shape=(1,))]
    expected = "# df_dx shape=2x2\n1,0\n0,1\n# df_dy shape=1\n7\n"
    assert format_plain(blocks, precision=6, delimiter=",", headers=False) == expected


def test_format_plain_nonfinite_zero_and_one_dimensional():
    blocks = [RenderBlock("s", np.float64(-0.25)), RenderBlock("v", np.array([np.nan, np.inf, -np.inf]))]
    assert format_plain(blocks, precision=6) == "# s shape=()\n-0.25\n# v shape=3\nnan\ninf\n-inf\n"


def test_format_plain_header_shows_full_block_shape():
    block = RenderBlock("d2f", np.zeros((2, 4)), shape=(2, 2, 2))
    assert format_plain([block], precision=3).splitlines()[0] == "# d2f shape=2x2x2"


def test_format_plain_round_trips_through_loadtxt(rng):
    matrix = rng.normal(size=(4, 3))
    text = format_plain([RenderBlock("J", matrix)], precision=17, delimiter=",")
    np.testing.assert_array_equal(np.loadtxt(io.StringIO(text), delimiter=","), matrix)


def test_format_plain_integers_and_booleans():
    blocks = [RenderBlock("i", np.array([[1, -2]])), RenderBlock("b", np.array([[True, False]]))]
    assert format_plain(blocks, precision=6, headers=False) == "# i shape=1x2\n1 -2\n# b shape=1x2\n1 0\n"


# ---------------------------------------------------------------- progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_silent_when_not_a_terminal():
    file = io.StringIO()
    progress = make_progress(make_console(file, width=80), delay=0.0)
    progress.start("reverse sweeps (rows)", 10)
    progress.advance(5)
    assert not progress.live
    progress.finish()
    progress.stop()
    assert file.getvalue() == ""


def test_progress_waits_for_the_delay_then_draws_on_a_terminal(colour_env):
    file, clock = FakeTerminal(), Clock()
    progress = ProgressReporter(make_console(file, width=100), delay=1.0, clock=clock, watch=False)
    with progress:
        progress.start("reverse sweeps (rows)", 10)
        progress.advance(3)
        clock.now += 0.5
        progress.advance(1)
        assert not progress.live and file.getvalue() == ""
        clock.now += 0.6
        progress.advance(1)
        assert progress.live
        progress.advance(2)
        progress._progress.refresh()
        assert "7/10" in file.getvalue() and "reverse sweeps (rows)" in file.getvalue()
        assert "0:00:01" in file.getvalue()  # the time since the phase began, not since its bar appeared
        progress.finish()
        assert not progress.live
    assert not progress.live


def test_progress_of_unknown_length_shows_its_count(colour_env):
    file, clock = FakeTerminal(), Clock()
    with ProgressReporter(make_console(file, width=100), delay=1.0, clock=clock, watch=False) as progress:
        progress.start("recording f (operations)", None)
        clock.now += 1.5
        progress.advance(12345)
        progress._progress.refresh()
        assert "recording f (operations)" in file.getvalue() and "12,345" in file.getvalue()


def test_progress_phases_nest_and_each_finish_ends_the_last_started(colour_env):
    file, clock = FakeTerminal(), Clock()
    with ProgressReporter(make_console(file, width=100), delay=1.0, clock=clock, watch=False) as progress:
        progress.start("writing J.npy (rows)", 4)
        clock.now += 2.0
        progress.start("reverse sweeps (rows)", 8)
        progress.advance(4)
        assert [t.description for t in progress._progress.tasks] == ["writing J.npy (rows)"]  # the inner: not yet
        clock.now += 1.0
        progress.advance(4)
        progress._progress.refresh()
        assert "8/8" in file.getvalue() and "0/4" in file.getvalue()
        progress.finish()
        progress.advance(4)
        assert progress.live and [t.completed for t in progress._progress.tasks] == [4]
        progress.finish()
        assert not progress.live


def test_progress_shows_a_phase_that_reports_nothing_once_it_is_due(colour_env):
    with ProgressReporter(make_console(FakeTerminal(), width=100), delay=0.05) as progress:
        progress.start("finite differences (columns)", 3)
        deadline = time.monotonic() + 5.0
        while not progress.live and time.monotonic() < deadline:
            time.sleep(0.02)
        assert progress.live  # the watcher thread drew it, with no advance()
    assert not progress.live


def test_progress_stop_without_start_is_harmless():
    progress = make_progress(make_console(FakeTerminal(), width=80))
    progress.advance(3)
    progress.finish()
    progress.stop()
    progress.stop()
    assert not progress.live


# ---------------------------------------------------------------- docs


def test_doctests_pass():
    for module in (jaccli.cli.render.terminal, jaccli.cli.render.plain, jaccli.cli.render.progress, jaccli.cli.render.reports):
        assert doctest.testmod(module).failed == 0
