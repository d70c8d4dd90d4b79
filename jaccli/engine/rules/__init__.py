"""Derivative rules for NumPy, one module per family; importing this package fills the registry.

np.fft's rules (fft.py) wait for numpy.fft, which NumPy 2 loads at the first use of np.fft: a process
whose f never transforms loads neither (~1.5 ms of every `jaccli jacobian` process).
"""

from . import (  # noqa: F401
    bessel,
    complex_forms,
    complex_parts,
    composed_ufuncs,
    creation,
    cumulative,
    diagonals,
    einsum,
    elementwise,
    emath,
    functional,
    indexing,
    joining,
    linalg,
    linalg_decomp,
    linalg_eig,
    linalg_norm,
    meta,
    moments,
    nan_quantiles,
    numerics,
    piecewise,
    polynomials,
    products,
    reductions,
    reorder,
    scatter,
    scipy_special,
    shape,
    statistics,
    take_and_put,
)

import sys  # noqa: E402
from typing import Any  # noqa: E402

from ..handlers import OPTIONAL_RULES as _OPTIONAL_RULES  # noqa: E402
from ..registry import family as _family  # noqa: E402
from .scipy_installer import ScipyRules  # noqa: E402


def _install_fft(func: Any) -> bool:
    """np.fft's rules: with None (before f runs) once numpy.fft is loaded, or for `func` of numpy.fft
    (a function with no rule, met while f runs); whether they were installed for `func`."""
    if "jaccli.engine.rules.fft" in sys.modules:
        return False
    if func is None and "numpy.fft" not in sys.modules:
        return False
    if func is not None and not str(getattr(func, "__module__", "")).startswith("numpy.fft"):
        return False
    _load_fft()
    return func is not None


def _load_fft() -> None:
    previous = _family("")  # (fft.py sets its own; the family set before stays for later registrations)
    try:
        from . import fft  # noqa: F401  (registers its rules)
    finally:
        _family(previous)


_OPTIONAL_RULES.append(scipy_special.install_for)  # SciPy's rules, once f's module imports scipy.special
_SCIPY_MODULES = (ScipyRules("scipy.linalg", "scipy_linalg"), ScipyRules("scipy.signal", "scipy_signal"),
                  ScipyRules("scipy.stats", "scipy_stats"))
_OPTIONAL_RULES.extend(rules.install_for for rules in _SCIPY_MODULES)  # and scipy.linalg, .signal, .stats
_OPTIONAL_RULES.append(_install_fft)  # np.fft's rules, once numpy.fft is loaded or f calls one of its functions
_OPTIONAL_RULES.append(polynomials.install_for)  # numpy.polynomial's classes, once f's module imports them
complex_forms.install()  # over the handlers every module above registered


def every_rule() -> dict:
    """The registry with every rule in it, SciPy's too when SciPy is installed (whose rules otherwise wait
    until f's module imports scipy.special, scipy.linalg, ...): for listing what jaccli supports."""
    from ..registry import REGISTRY

    _load_fft()
    scipy_special.install()
    for rules in _SCIPY_MODULES:
        rules.install()
    return REGISTRY
