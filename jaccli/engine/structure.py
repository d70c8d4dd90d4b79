"""Per-primitive structure: which elements of its arguments each element of its result depends on.

A primitive's rules file declares its structure beside it (`facts.STRUCTURES[prim] = Reduces()`);
elementwise primitives say it with `Primitive.structure`, constants and zero derivatives by their
flags. Sparsity detection (jaccli.sparse.detection) interprets the structures over a recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .tape import ELEMENTWISE
from .facts import STRUCTURES


@dataclass(frozen=True)
class Elementwise:
    """Element k of the result depends on element k of each argument, broadcast to the result."""

    kind = "elementwise"


@dataclass(frozen=True)
class Moves:
    """Each element of the result is one element of one argument, or a constant: the
    implementation run on element ids says which (reshape, transpose, indexing, concatenate)."""

    kind = "moves"


@dataclass(frozen=True)
class Reduces:
    """Element g of the result depends on the elements of argument `arg` (and of the arguments
    broadcast with it) that the reduction over the axes at argument `axes_at` puts in group g."""

    axes_at: int = 1
    arg: int = 0
    kind = "reduces"


@dataclass(frozen=True)
class Cumulates:
    """Element i along the axis (at argument `axis_at`) depends on elements 0..i of its line."""

    axis_at: int = 1
    kind = "cumulates"


@dataclass(frozen=True)
class Scatters:
    """scatter_add(v, flat, n): element p of the result gathers the elements k of v with flat[k] = p."""

    kind = "scatters"


@dataclass(frozen=True)
class Contracts:
    """A matrix product: through the nonzeros of a constant factor, or both factors when traced."""

    kind = "contracts"


@dataclass(frozen=True)
class Normalizes:
    """Element i depends on every element of its group: those that the reduction over the axes at
    argument `axes_at` would sum with it (softmax along axes)."""

    axes_at: int = 1
    kind = "normalizes"


@dataclass(frozen=True)
class Dense:
    """Every element of the result may depend on every element of every traced argument."""

    kind = "dense"


@dataclass(frozen=True)
class Constant:
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
