"""A reverse sweep's cotangent store: the sums of what a node's consumers send back, added in place where the sweep owns them."""

from __future__ import annotations

from typing import Any

import numpy as np

from .seeds import SparseBlock
from .traced_in_place import block_sum, dense_block
from .tracer import Tracer


class _PendingSum:
    """Entry-sparse blocks gathered for one node, joined once when the sum is read or grows dense.

    Adding them pairwise would join all entries so far at each step: O(n^2) for n parts.
    """

    __slots__ = ("parts", "entries", "rank")

    def __init__(self, parts: list) -> None:
        self.parts = parts
        self.entries = sum(p.idx.shape[1] for p in parts)
        self.rank = sum(p.rank for p in parts)

    def add(self, block: SparseBlock) -> None:
        self.parts.append(block)
        self.entries += block.idx.shape[1]
        self.rank += block.rank

    def join(self, owned: dict) -> Any:
        if self.parts[0].too_many(self.entries, self.rank):
            out = dense_block(self.parts[0], owned)  # (traced parts, compiled: dense in one step, see block_sum)
            if type(out) is Tracer:
                for part in self.parts[1:]:
                    out = block_sum(out, part, owned)
                return out
        out = SparseBlock.sum_of(self.parts)
        if type(out) is np.ndarray:
            owned[id(out)] = out  # made here: later parts add into it in place
        return out


def _add(old: Any, value: Any, owned: dict) -> Any:
    """old + value for a cotangent store; a sum the sweep owns is added to in place.

    A node with many consumers (x[i] read in a loop, the pieces of a long np.stack) gathers one
    cotangent per consumer. A fresh sum for each would cost O(size) per consumer, quadratic in
    all; into a sum the sweep made itself, an entry-sparse block adds only its entries.
    """
    if old is None:
        return value
    if type(old) is _PendingSum:
        if type(value) is SparseBlock and value.shape == old.parts[0].shape:
            old.add(value)
            return old.join(owned) if old.parts[0].too_many(old.entries, old.rank) else old
        old = old.join(owned)
    elif type(old) is SparseBlock and type(value) is SparseBlock and old.shape == value.shape:
        return _PendingSum([old, value])
    if (type(value) is SparseBlock and type(old) is Tracer) or (type(old) is SparseBlock and type(value) is Tracer):
        out = block_sum(old, value, owned)  # (a compiled sweep's: see traced_in_place)
        if out is not NotImplemented:
            return out
    if owned.get(id(old)) is old:  # a sum this sweep made and has not handed to a rule: added to in place
        if type(value) is np.ndarray and (value.dtype == old.dtype or np.result_type(old, value) == old.dtype) \
                and (value.shape == old.shape or np.broadcast_shapes(old.shape, value.shape) == old.shape):
            np.add(old, value, out=old)
            return old
        if type(value) is SparseBlock and value.shape == old.shape and np.result_type(old, value.dtype) == old.dtype \
                and not value.traced:
            value.add_into(old)
            return old
    if type(old) is np.ndarray and type(value) is SparseBlock and value.shape == old.shape and not value.traced \
            and np.result_type(old, value.dtype) == old.dtype:
        out = old.copy()  # (rather than old + value, which makes value dense first)
        value.add_into(out)
    else:
        out = old + value
    if type(out) is np.ndarray:
        owned[id(out)] = out
    return out


def _accumulate(store: dict, node: Node, idx: int | None, n_out: int, value: Any, owned: dict) -> None:
    if idx is None:
        store[node] = _add(store.get(node), value, owned)
        return
    slots = store.get(node)
    if slots is None:
        slots = store[node] = [None] * n_out
    slots[idx] = _add(slots[idx], value, owned)


def _taken(g: Any, owned: dict) -> tuple[Any, bool]:
    """A node's cotangent g, just popped from the store: from here on rules see it, and it is no
    longer the sweep's to change. Also returns whether the sweep owned it (a sum it made,
    referenced from nowhere else)."""
    kind = type(g)
    if kind is _PendingSum:
        g = g.join(owned)
    elif kind is list:
        g = [p.join(owned) if type(p) is _PendingSum else p for p in g]
        for part in g:
            owned.pop(id(part), None)
        return g, False
    return g, owned.pop(id(g), None) is g if owned else False
