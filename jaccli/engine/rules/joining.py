"""Rules for joining, splitting and padding arrays: concatenate, stack, split, pad and their relatives."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..facts import NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES, allow_in_expressions
from ..structure import Moves
from ..registry import family, primitive, register, register_derived
from ..seeds import SparseBlock
from ..tracer import Tracer
from ..traced_in_place import dense_of
from ._util import axis_index, dtype_of, shape_of
from .indexing import gather, get_basic, getitem, positions, rearrange, scatter_basic
from .shape import reshape

family("joining")


def _concat_impl(*xs, axis):
    return np.concatenate(xs, axis=axis)


concat = primitive("np.concatenate", _concat_impl)
STRUCTURES[concat] = Moves()
SAMPLE_RULES[concat] = NOT_SEPARABLE
concat.value_free = True  # the rules slice and join blocks: a constant part's values are never read


_LAST_OFFSETS: list = [None]  # (weak reference to ans, axis, offsets) of the last join whose rules were made


def _offsets(ans, xs, axis) -> list:
    """Where each piece starts along `axis`, and the end: computed once per join, not once per piece.

    The makers of one node's rules run one after another with the same `ans`, so the last
    answer is kept (weakly: it must not keep a large result alive). Without it, a join of n
    pieces costs O(n^2) in sums of shapes.
    """
    last = _LAST_OFFSETS[0]
    if last is not None and last[0]() is ans and last[1] == axis and len(last[2]) == len(xs) + 1:
        return last[2]
    offsets = [0]
    for x in xs:
        offsets.append(offsets[-1] + np.shape(x)[axis])
    try:
        _LAST_OFFSETS[0] = (weakref.ref(ans), axis, offsets)
    except TypeError:  # a value without weak references: not kept
        pass
    return offsets


def _concat_vjp(i):
    def maker(ans, *xs, axis):
        offsets = _offsets(ans, xs, axis)
        start, stop = offsets[i], offsets[i + 1]
        index = (slice(start, stop),) + (slice(None),) * (np.ndim(ans) - axis - 1)
        return lambda g: get_basic(g, index)
    return maker


def _concat_vjp_joint(ans, *xs, axis):
    """Every piece's cotangent: its slice of g. A structured g of many pieces is made dense first
    (once, not once per piece: the stack of n scalars' seeds are one entry per seed, and a slice
    of a dense block is a view), where that costs less than slicing it per piece."""
    offsets = _offsets(ans, xs, axis)
    lead = (slice(None),) * (axis + 1)
    # a vector joined: its pieces are slices of g's columns, each one contiguous run in column order
    # where in row order it is K strided ones (a stack of 3000 scalars: each piece a column of a
    # 3000 x 3000 block, read element by element a page apart: 40% of its replay)
    order = "F" if np.ndim(ans) == 1 else "C"

    def rule(g):
        if type(g) is SparseBlock and g.size <= _DENSE_PER_PIECE * len(xs):
            g = dense_of(g, ans, order)
        if type(g) is np.ndarray:
            return [g[lead + (slice(offsets[i], offsets[i + 1]),)] for i in range(len(xs))]
        tail = (slice(None),) * (np.ndim(ans) - axis - 1)
        hit = _pieces_hit(g, offsets, axis)
        return [None if hit is not None and not hit[i] else get_basic(g, (slice(offsets[i], offsets[i + 1]),) + tail)
                for i in range(len(xs))]
    return rule


def _pieces_hit(g: Any, offsets: list, axis: int) -> np.ndarray | None:
    """Which pieces g, a structured block of entries alone (no low-rank part) has an entry in, or None (all may).

    A piece without one gets a zero cotangent (None): a Jacobian swept in blocks of K seeds visits
    only the pieces near its block's seeds, not every piece of a long concatenation once per block."""
    if type(g) is not SparseBlock or g.u is not None or type(g.val) is not np.ndarray:
        return None
    coord = g.idx if len(g.inner) == 1 else np.unravel_index(g.idx, g.inner)[axis]
    hit = np.zeros(len(offsets) - 1, dtype=bool)
    hit[np.searchsorted(offsets, coord.reshape(-1), side="right") - 1] = True
    return hit


