"""Per-primitive structure: which elements of its arguments each element of its result depends on.

A primitive's rules file declares its structure beside it (`facts.STRUCTURES[prim] = Reduces()`);
elementwise primitives say it with `Primitive.structure`, constants and zero derivatives by their
flags. Sparsity detection (jaccli.sparse.detection) interprets the structures over a recording.
"""

from __future__ import annotations

from typing import Any

from .tape import ELEMENTWISE
from .facts import STRUCTURES


class _Structure:
    """Immutable, equal when of one class with equal fields, shown as `Reduces(axes_at=2, arg=0)`: what
    frozen dataclasses would give, without the ~0.25 ms each of them costs every process at import."""

    kind = ""
    _fields: tuple[str, ...] = ()

    def __init__(self, *values: Any) -> None:
        for name, value in zip(self._fields, values):
            object.__setattr__(self, name, value)

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        return self._values() == other._values() if type(other) is type(self) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self._values()))})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")


class Elementwise(_Structure):
    """Element k of the result depends on element k of each argument, broadcast to the result."""

    kind = "elementwise"


class Moves(_Structure):
    """Each element of the result is one element of one argument, or a constant: the
    implementation run on element ids says which (reshape, transpose, indexing, concatenate)."""

    kind = "moves"


class Reduces(_Structure):
    """Element g of the result depends on the elements of argument `arg` (and of the arguments
    broadcast with it) that the reduction over the axes at argument `axes_at` puts in group g."""

    kind = "reduces"
    _fields = ("axes_at", "arg")
    axes_at: int
    arg: int

    def __init__(self, axes_at: int = 1, arg: int = 0) -> None:
        super().__init__(axes_at, arg)


class Cumulates(_Structure):
    """Element i along the axis (at argument `axis_at`) depends on elements 0..i of its line."""

    kind = "cumulates"
    _fields = ("axis_at",)
    axis_at: int

    def __init__(self, axis_at: int = 1) -> None:
        super().__init__(axis_at)


class Scatters(_Structure):
    """scatter_add(v, flat, n): element p of the result gathers the elements k of v with flat[k] = p."""

    kind = "scatters"


class Contracts(_Structure):
    """A matrix product: through the nonzeros of a constant factor, or both factors when traced."""

    kind = "contracts"


class Normalizes(_Structure):
    """Element i depends on every element of its group: those that the reduction over the axes at
    argument `axes_at` would sum with it (softmax along axes)."""

    kind = "normalizes"
    _fields = ("axes_at",)
    axes_at: int

    def __init__(self, axes_at: int = 1) -> None:
        super().__init__(axes_at)


class Dense(_Structure):
    """Every element of the result may depend on every element of every traced argument."""

    kind = "dense"


class Constant(_Structure):
    """The result depends on no argument (zeros_like, or a zero derivative such as floor's)."""

    kind = "constant"


_ELEMENTWISE, _CONSTANT = Elementwise(), Constant()


def structure_of(prim: Any) -> Any:
    """prim's structure: Elementwise for elementwise primitives, Constant for constants and zero
    derivatives, else its row in facts.STRUCTURES (None: unknown, which detection takes as dense)."""
    if prim.constant or prim.zero_grad or prim.nondiff:
        return _CONSTANT
    if prim.structure == ELEMENTWISE:
        return _ELEMENTWISE
    return STRUCTURES.get(prim)
