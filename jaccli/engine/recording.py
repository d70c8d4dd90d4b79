"""Record a user's function once at a point, then answer any number of block sweeps over it."""

from __future__ import annotations

import copy
import linecache
import re
import sys
from contextlib import nullcontext
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import TracingError, UserFunctionError
from . import rules  # noqa: F401  (fills the registry)
from .freezer import COLLECTOR_PAUSED, FREEZER, Freezer, frozen_constants
from .heap import raise_thresholds
from .sweep_plans import plan_reverse as _plan_reverse
from .sweeps import forward, reverse
from .tape import ELEMENTWISE, Trace, value_size
from .user_sites import is_internal, user_site
from .views import stale_error
from .seeds import dense
from .intercept import intercept_numpy
from .numpy_proxies import primal_nested
from .progress import counting, current_observer
from .tape import sever
from .handlers import HOLDERS
from .nested_lists import refuse_ragged
from .tracer import Tracer, holds_tracer, lift

raise_thresholds()  # (once a process, when the engine is imported: engine/heap.py)


def as_float(x: Any) -> Any:
    """Inputs are differentiated in floating point: integers and booleans become float64, float16 becomes
    float32, complex numbers stay complex. Anything that is not an array of numbers is refused, rather
    than differentiated as something else."""
    if type(x) is Tracer:
        return x
    # numpy.ma, not np.ma: the attribute would import numpy.ma (~5 ms of the CLI's start-up), and no masked
    # array exists before it is imported.
    masked = sys.modules.get("numpy.ma")
    if masked is not None and isinstance(x, masked.MaskedArray):
        raise TypeError("a masked array is not supported as an input to differentiate: jaccli would see "
                        "the masked entries too; pass x.filled(value) or x.compressed(), or the mask as data")
    arr = np.asarray(x)
    kind = arr.dtype.kind
    if kind not in "biufc":
        what = "None" if x is None else f"an array of dtype {arr.dtype}"
        raise TypeError(f"an input to differentiate is {what}, not real numbers; pass an array of floats "
                        "(np.asarray(x, dtype=float) converts numbers held as objects or strings)")
    if kind in "biu":
        return arr.astype(np.float64)
    if arr.dtype.itemsize < 4:
        # float16's 11-bit significand cannot carry a derivative through a few operations (its sums of
        # products lose every digit): the derivative is computed in float32, as NumPy's own float16 math is.
        return arr.astype(np.float32)
    return arr


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------
class Recording:
    """f evaluated once at `args` with the inputs in `wrt` traced.

    Attributes:
        outputs: the primal outputs (a tuple, even when f returns one array).
        out_is_tuple: whether f returned a tuple.
        inputs: the arguments as passed to f (floats; traced ones replaced by their values).
    """

    # Which way the sweeps' results are made (``J.stats["path"]``): a replay says otherwise.
    path = "recording"

    def __init__(self, f: Callable, args: Sequence[Any], wrt: Sequence[int], guarded: bool = False) -> None:
        """Call f on `args` with the inputs in `wrt` traced. `guarded`: keep the guards and hold every
        constant, for a replay (jaccli.replay.Replayable, which hands f data arguments of its own)."""
        self.trace = Trace()
        self.wrt = tuple(wrt)
        call_args = list(args)
        if not guarded:
            self.trace.guards = None  # only a replay reads guards: none are collected for nothing
            for i, a in enumerate(args):
                if type(a) is np.ndarray and i not in self.wrt:
                    # f gets a copy of an array passed as data, as it gets one of each input: the
                    # sweeps read it later, and the caller may refill it meanwhile (a minibatch buffer)
                    call_args[i] = private_copy(a)
        self.in_nodes = []
        for i in self.wrt:
            t = self.trace.new_input(private_float(args[i]))
            call_args[i] = t
            self.in_nodes.append(t._node)
        self.inputs = tuple([primal_value(a, self.trace) for a in call_args])
        with COLLECTOR_PAUSED, intercept_numpy(f) as run, frozen_constants(Freezer(keep_all=guarded)):
            if current_observer() is None:
                out = _call_user(run, call_args)
            else:  # the operation count read by a thread of its own: tracing pays nothing per operation
                with counting("recording f (operations)", lambda: len(self.trace.nodes)):
                    out = _call_user(run, call_args)
        self.out_is_tuple, outs, self.out_refs = _outputs(out, self.trace)
        self.outputs = tuple([o if r is None else o._value for o, r in zip(outs, self.out_refs)])
        self.live = tuple([r is not None for r in self.out_refs])  # which outputs a sweep can reach
        self.outs_at = tuple([None if r is None else (r[0].index, r[1]) for r in self.out_refs])
        self.sweeps = 0
        # Closed: what a later sweep computes is not part of this recording.
        self.guards = self.trace.guards if guarded else None
        self.trace.guards = None
        self.kept: dict[str, tuple] = {}
        self._traced_constants: bool | None = None  # computed when first asked
        # What the structure and shapes alone decide, shared with the replays (the tape is closed):
        # (output, input) -> elementwise(), ("prims", names) -> records(), shared()'s values
        self.structure: dict[tuple, Any] = {}

    def detach(self) -> None:
        """Make plain every value that an enclosing differentiation traces (``create_graph=False``).

        f may close over a variable of a function that is itself being differentiated; then its
        operations took traced values, and sweeps over them would carry that outer derivative.
        Without create_graph a result carries none (torch's rule, as for traced arguments): the
        recorded values become their plain values. A replay of this recording stays refused, as
        for any recording that took another recording's traced values.
        """
        self.has_traced_constants()
        site = user_site()
        for node in self.trace.nodes:
            sever((node.args, tuple(node.kwargs.values())), site, own=self.trace)
        for node in self.trace.nodes:
            node.value = primal_nested(node.value)
            node.args = tuple(primal_nested(a) for a in node.args)
            if node.kwargs:
                node.kwargs = {k: primal_nested(v) for k, v in node.kwargs.items()}
        self.outputs = primal_nested(self.outputs)
        self.kept = {name: (ref[0], primal_nested(ref[1])) if ref[0] == "const" else ref
                     for name, ref in self.kept.items()}

    def keep(self, name: str, value: Any) -> None:
        """Remember a value that f's recording produced (traced here or constant), for `kept`."""
        while type(value) is Tracer and value._trace is not self.trace:
            value = value._value
        if type(value) is Tracer:
            self.kept[name] = ("node", value._node.index, value._idx)
        else:
            self.kept[name] = ("const", value)

    def kept_value(self, name: str) -> Any:
        ref = self.kept[name]
        if ref[0] == "const":
            return private_copy(ref[1])
        value = self.trace.value_at(ref[1])
        return value if ref[2] is None else value[ref[2]]

    def has_traced_constants(self) -> bool:
        """Whether a recorded operation took a traced value of another recording as a constant."""
        if self._traced_constants is None:
            self._traced_constants = any(
                type(a) is Tracer for node in self.trace.nodes for a in node.args) or any(
                type(v) is Tracer for node in self.trace.nodes for v in node.kwargs.values())
        return self._traced_constants

    def out_shape(self, i: int) -> tuple:
        return np.shape(self.outputs[i])

    def in_shape(self, j: int) -> tuple:
        return np.shape(self.inputs[self.wrt[j]])

    def connected(self, i: int, j: int) -> bool:
        """Whether output i structurally depends on differentiated input j (a path in the tape)."""
        ref = self.out_refs[i]
        return ref is not None and bool(ref[0].deps & self.in_nodes[j].deps)

    def cut(self, j: int) -> tuple[str, tuple | None] | None:
        """For an input that no output depends on: the first operation that used it with an integer
        or boolean result (``x.astype(int)``, ``x > 0``), as (op name, (file, line)); else None."""
        bit = self.in_nodes[j].deps
        if any(self.connected(i, j) for i in range(len(self.outputs))):
            return None
        return next(((name, site) for deps, name, site in self.trace.cuts if deps & bit), None)

    def swept(self) -> set[int]:
        """Indices of the nodes a reverse sweep from some output visits: those on a path from a
        differentiated input to an output. A shift that cancels out of every output (the max in
        logsumexp's c + log(sum(exp(z - c)))) is not on one: no derivative goes through it."""
        wrt_mask = 0
        for node in self.in_nodes:
            wrt_mask |= node.deps
        out: set[int] = set()
        for ref in self.out_refs:
            if ref is not None:
                out.update(n.index for n in _plan_reverse(self.trace, (ref,), wrt_mask))
        return out

    def elementwise(self, i: int, j: int) -> bool:
        """Whether output i is an elementwise function of input j, which makes d out_i / d in_j diagonal.

        True when both have the same number of elements and every operation on a path from the
        input to the output maps element k to element k (ufuncs and np.where whose traced
        arguments have the result's size; other inputs count as constants). The check reads
        the recording's structure only, never the values.
        """
        return self.shared((i, j), lambda: self._is_elementwise(i, j))

    def compiles(self) -> bool:
        """Whether this recording's sweeps may be compiled (jaccli.replay): a replay's are."""
        return False

    def answer(self, kind: str, request: tuple, seeds: tuple, where: Callable[[], tuple[tuple, tuple]],
              sweep: Callable[[], list], alt: tuple | None = None) -> list:
        """The results of one sweep request: `sweep()`'s. A replay (jaccli.replay) answers from a
        compiled sweep where it has one. kind: "reverse" or "forward"; request: which outputs are
        seeded and which inputs differentiated; where(): the sweep's (starts, ends); alt: the seeds
        in the form a compiled sweep runs best on (vjp's `program_seeds`)."""
        return sweep()

    def shared(self, key: tuple, make: Callable[[], Any]) -> Any:
        """make()'s value, made once for this recording and its replays: something that its
        structure and shapes decide (not its values), under a `key` that says what it is."""
        known = self.structure.get(key)
        if known is None:
            known = self.structure[key] = make()
        return known

    def records(self, names: frozenset) -> bool:
        """Whether an operation of one of these names (Primitive.name) was recorded."""
        return self.shared(("prims", names), lambda: not names.isdisjoint({n.prim.name for n in self.trace.nodes}))

    def _is_elementwise(self, i: int, j: int) -> bool:
        ref = self.out_refs[i]
        start = self.in_nodes[j]
        if ref is None or ref[1] is not None or not ref[0].deps & start.deps:
            return False
        size = value_size(start.value)
        if value_size(ref[0].value) != size:
            return False
        for node in _plan_reverse(self.trace, (ref,), start.deps):
            if node is start:
                continue
            if node.prim.structure != ELEMENTWISE or value_size(node.value) != size:
                return False
            for _, parent, pidx in node.parents:
                # A traced argument of the result's size broadcasts only over length-1 axes:
                # element k still meets element k.
                if parent.deps & start.deps and (pidx is not None or value_size(parent.value) != size):
                    return False
        return True

    def vjp(self, seeds: Sequence[Any | None], wrt: Sequence[int] | None = None, structured: bool = False,
            program_seeds: Sequence[Any | None] | None = None) -> list:
        """One reverse sweep: a block of cotangents per output -> a block per differentiated input.

        With `structured`, results may be `SparseBlock`s (cheaper to scatter into a matrix).
        `program_seeds`: the same seeds in the form a compiled sweep runs best on (see answer).
        """
        wrt = range(len(self.wrt)) if wrt is None else wrt
        # which outputs are seeded is part of the request: two outputs of one shape have seeds of one form
        seeded = tuple([i for i, (live, s) in enumerate(zip(self.live, seeds)) if live and s is not None])
        if not seeded:
            return [None] * len(wrt)
        self.sweeps += 1
        seeds = tuple([seeds[i] for i in seeded])
        if type(self) is Recording:  # (answer() is sweep() here: a plain call's sweep, without the hook's steps)
            starts, ends = tuple([self.out_refs[i] for i in seeded]), tuple([self.in_nodes[j] for j in wrt])
            with pause_for(self.trace):
                out = reverse(self.trace, starts, seeds, ends, first=self.sweeps == 1)
            return out if structured else list(map(dense, out))

        def where() -> tuple[tuple, tuple]:  # (the nodes a program may not need)
            return tuple([self.out_refs[i] for i in seeded]), tuple([self.in_nodes[j] for j in wrt])

        def sweep() -> list:
            starts, ends = where()
            with pause_for(self.trace):
                return reverse(self.trace, starts, seeds, ends)
        alt = None if program_seeds is None else tuple(program_seeds[i] for i in seeded)
        out = self.answer("reverse", (seeded, tuple(wrt)), seeds, where, sweep, alt)
        return out if structured else [dense(o) for o in out]

    def jvp(self, tangents: Sequence[Any | None], wrt: Sequence[int] | None = None,
            structured: bool = False, program_seeds: Sequence[Any | None] | None = None) -> list:
        """One forward sweep: a block of tangents per differentiated input -> a block per output
        (`structured`, `program_seeds`: as vjp's)."""
        wrt = range(len(self.wrt)) if wrt is None else wrt
        pairs = [(j, t) for j, t in zip(wrt, tangents) if t is not None]
        if not pairs or not any(self.live):
            return [None] * len(self.live)
        self.sweeps += 1
        seeds = tuple([t for _, t in pairs])

        def where() -> tuple[tuple, tuple]:
            return tuple([self.in_nodes[j] for j, _ in pairs]), tuple([r for r in self.out_refs if r is not None])

        def sweep() -> list:
            starts, ends = where()
            with pause_for(self.trace):
                return forward(self.trace, starts, seeds, ends)
        if type(self) is Recording:  # (as in vjp)
            got = iter(sweep())
        else:
            alt = None if program_seeds is None else tuple(a for t, a in zip(tangents, program_seeds) if t is not None)
            got = iter(self.answer("forward", tuple(j for j, _ in pairs), seeds, where, sweep, alt))
        out = [next(got) if live else None for live in self.live]
        return out if structured else [dense(o) for o in out]

