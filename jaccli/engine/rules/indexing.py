"""Rules for indexing: x[idx] (basic and advanced), in-place assignment, and their transposes.

Basic indices (ints, slices, Ellipsis, None) act on views and stay views. Advanced indices
(integer arrays, lists, boolean masks) become a gather of flat positions, precomputed once,
so that repeated indices accumulate and a leading block axis never moves.
"""

from __future__ import annotations

import numpy as np

from ...errors import TracingError
from ..user_sites import user_site
from ..facts import COPIES_SUM, NOT_SEPARABLE, SAMPLE_RULES, SHIFT_FORMS, STRUCTURES
from ..structure import Moves, Scatters
from ..registry import family, primitive, register
from ..seed_ops import assign_on_block, getitem_on_block, scatter_add_on_block, scatter_on_block
from ..seeds import SparseBlock, distinct_positions
from ._util import dtype_of, shape_of, unbroadcast, zero_block

family("indexing")


def _is_basic(idx: tuple) -> bool:
    for i in idx:
        if i is None or i is Ellipsis or isinstance(i, slice):
            continue
        if isinstance(i, (bool, np.bool_)):
            return False
        if isinstance(i, (int, np.integer)):
            continue
        return False
    return True


def _full_basic(idx: tuple, ndim: int) -> tuple:
    """A basic index spelled out for every axis, so it applies to the trailing axes of a block."""
    used = sum(1 for i in idx if i is not None and i is not Ellipsis)
    out = []
    seen_ellipsis = False
    for i in idx:
        if i is Ellipsis:
            if not seen_ellipsis:
                out.extend([slice(None)] * (ndim - used))
                seen_ellipsis = True
        else:
            out.append(int(i) if isinstance(i, np.integer) else i)
    if not seen_ellipsis:
        out.extend([slice(None)] * (ndim - used))
    return tuple(out)


# ---------------------------------------------------------------------------
# Basic indexing on the trailing axes, and its transpose
# ---------------------------------------------------------------------------
def _get_basic(x, idx):
    out = x[(Ellipsis,) + idx]
    if type(out) is np.ndarray and out.ndim == 0:
        # One element (y[1], A[i, j]): NumPy gives a scalar, a copy, where the Ellipsis form gives a
        # view; as a copy, a later write to y leaves it as it was (y[0], y[1] = y[1], y[0]). (getitem
        # makes it a 0-d array again where the user's index holds an Ellipsis, as NumPy does.)
        return out[()]
    return out


def _scatter_basic(v, idx, shape):
    lead = np.shape(v)[: np.ndim(v) - len(np.empty(shape, dtype=bool)[idx].shape)]
    # x[i] of a vector: the cotangent block (K, n) in column order, so that the loop's later x[j] add
    # contiguous columns of K, not one element per row
    order = "F" if len(shape) == 1 and len(lead) == 1 and type(idx[0]) is int else "C"
    z = zero_block(tuple(lead) + tuple(shape), np.result_type(v, np.float32), order)
    z[(Ellipsis,) + idx] = v
    return z


def _covered(shape: tuple, idx: tuple) -> tuple:
    """The trailing axes of `shape` that idx indexes (x may carry leading block axes: a rule's x)."""
    used = sum(1 for i in idx if i is not None)
    return tuple(shape[len(shape) - used:])


get_basic = primitive("getitem", _get_basic)
get_basic.value_free = True  # the rules read x's shape only
get_basic.sparse = getitem_on_block
scatter_basic = primitive("scatter", _scatter_basic)
STRUCTURES[get_basic] = STRUCTURES[scatter_basic] = Moves()
scatter_basic.sparse = scatter_on_block
get_basic.defvjp(lambda ans, x, idx: (lambda g: scatter_basic(g, idx, _covered(shape_of(x), idx))))
get_basic.defjvp(lambda ans, x, idx: (lambda t: get_basic(t, idx)))
scatter_basic.defvjp(lambda ans, v, idx, shape: (lambda g: get_basic(g, idx)))
scatter_basic.defjvp(lambda ans, v, idx, shape: (lambda t: scatter_basic(t, idx, shape)))


