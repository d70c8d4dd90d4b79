"""Rules for NumPy's unbuffered scatters into a traced array: np.add.at, np.subtract.at and
np.multiply.at (repeated indices accumulate), and np.bincount with weights."""

from __future__ import annotations

import numpy as np

from ...errors import TracingError
from ..user_sites import user_site
from ..registry import family, register, register_derived
from ..handlers import INTERNAL
from ..tracer import Tracer
from ._util import dtype_of, in_dtype, loop_dtypes, shape_of
from .elementwise import multiply
from .indexing import gather, positions, scatter_flat
from .joining import concat
from .piecewise import where
from .take_and_put import _index, _plain

family("indexing")


def _into_plain(name: str):
    return TracingError(f"{name} writes a traced value into a plain NumPy array, which takes it out of jaccli's "
                        f"recording; start from a traced array instead (out = np.zeros_like(x), then "
                        f"{name}(out, idx, v))", user_site(3))


# ---------------------------------------------------------------------------
# Scatter-adds: np.add.at / np.subtract.at and np.bincount with weights, the usual way to assemble
# sums over a mesh or a graph.
# ---------------------------------------------------------------------------
def _ufunc_at(sign):
    def handler(a, indices, b=None, /):
        if not isinstance(a, Tracer):
            raise _into_plain("np.add.at" if sign > 0 else "np.subtract.at")
        shape = np.shape(a)
        flat = positions(shape)[_index(indices)]
        size = int(np.prod(shape, dtype=np.int64))
        b = np.broadcast_to(b, np.shape(flat))
        added = np.reshape(scatter_flat(np.reshape(b, (-1,)), flat.reshape(-1), size), shape)
        if dtype_of(added) != dtype_of(a):
            added = INTERNAL["astype"](added, dtype_of(a))
        a._become(a + added if sign > 0 else a - added, _index(indices))
    return handler


def _bincount(x, /, weights=None, minlength=0):
    bins = _plain(x)
    counts = np.bincount(bins, minlength=minlength)  # NumPy's checks (negative or non-integer bins, ...)
    if weights is None:
        return counts
    if np.shape(weights) != np.shape(bins):
        raise ValueError("The weights and list don't have the same length.")
    return scatter_flat(np.reshape(weights, (-1,)), bins.reshape(-1), counts.size)


_SCATTER_NOTES = ("into a traced array: a functional update; repeated indices accumulate (summed before they "
                  "are added, so values agree with NumPy's to rounding)")
register((np.add, "at"), _ufunc_at(1), prims=(scatter_flat,), kind="derived", name="np.add.at",
         notes=_SCATTER_NOTES)
register((np.subtract, "at"), _ufunc_at(-1), prims=(scatter_flat,), kind="derived", name="np.subtract.at",
         notes=_SCATTER_NOTES)
register_derived(np.bincount, _bincount, uses=(scatter_flat,),
                 notes="differentiable in the weights; the bins are plain values")


# ---------------------------------------------------------------------------
# np.multiply.at: each element touched is multiplied by its factors one at a time, in index order,
# as NumPy does (values exact). Step r multiplies the elements with more than r factors by their
# r-th; with those elements first, each step's operands are a prefix of the last's, so the steps
# cost one product per factor, and the rule is made of products only: exact with zeros.
# ---------------------------------------------------------------------------
def _multiply_at(a, indices, b=None, /):
    if not isinstance(a, Tracer):
        raise _into_plain("np.multiply.at")
    shape, dtype = np.shape(a), dtype_of(a)
    stand_in = np.ones(np.shape(b), dtype_of(b)) if isinstance(b, Tracer) else b
    np.multiply.at(np.ones(shape, dtype), _index(indices), stand_in)  # NumPy's own errors (b missing, ...)
    flat = positions(shape)[_index(indices)]
    if flat.size == 0:
        return
    b = b if isinstance(b, Tracer) else np.asarray(b)  # a Python number too: NumPy's ufunc.at makes it an array
    loop = loop_dtypes(np.multiply, (a, b), {})[0]
    factors = np.reshape(np.broadcast_to(in_dtype(b, loop), np.shape(flat)), (-1,))
    order = np.argsort(flat.reshape(-1), kind="stable")  # each element's factors, in index order
    touched, first, counts = np.unique(flat.reshape(-1)[order], return_index=True, return_counts=True)
    most = np.argsort(-counts, kind="stable")
    touched, first, counts = touched[most], first[most], counts[most]
    values = gather(np.reshape(a, (-1,)), touched)
    finished = []
    for r in range(int(counts[0])):
        active = int(np.searchsorted(-counts, -r))  # the elements with more than r factors
        if active < shape_of(values)[0]:
            finished.append(values[active:])
            values = values[:active]
        values = values * gather(factors, order[first[:active] + r])
        if loop != dtype:  # NumPy casts each product back to a's dtype
            values = INTERNAL["astype"](values, dtype)
    values = np.concatenate([values] + finished[::-1]) if finished else values
    size = int(np.prod(shape, dtype=np.int64))
    written = np.zeros(size, dtype=bool)
    written[touched] = True
    updated = np.where(written, scatter_flat(values, touched, size), np.reshape(a, (-1,)))
    a._become(np.reshape(updated, shape), _index(indices))


register((np.multiply, "at"), _multiply_at, prims=(gather, multiply, concat, scatter_flat, where), kind="derived",
         name="np.multiply.at", notes="into a traced array: a functional update; repeated indices multiply one at a "
                                      "time in NumPy's order (values exact); products only: exact with zeros")
