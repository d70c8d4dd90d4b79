"""Derivative rules for NumPy, one module per family; importing this package fills the registry."""

from . import creation, elementwise, indexing, meta, products, reductions, shape  # noqa: F401