def _samples_getitem(node, B) -> bool:
    """x[:, ...] keeps samples apart: a full basic index whose first entry takes all of axis 0."""
    idx = node.args[1]
    return bool(idx) and idx[0] == slice(None) and np.shape(node.value)[:1] == (B,)


SAMPLE_RULES.update({get_basic: _samples_getitem, scatter_basic: NOT_SEPARABLE})
SHIFT_FORMS[get_basic] = "move"


def _scatter_into(acc, v, idx):
    """acc + scatter(v at idx): a copy of acc with v added at x[idx]'s positions (basic: each once)."""
    out = np.array(acc, dtype=np.result_type(acc, v), copy=True)
    out[(Ellipsis,) + idx] += v
    return out


scatter_into = primitive("scatter_into", _scatter_into)
STRUCTURES[scatter_into] = Moves()
SAMPLE_RULES[scatter_into] = NOT_SEPARABLE
scatter_into.defvjp(lambda ans, acc, v, idx: (lambda g: g), lambda ans, acc, v, idx: (lambda g: get_basic(g, idx)))


def _scatter_into_jvp(ans, acc, v, idx):
    shape = _covered(np.shape(ans), idx)

    def rule(ts):
        t_acc, t_v = ts[0], ts[1]
        if t_v is None:
            return t_acc
        if t_acc is None:
            return scatter_basic(t_v, idx, shape)
        if type(t_acc) is SparseBlock or type(t_v) is SparseBlock:
            return t_acc + scatter_basic(t_v, idx, shape)  # structured blocks stay structured
        return scatter_into(t_acc, t_v, idx)
    return rule


scatter_into.jvp_joint = _scatter_into_jvp
get_basic.vjp_into = lambda acc, g, idx: scatter_into(acc, g, idx)
COPIES_SUM.add(scatter_into)


def _add_basic(acc, g, idx):
    """acc[..., idx] += g in place, when that is the same sum as scatter_into (see Primitive.vjp_add)."""
    if type(g) is not np.ndarray or g.ndim > acc.ndim or (g.dtype != acc.dtype and np.result_type(acc, g) != acc.dtype):
        return False
    acc[(Ellipsis,) + idx] += g
    return True


get_basic.vjp_add = _add_basic


# ---------------------------------------------------------------------------
# Gather of flat positions on the last axis, and its transpose (repeated positions add up)
# ---------------------------------------------------------------------------
def _gather(x, flat):
    if type(x) is not np.ndarray:
        return np.take(x, flat, axis=-1)
    if x.size >= _ROTATE_FROM and type(flat) is np.ndarray and not flat.flags.writeable:
        shift = _shift_of(flat, x.shape[-1])
        if shift is not None:
            return _rotated(x, shift)
    # (ndarray.take: np.take's wrapper and dispatch cost a microsecond, and a sweep transposes every roll)
    return x.take(flat, axis=-1)


# A gather whose positions rotate the last axis (np.roll's, and their inverse a sweep gathers by) copies
# it as two slices: on a block of K rows, a fraction of take's per-element indexing (100 x 100: 2.3 us
# against 4.7; 10 x 10^4: 14 against 52); below these sizes take is as fast or faster.
_ROTATE_FROM, _ROTATE_AXIS = 4096, 64
# id of a read-only position array -> (it, the length of the axis it rotates or -1, the shift)
_SHIFTS: dict[int, tuple] = {}


def _shift_of(flat: np.ndarray, n: int) -> int | None:
    """s where the read-only positions `flat` are (j + s) % n for j < n, one cyclic shift of an axis of length n
    at least _ROTATE_AXIS long; None otherwise."""
    known = _SHIFTS.get(id(flat))
    if known is None or known[0] is not flat:
        if len(_SHIFTS) > 256:
            _SHIFTS.clear()
        m, shift = flat.size, None
        if flat.ndim == 1 and m >= _ROTATE_AXIS and 0 < flat[0] < m \
                and np.array_equal(flat, (np.arange(m) + int(flat[0])) % m):
            shift = int(flat[0])
        known = _SHIFTS[id(flat)] = (flat, m if shift is not None else -1, shift)
    return known[2] if known[1] == n else None