# Sweeps and replays of recordings from this many operations on pause the garbage collector (see
# COLLECTOR_PAUSED); below it, a collection is rare and short, and the pause would cost more.
_PAUSE_FROM = 1000


def pause_for(trace: Trace) -> Any:
    """The context a sweep or replay of `trace` runs in: the collector paused if the trace is large."""
    return COLLECTOR_PAUSED if trace.size() >= _PAUSE_FROM else _NO_PAUSE


_NO_PAUSE = nullcontext()  # (one for all: it holds nothing, and entering it changes nothing)


def private_copy(a: Any) -> Any:
    """A copy of `a` that nobody else holds (arrays and containers; immutable values as they are)."""
    if type(a) is np.ndarray:
        return a.copy(order="K")  # in its memory layout, which ravel(order="K") reads
    if a is None or isinstance(a, (bool, int, float, complex, str, bytes, np.generic)):
        return a
    try:
        return copy.deepcopy(a)
    except Exception:  # noqa: BLE001 - an argument that can't be copied can't be compared either
        return Unique()


class Unique:
    """Equal to nothing: a replay compared against it records afresh."""

    def __eq__(self, other: Any) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def private_float(a: Any) -> Any:
    """as_float(a), never the caller's own array: a lazy result must not see later changes to it."""
    arr = as_float(a)
    if type(arr) is Tracer:
        return arr
    if arr is a or (isinstance(a, np.ndarray) and np.may_share_memory(arr, a)):
        arr = arr.copy(order="K")
    return arr


