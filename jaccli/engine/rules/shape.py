"""Rules for functions that move elements without arithmetic: reshape, transpose, broadcast, squeeze."""

from __future__ import annotations

import operator

import numpy as np

from ..facts import NOT_SEPARABLE, SAMPLE_RULES, SHIFT_FORMS, STRUCTURES, allow_in_expressions
from ..structure import Moves
from ..registry import family, primitive, register, register_derived
from ..sample_independence import leading_axis_kept
from ..refusals import mark_read_only
from ..tracer import Tracer, guarded
from ._util import axis_index, shape_of

family("shape")


def _k(g):
    return shape_of(g)[0]


# ---------------------------------------------------------------------------
# reshape (ravel, flatten, expand_dims and squeeze are reshapes too)
# ---------------------------------------------------------------------------
def _reshape_impl(x, shape):
    if type(x) is np.ndarray:  # what np.reshape calls, without its dispatch (replays and sweeps run many)
        return x.reshape(shape)
    return np.reshape(x, shape)


reshape = primitive("reshape", _reshape_impl)
STRUCTURES[reshape] = Moves()


def _reshape_rule(to_shape_of):
    def maker(ans, x, shape):
        target = tuple(shape_of(ans) if to_shape_of == "ans" else shape_of(x))
        return lambda g: _reshape_impl(g, (_k(g),) + target)
    return maker


reshape.defvjp(_reshape_rule("x"))
reshape.defjvp(_reshape_rule("ans"))
SAMPLE_RULES[reshape] = leading_axis_kept
SHIFT_FORMS[reshape] = "move"


def _reshape_handler(a, newshape=None, order="C", *, shape=None, copy=None):
    if shape is None:
        shape = newshape
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if copy:  # a new array: writing into it leaves a as it is
        return np.copy(_reshape_handler(a, shape, order))
    if _memory_order(a, order) == "F":
        # Fortran order is C order with the axes reversed on both sides.
        return _transpose_handler(_reshape_handler(_transpose_handler(a), shape[::-1]))
    if shape_of(a) == shape:
        return a
    return reshape(a, shape)


