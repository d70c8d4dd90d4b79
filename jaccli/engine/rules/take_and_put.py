"""Rules for the functions that take or put elements at positions NumPy's own function computes: take,
take_along_axis, delete, insert, compress, extract, resize and choose (one gather), and the in-place
writers put, putmask, place, fill_diagonal, copyto and put_along_axis (functional updates)."""

from __future__ import annotations

import inspect

import numpy as np

from ...errors import TracingError
from ..user_sites import user_site
from ..registry import family, register_derived
from ..handlers import INTERNAL
from ..tracer import Tracer, guarded
from ._util import dtype_of
from .indexing import gather, get_basic, getitem, positions, rearrange

family("indexing")


def _take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None:
        raise TracingError("np.take(..., out=...) writes into an existing array; write `y = np.take(...)` "
                           "instead", user_site(2))
    if axis is None:
        a, ax = np.reshape(a, (-1,)), 0
    else:
        ax = int(axis) % max(np.ndim(a), 1)
    idx = np.asarray(indices)
    n = np.shape(a)[ax]
    if mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    return getitem(a, (slice(None),) * ax + (idx,))


def _take_along_axis(arr, indices, axis=-1):
    if axis is None:
        arr, axis = np.reshape(arr, (-1,)), 0
    return rearrange(arr, np.take_along_axis(positions(np.shape(arr)), np.asarray(indices), axis))


register_derived(np.take, _take, uses=(get_basic, gather),
                 notes="repeated indices accumulate; mode='wrap'/'clip' act on the indices")
register_derived(np.take_along_axis, _take_along_axis, uses=(gather,), notes="repeated indices accumulate")


# NumPy's own function, applied to element positions instead of values, says where every element of
# the result comes from; a condition or selector that is traced is a plain value of the recording.
def _plain(x):
    return guarded(np.asarray, x) if isinstance(x, Tracer) else np.asarray(x)


def _delete(arr, obj, axis=None):
    return rearrange(arr, np.delete(positions(np.shape(arr)), _index(obj), axis))


def _index(obj):
    """An index argument as NumPy takes it (a slice or int stays one); a traced one as a plain value."""
    return _plain(obj) if isinstance(obj, Tracer) else obj


def _insert(arr, obj, values, axis=None):
    if not isinstance(values, Tracer):
        values = np.asarray(values, dtype=dtype_of(arr))
    n = int(np.prod(np.shape(arr), dtype=np.int64))
    # Positions of values' elements as -1, -2, ...: NumPy broadcasts them as it would the values.
    marked = np.insert(positions(np.shape(arr)), _index(obj), -1 - positions(np.shape(values)), axis)
    source = np.where(marked >= 0, marked, n - 1 - marked)
    both = np.concatenate([np.reshape(arr, (-1,)), np.reshape(values, (-1,))])
    return rearrange(both, source)


def _compress(condition, a, axis=None, out=None):
    return rearrange(a, np.compress(_plain(condition), positions(np.shape(a)), axis))


def _extract(condition, arr):
    return rearrange(arr, np.extract(_plain(condition), positions(np.shape(arr))))


def _resize(a, new_shape):
    return rearrange(a, np.resize(positions(np.shape(a)), new_shape))


def _choose(a, choices, out=None, mode="raise"):
    shape = np.broadcast_shapes(np.shape(a), *(np.shape(c) for c in choices))
    size = int(np.prod(shape, dtype=np.int64))
    marked = np.choose(_plain(a), [positions(shape) + k * size for k in range(len(choices))], mode=mode)
    flat = [np.reshape(np.broadcast_to(c, shape), (-1,)) for c in choices]
    return rearrange(np.concatenate(flat), marked)


_PLACES = "a gather of the positions NumPy's own function gives"
register_derived(np.delete, _delete, uses=(gather,), notes=_PLACES)
register_derived(np.insert, _insert, uses=(gather,), notes=_PLACES)
register_derived(np.compress, _compress, uses=(gather,), notes=_PLACES + "; the condition is a plain value")
register_derived(np.extract, _extract, uses=(gather,), notes=_PLACES + "; the condition is a plain value")
register_derived(np.resize, _resize, uses=(gather,), notes=_PLACES + ": repeated elements accumulate")
register_derived(np.choose, _choose, uses=(gather,), notes=_PLACES + "; the selector is a plain value")