def _call_user(f: Callable, args: list) -> Any:
    try:
        return f(*args)
    except Exception as raised:
        # A wrapper of f (the command line's) may have chained NumPy's error as the cause.
        exc = raised if isinstance(raised, ValueError) else raised.__cause__
        if not isinstance(exc, ValueError):
            raise
        # `out[i] = x[i]` into a plain array: NumPy replaces the TracingError raised by
        # Tracer.__float__ with "setting an array element with a sequence"; report the real cause.
        cause = exc.__cause__
        if isinstance(cause, TracingError):
            raise TracingError(
                "writing a traced value into a plain array that f did not make itself (a global, an argument, "
                "or one made in an installed package) takes it out of jaccli's recording, so its derivative is "
                "lost; make the array in f or in a module of yours it imports (r = np.zeros(m), then r[i] = ...), "
                "or collect the values in a list and np.stack them", cause.site) from None
        freezer = FREEZER.v
        if "read-only" in str(exc) and freezer is not None and freezer.arrays:
            raise _held_array_error(exc, freezer) from None
        raise


def _held_array_error(exc: ValueError, freezer: Freezer) -> TracingError:
    """The error for an in-place change of an array that f had handed to a recorded operation."""
    site, name = None, None
    tb = exc.__traceback__
    while tb is not None:  # the innermost frame of the user's code: where the change is written
        if not is_internal(tb.tb_frame.f_code):
            site, frame = (tb.tb_frame.f_code.co_filename, tb.tb_lineno), tb.tb_frame
        tb = tb.tb_next
    if site is not None:
        line = linecache.getline(*site)
        for scope in (frame.f_locals, frame.f_globals):
            for key, value in scope.items():
                if isinstance(value, np.ndarray) and id(value) in freezer.seen and \
                        re.search(rf"(?<![\w.]){re.escape(key)}\b", line):
                    name = key
                    break
            if name:
                break
    what = f"'{name}' is changed in place" if name else "an array is changed in place, and it is read-only"
    why = (" after f handed it to a NumPy operation on traced values; jaccli keeps such arrays for the "
           "derivative (as PyTorch keeps saved tensors), so they stay read-only while f runs")
    if not name:
        why += " (unless the array was read-only already)"
    fix = f"; change a copy instead ({name} = {name}.copy() before the change)" if name else \
        "; change a copy instead (a = a.copy() before the change), or make a new array"
    return TracingError(what + why + fix, site)


