"""Rules for np.emath (numpy.lib.scimath) where its results stay real: sqrt of non-negative inputs."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ..core import user_site
from ..registry import family, register_derived
from ..tracer import guarded

family("elementwise")


def _any_negative(x) -> bool:
    return bool(np.any(np.asarray(x) < 0))


def _emath_sqrt(x):
    # NumPy's answer at a negative input is complex; jaccli differentiates real functions only.
    if guarded(_any_negative, x):
        raise UnsupportedOperationError("np.emath.sqrt of a negative input is complex, which jaccli does not "
                                        "differentiate; for real results use np.sqrt on non-negative values",
                                        user_site(2))
    return np.sqrt(x)


register_derived(np.emath.sqrt, _emath_sqrt, name="np.emath.sqrt",
                 notes="as np.sqrt, for non-negative inputs (a negative one is an error: NumPy's result is complex)")
