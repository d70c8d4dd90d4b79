"""The suite's own scheduling: `pytest -n auto --dist loadgroup` (the README's command) runs each module
marked xdist_group on one worker, its module fixtures made once (test_replay_memory's measured calls,
test_docs_examples' commands). pytest-xdist marks such a test by a suffix of its node id, which a pytest
it does not know may drop without a word (pytest-dev/pytest-xdist#1386: pytest 9.2): this installed pair
is checked on a module of its own. A worker that crashes ends the run (conftest.py's one setting): replaced, it
can leave a loadgroup run waiting for ever (pytest-dev/pytest-xdist#1378); a test that is stuck ends its worker
(pyproject.toml's faulthandler settings), so it ends the run too."""

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


ROOT = Path(__file__).resolve().parents[1]


def _run_as_the_suite(folder: Path, what: str) -> subprocess.CompletedProcess:
    """pytest on the test modules in `folder` as the suite runs: this project's conftest.py as a plugin, the
    README's -n and --dist; a failed test if it is still going after 120 s."""
    try:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest", "-q",
                               "-n", "2", "--dist", "loadgroup", str(folder)],
                              cwd=folder, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} was still going after 120 s")


def test_a_crashed_worker_ends_the_run_instead_of_hanging_it(tmp_path):
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
    done = _run_as_the_suite(tmp_path, "a run whose worker crashed (pytest-dev/pytest-xdist#1378)")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "crashed while running 'test_crash.py::test_crash'" in done.stdout, done.stdout
    assert "replacing crashed worker" not in done.stdout, done.stdout


def test_a_stuck_test_ends_the_run_with_its_traceback(tmp_path):
    # pyproject.toml's settings, with the timeout scaled down from its 300 s to 2.
    settings = (ROOT / "pyproject.toml").read_text()
    assert "\nfaulthandler_timeout = 300\n" in settings and "\nfaulthandler_exit_on_timeout = true\n" in settings
    (tmp_path / "pytest.ini").write_text("[pytest]\nfaulthandler_timeout = 2\nfaulthandler_exit_on_timeout = true\n")
    (tmp_path / "test_stuck.py").write_text("import time\n\n\ndef test_stuck():\n    time.sleep(600)\n")
    for k in range(4):
        (tmp_path / f"test_quick{k}.py").write_text("def test_a():\n    pass\n")
    done = _run_as_the_suite(tmp_path, "a run with a stuck test")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "crashed while running 'test_stuck.py::test_stuck'" in done.stdout, done.stdout
    assert "Timeout (0:00:02)!" in done.stdout + done.stderr and "test_stuck" in done.stdout + done.stderr
