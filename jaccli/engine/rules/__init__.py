"""Derivative rules for NumPy, one module per family; importing this package fills the registry."""

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
    fft,
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

from ..handlers import OPTIONAL_RULES as _OPTIONAL_RULES  # noqa: E402
from .scipy_installer import ScipyRules  # noqa: E402

_OPTIONAL_RULES.append(scipy_special.install_for)  # SciPy's rules, once f's module imports scipy.special
_SCIPY_MODULES = (ScipyRules("scipy.linalg", "scipy_linalg"), ScipyRules("scipy.signal", "scipy_signal"),
                  ScipyRules("scipy.stats", "scipy_stats"))
_OPTIONAL_RULES.extend(rules.install_for for rules in _SCIPY_MODULES)  # and scipy.linalg, .signal, .stats
_OPTIONAL_RULES.append(polynomials.install_for)  # numpy.polynomial's classes, once f's module imports them
complex_forms.install()  # over the handlers every module above registered


def every_rule() -> dict:
    """The registry with every rule in it, SciPy's too when SciPy is installed (whose rules otherwise wait
    until f's module imports scipy.special, scipy.linalg, ...): for listing what jaccli supports."""
    from ..registry import REGISTRY

    scipy_special.install()
    for rules in _SCIPY_MODULES:
        rules.install()
    return REGISTRY
