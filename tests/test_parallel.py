"""Parallel evaluation on Dask: J.to_dask(), --workers and --scheduler, against one process and closed forms.

One LocalCluster of two single-threaded worker processes serves the module; its workers run in a
directory of their own, so a function file reaches them only by travelling with the tasks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import distributed
import numpy as np
import pytest

import jaccli
from jaccli.api.evaluator import REMOTE_SWEEPS
from jaccli.errors import ResourceLimitError
from jaccli.parallel.cluster import Cluster
from jaccli.parallel.remote_sweeps import RemoteSweeps

from .helpers import central_diff
from .test_cli import invoke, make_runner
from .test_cli_subprocess import JACCLI, at_a_terminal, clean_env
from .test_error_messages import short_connect_timeout

pytestmark = pytest.mark.xdist_group("test_parallel")  # (pytest -n: one worker, module fixtures made once)

A = np.random.default_rng(7).normal(size=(30, 30)) / 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from local_cluster(tmp_path_factory)


def local_cluster(tmp_path_factory, **client_options):
    """Two worker processes started in an empty directory (not the tests', not the functions'): a client of
    them, yielded, and closed with them after."""
    elsewhere = tmp_path_factory.mktemp("workers-run-here")
    before, environ = os.getcwd(), dict(os.environ)
    os.chdir(elsewhere)
    try:
        local = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                         silence_logs=40)  # (":0": any free port, as two suites side by side need)
    finally:
        os.chdir(before)
        _restore(environ)
    client = distributed.Client(local, **client_options)
    yield client
    client.close()
    local.close()
    _restore(environ)


def _restore(environ: dict) -> None:
    """os.environ as it was: Dask's nanny sets its workers' variables (MALLOC_TRIM_THRESHOLD_, OMP_NUM_THREADS,
    PYTHONHASHSEED...) in this process's own, and every later test's subprocess inherited them (a fresh
    process's heap thresholds, tests/test_heap_thresholds.py, are then the variable's, not jaccli's)."""
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)


def model(x):
    """tanh and cumsum steps and a matrix product: rows that a block of any size computes alike."""
    y = x
    for _ in range(6):
        y = np.cumsum(np.tanh(A @ y)) / 8
    return y


@contextlib.contextmanager
def remote_on(client, function=None):
    """Evaluators made inside send their sweeps to `client`'s workers."""
    remote = RemoteSweeps(Cluster(address=client.scheduler_info()["address"]), function)
    token = REMOTE_SWEEPS.set(remote)
    try:
        yield remote
    finally:
        REMOTE_SWEEPS.reset(token)
        remote.cluster.close()


class Observer:
    """A progress observer (jaccli.observing) that keeps the blocks of sweeps it is told of; `first()` runs
    when the first one is done."""

    def __init__(self, first=None):
        self.phases, self.advanced, self.first, self.open = [], [], first, []

    def start(self, phase, total):
        self.phases.append((phase, total))
        self.open.append(phase)

    def advance(self, n):
        if self.open and "sweeps" in self.open[-1]:
            self.advanced.append(n)
            if self.first is not None and len(self.advanced) == 1:
                self.first()

    def finish(self):
        self.open.pop()


def run(args, cwd, **env):
    return subprocess.run(JACCLI + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          env=clean_env(**env), timeout=120)


# ---------------------------------------------------------------- nothing changes without the options


