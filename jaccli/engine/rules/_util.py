"""Helpers shared by the rule families: broadcasting with a leading block axis, axis arithmetic, kinks."""

from __future__ import annotations

import math
import operator
import warnings
import weakref
from typing import Any

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..block_memory import COLUMNS, OFFERED, ROWS_COPIED, TAKEN, ZEROED, column_order_allowed
from ..seeds import broadcast_block
from ..thread_state import ThreadSlot
from ..tracer import peek

try:
    from numpy.lib.array_utils import normalize_axis_index as _normalize_axis_index
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index as _normalize_axis_index


def axis_index(axis: Any, ndim: int) -> int:
    """axis as a non-negative int; NumPy's AxisError (and message) when it is out of range."""
    return _normalize_axis_index(operator.index(axis), ndim)


def dtype_of(x: Any) -> np.dtype:
    """The dtype of an array, a traced array, a Python number or a list of numbers."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return dtype
    return np.asarray(x).dtype if isinstance(x, (list, tuple)) else np.result_type(x)


def in_dtype(x: Any, dtype: np.dtype) -> Any:
    """x cast to dtype (on the recording, where x is traced); x itself where it already has it."""
    if dtype_of(x) == dtype:
        return x
    return x.astype(dtype) if hasattr(x, "_node") else np.asarray(x, dtype=dtype)


def as_scalar(x: Any) -> Any:
    """x[()] where x holds one number in a 0-d array: a scalar, as NumPy's reductions give; else x itself."""
    value = peek(x)
    return x[()] if type(value) is np.ndarray and value.ndim == 0 else x


def reduction_dtype(call: str, numpy_fn: Any, a: Any, dtype: Any, *args: Any, ndim: int = 1) -> np.dtype:
    """The dtype that numpy_fn(a, *args, dtype=dtype) (np.sum, np.add.reduce, ...) casts a's
    entries to and computes in, found on a stand-in of one entry of a's dtype, with ndim axes.

    NumPy's own error for a dtype it refuses (str, datetime64, ...); jaccli's for one NumPy accepts
    but whose values carry no derivative (object, complex). A dtype NumPy takes for its kind alone,
    a generic timedelta64, leaves a's entries in the dtype NumPy computes in: a's own.
    """
    with warnings.catch_warnings():  # a probe: what NumPy warns of here (a complex cast) is not the user's
        warnings.simplefilter("ignore")
        result = numpy_fn(np.zeros((1,) * ndim, dtype_of(a)), *args, dtype=dtype)
    requested = np.dtype(dtype)
    if requested.kind in "biuf":
        return requested
    computed = getattr(result, "dtype", np.dtype(object))  # an object loop gives a Python object
    if requested.kind in "Oc" or computed.kind not in "biuf":
        raise UnsupportedOperationError(
            f"{call}(..., dtype={requested.name}) of a traced array is not supported by jaccli: derivatives need a "
            "real floating dtype; leave dtype= out or give a float one (np.float64)", user_site(1))
    return computed


def in_method_dtype(method: Any, a: Any, dtype: Any, *args: Any) -> Any:
    """a cast to the dtype= of a ufunc method (ufunc.reduce, .accumulate, .reduceat: args are its
    other positional arguments), as reduction_dtype finds it."""
    if dtype is None:
        return a
    call = f"np.{method.__self__.__name__}.{method.__name__}"
    return in_dtype(a, reduction_dtype(call, method, a, dtype, *args))


def refuse_where(kw: dict, call: str) -> None:
    """A where= mask is refused: NumPy leaves the entries it masks out undefined (without out=)."""
    if kw.get("where", True) is not True:
        name = call.split("(")[0]
        raise UnsupportedOperationError(f"{name} with where= is not supported by jaccli (NumPy leaves the other "
                                        f"entries undefined); write np.where(mask, {call}, x)")


def refuse_core_axes(kw: dict, name: str) -> None:
    """A gufunc's core axes other than its last ones (axes=, axis=, keepdims=) are refused by name."""
    if any(kw.get(k) is not None for k in ("axes", "axis", "out")) or kw.get("keepdims"):
        raise UnsupportedOperationError(f"np.{name} is supported by jaccli over its default axes only; "
                                        f"move axes with np.moveaxis first, or write np.einsum", user_site(2))


