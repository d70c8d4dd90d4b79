"""What f's modules see while f runs: NumPy's names that lift lists of traced values first.

np.array([traced, ...]) cannot be intercepted by NumPy's protocols, nor can np.max([a, b]) or
np.linalg.norm([dx, dy]), where NumPy converts the list before any dispatch. While f runs, the
names bound to numpy (the module, numpy.linalg, or a function imported by name) in f's globals,
and in the globals of the user's own modules that f's module reaches, point to proxies that
handle them. Installed packages, the standard library and jaccli are left as they are.
"""

from __future__ import annotations

import functools
import operator
import os
import threading
import types
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from .handlers import FUNCTION_HANDLERS, FUNCTION_SWAPS, INTERNAL, OPTIONAL_RULES
from .tracer import Tracer, holds_sequence, holds_tracer, lift, lift_args, needs_lifting, peek, primal
from .user_sites import is_users_file, user_site


def _as_numpy_returns(x: Tracer, ref: Any) -> Any:
    """The traced counterpart of `ref`, what a NumPy conversion (np.asarray, ...) returned for x's value.

    Where NumPy returns the very array it was given, this is x itself, so that a helper which
    starts with ``v = np.asarray(v)`` and then writes into v changes the caller's array, as in
    NumPy. Otherwise it is a new array: x cast to ref's dtype or copied (or a view, where ref is
    one), in ref's shape (ndmin, a 0-d array made 1-d).
    """
    value = peek(x)
    if ref is value:
        return x
    out = x
    order = "C" if ref.flags.c_contiguous else "F" if ref.flags.f_contiguous else "K"  # NumPy's layout
    if ref.dtype != np.result_type(value):
        out = INTERNAL["astype"](x, ref.dtype)  # a new array in x's layout; to an integer dtype, a constant
        made = peek(out)
        if type(out) is Tracer and (made.flags.c_contiguous, made.flags.f_contiguous) != \
                (ref.flags.c_contiguous, ref.flags.f_contiguous):
            out = np.copy(out, order=order)  # asked for another layout too (np.asfortranarray(x, dtype))
    elif not np.may_share_memory(ref, value):
        out = np.copy(x, order=order)
    return out if np.shape(out) == ref.shape else np.reshape(out, ref.shape)


