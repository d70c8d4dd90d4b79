"""scipy's compiled greedy column grouping, loaded from its extension file without importing scipy.optimize."""
import glob
import importlib.machinery
import importlib.util
import os
import sys

import numpy as np

_MODULE = "scipy.optimize._group_columns"
_missing = object()
_loaded = _missing


def _load():
    """The extension module, or None. It is private to scipy (Curtis-Powell-Reid grouping used by approx_derivative):
    it is loaded by file so that the ~0.5 s import of the scipy.optimize package is not paid, and any failure (moved,
    renamed, other signature) leaves the pure-NumPy engines of greedy.py, which the tests run as well."""
    if _MODULE in sys.modules:
        return sys.modules[_MODULE]
    try:
        import scipy
        found = glob.glob(os.path.join(os.path.dirname(scipy.__file__), "optimize", "_group_columns.*"))
        found = [path for path in found if path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))]
        if not found:
            return None
        loader = importlib.machinery.ExtensionFileLoader(_MODULE, found[0])
        spec = importlib.util.spec_from_file_location(_MODULE, found[0], loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        # a known answer: two columns sharing row 0, one apart; anything else means the interface changed
        probe = module.group_sparse(2, 3, np.array([0, 0, 1], dtype=np.int64), np.array([0, 1, 2, 3], dtype=np.int64))
        return module if np.array_equal(probe, [0, 1, 0]) else None
    except Exception:  # noqa: BLE001 - any failure of a private interface means: use the NumPy engines
        return None


def group_sparse():
    """scipy's group_sparse(m, n, indices, indptr) (greedy grouping of CSC columns in their order), or None."""
    global _loaded
    if _loaded is _missing:
        module = _load()
        _loaded = None if module is None else module.group_sparse
    return _loaded