_WEAK = (int, float, complex, bool)  # Python numbers: NumPy fits them to the arrays' dtypes (NEP 50)


def loop_dtypes(ufunc: np.ufunc, args: tuple, kw: dict) -> tuple[np.dtype, ...]:
    """The dtypes of ufunc(*args, **kw)'s outputs in NumPy's loop for these arguments' dtypes and
    kwargs (dtype=, signature=, casting=), or NumPy's own error for a loop it refuses.

    For a rule that composes other operations: casting its inputs into the loop's dtype gives
    NumPy's values and dtype. Found by calling ufunc on stand-ins of one element with the
    arguments' dtypes and dimensions, so the cost does not grow with the arguments.
    """
    if ufunc.signature is None:  # a gufunc takes no where=: NumPy's error below
        refuse_where(kw, f"np.{ufunc.__name__}(...)")
    stand_ins = [a if type(a) in _WEAK else np.zeros((1,) * len(shape_of(a)), dtype_of(a)) for a in args]
    out = ufunc(*stand_ins, **kw)
    return tuple(o.dtype for o in out) if ufunc.nout > 1 else (out.dtype,)


def shape_of(x: Any) -> tuple:
    """x.shape without NumPy's dispatch (arrays, traced arrays and seed blocks all have it)."""
    try:
        return x.shape
    except AttributeError:
        return np.shape(x)


def unbroadcast(g: Any, shape: tuple) -> Any:
    """Sum a block ``(K,) + broadcast_shape`` of cotangents down to ``(K,) + shape``."""
    gshape = shape_of(g)
    if gshape[1:] == tuple(shape):
        return g
    lead = len(gshape) - 1 - len(shape)
    # (np.add.reduce is what np.sum calls for a plain array, without its dispatch: a rule's call in every sweep)
    total = np.add.reduce if type(g) is np.ndarray else np.sum
    if lead > 0:
        g = total(g, axis=tuple(range(1, 1 + lead)))
        gshape = shape_of(g)
    axes = tuple(i + 1 for i, n in enumerate(shape) if n == 1 and gshape[i + 1] != 1)
    if axes:
        g = total(g, axis=axes, keepdims=True)
    if shape_of(g)[1:] != tuple(shape):
        # g was smaller than the argument (a broadcast constant produced it): widen it.
        g = np.broadcast_to(g, (np.shape(g)[0],) + tuple(shape))
    return g


def expand(t: Any, shape: tuple, out_shape: tuple) -> Any:
    """Lift a block ``(K,) + shape`` of tangents to ``(K,) + out_shape`` by broadcasting."""
    tshape = shape_of(t)
    k = tshape[0]
    if tshape[1:] == tuple(out_shape):
        return t
    if len(shape) < len(out_shape):
        t = np.reshape(t, (k,) + (1,) * (len(out_shape) - len(shape)) + tuple(shape))
    if shape_of(t)[1:] != tuple(out_shape):
        t = broadcast_block(t, (k,) + tuple(out_shape))
    return t


def norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """Axes as a sorted tuple of non-negative ints (None means all)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    return tuple(sorted(axis_index(a, ndim) if ndim else 0 for a in axis))


def shift(axes: tuple[int, ...]) -> tuple[int, ...]:
    """Axes of an argument seen from a block with a leading axis."""
    return tuple(a + 1 for a in axes)


def along(axis: int, index) -> tuple:
    """An index that applies `index` to one axis and keeps the others whole."""
    return (slice(None),) * axis + (index,)


def sign_change(distance):
    """The kink crossing (facts.KINK_CROSSINGS) of a kink where a signed distance(ans, *args) is 0:
    crossed where it has opposite signs at x and a step away (not where either is 0: a step that
    ends on the kink does not cross it)."""
    def crossed(at, moved):
        return np.sign(distance(*at)) * np.sign(distance(*moved)) < 0
    return crossed


crossed_at_zero = sign_change(lambda ans, *args: args[-1])  # abs, and exp(-|x|) in i0e, i1e, ive


# ndarray.all() goes through a Python wrapper (numpy/_core/_methods.py) and np.logical_and.reduce sets
# up a reduction, each about a microsecond a call on a small array: counting is a tenth of that, and
# every rule of a sweep checks its factor (replay/guards.all_hold counts too)
# np.count_nonzero over every axis is this C function behind NumPy's dispatch (a rule's guards count often)
_COUNT = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "count_nonzero", np.count_nonzero)


def all_finite(value: Any) -> bool:
    """Whether a rule's factor (an array or a number) is all finite (a Python bool: a replay's guard expects True)."""
    if type(value) is np.ndarray:  # (the common case first)
        return bool(_COUNT(np.isfinite(value)) == value.size)
    if isinstance(value, (float, int)):
        return math.isfinite(value)
    return bool(np.all(np.isfinite(value)))


def no_zero(value: Any) -> bool:
    """Whether a rule's factor has no zero entry."""
    if type(value) is np.ndarray:
        return bool(_COUNT(value) == value.size)  # a float counts unless it is 0 (NaN counts): no temporary
    if isinstance(value, (float, int)):
        return value != 0
    return bool(np.all(value != 0))


