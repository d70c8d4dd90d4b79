"""-o J.zarr: a zarr group of the result's blocks, written by this process or by Dask's workers, against one process."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

import jaccli.io.zarr_store
from jaccli.errors import UsageError
from jaccli.io.zarr_store import write_zarr

from .test_cli import invoke, make_runner
from .test_cli_subprocess import JACCLI, clean_env
from .test_parallel import local_cluster

pytestmark = pytest.mark.xdist_group("test_parallel_zarr")  # (pytest -n: one worker, module fixtures made once)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two worker processes of this module's own (the killed run's test leaves one of them busy)."""
    yield from local_cluster(tmp_path_factory, set_as_default=False)


def arrays(store: Path) -> dict[str, np.ndarray]:
    group = zarr.open_group(str(store), mode="r")
    return {key: group[key][...] for key in group.array_keys()}


def test_this_process_writes_a_group_with_an_array_per_block_named_like_the_npz_members(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two.py").write_text("import numpy as np\n\ndef f(x, y):\n    return np.sin(x) * y.sum(), x * y\n")
    np.save("x.npy", np.linspace(-1.0, 1.0, 5))
    np.save("y.npy", np.linspace(0.5, 2.0, 5))
    one = invoke(make_runner(), "jacobian", "two.py", "x.npy", "y.npy", "-o", "J.npz")
    done = invoke(make_runner(), "jacobian", "two.py", "x.npy", "y.npy", "-o", "J.zarr")
    assert one.exit_code == 0 and done.exit_code == 0, done.stderr
    expected = {key: value for key, value in np.load("J.npz").items() if key != "__meta__"}
    written = arrays(tmp_path / "J.zarr")
    assert sorted(written) == sorted(expected) == ["df0_dx", "df0_dy", "df1_dx", "df1_dy"]
    for key in expected:
        assert written[key].dtype == expected[key].dtype and written[key].tobytes() == expected[key].tobytes()
    x = np.load("x.npy")
    np.testing.assert_allclose(written["df1_dy"], np.diag(x), rtol=0, atol=0)  # d(x*y)/dy, closed form
    meta = zarr.open_group("J.zarr", mode="r").attrs["jaccli"]
    assert meta["command"] == "jacobian" and meta["output"] == "J.zarr"
    # One block: still a group, its array under the block's name; an existing store is replaced.
    done = invoke(make_runner(), "jacobian", "-e", "tanh(x) * 2", "x.npy", "-o", "J.zarr")
    assert done.exit_code == 0, done.stderr
    assert list(arrays(tmp_path / "J.zarr")) == ["df_dx"]
    np.testing.assert_allclose(arrays(tmp_path / "J.zarr")["df_dx"], np.diag(2 / np.cosh(x) ** 2), rtol=1e-15)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.npz", "J.zarr", "two.py", "x.npy", "y.npy"]


def test_an_existing_path_that_is_not_a_zarr_store_is_never_replaced(tmp_path):
    (tmp_path / "J.zarr").mkdir()
    (tmp_path / "J.zarr" / "notes.txt").write_text("mine\n")
    done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "-o", str(tmp_path / "J.zarr"))
    assert done.exit_code == 2 and done.stderr.count("\n") == 1, done.stderr
    assert (tmp_path / "J.zarr" / "notes.txt").read_text() == "mine\n"
    with pytest.raises(UsageError):
        write_zarr(tmp_path / "J.zarr", {"df_dx": np.eye(2)})
    assert os.listdir(tmp_path / "J.zarr") == ["notes.txt"] and len(os.listdir(tmp_path)) == 1


@pytest.mark.parametrize("failing", [1, 2])
@pytest.mark.parametrize("error", [OSError("disk gone"), KeyboardInterrupt()])
def test_a_failing_rename_leaves_the_store_there_as_it_was(tmp_path, monkeypatch, failing, error):
    target = tmp_path / "J.zarr"
    write_zarr(target, {"df_dx": np.eye(3)})
    renames = []
    real_rename = os.rename

    def rename(src, dst):  # the store there moved aside (1), the new one into place (2)
        renames.append(src)
        if len(renames) == failing:
            raise error
        real_rename(src, dst)

    monkeypatch.setattr(jaccli.io.zarr_store.os, "rename", rename)
    with pytest.raises(type(error)):
        write_zarr(target, {"df_dx": np.ones((2, 2)), "df_dy": np.zeros(2)})
    assert arrays(target).keys() == {"df_dx"} and np.array_equal(arrays(target)["df_dx"], np.eye(3))
    assert os.listdir(tmp_path) == ["J.zarr"]  # no temporary store left beside it