def primal_value(a: Any, trace: Trace) -> Any:
    if type(a) is Tracer and a._trace is trace:
        return a._value
    return a


def _outputs(out: Any, trace: Trace) -> tuple[bool, tuple, list]:
    """What f returned, checked: whether a tuple; the outputs; and each one's (node, index) on `trace`.

    A traced output stays traced (its reference is not None); any other is a checked constant.
    """
    is_tuple = isinstance(out, tuple) or _list_of_arrays(out)
    outs = []
    refs = []
    for k, o in enumerate(tuple(out) if is_tuple else (out,)):
        if type(o) in HOLDERS:  # an array f made with np.zeros and wrote traced values into
            o = HOLDERS[type(o)](o)
        if isinstance(o, list) and holds_tracer(o):
            # (no site: the conversion happens here, after f returned; the command line names f's definition)
            refuse_ragged(o, f"the list f returned as output {k}", None)
            o = lift(o)
        if type(o) is Tracer and o._stale is not None:
            raise stale_error(o, None)
        if type(o) is Tracer and o._trace is trace:  # (never complex: bind refuses those)
            refs.append((o._node, o._idx))
            outs.append(o)
        else:
            refs.append(None)
            outs.append(_check_output(o, k))
    return is_tuple, tuple(outs), refs