def _rotated(x: np.ndarray, shift: int) -> np.ndarray:
    """x.take((arange(n) + shift) % n, axis=-1), for 0 < shift < n: the same values in a new C-ordered array."""
    n = x.shape[-1]
    out = np.empty(x.shape, dtype=x.dtype)
    out[..., :n - shift] = x[..., shift:]
    out[..., n - shift:] = x[..., :shift]
    return out


def _scatter_flat(v, flat, n):
    if type(v) is np.ndarray and flat.ndim == 1 and v.dtype.kind in "fc" and v.dtype.itemsize >= 4 \
            and not flat.flags.writeable:
        known = _DISTINCT.get(id(flat))
        if known is not None and known[0] is flat and known[1] == n and known[3] is not None:
            return _gather(v, known[3])  # (below's permutation case, known: a sweep transposes every roll)
    lead = np.shape(v)[: np.ndim(v) - flat.ndim]
    vv = np.reshape(v, tuple(lead) + (flat.size,))
    pos = flat.reshape(-1)
    distinct, inverse = _distinct(flat, pos, n)
    if inverse is not None:  # a permutation (np.roll's): its transpose is the gather by the inverse, no zeros
        dtype = vv.dtype if vv.dtype.kind in "fc" and vv.dtype.itemsize >= 4 else np.result_type(v, np.float32)
        return _gather(vv, inverse).astype(dtype, copy=False)
    z = np.zeros(tuple(lead) + (n,), dtype=np.result_type(v, np.float32))
    if distinct:
        z[..., pos] = vv
    else:
        np.add.at(z, (Ellipsis, pos), vv)
    return z


# id of a read-only position array -> (it, n, whether its positions are distinct, the inverse permutation
# where they are one): a gather by the same positions (np.roll's, shared by every step of an integrator)
# is transposed many times in a sweep
_DISTINCT: dict[int, tuple] = {}


def _distinct(flat: np.ndarray, pos: np.ndarray, n: int) -> tuple[bool, np.ndarray | None]:
    if flat.flags.writeable or type(flat) is not np.ndarray:
        return distinct_positions(pos, n), None
    known = _DISTINCT.get(id(flat))
    if known is not None and known[0] is flat and known[1] == n:
        return known[2], known[3]
    if len(_DISTINCT) > 256:
        _DISTINCT.clear()
    distinct = distinct_positions(pos, n)
    inverse = None
    if distinct and pos.size == n:
        inverse = np.empty(n, dtype=np.intp)
        inverse[np.where(pos < 0, pos + n, pos)] = np.arange(n)
        inverse.flags.writeable = False
    _DISTINCT[id(flat)] = (flat, n, distinct, inverse)
    return distinct, inverse


gather = primitive("gather", _gather)
gather.value_free = True
scatter_flat = primitive("scatter_add", _scatter_flat)
STRUCTURES[gather] = Moves()
STRUCTURES[scatter_flat] = Scatters()
scatter_flat.sparse = scatter_add_on_block


def _gather_vjp(ans, x, flat):
    n = shape_of(x)[-1]
    # (a plain block takes scatter_flat's implementation, as bind would: every step of an integrator rolls)
    return lambda g: _scatter_flat(g, flat, n) if type(g) is np.ndarray else scatter_flat(g, flat, n)


gather.defvjp(_gather_vjp)
gather.defjvp(lambda ans, x, flat: (lambda t: gather(t, flat)))
scatter_flat.defvjp(lambda ans, v, flat, n: (lambda g: gather(g, flat)))
scatter_flat.defjvp(lambda ans, v, flat, n: (lambda t: scatter_flat(t, flat, n)))
SAMPLE_RULES.update({gather: NOT_SEPARABLE, scatter_flat: NOT_SEPARABLE})
SHIFT_FORMS[gather] = "move"


def _normalize(idx) -> tuple:
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if hasattr(i, "_node"):
            raise TracingError("a traced (differentiated) value was used as an index; index with plain "
                               "integers, slices or integer/boolean arrays", user_site(3))
        if isinstance(i, list):
            i = np.asarray(i)
        if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu":
            i = int(i)
        out.append(i)
    return tuple(out)


