"""Derivative rules for NumPy, one module per family; importing this package fills the registry.

np.fft's rules (fft.py) wait for numpy.fft, which NumPy 2 loads at the first use of np.fft: a process
whose f never transforms loads neither (~1.5 ms of every `jaccli jacobian` process). np.linalg's own
functions' rules (linalg*.py) wait for f's first call of one of them (~1.5 ms more).
"""

from . import elementwise  # noqa: F401,I001 - first: its primitives are registered before those built on them

from . import (  # noqa: F401
    bessel,
    complex_forms,
    complex_parts,
    composed_ufuncs,
    creation,
    cumulative,
    diagonals,
    einsum,
    emath,
    functional,
    indexing,
    joining,
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

import importlib  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

from ..handlers import OPTIONAL_RULES as _OPTIONAL_RULES  # noqa: E402
from ..registry import family as _family  # noqa: E402
from .scipy_installer import ScipyRules  # noqa: E402


def _install_fft(func: Any) -> bool:
    """np.fft's rules: with None (before f runs) once numpy.fft is loaded, or for `func` of numpy.fft
    (a function with no rule, met while f runs); whether they were installed for `func`."""
    if _FFT in _loaded:
        return False
    if func is None and "numpy.fft" not in sys.modules:
        return False
    if func is not None and not str(getattr(func, "__module__", "")).startswith("numpy.fft"):
        return False
    _load(_FFT)
    return func is not None


def _install_linalg(func: Any) -> bool:
    """np.linalg's rules: for `func` of numpy.linalg (a function with no rule, met while f runs), or with
    None (before f runs) when a part of them was imported (engine.SYMMETRIC_PART's module); whether they
    were installed for `func`."""
    if _LINALG in _loaded:
        return False
    if func is None and _LINALG_BASE not in sys.modules:
        return False
    if func is not None and getattr(func, "__module__", None) != "numpy.linalg":
        return False
    _load(_LINALG)
    return func is not None


_FFT, _LINALG = ("fft",), ("linalg", "linalg_decomp", "linalg_eig", "linalg_norm")
_LINALG_BASE = f"{__name__}.linalg"  # (imported by each of the others: a part of them includes it)
_loaded: set = set()


def _load(modules: tuple[str, ...]) -> None:
    """Import rules modules that wait, under the complex forms; each module sets its own family, and the
    family set before stays for later registrations."""
    previous = _family("")
    try:
        for name in modules:
            importlib.import_module(f"{__name__}.{name}")
    finally:
        _family(previous)
    complex_forms.install()  # (over their handlers too)
    _loaded.add(modules)


_OPTIONAL_RULES.append(scipy_special.install_for)  # SciPy's rules, once f's module imports scipy.special
_SCIPY_MODULES = (ScipyRules("scipy.linalg", "scipy_linalg"), ScipyRules("scipy.signal", "scipy_signal"),
                  ScipyRules("scipy.stats", "scipy_stats"))
_OPTIONAL_RULES.extend(rules.install_for for rules in _SCIPY_MODULES)  # and scipy.linalg, .signal, .stats
_OPTIONAL_RULES.append(_install_fft)  # np.fft's rules, once numpy.fft is loaded or f calls one of its functions
_OPTIONAL_RULES.append(_install_linalg)  # np.linalg's, once f calls one of its functions
_OPTIONAL_RULES.append(polynomials.install_for)  # numpy.polynomial's classes, once f's module imports them
complex_forms.install()  # over the handlers every module above registered


def load_linalg() -> None:
    """np.linalg's rules now, as f's first call of one of them would load them: for what needs their facts
    before f runs (the functions an expression may call, linalg.norm and the rest, are declared beside them)."""
    if _LINALG not in _loaded:
        _load(_LINALG)


def every_rule() -> dict:
    """The registry with every rule in it, SciPy's too when SciPy is installed (whose rules otherwise wait
    until f's module imports scipy.special, scipy.linalg, ...): for listing what jaccli supports."""
    from ..registry import REGISTRY

    for modules in (_FFT, _LINALG):
        if modules not in _loaded:
            _load(modules)
    scipy_special.install()
    for rules in _SCIPY_MODULES:
        rules.install()
    return REGISTRY