def test_the_workers_write_the_chunks_bit_for_bit_as_one_process(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.linspace(-1.0, 1.0, 40))
    np.save("y.npy", np.linspace(0.5, 1.5, 3))

    def refuse(*args):
        raise AssertionError("the client wrote rows of the result")

    # The cluster is up: every chunk goes to the workers (other processes), none is written here.
    monkeypatch.setattr(jaccli.io.zarr_store, "write_rows", refuse)
    for command, expr, inputs, npz in (("jacobian", "cumsum(tanh(x)) * x", ["x.npy"], False),
                                       ("hessian", "sum(tanh(x) ** 2)", ["x.npy"], False),
                                       ("jacobian", "cumsum(tanh(x)) * sum(y)", ["x.npy", "y.npy"], True)):
        one = "one.npz" if npz else "one.npy"
        alone = invoke(make_runner(), command, "-e", expr, *inputs, "-o", one, "--chunk-size", "6")
        done = invoke(make_runner(), command, "-e", expr, *inputs, "-o", "J.zarr", "--chunk-size", "6",
                      "--scheduler", cluster.scheduler.address, "--stats")
        assert alone.exit_code == 0 and done.exit_code == 0, done.stderr
        expected = {k: v for k, v in np.load(one).items() if k != "__meta__"} if npz else {
            "d2f_dx_dx" if command == "hessian" else "df_dx": np.load(one)}
        # 40 rows in chunks of 6 per block, each on a worker (a Hessian's twice: swept, then made exactly symmetric)
        tasks = 7 * len(expected) * (2 if command == "hessian" else 1)
        assert "(streamed)" in done.stderr and f"stats: dask: {tasks} blocks on 2 worker" in done.stderr
        # the workers' sweeps counted as one process counts its own (the report said 0 sweeps, mode cached)
        mode = "forward-over-reverse" if command == "hessian" else "reverse"
        assert f"stats: sweeps: {7 * len(expected)}, seeds: {40 * len(expected)}, chunk size: 6, mode: {mode}" \
            in done.stderr, done.stderr
        written = arrays(tmp_path / "J.zarr")
        assert sorted(written) == sorted(expected)
        for key, value in expected.items():
            assert written[key].tobytes() == value.tobytes(), key  # the same sweeps: the same bits
            assert zarr.open_group("J.zarr", mode="r")[key].chunks[0] % 6 == 0  # whole sweeps of the chunk size
        assert zarr.open_group("J.zarr", mode="r").attrs["jaccli"]["streamed"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["J.zarr", "one.npy", "one.npz", "x.npy", "y.npy"]


def test_a_hessian_written_by_the_workers_is_exactly_symmetric_as_one_processes(cluster, tmp_path, monkeypatch):
    # The workers' chunks of rows were written as swept: H - H^T up to 2e-13 where one process's is exactly 0
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two.py").write_text(
        "import numpy as np\n\nA = np.random.default_rng(3).normal(size=(12, 12)) / 4\n\n"
        "def f(x, y):\n    v = x.ravel()\n"
        "    return np.sum(np.tanh(A @ v) ** 2 * y) + np.sum(np.cumsum(np.sin(v)) ** 2) * np.sum(y ** 2)\n")
    x = np.random.default_rng(1).normal(size=(4, 3))
    y = np.random.default_rng(2).uniform(0.5, 1.5, size=12)
    np.save("x.npy", x)
    np.save("y.npy", y)
    from jaccli.parallel import worker

    def refuse(*args):
        raise AssertionError("the client wrote rows of the result")

    monkeypatch.setattr(jaccli.io.zarr_store, "write_rows", refuse)
    monkeypatch.setattr(worker, "symmetric_rows", refuse, raising=False)
    alone = invoke(make_runner(), "hessian", "two.py", "x.npy", "y.npy", "-o", "one.npz", "--chunk-size", "3")
    done = invoke(make_runner(), "hessian", "two.py", "x.npy", "y.npy", "-o", "H.zarr", "--chunk-size", "3",
                  "--scheduler", cluster.scheduler.address, "--stats")
    assert alone.exit_code == 0 and done.exit_code == 0, done.stderr
    H = arrays(tmp_path / "H.zarr")
    xx, yy = H["d2f_dx_dx"].reshape(12, 12), H["d2f_dy_dy"]
    assert np.array_equal(xx, xx.T) and np.array_equal(yy, yy.T)  # each pair of entries one number
    assert np.array_equal(H["d2f_dx_dy"].reshape(12, 12), H["d2f_dy_dx"].reshape(12, 12).T)
    # 4 blocks of 12 rows in 4 chunks each, swept, then made exactly symmetric: every task on a worker
    assert "stats: dask: 32 blocks on 2 worker" in done.stderr and ", 0 here" in done.stderr, done.stderr
    assert "stats: sweeps: 16, seeds: 48, chunk size: 3" in done.stderr, done.stderr
    assert sorted(os.listdir("H.zarr")) == ["d2f_dx_dx", "d2f_dx_dy", "d2f_dy_dx", "d2f_dy_dy", "zarr.json"]
    one = np.load("one.npz")
    for key, value in H.items():
        assert value.shape == one[key].shape
        np.testing.assert_allclose(value, one[key], rtol=0, atol=1e-14 * np.abs(one[key]).max())
    # against central differences of f itself, in float64
    spec = importlib.util.spec_from_file_location("two", tmp_path / "two.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    z0 = np.concatenate([x.ravel(), y])
    f = lambda z: module.f(z[:12].reshape(4, 3), z[12:])  # noqa: E731
    h, eye = 1e-4, np.eye(24)
    fd = np.array([[(f(z0 + h * (eye[a] + eye[b])) - f(z0 + h * (eye[a] - eye[b])) - f(z0 - h * (eye[a] - eye[b]))
                     + f(z0 - h * (eye[a] + eye[b]))) / (4 * h * h) for b in range(24)] for a in range(24)])
    whole = np.block([[xx, H["d2f_dx_dy"].reshape(12, 12)], [H["d2f_dy_dx"].reshape(12, 12), yy]])
    np.testing.assert_allclose(whole, fd, rtol=1e-5, atol=1e-5)  # (rounding in the differences: ~1.4e-6)


def test_a_chunk_written_after_the_store_was_removed_leaves_nothing(tmp_path, monkeypatch):
    # A run stopped by a signal removes its temporary store while a worker may still write a chunk into an array it
    # opened before: the write made the chunk's directories again, left beside the target with no metadata
    from jaccli.io.zarr_store import ZarrStore, write_rows

    store = ZarrStore(tmp_path / "J.zarr")
    store.create("df_dx", (4, 4), np.float64, 0, 2)
    path = str(store.path)
    opened = zarr.open_array(path, path="df_dx", mode="r+")  # (the worker's, before the store went)
    store.abort()
    monkeypatch.setattr(zarr, "open_array", lambda *args, **kwargs: opened)
    write_rows(path, "df_dx", 0, 2, np.ones((2, 4)))
    assert os.listdir(tmp_path) == []


def test_a_killed_run_leaves_no_half_store_at_the_target(cluster, tmp_path):
    # Worker 1 is slow to record f: its block is still out when worker 0 has written chunks of its own (60 s: room
    # for a loaded machine; the run is killed as soon as a chunk is there, and the cluster ends its workers after)
    (tmp_path / "slow.py").write_text("import time\nimport numpy as np\nfrom distributed import get_worker\n\n"
                                      "def f(x):\n    try:\n        if get_worker().name == 1:\n"
                                      "            time.sleep(60)\n    except ValueError:\n        pass\n"
                                      "    return np.cumsum(np.tanh(x))\n")
    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 40))
    proc = subprocess.Popen(JACCLI + ["jacobian", "slow.py", "x.npy", "-o", "J.zarr", "--chunk-size", "2",
                                      "--scheduler", cluster.scheduler.address], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, env=clean_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".J.zarr.*.tmp/df_dx/c/*")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        assert list(tmp_path.glob(".J.zarr.*.tmp/df_dx/c/*")), "worker 0 wrote no chunk in 60 s"
        os.killpg(proc.pid, signal.SIGKILL)  # jaccli and the child that runs the command (jaccli.cli.crash_watch)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    half = list(tmp_path.glob(".J.zarr.*.tmp"))
    assert len(half) == 1 and list(half[0].glob("df_dx/c/*"))  # killed with chunks written, beside the target
    assert not (tmp_path / "J.zarr").exists()