def test_without_workers_or_scheduler_nothing_imports_dask(tmp_path):
    code = ("import sys, jaccli\n"
            "from jaccli.cli.main import main\n"
            "imported = 'dask' in sys.modules or 'distributed' in sys.modules\n"
            "try:\n    main(['jacobian', '-e', 'tanh(x)', '[1, 2, 3]', '-o', 'J.npy'])\n"
            "except SystemExit:\n    pass\n"
            "print(imported, 'dask' in sys.modules, 'distributed' in sys.modules, 'cloudpickle' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=clean_env())  # (DASK_SCHEDULER_ADDRESS unset)
    assert done.stdout.split() == ["False"] * 4, done.stderr
    assert (tmp_path / "J.npy").is_file()


# ---------------------------------------------------------------- the library: J.to_dask()


def test_to_dask_is_the_jacobian_bit_for_bit_in_row_chunks(cluster):
    x = np.linspace(-1.0, 1.0, 30)
    J = jaccli.jacobian(lambda v: model(v) * 2.0, x, chunk_size=4)  # a lambda: f travels by value (cloudpickle)
    D = J.to_dask()
    assert D.shape == J.shape and D.chunks[0] == (16, 14)  # one chunk per worker thread, in whole sweeps of 4
    whole = np.asarray(J)
    with distributed.get_task_stream(client=cluster) as ran:
        assert np.array_equal(D[2:12].compute(), whole[2:12])
    assert _chunks_computed(ran) == 1  # only the chunk it touches
    with distributed.get_task_stream(client=cluster) as ran:
        assert np.array_equal(D.compute(), whole)  # the same sweeps as one process: the same bits
    assert _chunks_computed(ran) == 2
    np.testing.assert_allclose(whole, central_diff(lambda v: model(v) * 2.0, x), rtol=1e-6, atol=1e-8)
    # With the chunk size left to jaccli, one process sweeps all 30 rows at once and the chunks 15 each:
    # BLAS may round a matrix product of 15 rows differently from one of 30.
    np.testing.assert_allclose(jaccli.jacobian(lambda v: model(v) * 2.0, x).to_dask().compute(), whole,
                               rtol=1e-13, atol=1e-16)


def _chunks_computed(stream) -> int:
    """The to_dask chunks among the tasks the workers ran (their keys name the task `_rows`)."""
    names = [task["key"][0] if isinstance(task["key"], tuple) else task["key"] for task in stream.data]
    return sum(1 for name in names if "rows" in name and "finalize" not in name or "getitem-rows" in name)


def test_matrix_to_dask_is_the_flattened_view_and_hessians_too(cluster):
    x = np.linspace(0.1, 1.0, 12).reshape(3, 4)
    J = jaccli.jacobian(lambda v: np.sin(v) * v.sum(), x)
    assert J.to_dask().shape == (3, 4, 3, 4)
    assert np.array_equal(J.to_dask().compute(), np.asarray(J))
    assert np.array_equal(J.matrix.to_dask(rows_per_chunk=5).compute(), np.asarray(J.matrix))
    w = np.linspace(-0.5, 0.7, 9)
    H = jaccli.hessian(lambda v: np.sum(v ** 3) * np.sum(v), w)
    exact = 6 * np.diag(w) * w.sum() + 3 * (w ** 2)[:, None] + 3 * (w ** 2)[None, :]
    np.testing.assert_allclose(H.to_dask().compute(), exact, rtol=1e-12)


# ---------------------------------------------------------------- evaluators whose sweeps go to the workers


def test_remote_sweeps_give_one_process_result_bit_for_bit_and_report_each_block(cluster):
    x = np.linspace(-1.0, 1.0, 30)
    alone = np.asarray(jaccli.jacobian(model, x, chunk_size=4))
    seen = Observer()
    with remote_on(cluster) as remote, jaccli.observing(seen):
        together = np.asarray(jaccli.jacobian(model, x, chunk_size=4))
    assert np.array_equal(together, alone)  # the same blocks, written in the same order
    assert ("reverse sweeps (rows)", 30) in seen.phases
    assert remote.stats.tasks == len(seen.advanced) == 8 and sum(seen.advanced) == 30  # each block as it is in
    H_alone = np.asarray(jaccli.hessian(lambda v: np.sum(np.tanh(A @ v) ** 2), x, chunk_size=3))
    with remote_on(cluster):
        H = np.asarray(jaccli.hessian(lambda v: np.sum(np.tanh(A @ v) ** 2), x, chunk_size=3))
    assert np.array_equal(H, H_alone)


# ---------------------------------------------------------------- the command line


@pytest.fixture
def workers_elsewhere(monkeypatch):
    """The function file's directory as workers on other machines see it: not there (its origin named a
    directory that no worker has), so the files sent with the tasks are what they run."""
    from jaccli.parallel import payload

    real = payload.source_files

    def sent_from_elsewhere(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), origin="/nonexistent/the-client-machine/project")

    monkeypatch.setattr(payload, "source_files", sent_from_elsewhere)


