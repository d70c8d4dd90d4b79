"""The tape: primitives recorded on traced values, nesting levels, and block sweeps.

This module knows nothing of NumPy's function names. A `Primitive` is a function with
rules; `bind` records one application of it on a `Trace`; `reverse` and `forward` run
sweeps over a recorded trace with a block of K seeds at once (every rule receives its
seed with a leading block axis of length K).

Nesting: every `Trace` has a level; a traced value of a higher level may wrap a traced
value of a lower one. `bind` unwraps only the highest level among its arguments and
re-applies the primitive to the unwrapped values, which records on the lower levels in
turn. Rules are written with the same dispatching operations, so a sweep over a level-2
trace whose values are level-1 traced values is itself recorded on level 1: that is how
second and higher derivatives work.
"""

from __future__ import annotations

import gc
import itertools
import os
import site
import sys
import threading
import weakref
from typing import Any, Callable

import numpy as np

from .seeds import SparseBlock
from .thread_state import TRACER as _TRACER, ThreadSlot as _ThreadSlot
from . import cancelled_shifts as shifts  # shifts reads value_size from here: a module import, so either may load first

_level_counter = itertools.count(1)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_INTERNAL_CODE: dict = {}  # code object -> (its file, _USER, _LIBRARY or _INTERNAL) (see _code_kind)


# While a rule runs, operations it records belong to the user's line of the node being swept.
_RULE_SITE = _ThreadSlot()
# The traced array that f's write (y[i] = v) is replacing, while the update is recorded: only its
# old value is certain to be read by nothing after the write (see _writable).
REPLACING = _ThreadSlot()


class _PausedCollector:
    """Context manager: Python's cyclic garbage collector waits while f is recorded or swept.

    Recording and sweeping allocate many small objects that live on (nodes, traced arrays, rules)
    and make no reference cycles, so each collection the allocations trigger finds nothing, yet
    walks every object that survived so far: measured on a loop of 8000 element writes, 28% of the
    recording and 43% of a reverse sweep. The collector runs again as soon as the last recording or
    sweep in any thread ends, and stays off if it was off.
    """

    __slots__ = ()
    _lock = threading.Lock()
    _users = 0
    _was_enabled = False

    def __enter__(self) -> None:
        cls = _PausedCollector
        with cls._lock:
            if cls._users == 0:
                cls._was_enabled = gc.isenabled()
                gc.disable()
            cls._users += 1

    def __exit__(self, *exc: Any) -> None:
        cls = _PausedCollector
        with cls._lock:
            cls._users -= 1
            if cls._users == 0 and cls._was_enabled:
                gc.enable()


COLLECTOR_PAUSED = _PausedCollector()


class Freezer:
    """Plain arrays that f handed to recorded operations, made read-only while f runs.

    The recording keeps a reference to each (a rule reads it in later sweeps, a replay runs the
    operation on it again), so an in-place change later in f (a scratch buffer refilled in a loop)
    would silently change derivatives; read-only, it raises where it happens instead, and
    `Recording` reports the line. Arrays get their flag back when f returns (`release`). With
    `keep_all` (replayable recordings) the constants of value-free operations are held too.
    """

    __slots__ = ("arrays", "seen", "keep_all")

    def __init__(self, keep_all: bool) -> None:
        self.arrays: list[np.ndarray] = []
        self.seen: set[int] = set()
        self.keep_all = keep_all

    def hold(self, vals: Any, prim: "Primitive") -> None:
        if prim.value_free and not self.keep_all:
            return
        for a in vals:
            if isinstance(a, np.ndarray):
                self._hold(a)
            elif type(a) in (list, tuple):
                for b in a:
                    if isinstance(b, np.ndarray):
                        self._hold(b)

    def _hold(self, a: np.ndarray) -> None:
        size = a.size
        while isinstance(a, np.ndarray) and a.flags.writeable and id(a) not in self.seen:
            a.flags.writeable = False
            self.seen.add(id(a))
            self.arrays.append(a)
            # The array a view was taken from, when every write to it changes the view (a reshape
            # or transpose); not for a part of it (M[i]), whose other parts f may still fill.
            a = a.base if a.base is not None and getattr(a.base, "size", -1) == size else None

    def release(self) -> None:
        """Give every held array its write flag back (a view only after its base)."""
        pending = self.arrays[::-1]
        while pending:
            left = []
            for a in pending:
                try:
                    a.flags.writeable = True
                except ValueError:
                    left.append(a)
            if len(left) == len(pending):
                break  # cannot happen for arrays that were writeable; never loop forever
            pending = left
        self.arrays, self.seen = [], set()


# The Freezer of the recording whose f is running (None outside f, and during sweeps).
FREEZER = _ThreadSlot()


class frozen_constants:  # noqa: N801 - used as a context manager, like contextlib's
    """Run f (or a sweep, with None) with `freezer` holding the plain arrays operations take.

    A class rather than a generator: it is entered on every recording, where contextlib's
    machinery costs several times more than the work.
    """

    __slots__ = ("freezer", "outer")

    def __init__(self, freezer: "Freezer | None") -> None:
        self.freezer = freezer

    def __enter__(self) -> None:
        self.outer, FREEZER.v = FREEZER.v, self.freezer

    def __exit__(self, *exc: Any) -> None:
        FREEZER.v = self.outer
        if self.freezer is not None:
            self.freezer.release()


_USER, _LIBRARY, _INTERNAL = 0, 1, 2
# Installed packages and the standard library: code the user calls (scipy.special, ...), not writes.
# (From `site` and `os`, already imported at start-up; sysconfig would add milliseconds to every run.)
_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.abspath(p), "") for p in (
    *getattr(site, "getsitepackages", lambda: [])(), site.getusersitepackages(), os.path.dirname(os.__file__))
    if p}))


def _code_kind(code: Any) -> int:
    """_INTERNAL for jaccli and NumPy, _LIBRARY for other installed code, _USER for the rest; cached.

    Code objects of two files compare equal when their code is the same (the file is not part of
    that), so an entry holds its file too, and one of another file is not taken from it.
    """
    entry = _INTERNAL_CODE.get(code)
    if entry is not None and entry[0] == code.co_filename:
        return entry[1]
    kind = _file_kind(code.co_filename)
    if entry is None:
        _INTERNAL_CODE[code] = (code.co_filename, kind)
    return kind