def _array(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    if type(obj) is Tracer:  # copied unless copy=False/None lets NumPy hand back obj itself
        return _as_numpy_returns(obj, np.array(peek(obj), dtype, *args, **kwargs))
    if holds_tracer(obj):
        if dtype is not None and np.dtype(dtype).kind in "biu":  # a constant, as a cast to integers
            return np.array(primal_nested(obj), dtype, *args, **kwargs)
        out = lift(obj)
        return out if dtype is None or np.dtype(dtype) == out.dtype else INTERNAL["astype"](out, np.dtype(dtype))
    return np.array(obj, dtype, *args, **kwargs)


def _converting(convert: Callable) -> Callable:
    """np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray or np.require, for traced
    values and lists holding them."""
    def call(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
        if type(obj) is Tracer:
            return _as_numpy_returns(obj, convert(peek(obj), dtype, *args, **kwargs))
        if holds_tracer(obj):  # a new array, as NumPy makes of a list
            return _array(obj, dtype)
        return convert(obj, dtype, *args, **kwargs)
    return functools.wraps(convert)(call)


def _dispatching(func: Callable) -> Callable:
    """func, which NumPy dispatches on some of its arguments only (np.interp on x, xp and fp, not left
    or right; np.polyint on p, not k; np.full_like on a, not the fill value), and would convert a
    traced value in the others to a float: with one anywhere (or a list holding one), jaccli's rule
    takes them all."""
    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        if holds_tracer(args) or holds_tracer(tuple(kwargs.values())):
            args, kwargs = lift_args(func, args, kwargs)
            return FUNCTION_HANDLERS[func](*args, **kwargs)
        return func(*args, **kwargs)
    return call


def _arange(*args: Any, **kwargs: Any) -> Any:
    """np.arange, refused by name for a traced bound or step (NumPy would convert it to a float)."""
    if any(holds_tracer(a) for a in args) or any(holds_tracer(v) for v in kwargs.values()):
        raise UnsupportedOperationError(
            "np.arange with a traced start, stop or step is not supported by jaccli: its length would "
            "depend on the input; take the bounds from plain values, or write start + step * "
            "np.arange(n) with a plain n (or np.linspace(start, stop, n))", user_site(2))
    return np.arange(*args, **kwargs)


def _full(shape: Any, fill_value: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    """np.full with a traced fill value: that value broadcast over a fresh (writable) array."""
    if not holds_tracer(fill_value) or (dtype is not None and np.dtype(dtype).kind not in "fc"):
        return np.full(shape, primal_nested(fill_value), dtype, *args, **kwargs)
    value = lift(fill_value)
    return np.zeros(shape, dtype=dtype or value.dtype) + np.broadcast_to(value, shape)


def primal_nested(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return (list if isinstance(obj, list) else tuple)(primal_nested(o) for o in obj)
    return primal(obj)


def _lifting(fn: Callable) -> Callable:
    """fn, with lists and tuples that hold traced values made traced arrays first."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if needs_lifting(fn, args, kwargs):
            args, kwargs = lift_args(fn, args, kwargs)
        return fn(*args, **kwargs)
    return call


class _UfuncProxy:
    """A ufunc whose call and methods (reduce, outer, ...) lift lists of traced values first."""

    __slots__ = ("_ufunc", "_methods")

    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc
        self._methods: dict[str, Any] = {}  # name -> the lifting wrapper, made on first use

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if holds_sequence(args):
            args, kwargs = lift_args(self._ufunc, args, kwargs)
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        wrapped = self._methods.get(name)
        if wrapped is None:
            attr = getattr(self._ufunc, name)
            if not callable(attr) or isinstance(attr, type):
                return attr
            wrapped = self._methods[name] = _lifting(attr)
        return wrapped

    def __repr__(self) -> str:
        return repr(self._ufunc)


class _NumpyProxy(types.ModuleType):
    """A module as f sees it while it runs: its functions lift lists of traced values first.

    Everything else (types such as np.ndarray and np.float64, constants, other modules) is
    NumPy's own object. What a name resolves to is kept after its first use.
    """

    def __init__(self, module: types.ModuleType, overrides: dict) -> None:
        super().__init__(module.__name__)
        self.__dict__.update(overrides)
        self.__dict__["_module"] = module

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self.__dict__["_module"], name)
        if obj is np.linalg:
            wrapped: Any = LINALG_PROXY
        elif isinstance(obj, np.ufunc):
            wrapped = _UfuncProxy(obj)
        elif callable(obj) and not isinstance(obj, type):
            wrapped = _lifting(obj)
        else:
            wrapped = obj
        self.__dict__[name] = wrapped
        return wrapped


LINALG_PROXY = _NumpyProxy(np.linalg, {})
NUMPY_PROXY = _NumpyProxy(np, {"array": _array, "asarray": _converting(np.asarray),
                               "asanyarray": _converting(np.asanyarray),
                               "ascontiguousarray": _converting(np.ascontiguousarray),
                               "asfortranarray": _converting(np.asfortranarray),
                               "require": _converting(np.require), "full": _full, "arange": _arange,
                               **{f.__name__: _dispatching(f) for f in (np.interp, np.polyint, np.full_like)}})


def _stand_in(v: Any) -> Any:
    """What stands in for v while f runs (None: v stays): the proxies for the numpy module and
    numpy.linalg, the proxies' functions for NumPy's functions imported by name (`from numpy import
    array`), jaccli's version of an optional package's function (SciPy's logsumexp, ...)."""
    if type(v) is types.ModuleType:
        return NUMPY_PROXY if v is np else LINALG_PROXY if v is np.linalg else None
    if type(v) is np.ufunc or (callable(v) and not issubclass(type(v), type)
                               and str(getattr(v, "__module__", "")).startswith("numpy")):
        name = getattr(v, "__name__", None)
        if type(name) is str and not name.startswith("_"):
            for module, proxy in ((np, NUMPY_PROXY), (np.linalg, LINALG_PROXY)):
                if getattr(module, name, None) is v:
                    return getattr(proxy, name)
    for _, _, original, replacement in FUNCTION_SWAPS:
        if v is original:
            return replacement
    return None


_NAMES_CACHE: dict[tuple, tuple[int, int, list, list, Callable, tuple, Callable, list]] = {}


def _values_of(names: tuple) -> Callable[[dict], tuple]:
    """dict -> the values of names, as a tuple (one lookup per name, in C)."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        name = names[0]
        return lambda glb: (glb[name],)  # (itemgetter of one name gives its value, not a 1-tuple)
    return lambda glb: ()


def _swaps_in(glb: dict) -> tuple[list[tuple[str, Any, Any]], list[tuple[Any, str, Any, Any]]]:
    """What to swap in a globals dict while f runs (see `_stand_in`): (name, value, replacement)
    for its names, and (object, attribute, value, replacement) for what its own functions and
    classes' methods hold (`_held_swaps`). Rescanned when the dict changes size, a name bound to
    a module or a callable (found or not) is rebound, another name is bound to a value of another
    type, or more replacements are installed."""
    key = (id(glb), glb.get("__name__"), glb.get("__file__"))
    cached = _NAMES_CACHE.get(key)
    if cached is not None and cached[0] == len(glb) and cached[1] == len(FUNCTION_SWAPS):
        # Every name bound to a module or a callable, not only those found holding numpy: a helper
        # redefined from `def g(x)` to `def g(x, xp=np)` holds it now. And the type of every other
        # name, which is what makes it a callable or a module: `g = None`, then `def g(x, xp=np)`.
        # (Types, not values: the cache keeps no data the module has let go of, and a counter that
        # f increments is no reason to scan again.) The path every recording takes, so lookups and
        # comparisons in C (== is `is` first, and `is` for functions, classes, modules and types).
        try:
            if cached[4](glb) == cached[5] and list(map(type, cached[6](glb))) == cached[7]:
                return cached[2], cached[3]
        except Exception:  # noqa: BLE001 - a name deleted (and another bound), or an == that raises: scanned again
            pass
    # Called only while no recording has swapped glb's names (intercept_numpy counts its users).
    swaps, held, watched, typed = [], [], [], []
    for k, v in list(glb.items()):
        if callable(v) or issubclass(type(v), types.ModuleType):
            watched.append((k, v))
        elif type(k) is not str or not (k.startswith("__") and k.endswith("__")):  # (dunders: Python's own)
            typed.append((k, type(v)))
        replacement = _stand_in_or_same(v)
        if replacement is not v:
            swaps.append((k, v, replacement))
            continue
        if issubclass(type(v), type):
            fns = []
            for attr in list(vars(v).values()):  # the class's own methods
                fns.append(getattr(attr, "__func__", attr) if type(attr) in (staticmethod, classmethod) else attr)
        elif callable(v):
            fns = [v]
        else:
            continue
        try:
            found = [t for fn in fns for t in _held_in(fn, glb)]
        except Exception:  # noqa: BLE001 - an object whose attributes raise (a lazy loader's): left as it is
            continue
        held += found
    _NAMES_CACHE[key] = (len(glb), len(FUNCTION_SWAPS), swaps, held, _values_of(tuple(k for k, _ in watched)),
                         tuple(v for _, v in watched), _values_of(tuple(k for k, _ in typed)),
                         [t for _, t in typed])
    return swaps, held


_MAX_DEPTH = 4  # closures of closures (of decorators' wrappers): the first levels are enough


def _held_in(obj: Any, glb: dict | None = None, depth: int = 0) -> list[tuple[Any, str, Any, Any]]:
    """`_held_swaps` of the user's functions that obj is or wraps: a function, a method, a partial,
    a decorator's wrapper (`__wrapped__`, lru_cache's), a callable object's __call__, and the
    functions in their closures in turn. With `glb`, only functions defined in that module."""
    fn = obj
    kind = type(fn)
    own: list[tuple[Any, str, Any, Any]] = []
    if kind is types.MethodType:
        fn = fn.__func__
    elif kind is functools.partial:
        own = _partial_held(fn, glb)
        fn = fn.func
    elif kind is not types.FunctionType:
        wrapped = getattr(fn, "__wrapped__", None) if not issubclass(kind, type) else None
        if wrapped is None:
            call = getattr(kind, "__call__", None)  # a callable object: its class's method
            return _held_in(call, glb, depth + 1) if type(call) is types.FunctionType and depth < _MAX_DEPTH else []
        fn = wrapped
    if type(fn) is not types.FunctionType:
        return own + (_held_in(fn, glb, depth + 1) if depth < _MAX_DEPTH and fn is not obj else [])
    held = own + (_held_swaps(fn) if glb is None or fn.__globals__ is glb else [])
    if depth < _MAX_DEPTH:
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:
            held += _held_in(wrapped, glb, depth + 1)
        for cell in fn.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
            if inner is not fn and callable(inner) and not issubclass(type(inner), type):
                held += _held_in(inner, glb, depth + 1)
    return held


def _held_swaps(fn: types.FunctionType) -> list[tuple[Any, str, Any, Any]]:
    """(object, attribute, value, replacement) for the NumPy names a function holds outside its
    module's globals: its defaults (`def f(x, xp=np)`) and its closure's cells (`import numpy as
    xp` in the function that made it), so that `xp is np` holds while f runs as it does outside.
    What another recording has swapped already is found as it was (to be counted as used again).
    Only the user's functions: jaccli's own (the proxies' wrappers) hold NumPy's functions to call."""
    if (fn.__defaults__ is None and fn.__kwdefaults__ is None and fn.__closure__ is None) \
            or not _is_users(fn.__globals__):
        return []
    held = _held_values(fn, "__defaults__") + _held_values(fn, "__kwdefaults__")
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
        replacement = _stand_in_or_same(v)
        if replacement is not v or (id(cell), "cell_contents") in _HELD:
            held.append(_swapped_already(cell, "cell_contents") or (cell, "cell_contents", v, replacement))
    return held


def _partial_held(p: functools.partial, glb: dict | None) -> list[tuple[Any, str, Any, Any]]:
    """`_held_swaps` of a partial's own arguments (functools.partial(g, xp=np)), where it calls the
    user's function (of module `glb`, if given): NumPy there is what g's `xp` is while f runs."""
    g = _globals_of(p.func)
    if g is None or not _is_users(g) or (glb is not None and g is not glb):
        return []
    return _held_values(p, "args") + _held_values(p, "keywords")


def _held_values(obj: Any, attr: str) -> list[tuple[Any, str, Any, Any]]:
    """The swap of obj's tuple or dict of values `attr` (a function's defaults or kwdefaults, a
    partial's args or keywords) for one with NumPy's stand-ins, if it holds any: a new tuple or
    dict (the function's or partial's own is left as it was, to be put back)."""
    values = getattr(obj, attr)
    if not values:
        return []
    if type(values) is dict:
        new: Any = {k: _stand_in_or_same(v) for k, v in values.items()}
        changed = any(new[k] is not v for k, v in values.items())
    else:
        new = tuple(_stand_in_or_same(v) for v in values)
        changed = any(a is not b for a, b in zip(new, values))
    if changed or (id(obj), attr) in _HELD:
        return [_swapped_already(obj, attr) or (obj, attr, values, new)]
    return []


def _put(obj: Any, attr: str, value: Any) -> None:
    """setattr(obj, attr, value); a partial's args and keywords, which are read-only, through the
    partial's __setstate__ (which keeps the very tuple and dict it is given, as setattr does)."""
    if type(obj) is functools.partial and attr in ("args", "keywords"):
        args, keywords = (value, obj.keywords) if attr == "args" else (obj.args, value)
        obj.__setstate__((obj.func, args, keywords, obj.__dict__))
    else:
        setattr(obj, attr, value)


def _swapped_already(obj: Any, attr: str) -> tuple[Any, str, Any, Any] | None:
    h = _HELD.get((id(obj), attr))
    return (obj, attr, h[2], h[3]) if h is not None and h[1] is obj else None


def _stand_in_or_same(v: Any) -> Any:
    """`_stand_in(v)`, or v itself where nothing stands in for it."""
    try:
        replacement = _stand_in(v)
    except Exception:  # noqa: BLE001 - an object whose attributes raise (a lazy loader's): left as it is
        return v
    return v if replacement is None else replacement


# ---------------------------------------------------------------------------
# The user's modules: f's own, and those its module reaches through names it binds
# ---------------------------------------------------------------------------
_MAX_MODULES = 64  # a module importing a large tree of the user's own: the first ones are enough


_USERS: dict[str, bool] = {}  # a module's __file__ -> whether it is the user's


def _is_users(glb: dict) -> bool:
    """glb is the globals dict of a module from a .py file of the user's (user_sites.is_users_file)."""
    path = glb.get("__file__")
    if type(path) is not str or not path.endswith(".py"):
        return False
    known = _USERS.get(path)
    if known is None:
        known = _USERS[path] = is_users_file(os.path.abspath(path))
    return known


def _globals_of(v: Any) -> dict | None:
    """The globals dict of the module that a module, function, method, partial or class comes from."""
    kind = type(v)
    if kind is types.ModuleType:
        return v.__dict__
    if kind is types.FunctionType:
        return v.__globals__
    if kind is types.MethodType:
        return _globals_of(v.__func__)
    if kind is functools.partial:
        return _globals_of(v.func)
    if issubclass(kind, type):  # (by its type: reading an attribute of some objects runs their code)
        # Its methods' globals: a module loaded from a file (the command line's) may not be in sys.modules.
        for attr in vars(v).values():
            if type(attr) in (staticmethod, classmethod, property):
                attr = getattr(attr, "__func__", None) or getattr(attr, "fget", None)
            if type(attr) is types.FunctionType:
                return attr.__globals__
    return None


_REACHED: dict[int, tuple[int, Any, tuple[tuple[str, Any], ...], tuple[tuple[dict, int], ...]]] = {}


def user_globals(glb: dict) -> tuple[dict, ...]:
    """glb, then the globals of the user's modules that glb reaches: modules it imports, and the
    modules of the functions and classes it imports by name, and so on from theirs.

    Cached per dict; found again when glb or a module found changes size (new names bound)."""
    cached = _REACHED.get(id(glb))
    # glb is not kept (the cache must not keep f's module alive), so its id may be a new dict's; the
    # values through which glb reached its helpers are kept, and must still be glb's.
    if cached is not None and cached[0] == len(glb) and cached[1] == glb.get("__file__"):
        helpers = cached[3]
        if not helpers:
            return (glb,)
        if all(glb.get(name) is v for name, v in cached[2]) and all(len(g) == n for g, n in helpers):
            return (glb,) + tuple(g for g, _ in helpers)
    found, seen, k, links = [glb], {id(glb)}, 0, []
    while k < len(found) and len(found) < _MAX_MODULES:
        for name, v in list(found[k].items()):
            g = _globals_of(v)
            if g is not None and id(g) not in seen:
                seen.add(id(g))
                if _is_users(g):
                    found.append(g)
                    if k == 0:
                        links.append((name, v))
        k += 1
    _REACHED[id(glb)] = (len(glb), glb.get("__file__"), tuple(links),
                         tuple((g, len(g)) for g in found[1:_MAX_MODULES]))
    return tuple(found[:_MAX_MODULES])


_JACCLI = __name__.split(".")[0] + "."


def callable_globals(f: Callable) -> tuple[dict, ...]:
    """The globals to swap while f runs: f's module's (a function's, a method's, a partial's, or a
    callable object's class's) and the user's modules reached from there or from f's closure."""
    glb = getattr(f, "__globals__", None)  # a function or method, or a wrapper that gives its function's
    if type(glb) is not dict:
        glb = _globals_of(f)
        if glb is None and not issubclass(type(f), type):
            glb = _globals_of(type(f))  # an object with __call__: its class's module, if the user's
            if glb is not None and not _is_users(glb):
                glb = None
    if glb is None or str(glb.get("__name__")).startswith(_JACCLI):  # (jaccli's own wrappers: the user's f
        return ()                                                   # they call is recorded by itself)
    globs = user_globals(glb)
    cells = getattr(f, "__closure__", None)
    if cells and _is_users(glb):  # lambda x: helper.loss(x, data), helper imported locally (jaccli's own
        have = {id(g) for g in globs}  # wrappers, such as the Hessian's gradient, call f by its own name)
        for cell in cells:
            try:
                g = _globals_of(cell.cell_contents)
            except ValueError:  # a cell not yet filled
                continue
            if g is not None and id(g) not in have and _is_users(g):
                more = tuple(h for h in user_globals(g) if id(h) not in have)
                have.update(id(h) for h in more)
                globs += more
    return globs


# Module globals whose names are swapped: id(globals) -> [users, swaps]. Counted, so that the swaps
# stay while any thread (or an outer recording) still runs one of the modules.
_SWAPPED: dict[int, list] = {}
# What functions hold (defaults, closure cells) swapped: (id(object), attribute) -> [users, object,
# value, replacement], counted the same way.
_HELD: dict[tuple[int, str], list] = {}
# Users of the optional packages' functions swapped in their own modules (scipy.special.logsumexp).
_MODULE_USERS = [0]
_SWAP_LOCK = threading.Lock()


class intercept_numpy:  # noqa: N801 - used as a context manager, like contextlib's
    """While f runs, let `np.array([...traced...])` in f's module and in the user's modules it
    reaches (`user_globals`) build a traced array, and let the optional packages' functions that
    jaccli replaces (scipy.special.logsumexp, ...) see traced values.

    The replacements pass everything else through to NumPy (or the package), so plain code that
    runs meanwhile (in another thread) computes as before. (A class, not a generator: every
    recording enters one.)
    """

    __slots__ = ("f", "globs", "modules", "entries", "held")

    def __init__(self, f: Callable) -> None:
        self.f = f
        self.globs = callable_globals(f)

    def __enter__(self) -> None:
        for install in OPTIONAL_RULES:
            install(None)  # rules for packages f's module imported (scipy.special), installed once
        modules = self.modules = bool(FUNCTION_SWAPS)
        with _SWAP_LOCK:
            # What to swap, found before anything is swapped: nothing is left half done if it fails.
            entries = [_SWAPPED.get(id(glb)) or [0, *_swaps_in(glb)] for glb in self.globs]
            try:
                held = _held_in(self.f)
            except Exception:  # noqa: BLE001 - a callable whose attributes raise: nothing it holds is swapped
                held = []
            for entry in entries:
                if entry[2]:
                    held += entry[2]
            if modules:
                _MODULE_USERS[0] += 1
                for module, name, _, replacement in FUNCTION_SWAPS:  # some may be new since the first user
                    setattr(module, name, replacement)
            for glb, entry in zip(self.globs, entries):
                if entry[0] == 0:
                    _SWAPPED[id(glb)] = entry
                    for k, _, replacement in entry[1]:
                        glb[k] = replacement
                entry[0] += 1
            self.entries = entries
            self.held = []
            for obj, attr, value, replacement in held:  # (usually none)
                key = (id(obj), attr)
                h = _HELD.get(key)
                if h is None:
                    if getattr(obj, attr) is not value:  # changed since it was found: left as it is
                        continue
                    h = _HELD[key] = [0, obj, value, replacement]
                    _put(obj, attr, replacement)
                h[0] += 1
                self.held.append(key)

    def __exit__(self, *exc: Any) -> None:
        with _SWAP_LOCK:
            for key in self.held:
                h = _HELD[key]
                h[0] -= 1
                if h[0] == 0:
                    del _HELD[key]
                    _, obj, value, replacement = h
                    if getattr(obj, key[1]) is replacement:
                        _put(obj, key[1], value)
            for glb, entry in zip(self.globs, self.entries):
                entry[0] -= 1
                if entry[0] == 0:
                    del _SWAPPED[id(glb)]
                    for k, value, _ in entry[1]:
                        glb[k] = value
            if self.modules:
                _MODULE_USERS[0] -= 1
                if _MODULE_USERS[0] == 0:
                    for module, name, original, replacement in FUNCTION_SWAPS:
                        if getattr(module, name, None) is replacement:
                            setattr(module, name, original)
