"""The client's side: an evaluator's sweeps sent to Dask's workers as blocks, their results handed back.

`RemoteSweeps` is what `Evaluator.remote` holds during a --workers or --scheduler run. The evaluator
asks it for the results of its blocks of sweeps (rows, columns, colour groups); it runs the first
block here, timed, and sends the rest to the workers only when they would finish sooner than this
process alone (a cluster's start and each task cost time); it hands the results back in the order
of the blocks (the evaluator writes them as one process would: the same result to the bit), or as
they arrive for a streamed file. The evaluator reports each block it writes to the progress observer
(jaccli.observing), and a streamed file's writer each piece.
"""

from __future__ import annotations

import math
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from jaccli.errors import ResourceLimitError, UsageError, UserFunctionError

from .payload import SourceFiles, make_payload, pickled
from .worker import keep, run

PER_SLOT = 4  # blocks per worker thread: a dead worker's share and the last block's wait stay small
PROBE_PARTS = 8  # the first block, run here to time the work, is this many times smaller than the workers'
RETRIES = 2  # a block whose task raised (not its worker dying: Dask reschedules those) runs again
# Seconds to start a local cluster of two processes and reach it, measured on a loaded 2-core machine
# (docs/parallel.md); per task, the scheduler's round trip.
START_SECONDS = 2.5
TASK_SECONDS = 0.01


@dataclass
class Stats:
    """What the parallel run did, for --stats."""

    tasks: int = 0  # blocks run on the workers
    local_blocks: int = 0  # blocks run here (the first of each evaluation, or all when one process was chosen)
    worker_s: float = 0.0  # seconds the workers spent sweeping their blocks, added up (not loading f)
    local_s: float = 0.0  # seconds this process spent on blocks
    wall_s: float = 0.0  # seconds from the first block sent to the last one back
    chosen: str = ""  # why one process was chosen, when it was


