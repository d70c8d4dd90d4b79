"""The traced array type: NumPy's dispatch protocols, operators and methods, routed to the registry."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import TracingError, UnsupportedOperationError
from .guards import Raised
from .handlers import DEFERS_TO, FUNCTION_HANDLERS, HOLDERS, INTERNAL, NOT_PLAIN, UFUNC_HANDLERS, installed_for
from .memory_overlap import TOO_HARD, element_addresses, same_memory
from .nested_lists import refuse_ragged
from .ndarray_methods import NdarrayMethods, name_as_ndarray_methods
from .refusals import (IN_PLACE_METHODS, INSTEAD, MATRIX_REFUSED, PLAIN_CONVERSION, Formatted, cast_errors,
                       escape_error, inside_np_vectorize, installed_package_escape, memory_reader, numpy_name,
                       passes_out, read_only_message, refuse_ufunc_out, same_value_cast, scalar_type_called,
                       unswapped_caller)
from .thread_state import ThreadSlot
from .user_sites import user_site

_PLAIN_OPERANDS = (int, float, np.ndarray, np.floating, np.integer)
_NO_HOOK = object()

# ---------------------------------------------------------------------------
# Lists and tuples that hold traced values, where NumPy would convert them with np.asarray
# ---------------------------------------------------------------------------
_SEQUENCES = (list, tuple)  # and their subclasses: named tuples (np.linalg.slogdet's result, the user's own)


def holds_tracer(obj: Any) -> bool:
    """obj is a traced array, or a (nested) list or tuple with one somewhere inside."""
    kind = type(obj)
    if kind is Tracer or kind in HOLDERS:
        return True
    if kind is list or kind is tuple or isinstance(obj, tuple):  # a named tuple too (slogdet's)
        for o in obj:
            if holds_tracer(o):
                return True
    return False


def lift(obj: Any) -> Any:
    """A list or tuple holding traced values as one traced array (np.stack of its items), else obj."""
    if isinstance(obj, _SEQUENCES) and holds_tracer(obj):
        refuse_ragged(obj, "a list of traced values", user_site())
        return np.stack([lift(o) for o in obj])
    holder = HOLDERS.get(type(obj))
    return obj if holder is None else holder(obj)


# Functions taking a sequence of arrays: its items are lifted one by one, not stacked together (np.row_stack too).
_SEQUENCE_FUNCTIONS = {np.concatenate, np.stack, np.hstack, np.vstack, np.dstack, np.column_stack, np.select,
                       np.choose, np.linalg.multi_dot, np.block, np.piecewise, getattr(np, "row_stack", np.vstack)}


def lift_args(func: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """func's arguments with every list or tuple that holds traced values made a traced array."""
    if func in _SEQUENCE_FUNCTIONS:
        if func is np.block:  # nested lists are np.block's own structure
            return args, kwargs

        def each(a):
            return [lift(o) for o in a] if isinstance(a, _SEQUENCES) and holds_tracer(a) else a
        whole = 1 if func is np.piecewise else 0  # piecewise's x is one array: lifted whole, as elsewhere
        return tuple(lift(a) for a in args[:whole]) + tuple(each(a) for a in args[whole:]), \
            {k: each(v) for k, v in kwargs.items()}
    return tuple(lift(a) for a in args), {k: lift(v) for k, v in kwargs.items()}


def holds_sequence(args: tuple) -> bool:
    """Some argument is a list or tuple that holds traced values: lift_args has work to do."""
    for a in args:
        if isinstance(a, _SEQUENCES) and holds_tracer(a):
            return True
    return False


def needs_lifting(func: Any, args: tuple, kwargs: dict) -> bool:
    """func's arguments hold a list or tuple of traced values NumPy would convert (cheap when not)."""
    for a in args:
        if isinstance(a, _SEQUENCES):
            break
    else:
        if not kwargs:
            return False
        for v in kwargs.values():
            if isinstance(v, _SEQUENCES):
                break
        else:
            return False
    if func in _SEQUENCE_FUNCTIONS:  # a sequence of arrays: only a list inside it needs lifting
        if func is np.piecewise and holds_sequence(args[:1]):  # but x is one array (lift_args)
            return True
        return any(isinstance(a, _SEQUENCES) and holds_sequence(a) for a in args) or \
            any(isinstance(v, _SEQUENCES) and holds_sequence(v) for v in kwargs.values())
    return holds_sequence(args) or (bool(kwargs) and holds_sequence(tuple(kwargs.values())))


