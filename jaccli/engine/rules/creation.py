"""Rules for copies, casts and arrays made like a traced one (zeros_like and friends)."""

from __future__ import annotations

import operator

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..facts import NOT_SEPARABLE, SAMPLE_RULES, SHIFT_FORMS, STRUCTURES
from ..structure import Elementwise
from ..registry import family, primitive, register, register_derived
from ..sample_independence import leading_axis_kept
from ..handlers import INTERNAL
from ..tracer import Tracer, guarded
from ._util import dtype_of

family("creation")


def _copy_impl(x, order="K"):
    return np.copy(x, order=order)  # in NumPy's memory layout: ravel(order="K") reads it


copy = primitive("np.copy", _copy_impl)
STRUCTURES[copy] = Elementwise()
copy.value_free = True
copy.defvjp(lambda ans, x, order="K": (lambda g: g))
copy.defjvp(lambda ans, x, order="K": (lambda t: t))
SAMPLE_RULES[copy] = leading_axis_kept
SHIFT_FORMS[copy] = "move"
register(np.copy, lambda a, order="K", subok=False: copy(a, order=order), prims=(copy,))
register("copy", copy, prims=(copy,), name="x.copy()")


def _astype_impl(x, dtype):
    return x.astype(dtype) if hasattr(x, "astype") else np.asarray(x).astype(dtype)


def _cast_derivative(d, dtype):
    """A tangent or cotangent cast to dtype; a complex one to a real dtype keeps its real part (the
    derivative of NumPy's complex-to-real cast, which drops the imaginary part)."""
    if np.dtype(dtype).kind != "c" and dtype_of(d).kind == "c":
        d = np.real(d)
    return _astype_impl(d, dtype)


astype = primitive("astype", _astype_impl)
STRUCTURES[astype] = Elementwise()
# The cotangent goes back in the input's dtype, the tangent forward in the output's.
astype.defvjp(lambda ans, x, dtype: (lambda g, _dt=dtype_of(x): _cast_derivative(g, _dt)))
astype.defjvp(lambda ans, x, dtype: (lambda t: _cast_derivative(t, dtype)))
SAMPLE_RULES[astype] = leading_axis_kept
_NOT_NUMBERS = {"O": "Python objects", "U": "strings", "S": "bytes", "V": "raw memory (void)",
                "M": "dates", "m": "time spans"}


def _astype(x, dtype):
    """x.astype(dtype): a copy even when the dtype is unchanged, so that writing into the result
    leaves x alone. A cast to a dtype that does not hold numbers (object, str, ...) is refused: the
    values would leave the recording, and with them the derivative."""
    if dtype_of(x) == dtype:
        return copy(x)
    if dtype.kind in _NOT_NUMBERS and type(x) is Tracer:
        raise UnsupportedOperationError(
            f"a traced array cast to dtype {dtype.name} ({_NOT_NUMBERS[dtype.kind]}) is not supported by jaccli: "
            "the derivative cannot follow values out of a numeric array (x.astype, np.array or np.asarray "
            "with that dtype); keep the array numeric", user_site(1))
    return astype(x, dtype)


register("astype", _astype, prims=(astype,), name="x.astype()",
         notes="a cast to an integer or boolean dtype cuts the derivative (a constant); to object or str dtypes "
               "it is refused")

if hasattr(np, "astype"):  # NumPy >= 2.1: the function form of x.astype(), which copies only when asked
    register_derived(np.astype, lambda x, dtype, /, *, copy=True, device=None:
                     INTERNAL["astype"](x, np.dtype(dtype)) if copy or dtype_of(x) != np.dtype(dtype) else x,
                     uses=(astype,), notes="a cast to an integer or boolean dtype cuts the derivative (a constant)")


def _like(kind):
    def impl(x, fill_value, dtype, shape=None):
        dt = dtype or dtype_of(x)
        return np.full(np.shape(x) if shape is None else shape, fill_value, dtype=dt)

    prim = primitive(f"np.{kind}", impl, constant=True)
    SAMPLE_RULES[prim] = NOT_SEPARABLE

    def handler(a, fill, dtype=None, shape=None):
        # traced (if `a` is), though constant: also a buffer of another shape that f then assigns into
        base = prim(a, 0.0 if type(fill) is Tracer else fill, dtype, shape)
        if type(fill) is Tracer:
            # The fill value is differentiable; the traced zeros carry the shape, and the dtype: NumPy
            # casts the fill value to it (an integer dtype cuts the derivative)
            return INTERNAL["astype"](base + fill, np.dtype(dtype or dtype_of(a)))
        return base

    # NumPy's signatures: jaccli's proxy calls np.full_like's directly (a traced fill value for a plain
    # `a`), without NumPy's check of the call
    if kind == "full_like":
        def numpy_call(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
            return handler(a, fill_value, dtype, shape)
    else:
        def numpy_call(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
            return handler(a, 1.0 if kind == "ones_like" else 0.0, dtype, shape)

    notes = "a traced constant: independent of the input, but it can be assigned into"
    if kind == "full_like":
        notes += "; a traced fill value is differentiated"
    register(getattr(np, kind), numpy_call, prims=(prim,), kind="zero", notes=notes)
    return numpy_call


_like("zeros_like")
_like("ones_like")
full_like = _like("full_like")
register("full_like", lambda x, v: full_like(x, v), name="x.fill()")
_like("empty_like")


# ---------------------------------------------------------------------------
# linspace and logspace with traced end points: NumPy's own arithmetic, so values match exactly
# ---------------------------------------------------------------------------
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    dt = np.result_type(dtype_of(start), dtype_of(stop), float)
    delta = np.subtract(stop, start)
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * np.ndim(delta))
    if div > 0:
        step = delta / div
        if guarded(lambda s: bool(np.any(s == 0)), step):  # denormal steps, as NumPy: divide first
            y = (y / div) * delta
        else:
            y = y * step
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y = np.concatenate([y[:-1], np.broadcast_to(stop, (1,) + np.shape(y)[1:])], axis=0)  # y[-1] = stop
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None and np.dtype(dtype) != dtype_of(y):
        y = INTERNAL["astype"](np.floor(y) if np.issubdtype(dtype, np.integer) else y, np.dtype(dtype))
    return (y, step) if retstep else y


def _logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = _linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    if np.ndim(base) > 0:
        base = np.expand_dims(base, axis)
    out = np.power(base, y)
    return out if dtype is None else INTERNAL["astype"](out, np.dtype(dtype))


register_derived(np.linspace, _linspace, uses=(astype,), notes="differentiable in start and stop")
register_derived(np.logspace, _logspace, uses=(astype,), notes="differentiable in start, stop and base")