def _user_files(tmp_path: Path) -> Path:
    """A function file that imports a sibling module and a package of its directory."""
    home = tmp_path / "project"
    (home / "pkg").mkdir(parents=True)
    (home / "pkg" / "__init__.py").write_text("")
    (home / "pkg" / "steps.py").write_text("import numpy as np\n\ndef step(y):\n    return np.cumsum(np.tanh(y)) / 8\n")
    (home / "helper.py").write_text("SCALE = 2.0\n")
    (home / "model.py").write_text("import numpy as np\nfrom helper import SCALE\nfrom pkg.steps import step\n\n"
                                   "def f(x):\n    y = x\n    for _ in range(5):\n        y = step(y)\n"
                                   "    return SCALE * y\n\n"
                                   "def loss(x):\n    return np.sum(step(x) ** 2)\n")
    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 40))
    return home


def test_cli_scheduler_sends_the_function_file_and_its_modules_and_matches_one_process(
        cluster, tmp_path, monkeypatch, workers_elsewhere):
    home = _user_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    address = cluster.scheduler.address
    assert not any(str(home) in p for p in cluster.run(lambda: str(sys.path)).values())
    x = np.load(tmp_path / "x.npy")
    for command, spec in (("jacobian", "model.py"), ("hessian", "model.py:loss")):
        alone = invoke(make_runner(), command, str(home / spec), "x.npy", "-o", "one.npy", "--chunk-size", "6")
        done = invoke(make_runner(), command, str(home / spec), "x.npy", "-o", "many.npy", "--chunk-size", "6",
                      "--scheduler", address, "--stats")
        assert alone.exit_code == 0 and done.exit_code == 0, done.stderr
        assert "stats: dask: 7 blocks on 2 worker threads" in done.stderr  # 40 rows in sweeps of 6, all sent
        assert "stats: dask: one process would have been faster" in done.stderr  # milliseconds of work
        assert np.load("many.npy").tobytes() == np.load("one.npy").tobytes()
        if command == "jacobian":
            def f(v):
                for _ in range(5):
                    v = np.cumsum(np.tanh(v)) / 8
                return 2.0 * v
            np.testing.assert_allclose(np.load("many.npy"), central_diff(f, x), rtol=1e-6, atol=1e-8)
    # the files were unpacked inside each worker's own directory, which Dask removes with the worker
    # (in the system's temporary directory, a worker killed at the cluster's close left them behind)
    def unpacked_inside_the_workers_directory(dask_worker):
        from jaccli.parallel import payload

        home = Path(dask_worker.local_directory)
        return [home in Path(p).parents for p in payload._unpacked_at.values()]

    placed = cluster.run(unpacked_inside_the_workers_directory)
    assert any(placed.values()) and all(all(v) for v in placed.values()), placed


