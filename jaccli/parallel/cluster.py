"""A Dask client for jaccli: a LocalCluster of single-threaded worker processes, or a running scheduler."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

from jaccli.errors import ResourceLimitError, UsageError

# Worker processes compute one block each: BLAS threads of their own would fight over the cores.
SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}


# Dask's own clients connect to this scheduler when it is set (dask's config key "scheduler-address").
ADDRESS_VARIABLE = "DASK_SCHEDULER_ADDRESS"


class FromEnvironment(str):
    """A scheduler's address read from DASK_SCHEDULER_ADDRESS, not given with --scheduler: messages say
    where it came from, and --workers overrides it."""


def environment_address() -> FromEnvironment | None:
    """DASK_SCHEDULER_ADDRESS, or None when it is unset or empty.

    Read from the environment itself, not through dask.config: deciding must not import Dask. So the
    scheduler-address of Dask's YAML files is not read (importing Dask at every run would cost more
    than most runs); those who keep it there give --scheduler or set the variable."""
    address = os.environ.get(ADDRESS_VARIABLE, "").strip()
    return FromEnvironment(address) if address else None


class ClusterUnreachable(ResourceLimitError):
    """The Dask scheduler cannot be reached, or went away during the run."""


def need_dask(option: str) -> None:
    """dask[distributed] is the optional extra jaccli[dask]: without it, one line saying how to install it."""
    import importlib.util

    # Found, not imported: importing distributed takes most of a second, and small work may not need it.
    if importlib.util.find_spec("distributed") is None or importlib.util.find_spec("dask") is None:
        raise UsageError(f"{option} needs dask[distributed], which is not installed: pip install 'jaccli[dask]'")


class Cluster:
    """A Dask client on demand: a LocalCluster of `workers` processes, started at the first `client()`,
    or the scheduler at `address`, connected at once (so an unreachable one fails before any work).

    `say` gets the lines a user should see on stderr (the dashboard's link when a cluster is started).
    """

    def __init__(self, workers: int | None = None, address: str | None = None,
                 say: Callable[[str], None] = lambda line: None) -> None:
        self.workers, self.address, self.say = workers, address, say
        self.local: Any = None
        self._client: Any = None
        self.start_seconds = 0.0
        if address is not None:
            self._client = _connect(address)

    @property
    def running(self) -> bool:
        return self._client is not None

    def slots(self) -> int:
        """Worker threads: the blocks that can run at once."""
        if self._client is None:
            return self.workers or 1
        return max(1, sum(self._client.nthreads().values()))

    def client(self) -> Any:
        if self._client is None:
            start = time.perf_counter()
            self._client = self._start_local()
            self.start_seconds = time.perf_counter() - start
        return self._client

    def _start_local(self) -> Any:
        import logging
        import multiprocessing

        import dask
        from distributed import Client, LocalCluster

        env = {**SINGLE_THREADED, **{k: os.environ[k] for k in SINGLE_THREADED if k in os.environ}}
        # Workers forked from a fresh server process start in about half the time of spawned ones and stop
        # at once (measured in docs/parallel.md); the server takes the environment it is started with.
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        saved = dict(os.environ)
        os.environ.update(env)
        started = _Starting()
        try:
            # Not Dask's MALLOC_TRIM_THRESHOLD_ for its workers: any value of it turns off glibc's adaptive
            # mmap threshold, so that every large temporary of a sweep is mapped and faulted in anew: the
            # sweeps ran 3.3x slower with it (docs/parallel.md).
            with dask.config.set({"distributed.worker.multiprocessing-method": method,
                                  "distributed.nanny.pre-spawn-environ": dict(env)}):
                # dashboard_address ":0": any free port, so that two runs side by side do not collide. Dask's
                # own log lines (a task's error, a worker stopped at Ctrl-C) would break one-line errors.
                self.local = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                          dashboard_address=":0", silence_logs=logging.CRITICAL, env=env)
        except BaseException:
            started.abandon()  # Ctrl-C (or a failure) while the workers were starting: none stays behind
            raise
        finally:
            # This process's environment as it was: ours above, and what Dask's nanny sets here for the workers it
            # spawns (PYTHONHASHSEED, __DASK_PARENT_PID) and leaves, which the user's f and its subprocesses would see
            if os.environ != saved:
                os.environ.clear()
                os.environ.update(saved)
        client = Client(self.local)
        link = _dashboard(client)
        where = f"; dashboard: {link}" if link else " (no dashboard: pip install bokeh for one)"
        self.say(f"Dask: started a local cluster of {self.workers} worker processes{where}")
        return client

    def lost(self, error: BaseException) -> ClusterUnreachable:
        where = self.address or (self.local.scheduler_address if self.local is not None else "the local cluster")
        return ClusterUnreachable(f"lost the Dask scheduler at {where} during the run ({type(error).__name__}: "
                                  f"{error}); check that it is still running and run again")

    def close(self) -> None:
        """Disconnect; a cluster jaccli started is stopped with its worker processes."""
        client, self._client = self._client, None
        local, self.local = self.local, None
        for thing in (client, local):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # (closing after the scheduler went away: nothing more to stop)
                    pass


class _Starting:
    """What a LocalCluster that is being started leaves behind if its start is interrupted: the clusters
    and the processes made since, which `abandon` stops.

    Interrupted in its constructor, a LocalCluster is never handed back to close it, and its event loop
    goes on starting workers in its own thread; at exit Dask's own hook tries to close it, fails on a
    worker still starting (a traceback under the one-line error), and a worker it did not reach may
    outlive jaccli. psutil comes with distributed."""

    def __init__(self) -> None:
        import psutil
        from distributed.deploy.spec import SpecCluster

        self.me = psutil.Process()
        self.children = {p.pid for p in self._descendants()}
        self.clusters = set(SpecCluster._instances)

    def _descendants(self) -> list:
        import psutil

        try:
            return self.me.children(recursive=True)
        except psutil.Error:
            return []

    def abandon(self) -> None:
        import psutil
        from distributed.deploy.spec import SpecCluster

        for cluster in set(SpecCluster._instances) - self.clusters:
            cluster.shutdown_on_close = False  # (Dask's exit hook: nothing left for it to close)
            runner = getattr(cluster, "_loop_runner", None)
            try:
                if runner is not None:
                    runner.stop(timeout=2)  # its loop starts no more workers
            except Exception:
                pass
        # Not multiprocessing's own forkserver and resource tracker: they end with this process, and the
        # tracker killed would be relaunched, noisily. Twice: a worker the forkserver was asked for before
        # the loop stopped may appear just after.
        from multiprocessing import forkserver, resource_tracker

        helpers = {getattr(forkserver._forkserver, "_forkserver_pid", None),
                   getattr(resource_tracker._resource_tracker, "_pid", None)}
        for _ in range(2):
            made = [p for p in self._descendants() if p.pid not in self.children and p.pid not in helpers]
            for process in made:
                try:
                    process.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(made, timeout=5)


def _connect(address: str) -> Any:
    from distributed import Client
    from distributed.comm.addressing import parse_address, parse_host_port

    where = f" (from {ADDRESS_VARIABLE})" if isinstance(address, FromEnvironment) else ""
    try:  # (a malformed address, before a Client: one half made waits 60 s to close when collected)
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(location)
    except (TypeError, ValueError) as error:
        given = f"{ADDRESS_VARIABLE}={address!r}" if where else f"--scheduler {address!r}"
        raise UsageError(f"{given} is not a scheduler's address ({error}); give it as tcp://HOST:PORT, as "
                         "`dask scheduler` prints it") from None
    try:
        return Client(address, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as error:
        reason = str(error).split("\n")[0] or type(error).__name__
        raise ClusterUnreachable(f"cannot reach the Dask scheduler at {address}{where} ({reason}); start one "
                                 "(dask scheduler) or check the address, or use --workers N for a local "
                                 "cluster") from None


def _dashboard(client: Any) -> str:
    try:
        services = client.scheduler_info().get("services", {})
    except Exception:
        return ""
    return client.dashboard_link if "dashboard" in services else ""
