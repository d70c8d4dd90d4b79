"""While f runs, NumPy's names in f's modules point to the proxies that lift lists of traced values first.

The names bound to numpy (the module, numpy.linalg, or a function imported by name) in f's globals,
and in the globals of the user's own modules that f's module reaches (engine/user_modules.py), and
what the user's functions hold (defaults, closure cells, partials' arguments), are swapped for the
proxies of engine/numpy_proxies.py and swapped back when f returns. Installed packages, the
standard library and jaccli are left as they are.
"""

from __future__ import annotations

import functools
import threading
import types
from typing import Any, Callable

import numpy as np

from .handlers import FUNCTION_SWAPS, OPTIONAL_RULES
from .numpy_proxies import stand_in, swapped_function
from .user_modules import callable_globals, globals_of, is_users_module, values_of

_NAMES_CACHE: dict[tuple, tuple[int, int, list, list, Callable, tuple, Callable, list]] = {}


def _swaps_in(glb: dict) -> tuple[list[tuple[str, Any, Any]], list[tuple[Any, str, Any, Any]]]:
    """What to swap in a globals dict while f runs (see `numpy_proxies.stand_in`): (name, value, replacement)
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
    _NAMES_CACHE[key] = (len(glb), len(FUNCTION_SWAPS), swaps, held, values_of(tuple(k for k, _ in watched)),
                         tuple(v for _, v in watched), values_of(tuple(k for k, _ in typed)),
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
            or not is_users_module(fn.__globals__):
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
    g = globals_of(p.func)
    if g is None or not is_users_module(g) or (glb is not None and g is not glb):
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


# Values nothing stands in for (an array or a number a closure holds): not looked up
_NEVER_STOOD_IN = frozenset((np.ndarray, int, float, complex, bool, str, bytes, type(None)))


def _stand_in_or_same(v: Any) -> Any:
    """`stand_in(v)`, or v itself where nothing stands in for it."""
    if type(v) in _NEVER_STOOD_IN:
        return v
    try:
        replacement = stand_in(v)
    except Exception:  # noqa: BLE001 - an object whose attributes raise (a lazy loader's): left as it is
        return v
    return v if replacement is None else replacement


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

    def __enter__(self) -> Callable:
        """Returns what to call for f: jaccli's version where f is an optional package's function it
        replaces (`jaccli.grad(scipy.special.logsumexp, x)`), else f."""
        for install in OPTIONAL_RULES:
            install(None)  # rules for packages f's module imported (scipy.special), installed once
        modules = self.modules = bool(FUNCTION_SWAPS)
        with _SWAP_LOCK:
            # What to swap, found before anything is swapped: nothing is left half done if it fails. A module
            # with nothing to swap (most of those f reaches) is not counted either: a scan finds nothing there.
            entries = []
            for glb in self.globs:
                entry = _SWAPPED.get(id(glb))
                if entry is None:
                    swaps, found = _swaps_in(glb)
                    if not swaps and not found:
                        continue
                    entry = [0, swaps, found]
                entries.append((glb, entry))
            try:
                held = _held_in(self.f)
            except Exception:  # noqa: BLE001 - a callable whose attributes raise: nothing it holds is swapped
                held = []
            for _, entry in entries:
                if entry[2]:
                    held += entry[2]
            if modules:
                _MODULE_USERS[0] += 1
                for module, name, _, replacement in FUNCTION_SWAPS:  # some may be new since the first user
                    setattr(module, name, replacement)
            for glb, entry in entries:
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
        return (swapped_function(self.f) or self.f) if modules else self.f

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
            for glb, entry in self.entries:
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
