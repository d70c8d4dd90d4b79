"""Faults in the user's function and odd terminals, run through the installed `jaccli`: a function that
forks, NaN in a check, a zero-width terminal, crashes and exit codes (issue 42)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from .test_cli_subprocess import jaccli


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_a_forked_child_never_writes_prints_or_exits_through_jaccli(tmp_path):
    _write(tmp_path, "fork.py", """\
        import os

        def f(x):
            if os.fork() == 0:
                return x * 3.0
            return x * 2.0
        """)
    (tmp_path / "x.csv").write_text("1.0\n2.0\n")
    # subprocess.run reads the pipes to their end: a child that lives on holds them, so it is waited for too.
    written = jaccli("jacobian", "fork.py", "x.csv", "-o", "J.csv", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert written.stderr.count("wrote J.csv") == 1, written.stderr
    assert np.array_equal(np.loadtxt(tmp_path / "J.csv", delimiter=","), 2.0 * np.eye(2))
    shown = jaccli("jacobian", "fork.py", "x.csv", "--format", "csv", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["2,0", "0,2"], shown.stdout


def test_a_child_forked_while_the_file_loads_ends_there(tmp_path):
    _write(tmp_path, "fork_at_import.py", """\
        import os

        os.fork()

        def f(x):
            return x * 2.0
        """)
    (tmp_path / "x.csv").write_text("1.0\n2.0\n")
    shown = jaccli("jacobian", "fork_at_import.py", "x.csv", "--format", "csv", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["2,0", "0,2"], shown.stdout