_DENSE_PER_PIECE = 10_000  # elements of a dense g per piece that cost about what slicing a structured one does


def _concat_jvp_joint(ans, *xs, axis):
    shapes = [np.shape(x) for x in xs]
    dtype = dtype_of(ans)

    def rule(ts):
        k = next(np.shape(t)[0] for t in ts if t is not None)
        parts = [np.zeros((k,) + s, dtype=dtype) if t is None else t for t, s in zip(ts, shapes)]
        return np.concatenate(parts, axis=axis + 1)
    return rule


class _ConcatVjps(dict):
    """Reverse rules for any number of concatenated arrays, made on demand."""

    def get(self, i, default=None):
        return _concat_vjp(i)

    def __bool__(self):
        return True


concat.vjps = _ConcatVjps()
concat.jvp_joint = _concat_jvp_joint
concat.vjp_joint = _concat_vjp_joint


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if axis is None:
        arrays = [np.reshape(a, (-1,)) for a in arrays]
        axis = 0
    nd = np.ndim(arrays[0])
    return concat(*arrays, axis=axis_index(axis, nd))


def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")  # (NumPy's words)
    shape = shape_of(arrays[0])
    if any(shape_of(a) != shape for a in arrays):
        raise ValueError("all input arrays must have the same shape")
    ax = axis_index(axis, len(shape) + 1)
    # the reshape primitive itself, not np.reshape: a stack of many small pieces dispatches no call per piece
    new = shape[:ax] + (1,) + shape[ax:]
    return concat(*[reshape(a, new) for a in arrays], axis=ax)


register(np.concatenate, _concatenate, prims=(concat,))
register_derived(np.stack, _stack, uses=(concat,))


# ---------------------------------------------------------------------------
# The stacking relatives: reshapes (atleast_nd) followed by one concatenate
# ---------------------------------------------------------------------------
def _hstack(tup, *, dtype=None, casting="same_kind"):
    arrays = [np.atleast_1d(a) for a in tup]
    return _concatenate(arrays, axis=0 if np.ndim(arrays[0]) == 1 else 1)


def _vstack(tup, *, dtype=None, casting="same_kind"):
    return _concatenate([np.atleast_2d(a) for a in tup], axis=0)


def _dstack(tup):
    return _concatenate([np.atleast_3d(a) for a in tup], axis=2)


def _column_stack(tup):
    return _concatenate([np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a for a in tup], axis=1)


def _append(arr, values, axis=None):
    if axis is None:
        return _concatenate([np.reshape(arr, (-1,)), np.reshape(values, (-1,))], axis=0)
    return _concatenate([arr, values], axis=axis)


register_derived(np.hstack, _hstack, uses=(reshape, concat))
register_derived(np.vstack, _vstack, uses=(reshape, concat))
allow_in_expressions("concatenate", "stack", "hstack", "vstack")
register_derived(np.dstack, _dstack, uses=(reshape, concat))
register_derived(np.column_stack, _column_stack, uses=(reshape, concat))
register_derived(np.append, _append, uses=(reshape, concat))
if hasattr(np, "row_stack") and np.row_stack is not np.vstack:  # deprecated in NumPy 2.0
    register_derived(np.row_stack, _vstack, uses=(reshape, concat))


def _block(arrays):
    """np.block: NumPy checks the nesting (and gives the result's shape) on placeholders first."""
    def placeholders(x):
        if isinstance(x, list):
            return [placeholders(e) for e in x]
        return x if isinstance(x, tuple) else np.empty(np.shape(x), dtype=bool)

    np.block(placeholders(arrays))  # NumPy's own errors for ragged or empty nesting, tuples, ...

    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) else 0

    def leaves(x):
        return [leaf for e in x for leaf in leaves(e)] if isinstance(x, list) else [x]

    levels = depth(arrays)
    nd = max([levels] + [np.ndim(leaf) for leaf in leaves(arrays)])

    def join(x, level):
        if not isinstance(x, list):
            return np.reshape(x, (1,) * (nd - np.ndim(x)) + np.shape(x))
        return _concatenate([join(e, level + 1) for e in x], axis=level - levels)  # innermost: axis -1
    return join(arrays, 0)


