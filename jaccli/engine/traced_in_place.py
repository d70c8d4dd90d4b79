"""Reverse sweeps' steps in place, usual and compiled: into a block the sweep owns, where a copy per step would cost O(size).

The usual sweep (sweeps.reverse) adds a part into a sum it made and owns (Primitive.vjp_add: the
parts that x[i] read in a loop sends back to x), and turns the cotangent of a write y[i] = v into
that of y before it by zeroing its part in place (Primitive.vjp_in_place: pull_in_place).
replay/compiled_sweeps records a sweep of a replay as a program: the sweep runs on traced values
(traced=True, TRACED_PARTS set) and each NumPy operation its rules make is a step. A traced rule
would copy the sum, or the cotangent, at each step: O(size) per step, where the usual sweep pays
O(part). So the traced sweep records the same steps in place, with the same ownership rules:
ADD_INTO (program_add) and PULLED (pull_in_place, traced), steps that write into their argument's
memory (facts.WRITES_ARGUMENT), on arrays the program made itself (FRESH, DENSE_OF).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from .block_memory import columns_swept, fresh
from .facts import WRITES_ARGUMENT
from .seeds import TRACED_PARTS, SparseBlock
from .tape import Node, Primitive, bind
from .tracer import Tracer


def _own(acc: Any) -> bool:
    """Whether acc is a plain array the running program made and may write into (fresh, or offered)."""
    return type(acc) is np.ndarray and (acc.base is None or fresh(acc)) and acc.flags.writeable  # (fresh: a call)


def _add_into(acc: Any, g: Any, *args: Any, prim: Any, kwargs: dict) -> Any:
    """acc + prim's rule for argument 0 of g, added into acc's own memory (prim.vjp_add) where it can be."""
    if _own(acc):
        part, reached = _rows_reached(acc, g) if acc.strides[0] >= _PAGE else (acc, g)  # (see _rows_reached)
        if prim.vjp_add(part, reached, *args, **kwargs):
            return acc
    return prim.vjp_into(acc, g, *args, **kwargs)


# Seeds in a block from which _rows_reached looks for the rows g reaches
_MANY_SEEDS = 64
# Bytes between two seeds' rows of a sum from which an add over all seeds touches a page per seed
_PAGE = 4096


def _rows_reached(acc: Any, g: Any) -> tuple[Any, Any]:
    """acc and g cut to the span of seeds (rows) where g is not zero, where g has one row per seed of acc's,
    many, each in its own page of acc: a rule adds each seed's row into its own, and a zero row adds
    nothing (x[10 i] of a long join, reached by 10 of a block's 1677 seeds: a column add over all of them,
    80 KB apart). A sum in column order (a stack's) adds a contiguous column, cheaper than looking."""
    if type(g) is not np.ndarray or g.ndim == 0 or g.shape[0] != acc.shape[0] or g.shape[0] < _MANY_SEEDS:
        return acc, g
    rows = np.flatnonzero(g if g.ndim == 1 else g.reshape(g.shape[0], -1).any(axis=1))
    if not rows.size:
        return acc[:0], g[:0]
    return acc[rows[0]:rows[-1] + 1], g[rows[0]:rows[-1] + 1]


ADD_INTO = Primitive("add_into", _add_into)
WRITES_ARGUMENT.add(ADD_INTO)



def _pulled(g: Any, *args: Any, prim: Any, kwargs: dict) -> Any:
    """g changed in place into prim's cotangent for argument 0 (prim.vjp_in_place), in a copy where
    g is not a plain array of its own."""
    if type(g) is not np.ndarray or g.base is not None or not g.flags.writeable:
        g = np.array(g, copy=True)
    prim.vjp_in_place(g, *args, **kwargs)
    return g


PULLED = Primitive("pulled_in_place", _pulled)


def _add_block(acc: Any, shape: tuple, idx: Any, val: Any, u: Any, v: Any) -> Any:
    """acc + the structured block of these parts, added at its entries (and low-rank part) into acc's own
    memory where the program owns acc, else into a copy of it."""
    block = SparseBlock(shape, idx, val, u, v)
    if not (_own(acc) and acc.shape == block.shape and np.result_type(acc, block.dtype) == acc.dtype):
        acc = np.array(acc, dtype=np.result_type(acc, block.dtype), copy=True)
    if u is None and idx.shape[1] == 1 and acc.flags.c_contiguous:
        # one entry per seed, most of them zeros (a piece of a join, where few of the block's seeds fall):
        # the others alone are added, through a flat view (K rows of 80 KB apart took a fancy add of all K)
        at = np.flatnonzero(val[:, 0])
        flat = acc.reshape(-1)
        flat[at * (flat.size // shape[0]) + idx[at, 0]] += val[at, 0]
        return acc
    block.add_into(acc)
    return acc


ADD_BLOCK = Primitive("add_block_into", _add_block)
WRITES_ARGUMENT.add(PULLED)
WRITES_ARGUMENT.add(ADD_BLOCK)
# A copy that the program owns, of a traced value or of a constant (`like`: any traced value, so that
# the copy is a step of the program, made at each run)
FRESH = Primitive("fresh_copy", lambda c, like: np.array(c, copy=True))


def _dense_seeds(like: Any, shape: tuple, idx: Any, val: Any, u: Any, v: Any, order: str,
                 columns: bool) -> np.ndarray:
    """A structured block of the seeds, made dense at each run (its parts are the program's constants);
    `columns`: the block of an element loop's writes, read and written one column at a time (ROWS_COPIED)."""
    if columns:
        columns_swept()
    return SparseBlock(shape, idx, val, u, v).todense(order)


DENSE_OF = Primitive("dense_seeds", _dense_seeds)
_NONE: dict = {}

# ADD_INTO's and PULLED's keywords for a primitive called without keywords of its own (x[i]'s), one dict
# each: the steps of a loop's iterations then hold the same constants, and compile as one loop (codegen)
_KEYWORDS: dict = {}


def column_order(node: Node) -> str:
    """The order a dense cotangent block of an in-place write node is best made in: "F" where it writes
    one element of a vector (y[i] = v in a loop), whose block's column the sweep reads and zeroes
    (in row order, K elements a row apart: a page apart for a 10^4-vector); else "C"."""
    idx = node.args[-1]
    return "F" if type(idx) is tuple and len(idx) == 1 and type(idx[0]) is int and np.ndim(node.value) == 1 else "C"


def dense_of(block: SparseBlock, like: Any, order: str = "C", columns: bool = False) -> Any:
    """block.todense(); for a compiled sweep, of a block of its seeds (constant parts), a step that
    makes it at each run (`like`: a traced value of the sweep), so that the program holds the
    parts, not a dense block as large as its result (a join's rule makes its seeds dense: a stack
    of n products, n x n). `columns`: see _dense_seeds."""
    if TRACED_PARTS.v is True and type(like) is Tracer and not block.traced:
        return bind(DENSE_OF, (like, block.shape, block.idx, block.val, block.u, block.v, order, columns), _NONE)
    return block.todense(order)


def block_sum(old: Any, value: Any, owned: dict) -> Any:
    """old + value for a compiled sweep's cotangent store (cotangent_sums._add), where one is a structured block and
    the other a traced dense sum: the block's entries added into the sum in place (ADD_BLOCK), into a
    copy of it (FRESH) where the program does not own it; a structured block joined dense as one step
    (DENSE_OF). NotImplemented elsewhere. The usual sweep adds a block's entries into a sum it owns (a
    join of many pieces, each a part of one input's cotangent); traced, `old + value` made the block dense
    and the sum a new copy for each piece (a 1000-piece concatenation: refused for its copies)."""
    if TRACED_PARTS.v is not True:
        return NotImplemented
    if type(old) is SparseBlock and type(value) is Tracer:
        old, value = value, old  # (a sum: either order)
    if type(value) is not SparseBlock or type(old) is not Tracer or type(old._value) is not np.ndarray \
            or old._value.shape != value.shape or np.result_type(old._value, value.dtype) != old._value.dtype:
        return NotImplemented
    if owned.get(id(old)) is not old:
        old = bind(FRESH, (old, old), _NONE)
    else:
        del owned[id(old)]
    out = bind(ADD_BLOCK, (old, value.shape, value.idx, value.val, value.u, value.v), _NONE)
    owned[id(out)] = out
    return out


def dense_block(block: SparseBlock, owned: dict) -> Any:
    """A compiled sweep's structured block with traced parts made dense in one step (DENSE_OF), a sum the
    program owns; the block itself where it is not such a block (see block_sum)."""
    like = next((p for p in (block.val, block.u, block.v) if type(p) is Tracer), None)
    if TRACED_PARTS.v is not True or like is None:
        return block
    out = bind(DENSE_OF, (like, block.shape, block.idx, block.val, block.u, block.v, "C"), _NONE)
    owned[id(out)] = out
    return out


def _keywords(node: Node) -> dict:
    keywords = _KEYWORDS.get(node.prim) if not node.kwargs else None
    if keywords is None:
        keywords = {"prim": node.prim, "kwargs": node.kwargs}
        if not node.kwargs:
            _KEYWORDS[node.prim] = keywords
    return keywords


def program_add(node: Node, g: Any, retraced: tuple, acc: Any, parent: Node, store: dict, owned: dict,
                traced_rule: Callable, accumulate: Callable | None = None) -> bool:
    """sweeps.reverse()'s step for argument 0 of a node with vjp_add, traced for a compiled sweep
    (compiled_sweeps sets TRACED_PARTS): as the usual sweep, the first part sent back is fresh and
    owned, the next ones are added into it in place (ADD_INTO), not into a copy each. False where
    that does not apply (a structured part, or a structured sum without `accumulate`, sweeps' own): the
    caller goes its usual way."""
    if node.prim.vjp_add is None or TRACED_PARTS.v is not True or type(g) is not Tracer \
            or type(g._value) is not np.ndarray:
        return False
    if acc is None:
        rule = traced_rule(node, 0, retraced)
        ct = None if rule is None else rule(g)
        if ct is None:
            return True
        store[parent] = ct
        if _fresh(ct, g):
            owned[id(ct)] = ct
        return True
    if type(acc) is not Tracer and type(acc) is not np.ndarray and accumulate is not None:
        # a structured sum so far (pieces of a join): this part is made as the first one, then the sum's
        # entries are added into it (block_sum), not it into a copy of the sum made dense
        rule = traced_rule(node, 0, retraced)
        ct = None if rule is None else rule(g)
        if ct is not None:
            if _fresh(ct, g):
                owned[id(ct)] = ct
            accumulate(store, parent, None, 0, ct, owned)
        return True
    if owned.get(id(acc)) is not acc or type(acc) is not Tracer or type(acc._value) is not np.ndarray:
        return False
    del owned[id(acc)]
    out = bind(ADD_INTO, (acc, g, *retraced[1][1:]), _keywords(node))
    store[parent] = owned[id(out)] = out
    return True


def _fresh(ct: Any, g: Any) -> bool:
    """Whether a traced rule's result is an array the program makes afresh (not g, not a view)."""
    return type(ct) is Tracer and ct is not g and ct._idx is None and type(ct._value) is np.ndarray \
        and ct._value.base is None


def program_pull(node: Node, g: Any, mine: bool, retraced: tuple, store: dict, owned: dict, wrt_mask: int,
                 traced_rule: Callable, accumulate: Callable, add: Callable) -> bool:
    """pull_in_place, traced for a compiled sweep (TRACED_PARTS): a cotangent the program makes
    (the seeds made dense, a copy of a constant) or owns is written in place (PULLED), as the usual
    sweep writes one it owns. False where that does not apply: the caller goes its usual way."""
    if TRACED_PARTS.v is not True:
        return False
    order = column_order(node)
    columns = None
    if type(g) is SparseBlock and not g.traced:
        block = g
        g, mine = dense_of(g, retraced[0], order, order == "F"), True
        if order == "F" and block.u is None and type(g) is Tracer:
            columns = set(block.idx[block.val != 0].tolist())
    elif type(g) is np.ndarray:
        g, mine = bind(FRESH, (g, retraced[0]), _NONE), True
    elif type(g) is not Tracer or type(g._value) is not np.ndarray:
        return False
    elif order == "F":
        columns = _columns_of(owned, g)
    at = None if columns is None else node.args[-1][0] % len(node.value)
    if at is not None and at not in columns:
        # The column written is zero in every seed: nothing goes back to the value written, and the
        # cotangent before the write is g as it is. An element loop's seeds of a block of rows reach
        # those rows' writes alone: the others' steps were 5/6 of loop-10000's program (6 blocks).
        ct = _passed_on(node, g, mine, store, owned, wrt_mask, add)
    else:
        ct = pull_in_place(node, g, mine, store, owned, wrt_mask, accumulate, add, (retraced, traced_rule))
        if at is not None:
            columns.discard(at)
    if at is not None and type(ct) is Tracer:
        owned.setdefault(_COLUMNS, {})[id(ct)] = (weakref.ref(ct), columns)
    return True


# In a traced sweep's `owned`: id of a cotangent block -> (a weak reference to it, the columns where a seed
# may be nonzero), for the blocks made dense in column order from the seeds (program_pull) and handed on only
# through writes' steps since, each zeroing its column. A block changed in any other way makes a new
# traced value, which is not in it. (Weak: a block that a write does not take next, the cotangent of
# y = x.copy(), goes when the sweep is done with it, not with the sweep.)
_COLUMNS = object()


def _columns_of(owned: dict, g: Tracer) -> set | None:
    """The columns where g may be nonzero, where program_pull keeps them (_COLUMNS); else None."""
    held = owned.get(_COLUMNS)
    kept = None if held is None else held.pop(id(g), None)
    return kept[1] if kept is not None and kept[0]() is g else None


def _passed_on(node: Node, g: Any, mine: bool, store: dict, owned: dict, wrt_mask: int, add: Callable) -> Any:
    """pull_in_place for a write whose part of g is zero in every seed: g is the cotangent of the array
    written into, as it is; the cotangent stored for it (None where it needs none)."""
    x_parent = next((p for argnum, p, pidx in node.parents if argnum == 0 and pidx is None and p.deps & wrt_mask),
                    None)
    if x_parent is None:
        return None
    old = store.get(x_parent)
    if old is None:
        store[x_parent] = g
        if mine:
            owned[id(g)] = g
        return g
    store[x_parent] = add(old, g, owned)
    return None


def pull_in_place(node: Node, g: Any, mine: bool, store: dict, owned: dict, wrt_mask: int, accumulate: Callable,
                  add: Callable, traced: tuple | None = None) -> Any:
    """sweeps.reverse()'s step for a node whose primitive has vjp_in_place: argument 0's cotangent
    is g itself, changed in place, when the sweep owns g; else the rule's fresh array, which the
    sweep then owns. The other arguments are pulled back first, from copies where g will be
    written. `traced`: (the node's traced result and arguments, sweeps' traced rule maker), for a
    compiled sweep's traced g (program_pull). Returns argument 0's cotangent where it is stored as it
    is (not added to another), else None."""
    if traced is None:
        rule_of, value = node.vjp, g
    else:
        rule_of, value = (lambda argnum: traced[1](node, argnum, traced[0])), g._value
    x_parent = None
    for argnum, parent, pidx in node.parents:
        if not parent.deps & wrt_mask:
            continue
        if argnum == 0 and pidx is None:
            x_parent = parent
            continue
        rule = rule_of(argnum)
        ct = None if rule is None else rule(g)
        if ct is None:
            continue
        if mine and type(ct) is np.ndarray and np.may_share_memory(ct, g):
            ct = ct.copy()
        elif mine and type(ct) is Tracer and type(ct._value) is np.ndarray and np.may_share_memory(ct._value, value):
            ct = bind(FRESH, (ct, ct), _NONE)
        accumulate(store, parent, pidx, len(parent.value) if pidx is not None else 0, ct, owned)
    if x_parent is None:
        return None
    if mine and type(g) is np.ndarray:
        node.prim.vjp_in_place(g, *node.args[1:], **node.kwargs)
        ct = g
    elif mine and traced is not None:
        ct = bind(PULLED, (g, *traced[0][1][1:]), _keywords(node))
    else:
        rule = rule_of(0)
        ct = None if rule is None else rule(g)
        if ct is None:
            return None
    old = store.get(x_parent)
    if old is None and (type(ct) is np.ndarray or (traced is not None and _fresh(ct, g))):
        store[x_parent] = ct
        owned[id(ct)] = ct
        return ct
    store[x_parent] = add(old, ct, owned)
    return None
