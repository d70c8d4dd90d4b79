"""The explicit registry of supported NumPy functions: what each one is and which rules back it."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .tape import Primitive
from .handlers import FUNCTION_HANDLERS, INTERNAL, UFUNC_HANDLERS
from .refusals import numpy_name


@dataclass
class Entry:
    """One supported NumPy function (or method, or operator) and how jaccli differentiates it."""

    name: str
    target: Any
    handler: Callable
    prims: tuple[Primitive, ...] = ()
    kind: str = "primitive"  # primitive | derived | zero (zero derivative) | nondiff (no derivative)
    family: str = ""
    notes: str = ""
    max_order: str = "any"

    @property
    def reverse(self) -> bool:
        return self.kind in ("zero", "nondiff") or all(p.zero_grad or p.vjps for p in self.prims)

    @property
    def forward(self) -> bool:
        return self.kind in ("zero", "nondiff") or all(p.zero_grad or p.jvps or p.jvp_joint is not None
                                                       for p in self.prims)


REGISTRY: dict[str, Entry] = {}
PRIMITIVES: dict[str, Primitive] = {}
_family = [""]


def family(name: str) -> str:
    """Set the family that the following registrations belong to (one per rules module); returns
    the family set before."""
    previous, _family[0] = _family[0], name
    return previous


def primitive(name: str, impl: Callable, **kw: Any) -> Primitive:
    """Create a primitive and remember it (the rules table test covers every one)."""
    prim = Primitive(name, impl, **kw)
    if name in PRIMITIVES:
        raise ValueError(f"primitive {name} registered twice")
    PRIMITIVES[name] = prim
    return prim


def register(target: Any, handler: Callable, *, prims: tuple = (), kind: str = "primitive",
             name: str | None = None, notes: str = "", max_order: str = "any") -> Entry:
    """Route a NumPy callable (ufunc, function, or a (ufunc, method) pair) to `handler`."""
    if isinstance(target, tuple):
        key = target
        name = name or f"np.{target[0].__name__}.{target[1]}"
        UFUNC_HANDLERS[key] = handler
    elif isinstance(target, np.ufunc):
        name = name or numpy_name(target)
        UFUNC_HANDLERS[target] = handler
    elif isinstance(target, str):
        name = name or target  # an internal operation: a method or operator (x[i], x.astype)
        INTERNAL[target] = handler
    else:
        name = name or numpy_name(target)
        FUNCTION_HANDLERS[target] = handler
        _name_after(handler, target)
    entry = Entry(name, target, handler, tuple(prims), kind, _family[0], notes, max_order)
    REGISTRY[name] = entry
    return entry


def _name_after(handler: Callable, target: Any) -> None:
    """Give a handler the name of the NumPy function it stands for (the first one, if it serves several).

    Python names a function's __qualname__ in its TypeError for a call it cannot bind (an unknown
    keyword, too many positional arguments). NumPy checks most calls against the function's own
    signature before it dispatches, but not where that signature takes *args or **kwargs
    (np.einsum), nor where jaccli's proxy calls the handler itself (np.interp with a traced
    `left`): there the error reads `einsum() got an unexpected keyword argument`, as NumPy's.
    """
    if type(handler) is types.FunctionType and not getattr(handler, "_numpy_named", False):
        handler.__qualname__ = target.__name__
        handler._numpy_named = True


def register_primitive(target: Any, prim: Primitive, **kw: Any) -> Entry:
    """Register a NumPy callable that maps one to one onto a primitive."""
    return register(target, prim, prims=(prim,), **kw)


def register_derived(target: Any, impl: Callable, uses: tuple[Primitive, ...] = (), **kw: Any) -> Entry:
    """Register a NumPy callable implemented by composing other supported operations."""
    return register(target, impl, prims=uses, kind="derived", **kw)
