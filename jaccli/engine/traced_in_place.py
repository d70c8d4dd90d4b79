"""A compiled sweep's steps in place: where the usual sweep adds into a block it owns, so does the program traced from it.

replay/compiled_sweeps records a sweep of a replay as a program: the sweep runs on traced values
(sweeps.reverse with traced=True, TRACED_PARTS set) and each NumPy operation its rules make is a
step. Where the usual sweep adds a part into a sum it made and owns (Primitive.vjp_add: the parts
that x[i] read in a loop sends back to x), a traced rule would copy the sum for each part: O(size)
per part, where the usual sweep pays O(part). Here the traced sweep records ADD_INTO instead, a
step that adds into the sum's own memory, with the same ownership rules as the usual sweep.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .facts import WRITES_ARGUMENT
from .seeds import TRACED_PARTS
from .tape import Node, Primitive, bind
from .tracer import Tracer


def _add_into(acc: Any, g: Any, *args: Any, prim: Any, kwargs: dict) -> Any:
    """acc + prim's rule for argument 0 of g, added into acc's own memory (prim.vjp_add) where it can be."""
    if type(acc) is np.ndarray and acc.base is None and acc.flags.writeable and prim.vjp_add(acc, g, *args, **kwargs):
        return acc
    return prim.vjp_into(acc, g, *args, **kwargs)


ADD_INTO = Primitive("add_into", _add_into)
WRITES_ARGUMENT.add(ADD_INTO)

# ADD_INTO's keywords for a primitive called without keywords of its own (x[i]'s), one dict each: the
# steps of a loop's iterations then hold the same constants, and compile as one loop (codegen, step_loops)
_KEYWORDS: dict = {}


def program_add(node: Node, g: Any, retraced: tuple, acc: Any, parent: Node, store: dict, owned: dict,
                traced_rule: Callable) -> bool:
    """sweeps.reverse()'s step for argument 0 of a node with vjp_add, traced for a compiled sweep
    (compiled_sweeps sets TRACED_PARTS): as the usual sweep, the first part sent back is fresh and
    owned, the next ones are added into it in place (ADD_INTO), not into a copy each. False where
    that does not apply (a structured part or sum): the caller goes its usual way."""
    if node.prim.vjp_add is None or TRACED_PARTS.v is not True or type(g) is not Tracer \
            or type(g._value) is not np.ndarray:
        return False
    if acc is None:
        rule = traced_rule(node, 0, retraced)
        ct = None if rule is None else rule(g)
        if ct is None:
            return True
        if type(ct) is not Tracer or ct._idx is not None or type(ct._value) is not np.ndarray \
                or ct._value.base is not None or ct is g:
            store[parent] = ct
            return True
        store[parent] = owned[id(ct)] = ct
        return True
    if owned.get(id(acc)) is not acc or type(acc) is not Tracer or type(acc._value) is not np.ndarray:
        return False
    del owned[id(acc)]
    keywords = _KEYWORDS.get(node.prim) if not node.kwargs else None
    if keywords is None:
        keywords = {"prim": node.prim, "kwargs": node.kwargs}
        if not node.kwargs:
            _KEYWORDS[node.prim] = keywords
    out = bind(ADD_INTO, (acc, g, *retraced[1][1:]), keywords)
    store[parent] = owned[id(out)] = out
    return True
