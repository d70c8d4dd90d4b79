"""A compiled program's steps simplified before they are written out: what changes no number, left out.

A traced sweep records every NumPy call its rules make, some of which give back what they were
given: a reshape of a cotangent to the shape it has (P3-n100's sweep made six, each a Python call
of its own), a multiplication by a tangent of ones (ones_seeded). `simplified` leaves them out,
reading what the traced sweep noted of each value (its shape and dtype), so that the program
computes the same numbers in fewer calls; and joins the pieces that a chain of concatenations joins in
one (`joins_flattened`). A forward replay's steps call a primitive's implementation,
a Python function around a NumPy call that looks at its arguments each time: `faster_step` calls
NumPy directly where the recording shows what that function would find (P3-n100's replay: five).
"""

from __future__ import annotations

from typing import Any

import math
import operator

import numpy as np

from jaccli.engine import WRITES_ARGUMENT

from .codegen import STEP
from .ones_seeded import all_ones, rewritten


def simplified(steps: list, loads: dict, results: list, ones: dict, nodes: Any, prims: dict) -> tuple:
    """(steps, loads, results) of a traced sweep, simplified: rewritten for its seeds of ones where it can be
    (ones_seeded), its reshapes to a value's own shape left out (`without_reshapes`). `nodes`: the traced
    sweep's (compiled_sweeps._Lean: the recording's nodes, then its `meta`); `prims`: slot -> the primitive
    of the step that makes it."""
    if nodes.meta is None:  # (a long sweep: see compiled_sweeps._META_UP_TO)
        return steps, loads, results
    meta = dict(nodes.meta)
    for slot, (source, _) in loads.items():
        v = nodes[slot].value if source == "vals" else None
        if type(v) is np.ndarray or isinstance(v, np.generic):
            meta[slot] = (v.shape, v.dtype)
    if ones:
        got = rewritten(steps, loads, results, ones, meta)
        if got is not None:
            return got  # (NumPy's ufuncs alone: no reshape in it)
    steps, results = without_reshapes(steps, results, meta, prims)
    return direct_calls(joins_flattened(steps, results, meta, prims), meta, prims), loads, results


def without_reshapes(steps: list, results: list, meta: dict, prims: dict) -> tuple:
    """(steps, results) with each reshape of a value to its own shape and dtype left out, and each product
    of a value by a constant of ones that keeps its shape and dtype, their readers reading the value itself. Not in a program that writes into its arguments' memory (an addition into
    a sum it owns: the sum and a view of it would then be one array), nor for a value it hands out
    (the caller may own and recycle a result: a view of the recording's value stays a view)."""
    if any(p in WRITES_ARGUMENT for p in prims.values()):
        return steps, results
    handed_out = _read_by(results)
    alias: dict[int, int] = {}
    out = []
    for step in steps:
        k, fn, args, fills, kwargs, state, expected = step
        if alias and any(slot in alias for _, slot, _ in fills):
            fills = tuple((i, alias.get(slot, slot), index) for i, slot, index in fills)
            step = (k, fn, args, fills, kwargs, state, expected)
        given = _given_back(step, prims.get(k)) if expected is STEP and k not in handed_out else None
        if given is not None and k in meta and meta.get(given) == meta[k]:
            alias[k] = given
            continue
        out.append(step)
    return (out, results) if alias else (steps, results)


