"""NumPy functions that read shapes or produce integer/boolean results: no derivative flows."""

from __future__ import annotations

import numpy as np

from ..registry import family, register
from ..tracer import guarded, peek

family("metadata")


def _on_primal(func):
    def handler(*args, **kwargs):
        return guarded(func, *args, **kwargs)
    return handler


# Shapes are the same at every replay of a recording (its inputs' shapes are part of its key):
# reading them needs no guard.
register(np.shape, lambda a: a.shape if hasattr(a, "shape") else np.shape(peek(a)), kind="nondiff")
register(np.ndim, lambda a: a.ndim if hasattr(a, "ndim") else np.ndim(peek(a)), kind="nondiff")
register(np.size, lambda a, axis=None: np.size(peek(a), axis), kind="nondiff")
for _f in (np.argmax, np.argmin, np.argsort, np.nonzero, np.flatnonzero, np.count_nonzero, np.any, np.all,
           np.isclose, np.allclose, np.array_equal, np.searchsorted, np.iscomplexobj, np.isrealobj,
           np.isreal, np.iscomplex, np.argwhere, np.result_type, np.can_cast, np.min_scalar_type,
           np.digitize, np.unravel_index, np.ravel_multi_index, np.lexsort, np.linalg.matrix_rank):
    try:
        register(_f, _on_primal(_f), kind="nondiff", notes="integer or boolean result: no derivative")
    except TypeError:
        pass