def _op(ufunc: Any, a: Any, b: Any) -> Any:
    """ufunc(a, b) for a traced operand and a number, array or traced operand."""
    other = b if type(a) is Tracer else a
    if type(other) is Tracer or (isinstance(other, _PLAIN_OPERANDS) and type(other) not in NOT_PLAIN):
        handler = UFUNC_HANDLERS.get(ufunc)
        if handler is not None:
            bind_at = getattr(handler, "bind_at", None)  # (a primitive: this frame and the operator's are jaccli's)
            return handler(a, b) if bind_at is None else bind_at((a, b), 2)
    if _defers(other):
        return NotImplemented
    return ufunc(a, b)  # anything else (lists, other array types) takes NumPy's own route


def _defers(other: Any) -> bool:
    """Whether an operator of a traced array leaves `other` its reflected method, as ndarray's do (NumPy's
    binop_should_defer): a type that opts out of ufuncs (__array_ufunc__ = None), or one without
    __array_ufunc__ whose __array_priority__ is above an array's (xarray's DataArray, pandas' objects)."""
    kind = type(other)
    ufunc_hook = getattr(kind, "__array_ufunc__", _NO_HOOK)
    if ufunc_hook is not _NO_HOOK:
        return ufunc_hook is None
    if kind is Tracer or isinstance(other, (np.ndarray, list, tuple, complex, bool, type(None))):
        return False
    return getattr(other, "__array_priority__", -1e6) > 0.0


def peek(x: Any) -> Any:
    """The plain value under every level of tracing, for bookkeeping that the recording never sees."""
    while type(x) is Tracer:
        x = x._value
    return x


def _identity(x: Any) -> Any:
    return x


def primal(x: Any) -> Any:
    """The plain value under every level of tracing, to compute with: guarded (see `guarded`)."""
    if type(x) is not Tracer:
        return x
    return guarded(_identity, x)