register_derived(np.block, _block, uses=(reshape, concat))


# ---------------------------------------------------------------------------
# Splitting: a list of basic slices (views) along one axis
# ---------------------------------------------------------------------------
def _bounds(n: int, sections, equal: bool) -> list[tuple[int, int]]:
    """(start, stop) of every piece, with np.split's and np.array_split's meaning of `sections`."""
    try:
        points = [0] + [int(i) for i in sections] + [n]
    except TypeError:
        count = int(sections)
        if count <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        if equal and n % count:
            raise ValueError("array split does not result in an equal division") from None
        each, extra = divmod(n, count)
        points = [0]
        for i in range(count):
            points.append(points[-1] + each + (1 if i < extra else 0))
    # Index lists keep Python slice semantics (negative, out of range, decreasing), as in NumPy.
    return list(zip(points[:-1], points[1:]))


def _split_along(ary, sections, axis, equal):
    ax = int(axis) % max(np.ndim(ary), 1)
    lead = (slice(None),) * ax
    return [getitem(ary, lead + (slice(start, stop),))
            for start, stop in _bounds(np.shape(ary)[ax], sections, equal)]


def _split_needing(ndim_min: int, axis: int, name: str):
    def split(ary, indices_or_sections):
        if np.ndim(ary) < ndim_min:
            raise ValueError(f"{name} only works on arrays of {ndim_min} or more dimensions")
        ax = 0 if name == "hsplit" and np.ndim(ary) == 1 else axis
        return _split_along(ary, indices_or_sections, ax, True)
    return split


register_derived(np.split, lambda ary, indices_or_sections, axis=0: _split_along(ary, indices_or_sections,
                                                                                 axis, True),
                 uses=(get_basic,), notes="returns a list of slices of the input")
register_derived(np.array_split, lambda ary, indices_or_sections, axis=0:
                 _split_along(ary, indices_or_sections, axis, False), uses=(get_basic,),
                 notes="returns a list of slices of the input")
register_derived(np.hsplit, _split_needing(1, 1, "hsplit"), uses=(get_basic,))
register_derived(np.vsplit, _split_needing(2, 0, "vsplit"), uses=(get_basic,))
register_derived(np.dsplit, _split_needing(3, 2, "dsplit"), uses=(get_basic,))


# ---------------------------------------------------------------------------
# pad: mode='constant' scatters the input into the middle of the padded constant; the modes that
# copy elements of the input (edge, reflect, symmetric, wrap) are one gather of the positions
# NumPy's own np.pad gives, so every pad_width form and corner case is NumPy's; reflect_type='odd'
# is not a copy, and follows NumPy's loop instead.
# ---------------------------------------------------------------------------
_GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")
_PAD_MODES = ", ".join(repr(m) for m in ("constant",) + _GATHER_MODES)


def _pad_widths(pad_width, shape: tuple) -> np.ndarray:
    """pad_width in any of NumPy's forms as (before, after) for every axis."""
    if isinstance(pad_width, dict):  # {axis: width or (before, after)}, axes not named are not padded
        pairs = [(0, 0)] * len(shape)
        for ax, width in pad_width.items():
            pairs[ax] = (width, width) if np.ndim(width) == 0 else tuple(width)
        pad_width = pairs
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")  # NumPy's check, not a silent truncation
    widths = np.broadcast_to(widths.astype(np.intp), (len(shape), 2))
    if widths.size and widths.min() < 0:
        raise ValueError("index can't contain negative values")
    return widths


