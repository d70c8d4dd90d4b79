"""record_once: record f once per input signature, then replay the recording at new inputs."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from jaccli.engine import SYMMETRIC_PART, current_errstate

from .pending_replays import PendingReplay, replayed_by, route_for
from .replays import Replayable

__all__ = ["RecordOnce", "record_once"]


class RecordOnce:
    """f, recorded once per input signature by jaccli's functions and replayed afterwards.

    Calling it calls f. Passed to `jacobian`, `hessian`, `vjp`, `jvp`, `hvp` or `grad`, it keeps
    the last recording for each signature (the shapes and dtypes of the inputs, which inputs are
    differentiated, and whether it is f or its gradient that is recorded) and replays it at new
    input values instead of calling f again: see `record_once`.

    Attributes:
        records: how many times f was recorded (called with traced inputs).
        replays: how many recordings were replayed instead.
        misses: replays refused (a guard or a data argument changed), each followed by a record.
    """

    def __init__(self, f: Callable, max_signatures: int = 8) -> None:
        if not callable(f):
            raise TypeError(f"record_once needs a function, not {type(f).__name__}")
        if isinstance(max_signatures, bool) or not isinstance(max_signatures, (int, np.integer)) \
                or max_signatures < 1:
            raise ValueError(f"max_signatures should be a positive int, but got {max_signatures!r}")
        if isinstance(f, RecordOnce):
            f = f.__wrapped__
        functools.update_wrapper(self, f)
        self.max_signatures = max_signatures
        # Sparsity patterns and plans by (structure fingerprint, hessian, mode), filled by jaccli.sparse_*:
        # a loop of calls at new points detects and colours once (api/sparse.py)
        self.sparsity_patterns: dict = {}
        # The last steady call of each sort, by its block's class and mode, filled by api's steady calls: what
        # replayed_again() is given to replay the same recording at the next point (api/steady_calls.py)
        self.steady_lanes: dict = {}
        self.records = 0
        self.replays = 0
        self.misses = 0
        self._cache: OrderedDict[tuple, Replayable] = OrderedDict()
        # Changed whenever the cache may hold another recording under a key (a recording kept, one let go,
        # clear()): replayed_again's check that the recording it is given is still the one kept
        self._version = 0
        self._newest: tuple | None = None  # the key kept last (the end of the cache's order)
        self._lock = threading.Lock()  # the cache and counters, when threads call f at once

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__wrapped__(*args, **kwargs)

    def __reduce__(self) -> tuple:
        # f and the limit, without the recordings (they hold rules and a lock): a copy or an
        # unpickled one records afresh
        return RecordOnce, (self.__wrapped__, self.max_signatures)

    def __repr__(self) -> str:
        return (f"record_once({getattr(self.__wrapped__, '__qualname__', self.__wrapped__)!r}: "
                f"{self.records} recorded, {self.replays} replayed, {self.misses} missed)")

    def clear(self) -> None:
        """Forget every recording: the next call records f again (after changing its constants)."""
        with self._lock:
            self._cache.clear()
            self.steady_lanes.clear()
            self._version += 1
            self._newest = None

    def recording(self, key: tuple, args: tuple, wrt: tuple[int, ...],
                  make: Callable[[], Replayable]) -> tuple[Replayable, bool]:
        """A replay of the recording kept for this signature, or a fresh one; and whether it is fresh."""
        key = key + (wrt, _signature(args, wrt), bool(SYMMETRIC_PART.v))  # (the convention f is differentiated by)
        with self._lock:
            rec = self._cache.get(key)
        if rec is not None:
            new = rec.replay(args)  # outside the lock: threads replay at once, each its own copy
            with self._lock:
                if new is not None:
                    self.replays += 1
                    self._keep(key, new, rec)
                    return new, False
                self.misses += 1
        rec = make()
        with self._lock:
            self.records += 1
            self._keep(key, rec)
        return rec, True

    def replayed(self, key: tuple, x: np.ndarray, checked: str, pending: bool = False) -> Any:
        """A replay at x, f's one argument (differentiated, a float ndarray), of the recording kept for
        this signature, counted as recording() counts it; None where none is kept, or it was never
        found to pass the checks named `checked` (api's steady calls: a public function's checks of
        f's outputs, which a replay passes as its recording did), or it cannot be replayed at x: the
        caller then takes its usual way, recording() (which records f afresh on a miss). `pending`: the replay as
        a PendingReplay where it can be one (Replayable.replay)."""
        key = key + (_ONE_INPUT, ((x.shape, x.dtype),), bool(SYMMETRIC_PART.v))  # (as recording() keys it)
        lock = self._lock
        with lock:
            rec = self._cache.get(key)
        if rec is None or checked not in rec.structure:
            return None
        new = rec.replay((x,), pending)
        if new is None:
            return None
        with lock:
            self.replays += 1
            self._keep(key, new, rec)
            if type(new) is PendingReplay:
                new.kept_as = (key, self._version)
        return new

    def replayed_again(self, kept_as: tuple, kept: Replayable, x: np.ndarray, ran: tuple | None = None) \
            -> PendingReplay | None:
        """replayed(..., pending=True) at x, where it gave a PendingReplay of the recording `kept` last time, and
        its `kept_as` (api's steady calls keep those): what replay() checked then holds while `kept` is still
        kept as it was, x is a float ndarray of its input's shape and dtype, and the error state is the same
        (`kept` holds no data argument and no traced constant: a PendingReplay's is one input, differentiated).
        None where any of that differs, or the replay fails: the caller then calls replayed(). `ran`: the program
        (kind, Program, seeds) that the caller reruns at the replay, where it knows it: the replay then takes
        the Route of `kept` for it (pending_replays.route_for), where it still holds."""
        key, version = kept_as
        if self._version != version or key[-1] is not bool(SYMMETRIC_PART.v):  # (recorded under another convention)
            return None
        old = kept.inputs[0]
        if type(x) is not np.ndarray or x.shape != old.shape or (x.dtype is not old.dtype and x.dtype != old.dtype) \
                or current_errstate() is not kept._errstate:
            return None
        made = kept._made
        made[0] += 1
        new = replayed_by(kept, kept._forward[0], (x,), [x.copy("K")], made[0], True) if ran is None \
            else route_for(kept, ran).replayed(kept, x, made[0])
        if type(new) is not PendingReplay:
            return None
        with self._lock:
            self.replays += 1
            if self._version == version:  # (else another recording is kept meanwhile: this one is not kept again)
                new.kept_between_calls(kept)  # (`kept` itself, kept again: the cache's order alone may change)
                if self._newest is not key:
                    self._cache.move_to_end(key)
                    self._newest = key
        new.kept_as = kept_as
        return new

    def _keep(self, key: tuple, rec: Replayable, source: Replayable | None = None) -> None:
        kept = rec.kept_between_calls(source)
        cache = self._cache
        if cache.get(key) is not kept:
            self._version += 1
        cache[key] = kept
        cache.move_to_end(key)
        self._newest = key
        while len(cache) > self.max_signatures:
            cache.popitem(last=False)
            self._version += 1


_ONE_INPUT = (0,)  # (wrt of a steady call: f's one argument)


def _signature(args: tuple, wrt: tuple[int, ...]) -> tuple:
    return tuple(((a.shape, a.dtype) if type(a) is np.ndarray else (np.shape(a), getattr(a, "dtype", type(a))))
                 if i in wrt else type(a) for i, a in enumerate(args))


def record_once(f: Callable, *, max_signatures: int = 8) -> RecordOnce:
    """f for repeated derivatives at new points: recorded once, then replayed (like jax.jit's tracing).

    Each of jaccli's functions normally calls f on traced inputs to record it. A `record_once`
    function is recorded on its first use for a signature (input shapes and dtypes, which inputs
    are differentiated); later calls with that signature replay the recorded NumPy operations
    at the new values, without running f's Python code, and sweep the replay as usual.

    A replay is exact, not an approximation: every plain value that the recording derived from
    traced values (a comparison or mask, a branch taken with ``if``, an argmax, a sort order,
    whether a derivative factor is finite) is a guard that is recomputed at the new values. If
    one differs, or an argument that is not differentiated changed, or an operation fails, f is
    recorded afresh and that recording is kept. What a replay does not see, as with jax.jit:
    side effects of f (printing, counters) happen when it is recorded only; random draws are those
    of the recording; constants that f reads from globals or closures are not checked (a changed
    one gives a mix of old and new values). Call `clear()` after changing such a constant, or
    pass it as an argument (not differentiated with ``wrt``), which is compared at each call.

    >>> import numpy as np, jaccli
    >>> f = jaccli.record_once(lambda x: np.sin(x) * x)
    >>> H1 = np.asarray(jaccli.jacobian(f, np.array([0.0, 1.0])))
    >>> H2 = np.asarray(jaccli.jacobian(f, np.array([2.0, 3.0])))   # replayed: f is not called
    >>> f.records, f.replays
    (1, 1)
    """
    return RecordOnce(f, max_signatures=max_signatures)