class RemoteSweeps:
    """Runs an evaluator's calls ("row_sweep", "rec.jvp"...) on a `Cluster`'s workers.

    `function`: how f travels (payload.SourceFiles or Expression for the CLI); None: f itself,
    through cloudpickle. `min_seconds`: the estimated seconds of work below which one process is
    used (None: decided from the cluster's start and task costs; JACCLI_PARALLEL_MIN_WORK sets it).
    """

    def __init__(self, cluster: Any, function: Any = None, min_seconds: float | None = None) -> None:
        self.cluster, self.function = cluster, function
        self.min_seconds = _min_work() if min_seconds is None else min_seconds
        self.stats = Stats()
        self._payloads: dict[int, tuple[Any, Any]] = {}

    # -- the evaluator's questions -------------------------------------------------
    def block_size(self, ev: Any, k: int, total: int) -> int:
        """Seeds per block: the evaluator's `k`, smaller when that leaves workers idle, unless the
        user gave the chunk size (then the blocks, and so the bits, are one process's)."""
        if isinstance(ev.chunk_size, int):
            return k
        return max(1, min(k, math.ceil(total / (PER_SLOT * self.cluster.slots()))))

    def sweeps(self, ev: Any, sweep: tuple[str, int], missing: Any, k: int) -> Iterator[tuple[Any, list]]:
        """(block, results) of sweep (name, index) over `missing` in blocks of at most `k`, in order.

        The blocks are smaller than `k` for the workers; when the first one, run here, says the work is
        too small for them, the rest runs here in blocks of `k`, as one process would run it."""
        name, index = sweep
        small = self.block_size(ev, k, missing.size)
        decide = not self.cluster.running and ev.origin is not None and small < missing.size
        if decide:
            # The block run here only times the work, while the workers wait: an eighth of theirs (the
            # user's chunk size, if given: the blocks, and so the bits, stay one process's).
            probe = k if isinstance(ev.chunk_size, int) else max(1, math.ceil(small / PROBE_PARTS))
            first, before = missing[:probe], self.stats.local_s
            yield first, self._here(lambda: getattr(ev, name)(index, first))
            missing = missing[probe:]
            per_seed = (self.stats.local_s - before) / first.size
            if not self._worth(per_seed * missing.size):
                for start in range(0, missing.size, k):
                    block = missing[start:start + k]
                    yield block, self._here(lambda: getattr(ev, name)(index, block))
                return
        blocks = [missing[start:start + small] for start in range(0, missing.size, small)]
        calls = [(name, (index, block)) for block in blocks]
        yield from zip(blocks, self.run(ev, calls, decide=not decide))

    def _here(self, call: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        result = call()
        self.stats.local_blocks += 1
        self.stats.local_s += time.perf_counter() - start
        return result

    def run(self, ev: Any, calls: list[tuple[str, tuple]], decide: bool = True) -> Iterator[Any]:
        """The results of `calls` (methods of `ev`, or "rec." ones of its recording), in their order."""
        held: dict[int, Any] = {}
        following = 0
        for n, result, _ in self.unordered(ev, calls, lambda n: run(ev, *calls[n]), decide):
            held[n] = result
            while following in held:
                yield held.pop(following)
                following += 1

    def swept_rows(self, view: Any, rows: Any, starts: range, k: int) -> Iterator[tuple[int, Any]]:
        """(start, rows) pieces of MatrixView.stream, rows[start:start + k] each, as they finish."""
        b = view._block
        ev = b._ev
        calls = [("swept_rows", (b._i, b._j, rows[start:start + k])) for start in starts]
        for n, piece, here in self.unordered(ev, calls, lambda n: view._swept_rows(rows[starts[n]:starts[n] + k])):
            if not here:  # (a piece computed here, by _swept_rows, counts itself)
                ev.counted("reverse", min(k, rows.size - starts[n]))
            yield starts[n], piece

    def unordered(self, ev: Any, calls: list[tuple[str, tuple]], here: Callable[[int], Any],
                  decide: bool = True) -> Iterator[tuple[int, Any, bool]]:
        """(position, result, whether it ran here) of each of `calls` on `ev`, as they finish; `here(n)`
        is call n made in this process (a worker makes it with worker.run). `decide`: unless the
        cluster runs already, the first call runs here, timed, to say whether the rest is worth it."""
        if not calls:
            return
        rest = list(enumerate(calls))
        if decide and (not self.cluster.running or ev.origin is None):
            before = self.stats.local_s
            yield 0, self._here(lambda: here(0)), True
            seconds = self.stats.local_s - before
            rest = rest[1:]
            if not rest and not self.stats.tasks:
                self.stats.chosen = "one process chosen: the sweeps took one block, nothing to share"
            if rest and (ev.origin is None or not self._worth(seconds * len(rest))):
                for n, _ in rest:
                    yield n, self._here(lambda: here(n)), True
                return
        if rest:
            yield from self._remote(ev, rest)

    def _worth(self, seconds: float) -> bool:
        """Whether `seconds` of work here would take longer than on the cluster, counting its start."""
        slots = self.cluster.slots()
        if self.min_seconds is not None:
            worth = seconds >= self.min_seconds
        else:
            start = 0.0 if self.cluster.running else START_SECONDS
            worth = slots > 1 and seconds / slots + start + TASK_SECONDS * PER_SLOT * slots < 0.9 * seconds
        if not worth:
            self.stats.chosen = (f"one process chosen: the rest of the sweeps would take ~{seconds:.2g} s here, "
                                 f"too little for {slots} Dask worker{'s' if slots > 1 else ''}")
        return worth

    # -- the workers --------------------------------------------------------------
    def _payload(self, client: Any, ev: Any) -> Any:
        """The payload of `ev` as a future on the cluster, sent once per evaluator."""
        kept = self._payloads.get(id(ev))
        if kept is None or kept[0] is not ev:
            kind, f, args, wrt = ev.origin
            function = self.function if self.function is not None else pickled(f)
            payload = make_payload(function, args, wrt, kind, ev.batch, ev.mode)
            # A task, not scattered data: Dask can make it again if the workers holding it die.
            future = client.submit(keep, payload, key=f"jaccli-payload-{payload.fingerprint}-{uuid.uuid4().hex[:8]}",
                                   pure=False)
            kept = self._payloads[id(ev)] = (ev, future)
        return kept[1]

    def _remote(self, ev: Any, calls: list[tuple[int, tuple[str, tuple]]]) -> Iterator[tuple[int, Any, bool]]:
        from distributed import as_completed

        from .worker import call

        client = self.cluster.client()
        payload = self._payload(client, ev)
        start = time.perf_counter()
        run_id = uuid.uuid4().hex[:8]
        futures = {client.submit(call, payload, name, args, key=f"jaccli-block-{run_id}-{n}", pure=False,
                                 retries=RETRIES): n for n, (name, args) in calls}
        try:
            for future in _completed(as_completed(futures, loop=client.loop), self.cluster):
                result, seconds = _result(future, self.cluster, self.function)
                self.stats.tasks += 1
                self.stats.worker_s += seconds
                yield futures[future], result, False
        finally:
            # Ctrl-C, an error, or a consumer that stopped: nothing stays queued on the cluster.
            pending = [f for f in futures if not f.done()]
            if pending:
                try:
                    client.cancel(pending)
                except Exception:
                    pass
            self.stats.wall_s += time.perf_counter() - start

    def lines(self) -> list[str]:
        """--stats lines: where the blocks ran, and whether one process would have been faster."""
        s = self.stats
        if not s.tasks:
            return [f"dask: {s.chosen or 'one process chosen: no blocks of sweeps to share'}"]
        slots = self.cluster.slots()
        lines = [f"dask: {s.tasks} blocks on {slots} worker thread{'s' if slots > 1 else ''} "
                 f"({s.worker_s:.3g} s of work) in {s.wall_s:.3g} s, {s.local_blocks} here ({s.local_s:.3g} s)"
                 + (f", cluster start {self.cluster.start_seconds:.3g} s" if self.cluster.start_seconds else "")]
        # One process's time: the work done here and the workers' work added up (the blocks differ in size:
        # the one here only times the work).
        alone = s.local_s + s.worker_s
        together = s.local_s + s.wall_s + self.cluster.start_seconds
        if alone <= together:
            lines.append(f"dask: one process would have been faster: ~{alone:.3g} s here against {together:.3g} s "
                         "with the cluster (its start included); leave out --workers/--scheduler for work this "
                         "small")
        return lines


def _min_work() -> float | None:
    """JACCLI_PARALLEL_MIN_WORK: seconds of work below which one process is used, or None when unset."""
    text = os.environ.get("JACCLI_PARALLEL_MIN_WORK", "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise UsageError(f"the environment variable JACCLI_PARALLEL_MIN_WORK: {text!r} is not a number of seconds; "
                         "write e.g. 0 (always the cluster) or 5")
    return seconds


def _completed(futures: Any, cluster: Any) -> Iterator[Any]:
    """The futures as they finish; losing the scheduler is one clear error."""
    try:
        yield from futures
    except (OSError, TimeoutError) as error:
        raise cluster.lost(error) from None


def _result(future: Any, cluster: Any, function: Any) -> Any:
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    try:
        return future.result()
    except (FutureCancelledError, OSError, TimeoutError) as error:
        if future.status != "error":  # (an OSError the task raised, as f's FileNotFoundError, is f's failure)
            raise cluster.lost(error) from None
        raise _failed_on_worker(error, function) from None
    except KilledWorker as error:
        raise ResourceLimitError(f"Dask workers died {error.args[0] if error.args else ''} running the same block "
                                 f"({type(error).__name__}); a worker's memory limit may be too small for a block: "
                                 "give the workers more memory, or lower --chunk-size") from None
    except Exception as error:
        raise _failed_on_worker(error, function) from None


def _failed_on_worker(error: BaseException, function: Any) -> UserFunctionError:
    """What a task raised on a worker (f's failure there), in one line saying what the workers get."""
    text = user_names(str(error).split("\n")[0])
    if not hasattr(error, "kind"):  # (a jaccli error says what it is; Python's need their type)
        text = f"{type(error).__name__}: {text}"
    sent = (f"the workers get {function.main} and the Python modules of its directory; install what else "
            "it needs (compiled extensions, data files) on the workers") if isinstance(function, SourceFiles) \
        else "f travels by cloudpickle; install the modules it imports on the workers"
    return UserFunctionError(f"a Dask worker failed on a block: {text}; {sent}")


def user_names(text: str) -> str:
    """`text` with the paths into a worker's copy of the user's files (payload._unpacked) read as the files' own
    names, relative to the function file's directory; the quotes around a path stay."""
    return re.sub(r"[^\s'\"]*jaccli-dask-[^/\s]+/", "", text)
