"""numpy and numpy.linalg as f's modules see them while f runs: NumPy's names, lifting lists of traced values first.

np.array([traced, ...]) cannot be intercepted by NumPy's protocols, nor can np.max([a, b]) or
np.linalg.norm([dx, dy]), where NumPy converts the list before any dispatch: the proxies handle
them (engine/intercept.py swaps them in).
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from .filling import fillable
from .handlers import FUNCTION_HANDLERS, FUNCTION_SWAPS, HOLDERS, INTERNAL, STAND_IN_HOOKS
from .tracer import Tracer, holds_sequence, holds_tracer, lift, lift_args, needs_lifting, peek, primal
from .user_sites import user_site


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
    holder = HOLDERS.get(type(obj))
    if holder is not None:  # an array f made and wrote a traced value into: the traced array it stands for
        obj = holder(obj)
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
        holder = HOLDERS.get(type(obj))
        if holder is not None:
            obj = holder(obj)
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


def _creating(make: Callable) -> Callable:
    """A creation function (np.zeros, ...) whose plain arrays accept traced writes (engine/filling.py)."""
    @functools.wraps(make)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = make(*args, **kwargs)
        return out if args and out is args[0] else fillable(out)  # (np.array(a, copy=False) is a itself)
    return call


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
        ufunc = self._ufunc
        if not kwargs and len(args) == ufunc.nin:
            # np.sin(x) with x traced and nothing else that overrides ufuncs: the traced array's own
            # __array_ufunc__, as NumPy would call it, without NumPy's search for overrides
            traced = False
            for a in args:
                kind = type(a)
                if kind is Tracer:
                    traced = True
                elif kind is not np.ndarray and kind is not float and kind is not int and kind is not np.float64:
                    break
            else:
                if traced:
                    out = args[0].__array_ufunc__(ufunc, "__call__", *args) if type(args[0]) is Tracer else \
                        args[1].__array_ufunc__(ufunc, "__call__", *args)
                    if out is not NotImplemented:
                        return out
        if holds_sequence(args):
            args, kwargs = lift_args(ufunc, args, kwargs)
        return ufunc(*args, **kwargs)

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


class _Concatenator:
    """np.r_ or np.c_ for items that hold traced values: arrays, numbers, lists, and plain slices (NumPy's
    ranges); np.c_ makes 1-D items columns. Without traced values, NumPy's own."""

    __slots__ = ("_original", "_name")

    def __init__(self, original: Any, name: str) -> None:
        self._original = original
        self._name = name

    def __getitem__(self, key: Any) -> Any:
        items = key if type(key) is tuple else (key,)
        if not holds_tracer(items):
            return self._original[key]
        columns = self._name == "c_"
        parts = []
        for item in items:
            if isinstance(item, (str, slice)):
                if isinstance(item, str) or holds_tracer((item.start, item.stop, item.step)):
                    raise UnsupportedOperationError(
                        f"np.{self._name}[...] with {'a directive string' if isinstance(item, str) else 'a traced bound'}"
                        " and traced values is not supported by jaccli; write np.concatenate([...], axis=...) or "
                        "np.stack([...], axis=...)", user_site(2))
                item = self._original[item]  # a range of plain numbers
            part = lift(item)
            if np.ndim(part) == 0:
                part = np.reshape(part, (1, 1) if columns else (1,))
            elif columns and np.ndim(part) == 1:
                part = np.reshape(part, (-1, 1))
            parts.append(part)
        return np.concatenate(parts, axis=-1 if columns else 0)

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return repr(self._original)


R_PROXY, C_PROXY = _Concatenator(np.r_, "r_"), _Concatenator(np.c_, "c_")
LINALG_PROXY = _NumpyProxy(np.linalg, {})


NUMPY_PROXY = _NumpyProxy(np, {"array": _creating(_array), "asarray": _converting(np.asarray),
                               "asanyarray": _converting(np.asanyarray),
                               "ascontiguousarray": _converting(np.ascontiguousarray),
                               "asfortranarray": _converting(np.asfortranarray),
                               "require": _converting(np.require), "full": _creating(_full),
                               "arange": _creating(_arange), "full_like": _creating(_dispatching(np.full_like)),
                               "r_": R_PROXY, "c_": C_PROXY,
                               **{f.__name__: _dispatching(f) for f in (np.interp, np.polyint)},
                               **{f.__name__: _creating(_lifting(f)) for f in (
                                   np.zeros, np.empty, np.ones, np.zeros_like, np.ones_like, np.empty_like,
                                   np.eye, np.identity, np.copy)}})


def stand_in(v: Any) -> Any:
    """What stands in for v while f runs (None: v stays): the proxies for the numpy module and
    numpy.linalg, the proxies' functions for NumPy's functions imported by name (`from numpy import
    array`), jaccli's version of an optional package's function (SciPy's logsumexp, norm.logpdf, ...)."""
    if type(v) is types.ModuleType:
        return NUMPY_PROXY if v is np else LINALG_PROXY if v is np.linalg else None
    if v is np.r_ or v is np.c_:
        return R_PROXY if v is np.r_ else C_PROXY
    if type(v) is np.ufunc or (callable(v) and not issubclass(type(v), type)
                               and str(getattr(v, "__module__", "")).startswith("numpy")):
        name = getattr(v, "__name__", None)
        if type(name) is str and not name.startswith("_"):
            for module, proxy in ((np, NUMPY_PROXY), (np.linalg, LINALG_PROXY)):
                if getattr(module, name, None) is v:
                    return getattr(proxy, name)
    replacement = swapped_function(v)
    if replacement is None:
        for hook in STAND_IN_HOOKS:
            replacement = hook(v)
            if replacement is not None:
                break
    return replacement


# id(original) -> (original, replacement) for FUNCTION_SWAPS, remade when that list grows: one lookup for
# every callable name a scan of f's modules meets, and for f itself at each recording.
_BY_ORIGINAL: dict[int, tuple[Any, Any]] = {}
_INDEXED = [0]


def swapped_function(v: Any) -> Any:
    """jaccli's version of v where v is (a method of) an optional package's object that FUNCTION_SWAPS
    replaces (scipy.special.logsumexp, scipy.stats.norm.logpdf), else None."""
    if _INDEXED[0] != len(FUNCTION_SWAPS):
        _BY_ORIGINAL.update((id(original), (original, replacement)) for _, _, original, replacement in FUNCTION_SWAPS)
        _INDEXED[0] = len(FUNCTION_SWAPS)
    owner = v.__self__ if type(v) is types.MethodType else v
    hit = _BY_ORIGINAL.get(id(owner))
    if hit is None or hit[0] is not owner:
        return None
    return hit[1] if owner is v else getattr(hit[1], v.__name__, None)
