"""Shifts that cancel out of the outputs: the sweeps treat them as constants.

A stable logsumexp or softmax subtracts a value c from its argument, then adds it back or divides it
out again:

    c + log(sum(exp(z - c)))         exp(z - c) / sum(exp(z - c))         (z - c) - log(sum(exp(z - c)))

For every finite c these are exactly log(sum(exp(z))), softmax(z) and log(softmax(z)). The outputs
are the same function of z whatever c is, so every derivative with respect to c is zero, at every
order. Swept as written, c = max(z) would still send its own derivative (the tie weights of the
maximum) down every path through c, and the terms would cancel only numerically: a gradient
carries extra operations, and a Hessian extra low-rank terms, that add up to rounding errors.

`cancelling` proves that the outputs do not depend on such a c. It follows how each value depends
on c through the operations between c and the outputs:

- additively, value = base + k*c (c itself is k = 1; z - c is k = -1);
- multiplicatively, value = base * exp(k*c) (the exp of an additive value).

Here base is a function of the other values only. Only operations that keep one of these two forms
are followed:
- sums and differences of additive values;
- exp of an additive value, and log of a multiplicative one;
- products and quotients of multiplicative values and of c-free values;
- sums, maxima and minima of multiplicative values;
- maxima and minima of additive values;
- reshapes, transposes, broadcasts and indexing.

A value with k = 0 no longer depends on c. Any other operation on a value that depends on c ends the
proof for that c.

Only a c with one element is a candidate (a scalar shift: the same c for every entry, so a sum or
an index cannot mix different shifts). When every output is free of c, the sweeps do not follow
the edges out of c, exactly as if c were a constant of f.
"""

from __future__ import annotations

from typing import Any

from .tape import value_size
from .facts import SHIFT_FORMS

_ADD, _MUL = 0, 1  # value = base + k*c; value = base * exp(k*c)
_ANY = (2, 0)  # depends on c in some other way
_MAX_SHIFTS = 8  # candidates proved per sweep plan: each proof is a pass over the plan's nodes


def _signature(node: Any) -> tuple | None:
    """What makes two nodes compute the same value (the same operation on the same traced values
    and the same plain arguments), or None when a plain argument is not simple enough to compare."""
    traced = {argnum for argnum, _, _ in node.parents}
    plain = []
    for argnum, a in enumerate(node.args):
        if argnum in traced:
            plain.append(None)
        elif a is None or type(a) in (bool, int, float) or (type(a) is tuple and all(type(i) is int for i in a)):
            plain.append((type(a), a))
        else:
            return None
    if node.kwargs:
        return None
    return node.prim, tuple((argnum, parent.index, pidx) for argnum, parent, pidx in node.parents), tuple(plain)


def candidates(needed: Any) -> list[list]:
    """Groups of nodes among `needed` that compute one value c with one element, which some needed
    node subtracts from an array and takes the exp of (`exp(z - c)`), at most _MAX_SHIFTS groups.
    `x.max()` written twice is two nodes of one group: c - the other is as much a cancelling shift
    as c - c.

    A loop of scalar operations has many values with one element, but shifts no array by them:
    it costs one pass over the nodes here, and no proof."""
    shifts: list = []
    for node in needed:
        if SHIFT_FORMS.get(node.prim) != "exp":
            continue
        for _, d, pidx in node.parents:
            if pidx is not None or SHIFT_FORMS.get(d.prim) != "subtract" or value_size(d.value) == 1:
                continue
            for argnum, parent, ppidx in d.parents:
                if argnum == 1 and ppidx is None and value_size(parent.value) == 1 and parent not in shifts:
                    shifts.append(parent)
        if len(shifts) >= _MAX_SHIFTS:
            break
    if not shifts:
        return []
    groups: dict[Any, list] = {}
    signatures: dict[int, tuple] = {}  # node index -> its signature, for the shifts below
    for node in needed:
        if value_size(node.value) == 1 and node.parents:
            sig = signatures[node.index] = _signature(node)
            if sig is not None:
                groups.setdefault(sig, []).append(node)
    found: list = []
    for c in shifts:
        sig = signatures.get(c.index)
        group = groups[sig] if sig is not None else [c]
        if group not in found:
            found.append(group)
    return found


def cancelling(needed: list, group: list, outputs: tuple) -> bool:
    """Whether each output is free of c, the value of every node in `group`, by the forms above
    (`needed`: the nodes a sweep visits, in index order)."""
    forms: dict[int, tuple[int, int]] = {c.index: (_ADD, 1) for c in group}
    first = min(forms)
    for node in needed:
        if node.index <= first or node.index in forms:
            continue
        args = [None] * len(node.args)
        hit = False
        for argnum, parent, pidx in node.parents:
            form = forms.get(parent.index)
            if form is not None:
                hit = True
                args[argnum] = _ANY if pidx is not None else form
        if not hit:
            continue
        how = SHIFT_FORMS.get(node.prim)
        form = _ANY if node.prim.multi_out or node.in_place or node.kwargs else _combine(how, args)
        if form[1] != 0 or form is _ANY:
            forms[node.index] = form
    return not any(node.index in forms for node, _ in outputs)


def _combine(how: str | None, args: list) -> tuple[int, int]:
    """The form of an operation's result from its arguments' forms (None: free of c), by how the
    shift passes through its primitive (`facts.SHIFT_FORMS`; None: not followed)."""
    a = args[0]
    b = args[1] if len(args) > 1 else None
    if _ANY in args:
        return _ANY
    if how == "move":  # argument 0's entries moved or picked: with the same c in each, the form is kept
        return _ANY if any(f is not None for f in args[1:]) else a
    if how in ("add", "subtract") and len(args) == 2:
        if (a is not None and a[0] != _ADD) or (b is not None and b[0] != _ADD):
            return _ANY
        k = (a[1] if a else 0) + (b[1] if b else 0) * (1 if how == "add" else -1)
        return (_ADD, k)
    if how == "negative":
        return (_ADD, -a[1]) if a[0] == _ADD else _ANY
    if how == "exp":
        return (_MUL, a[1]) if a[0] == _ADD else _ANY
    if how == "log":
        return (_ADD, a[1]) if a[0] == _MUL else _ANY
    if how in ("multiply", "divide") and len(args) == 2:
        if (a is not None and a[0] != _MUL) or (b is not None and b[0] != _MUL):
            return _ANY
        k = (a[1] if a else 0) + (b[1] if b else 0) * (1 if how == "multiply" else -1)
        return (_MUL, k)
    if how == "sum" and a is not None and a[0] == _MUL and not any(f is not None for f in args[1:]):
        return a
    if how == "extreme" and not any(f is not None for f in args[1:]):
        return a  # max(base + k c) = max(base) + k c; max(base * e^(k c)) = max(base) * e^(k c)
    return _ANY
