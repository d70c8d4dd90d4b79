"""NumPy functions that read shapes or produce integer/boolean results: no derivative flows."""

from __future__ import annotations

import numpy as np

from ..registry import family, register
from ..tracer import Tracer, guarded, peek

family("metadata")


def _on_primal(func):
    def handler(*args, **kwargs):
        if not any(_holds_traced(a) for a in args):
            return guarded(func, *args, **kwargs)
        # A sequence of traced arrays (np.lexsort's keys): its members are guarded one by one.
        sizes = [len(a) if _holds_traced(a) else None for a in args]
        flat = [e for a, n in zip(args, sizes) for e in (a if n is not None else (a,))]

        def call(*values):
            rebuilt, k = [], 0
            for a, n in zip(args, sizes):
                rebuilt.append(type(a)(values[k:k + n]) if n is not None else values[k])
                k += 1 if n is None else n
            return func(*rebuilt, **kwargs)
        return guarded(call, *flat)
    return handler


def _holds_traced(a) -> bool:
    return type(a) in (list, tuple) and any(isinstance(e, Tracer) for e in a)


# Shapes are the same at every replay of a recording (its inputs' shapes are part of its key):
# reading them needs no guard.
register(np.shape, lambda a: a.shape if hasattr(a, "shape") else np.shape(peek(a)), kind="nondiff")
register(np.ndim, lambda a: a.ndim if hasattr(a, "ndim") else np.ndim(peek(a)), kind="nondiff")
register(np.size, lambda a, axis=None: np.size(peek(a), axis), kind="nondiff")


def _indices_from(func):
    # NumPy's own function on a stand-in of the same shape (no memory): its checks and its results.
    return lambda arr, k=0: func(np.broadcast_to(np.zeros((), dtype=bool), np.shape(arr)), k)


for _f in (np.triu_indices_from, np.tril_indices_from):
    register(_f, _indices_from(_f), kind="nondiff", notes="integer index arrays from the shape: no derivative")
for _f in (np.argmax, np.argmin, np.nanargmax, np.nanargmin, np.argsort, np.nonzero, np.flatnonzero,
           np.count_nonzero, np.any, np.all, np.isclose, np.allclose, np.array_equal, np.searchsorted,
           np.iscomplexobj, np.isrealobj, np.isreal, np.iscomplex, np.argwhere, np.result_type, np.can_cast,
           np.min_scalar_type, np.digitize, np.unravel_index, np.ravel_multi_index, np.lexsort,
           np.linalg.matrix_rank, np.argpartition):
    try:
        register(_f, _on_primal(_f), kind="nondiff", notes="integer or boolean result: no derivative")
    except TypeError:
        pass
