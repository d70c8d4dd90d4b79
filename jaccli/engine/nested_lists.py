"""Lists of traced values as NumPy would make arrays of them: their shape, or why they have none."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserFunctionError

__all__ = ["refuse_ragged"]

# NumPy's limit on an array's dimensions (NPY_MAXDIMS: 64 since NumPy 2, 32 before)
_MAX_DIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def _nested_shape(obj: Any, depth: int = 0) -> tuple[int, ...] | str:
    """The shape np.array would give a (nested) list or tuple of arrays and numbers, or why it has none."""
    if not isinstance(obj, (list, tuple)):
        return tuple(obj.shape) if hasattr(obj, "shape") else np.shape(obj)  # (a traced array has a shape)
    if depth >= _MAX_DIMS:
        return f"it nests lists more than {_MAX_DIMS} deep, and a NumPy array has at most {_MAX_DIMS} dimensions"
    shapes = []
    for item in obj:
        shape = _nested_shape(item, depth + 1)
        if isinstance(shape, str):
            return shape
        if shapes and shape != shapes[0]:
            return (f"it is ragged: its items have shapes {shapes[0]} and {shape}, and an array's items have one "
                    "shape (NumPy refuses it too); give them one shape, or join them with np.concatenate")
        shapes.append(shape)
    return (len(obj),) + (shapes[0] if shapes else ())


def refuse_ragged(obj: Any, what: str, site: tuple[str, int] | None) -> None:
    """Raise a UserFunctionError (at `site`) when the list or tuple `obj` (`what`: "a list f returned") is no array."""
    shape = _nested_shape(obj)
    if isinstance(shape, str):
        raise UserFunctionError(f"{what} cannot be an array: {shape}", site)