def joins_flattened(steps: list, results: list, meta: dict, prims: dict) -> list:
    """`steps` with each concatenation that only another one along the same axis reads made part of it: one
    np.concatenate of all their pieces, which copies each piece once (P3-n100's sweep joined its Hessian's
    entries in three, each copying what the one before made). Only where every piece has one dtype: the
    result's, however they are grouped (NumPy's promotion of mixed ones is not associative)."""
    reads: dict[int, int] = {}
    for step in steps:
        for _, slot, _ in step[3]:
            reads[slot] = reads.get(slot, 0) + 1
    for slot in _read_by(results):
        reads[slot] = reads.get(slot, 0) + 2
    joins: dict[int, tuple] = {}  # slot -> its step, a join of pieces of one dtype
    merged: set[int] = set()
    out = []
    for step in steps:
        k, fn, args, fills, kwargs, state, expected = step
        if expected is not STEP or getattr(prims.get(k), "name", None) != "np.concatenate":
            out.append(step)
            continue
        inner = {i: joins[slot] for i, slot, index in fills
                 if index is None and reads.get(slot) == 1 and slot in joins and joins[slot][4] == kwargs}
        if inner:
            pieces, placed = [], []
            filled = {i: (slot, index) for i, slot, index in fills}
            for i, a in enumerate(args):
                part = ((a,), {0: filled[i]} if i in filled else {}) if i not in inner else \
                    (inner[i][2], {p: (slot, index) for p, slot, index in inner[i][3]})
                for p, piece in enumerate(part[0]):
                    if p in part[1]:
                        placed.append((len(pieces),) + part[1][p])
                    pieces.append(piece)
            joined = (k, fn, tuple(pieces), tuple(placed), kwargs, state, expected)
            if _one_dtype(joined, meta):
                merged.update(joins[slot][0] for i, slot, _ in fills if i in inner)
                step = joined
        if _one_dtype(step, meta):
            joins[k] = step
        out.append(step)
    return [step for step in out if step[0] not in merged or step[6] is not STEP] if merged else steps


def direct_calls(steps: list, meta: dict, prims: dict) -> list:
    """`steps` with a primitive's implementation replaced by the NumPy call it makes where the notes of the
    values it reads show which one (plain arrays, their sizes): a gather's take along the last axis below the
    size it rotates from, a reshape's, a join's concatenation (its axis first, no keyword).
    Each was a Python call or two around the NumPy one (P3-n100's sweep: three gathers, two joins, a reshape)."""
    out = []
    for step in steps:
        k, fn, args, fills, kwargs, state, expected = step
        name = getattr(prims.get(k), "name", None) if expected is STEP else None
        if name is not None and fills and all(index is None and slot in meta for _, slot, index in fills):
            # (the notes of what it reads first, where that is an array of one axis or more: a NumPy scalar, which
            # the notes do not tell from a 0-d array, has no ndarray methods)
            first = meta[fills[0][1]] if fills[0][0] == 0 and meta[fills[0][1]][0] else None
            if name == "gather" and first is not None and not kwargs and len(args) == 2 \
                    and math.prod(first[0]) < _TAKE_BELOW:
                step = (k, np.ndarray.take, args + (-1,), fills, kwargs, state, expected)
            elif name == "reshape" and first is not None and not kwargs and len(args) == 2:
                step = (k, np.ndarray.reshape, args, fills, kwargs, state, expected)
            elif name == "np.concatenate" and list(kwargs) == ["axis"]:
                fills = tuple((i + 1, slot, index) for i, slot, index in fills)
                step = (k, _joined, (kwargs["axis"],) + args, fills, {}, state, expected)
        out.append(step)
    return out


def _joined(axis: int, *pieces: np.ndarray) -> np.ndarray:
    """np.concatenate(pieces, axis) of plain arrays, called with no keyword (what the primitive's implementation
    works out on every call is known when the program is compiled)."""
    return np.concatenate(pieces, axis)


def _one_dtype(step: tuple, meta: dict) -> bool:
    """Whether every piece a join's step reads (the values it fills in, its constant arrays) has one dtype."""
    k, fn, args, fills, kwargs, state, expected = step
    filled = {i for i, _, _ in fills}
    kinds = {meta[slot][1] if slot in meta and index is None else None for _, slot, index in fills}
    kinds.update(a.dtype if type(a) is np.ndarray else None for i, a in enumerate(args) if i not in filled)
    return len(kinds) == 1 and None not in kinds