def _memory_order(a, order) -> str:
    """"C" or "F": how np.reshape/np.ravel read a's elements for `order` ("A", "K": as a is stored)."""
    if order in ("C", None):
        return "C"
    if order == "F":
        return "F"
    if order not in ("A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    # The layout of a traced value is a guard: a replay at an input of another layout records afresh.
    layout = guarded(_layout, a) if type(a) is Tracer else _layout(a)
    if layout == "neither" and order == "K":
        from ...errors import UnsupportedOperationError
        raise UnsupportedOperationError("np.ravel(..., order='K') of an array that is neither C- nor "
                                        "Fortran-contiguous is not supported by jaccli; use order='C' or 'F'")
    return "F" if layout == "F" else "C"


def _layout(a) -> str:
    """"C", "F" (Fortran-contiguous and not C-contiguous) or "neither"; "C" for what is not an array."""
    flags = getattr(a, "flags", None)
    if flags is None or flags.c_contiguous:
        return "C"
    return "F" if flags.f_contiguous else "neither"


register(np.reshape, _reshape_handler, prims=(reshape,),
         notes="order 'F' is C order with the axes reversed; 'A' and 'K' follow the array's memory layout")
register_derived(np.ravel, lambda a, order="C": _reshape_handler(a, (-1,), order), uses=(reshape,))
allow_in_expressions("reshape", "ravel")


def _expand_dims(a, axis):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shape = np.expand_dims(np.empty(np.shape(a), dtype=bool), axes).shape
    return _reshape_handler(a, shape)


def _squeeze(a, axis=None):
    shape = np.squeeze(np.empty(np.shape(a), dtype=bool), axis=axis).shape
    return _reshape_handler(a, shape)


register_derived(np.expand_dims, _expand_dims, uses=(reshape,))
register_derived(np.squeeze, _squeeze, uses=(reshape,))
register_derived(np.atleast_1d, lambda *arys: _atleast(1, arys), uses=(reshape,))
register_derived(np.atleast_2d, lambda *arys: _atleast(2, arys), uses=(reshape,))
register_derived(np.atleast_3d, lambda *arys: _atleast(3, arys), uses=(reshape,))


def _atleast(n, arys):
    out = []
    for a in arys:
        shape = np.shape(a)
        if len(shape) < n:
            if n == 3 and len(shape) > 0:
                shape = ((1,) + shape if len(shape) == 1 else shape) + (1,)  # (n,) -> (1, n, 1)
            else:
                shape = (1,) * (n - len(shape)) + shape
            a = _reshape_handler(a, shape)
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


# ---------------------------------------------------------------------------
# transpose (swapaxes and moveaxis are transposes)
# ---------------------------------------------------------------------------
def _transpose_impl(x, axes):
    return np.transpose(x, axes)


transpose = primitive("transpose", _transpose_impl)
STRUCTURES[transpose] = Moves()


def _transpose_vjp(ans, x, axes):
    inverse = tuple(int(i) + 1 for i in np.argsort(axes))
    return lambda g: np.transpose(g, (0,) + inverse)


def _transpose_jvp(ans, x, axes):
    forward = (0,) + tuple(a + 1 for a in axes)
    return lambda t: np.transpose(t, forward)


transpose.defvjp(_transpose_vjp)
transpose.defjvp(_transpose_jvp)


def _samples_transpose(node, B) -> bool:
    """A transpose keeps samples apart when it keeps axis 0 in front."""
    return tuple(node.args[1])[:1] == (0,) and np.shape(node.value)[:1] == (B,)


SAMPLE_RULES[transpose] = _samples_transpose
SHIFT_FORMS[transpose] = "move"


def _transpose_handler(a, axes=None):
    nd = np.ndim(a)
    if axes is None:
        axes = tuple(range(nd))[::-1]
    axes = tuple(axis_index(ax, nd) for ax in axes)
    if axes == tuple(range(nd)):
        return a
    return transpose(a, axes)


def _swapaxes(a, axis1, axis2):
    nd = np.ndim(a)
    axes = list(range(nd))
    i, j = axis_index(axis1, nd), axis_index(axis2, nd)
    axes[i], axes[j] = axes[j], axes[i]
    return _transpose_handler(a, tuple(axes))


def _moveaxis(a, source, destination):
    nd = np.ndim(a)
    src = tuple(axis_index(s, nd) for s in (source if isinstance(source, (tuple, list)) else (source,)))
    dst = tuple(axis_index(d, nd) for d in (destination if isinstance(destination, (tuple, list)) else (destination,)))
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose_handler(a, tuple(order))


register(np.transpose, _transpose_handler, prims=(transpose,))
allow_in_expressions("transpose")
register_derived(np.swapaxes, _swapaxes, uses=(transpose,))
register_derived(np.moveaxis, _moveaxis, uses=(transpose,))
if hasattr(np, "permute_dims"):
    # In NumPy 2 np.permute_dims is np.transpose itself: the entry only adds the name to the listing.
    register_derived(np.permute_dims, _transpose_handler, uses=(transpose,), name="np.permute_dims")
register_derived(np.matrix_transpose, lambda x: _swapaxes(x, -1, -2), uses=(transpose,)) \
    if hasattr(np, "matrix_transpose") else None

# ---------------------------------------------------------------------------
# broadcast_to: its reverse rule sums over the broadcast axes
# ---------------------------------------------------------------------------


def _broadcast_impl(x, shape):
    return np.broadcast_to(x, shape)


broadcast_to = primitive("broadcast_to", _broadcast_impl)
STRUCTURES[broadcast_to] = Moves()


def _broadcast_vjp(ans, x, shape):
    from ._util import unbroadcast

    xshape = np.shape(x)
    return lambda g: unbroadcast(g, xshape)


def _broadcast_jvp(ans, x, shape):
    from ._util import expand

    xshape = np.shape(x)
    return lambda t: expand(t, xshape, tuple(shape))


broadcast_to.defvjp(_broadcast_vjp)
broadcast_to.defjvp(_broadcast_jvp)
SAMPLE_RULES[broadcast_to] = NOT_SEPARABLE
SHIFT_FORMS[broadcast_to] = "move"


def _broadcast_handler(array, shape, subok=False):
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if np.shape(array) == shape:
        return array
    return broadcast_to(array, shape)


def _broadcast_to(array, shape, subok=False):
    # NumPy's result is a read-only view, of the same shape too: a write into it is an error there.
    # Rules call np.broadcast_to on traced values as well, so the same shape records nothing: the
    # result is a second traced array for the same value, read-only.
    out = _broadcast_handler(array, shape)
    if type(out) is Tracer:
        if out is array:
            out = Tracer(array._value, array._node, array._idx, array._trace)
            out._base = array
        mark_read_only(out, "the result of np.broadcast_to is read-only, as in NumPy (its elements share memory); "
                            "write into a copy instead (np.broadcast_to(x, shape).copy())")
    return out


register(np.broadcast_to, _broadcast_to, prims=(broadcast_to,))


def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return tuple(_broadcast_handler(a, shape) for a in args)


register_derived(np.broadcast_arrays, _broadcast_arrays, uses=(broadcast_to,))


# ---------------------------------------------------------------------------
# tile and repeat: a broadcast between two reshapes (per-element repeats are a gather)
# ---------------------------------------------------------------------------
def _tile(A, reps):
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    shape = np.shape(A)
    d = max(len(reps), len(shape))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    if all(r == 1 for r in reps):
        return np.copy(_reshape_handler(A, shape))  # np.tile returns a copy, never the input
    # Copy number r of axis i is the outer index of the pair (r_i, n_i), as in np.tile.
    interleaved = tuple(v for n in shape for v in (1, n))
    wide = tuple(v for r, n in zip(reps, shape) for v in (r, n))
    return _reshape_handler(_broadcast_handler(_reshape_handler(A, interleaved), wide),
                            tuple(r * n for r, n in zip(reps, shape)))


def _repeat(a, repeats, axis=None):
    from .indexing import getitem

    if axis is None:
        a, ax = _reshape_handler(a, (-1,)), 0
    else:
        ax = int(axis) % max(np.ndim(a), 1)
    shape = np.shape(a)
    counts = np.asarray(repeats)
    if counts.size != 1:
        return getitem(a, (slice(None),) * ax + (np.repeat(np.arange(shape[ax]), counts),))
    r = int(counts.reshape(-1)[0])
    if r == 1:
        return np.copy(a)
    lifted = _reshape_handler(a, shape[: ax + 1] + (1,) + shape[ax + 1:])
    wide = _broadcast_handler(lifted, shape[: ax + 1] + (r,) + shape[ax + 1:])
    return _reshape_handler(wide, shape[:ax] + (shape[ax] * r,) + shape[ax + 1:])


register_derived(np.tile, _tile, uses=(reshape, broadcast_to))
register_derived(np.repeat, _repeat, uses=(reshape, broadcast_to),
                 notes="per-element repeats are a gather; an int repeat is a broadcast")


_AXIS_ERROR = getattr(np, "exceptions", np).AxisError


def _rollaxis(a, axis, start=0):
    nd = np.ndim(a)
    axis = axis_index(axis, nd)
    start = operator.index(start)
    start = start + nd if start < 0 else start
    if not 0 <= start <= nd:
        raise _AXIS_ERROR(f"'start' arg requires {-nd} <= start < {nd + 1}, but {start} was passed in")
    return _moveaxis(a, axis, start - 1 if axis < start else start)


def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    lines = []
    for i, x in enumerate(xi):
        shape = [1] * nd
        shape[i] = -1
        if indexing == "xy" and nd > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        lines.append(_reshape_handler(x, tuple(shape)))
    if sparse:
        return tuple(lines)
    full = np.broadcast_shapes(*(np.shape(v) for v in lines))
    return tuple(np.broadcast_to(v, full) for v in lines)


register_derived(np.rollaxis, _rollaxis, uses=(transpose,))
register_derived(np.meshgrid, _meshgrid, uses=(reshape, broadcast_to))
if hasattr(np, "unstack"):
    register_derived(np.unstack, lambda x, /, *, axis=0: tuple(_moveaxis(x, axis, 0)), uses=(transpose,))