def _list_of_arrays(out: Any) -> bool:
    """Whether f returned a list of arrays (np.split's), which are its outputs, as a tuple's would be; a
    list of scalars (`[x[0] ** 2, x[1]]`) is one output, the vector of them."""
    return type(out) is list and any(np.ndim(o) >= 1 for o in out if type(o) is Tracer or isinstance(o, np.ndarray))


def call_traced(f: Callable, args: Sequence[Any], trace: Trace) -> tuple[bool, tuple, list]:
    """f called on arguments traced on the open recording `trace`, its operations recorded there.

    Returns what `_outputs` returns. No new level: the caller differentiates the result on `trace`
    itself (`core.reverse(..., traced=True)`), which costs one recording per operation where an
    inner Recording of f would record each one on two levels.
    """
    with intercept_numpy(f) as run:
        out = _call_user(run, list(args))
    return _outputs(out, trace)


def _check_output(o: Any, k: int) -> Any:
    if type(o) is Tracer:
        return o  # traced at an outer level only: a constant here
    try:
        arr = np.asarray(o)
    except Exception:  # noqa: BLE001 - anything that is not array-like
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        what = type(o).__name__
        if isinstance(o, (list, tuple)) and o:
            what = f"a {what} of {type(o[0]).__name__}"
        elif arr is not None:
            what = f"{what} of dtype {arr.dtype}"
        raise UserFunctionError(
            f"the function returned {what} as output {k}, not an array of numbers; "
            "return a NumPy array (or a tuple of arrays)")
    return arr