all_finite.fused_check, no_zero.fused_check = "finite", "nonzero"  # (checked together: replay/guards.all_hold)


def passed(g: Any) -> Any:
    """The rule of a cotangent passed on as it is (x + y's, where no broadcast is undone)."""
    return g


def negated(g):
    """-g. A complex128 array through its float64 view: the same bits (each part's sign flipped), at
    a fraction of the time (NumPy's complex negative is not vectorized: ~6x its float negative; the
    cotangent of a subtracted spectrum, KS residual's Jacobian at n = 256: 47 us against 8 us)."""
    if type(g) is np.ndarray and g.dtype == np.complex128 and g.ndim and g.flags.c_contiguous:
        return np.negative(g.view(np.float64)).view(np.complex128)
    return -g


# A large zero block made by a sweep (a first scatter: one input's cotangent, K rows of n) is fresh
# memory whose first writes fault in a page every 4 KB, ~130 ms for 133 MB, and a Jacobian swept in
# blocks pays that per block. A caller that has copied such a result out and holds it no more gives
# it back (recycle_block): the next zero block of its shape and dtype is made in its memory.
_REUSE_BYTES = 1 << 24
_ISSUED = ThreadSlot()  # a weak reference to the last large zero block made here
_SPARE = ThreadSlot()


def zero_block(shape: tuple, dtype: Any, order: str = "C") -> np.ndarray:
    """np.zeros(shape, dtype), in offered memory (engine/block_memory.py), or a recycled block's, when one of
    that shape, dtype and order is there. order "F": in column order, where the sweep's result is kept whole
    as it is or copied into rows in tiles (block_memory.column_order_allowed; a plain copy of a column-ordered
    block into rows is slow)."""
    offered = OFFERED.v
    # (an element loop's compiled sweep, COLUMNS, makes its x's block in column order, not in the offered rows
    # where each y[i] = v would add a column, an element a row apart: it is copied into them in tiles after)
    if offered is not None and offered.shape == shape and offered.dtype == dtype and not (
            order == "F" and ROWS_COPIED.v is COLUMNS):
        OFFERED.v = None
        if not ZEROED.v:
            offered.fill(0)
        ZEROED.v = False
        TAKEN.v = offered
        return offered
    column = order == "F" and column_order_allowed()
    spare = _SPARE.v
    if spare is not None:
        _SPARE.v = None
        if spare.shape == shape and spare.dtype == dtype and \
                (spare.flags.f_contiguous if column else spare.flags.c_contiguous):
            spare.fill(0)
            _ISSUED.v = weakref.ref(spare)
            return spare
    z = np.zeros(shape, dtype, order="F" if column else "C")
    if z.nbytes >= _REUSE_BYTES:
        _ISSUED.v = weakref.ref(z)
    return z


def recycle_block(block: Any) -> None:
    """Give back `block`, a sweep's result that the caller copied out and references nowhere: only the
    last large block zero_block made is taken (never an array a caller or a program may still hold)."""
    issued = _ISSUED.v
    if issued is not None and issued() is block:
        _ISSUED.v = None
        _SPARE.v = block
