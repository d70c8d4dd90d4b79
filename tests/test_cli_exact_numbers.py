"""Text and csv on stdout are for machines: every float64 reads back exactly, as from the .csv file."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from .test_cli import invoke, make_runner

# Values whose short forms do not read back: thirds, a subnormal, extremes, a negative zero, 0.1 * 3.
X = "[0.3333333333333333, 5e-324, 1.7976931348623157e+308, -0.0, 0.30000000000000004, 123456789.12345679]"


@pytest.mark.parametrize("fmt, delimiter", [("csv", ","), ("text", " ")])
def test_csv_and_text_on_stdout_read_back_every_float64_exactly(tmp_path, fmt, delimiter):
    runner = make_runner()
    # diag(x) * 1: the Jacobian of x * c holds c; of x * x / 3, values whose 6-digit forms differ from them
    expression = "x * x / 3 + x * 1e-7"
    saved = invoke(runner, "jacobian", "-e", expression, X, "-o", str(tmp_path / "J.npy"))
    assert saved.exit_code == 0, saved.stderr
    J = np.load(tmp_path / "J.npy")
    shown = invoke(runner, "jacobian", "-e", expression, X, "--format", fmt, "--precision", "3")
    assert shown.exit_code == 0, shown.stderr
    read = np.array([[float(v) for v in line.split(delimiter)] for line in shown.stdout.splitlines()])
    assert_array_equal(read.view(np.uint64), J.view(np.uint64))  # bit for bit, the sign of zero too
    # The same text as the .csv/.txt file
    suffix = ".csv" if fmt == "csv" else ".txt"
    assert invoke(runner, "jacobian", "-e", expression, X, "-o", str(tmp_path / f"J{suffix}")).exit_code == 0
    assert (tmp_path / f"J{suffix}").read_text() == shown.stdout


def test_precision_rounds_the_table_only():
    table = invoke(make_runner(), "jacobian", "-e", "x / 3", "[1, 2]", "--format", "table", "--precision", "3")
    assert "0.333 " in table.stdout and "0.3333333333333333" not in table.stdout