def flat_positions(shape: tuple, idx: tuple) -> np.ndarray:
    """For each element of x[idx], its flat position in x (precomputed once per index)."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.intp).reshape(shape)[idx]


# _full_basic of one int, by the number of axes of x: the commonest index of a loop (x[i]) costs a look-up
_FULL_INT = [(slice(None),) * (n - 1) for n in range(1, 33)]


def getitem(x, idx, frames=0):
    """x[idx]; `frames`: how many frames above this one are jaccli's (Tracer.__getitem__'s: see bind)."""
    shape = shape_of(x)
    if type(idx) is int and 0 < len(shape) <= len(_FULL_INT):
        return get_basic.bind_at((x, (idx,) + _FULL_INT[len(shape) - 1]), frames + 1)
    idx = _normalize(idx)
    if _is_basic(idx):
        out = get_basic.bind_at((x, _full_basic(idx, len(shape))), frames + 1)
        if not shape_of(out) and any(i is Ellipsis for i in idx):
            return np.copy(out)  # one number: NumPy's 0-d array with '...' (x[..., 0]), a scalar without
        return out
    flat = flat_positions(shape, idx)
    return gather(np.reshape(x, (-1,)), flat)


def _assign_impl(x, v, idx):
    """A copy of x with x[..., idx] = v (idx basic, on the trailing axes); x's dtype when inexact, as NumPy."""
    dtype = x.dtype if x.dtype.kind in "fc" else np.result_type(x, v, np.float32)
    out = np.array(x, dtype=dtype, copy=True)
    out[(Ellipsis,) + idx] = v
    return out


def _assign_in_place(x, v, idx):
    """assign in x's own memory: the part of x written (a view) and its new values, for bind to write."""
    return x[(Ellipsis,) + idx], v


assign = primitive("assign", _assign_impl)
STRUCTURES[assign] = Moves()
assign.value_free = True  # the rules read shapes only
assign.in_place = _assign_in_place
assign.sparse = assign_on_block
SAMPLE_RULES[assign] = NOT_SEPARABLE


def _assign_vjp_x(ans, x, v, idx):
    return lambda g: assign(g, 0.0, idx)


def _assign_vjp_v(ans, x, v, idx):
    shape = shape_of(v)
    return lambda g: unbroadcast(get_basic(g, idx), shape)


def _assign_jvp_joint(ans, x, v, idx):
    x_shape, v_shape = np.shape(x), np.shape(v)
    target = np.empty(x_shape, dtype=bool)[(Ellipsis,) + idx].shape  # idx indexes the trailing axes

    def rule(ts):
        t_x, t_v = ts[0], ts[1]
        if t_v is None:
            return assign(t_x, 0.0, idx)
        k = shape_of(t_v)[0]
        t_v = _aligned(t_v, v_shape, len(target))
        base = np.zeros((k,) + tuple(x_shape), dtype=dtype_of(ans)) if t_x is None else t_x
        return assign(base, t_v, idx)
    return rule


def _aligned(t_v, v_shape: tuple, ndim: int):
    """The tangent block of v, written into an x[idx] of `ndim` axes: where v broadcasts over it,
    its axes line up after the block axis."""
    if len(v_shape) >= ndim:
        return t_v
    return np.reshape(t_v, (shape_of(t_v)[0],) + (1,) * (ndim - len(v_shape)) + tuple(v_shape))


def _assign_vjp_x_in_place(g, v, idx):
    g[(Ellipsis,) + idx] = 0.0


def _assign_jvp_in_place(t_x, ts, v, idx):
    t_v = ts[0]
    part = t_x[(Ellipsis,) + idx]
    if t_v is None:
        part[...] = 0.0
        return
    part[...] = _aligned(t_v, np.shape(v), part.ndim - 1)


assign.defvjp(_assign_vjp_x, _assign_vjp_v)
assign.jvp_joint = _assign_jvp_joint
assign.vjp_in_place = _assign_vjp_x_in_place
assign.jvp_in_place = _assign_jvp_in_place


