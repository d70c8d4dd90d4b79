"""Arrays f makes with NumPy's creation functions: plain NumPy until f writes a traced value into one, traced from then on.

`r = np.zeros(m); r[i] = y[i] - x[0] * np.exp(-x[1] * t[i])` is how residuals are written. While f
runs, the creation functions f's modules call (np.zeros, np.empty, np.ones, np.full, the *_like ones
of plain arrays, np.eye, np.identity, np.array of numbers, np.arange, np.copy; numpy_proxies.py
swaps them in) return a `Fillable`: an ndarray in every respect, read and computed with by NumPy's
own code at NumPy's cost, except that its __setitem__ looks at the value written. The first traced
value written promotes it in place (its class becomes `Filled`): from then on it stands for a traced
array, as np.zeros_like(x) would be, and every operation on it goes to that array (one buffer, written
in place by later writes, as the traced array's own writes are).

Why a subclass and not ndarray itself: an ndarray's __setitem__ is NumPy's C slot, and writing a
traced value into one calls only the traced value's __array__, from C, with no reference to the
array written; and Python refuses to change the class of an instance of a static type (ndarray),
so an array made plain cannot become anything else later. `isinstance(r, np.ndarray)` holds,
`type(r) is np.ndarray` does not (np.asarray(r) is a plain ndarray).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import TracingError
from .handlers import DEFERS_TO, HOLDERS, INTERNAL, NOT_PLAIN
from .tracer import Tracer, holds_tracer, lift
from .user_sites import user_site


class Fillable(np.ndarray):
    """An array f made: NumPy's own, until f writes a traced value into it (then it is `Filled`)."""

    # NumPy computes with it as with the plain array it is (a view of the same memory), so that what it
    # computes is plain, and a recorded operation holds it as a plain constant (never a Fillable, which a
    # replay could not copy or compare): only the array f made takes traced writes.
    __array_priority__ = -1.0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "at" and inputs and inputs[0] is self and _writes_traced(self, inputs[1:]):
            return Filled.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)  # (np.add.at(r, i, v))
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*(_plain(a) for a in inputs), **kwargs)
        return result if out is None else (out[0] if len(out) == 1 else out)

    def __array_function__(self, func, types, args, kwargs):
        if func in WRITERS and args and args[0] is self and _writes_traced(self, (*args[1:], *kwargs.values())):
            return Filled.__array_function__(self, func, types, args, kwargs)  # (np.fill_diagonal(r, v), ...)
        return func(*_plain_all(args), **{k: _plain_all(v) for k, v in kwargs.items()})

    @property
    def flat(self) -> Any:
        return _FlatOf(self)  # (r.flat[i] = v: a traced v promotes r, as r[i] = v does)

    @flat.setter
    def flat(self, value: Any) -> None:  # (r.flat = v, NumPy's r.flat[:] = v)
        _FlatOf(self)[:] = value

    def __setitem__(self, idx: Any, v: Any) -> None:
        kind = type(v)
        if kind is not Tracer and kind is not Filled and not ((kind is list or kind is tuple) and holds_tracer(v)):
            np.ndarray.__setitem__(self, idx, v)
        elif self.dtype.kind not in "fc":  # NumPy would cast to integers: its own refusal (Tracer.__array__)
            np.ndarray.__setitem__(self, idx, v)
        else:
            _promote(self, idx, lift(v))

    def __reduce_ex__(self, protocol: int) -> Any:  # pickled (and copied) as the plain array it is
        return np.asarray(self).__reduce_ex__(protocol)


def _in_place(name: str) -> Any:
    """r += v: NumPy's in place for a plain v; for a traced v, r becomes (r + v), as r[...] = r + v."""
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
             "pow": np.power}[name]

    def method(self, other: Any) -> Any:
        if type(other) is Tracer or type(other) is Filled or holds_tracer(other):
            if self.dtype.kind in "fc":
                _promote(self, Ellipsis, ufunc(np.asarray(self), lift(other)))
                return self
        ufunc(self, other, out=(self,))  # (NumPy's own refusal of a traced value into integers)
        return self
    method.__name__ = f"__i{name}__"
    return method


for _name in ("add", "sub", "mul", "truediv", "pow"):
    setattr(Fillable, f"__i{_name}__", _in_place(_name))


def _plain(a: Any) -> Any:
    return a.view(np.ndarray) if type(a) is Fillable else a


def _plain_all(obj: Any) -> Any:
    kind = type(obj)
    if kind is Fillable:
        return obj.view(np.ndarray)
    if kind is list or kind is tuple:
        return kind(_plain_all(o) for o in obj)
    return obj


# NumPy's functions that write into their first argument, which a traced value promotes as r[i] = v does
WRITERS = frozenset((np.fill_diagonal, np.put, np.putmask, np.copyto, np.place, np.put_along_axis))


def _writes_traced(a: Fillable, values: tuple) -> bool:
    """Whether a writer into `a` (a plain Fillable of floats, not yet Filled) writes a traced value: `a`
    becomes the Filled of a traced copy of itself first (_promote with nothing written), and the writer
    is the traced array's."""
    found = next((v for v in values if type(v) is Tracer or type(v) is Filled or holds_tracer(v)), None)
    if found is None or type(a) is not Fillable or a.dtype.kind not in "fc" or not a.ndim:
        return False
    empty = lift(unwrap(found)).reshape(-1)[:0]  # (a traced value, written nowhere: the copy is traced)
    _promote(a, tuple(np.zeros(0, dtype=np.intp) for _ in range(a.ndim)), empty)
    return True


