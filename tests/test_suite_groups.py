"""The suite's own scheduling: `pytest -n auto --dist loadgroup` (the README's command) runs each module
marked xdist_group on one worker, its module fixtures made once (test_replay_memory's measured calls,
test_docs_examples' commands). pytest-xdist marks such a test by a suffix of its node id, which a pytest
it does not know may drop without a word (pytest-dev/pytest-xdist#1386: pytest 9.2): this installed pair
is checked on a module of its own. A worker that crashes ends the run (conftest.py's one setting): replaced, it
can leave a loadgroup run waiting for ever (pytest-dev/pytest-xdist#1378)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def test_the_installed_pytest_and_xdist_run_a_group_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent("""
        import os, pytest
        pytestmark = pytest.mark.xdist_group("one")
        @pytest.mark.parametrize("k", range(6))
        def test_worker(k):
            with open(f"worker-{k}", "w") as out:
                out.write(os.environ["PYTEST_XDIST_WORKER"])
        """))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # (none of this project's settings)
    (tmp_path / "test_other.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist",
                           "loadgroup", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    workers = {(tmp_path / f"worker-{k}").read_text() for k in range(6)}
    assert len(workers) == 1, (f"one xdist_group's tests ran on workers {sorted(workers)}: this pytest and "
                               "pytest-xdist do not group (see pyproject.toml's test extra)")


def test_a_crashed_worker_ends_the_run_instead_of_hanging_it(tmp_path):
    # As a module of the suite runs: this project's conftest.py as a plugin, the README's -n and --dist.
    (tmp_path / "test_grouped.py").write_text(textwrap.dedent("""
        import time, pytest
        pytestmark = pytest.mark.xdist_group("one")
        @pytest.mark.parametrize("k", range(4))
        def test_slow(k):
            time.sleep(0.2)
        """))
    (tmp_path / "test_crash.py").write_text("import os, time\n\n\ndef test_crash():\n    time.sleep(0.5)\n"
                                            "    os._exit(1)\n")
    for k in range(6):
        (tmp_path / f"test_quick{k}.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    root = Path(__file__).resolve().parents[1]
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest", "-q",
                               "-n", "2", "--dist", "loadgroup", str(tmp_path)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(root)})
    except subprocess.TimeoutExpired:
        pytest.fail("a run whose worker crashed was still going after 120 s (pytest-dev/pytest-xdist#1378)")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "crashed while running 'test_crash.py::test_crash'" in done.stdout, done.stdout
    assert "replacing crashed worker" not in done.stdout, done.stdout