def _one_element(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A writable array of any shape in the memory of one element: every index reaches that one."""
    return np.ndarray(shape, dtype, np.empty(1, dtype=dtype), strides=(0,) * len(shape))  # (as_strided, in C)


_NO_BYTES = np.dtype([])  # (an array of it holds no memory, whatever its shape)


def _as_written(x, v, idx: tuple):
    """v as NumPy writes it into x[idx]: its leading length-1 axes past x[idx]'s dropped, as NumPy
    drops them (y[:2] = w of shape (1, 2)). Where NumPy refuses v (a shape that does not broadcast,
    a sequence into one element of a float array), NumPy's own error: an array of x's shape and
    dtype is written with one of v's, so that NumPy decides, as it does for plain arrays. Both in
    one element's memory, and x[idx]'s dimensions read from an array that holds none: O(1)
    memory, whatever the sizes of x and v (a row written into a large array, in a loop)."""
    v_shape = shape_of(v)
    if not v_shape:  # one value: nothing to drop, and no shape NumPy refuses (a loop of element writes)
        return v
    _one_element(shape_of(x), dtype_of(x))[idx] = _one_element(v_shape, dtype_of(v))
    extra = len(v_shape) - np.empty(shape_of(x), dtype=_NO_BYTES)[idx].ndim
    return np.reshape(v, v_shape[extra:]) if extra > 0 else v


def setitem(x, v, idx, frames=0):
    """x with x[idx] replaced by v: a functional update (the last write wins for repeated indices);
    `frames` as getitem's."""
    shape = shape_of(x)
    if type(idx) is int and 0 < len(shape) <= len(_FULL_INT):
        return assign.bind_at((x, _as_written(x, v, (idx,)), (idx,) + _FULL_INT[len(shape) - 1]), frames + 1)
    idx = _normalize(idx)
    v = _as_written(x, v, idx)
    if _is_basic(idx) and not any(i is None for i in idx):
        # One copy of x with the part written, and rules that touch only that part of a seed:
        # a loop of element writes costs O(size) per write, not a mask, a where and a scatter.
        return assign(x, v, _full_basic(idx, len(shape)))
    flat = flat_positions(shape, idx)
    target_shape = np.shape(flat)
    v = np.broadcast_to(v, target_shape) if np.shape(v) != target_shape else v
    pos = flat.reshape(-1)
    mask = np.zeros(int(np.prod(shape, dtype=np.int64)), dtype=bool)
    mask[pos] = True
    kept = np.where(mask.reshape(shape), 0.0, x)
    if not distinct_positions(pos, mask.size):
        # Keep only the last write to each position, as NumPy's assignment does.
        _, last_from_end = np.unique(pos[::-1], return_index=True)
        keep = np.sort(pos.size - 1 - last_from_end)
        vals = gather(np.reshape(v, (-1,)), keep)
        pos = pos[keep]
    else:
        vals = np.reshape(v, (-1,))
    return kept + np.reshape(scatter_flat(vals, pos, mask.size), shape)


register("getitem", getitem, prims=(get_basic, gather), name="x[idx]",
         notes="basic and advanced indexing; repeated indices accumulate")
register("setitem", setitem, prims=(scatter_flat, assign), kind="derived", name="x[idx] = v",
         notes="a functional update: the traced array becomes the updated one; the last write wins")


# ---------------------------------------------------------------------------
# Rearrangements as one gather of precomputed flat positions
# ---------------------------------------------------------------------------
def positions(shape: tuple) -> np.ndarray:
    """The flat position of every element of an array of `shape`."""
    return np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.intp).reshape(shape)


def rearrange(x, pos: np.ndarray):
    """``x.ravel()[pos]``: any copy-out of x whose element positions are known in advance.

    NumPy computes `pos` by applying the function to `positions(x.shape)` (np.roll, np.diagonal,
    np.take_along_axis of the argsort...), so its semantics are NumPy's own.
    """
    flat = x if len(shape_of(x)) == 1 else np.reshape(x, (-1,))
    return gather(flat, np.asarray(pos, dtype=np.intp))