def _given_back(step: tuple, prim: Any) -> int | None:
    """The slot whose value a step gives back, to the bit, where its result has that value's shape and dtype:
    a reshape's argument, or a product's other factor where one is a constant of ones; else None."""
    k, fn, args, fills, kwargs, state, expected = step
    if kwargs or not fills or any(index is not None for _, _, index in fills):
        return None
    if getattr(prim, "name", None) == "reshape" and len(fills) == 1 and fills[0][0] == 0:
        return fills[0][1]
    if fn is np.multiply and len(args) == 2 and len(fills) == 1 and _ones(args[1 - fills[0][0]]):
        return fills[0][1]  # (x * 1 is x, NaN and infinities too, where the product keeps x's dtype and shape)
    return None


def _ones(c: Any) -> bool:
    """Whether a constant is a real float one, or an array of them (its first entry looked at first: most are not)."""
    if type(c) is float:
        return c == 1.0
    if type(c) is np.ndarray:
        return all_ones(c)
    return isinstance(c, np.floating) and c == 1


def _read_by(results: list) -> set[int]:
    read = {r[1] for r in results if r is not None and r[0] == "slot"}
    read.update(p[1] for r in results if r is not None and r[0] == "block" for p in r[2]
                if p is not None and p[0] == "slot")
    return read


def faster_step(node: Any, step: tuple) -> tuple:
    """A forward replay's step of `node` calling NumPy directly where the recorded arguments show what its
    primitive's implementation does with them (the same call on the same types and shapes, which a replay
    keeps): x[i] of a basic index that gives an array, a reshape or sum of an array, a basic index's
    scatter-add into an array (its result dtype made once), its scatter into zeros (a small result's shape, dtype
    and layout made once). Else `step` as it is."""
    k, fn, args, fills, kwargs, state, expected = step
    name, a = node.prim.name, node.args
    if kwargs or expected is not STEP or not a or type(a[0]) is not np.ndarray:
        return step
    if name == "getitem" and type(node.value) is np.ndarray and node.value.ndim and len(args) == 2:
        return k, operator.getitem, (None, (Ellipsis,) + args[1]), fills, kwargs, state, expected
    if name == "reshape" and len(args) == 2:
        return k, np.ndarray.reshape, args, fills, kwargs, state, expected
    if name == "np.sum" and len(args) == 3:
        return k, np.add.reduce, (None, args[1], None, None, args[2]), fills, kwargs, state, expected
    if name == "scatter_into" and len(args) == 3 and type(a[1]) is np.ndarray:
        index, dtype = (Ellipsis,) + args[2], np.result_type(a[0], a[1])
        return k, _added_at, (None, None, index, dtype), fills, kwargs, state, expected
    z = node.value
    if name == "scatter" and len(args) == 3 and type(z) is np.ndarray and z.nbytes < _SMALL_BLOCK:
        order = "F" if z.flags.f_contiguous and not z.flags.c_contiguous else "C"
        return k, _scattered, (None, (Ellipsis,) + args[1], z.shape, z.dtype, order), fills, kwargs, state, expected
    return step


# A gather of fewer numbers is a take (from its _ROTATE_FROM on, rules/indexing.py's may copy a rotation as two
# slices instead: the same numbers, faster on large blocks)
_TAKE_BELOW = 4096



# A replay's scatter of a result of fewer bytes makes its zeros itself: a larger one is the sweeps' memory to recycle
# or offer (rules._util.zero_block, which its primitive calls)
_SMALL_BLOCK = 1 << 16


def _scattered(v: Any, index: tuple, shape: tuple, dtype: np.dtype, order: str) -> np.ndarray:
    """scatter's zeros of x's shape with v at x[index], in the shape, dtype and layout it made when recorded
    (its primitive's implementation works them out from its arguments on every call: 1.8 us of 2.2, P3-n100)."""
    z = np.zeros(shape, dtype, order)
    z[index] = v
    return z


def _added_at(acc: np.ndarray, v: Any, index: tuple, dtype: np.dtype) -> np.ndarray:
    """scatter_into's acc + v at x[index]'s positions, its dtype found when the replay was compiled."""
    out = np.array(acc, dtype=dtype, copy=True)
    out[index] += v
    return out