def _file_kind(filename: str) -> int:
    if filename.startswith(_PACKAGE_DIR) or _is_numpy_file(filename):
        return _INTERNAL
    if filename.startswith(_LIBRARY_DIRS) or filename.startswith("<frozen"):
        return _LIBRARY
    return _USER


def is_users_file(filename: str) -> bool:
    """Whether a source file is the user's: not jaccli's, NumPy's, the standard library's or an installed package's."""
    return _file_kind(filename) == _USER


def is_internal(code: Any) -> bool:
    """Whether a code object belongs to jaccli or NumPy (not to the user's code); cached."""
    return _code_kind(code) == _INTERNAL


def user_site(skip: int = 1) -> tuple[str, int] | None:
    """The user's file and line: the innermost frame of the user's own code, else of a library
    (scipy.special called from an installed package), never of jaccli or NumPy."""
    frame = sys._getframe(skip)
    known = _INTERNAL_CODE
    library = None
    while frame is not None:
        code = frame.f_code
        entry = known.get(code)
        kind = entry[1] if entry is not None and entry[0] == code.co_filename else _code_kind(code)
        if kind == _USER:
            return code.co_filename, frame.f_lineno
        if kind == _LIBRARY and library is None:
            library = (code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return library


class attributed_to:  # noqa: N801 - used as a context manager, like contextlib's
    """Operations recorded inside belong to `site` (the user's file and line), not to the caller.

    They are jaccli's own (a sweep's rules), so their plain arguments are not frozen either, and
    they run with NumPy's floating-point warnings off: a rule's inf (sqrt'(0)) or a masked 0 * inf
    is a value for the results and the non-finite report, not a RuntimeWarning from jaccli's
    source, nor an error under ``np.seterr(all="raise")``, which is for f's own arithmetic.
    (A class, as frozen_constants: every sweep enters one.)
    """

    __slots__ = ("site", "outer", "freezer", "quiet")

    def __init__(self, site: tuple[str, int] | None) -> None:
        self.site = site

    def __enter__(self) -> None:
        self.outer, _RULE_SITE.v = _RULE_SITE.v, self.site
        self.freezer, FREEZER.v = FREEZER.v, None
        self.quiet = np.errstate(all="ignore")
        self.quiet.__enter__()

    def __exit__(self, *exc: Any) -> None:
        _RULE_SITE.v = self.outer
        FREEZER.v = self.freezer
        self.quiet.__exit__(*exc)


def definition_site(f: Any) -> tuple[str, int] | None:
    """Where the user's function f is defined, if it is plain Python code."""
    code = getattr(f, "__code__", None)
    return None if code is None else (code.co_filename, code.co_firstlineno)


def _is_numpy_file(filename: str) -> bool:
    return f"{os.sep}numpy{os.sep}" in filename or filename.startswith("<__array_function__")


# NumPy's floating-point error state (np.errstate) decides whether an operation warns or raises,
# never its result. A replay re-runs each operation under the state it was recorded under: the
# state is noted for the operations recorded under a state other than the trace's own.
_EXTOBJ = getattr(getattr(getattr(np, "_core", None), "_ufunc_config", None), "_extobj_contextvar", None)
if _EXTOBJ is not None:
    def errstate_token() -> Any:
        return _EXTOBJ.get()  # the same object until an errstate context changes it

    def _same_errstate(a: Any, b: Any) -> bool:
        return a is b
else:  # pragma: no cover - NumPy < 2
    def errstate_token() -> Any:
        return tuple(sorted(np.geterr().items()))

    def _same_errstate(a: Any, b: Any) -> bool:
        return a == b


_GETERR: tuple = (object(), None)  # the last error state seen, and its np.geterr()
_STATES: dict = {}  # np.geterr()'s items -> the one dict that stands for them


def current_errstate() -> dict:
    """np.geterr(), one dict per distinct error state: the operations recorded under equal states
    share it (every sweep's, with the warnings off), so a replay sees where the state changes by
    identity (recording.ErrstateRun), and it is built once per state change, not per operation."""
    global _GETERR
    token = errstate_token()
    cached = _GETERR  # one read: another thread may replace the pair meanwhile, never half of it
    if not _same_errstate(token, cached[0]):
        state = np.geterr()
        cached = _GETERR = (token, _STATES.setdefault(tuple(sorted(state.items())), state))
    return cached[1]


class Raised:
    """fn as a guard of an operation that raised: returns the exception's type (None if it did not)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            self.fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
            return type(exc)
        return None


def _frozen(value: Any) -> Any:
    """A guard's expected value, copied where the caller could still change it in place."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return type(value)(_frozen(v) for v in value)
    return value


class Guard:
    """A plain result that was computed from traced values while recording (a mask, a branch).

    The recording baked it in as a constant, so a replay of the recording at new inputs is the
    same computation only if `fn` over the replayed values still gives `expected`. `refs` are
    ``(argument position, node, output index)``: where the traced values go in `args`.
    """

    __slots__ = ("pos", "fn", "args", "kwargs", "refs", "expected", "errstate")

    def __init__(self, pos: int, fn: Callable, args: tuple, kwargs: dict, refs: tuple, expected: Any,
                 errstate: dict | None) -> None:
        self.pos = pos  # number of nodes recorded before it: every ref is among them
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.refs = refs
        self.expected = _frozen(expected)
        self.errstate = errstate  # np.geterr() when it differed from the trace's, else None


class Trace:
    """One recording level: the nodes of a computation in the order they ran."""

    __slots__ = ("level", "nodes", "inputs", "_plans", "shared_plans", "largest", "guards", "errstate", "errstates",
                 "views", "cuts", "outer", "nonfinite", "severed")

    def __init__(self) -> None:
        self.level = next(_level_counter)
        self.nodes: list[Node] = []
        self.inputs: list[Node] = []
        self._plans: dict[Any, Any] = {}
        # (n, plans): sweep plans by node index, shared by every recording whose first n nodes have the
        # same structure as this one's (a gradient's sweep template, engine/sweep_templates.py); or None.
        self.shared_plans: tuple[int, dict] | None = None
        self.largest = 1  # elements of the largest recorded value: what one seed carries at most
        # Guards collected while the recording is open (None once it is closed).
        self.guards: list[Guard] | None = []
        self.errstate = errstate_token()
        self.errstates: dict[int, dict] = {}  # node index -> np.geterr() where it differs
        # Weak references to the traced arrays that are NumPy views of another traced array, by the
        # id of the array owning their memory: a write into memory they share leaves them behind
        # (Tracer._become marks them), and a write elsewhere need not look at them.
        self.views: dict[int, list] = {}
        # (deps, op name, site) of the first operations whose integer or boolean result took
        # traced values out of the recording (x.astype(int), x > 0): what to name when an input
        # reaches no output (Recording.cut).
        self.cuts: list[tuple[int, str, tuple | None]] = []
        # Whether an operation took a value that an enclosing recording traces (f closes over a
        # variable of a function being differentiated): see Recording.detach.
        self.outer = False
        # id of an array that in-place updates write into -> how many of its entries are not finite
        self.nonfinite: dict[int, int] = {}
        # The user's line (file, line) of the first derivative taken of this recording's traced values
        # without create_graph: a constant to this recording (torch's rule), though it varies with the
        # inputs (api._record); None if there is none.
        self.severed: tuple[str, int] | None = None

    def values(self) -> list:
        """Each node's value, by node index."""
        return [n.value for n in self.nodes]

    def value_at(self, k: int) -> Any:
        return self.nodes[k].value

    def size(self) -> int:
        """How many nodes were recorded."""
        return len(self.nodes)

    def guard(self, fn: Callable, args: tuple, kwargs: dict, refs: tuple, expected: Any) -> None:
        """Remember that `expected` = fn(args with the traced values at `refs`) was baked in."""
        if self.guards is not None:
            state = None if _same_errstate(errstate_token(), self.errstate) else current_errstate()
            self.guards.append(Guard(len(self.nodes), fn, args, kwargs, refs, expected, state))

    def new_input(self, value: Any) -> "Any":
        from .tracer import Tracer  # tracer imports core; the cycle is broken here

        node = Node(INPUT, (), {}, (), value, 1 << len(self.inputs), None)
        node.index = len(self.nodes)
        self.nodes.append(node)
        self.inputs.append(node)
        return Tracer(value, node, None, self)


class Primitive:
    """A function with derivative rules.

    Rules are registered per positional argument as makers ``(ans, *args, **kw) -> rule``,
    where ``rule(g)`` maps a block of cotangents ``g`` of shape ``(K,) + ans.shape`` to one of
    shape ``(K,) + arg.shape`` (reverse), or ``rule(t)`` maps a block of tangents of the
    argument to tangents of the output (forward). A maker runs once per recorded node and its
    rule is reused by every sweep, so work that does not depend on the seed belongs in the maker.
    """

    __slots__ = ("name", "impl", "vjps", "jvps", "jvp_joint", "nondiff", "zero_grad", "constant", "multi_out",
                 "kink", "structure", "sparse", "value_free", "vjp_into", "vjp_add", "in_place",
                 "vjp_in_place", "jvp_in_place")

    def __init__(
        self,
        name: str,
        impl: Callable,
        *,
        nondiff: bool = False,
        zero_grad: bool = False,
        constant: bool = False,
        multi_out: bool = False,
    ) -> None:
        self.name = name
        self.impl = impl
        self.vjps: dict[int, Callable] = {}
        self.jvps: dict[int, Callable] = {}
        # Optional forward rule taking every argument's tangent at once (None for constants),
        # for primitives like concatenate where one combined rule beats a sum of per-argument ones.
        self.jvp_joint: Callable | None = None
        self.nondiff = nondiff  # outputs carry no derivative at all (comparisons, argmax)
        self.zero_grad = zero_grad  # connected, but the derivative is zero (floor, sign)
        # A traced constant (zeros_like(x)): traced so that it can be assigned into, but
        # structurally independent of every input.
        self.constant = constant
        self.multi_out = multi_out  # returns a tuple of arrays
        self.kink: Callable | None = None  # (ans, *args, **kw) -> bool mask of kink points
        # Per-element structure of the derivative: ELEMENTWISE means output element k depends on
        # element k of each argument of the output's size and on nothing else (ufuncs, where).
        self.structure: str | None = None
        # Implementation for a sparse seed block as first argument (engine/seeds.py), if any.
        self.sparse: Callable | None = None
        # The rules never read the values of the arguments or of the result, only their shapes
        # (x + c): a later in-place change of c cannot make a derivative wrong, and the result's
        # memory may be written into by a later in-place update (see `in_place`).
        self.value_free = False
        # Optional in_place(x, *other_args, **kw) -> (part, values): the result is x with `values`
        # written into `part` (a view of x). bind writes them into x's own memory when no recorded
        # rule reads x's values and that memory is the recording's own (a loop of y[i] = v then
        # keeps one array, not one copy per write).
        self.in_place: Callable | None = None
        # Optional reverse rule for argument 0 that adds into the cotangent already gathered for it:
        # vjp_into(acc, g, *other_args, **kw) = acc + rule(g), one operation where the sum takes
        # two (x[1:] and x[:-1] both send a part back to x: the second scatters into the first's).
        self.vjp_into: Callable | None = None
        # Its in-place form for a sum the sweep owns: vjp_add(acc, g, *other_args, **kw) adds
        # rule(g) into acc and returns True, or returns False (acc unchanged) when it cannot.
        self.vjp_add: Callable | None = None
        # Optional reverse rule for argument 0 that writes into the cotangent itself, for a cotangent
        # the sweep owns: vjp_in_place(g, *other_args, **kw) changes g into argument 0's cotangent
        # (assign: g with the written part zeroed). With it, the maker's rule for argument 0 must
        # return a fresh array for a plain g (the sweep then owns that), and the rules for the other
        # arguments may return views of g (the sweep copies them before g is written). A loop of
        # y[i] = v then costs O(K) per write in a sweep, not a copy of the whole block per write.
        self.vjp_in_place: Callable | None = None
        # Its forward counterpart: jvp_in_place(t_x, t_others, *other_args, **kw) writes the tangent
        # of the result into the tangent t_x of argument 0, when the sweep owns t_x and nothing after
        # this node reads it (t_others: the other arguments' tangents, None where zero). With it,
        # jvp_joint must return a fresh array for plain tangents (the sweep then owns that).
        self.jvp_in_place: Callable | None = None

    def defvjp(self, *makers: Callable | None, argnums: tuple[int, ...] | None = None) -> "Primitive":
        for i, maker in zip(argnums or range(len(makers)), makers):
            if maker is not None:
                self.vjps[i] = maker
        return self

    def defjvp(self, *makers: Callable | None, argnums: tuple[int, ...] | None = None) -> "Primitive":
        for i, maker in zip(argnums or range(len(makers)), makers):
            if maker is not None:
                self.jvps[i] = maker
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return bind(self, args, kwargs)

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


INPUT = Primitive("input", lambda x: x)
_MISSING = object()
ELEMENTWISE = "elementwise"


class Node:
    """One recorded primitive application."""

    __slots__ = ("prim", "args", "kwargs", "parents", "value", "deps", "site", "index", "_vjps", "_jvps",
                 "pinned", "in_place", "finite")

    def __init__(self, prim, args, kwargs, parents, value, deps, site):
        self.prim = prim
        self.args = args
        self.kwargs = kwargs
        self.parents = parents  # tuple of (argnum, parent node, parent output index or None)
        self.value = value
        self.deps = deps  # bit mask over the trace's inputs: which ones this node depends on
        self.site = site
        self.index = -1
        self._vjps: dict[int, Callable | None] | None = None
        self._jvps: dict[int, Callable | None] | None = None
        # Some rule reads this node's value (its own or a later operation's), or a view shares its
        # memory: the value must stay as it is, and no in-place update may write into it.
        self.pinned = not (prim.value_free or prim.constant)
        self.in_place = False  # the value was written into the first argument's memory
        # For a value whose memory a later in-place update changed: whether it was all finite (the
        # diagnostics cannot read it any more); None otherwise.
        self.finite: bool | None = None

    def vjp(self, argnum: int) -> Callable | None:
        """The reverse rule for one argument, made once and cached (None means zero)."""
        if self._vjps is None:
            self._vjps = {}
        return self._rule(self._vjps, self.prim.vjps, argnum, "reverse")

    def jvp(self, argnum: int) -> Callable | None:
        """The forward rule for one argument, made once and cached (None means zero)."""
        if self._jvps is None:
            self._jvps = {}
        return self._rule(self._jvps, self.prim.jvps, argnum, "forward")

    def _rule(self, cache: dict, makers: dict, argnum: int, mode: str) -> Callable | None:
        rule = cache.get(argnum, _MISSING)
        if rule is not _MISSING:
            return rule
        if self.prim.zero_grad:
            rule = None
        else:
            maker = makers.get(argnum)
            if maker is None:
                raise _no_rule(self, argnum, mode)
            rule = maker(self.value, *self.args, **self.kwargs)
        cache[argnum] = rule
        return rule

    def __repr__(self) -> str:
        return f"Node#{self.index}({self.prim.name})"


def _no_rule(node: Node, argnum: int, mode: str) -> Exception:
    from ..errors import UnsupportedOperationError

    return UnsupportedOperationError(
        f"{node.prim.name} has no {mode}-mode derivative with respect to its argument {argnum}; "
        f"see 'jaccli ops' for what each function supports",
        node.site,
    )


_MAX_CUTS = 32  # the first few are enough to name one per input; a loop of comparisons adds no more


def bind(prim: Primitive, args: tuple, kwargs: dict, site: tuple | None = None) -> Any:
    """Apply `prim` to `args`, recording it on the highest trace among the traced arguments.

    `site` is the user's file and line, found once by the outermost call and handed down to the
    lower levels, which record the same operation.
    """
    Tracer = _TRACER[0]
    top = None
    for a in args:
        if type(a) is Tracer and (top is None or a._trace.level > top.level):
            top = a._trace
    if top is None:
        if prim.sparse is not None and args and type(args[0]) is SparseBlock:
            out = prim.sparse(*args, **kwargs)
            if out is not NotImplemented:
                return out
            args = (args[0].todense(),) + tuple(args[1:])
        return prim.impl(*args, **kwargs)
    vals = []
    parents = []
    deps = 0
    nested = False
    pin = not prim.value_free
    for i, a in enumerate(args):
        if type(a) is Tracer:
            if a._stale is not None:
                raise stale_error(a, user_site(2))
            if a._trace is top:
                v = a._value
                vals.append(v)
                parents.append((i, a._node, a._idx))
                deps |= a._node.deps
                if pin:
                    a._node.pinned = True
                if type(v) is Tracer:
                    nested = top.outer = True
            else:
                vals.append(a)
                nested = top.outer = True
        else:
            vals.append(a)
    outermost = site is None
    if outermost:
        site = _RULE_SITE.v or user_site(2)
    # Lower levels are applied first, so an implementation only ever sees plain arrays.
    finite = None
    if nested:
        ans = bind(prim, tuple(vals), kwargs, site)
    else:
        try:
            if prim.in_place is not None and outermost and _writable(args[0], top):
                ans, finite = write_in_place(prim, args[0]._node, vals, kwargs, top.nonfinite)
            else:
                ans = prim.impl(*vals, **kwargs)
        except Exception as exc:
            # f may catch it and take another way: a replay must raise here too
            top.guard(Raised(prim.impl), tuple(vals), kwargs, tuple(parents), type(exc))
            raise
    freezer = FREEZER.v
    if freezer is not None and outermost:
        freezer.hold(args, prim)  # the plain arguments as f passed them (traced ones are skipped)
    # (a float array, the common result, is tested inline: bind runs once per recorded operation)
    if prim.nondiff or not ((type(ans) is np.ndarray and ans.dtype.kind == "f") or (
            all(_is_inexact(v, prim, site) for v in ans) if prim.multi_out else _is_inexact(ans, prim, site))):
        # An integer or boolean result carries no derivative and leaves the recording as a plain
        # value; the lowest level guards it (a nested call guarded it on the level below).
        if not nested:
            top.guard(prim.impl, tuple(vals), kwargs, tuple(parents), ans)
            if deps and len(top.cuts) < _MAX_CUTS:
                top.cuts.append((deps, prim.name, site))
        return ans
    if prim.constant:
        parents, deps = (), 0
    node = Node(prim, tuple(vals), kwargs, tuple(parents), ans, deps, site)
    size = ans.size if type(ans) is np.ndarray else getattr(ans, "size", 1)
    if type(size) is int and size > top.largest:
        top.largest = size
    node.index = len(top.nodes)
    top.nodes.append(node)
    if finite is not None:
        node.in_place, node.finite = True, finite
    if not nested and top.guards is not None and not _same_errstate(errstate_token(), top.errstate):
        top.errstates[node.index] = current_errstate()
    if prim.multi_out:
        outs = tuple(Tracer(v, node, k, top) for k, v in enumerate(ans))
        for out in outs:
            _note_view(out, args, top)
        return outs
    out = Tracer(ans, node, None, top)
    if type(ans) is not np.ndarray or ans.base is not None:  # (a fresh array is a view of nothing)
        _note_view(out, args, top)
    return out


def _writable(x: Any, top: Trace) -> bool:
    """Whether an update of traced `x` may write into x's memory: f is writing into x (which then
    stands for the result: nothing can use its old value afterwards), no recorded rule reads x's
    values, no view shares them, and the memory is the recording's own (no input, constant or
    argument of f, which the caller may still hold)."""
    if x is not REPLACING.v or x._trace is not top or x._idx is not None:
        return False
    node, value = x._node, x._value
    return (not node.pinned and type(value) is np.ndarray and value.base is None and value.flags.writeable
            and value.dtype.kind in "fc" and (node.in_place or not any(a is value for a in node.args)))


def write_in_place(prim: Primitive, node: Node, vals: list, kwargs: dict, nonfinite: dict) -> tuple[Any, bool]:
    """prim applied in place into the memory of vals[0], node's value; returns (result, whether the
    result is all finite).

    The value node had is gone afterwards: only whether it was finite is kept, for the diagnostics
    (`nonfinite`: a running count of the non-finite entries per array, O(size written) a write).
    """
    value = vals[0]
    before = nonfinite.get(id(value))
    if before is None:
        before = int(np.count_nonzero(~np.isfinite(value)))
    part, values = prim.in_place(*vals, **kwargs)
    old = int(np.count_nonzero(~np.isfinite(part)))
    part[...] = values
    after = nonfinite[id(value)] = before - old + int(np.count_nonzero(~np.isfinite(part)))
    if node.finite is None:
        node.finite = before == 0
    return value, after == 0


def rewritable(node: Node) -> bool:
    """Whether node's value, made by a replay of a recording, is memory the replay may write into
    again where the recording wrote in place: its own array (not an input's, not a constant's)."""
    value = node.value
    return (node.prim is not INPUT and type(value) is np.ndarray and value.base is None
            and value.flags.writeable and value.dtype.kind in "fc"
            and (node.in_place or not any(a is value for a in node.args)))


def _note_view(out: Any, args: tuple, top: Trace) -> None:
    """Link `out` to the traced argument it is a NumPy view of, if any, and remember it as a view."""
    base = _view_of(out._value, args, top)
    if base is not None:
        base._node.pinned = True  # the view shows what a write into base's memory would change
        out._base = base
        top.views.setdefault(id(memory_root(out._value)), []).append(weakref.ref(out))


def memory_root(a: Any) -> Any:
    """The object that owns the memory of array `a` (through every level of tracing and of views)."""
    while type(a) is _TRACER[0]:
        a = a._value
    while isinstance(getattr(a, "base", None), np.ndarray):
        a = a.base
    return a


def _view_of(ans: Any, args: tuple, top: Trace) -> Any:
    """The traced argument whose memory `ans` is a NumPy view of (on this level), or None."""
    Tracer = _TRACER[0]
    if type(ans) is np.ndarray:
        if ans.base is None:
            return None
        for a in args:
            if type(a) is Tracer and a._trace is top and type(a._value) is np.ndarray \
                    and np.may_share_memory(ans, a._value):
                return a
    elif type(ans) is Tracer and ans._base is not None:  # nested: the level below knows
        for a in args:
            if type(a) is Tracer and a._trace is top and a._value is ans._base:
                return a
    return None


def stale_error(a: Any, use: tuple | None) -> Exception:
    """The error for using an array that a write left behind (reported where the write is)."""
    from ..errors import TracingError

    then = f", and it is used afterwards at {use[0]}:{use[1]}" if use else ", and f returns it"
    if a._stale[2] == "view":
        return TracingError(
            f"an array is changed here, but a view of it taken before (like row = Z[1]; Z[1, 0] = v) keeps its "
            f"old values in jaccli{then}: take the view after the write, or copy it before "
            "(row = Z[1].copy()) if the old values are meant", a._stale[0])
    return TracingError(
        f"an array is changed here through a view of it (like Z[0][1] = v, or row = Z[1]; row += v){then}; "
        "jaccli does not carry such writes back to the array: write into it with one index "
        "(Z[0, 1] = v, Z[1] += v), or copy the view first (row = Z[1].copy())", a._stale[0])


def value_size(value: Any) -> int:
    """The number of elements of a recorded value (an array, a NumPy or Python scalar, a traced array)."""
    size = getattr(value, "size", 1)
    return size if type(size) is int else int(np.size(value))


def _is_inexact(value: Any, prim: Primitive, site: tuple | None) -> bool:
    """Whether a traced operation's result carries a derivative (floats do, integers and booleans
    do not); a complex one is refused: the rules are those of real functions."""
    if type(value) is _TRACER[0]:
        return True
    dtype = getattr(value, "dtype", None)
    kind = "c" if type(value) is complex else "f" if type(value) is float else "" if dtype is None else dtype.kind
    if kind == "c":
        from ..errors import UnsupportedOperationError
        raise UnsupportedOperationError(
            f"{prim.name} made a complex array of a traced value: jaccli differentiates real-valued "
            "computations only; write complex arithmetic with the real and imaginary parts as real arrays", site)
    return kind == "f"


# ---------------------------------------------------------------------------
# Sweeps
# ---------------------------------------------------------------------------


def _get(store: dict, node: Node, idx: int | None) -> Any:
    value = store.get(node)
    if value is None or idx is None:
        return value
    return value[idx]


def _owns(owned: dict, value: Any) -> bool:
    """value is a sum this sweep made and has not handed to a rule: it may be added to in place."""
    return owned.get(id(value)) is value


class _PendingSum:
    """Entry-sparse blocks gathered for one node, joined once when the sum is read or grows dense.

    Adding them pairwise would join all entries so far at each step: O(n^2) for n parts.
    """

    __slots__ = ("parts", "entries", "rank")

    def __init__(self, parts: list) -> None:
        self.parts = parts
        self.entries = sum(p.idx.shape[1] for p in parts)
        self.rank = sum(p.rank for p in parts)

    def add(self, block: SparseBlock) -> None:
        self.parts.append(block)
        self.entries += block.idx.shape[1]
        self.rank += block.rank

    def join(self, owned: dict) -> Any:
        out = SparseBlock.sum_of(self.parts)
        if type(out) is np.ndarray:
            owned[id(out)] = out  # made here: later parts add into it in place
        return out


def _add(old: Any, value: Any, owned: dict) -> Any:
    """old + value for a cotangent store; a sum the sweep owns is added to in place.

    A node with many consumers (x[i] read in a loop, the pieces of a long np.stack) gathers one
    cotangent per consumer. A fresh sum for each would cost O(size) per consumer, quadratic in
    all; into a sum the sweep made itself, an entry-sparse block adds only its entries.
    """
    if old is None:
        return value
    if type(old) is _PendingSum:
        if type(value) is SparseBlock and value.shape == old.parts[0].shape:
            old.add(value)
            return old.join(owned) if old.parts[0].too_many(old.entries, old.rank) else old
        old = old.join(owned)
    elif type(old) is SparseBlock and type(value) is SparseBlock and old.shape == value.shape:
        return _PendingSum([old, value])
    if _owns(owned, old):
        if type(value) is np.ndarray and np.result_type(old, value) == old.dtype \
                and np.broadcast_shapes(old.shape, value.shape) == old.shape:
            np.add(old, value, out=old)
            return old
        if type(value) is SparseBlock and value.shape == old.shape and np.result_type(old, value.dtype) == old.dtype \
                and not value.traced:
            value.add_into(old)
            return old
    out = old + value
    if type(out) is np.ndarray:
        owned[id(out)] = out
    return out


def _accumulate(store: dict, node: Node, idx: int | None, n_out: int, value: Any, owned: dict) -> None:
    if idx is None:
        store[node] = _add(store.get(node), value, owned)
        return
    slots = store.get(node)
    if slots is None:
        slots = store[node] = [None] * n_out
    slots[idx] = _add(slots[idx], value, owned)


def _take(store: dict, node: Node, owned: dict) -> tuple[Any, bool]:
    """Pop node's cotangent: from here on rules see it, and it is no longer the sweep's to change.

    Also returns whether the sweep owned it (a sum it made, referenced from nowhere else).
    """
    g = store.pop(node, None)
    kind = type(g)
    if kind is _PendingSum:
        g = g.join(owned)
    elif kind is list:
        g = [p.join(owned) if type(p) is _PendingSum else p for p in g]
        for part in g:
            owned.pop(id(part), None)
        return g, False
    return g, owned.pop(id(g), None) is g if owned else False


class Plan(list):
    """The nodes a reverse sweep visits, in reverse order; `cut`: indices of the nodes whose
    outgoing edges it does not follow (shifts that cancel out of the outputs, see engine/shifts.py)."""

    __slots__ = ("cut",)


def _needed(trace: Trace, outputs: tuple, wrt_mask: int, cut: frozenset) -> Plan:
    needed = set()
    stack = [n for n, _ in outputs if n.deps & wrt_mask]
    while stack:
        node = stack.pop()
        if node.index in needed:
            continue
        needed.add(node.index)
        for _, parent, _ in node.parents:
            if parent.deps & wrt_mask and parent.index not in needed and parent.index not in cut:
                stack.append(parent)
    plan = Plan(trace.nodes[i] for i in sorted(needed, reverse=True))
    plan.cut = cut
    return plan


def _shared(trace: Trace, key: tuple) -> dict | None:
    """trace's shared plans (see Trace.shared_plans) when they cover the outputs in `key`."""
    shared = trace.shared_plans
    if shared is not None and all(i < shared[0] for i, _ in key[1]):
        return shared[1]
    return None


def renewed_plan(form: tuple, nodes: list) -> Any:
    """A plan in index form (`plan_form`) made of `nodes`, a recording of the same structure."""
    if len(form) == 2:
        plan = Plan(nodes[i] for i in form[0])
        plan.cut = form[1]
        return plan
    return [nodes[i] for i in form[0]], form[1], form[2]


def plan_form(plan: Any) -> tuple:
    """A reverse plan (a Plan) or forward plan (order, last use, cut) by node index."""
    if type(plan) is Plan:
        return tuple(n.index for n in plan), plan.cut
    return tuple(n.index for n in plan[0]), plan[1], plan[2]


def _cached_plan(trace: Trace, key: tuple, make: Callable, outputs: tuple, wrt_mask: int) -> Any:
    """The plan under `key`: trace's own, else renewed from its shared plans (Trace.shared_plans),
    else made by `make(trace, outputs, wrt_mask)` and shared."""
    plan = trace._plans.get(key)
    if plan is not None:
        return plan
    shared = _shared(trace, key)
    form = None if shared is None else shared.get(key)
    if form is not None:
        plan = renewed_plan(form, trace.nodes)
    else:
        plan = make(trace, outputs, wrt_mask)
        if shared is not None:
            shared[key] = plan_form(plan)
    trace._plans[key] = plan
    return plan


def _plan_reverse(trace: Trace, outputs: tuple, wrt_mask: int) -> Plan:
    """Nodes on some path from a differentiated input to the outputs, in reverse order."""
    return _cached_plan(trace, ("rev", tuple((n.index, i) for n, i in outputs), wrt_mask), _make_reverse,
                        outputs, wrt_mask)


def _make_reverse(trace: Trace, outputs: tuple, wrt_mask: int) -> Plan:
    plan = _needed(trace, outputs, wrt_mask, frozenset())
    groups = shifts.candidates(plan)
    if groups:
        ordered = plan[::-1]
        cut = frozenset(c.index for group in groups if shifts.cancelling(ordered, group, outputs) for c in group)
        if cut:
            plan = _needed(trace, outputs, wrt_mask, cut)
    return plan


# Called as MONITOR.v(node, argnum, value, "reverse" | "forward") for every value a rule
# produces, when set (diagnostics: where did the first NaN or inf appear).
MONITOR = _ThreadSlot()


def reverse(trace: Trace, outputs: tuple, seeds: tuple, wrt: tuple, traced: bool = False) -> list:
    """Pull a block of cotangents back from `outputs` to the input nodes `wrt`.

    Args:
        trace: the recording.
        outputs: ``(node, output_index)`` pairs; the index is None for single-output nodes.
        seeds: one block of cotangents per output, shape ``(K,) + output.shape``, or None.
        wrt: input nodes to pull back to.
        traced: the trace is still open and the sweep is recorded on it: the rules are made from
            the nodes' values as traced arrays of `trace`, so the cotangents are traced functions
            of its inputs (a gradient that can be differentiated again, on one level).

    Returns:
        One cotangent block per `wrt` node, shape ``(K,) + input.shape``, or None where no
        path leads from the input to a seeded output (a structural zero).
    """
    wrt_mask = 0
    for node in wrt:
        wrt_mask |= node.deps
    store: dict = {}
    owned: dict = {}  # id -> array: the sums this sweep made and may still add to in place
    for (node, idx), seed in zip(outputs, seeds):
        if seed is not None and node.deps & wrt_mask:
            _accumulate(store, node, idx, len(node.value) if idx is not None else 0, seed, owned)
    wanted = {id(n) for n in wrt}
    results: dict = {}
    # What a node's makers and rules record (and the sums of what they send back) belongs to the
    # user's line of that node: set once per node, and the caller's site is back when the sweep ends.
    with attributed_to(_RULE_SITE.v):
        plan = _plan_reverse(trace, tuple(outputs), wrt_mask)
        cut = plan.cut
        for node in plan:
            g, mine = _take(store, node, owned)
            if g is None:
                continue
            if not node.parents:
                if id(node) in wanted:
                    results[id(node)] = g
                continue
            _RULE_SITE.v = node.site
            if node.prim.vjp_in_place is not None and not traced and MONITOR.v is None \
                    and type(g) in (np.ndarray, SparseBlock):
                _pull_in_place(node, g, mine, store, owned, wrt_mask)  # never a cut c's consumer (shifts._combine)
                continue
            retraced = _retraced(node, trace) if traced else None
            for argnum, parent, pidx in node.parents:
                if not parent.deps & wrt_mask or (cut and parent.index in cut):
                    continue
                if argnum == 0 and pidx is None and node.prim.vjp_into is not None and MONITOR.v is None:
                    acc = store.get(parent)
                    if acc is not None and type(acc) not in (SparseBlock, _PendingSum) and type(g) is not SparseBlock:
                        args = node.args if retraced is None else retraced[1]
                        if retraced is None and node.prim.vjp_add is not None and _owns(owned, acc) \
                                and node.prim.vjp_add(acc, g, *args[1:], **node.kwargs):
                            continue  # added in place into the sum the sweep owns
                        store[parent] = out = node.prim.vjp_into(acc, g, *args[1:], **node.kwargs)
                        if type(out) is np.ndarray:
                            owned[id(out)] = out
                        continue
                rule = node.vjp(argnum) if retraced is None else _traced_rule(node, argnum, retraced)
                if rule is None:
                    continue
                ct = rule(g)
                if ct is None:
                    continue
                if MONITOR.v is not None:
                    MONITOR.v(node, argnum, ct, "reverse")
                _accumulate(store, parent, pidx, len(parent.value) if pidx is not None else 0, ct, owned)
    return [results.get(id(n)) for n in wrt]


def _pull_in_place(node: Node, g: Any, mine: bool, store: dict, owned: dict, wrt_mask: int) -> None:
    """reverse()'s step for a node whose primitive has vjp_in_place: argument 0's cotangent is g
    itself, changed in place, when the sweep owns g; else the rule's fresh array, which the sweep
    then owns. The other arguments are pulled back first, from copies where g will be written."""
    x_parent = None
    for argnum, parent, pidx in node.parents:
        if not parent.deps & wrt_mask:
            continue
        if argnum == 0 and pidx is None:
            x_parent = parent
            continue
        rule = node.vjp(argnum)
        ct = None if rule is None else rule(g)
        if ct is None:
            continue
        if mine and type(ct) is np.ndarray and np.may_share_memory(ct, g):
            ct = ct.copy()
        _accumulate(store, parent, pidx, len(parent.value) if pidx is not None else 0, ct, owned)
    if x_parent is None:
        return
    if mine and type(g) is np.ndarray:
        node.prim.vjp_in_place(g, *node.args[1:], **node.kwargs)
        ct = g
    else:
        rule = node.vjp(0)
        ct = None if rule is None else rule(g)
        if ct is None:
            return
    old = store.get(x_parent)
    if old is None and type(ct) is np.ndarray:
        store[x_parent] = ct
        owned[id(ct)] = ct
    else:
        store[x_parent] = _add(old, ct, owned)


def _retraced(node: Node, trace: Trace) -> tuple[Any, list]:
    """node's result and arguments as traced arrays of `trace`, as the recorded code had them."""
    Tracer = _TRACER[0]
    args = list(node.args)
    for argnum, parent, pidx in node.parents:
        value = parent.value if pidx is None else parent.value[pidx]
        args[argnum] = Tracer(value, parent, pidx, trace)
    if node.prim.multi_out:
        return tuple(Tracer(v, node, k, trace) for k, v in enumerate(node.value)), args
    return Tracer(node.value, node, None, trace), args


def _traced_rule(node: Node, argnum: int, retraced: tuple[Any, list], mode: str = "reverse") -> Callable | None:
    """The rule of node for one argument, made from traced values (never cached on the node)."""
    if node.prim.zero_grad:
        return None
    maker = (node.prim.vjps if mode == "reverse" else node.prim.jvps).get(argnum)
    if maker is None:
        raise _no_rule(node, argnum, mode)
    ans, args = retraced
    return maker(ans, *args, **node.kwargs)


def _plan_forward(trace: Trace, outputs: tuple, wrt_mask: int) -> tuple[list[Node], dict, frozenset]:
    """Nodes on a path from the seeded inputs to the outputs, in order, and each node's last use."""
    return _cached_plan(trace, ("fwd", tuple((n.index, i) for n, i in outputs), wrt_mask), _make_forward,
                        outputs, wrt_mask)


def _make_forward(trace: Trace, outputs: tuple, wrt_mask: int) -> tuple[list[Node], dict, frozenset]:
    reverse_order = _plan_reverse(trace, outputs, wrt_mask)
    order = reverse_order[::-1]
    last_use: dict[int, int] = {}
    for pos, node in enumerate(order):
        for _, parent, _ in node.parents:
            last_use[parent.index] = pos
    for node, _ in outputs:
        last_use[node.index] = len(order)
    return order, last_use, reverse_order.cut


def forward(trace: Trace, inputs: tuple, tangents: tuple, outputs: tuple, traced: bool = False) -> list:
    """Push a block of tangents from input nodes to `outputs`.

    Args:
        trace: the recording.
        inputs: input nodes that are seeded.
        tangents: one block per input, shape ``(K,) + input.shape``.
        outputs: ``(node, output_index)`` pairs.
        traced: the sweep is recorded on `trace`, as reverse()'s: the rules are made from the nodes'
            values as traced arrays of `trace` (engine/programs.py records a sweep this way).

    Returns:
        One tangent block per output, shape ``(K,) + output.shape``, or None where the output
        does not depend on any seeded input (a structural zero).
    """
    wrt_mask = 0
    for node in inputs:
        wrt_mask |= node.deps
    order, last_use, cut = _plan_forward(trace, tuple(outputs), wrt_mask)
    store: dict = {}
    for node, t in zip(inputs, tangents):
        if t is not None and node.index not in cut:  # a cut input's tangent goes nowhere
            store[node] = t
    # id -> array: tangents this sweep made that no other stored tangent is a view of; one whose
    # node is used for the last time may be written in place by jvp_in_place
    owned: dict = {}
    with attributed_to(_RULE_SITE.v):  # each node sets its own line, as in reverse()
        for pos, node in enumerate(order):
            if not node.parents:
                continue
            _RULE_SITE.v = node.site
            acc = None
            if node.prim.jvp_in_place is not None and MONITOR.v is None and not traced \
                    and _push_in_place(node, pos, store, last_use, owned):
                continue
            retraced = _retraced(node, trace) if traced else None
            if node.prim.jvp_joint is not None:
                ts = [None] * len(node.args)
                for argnum, parent, pidx in node.parents:
                    ts[argnum] = _get(store, parent, pidx)
                joint = node._jvps.get(-1) if node._jvps else None
                if all(t is None for t in ts):
                    pass
                elif retraced is not None:  # made from traced values: never cached on the node
                    acc = node.prim.jvp_joint(retraced[0], *retraced[1], **node.kwargs)(ts)
                elif joint is None:
                    if node._jvps is None:
                        node._jvps = {}
                    joint = node._jvps[-1] = node.prim.jvp_joint(node.value, *node.args, **node.kwargs)
                    acc = joint(ts)
                else:
                    acc = joint(ts)
            for argnum, parent, pidx in node.parents if node.prim.jvp_joint is None else ():
                t = _get(store, parent, pidx)
                if t is None:
                    continue
                rule = node.jvp(argnum) if retraced is None else _traced_rule(node, argnum, retraced, "forward")
                if rule is not None:
                    out = rule(t)
                    if out is None:
                        pass
                    elif acc is None:
                        acc = out
                    elif node.prim.multi_out:
                        acc = tuple(a if b is None else (b if a is None else a + b) for a, b in zip(acc, out))
                    else:
                        acc = acc + out
            for _, parent, _ in node.parents:
                if last_use.get(parent.index) == pos:
                    store.pop(parent, None)
            if acc is not None:
                if MONITOR.v is not None:
                    MONITOR.v(node, -1, acc, "forward")
                if owned:
                    _disown_shared(acc, owned)
                if node.prim.jvp_in_place is not None and not traced and type(acc) is np.ndarray and acc.base is None:
                    owned[id(acc)] = acc  # jvp_joint's result is fresh (see Primitive.jvp_in_place)
                store[node] = list(acc) if node.prim.multi_out else acc
    return [_get(store, node, idx) for node, idx in outputs]


def _disown_shared(acc: Any, owned: dict) -> None:
    """A tangent that is an owned one (a copy's rule hands its tangent on) or a view of it shares its
    memory: that one may no longer be written in place."""
    for a in (acc if type(acc) in (tuple, list) else (acc,)):
        if type(a) is np.ndarray:
            owned.pop(id(memory_root(a)), None)
        elif type(a) is SparseBlock:  # its parts may be views too
            for part in (a.val, a.u, a.v):
                if type(part) is np.ndarray:
                    owned.pop(id(memory_root(part)), None)


def _push_in_place(node: Node, pos: int, store: dict, last_use: dict, owned: dict) -> bool:
    """forward()'s step for a node with jvp_in_place: write into argument 0's tangent when the sweep
    owns it and nothing after this node reads it. False (nothing done) when that does not hold."""
    x_parent, ts = None, [None] * (len(node.args) - 1)
    for argnum, parent, pidx in node.parents:
        if argnum == 0:
            if pidx is not None:
                return False
            x_parent = parent
        else:
            t = _get(store, parent, pidx)
            if t is not None and type(t) is not np.ndarray:
                return False
            ts[argnum - 1] = t
    t_x = store.get(x_parent) if x_parent is not None else None
    if type(t_x) is not np.ndarray or owned.get(id(t_x)) is not t_x or last_use.get(x_parent.index) != pos:
        return False
    node.prim.jvp_in_place(t_x, ts, *node.args[1:], **node.kwargs)
    for _, parent, _ in node.parents:
        if last_use.get(parent.index) == pos:
            store.pop(parent, None)
    store[node] = t_x
    return True
