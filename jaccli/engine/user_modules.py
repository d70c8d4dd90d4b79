"""The user's modules: f's own, and those its module reaches through the names it binds."""

from __future__ import annotations

import functools
import operator
import os
import types
from typing import Any, Callable

from .user_sites import is_users_file

_MAX_MODULES = 64  # a module importing a large tree of the user's own: the first ones are enough


_USERS: dict[str, bool] = {}  # a module's __file__ -> whether it is the user's


def is_users_module(glb: dict) -> bool:
    """glb is the globals dict of a module from a .py file of the user's (user_sites.is_users_file)."""
    path = glb.get("__file__")
    if type(path) is not str or not path.endswith(".py"):
        return False
    known = _USERS.get(path)
    if known is None:
        known = _USERS[path] = is_users_file(os.path.abspath(path))
    return known


def globals_of(v: Any) -> dict | None:
    """The globals dict of the module that a module, function, method, partial or class comes from."""
    kind = type(v)
    if kind is types.ModuleType:
        return v.__dict__
    if kind is types.FunctionType:
        return v.__globals__
    if kind is types.MethodType:
        return globals_of(v.__func__)
    if kind is functools.partial:
        return globals_of(v.func)
    if issubclass(kind, type):  # (by its type: reading an attribute of some objects runs their code)
        # Its methods' globals: a module loaded from a file (the command line's) may not be in sys.modules.
        for attr in vars(v).values():
            if type(attr) in (staticmethod, classmethod, property):
                attr = getattr(attr, "__func__", None) or getattr(attr, "fget", None)
            if type(attr) is types.FunctionType:
                return attr.__globals__
    return None


def values_of(names: tuple) -> Callable[[dict], tuple]:
    """dict -> the values of names, as a tuple (one lookup per name, in C)."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    if names:
        name = names[0]
        return lambda glb: (glb[name],)  # (itemgetter of one name gives its value, not a 1-tuple)
    return lambda glb: ()


_REACHED: dict[int, tuple] = {}


def user_globals(glb: dict) -> tuple[dict, ...]:
    """glb, then the globals of the user's modules that glb reaches: modules it imports, and the
    modules of the functions and classes it imports by name, and so on from theirs.

    Cached per dict; found again when glb or a module found changes size (new names bound)."""
    cached = _REACHED.get(id(glb))
    # glb is not kept (the cache must not keep f's module alive), so its id may be a new dict's; the
    # values through which glb reached its helpers are kept, and must still be glb's, the same objects.
    # (Every recording asks: the comparisons run in C.)
    if cached is not None and cached[0] == len(glb) and cached[1] == glb.get("__file__"):
        helpers = cached[3]
        if not helpers:
            return (glb,)
        try:
            if all(map(operator.is_, cached[4](glb), cached[2])) and list(map(len, helpers)) == cached[5]:
                return (glb,) + helpers
        except KeyError:  # a name it was reached through gone: found again
            pass
    found, seen, k, links = [glb], {id(glb)}, 0, []
    while k < len(found) and len(found) < _MAX_MODULES:
        for name, v in list(found[k].items()):
            g = globals_of(v)
            if g is not None and id(g) not in seen:
                seen.add(id(g))
                if is_users_module(g):
                    found.append(g)
                    if k == 0:
                        links.append((name, v))
        k += 1
    found = found[:_MAX_MODULES]
    # (size, file, the values reached through, the helpers' globals, a getter of those values from glb,
    # the helpers' sizes)
    _REACHED[id(glb)] = (len(glb), glb.get("__file__"), tuple(v for _, v in links), tuple(found[1:]),
                         values_of(tuple(name for name, _ in links)), [len(g) for g in found[1:]])
    return tuple(found)


_JACCLI = __name__.split(".")[0] + "."


def callable_globals(f: Callable) -> tuple[dict, ...]:
    """The globals to swap while f runs: f's module's (a function's, a method's, a partial's, or a
    callable object's class's) and the user's modules reached from there or from f's closure."""
    glb = getattr(f, "__globals__", None)  # a function or method, or a wrapper that gives its function's
    if type(glb) is not dict:
        glb = globals_of(f)
        if glb is None and not issubclass(type(f), type):
            glb = globals_of(type(f))  # an object with __call__: its class's module, if the user's
            if glb is not None and not is_users_module(glb):
                glb = None
    if glb is None or str(glb.get("__name__")).startswith(_JACCLI):  # (jaccli's own wrappers: the user's f
        return ()                                                   # they call is recorded by itself)
    globs = user_globals(glb)
    cells = getattr(f, "__closure__", None)
    if cells and is_users_module(glb):  # lambda x: helper.loss(x, data), helper imported locally (jaccli's own
        have = {id(g) for g in globs}  # wrappers, such as the Hessian's gradient, call f by its own name)
        for cell in cells:
            try:
                g = globals_of(cell.cell_contents)
            except ValueError:  # a cell not yet filled
                continue
            if g is not None and id(g) not in have and is_users_module(g):
                more = tuple(h for h in user_globals(g) if id(h) not in have)
                have.update(id(h) for h in more)
                globs += more
    return globs