# ---------------------------------------------------------------------------
# NumPy's in-place writers (np.put, putmask, place, fill_diagonal, copyto, put_along_axis). Into a
# traced array they are functional updates, like x[idx] = v: NumPy's own function, run on a marker
# array, says which element of the values lands where (with its cyclic repetition and modes).
# ---------------------------------------------------------------------------
def _write(a, marker, values):
    written = marker >= 0
    if not isinstance(values, Tracer):
        values = np.asarray(values)
    picked = rearrange(values, np.where(written, marker, 0))
    if dtype_of(picked) != dtype_of(a):
        picked = INTERNAL["astype"](picked, dtype_of(a))  # NumPy casts what it writes to a's dtype
    a._become(np.where(written, picked, a), written)


def _in_place(func, values: str, write_marker):
    """A handler for NumPy's in-place writer `func`: a traced target is updated; a plain one is NumPy's
    business (a traced value written into it escapes the recording, with the usual error).

    `values` names func's parameter holding what is written; `write_marker(marker, given)` runs func
    on the marker (positions of the values instead of the values), with func's other arguments by name.
    """
    signature = inspect.signature(func)
    target = next(iter(signature.parameters))

    def handler(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)  # NumPy's own TypeError for a wrong call
        bound.apply_defaults()
        given = bound.arguments
        a = given[target]
        if not isinstance(a, Tracer):
            for name, value in given.items():
                if isinstance(value, Tracer):
                    given[name] = np.asarray(value)  # raises the escape error
            return func(*bound.args, **bound.kwargs)
        v = given[values]
        marker = np.full(np.shape(a), -1, dtype=np.intp)
        write_marker(marker, {**given, values: positions(np.shape(v))})
        _write(a, marker, v)
    return handler


def _put(m, g):
    np.put(m, _plain(g["ind"]), g["v"], mode=g["mode"])


def _putmask(m, g):
    np.putmask(m, _plain(g["mask"]), g["values"])


def _place(m, g):
    np.place(m, _plain(g["mask"]), g["vals"])


def _fill_diagonal(m, g):
    np.fill_diagonal(m, g["val"] if np.ndim(g["val"]) else g["val"].item(), wrap=g["wrap"])


def _put_along_axis(m, g):
    np.put_along_axis(m, _plain(g["indices"]), g["values"], g["axis"])


def _copyto(m, g):
    np.copyto(m, np.broadcast_to(g["src"], np.shape(m)), where=_plain(g["where"]))


_copy_into = _in_place(np.copyto, "src", _copyto)


def _checked_copyto(dst, src, casting="same_kind", where=True):
    if isinstance(dst, Tracer) and not np.can_cast(dtype_of(src), dtype_of(dst), casting=casting):
        raise TypeError(f"Cannot cast array data from {dtype_of(src)!r} to {dtype_of(dst)!r} according to the "
                        f"rule {casting!r}")
    return _copy_into(dst, src, casting=casting, where=where)


_WRITES = "into a traced array: a functional update, as x[idx] = v (the last write wins)"
register_derived(np.put, _in_place(np.put, "v", _put), uses=(gather,), notes=_WRITES)
register_derived(np.putmask, _in_place(np.putmask, "values", _putmask), uses=(gather,), notes=_WRITES)
register_derived(np.place, _in_place(np.place, "vals", _place), uses=(gather,), notes=_WRITES)
register_derived(np.fill_diagonal, _in_place(np.fill_diagonal, "val", _fill_diagonal), uses=(gather,), notes=_WRITES)
register_derived(np.copyto, _checked_copyto, uses=(gather,), notes=_WRITES)
register_derived(np.put_along_axis, _in_place(np.put_along_axis, "values", _put_along_axis), uses=(gather,),
                 notes=_WRITES)