def guarded(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """fn over the plain values of `args`, remembered by the lowest recording level they belong to.

    Whatever fn returns (a mask, a permutation, a branch taken) becomes a constant of the
    recording; the guard lets a replay at new inputs check that it still holds (Recording.replay).
    Derive the least that is needed inside fn: a replay survives as long as that is unchanged.
    """
    vals = list(args)
    lows = []
    for i, a in enumerate(args):
        if type(a) is Tracer:
            while type(a._value) is Tracer:
                a = a._value
            vals[i] = a._value
            lows.append((i, a))
    if any(type(v) is Tracer for v in kwargs.values()):
        kwargs = {k: primal(v) for k, v in kwargs.items()}
    if not lows:
        return fn(*vals, **kwargs)
    trace = min((a._trace for _, a in lows), key=lambda t: t.level)
    refs = tuple((i, a._node, a._idx) for i, a in lows if a._trace is trace)
    try:
        result = fn(*vals, **kwargs)
    except Exception as exc:
        trace.guard(Raised(fn), tuple(vals), kwargs, refs, type(exc))  # f may catch it
        raise
    for i, a in lows:
        if a._trace is not trace:  # another recording's value: guarded whole on its own level
            a._trace.guard(_identity, (vals[i],), {}, ((0, a._node, a._idx),), vals[i])
    trace.guard(fn, tuple(vals), kwargs, refs, result)
    return result


# The traced array that f's write (y[i] = v) is replacing, while the update is recorded: only its
# old value is certain to be read by nothing after the write (see views.writable).
REPLACING = ThreadSlot()


def memory_root(a: Any) -> Any:
    """The object that owns the memory of array `a` (through every level of tracing and of views)."""
    while type(a) is Tracer:
        a = a._value
    while isinstance(getattr(a, "base", None), np.ndarray):
        a = a.base
    return a


def _overwritten_views(trace: Any, old: Any, idx: Any, writer: Any, written: Any) -> list:
    """The live traced views on `trace` whose memory overlaps old[idx] (all of old if idx is None).

    Exact (NumPy's shares_memory, or element addresses for an advanced index), so that a view of
    a part that the write leaves alone (prev = H[t - 1]; H[t] = ...) stays usable.
    """
    refs = trace.views.get(id(memory_root(old))) if type(old) is np.ndarray else None
    if not refs:
        return []
    region, addresses = old, None
    if idx is not None:
        try:
            region = old[idx]
        except Exception:  # noqa: BLE001 - an index NumPy reads otherwise than jaccli: all of it
            region = old
        if type(region) is not np.ndarray or not np.may_share_memory(region, old):
            addresses, region = element_addresses(old)[idx], old  # an advanced index: a copy, not a view
    hit, live = [], []
    for ref in refs:
        view = ref()
        if view is None:
            continue
        live.append(ref)
        mem = peek(view)
        if view is writer or view._stale is not None or type(mem) is not np.ndarray \
                or not np.may_share_memory(mem, region):
            continue
        if view is written and same_memory(mem, region) and addresses is None:
            continue
        if addresses is not None:
            overlap = bool(np.isin(element_addresses(mem), addresses).any())
        else:
            try:
                overlap = np.shares_memory(mem, region)
            except TOO_HARD:
                overlap = True
        if overlap:
            hit.append(view)
    refs[:] = live
    return hit


NOT_PLAIN.add(np.matrix)  # (x @ M: NumPy's own call, which meets M in __array_ufunc__, refused there: MATRIX_REFUSED)


class Tracer(NdarrayMethods):
    """An array whose operations are recorded on a `Trace` (one nesting level)."""

    # _base: the traced array this one is a NumPy view of (x[0], x.T, x.reshape(-1)), or None.
    # _stale: (site, writer, kind) where a write left this array behind (see _become): kind "base"
    # for a write through one of its views, "view" for a write into the memory it is a view of.
    __slots__ = ("_value", "_node", "_idx", "_trace", "_base", "_stale", "_read_only", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, value: Any, node: Any, idx: int | None, trace: Any) -> None:
        self._value = value
        self._node = node
        self._idx = idx
        self._trace = trace
        self._base = None
        self._stale = None
        self._read_only = None  # the message a write into this array raises (see mark_read_only)

    # -- NumPy protocols ---------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        sequence = False
        for a in inputs:
            kind = type(a)
            if kind is Tracer or kind is np.ndarray or kind is float:  # (the common operands: one test each)
                continue
            if kind in DEFERS_TO:  # a sweep's structured block: its own method densifies it, or
                return NotImplemented   # keeps its structure (with traced parts, replay/compiled_sweeps.py)
            if kind is np.matrix:
                raise UnsupportedOperationError(MATRIX_REFUSED, user_site(2))
            if isinstance(a, _SEQUENCES):
                sequence = True
        if kwargs:
            refuse_ufunc_out(ufunc, method, kwargs)  # out= and where=, which write into an existing array
            kwargs.pop("out", None)
        if sequence and holds_sequence(inputs):  # x + [x[0], 1.0]
            inputs, kwargs = lift_args(ufunc, inputs, kwargs)
        key = ufunc if method == "__call__" else (ufunc, method)
        handler = UFUNC_HANDLERS.get(key)
        if handler is None and installed_for(ufunc):
            handler = UFUNC_HANDLERS.get(key)
        if handler is None:
            name = numpy_name(ufunc) + ("" if method == "__call__" else f".{method}")
            hint = "" if name.startswith("np.") else "; write it with NumPy functions"
            raise UnsupportedOperationError(f"{name} is not supported by jaccli{hint}; see 'jaccli ops'",
                                            user_site(2))
        return handler(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if not DEFERS_TO.isdisjoint(types):  # (as in __array_ufunc__)
            return NotImplemented
        if np.matrix in types:
            raise UnsupportedOperationError(MATRIX_REFUSED, user_site(2))
        if kwargs.get("out") is not None or passes_out(func, args):
            name = numpy_name(func)
            raise TracingError(f"{name}(..., out=...) writes into an existing array; write `y = {name}(...)` "
                               "instead", user_site(2))
        handler = FUNCTION_HANDLERS.get(func) or (FUNCTION_HANDLERS.get(func) if installed_for(func) else None)
        if handler is None:
            hint = INSTEAD.get(func, "")
            raise UnsupportedOperationError(f"{numpy_name(func)} is not supported by jaccli{hint}; see 'jaccli ops'",
                                            user_site(2))
        if needs_lifting(func, args, kwargs):  # np.outer([x[0], x[1]], x)
            args, kwargs = lift_args(func, args, kwargs)
        return handler(*args, **kwargs)

    def __array__(self, dtype=None, copy=None):
        if inside_np_vectorize():
            raise TracingError("np.vectorize calls its function on plain values, outside jaccli's "
                               "recording, so it cannot be differentiated; write the function with array "
                               "operations instead (np.where(x > 0, a, b) for if/else)", user_site(2))
        reader = memory_reader()
        if reader is not None:
            raise TracingError(reader, user_site(2))
        unswapped = unswapped_caller()
        if unswapped is not None:
            module = unswapped.rsplit(".", 1)[0]
            raise TracingError(
                f"{unswapped} here is the package's own function, which takes the traced value out of jaccli's "
                f"recording: jaccli stands in for it as {unswapped} and where f's module or your modules it "
                f"imports name it, not where an installed package (or a module f's module does not import) "
                f"imported it by name; write `import {module}` there and call {unswapped}(...)", user_site(2))
        if (package := installed_package_escape()) is not None:
            raise package
        scalar = scalar_type_called(user_site(2))
        if scalar is not None:
            raise escape_error(f"np.{scalar}(...)", f"a NumPy scalar is a plain number: keep an array, "
                                               f"x.astype(np.{scalar}) (or x itself, where it already is {scalar})")
        raise escape_error(*PLAIN_CONVERSION)

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name Tracer does not define: an ndarray attribute jaccli does not trace.
        if name.startswith("__") or not hasattr(np.ndarray, name):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        function = getattr(np, name, None)
        if function is not None and function in FUNCTION_HANDLERS and name not in IN_PLACE_METHODS:
            hint = f"np.{name} is: write np.{name}(...) instead"
        else:
            hint = "see 'jaccli ops' for what is"
        raise UnsupportedOperationError(f"x.{name} of a traced array is not supported by jaccli; {hint}",
                                        user_site(2))


    # -- escapes -------------------------------------------------------------

    def __bool__(self):
        # Branching on a value is fine: the derivative follows the branch that ran.
        return guarded(bool, self)

    def __int__(self):  # a step, whose derivative is 0 where it has one: a constant, guarded as a branch is
        return guarded(int, self)

    def __hash__(self):
        return id(self)

    # -- attributes ----------------------------------------------------------
    @property
    def shape(self) -> tuple:
        try:
            return self._value.shape  # arrays, NumPy scalars and lower-level traced values
        except AttributeError:
            return np.shape(self._value)

    @shape.setter
    def shape(self, value: Any) -> None:
        """``y.shape = s``: y stands for its reshaped self, a view of the same memory (as in NumPy,
        which refuses, with its own message, a shape that would need a copy)."""
        plain = peek(self)
        if type(plain) is np.ndarray:
            plain.view().shape = value  # NumPy's own error for an impossible shape or a needed copy
        new = np.reshape(self, value)
        # not a write: the memory, and so every view of it and the array it is a view of, is unchanged
        self._value, self._node, self._idx, self._trace = new._value, new._node, new._idx, new._trace


    @property
    def value(self):
        """The primal value at this level (itself traced when levels are nested)."""
        return self._value if type(self._value) is Tracer else primal(self)


    def __repr__(self) -> str:
        return f"Tracer(level={self._trace.level}, shape={self.shape}, value={self._value!r})"

    def __format__(self, spec: str) -> str:
        # A debug print, f"loss={loss:.4f}": the plain value formatted as NumPy formats it (NumPy's
        # own error for a spec it refuses, such as one for an array of more than 0 dimensions).
        # Guarded, as every plain value derived from a traced one: a replay at other inputs, where
        # the string differs, records f again rather than keep what f did with the old string (a
        # branch taken on it); read back as a number, it is refused (Formatted).
        if not spec:
            return str(self)
        return Formatted(guarded(format, self, spec))

    # -- operators -------------------------------------------------------------
    # Arithmetic goes straight to the registered handler: the same result as np.add(self, o),
    # without a trip through NumPy's override machinery on every operation.
    def __add__(self, o): return _op(np.add, self, o)
    def __radd__(self, o): return _op(np.add, o, self)
    def __sub__(self, o): return _op(np.subtract, self, o)
    def __rsub__(self, o): return _op(np.subtract, o, self)
    def __mul__(self, o): return _op(np.multiply, self, o)
    def __rmul__(self, o): return _op(np.multiply, o, self)
    def __truediv__(self, o): return _op(np.true_divide, self, o)
    def __rtruediv__(self, o): return _op(np.true_divide, o, self)
    def __floordiv__(self, o): return _op(np.floor_divide, self, o)
    def __rfloordiv__(self, o): return _op(np.floor_divide, o, self)
    def __mod__(self, o): return _op(np.remainder, self, o)
    def __rmod__(self, o): return _op(np.remainder, o, self)
    def __pow__(self, o): return _op(np.power, self, o)
    def __rpow__(self, o): return _op(np.power, o, self)
    def __matmul__(self, o): return _op(np.matmul, self, o)
    def __rmatmul__(self, o): return _op(np.matmul, o, self)
    def __neg__(self): return np.negative(self)
    def __pos__(self): return np.positive(self)
    def __abs__(self): return np.absolute(self)
    def __eq__(self, o): return np.equal(self, o)
    def __ne__(self, o): return np.not_equal(self, o)
    def __lt__(self, o): return np.less(self, o)
    def __le__(self, o): return np.less_equal(self, o)
    def __gt__(self, o): return np.greater(self, o)
    def __ge__(self, o): return np.greater_equal(self, o)

    # In-place operators update this object functionally: it now stands for the new value.
    def _become(self, new: Any, idx: Any = None, written: Any = None) -> "Tracer":
        """Stand for `new`, the result of writing into this array (at `idx`; all of it if None).

        Updates are functional: this object now stands for a new array. In NumPy, the arrays
        that share its memory would change too: the array it is a view of (and the ones that one
        is a view of), and the views of that memory taken before the write. Here they do not, so
        they may no longer be used (see `_stale`); `written`, the value written at idx, is spared
        when it is exactly that memory (t = Z[1]; t += v; Z[1] = t).
        """
        if type(new) is not Tracer:
            raise TracingError("an in-place update turned a traced array into a constant", user_site(3))
        read_only = read_only_message(self)
        if read_only is not None:
            raise TracingError(read_only, user_site(3))
        trace, old = self._trace, peek(self)
        self._value, self._node, self._idx, self._trace = new._value, new._node, new._idx, new._trace
        base, site = self._base, None
        while base is not None:
            site = site or user_site(3)
            base._stale = (site, self, "base")
            base = base._base
        self._base = None
        for view in _overwritten_views(trace, old, idx, self, written):
            site = site or user_site(3)
            view._stale = (site, self, "view")
        return self

    def __iadd__(self, o): return self._become(np.add(self, o))
    def __isub__(self, o): return self._become(np.subtract(self, o))
    def __imul__(self, o): return self._become(np.multiply(self, o))
    def __itruediv__(self, o): return self._become(np.true_divide(self, o))
    def __ipow__(self, o): return self._become(np.power(self, o))
    def __imatmul__(self, o): return self._become(np.matmul(self, o))

    def __getitem__(self, idx):
        return INTERNAL["getitem"](self, idx, 1)

    def __setitem__(self, idx, v):
        if self._stale is not None and self._stale[1] is v and self._stale[2] == "base":
            # Z[i] += v: Python updated the view Z[i] and now writes it back into Z.
            self._stale = None
        if type(v) is not Tracer and holds_tracer(v):  # y[:2] = [x[1], x[0]]
            v = lift(v)
        REPLACING.v = self
        try:
            new = INTERNAL["setitem"](self, v, idx, 1)
        finally:
            REPLACING.v = None
        self._become(new, idx, v)

    # -- methods ---------------------------------------------------------------
    # The methods take ndarray's own parameters, in its order (x.sum(0, None, None, True)); the
    # keywords past those (where=, initial=, mode=, ...) go on to the function of the same name.
    def argmax(self, axis=None, **kw): return guarded(np.argmax, self, axis=axis, **kw)
    def argmin(self, axis=None, **kw): return guarded(np.argmin, self, axis=axis, **kw)
    def argsort(self, axis=-1, **kw): return guarded(np.argsort, self, axis=axis, **kw)
    def any(self, *a, **kw): return guarded(np.any, self, *a, **kw)
    def all(self, *a, **kw): return guarded(np.all, self, *a, **kw)
    def nonzero(self): return guarded(np.nonzero, self)


    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        if not copy and np.dtype(dtype) == self.dtype and order in ("K", "A"):
            return self  # as NumPy: no copy asked for, none needed
        cast_errors(self.dtype, dtype, order, casting)  # NumPy's errors for the options
        if casting == "same_value":  # NumPy 2.4: refuses values the cast changes; a guard at a replay
            guarded(same_value_cast, self, np.dtype(dtype))
        out = INTERNAL["astype"](self, np.dtype(dtype))  # keeps the memory layout, as order="K"
        return out if order == "K" else np.copy(out, order=order)

    def sort(self, axis=-1, **kw):
        # ndarray.sort sorts in place; here the traced array becomes its sorted self.
        self._become(np.sort(self, axis=axis, **kw))

    def fill(self, value): self._become(INTERNAL["full_like"](self, value))

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        self._become(np.partition(self, kth, axis=axis, kind=kind, order=order))  # in place, as sort


name_as_ndarray_methods(Tracer)
