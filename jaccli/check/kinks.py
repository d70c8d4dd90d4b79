"""Kinks at a point: the recorded ops evaluated where their derivative is a convention."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jaccli.engine import KINK_CROSSINGS, Node, REGISTRY, Recording, peek

__all__ = ["Kink", "find_kinks", "kink_crossed", "kink_masks", "kink_mask", "kinked_nodes",
           "op_at", "registry_notes"]


def registry_notes(prim_name: str) -> str:
    """The documented convention of the registry entry backed by a primitive ("" if none)."""
    entry = REGISTRY.get(prim_name)
    if entry is not None:
        return entry.notes
    for entry in REGISTRY.values():
        if any(p.name == prim_name for p in entry.prims):
            return entry.notes
    return ""


def _site(node: Node) -> tuple[str | None, int | None]:
    return node.site or (None, None)


def op_at(node: Node) -> str:
    file, line = _site(node)
    return f"{node.prim.name} at {file}:{line}" if file else node.prim.name


@dataclass
class Kink:
    """One recorded op evaluated exactly at a kink (abs at 0, a max/min tie, a clip bound, ...).

    `mask` marks the kink elements in the op's output. `rows`, `cols` and `entries` (block name ->
    flat indices) are filled in by a derivative check: the rows that reach a kink element, the columns
    whose step crosses one, and the entries whose value is a convention (rows that reach a kink
    element their column's step crosses; with a batch axis, in the same sample), of which
    `entry_count` has the number and `entries` up to 20.
    """

    op: str
    file: str | None
    line: int | None
    count: int
    node_index: int
    notes: str = ""
    mask: np.ndarray | None = field(default=None, repr=False)
    rows: dict[str, list[int]] = field(default_factory=dict)
    cols: dict[str, list[int]] = field(default_factory=dict)
    entries: dict[str, list[dict]] = field(default_factory=dict)
    entry_count: dict[str, int] = field(default_factory=dict)

    @property
    def site(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "<unknown>"

    def to_dict(self) -> dict:
        """Keys: op, file, line, site ("file:line"), count (kink elements), notes (the convention
        jaccli uses there), rows and cols (block name -> affected row / column indices), entries
        (block name -> up to 20 convention-dependent entries, each ``row``, ``col`` and, with a batch
        axis, ``sample``) and entry_count (block name -> how many there are)."""
        return {"op": self.op, "file": self.file, "line": self.line, "site": self.site, "count": self.count,
                "notes": self.notes, "rows": {k: [int(i) for i in v] for k, v in self.rows.items()},
                "cols": {k: [int(i) for i in v] for k, v in self.cols.items()},
                "entries": {k: [dict(e) for e in v] for k, v in self.entries.items()},
                "entry_count": dict(self.entry_count)}


def kink_mask(node: Node) -> np.ndarray:
    with np.errstate(all="ignore"):
        mask = node.prim.kink(peek(node.value), *[peek(a) for a in node.args], **node.kwargs)
    return np.asarray(mask, dtype=bool)


def kinked_nodes(rec: Recording) -> list[int]:
    """Indices of the ops with kinks that a derivative goes through (`Recording.swept`: not a shift that
    cancels out of the outputs)."""
    swept = rec.swept()
    return [n.index for n in rec.trace.nodes if n.prim.kink is not None and n.index in swept]


def kink_masks(rec: Recording) -> dict[int, np.ndarray]:
    """Node index -> boolean kink mask (in the op's output shape), for every op with kinks that a
    derivative goes through."""
    return {index: kink_mask(rec.trace.nodes[index]) for index in kinked_nodes(rec)}


def kink_crossed(at: Node, moved: Node) -> np.ndarray:
    """Which elements of an op's output (in its shape) cross its kink between two recordings of it, at x
    and a step away (`facts.KINK_CROSSINGS`, declared beside the primitive)."""
    values = [(peek(n.value), *[peek(a) for a in n.args]) for n in (at, moved)]
    with np.errstate(all="ignore"):
        crossed = KINK_CROSSINGS[at.prim](*values)
    return np.broadcast_to(crossed, np.shape(values[0][0]))


def find_kinks(rec: Recording) -> list[Kink]:
    """The ops of `rec` evaluated exactly at a kink, where the derivative is a convention.

    >>> rec = Recording(lambda x: np.abs(x), (np.array([0.0, 1.0]),), (0,))
    >>> [(k.op, k.count) for k in find_kinks(rec)]
    [('np.absolute', 1)]
    """
    out = []
    for index, mask in kink_masks(rec).items():
        if mask.any():
            node = rec.trace.nodes[index]
            file, line = _site(node)
            out.append(Kink(node.prim.name, file, line, int(mask.sum()), index, registry_notes(node.prim.name),
                            mask))
    return out