_NDARRAY_FLAT = np.ndarray.flat  # (ndarray's own descriptor: Fillable.flat is a property over it)


class _FlatOf:
    """A Fillable's `flat`: NumPy's flat iterator, but a traced value written through it promotes the array."""

    def __init__(self, a: Fillable) -> None:
        self._a = a

    def __setitem__(self, idx: Any, v: Any) -> None:
        a = self._a
        if type(a) is Filled or _writes_traced(a, (v,)):
            a.__dict__["_traced"].flat[idx] = unwrap(v)
        else:
            _NDARRAY_FLAT.__get__(a)[idx] = v

    def __getattr__(self, name: str) -> Any:
        flat = self._a.flat if type(self._a) is Filled else _NDARRAY_FLAT.__get__(self._a)
        return getattr(flat, name)

    def __getitem__(self, idx: Any) -> Any:
        return self.__getattr__("__getitem__")(idx)

    def __iter__(self) -> Any:
        return iter(self.__getattr__("__iter__")())

    def __len__(self) -> int:
        return self._a.size

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__getattr__("__array__")(*args, **kwargs)


def _promote(a: Fillable, idx: Any, v: Any) -> None:
    """a[idx] = v for a traced v: `a` becomes the `Filled` that stands for the traced result."""
    if isinstance(a.base, Fillable):
        raise TracingError(
            "a traced value is written into a view of an array (like row = r[0]; row[1] = v, or r.T[0] = v), "
            "which jaccli does not carry back to the array; write into the array itself with one index "
            "(r[0, 1] = v)", user_site(3))
    traced = INTERNAL["setitem"](np.array(a), v, idx)  # a copy: the recording's own buffer from here on
    if a.flags.writeable:
        # What reads this memory from now on bypasses the recording (an installed package's np.asarray,
        # a view taken before the write): NaN there, loud, rather than values whose derivative is lost.
        # (A read-only one is held by a recorded operation already, which keeps its values.)
        np.ndarray.fill(a, np.nan)
    a.__class__ = Filled
    a.__dict__["_traced"] = traced


def unwrap(obj: Any) -> Any:
    """obj with every `Filled` (inside lists and tuples too) replaced by the traced array it stands for."""
    kind = type(obj)
    if kind is Filled:
        return obj.__dict__["_traced"]
    if kind is list or kind is tuple:
        return kind(unwrap(o) for o in obj)
    return obj


_OWN = frozenset(("__class__", "__dict__", "flags", "setflags"))  # (its memory's flags: the Freezer sets them back)


class Filled(Fillable):
    """A `Fillable` after f wrote a traced value into it: every operation goes to the traced array
    it stands for (its own memory holds NaN: see `_promote`)."""

    def __getattribute__(self, name: str) -> Any:
        if name in _OWN:
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "__dict__")["_traced"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_traced"], name, value)  # r.shape = (2, 3)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        kwargs = {k: unwrap(v) for k, v in kwargs.items()}
        if method == "__call__":
            return ufunc(*unwrap(inputs), **kwargs)
        return getattr(ufunc, method)(*unwrap(inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()})

    def __setitem__(self, idx: Any, v: Any) -> None:
        self.__dict__["_traced"][idx] = unwrap(v)

    def __reduce_ex__(self, protocol: int) -> Any:
        return self.__dict__["_traced"].__reduce_ex__(protocol)


def _forward(name: str) -> Any:
    def method(self, *args: Any) -> Any:
        return getattr(self.__dict__["_traced"], name)(*unwrap(args))
    method.__name__ = name
    return method


def _forward_in_place(name: str) -> Any:
    def method(self, other: Any) -> Any:
        traced = self.__dict__["_traced"]
        self.__dict__["_traced"] = getattr(traced, name)(unwrap(other))  # (the traced array, updated)
        return self
    method.__name__ = name
    return method


# Special methods Python looks up on the type (not through __getattribute__): each goes to the traced array.
# (The rest, such as bitwise operators, are ndarray's, which call the ufunc: Filled.__array_ufunc__.)
for _name in ("__getitem__", "__iter__", "__len__", "__repr__", "__str__", "__format__", "__bool__", "__float__",
              "__int__", "__index__", "__complex__", "__round__", "__copy__", "__deepcopy__", "__array__", "__neg__",
              "__pos__", "__abs__", "__divmod__", "__rdivmod__",
              *(f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")
                for p in ("", "r")),
              *(f"__{op}__" for op in ("eq", "ne", "lt", "le", "gt", "ge"))):
    setattr(Filled, _name, _forward(_name))
for _name in ("add", "sub", "mul", "truediv", "pow", "matmul"):
    setattr(Filled, f"__i{_name}__", _forward_in_place(f"__i{_name}__"))
Filled.__hash__ = None  # (as ndarray's)

HOLDERS[Filled] = unwrap
NOT_PLAIN.update((Fillable, Filled))
# A traced array's NumPy call that meets one leaves it to theirs, which unwraps it (or views it as plain)
DEFERS_TO.update((Fillable, Filled))


def fillable(out: Any) -> Any:
    """out, a creation function's result, as a `Fillable` if it is a plain array of numbers."""
    if type(out) is not np.ndarray or out.base is not None or out.dtype.kind not in "biufc":  # (new arrays only)
        return out
    # Its own memory (a copy), not a view of out: NumPy's plain views of it then have it as their base,
    # so that the Freezer, which holds what a recorded operation took, holds the array f writes into.
    made = Fillable(out.shape, out.dtype, order="F" if out.flags.f_contiguous and not out.flags.c_contiguous else "C")
    np.ndarray.__setitem__(made, Ellipsis, out)
    return made
