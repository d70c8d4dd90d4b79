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
        self._after_close: list[Callable[[], None]] = []
        self._logs = _DaskLogsQuiet()
        if address is not None:
            try:
                self._client = _connect(address, say)
            except BaseException:
                self._logs.restore()
                raise

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
        said = str(error).strip().split("\n")[0].rstrip(".")  # (Dask's "... cancelled for reason: ...\nMessage: ...")
        return ClusterUnreachable(f"lost the Dask scheduler at {where} during the run ({type(error).__name__}"
                                  f"{': ' + said if said else ''}); check that it is still running and run again")

    def close(self) -> None:
        """Disconnect; a cluster jaccli started is stopped with its worker processes."""
        client, self._client = self._client, None
        local, self.local = self.local, None
        try:
            for thing in (client, local):
                if thing is not None:
                    try:
                        thing.close()
                    except Exception:  # (closing after the scheduler went away: nothing more to stop)
                        pass
        finally:
            self._logs.restore()
            after, self._after_close = self._after_close, []
            for step in after:
                step()

    def after_close(self, step: Callable[[], None]) -> None:
        """Have `step()` run once this cluster is closed (its workers, where jaccli started them, gone)."""
        self._after_close.append(step)


class _DaskLogsQuiet:
    """Dask's log lines (the handlers of its "distributed" logger) at CRITICAL while a Cluster is open, as they were
    after (distributed's silence_logging_cmgr, which a LocalCluster's silence_logs uses too): a scheduler that went
    away mid-run made its client log some 30 lines (a warning per key it could not gather, a traceback of its
    reconnection) above jaccli's one-line error, which says it (Cluster.lost)."""

    def __init__(self) -> None:
        import contextlib
        import logging

        from distributed.utils import silence_logging_cmgr

        self.stack: contextlib.ExitStack | None = contextlib.ExitStack()
        self.stack.enter_context(silence_logging_cmgr(logging.CRITICAL))

    def restore(self) -> None:
        stack, self.stack = self.stack, None
        if stack is not None:
            stack.close()


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


def _connect(address: str, say: Callable[[str], None] = lambda line: None) -> Any:
    from distributed import Client
    from distributed.comm.addressing import parse_address, parse_host_port

    where = f" (from {ADDRESS_VARIABLE})" if isinstance(address, FromEnvironment) else ""
    try:  # (a malformed address, before a Client: one half made waits 60 s to close when collected)
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls", "ws", "wss"):
            port = parse_host_port(location)[1]
            if not 0 < int(port) < 65536:
                raise ValueError(f"port {port} is not between 1 and 65535")
    except (TypeError, ValueError) as error:
        raise not_an_address(address, str(error)) from None
    import dask
    from dask.utils import parse_timedelta

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    try:
        # Asked first, apart from a Client: a Client at a service that is not a scheduler waited without end (one
        # that never answers), or read its banner as a message's length ("out of memory"), and a Client half made
        # waits 60 s to close when collected, with a traceback.
        identity = _identity(address, timeout, lambda: say(
            f"Dask: no answer yet from the scheduler at {address}; waiting up to {timeout:.0f} s "
            "(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT sets how long)"))
    except _Unanswered as error:  # (connecting failed: nothing answered there)
        raise _unreachable(f"{address}{where}", error.__cause__ or error, timeout) from None
    except (OSError, TimeoutError) as error:  # (connected, then the service closed or went silent)
        raise _unreachable(f"{address}{where}", error, timeout) from None
    except Exception:  # (what a reply that is not Dask's makes its decoder raise: MemoryError, ValueError...)
        identity = None
    if not isinstance(identity, dict) or identity.get("type") != "Scheduler":
        said = f"a {identity['type']}" if isinstance(identity, dict) and isinstance(identity.get("type"), str) \
            else "its reply is not Dask's"
        raise ClusterUnreachable(f"{address}{where} answered, but not as a Dask scheduler ({said}); check the address "
                                 "and its port (dask scheduler prints it: tcp://HOST:8786 by default)")
    if not identity.get("n_workers"):
        say(f"Dask: the scheduler at {address} has no workers yet; the blocks wait for some to join (Ctrl-C stops)")
    try:
        return Client(address, set_as_default=False, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as error:
        raise _unreachable(f"{address}{where}", error, timeout) from None


def not_an_address(address: str, why: str) -> UsageError:
    """The usage error for a --scheduler `address` (or DASK_SCHEDULER_ADDRESS's, a FromEnvironment) that no
    scheduler can have, `why`."""
    given = f"{ADDRESS_VARIABLE}={address!r}" if isinstance(address, FromEnvironment) else f"--scheduler {address!r}"
    return UsageError(f"{given} is not a scheduler's address ({why}); give it as tcp://HOST:PORT, as "
                      "`dask scheduler` prints it")


class _Unanswered(Exception):
    """Connecting to the address failed (its __cause__ says how): nothing answered there."""


def _unreachable(named: str, error: BaseException, timeout: float) -> ClusterUnreachable:
    reason = str(error).split("\n")[0] or (f"no answer in {timeout:.0f} s" if isinstance(error, TimeoutError)
                                           else type(error).__name__)
    return ClusterUnreachable(f"cannot reach the Dask scheduler at {named} ({reason}); start one (dask scheduler) "
                              "or check the address, or use --workers N for a local cluster")


# Seconds without an answer after which _identity says it waits (Dask tries to connect until its timeout, 30 s).
SAY_WAITING_AFTER = 2.0


def _identity(address: str, timeout: float, waiting: Callable[[], None] = lambda: None) -> Any:
    """What the service at `address` answers Dask's "identity" request (a scheduler: a dict whose "type" is
    "Scheduler"), each step within `timeout` seconds; raises what connecting or reading raised (TimeoutError
    for no answer). `waiting()` is called once there is no answer after SAY_WAITING_AFTER seconds. Asked on an
    event loop of its own, in a thread of its own (daemon: a Ctrl-C here does not wait for it), whatever loop
    runs in the caller's."""
    import asyncio
    import threading

    from distributed.comm import connect
    from distributed.security import Security

    async def ask() -> Any:
        try:
            comm = await asyncio.wait_for(connect(address, timeout=timeout,
                                                  **Security().get_connection_args("client")), timeout + 1)
        except (OSError, TimeoutError, TypeError, ImportError, NotImplementedError) as error:
            # (refused, silent, closed; TLS without its configuration, a transport not installed. What else Dask's
            # handshake raises came from reading a reply that is not Dask's: MemoryError, ValueError...)
            raise _Unanswered() from error
        try:
            await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), timeout)
            return await asyncio.wait_for(comm.read(), timeout)
        finally:
            comm.abort()

    answer: list = []

    def run() -> None:
        try:
            answer.append((True, asyncio.run(ask())))
        except BaseException as error:  # (handed to the caller's thread)
            answer.append((False, error))

    thread = threading.Thread(target=run, name="jaccli-scheduler-identity", daemon=True)
    thread.start()
    thread.join(SAY_WAITING_AFTER)
    if thread.is_alive():
        waiting()  # (a scheduler out of reach: Dask retries until its connect timeout, silently)
        thread.join(2 * timeout + 5)
    if not answer:
        raise TimeoutError(f"no answer in {2 * timeout + 5:.0f} s")
    ok, value = answer[0]
    if not ok:
        raise value
    return value


def _dashboard(client: Any) -> str:
    try:
        services = client.scheduler_info().get("services", {})
    except Exception:
        return ""
    return client.dashboard_link if "dashboard" in services else ""
