"""ndarray's methods, attributes and conversions on traced arrays: each the NumPy function of its name, or a refusal."""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from .refusals import escape_error as _escape


class NdarrayMethods:
    """The part of ndarray's interface that the Tracer class takes as it is: NumPy's functions do the work."""

    __slots__ = ()

    def __copy__(self):
        return np.copy(self)

    def __deepcopy__(self, memo):
        return np.copy(self)

    def __divmod__(self, other):
        return np.floor_divide(self, other), np.mod(self, other)

    def __rdivmod__(self, other):
        return np.floor_divide(other, self), np.mod(other, self)

    # -- escapes -------------------------------------------------------------
    def __float__(self):
        raise _escape("float()", "keep values as arrays and use NumPy functions (np.sin, not math.sin); for a count "
                                 "or an index (a loop bound, a table's row), int(x[0]) is taken as a constant")

    def __index__(self):
        raise _escape("using a traced value as an index", "index with plain integers or integer arrays")

    def __complex__(self):
        raise _escape("complex()", "keep values as real arrays")

    def item(self, *args):
        raise _escape(".item()", "keep values as arrays (index with x[i] instead)")

    def tolist(self):
        raise _escape(".tolist()", "keep values as arrays (use np.stack to combine them)")

    # -- attributes ----------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.size(self._value))

    @property
    def dtype(self):
        return self._value.dtype if hasattr(self._value, "dtype") else np.asarray(self._value).dtype

    @property
    def T(self):
        return np.transpose(self)

    @property
    def mT(self):
        return np.swapaxes(self, -1, -2)

    @property
    def real(self):
        return np.real(self)

    @property
    def imag(self):
        return np.imag(self)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flat(self) -> "_Flat":
        return _Flat(self)

    def __round__(self, ndigits=None):
        return np.round(self, 0 if ndigits is None else ndigits)  # traced (Python's round gives an int)

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d traced array")
        return shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -- methods ---------------------------------------------------------------
    # The methods take ndarray's own parameters, in its order (x.sum(0, None, None, True)); the
    # keywords past those (where=, initial=, mode=, ...) go on to the function of the same name.
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw): return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)
    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw): return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)
    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kw): return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)
    def max(self, axis=None, out=None, keepdims=False, **kw): return np.max(self, axis=axis, out=out, keepdims=keepdims, **kw)
    def min(self, axis=None, out=None, keepdims=False, **kw): return np.min(self, axis=axis, out=out, keepdims=keepdims, **kw)
    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw): return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kw)
    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw): return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kw)
    def cumsum(self, axis=None, dtype=None, out=None): return np.cumsum(self, axis=axis, dtype=dtype, out=out)
    def cumprod(self, axis=None, dtype=None, out=None): return np.cumprod(self, axis=axis, dtype=dtype, out=out)

    def reshape(self, *shape, order="C", **kw):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape, order=order, **kw)

    def ravel(self, order="C"): return np.ravel(self, order=order)
    def flatten(self, order="C"): return np.ravel(self, order=order)
    def squeeze(self, axis=None): return np.squeeze(self, axis=axis)
    def swapaxes(self, a, b): return np.swapaxes(self, a, b)
    def repeat(self, repeats, axis=None): return np.repeat(self, repeats, axis=axis)
    def take(self, indices, axis=None, out=None, mode="raise"): return np.take(self, indices, axis=axis, out=out, mode=mode)
    def diagonal(self, offset=0, axis1=0, axis2=1): return np.diagonal(self, offset, axis1, axis2)
    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        return np.trace(self, offset, axis1, axis2, dtype, out)
    def dot(self, other, out=None): return np.dot(self, other, out=out)
    def clip(self, min=None, max=None, out=None, **kw): return np.clip(self, min, max, out=out, **kw)
    def round(self, decimals=0, out=None): return np.round(self, decimals, out=out)
    def conj(self): return np.conjugate(self)
    def conjugate(self): return np.conjugate(self)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return np.transpose(self, axes or None)

    def copy(self, order="C"): return np.copy(self, order=order)

    def put(self, ind, v, mode="raise"):
        np.put(self, ind, v, mode=mode)  # np.put writes into self, as x.put does


class _Flat:
    """x.flat of a traced array: reads are x.ravel()[i]; writes update x (np.put: values repeat)."""

    __slots__ = ("_base",)

    def __init__(self, base: Any) -> None:
        self._base = base

    def __getitem__(self, idx):
        return np.reshape(self._base, (-1,))[idx]

    def __setitem__(self, idx, v):
        where = np.arange(self._base.size)[idx]
        np.put(self._base, where, v)

    def __len__(self) -> int:
        return self._base.size

    def __iter__(self):
        return iter(np.reshape(self._base, (-1,)))


# A method called with an argument it does not take names NumPy's method ("ndarray.cumsum() got an
# unexpected keyword argument 'bogus'"), not jaccli's class: Python names the function's __qualname__.
def name_as_ndarray_methods(cls: type) -> None:
    """Name cls's own public methods that ndarray has too as ndarray's (see above)."""
    for name, method in vars(cls).items():
        if isinstance(method, types.FunctionType) and not name.startswith("_") and hasattr(np.ndarray, name):
            method.__qualname__ = f"ndarray.{name}"


name_as_ndarray_methods(NdarrayMethods)
