"""Rules for np.emath (numpy.lib.scimath) where its results stay real: sqrt and the logs of non-negative
inputs, power of a non-negative base, arccos, arcsin and arctanh of inputs in [-1, 1]."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..registry import family, register_derived
from ..tracer import guarded

family("elementwise")


def _any_negative(*xs) -> bool:
    return any(bool(np.any(np.asarray(x) < 0)) for x in xs)


def _any_beyond_one(x) -> bool:
    return bool(np.any(np.abs(np.asarray(x)) > 1))


def _complex(name: str, where: str, instead: str) -> UnsupportedOperationError:
    # NumPy's answer there is complex; jaccli differentiates real functions only.
    return UnsupportedOperationError(f"np.emath.{name} of {where} is complex, which jaccli does not differentiate; "
                                     f"for real results use {instead}", user_site(3))


# The inputs where NumPy's answer is complex: (what they are, the real domain, the note in 'jaccli ops').
_DOMAINS = {
    _any_negative: ("a negative input", "non-negative values",
                    "for non-negative inputs (a negative one is an error: NumPy's result is complex)"),
    _any_beyond_one: ("an input outside [-1, 1]", "values in [-1, 1]",
                      "for inputs in [-1, 1] (one outside is an error: NumPy's result is complex)"),
}


def _register_real(func: np.ufunc, complex_at) -> None:
    """np.emath.NAME(x) is np.NAME(x) where NumPy's answer is real, and an error naming it elsewhere."""
    name = func.__name__
    where, domain, notes = _DOMAINS[complex_at]

    def emath(x):
        if guarded(complex_at, x):
            raise _complex(name, where, f"np.{name} on {domain}")
        return func(x)

    register_derived(getattr(np.emath, name), emath, name=f"np.emath.{name}", notes=f"as np.{name}, {notes}")


_register_real(np.sqrt, _any_negative)
_register_real(np.log, _any_negative)
_register_real(np.log2, _any_negative)
_register_real(np.log10, _any_negative)
_register_real(np.arccos, _any_beyond_one)
_register_real(np.arcsin, _any_beyond_one)
_register_real(np.arctanh, _any_beyond_one)


def _emath_logn(n, x):
    if guarded(_any_negative, n, x):
        raise _complex("logn", "a negative input or base", "np.log(x) / np.log(n) on non-negative values")
    return np.log(x) / np.log(n)  # NumPy's own formula, so the values are NumPy's


register_derived(np.emath.logn, _emath_logn, name="np.emath.logn",
                 notes="np.log(x) / np.log(n), for non-negative x and n (a negative one is an error: NumPy's "
                       "result is complex)")


def _emath_power(x, p):
    # NumPy's answer is complex for a negative base, whatever the exponent.
    if guarded(_any_negative, x):
        raise _complex("power", "a negative base", "np.power, which stays real for a negative base with an "
                       "integer exponent")
    return np.power(x, p)


register_derived(np.emath.power, _emath_power, name="np.emath.power",
                 notes="as np.power, for a non-negative base (a negative one is an error: NumPy's result is complex)")
