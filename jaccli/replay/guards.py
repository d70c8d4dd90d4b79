"""Guards: the comparisons a replay makes before it trusts a recording at new values.

A recording bakes in plain values that f or a rule derived from traced values (a mask, a branch,
whether a factor is finite): each is a guard, recomputed where it was taken when the recording is
replayed (a `record_once` replay, a compiled sweep, a sweep template). A replay also compares the
arguments that are not differentiated against a snapshot of them. `same` is the one comparison
all of these use: type, shape, dtype and every bit.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from jaccli.engine import FINITE_ON_FINITE, Unique, all_finite as _ALL_FINITE, no_zero as _NO_ZERO, private_copy


def same(a: Any, b: Any) -> bool:
    """Whether two plain values are the same: type, shape, dtype and every bit (so -0.0 is not 0.0).

    Arrays of objects, array subclasses (masked arrays) and objects without a plain equality
    are never the same: a replay compared against them records afresh.
    """
    if type(a) is not type(b):
        return False
    if type(a) is np.ndarray or isinstance(a, np.generic):
        a, b = np.asarray(a), np.asarray(b)
        # and in the same layout, which ravel(order="K") reads: Fortran order, or not
        return a.dtype == b.dtype and a.dtype.kind != "O" and a.shape == b.shape and a.tobytes() == b.tobytes() \
            and _fortran(a) == _fortran(b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:  # in order: f may iterate over it
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is float:
        return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (a != a and b != b))
    if a is None or isinstance(a, _EQUAL) or a is Ellipsis:
        return a == b
    return False


_EQUAL = (bool, int, complex, str, bytes, type, np.dtype, slice)  # compared with ==


def _fortran(a: np.ndarray) -> bool:
    return a.flags.f_contiguous and not a.flags.c_contiguous


def comparable(a: Any) -> bool:
    """Whether `same` can find `a` the same as a copy of it (a plain value, an array of numbers, or
    containers of them): only such a data argument is replayed, and f gets a private copy of it."""
    if type(a) is np.ndarray or isinstance(a, np.generic):
        return np.asarray(a).dtype.kind != "O"
    if type(a) in (tuple, list) or isinstance(a, tuple):
        return all(comparable(x) for x in a)
    if type(a) is dict:
        return all(comparable(k) and comparable(x) for k, x in a.items())
    return a is None or a is Ellipsis or isinstance(a, (float,) + _EQUAL)


def snapshot(args: Sequence[Any], wrt: Sequence[int]) -> dict[int, Any]:
    """Copies of the arguments that are not differentiated: a replay needs them unchanged."""
    return {i: private_copy(a) if comparable(a) else Unique() for i, a in enumerate(args) if i not in wrt}


def substituted(args: tuple, refs: tuple, vals: list) -> tuple:
    """args with the replayed values in place at `refs` ((position, node, output index) triples)."""
    args = list(args)
    for i, node, idx in refs:
        v = vals[node.index]
        args[i] = v if idx is None else v[idx]
    return tuple(args)


def _call(fn: Callable, args: tuple, kwargs: dict, errstate: dict | None) -> Any:
    """fn(*args, **kwargs), under `errstate` (np.geterr()'s form) when it is not None."""
    if errstate is None:
        return fn(*args, **kwargs)
    with np.errstate(**errstate):
        return fn(*args, **kwargs)


# NumPy 2 keeps the error state in a context variable. Setting it to a state made once costs a
# tenth of entering np.errstate (about 4 us, where a small compiled sweep's NumPy calls take 10).
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ, _make_extobj
except ImportError:  # pragma: no cover - NumPy < 2
    _EXTOBJ = _make_extobj = None

# (id of the state entered from, id of the state dict) -> (the state made, the two it was made from):
# np.errstate(**state) makes the same from the same, and the two kept alive keep their ids unique.
_MADE: dict = {}


# The last of them, (state entered from, state dict, the state made), checked first: a steady call's
# programs enter the one state (a sweep's, warnings off) from the one caller's, call after call.
_LAST: tuple = (None, None, None)


def _made(state: dict) -> Any:
    """NumPy's error state `state` on top of the current one (what np.errstate(**state) enters)."""
    global _LAST
    outer = _EXTOBJ.get()
    last = _LAST  # one read: another thread may replace it meanwhile, never part of it
    if last[0] is outer and last[1] is state:
        return last[2]
    key = (id(outer), id(state))
    made = _MADE.get(key)
    if made is None or made[1] is not outer or made[2] is not state:
        if len(_MADE) > 64:
            _MADE.clear()
        made = _MADE[key] = (_make_extobj(**state), outer, state)
    _LAST = (outer, state, made[0])
    return made[0]


class ErrstateRun:
    """A replay's error state: each operation's recorded one (None: the caller's), entered only
    where it changes from the previous operation's. A recorded sweep's operations, all under
    one state (warnings off), then cost one change of state, not one each. close() when done."""

    __slots__ = ("state", "ctx")

    def __init__(self) -> None:
        self.state: dict | None = None
        self.ctx: Any = None  # what leaves the state entered: a context variable's token, or np.errstate

    def set(self, state: dict | None) -> None:
        if state is self.state:
            return
        if _EXTOBJ is not None:
            self.ctx = state_entered(state, self.ctx)
        else:  # pragma: no cover - NumPy < 2
            if self.ctx is not None:
                self.ctx.__exit__(None, None, None)
                self.ctx = None
            if state is not None:
                self.ctx = np.errstate(**state)
                self.ctx.__enter__()
        self.state = state

    def close(self) -> None:
        self.set(None)


def state_entered(state: dict | None, token: Any) -> Any:
    """The state `state` entered from `token` (None: the caller's), left first; what leave_state takes to leave
    it, or None. ErrstateRun.set's change of state with NumPy 2, which a short program's own code (codegen)
    calls itself, the token in a local: no object made, no method called per program (two of a steady
    P3-n100 call's few microseconds)."""
    if token is not None:
        _EXTOBJ.reset(token)
    return None if state is None else _EXTOBJ.set(_made(state))


# (what a program calls to leave the state it entered; None without NumPy 2's context variable: ErrstateRun then)
leave_state = None if _EXTOBJ is None else _EXTOBJ.reset


def _holds(guard: Any, vals: list) -> bool:
    args = substituted(guard.args, guard.refs, vals)
    return same(_call(guard.fn, args, guard.kwargs, guard.errstate), guard.expected)


def guards_hold(guards: list, g: int, upto: int | None, vals: list, run: ErrstateRun) -> int | None:
    """Check guards[g:] taken before node `upto` (every one left with None) on the replayed values
    `vals`: the index of the next guard, or None when one does not hold. Under the caller's error
    state, or the guard's own: `run`, the replay's, is left first."""
    while g < len(guards) and (upto is None or guards[g].pos <= upto):
        run.set(None)
        if not _holds(guards[g], vals):
            return None
        g += 1
    return g



def all_hold(finite: Callable | None, nonzero: Callable | None, n: int, *values: Any) -> bool:
    """The guards finite(v) for each of values[:n] and nonzero(v) for each of values[n:], in one call.

    `finite` and `nonzero` are the rules' predicates (all entries finite; no entry zero) that a
    program's guards call one by one: a sweep checks a factor at each rule that reads it, seven
    times for P1's or P3's small sweeps. Each called NumPy's logical_and.reduce, whose machinery
    costs several times an isfinite of 100 numbers; a float array is checked here by counting
    (count_nonzero: the entries that are finite, or nonzero, must be all of them), the same
    verdict without a reduction. So is any array where the predicate is the rules' own (engine's
    all_finite, no_zero: they count so themselves, whatever the dtype), without reading its dtype
    first. Any other value is given to the predicate itself.

    (A sum of the array, finite where every entry is, was tried for the finite check: NumPy's
    add.reduce of 100 numbers costs 1.7-2x an isfinite and a count of them, and a finite array
    whose sum overflows would need the count anyway.)
    """
    count = _COUNT
    counts = finite is _ALL_FINITE  # (an array's verdict by counting, whatever its dtype)
    for v in values[:n]:
        if type(v) is _NDARRAY and (counts or v.dtype.kind == "f"):
            if count(np.isfinite(v)) != v.size:
                return False
        elif type(v) is np.float64 or type(v) is float:  # (a factor made of NumPy scalars: P6's 1 / sum)
            if not math.isfinite(v):
                return False
        elif not finite(v):
            return False
    counts = nonzero is _NO_ZERO
    for v in values[n:]:
        if type(v) is _NDARRAY and (counts or v.dtype.kind == "f"):
            if count(v) != v.size:  # (NaN counts as nonzero, as _no_zero has it; -0.0 as zero)
                return False
        elif type(v) is np.float64 or type(v) is float:
            if v == 0:  # (-0.0 too; NaN is not)
                return False
        elif not nonzero(v):
            return False
    return True


_NDARRAY = np.ndarray

try:  # np.count_nonzero's C function, without its dispatch (half its cost on a small array)
    from numpy._core.multiarray import count_nonzero as _COUNT
except ImportError:  # pragma: no cover - NumPy < 2
    _COUNT = np.count_nonzero


def found_finite(guards: list) -> frozenset:
    """The values (node indices) that these guards of a recording find all finite: each of its replays
    checks them (replays.Replayable.replay), so a program that runs on a replay's values need not."""
    return frozenset(g.refs[0][1].index for g in guards if finite_check(g))


def implied_finite(guards: list, finite: frozenset) -> set[int]:
    """The finite checks among `guards` (by id) that others imply: of a real value that primitives of
    FINITE_ON_FINITE (sin, cos, tanh, -x) made of a value known finite, by another check (kept or itself
    implied: a node's argument comes before it) or by the replay whose values the program reads
    (`finite`). A sweep fails as a whole where any check fails, so the argument's check stands for both
    (P1's sweep: sin(x) and cos(x), checked beside x)."""
    checks = sorted((g for g in guards if finite_check(g)), key=lambda g: g.refs[0][1].index)
    known, implied = set(finite), set()
    for g in checks:
        node = g.refs[0][1]
        if _finite_from_argument(node, known):
            implied.add(id(g))
        known.add(node.index)
    return implied


def _finite_from_argument(node: Any, known: set) -> bool:
    """Whether `node` is finite where the values in `known` are: FINITE_ON_FINITE primitives of one plain
    argument each (cos(x) in sin(cos(x)), checked or not), down to a known value that is real (they give
    real values of real ones; a sweep's own node holds no value to say so: not taken)."""
    while node.prim in FINITE_ON_FINITE and len(node.parents) == 1 and len(node.args) == 1 and not node.kwargs \
            and node.parents[0][2] is None:
        node = node.parents[0][1]
        if node.index in known:
            return _real(node.value)
    return False


def _real(value: Any) -> bool:
    """Whether `value` is a real float array or number (np.sin of it is real: no overflow of a complex sin)."""
    return getattr(getattr(value, "dtype", None), "kind", None) == "f" or type(value) is float


def finite_check(g: Any) -> bool:
    """Whether a guard is a rule's check that one value is all finite (engine's all_finite), nothing else."""
    return g.expected is True and getattr(g.fn, "fused_check", None) == "finite" and len(g.refs) == 1 \
        and len(g.args) == 1 and g.refs[0][:1] == (0,) and g.refs[0][2] is None and not g.kwargs
