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
    loads = dict(loads)
    steps, results = without_reshapes(steps, results, meta, prims, loads)
    return direct_calls(joins_flattened(steps, results, meta, prims), meta, prims), loads, results


def without_reshapes(steps: list, results: list, meta: dict, prims: dict, loads: dict | None = None) -> tuple:
    """(steps, results) with the steps that change no number left out: each reshape of a value to its own
    shape and dtype, and each product of a value by a constant of ones that keeps its shape and dtype, their
    readers reading the value itself; a chain of reshapes made one (`_simpler`: so are a gather of every
    position in order, a product by ones that only reshapes, a concatenation's empty pieces, a step whose
    value is empty); the steps no result reads any more left out too (and, given `loads`, the loads). Not
    in a program that writes into its arguments' memory (an addition into a sum it owns: the sum and a view
    of it would then be one array). A value it hands out keeps what it was (the caller may own and recycle
    a result): a view of the recording's value stays a view, and a fresh array stays one of its own, copied
    where it would now be a view (`_handed_out_fresh`)."""
    if any(p in WRITES_ARGUMENT for p in prims.values()):
        return steps, results
    handed_out = _read_by(results)
    before = _roots(steps, prims)
    fresh = [type(before.get(slot, ("loaded",))) is not tuple for slot in _result_slots(results)]
    changed = False
    alias: dict[int, int] = {}
    consts: dict[int, Any] = {}
    views: dict[int, int] = {}  # slot -> the array its reshape step views (its chain's first value)
    out = []
    gone: set[int] = set()  # (the slots of alias and consts: a step reading one is refilled)
    for step in steps:
        k, fn, args, fills, kwargs, state, expected = step
        if gone:
            for _, slot, _ in fills:
                if slot in gone:
                    step = _refilled(step, alias, consts)
                    k, fn, args, fills, kwargs, state, expected = step
                    break
        if expected is not STEP:
            out.append(step)
            continue
        keep_view = k in handed_out and type(before.get(k)) is tuple  # (a view of a loaded value, handed out)
        simpler = _simpler(step, prims.get(k), meta, views)
        if simpler is not None and not keep_view:
            if simpler[0] == "alias":
                alias[k] = simpler[1]
                gone.add(k)
                continue
            if simpler[0] == "const":
                consts[k] = simpler[1]
                gone.add(k)
                continue
        if simpler is not None and simpler[0] == "step":
            step, changed = simpler[1], True
        if _is_reshape(step, prims.get(k)) and meta.get(step[3][0][1], ((),))[0]:
            views[k] = views.get(step[3][0][1], step[3][0][1])
        out.append(step)
    if not alias and not consts and not changed:
        return steps, results
    results = [_result_of(r, alias, consts) for r in results]
    out, results = _handed_out_fresh(out, results, fresh, prims)
    out = _live(out, results)
    if loads is not None:
        read = {slot for st in out for _, slot, _ in st[3]} | _read_by(results)
        for slot in [s for s in loads if s not in read]:
            del loads[slot]
    return out, results


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
    size it rotates from, a reshape's, a sum's, max's or min's reduction (as a forward replay's: faster_step),
    a join's concatenation (its axis first, no keyword). Each was a Python call or two around the NumPy one
    (P3-n100's sweep: three gathers, two joins, a reshape; P6's: a sum over the axis of one entry of a column,
    which stays a sum: NumPy's of a -0.0 alone is 0.0)."""
    out = []
    for step in steps:
        k, fn, args, fills, kwargs, state, expected = step
        prim = prims.get(k)
        # (a step without_reshapes made another call of, a reshape for a gather, keeps it)
        name = getattr(prim, "name", None) if expected is STEP and fn is getattr(prim, "impl", None) else None
        if name is not None and fills and all(index is None and slot in meta for _, slot, index in fills):
            # (the notes of what it reads first, where that is an array of one axis or more: a NumPy scalar, which
            # the notes do not tell from a 0-d array, has no ndarray methods)
            first = meta[fills[0][1]] if fills[0][0] == 0 and meta[fills[0][1]][0] else None
            if name == "gather" and first is not None and not kwargs and len(args) == 2 \
                    and math.prod(first[0]) < _TAKE_BELOW:
                step = (k, np.ndarray.take, args + (-1,), fills, kwargs, state, expected)
            elif name == "reshape" and first is not None and not kwargs and len(args) == 2:
                step = (k, np.ndarray.reshape, args, fills, kwargs, state, expected)
            elif name in _REDUCED and first is not None and not kwargs and len(args) == 3 and len(fills) == 1:
                step = (k, _REDUCED[name], (None, args[1], None, None, args[2]), fills, kwargs, state, expected)
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


def _is_reshape(step: tuple, prim: Any) -> bool:
    """Whether a step reshapes the one value it reads (its primitive's, or ndarray.reshape after a rewrite)."""
    k, fn, args, fills, kwargs, state, expected = step
    return (fn is np.ndarray.reshape or getattr(prim, "name", None) == "reshape") and len(args) == 2 \
        and len(fills) == 1 and fills[0][0] == 0 and fills[0][2] is None and not kwargs


def _simpler(step: tuple, prim: Any, meta: dict, views: dict) -> tuple | None:
    """What a step that changes no number (or makes an empty value) becomes: ("alias", slot) of the value it
    gives back to the bit (its shape and dtype), ("const", value) of an empty one, ("step", step) of a
    reshape that replaces it (of its chain's first array); None where it stays as it is. A reshape step only
    of an array of 1 or more axes to 1 or more axes (meta: such a value is an ndarray, never a NumPy scalar).
    What it gives back: a reshape's argument, a gather's where it takes every position of the last axis in
    order, a product's other factor where one is a constant of ones (as many entries)."""
    k, fn, args, fills, kwargs, state, expected = step
    want = meta.get(k)
    if want is None or not fills:
        return None
    for _, _, index in fills:
        if index is not None:
            return None
    shape, dtype = want
    if 0 in shape:  # (its shape and dtype are all an empty array holds)
        empty = np.empty(shape, dtype)
        empty.flags.writeable = False
        return "const", empty
    name = getattr(prim, "name", None)
    if len(fills) != 1:
        return _without_empty_pieces(step, meta) if name == "np.concatenate" else None
    src = fills[0][1]
    have = meta.get(src)
    if have is None or have[1] != dtype:
        return None
    if fn is np.multiply:
        if len(args) != 2 or kwargs or math.prod(have[0]) != math.prod(shape) or not _ones(args[1 - fills[0][0]]):
            return None  # (x * 1 is x, NaN and infinities too; where the ones broadcast it, x reshaped)
    elif not _is_reshape(step, prim) and not (name == "gather" and fills[0][0] == 0 and not kwargs
                                                and len(args) == 2 and have[0] and _in_order(args[1], have[0])):
        return _without_empty_pieces(step, meta) if name == "np.concatenate" else None
    src = views.get(src, src)
    if meta.get(src) == want:
        return "alias", src
    if not shape or not meta[src][0]:
        return None
    return "step", (k, np.ndarray.reshape, (None, shape), ((0, src, None),), {}, state, STEP)


def _in_order(flat: Any, shape: tuple) -> bool:
    """Whether a gather's positions (x.take(flat, axis=-1), x of `shape`) take each entry of the last axis
    once, in order: its result is then x reshaped to x's leading axes and flat's shape."""
    if type(flat) is not np.ndarray or flat.dtype.kind not in "iu" or flat.size != shape[-1] or not flat.size:
        return False
    line = flat.reshape(-1)
    return int(line[0]) == 0 and int(line[-1]) == line.size - 1 and bool((line == np.arange(line.size)).all())


def _without_empty_pieces(step: tuple, meta: dict) -> tuple | None:
    """A concatenation without its empty pieces (of its result's dtype): ("alias", slot) of the one piece
    left where that is its result, else ("step", the concatenation of those left); None where none is
    empty and more than one is joined."""
    k, fn, args, fills, kwargs, state, expected = step
    shape, dtype = meta[k]
    filled = {i: slot for i, slot, _ in fills}
    kept = []
    for i, a in enumerate(args):
        piece = meta.get(filled[i]) if i in filled else (np.shape(a), getattr(a, "dtype", None))
        if piece is None:
            return None
        if 0 in piece[0] and piece[1] == dtype:
            continue
        kept.append(i)
    if len(kept) == 1 and kept[0] in filled and meta.get(filled[kept[0]]) == meta[k]:
        return "alias", filled[kept[0]]  # (one piece: a copy of it)
    if len(kept) == len(args) or not kept:
        return None
    new_args = tuple(args[i] for i in kept)
    new_fills = tuple((kept.index(i), slot, None) for i, slot, _ in fills if i in kept)
    return "step", (k, fn, new_args, new_fills, kwargs, state, expected)


def _refilled(step: tuple, alias: dict, consts: dict) -> tuple:
    """The step reading each aliased slot's value, and each constant slot's value as a constant argument."""
    k, fn, args, fills, kwargs, state, expected = step
    args, new = list(args), []
    for i, slot, index in fills:
        slot = alias.get(slot, slot)
        if slot in consts:
            args[i] = consts[slot]
        else:
            new.append((i, slot, index))
    return k, fn, tuple(args), tuple(new), kwargs, state, expected


def _result_of(r: tuple | None, alias: dict, consts: dict) -> tuple | None:
    if r is None:
        return r
    if r[0] == "slot" and r[2] is None:
        slot = alias.get(r[1], r[1])
        return ("copy", consts[slot]) if slot in consts else ("slot", slot, None)
    if r[0] == "block":
        return "block", r[1], tuple(_result_of(p, alias, consts) for p in r[2])
    return r


def _roots(steps: list, prims: dict) -> dict:
    """slot -> the slot whose memory its value may share: its own for a value a step makes afresh, its
    reshape's argument's root for a reshape (a view), ("loaded", slot) for one the program reads in."""
    roots: dict = {}
    for step in steps:
        if step[6] is STEP:
            src = step[3][0][1] if _is_reshape(step, prims.get(step[0])) else None
            roots[step[0]] = step[0] if src is None else roots.get(src, ("loaded", src))
    return roots


def _result_slots(results: list) -> list:
    """The slot of each result and each part of a structured one, in order (None for any other)."""
    parts = [p for r in results for p in ((r,) if r is None or r[0] != "block" else r[2])]
    return [p[1] if p is not None and p[0] == "slot" and p[2] is None else None for p in parts]


def _handed_out_fresh(steps: list, results: list, fresh: list, prims: dict) -> tuple:
    """Each result that was an array of its own (`fresh`: made afresh, by _result_slots' order), made so
    again: copied where it is now a view of a loaded value, or one array with an earlier result."""
    after = _roots(steps, prims)
    slots = _result_slots(results)
    top = 1 + max([st[0] for st in steps] + [slot for st in steps for _, slot, _ in st[3]]
                  + [slot for slot in slots if slot is not None] + [-1])
    claimed: set = set()
    new = list(slots)
    for at, (slot, was_fresh) in enumerate(zip(slots, fresh)):
        if slot is None:
            continue
        root = after.get(slot, ("loaded", slot))
        if not was_fresh or (type(root) is not tuple and root not in claimed):
            claimed.add(root)
            continue
        state = steps[-1][5] if steps else None  # (any state: a copy warns of nothing, and so none is entered)
        steps = steps + [(top, np.ndarray.copy, (None,), ((0, slot, None),), {}, state, STEP)]
        new[at] = top
        top += 1
    if new != slots:
        got = iter(new)
        results = [_renumbered(r, got) for r in results]
    return steps, results


def _renumbered(r: tuple | None, slots: Any) -> tuple | None:
    """A result (or structured result) with each part's slot the next of `slots` (_result_slots' order)."""
    if r is not None and r[0] == "block":
        return "block", r[1], tuple(_renumbered(p, slots) for p in r[2])
    slot = next(slots)
    return r if slot is None else ("slot", slot, None)


def _live(steps: list, results: list) -> list:
    """The steps without those whose value nothing reads (a guard is always read)."""
    live = _read_by(results)
    kept = []
    for step in reversed(steps):
        if step[6] is STEP and step[0] not in live:
            continue
        for _, slot, _ in step[3]:
            live.add(slot)
        kept.append(step)
    kept.reverse()
    return kept


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
    keeps): x[i] of a basic index that gives an array or one entry, a reshape or sum of an array, a basic index's
    scatter-add into an array (its result dtype made once), its scatter into zeros (a small result's shape, dtype
    and layout made once), a max or min of an array, a broadcast of a C-ordered array (its strides found once).
    Else `step` as it is."""
    k, fn, args, fills, kwargs, state, expected = step
    name, a = node.prim.name, node.args
    if kwargs or expected is not STEP or not a or type(a[0]) is not np.ndarray:
        return step
    if name == "getitem" and type(node.value) is np.ndarray and node.value.ndim and len(args) == 2:
        return k, operator.getitem, (None, (Ellipsis,) + args[1]), fills, kwargs, state, expected
    if name == "getitem" and isinstance(node.value, np.generic) and len(args) == 2 and type(args[1]) is tuple \
            and len(args[1]) == a[0].ndim and all(type(i) is int for i in args[1]):
        # (one entry, z[3]: NumPy's scalar, a copy, as the primitive makes of its Ellipsis form's 0-d view)
        return k, operator.getitem, (None, args[1]), fills, kwargs, state, expected
    if name == "reshape" and len(args) == 2:
        return k, np.ndarray.reshape, args, fills, kwargs, state, expected
    if name == "broadcast_to" and len(args) == 2 and a[0].size and a[0].flags.c_contiguous \
            and type(node.value) is np.ndarray and node.value.shape == tuple(args[1]):
        strides = _broadcast_strides(a[0], node.value.shape)
        return k, _broadcast, (None, node.value.shape, strides, a[0].strides), fills, kwargs, state, expected
    if name in _REDUCED and len(args) == 3:
        return k, _REDUCED[name], (None, args[1], None, None, args[2]), fills, kwargs, state, expected
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


# What np.sum, np.max and np.min call for an ndarray, behind a Python wrapper (P6's replay: its max, 1 us)
_REDUCED = {"np.sum": np.add.reduce, "np.max": np.maximum.reduce, "np.min": np.minimum.reduce}


def _broadcast_strides(x: np.ndarray, shape: tuple) -> tuple:
    """The strides of np.broadcast_to(x, shape): 0 along the axes it adds or stretches, x's along the others."""
    lead = len(shape) - x.ndim
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else st for n, m, st in zip(x.shape, shape[lead:], x.strides))


def _broadcast(x: Any, shape: tuple, strides: tuple, laid_out: tuple) -> Any:
    """np.broadcast_to(x, shape) (a read-only view of x) for x laid out with the strides `laid_out`, as
    recorded: made at once with the strides found when compiled (np.broadcast_to: 1.8 us, this 0.6)."""
    if type(x) is not np.ndarray or x.strides != laid_out:
        return np.broadcast_to(x, shape)
    out = np.ndarray(shape, x.dtype, x, 0, strides)
    out.flags.writeable = False
    return out


def _added_at(acc: np.ndarray, v: Any, index: tuple, dtype: np.dtype) -> np.ndarray:
    """scatter_into's acc + v at x[index]'s positions, its dtype found when the replay was compiled."""
    out = np.array(acc, dtype=dtype, copy=True)
    out[index] += v
    return out