def test_cli_uses_the_scheduler_of_dask_scheduler_address_as_dask_clients_do(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", np.linspace(-1.0, 1.0, 40))
    expr = ["-e", "cumsum(tanh(x)) * x", "x.npy", "--chunk-size", "6", "--stats"]
    alone = invoke(make_runner(), "jacobian", *expr, "-o", "one.npy")
    assert alone.exit_code == 0 and "dask" not in alone.stderr
    done = invoke(make_runner(), "jacobian", *expr, "-o", "many.npy",
                  env={"DASK_SCHEDULER_ADDRESS": cluster.scheduler.address})
    assert done.exit_code == 0, done.stderr
    assert "stats: dask: 7 blocks on 2 worker threads" in done.stderr  # no --scheduler: the variable's
    assert np.load("many.npy").tobytes() == np.load("one.npy").tobytes()
    # --workers says where: a variable naming a scheduler out of reach is not even tried.
    done = run(["jacobian", "-e", "cumsum(tanh(x))", "[1, 2, 3, 4]", "--workers", "2", "--stats"], tmp_path,
               DASK_SCHEDULER_ADDRESS="tcp://127.0.0.1:9")
    assert done.returncode == 0, done.stderr
    assert "stats: dask: one process chosen" in done.stderr


def test_cli_streams_a_large_result_as_blocks_arrive_and_sparse_colours_in_parallel(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Every block to the cluster: timed, this small work may be judged not worth it ("one process chosen")
    monkeypatch.setenv("JACCLI_PARALLEL_MIN_WORK", "0")
    address = cluster.scheduler.address
    np.save("x.npy", np.linspace(-1.0, 1.0, 120))
    expr = ["-e", "cumsum(tanh(x)) * x", "x.npy", "--max-memory", "20KB"]
    alone = invoke(make_runner(), "jacobian", *expr, "-o", "one.npy")
    done = invoke(make_runner(), "jacobian", *expr, "-o", "many.npy", "--scheduler", address)
    assert alone.exit_code == 0 and done.exit_code == 0, done.stderr
    assert "(streamed)" in done.stderr
    assert np.load("many.npy").tobytes() == np.load("one.npy").tobytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.npy", "one.npy", "x.npy"]  # no temporary file left

    sparse = ["-e", "x[2:] * x[1:-1] - tanh(x[:-2])", "x.npy", "--sparse"]
    alone = invoke(make_runner(), "jacobian", *sparse, "-o", "one.npz")
    done = invoke(make_runner(), "jacobian", *sparse, "-o", "many.npz", "--scheduler", address, "--stats")
    assert alone.exit_code == 0 and done.exit_code == 0, done.stderr
    assert "stats: dask: 3 blocks on 2 worker threads" in done.stderr, done.stderr  # 3 colours, one per block
    import scipy.sparse

    one, many = scipy.sparse.load_npz("one.npz"), scipy.sparse.load_npz("many.npz")
    assert one.shape == (118, 120) and (one != many).nnz == 0


def test_cli_small_work_stays_in_one_process_and_says_so(tmp_path):
    done = run(["jacobian", "-e", "cumsum(tanh(x))", "[1, 2, 3, 4]", "--workers", "2", "--stats", "--chunk-size", "1"],
               tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Dask: started" not in done.stderr  # no cluster was started for it
    assert "stats: dask: one process chosen: the rest of the sweeps would take" in done.stderr


def test_cli_scheduler_out_of_reach_is_exit_4_naming_it(monkeypatch):
    short_connect_timeout(monkeypatch)
    done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", "tcp://127.0.0.1:9")
    assert done.exit_code == 4 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("Error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (")


def test_cli_scheduler_that_does_not_answer_at_once_is_said_to_be_waited_for(monkeypatch):
    # Dask retries until its connect timeout (30 s by default): a silent wait of that long read as a hang
    from jaccli.parallel import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "SAY_WAITING_AFTER", 0.2)
    monkeypatch.setitem(__import__("dask").config.config["distributed"]["comm"]["timeouts"], "connect", "2s")
    done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", "tcp://127.0.0.1:9")
    assert done.exit_code == 4 and done.stderr.splitlines()[0] == (
        "Dask: no answer yet from the scheduler at tcp://127.0.0.1:9; waiting up to 2 s "
        "(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT sets how long)"), done.stderr
    assert done.stderr.splitlines()[1].startswith("Error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (")
    quiet = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", "tcp://127.0.0.1:9", "-q")
    assert quiet.exit_code == 4 and quiet.stderr.count("\n") == 1, quiet.stderr


@contextlib.contextmanager
def _tcp_service(greeting: bytes | None):
    """A TCP service on a free local port that is not a Dask scheduler: it accepts connections and sends `greeting`
    (an SSH server's banner), or nothing ever (None). Yields its address."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted, done = [], threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)
            if greeting is not None:
                conn.sendall(greeting)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


@pytest.mark.parametrize("greeting", [None, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", b"\xff" * 64],
                         ids=["silent", "ssh-banner", "bytes"])
def test_cli_scheduler_at_a_service_that_is_not_dask_is_one_line_in_bounded_time(monkeypatch, greeting):
    # a Client waited there without end (silent), or read the banner as a message's length and said "out of memory";
    # and a half-made Client took 60 s more to close when collected, with a traceback
    short_connect_timeout(monkeypatch)
    with _tcp_service(greeting) as address:
        start = time.monotonic()
        done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", address, "-q")
        took = time.monotonic() - start
    assert done.exit_code == 4 and done.stderr.count("\n") == 1, done.stderr  # (-q: no "waiting" line)
    if greeting is None:
        assert done.stderr == (f"Error: cannot reach the Dask scheduler at {address} (no answer in 1 s); start one "
                               "(dask scheduler) or check the address, or use --workers N for a local cluster\n")
    else:
        assert done.stderr == (f"Error: {address} answered, but not as a Dask scheduler (its reply is not Dask's); "
                               "check the address and its port (dask scheduler prints it: tcp://HOST:8786 by "
                               "default)\n")
    assert took < 10, took


@pytest.mark.parametrize("address, said", [
    ("inproc://x", "is not a scheduler's address (inproc:// reaches a scheduler inside one process only)"),
    ("tcp://127.0.0.1:99999", "is not a scheduler's address (port 99999 is not between 1 and 65535)")])
def test_cli_scheduler_addresses_no_scheduler_can_have_are_usage_errors(address, said):
    done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", address)
    assert done.exit_code == 2 and done.stderr == f"Error: --scheduler {address!r} {said}; give it as " \
        "tcp://HOST:PORT, as `dask scheduler` prints it\n", done.stderr


def test_cli_scheduler_over_tls_without_its_configuration_says_why_it_cannot_connect(monkeypatch):
    # (it said the address "answered, but not as a Dask scheduler": nothing had answered)
    short_connect_timeout(monkeypatch)
    done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", "tls://127.0.0.1:9", "-q")
    assert done.exit_code == 4 and done.stderr.startswith(
        "Error: cannot reach the Dask scheduler at tls://127.0.0.1:9 (TLS expects a `ssl_context` argument"), \
        done.stderr


def test_cli_scheduler_at_a_workers_address_says_what_answered(cluster):
    worker = next(iter(cluster.scheduler_info()["workers"]))
    done = invoke(make_runner(), "jacobian", "-e", "x * 2", "[1, 2]", "--scheduler", worker)
    assert done.exit_code == 4 and done.stderr.startswith(
        f"Error: {worker} answered, but not as a Dask scheduler (a Worker); check the address"), done.stderr


def test_a_scheduler_without_workers_says_the_blocks_wait_for_some():
    local = distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0")
    said = []
    try:
        Cluster(address=local.scheduler_address, say=said.append).close()
    finally:
        local.close()
    assert said == [f"Dask: the scheduler at {local.scheduler_address} has no workers yet; the blocks wait for some "
                    "to join (Ctrl-C stops)"]


def _ignores(pid: int, sig: int) -> bool:
    """Whether process `pid` ignores `sig` (SigIgn in Linux's /proc; False where that cannot be read)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            mask = next(int(line.split()[1], 16) for line in status if line.startswith("SigIgn:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return False
    return bool(mask >> (sig - 1) & 1)


def _interrupted(proc, processes) -> str:
    """Ctrl-C to `proc` half a second on: its stderr, once it ended with exit 130 and `processes` with it."""
    import psutil

    time.sleep(0.5)
    # (a process that ignores SIGINT, as one started from a background job does, would never see it)
    assert not _ignores(proc.pid, signal.SIGINT), "jaccli ignores SIGINT: start it with preexec_fn=at_a_terminal()"
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, rest
    gone, alive = psutil.wait_procs(processes, timeout=10)
    assert not alive, [p.pid for p in alive]
    return rest


def test_cli_workers_ctrl_c_cancels_and_leaves_no_temporary_file_and_no_worker_process(tmp_path):
    import psutil

    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 50))
    # On a worker, f is still running when Ctrl-C comes: its recording there takes ten minutes.
    (tmp_path / "slow.py").write_text("import time\nimport numpy as np\nfrom distributed import get_worker\n\n"
                                      "def f(x):\n    try:\n        get_worker()\n        time.sleep(600)\n"
                                      "    except ValueError:\n        pass\n    return np.cumsum(np.tanh(x))\n")
    proc = subprocess.Popen(JACCLI + ["jacobian", "slow.py", "x.npy", "-o", "J.npy", "--workers", "2"], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, env=clean_env(JACCLI_PARALLEL_MIN_WORK="0"),
                            preexec_fn=at_a_terminal())
    try:
        line = proc.stderr.readline()  # the cluster's line, once it is up
        assert line.startswith("Dask: started a local cluster of 2 worker processes; dashboard: http://"), line
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2
        rest = _interrupted(proc, children)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rest.strip().splitlines()[-1].startswith("Error: interrupted"), rest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow.py", "x.npy"]


def test_a_local_cluster_leaves_the_environment_as_it_was(monkeypatch):
    # Dask's nanny set PYTHONHASHSEED and __DASK_PARENT_PID in jaccli's own environment for the workers it spawns
    # and left them there: the user's f, where it runs in this process, and any process it starts saw them
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    monkeypatch.delenv("__DASK_PARENT_PID", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # (the workers get it, as a user's own setting)
    before = dict(os.environ)
    cluster = Cluster(workers=1)
    try:
        client = cluster.client()
        assert dict(os.environ) == before
        seen = client.run(lambda: {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
        assert list(seen.values()) == [{"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "1"}]
    finally:
        cluster.close()
    assert dict(os.environ) == before


def test_cli_ctrl_c_while_the_local_cluster_starts_leaves_no_worker_process(tmp_path):
    import psutil

    np.save(tmp_path / "x.npy", np.linspace(-1.0, 1.0, 50))
    # The workers' start takes ten minutes: each runs this preload (Dask's config, by its environment) first
    # (a minute was over before the Ctrl-C on a loaded machine: the run then ended with exit 0)
    (tmp_path / "slow_start.py").write_text("import time\n\ndef dask_setup(worker):\n    time.sleep(600)\n")
    preload = f'["{tmp_path / "slow_start.py"}"]'
    proc = subprocess.Popen(JACCLI + ["jacobian", "-e", "cumsum(tanh(x))", "x.npy", "-o", "J.npy", "--workers", "2"],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                            env=clean_env(JACCLI_PARALLEL_MIN_WORK="0", DASK_DISTRIBUTED__WORKER__PRELOAD=preload),
                            preexec_fn=at_a_terminal())  # (a suite run as a background job: SIGINT ignored, kept so)
    seen: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 300
        # multiprocessing's forkserver and resource tracker, then the two workers, forked from the server
        while len(seen) < 4 and time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                seen.update((p.pid, p) for p in psutil.Process(proc.pid).children(recursive=True))
            time.sleep(0.05)
        assert len(seen) >= 4, [p.cmdline() for p in seen.values()]
        assert proc.poll() is None  # still starting: its workers sleep in their preload
        rest = _interrupted(proc, list(seen.values()))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rest.splitlines() == ["Error: interrupted; no file was written or changed"], rest  # no cluster line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slow_start.py", "x.npy"]


def test_cli_a_data_file_beside_the_function_is_found_by_workers_that_share_its_directory(
        cluster, tmp_path, monkeypatch):
    """The workers of --workers, or of a cluster on a shared file system, see f's directory as the client does: f
    reads its data files there as in one process, whether the sweeps go to them or not. A file changed since it
    was sent is not run from there (the workers run the bytes sent, unpacked)."""
    from jaccli.parallel import payload

    monkeypatch.chdir(tmp_path)
    home = tmp_path / "project"
    home.mkdir()
    np.save(home / "scale.npy", np.arange(1.0, 5.0))
    model = home / "model.py"
    model.write_text("import numpy as np\nfrom pathlib import Path\n\n"
                     "S = np.load(Path(__file__).parent / 'scale.npy')\n\n"
                     "def f(x):\n    return np.cumsum(S * np.tanh(x))\n")
    x = np.array([0.1, -0.4, 0.7, 1.2])
    done = invoke(make_runner(), "jacobian", str(model), "[0.1, -0.4, 0.7, 1.2]", "--chunk-size", "1", "-o", "J.npy",
                  "--scheduler", cluster.scheduler.address, "--stats")
    assert done.exit_code == 0, done.stderr
    assert "stats: dask: 4 blocks on 2 worker threads" in done.stderr  # every row swept by a worker
    np.testing.assert_allclose(np.load("J.npy"), central_diff(lambda v: np.cumsum(np.arange(1.0, 5.0) * np.tanh(v)), x),
                               rtol=1e-7, atol=1e-9)
    sent = payload.source_files(model, "f")
    assert sent.origin == str(home.resolve()) and payload._found_at_origin(sent)
    model.write_text(model.read_text() + "\n# changed after it was sent\n")
    assert not payload._found_at_origin(sent)


def test_paths_into_a_workers_copy_of_the_files_read_as_the_users_file_names():
    from jaccli.parallel.remote_sweeps import user_names

    copy = "/tmp/dask-scratch-space/worker-1a2b/jaccli-dask-k3j_x9/"
    assert user_names(f"[Errno 2] No such file or directory: '{copy}data/w.npy'") == \
        "[Errno 2] No such file or directory: 'data/w.npy'"
    assert user_names(f'File "{copy}model.py", line 4 and {copy}pkg/steps.py') == \
        'File "model.py", line 4 and pkg/steps.py'
    assert user_names("nothing of the workers' here") == "nothing of the workers' here"


def test_cli_an_os_error_f_raises_on_a_worker_is_fs_failure_not_a_lost_scheduler(cluster, tmp_path, monkeypatch):
    # f reads a file from the working directory, which the workers do not share: its FileNotFoundError (an
    # OSError) was read as the scheduler gone ("lost the Dask scheduler", exit 4)
    monkeypatch.chdir(tmp_path)
    np.save("w.npy", np.eye(4))
    (tmp_path / "model.py").write_text("import numpy as np\n\ndef f(x):\n    return np.tanh(np.load('w.npy') @ x)\n")
    done = invoke(make_runner(), "jacobian", "model.py", "[0.1, 0.2, 0.3, 0.4]", "--chunk-size", "1",
                  "--scheduler", cluster.scheduler.address)
    assert done.exit_code == 3 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("Error: a Dask worker failed on a block: ") and "FileNotFoundError" in done.stderr \
        and "w.npy" in done.stderr and "install what else it needs (compiled extensions, data files)" in done.stderr


def test_cli_a_module_the_workers_do_not_get_is_one_line_saying_what_to_install(cluster, tmp_path, monkeypatch,
                                                                                workers_elsewhere):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vendor").mkdir()  # not a package of the directory: not sent
    (tmp_path / "vendor" / "vendored.py").write_text("import numpy as np\n\ndef g(x):\n    return np.tanh(x)\n")
    (tmp_path / "model.py").write_text("import sys\nfrom pathlib import Path\n"
                                       "sys.path.insert(0, str(Path(__file__).parent / 'vendor'))\n"
                                       "from vendored import g\n\ndef f(x):\n    return g(x).cumsum()\n")
    done = invoke(make_runner(), "jacobian", "model.py", "[1, 2, 3, 4]", "--chunk-size", "1",
                  "--scheduler", cluster.scheduler.address)
    assert done.exit_code == 3 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr == ("Error: a Dask worker failed on a block: model.py:4: running model.py failed: "
                           "ModuleNotFoundError: No module named 'vendored'; the workers get model.py and the Python "
                           "modules of its directory; install what else it needs (compiled extensions, data files) "
                           "on the workers (f in model.py:6)\n")


def test_a_scheduler_that_goes_away_mid_run_is_exit_4_naming_it(capfd):
    local = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    address = local.scheduler_address
    client = distributed.Client(local, set_as_default=False)

    x = np.linspace(-1.0, 1.0, 30)
    with pytest.raises(ResourceLimitError) as lost:
        with remote_on(client), jaccli.observing(Observer(lambda: local.close())):
            np.asarray(jaccli.jacobian(model, x, chunk_size=2))
    client.close()
    assert (lost.value.kind, lost.value.exit_code) == ("resource_limit", 4)
    assert str(lost.value).startswith(f"lost the Dask scheduler at {address} during the run (")
    assert str(lost.value).endswith("); check that it is still running and run again") and "\n" not in str(lost.value)
    # what the error says, Dask's client logged above it too: a warning per key it could not gather, a traceback
    logged = [line for line in capfd.readouterr().err.splitlines() if "distributed." in line]
    assert not logged, logged


# ---------------------------------------------------------------- faults (last: it kills one of the module's workers)


def test_a_worker_killed_mid_run_has_its_blocks_computed_again(cluster):
    x = np.linspace(-1.0, 1.0, 30)
    alone = np.asarray(jaccli.jacobian(model, x, chunk_size=2))
    pids = cluster.run(os.getpid)
    address, killed = next(iter(pids.items()))
    scheduler = cluster.cluster.scheduler

    def kill() -> None:  # at the first block back
        os.kill(killed, signal.SIGKILL)
        # Then wait until the scheduler has let the worker go. A gather the scheduler starts just before that
        # may open a connection to the dead worker after remove_worker has cancelled the ones under way, and it
        # retries until distributed.comm.timeouts.connect (30 s): the test then took 30 s, not 2, once in
        # about 25 runs (seen with the connections logged).
        deadline = time.monotonic() + 30
        while address in scheduler.workers and time.monotonic() < deadline:
            time.sleep(0.01)

    seen = Observer(kill)
    try:
        with remote_on(cluster) as remote, jaccli.observing(seen):
            together = np.asarray(jaccli.jacobian(model, x, chunk_size=2))
        assert seen.advanced[0] < 30 and remote.stats.tasks == 15
        assert np.array_equal(together, alone)
    finally:
        _two_workers_again(cluster, killed)


def _two_workers_again(client: distributed.Client, killed: int) -> None:
    """Wait for the nanny to start the killed worker again: a test after this one, in whatever order, counts on
    two worker threads (its --stats line)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            pids = set(client.run(os.getpid).values())
        except Exception:  # noqa: BLE001 - (the dead worker, until the scheduler lets it go)
            pids = set()
        if len(pids) == 2 and killed not in pids:
            return
        time.sleep(0.1)
    raise AssertionError("the cluster did not have two workers again 60 s after one was killed")