def _pad(array, pad_width, mode="constant", **kwargs):
    if isinstance(mode, str) and mode in _GATHER_MODES:
        return _pad_gather(array, pad_width, mode, kwargs)
    if mode != "constant":
        shown = mode if isinstance(mode, str) else getattr(mode, "__name__", repr(mode))
        raise UnsupportedOperationError(f"np.pad with mode={shown!r} is not supported by jaccli; supported modes: "
                                        f"{_PAD_MODES}; see 'jaccli ops'", user_site(2))
    values = kwargs.pop("constant_values", 0)
    if kwargs:
        raise ValueError(f"unsupported keyword arguments for mode 'constant': {set(kwargs)}")
    shape = np.shape(array)
    widths = _pad_widths(pad_width, shape)
    out_shape = tuple(int(n + b + a) for n, (b, a) in zip(shape, widths))
    middle = tuple(slice(int(b), int(b) + n) for n, (b, _) in zip(shape, widths))
    inner = scatter_basic(array, middle, out_shape)
    if type(values) is Tracer:
        if np.ndim(values) != 0:
            raise UnsupportedOperationError("np.pad with traced constant_values is supported for a scalar "
                                            "only; pad with 0 and add the border yourself", user_site(2))
        # The border is 1 where padded and 0 in the middle: values * border is the differentiable border.
        border = np.pad(np.zeros(shape, dtype=dtype_of(inner)), widths, constant_values=1)
        return inner + values * border
    border = np.pad(np.zeros(shape, dtype=dtype_of(inner)), widths, constant_values=values)
    return inner + border if np.any(border) else inner


def _pad_gather(array, pad_width, mode, kwargs):
    if mode in ("reflect", "symmetric") and kwargs == {"reflect_type": "odd"}:
        return _pad_odd(array, pad_width, mode == "symmetric")
    # Any other reflect_type is 'even' in NumPy; other keywords get NumPy's own error here.
    return rearrange(array, np.pad(positions(np.shape(array)), pad_width, mode=mode, **kwargs))


def _mirrored(x, axis: int, start: int, stop: int):
    """Entries start..stop-1 of x along `axis`, last first."""
    return getitem(x, (slice(None),) * axis + (slice(stop - 1, start - 1 if start else None, -1),))


def _pad_odd(array, pad_width, include_edge: bool):
    """reflect_type='odd': 2 * edge - the even reflection, axis after axis, as NumPy computes it.

    'odd' is not a copy of the input, so not one gather: this follows NumPy's loop. A width longer
    than the axis is filled in chunks, each reflected about the edge the last chunk left (so the
    values keep their trend), and a chunk is a whole number of periods of the original axis.
    """
    shape = np.shape(array)
    for axis, (n, (before, after)) in enumerate(zip(shape, _pad_widths(pad_width, shape).tolist())):
        if not (before or after):
            continue
        if n == 0:
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
        if n == 1:  # NumPy's legacy: a single entry is repeated, whatever the reflect_type
            array = rearrange(array, np.repeat(positions(np.shape(array)), before + 1 + after, axis=axis))
            continue
        offset = 1 if include_edge else 0  # symmetric repeats the edge entry; reflect mirrors about it
        lead = (slice(None),) * axis
        while before or after:
            length = np.shape(array)[axis]
            room = length // n * n if include_edge else (length - 1) // (n - 1) * (n - 1)
            pieces = [array]
            if before:
                k = min(room, before)
                edge = getitem(array, lead + (slice(0, 1),))
                pieces.insert(0, 2 * edge - _mirrored(array, axis, 1 - offset, k + 1 - offset))
                before -= k
            if after:
                k = min(room, after)
                edge = getitem(array, lead + (slice(length - 1, length),))
                pieces.append(2 * edge - _mirrored(array, axis, length - 1 + offset - k, length - 1 + offset))
                after -= k
            array = concat(*pieces, axis=axis)
    return array


register_derived(np.pad, _pad, uses=(scatter_basic, gather, get_basic, concat),
                 notes="modes 'constant' (constant_values may be traced if scalar), 'edge', 'reflect' and "
                       "'symmetric' (reflect_type 'even' or 'odd'), 'wrap'; repeated elements accumulate")
