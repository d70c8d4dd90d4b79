"""The tape: primitives, the nodes that record their applications, and the traces that hold them.

This module knows nothing of NumPy's function names. A `Primitive` is a function with
rules; `bind` records one application of it on a `Trace`; the sweeps (engine/sweeps.py) run
over a recorded trace with a block of K seeds at once.

Nesting: every `Trace` has a level; a traced value of a higher level may wrap a traced
value of a lower one. `bind` unwraps only the highest level among its arguments and
re-applies the primitive to the unwrapped values, which records on the lower levels in
turn. Rules are written with the same dispatching operations, so a sweep over a level-2
trace whose values are level-1 traced values is itself recorded on level 1: that is how
second and higher derivatives work.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

from ..errors import UnsupportedOperationError
from .facts import REAL_COTANGENTS
from .freezer import FREEZER
from .guards import Guard, Raised, current_errstate, errstate_token, same_errstate
from .seeds import SparseBlock
from .tracer import Tracer
from .user_sites import RULE_SITE, user_site
from .views import note_view, stale_error, writable, write_in_place

_level_counter = itertools.count(1)
LEVELS = _level_counter  # (what a Trace's level is drawn from: replay_trace's ReplayTrace, made without __init__, too)


class Trace:
    """One recording level: the nodes of a computation in the order they ran."""

    __slots__ = ("level", "nodes", "inputs", "_plans", "shared_plans", "largest", "guards", "errstate", "errstates",
                 "views", "cuts", "outer", "nonfinite", "severed")

    def __init__(self) -> None:
        self.level = next(_level_counter)
        self.nodes: list[Node] = []
        self.inputs: list[Node] = []
        self._plans: dict[Any, Any] = {}
        # (n, plans): sweep plans by node index, shared by every recording whose first n nodes have the
        # same structure as this one's (a gradient's sweep template, engine/sweep_templates.py); or None.
        self.shared_plans: tuple[int, dict] | None = None
        self.largest = 1  # elements of the largest recorded value: what one seed carries at most
        # Guards collected while the recording is open (None once it is closed).
        self.guards: list[Guard] | None = []
        self.errstate = errstate_token()
        self.errstates: dict[int, dict] = {}  # node index -> np.geterr() where it differs
        # Weak references to the traced arrays that are NumPy views of another traced array, by the
        # id of the array owning their memory: a write into memory they share leaves them behind
        # (Tracer._become marks them), and a write elsewhere need not look at them.
        self.views: dict[int, list] = {}
        # (deps, op name, site) of the first operations whose integer or boolean result took
        # traced values out of the recording (x.astype(int), x > 0): what to name when an input
        # reaches no output (Recording.cut).
        self.cuts: list[tuple[int, str, tuple | None]] = []
        # Whether an operation took a value that an enclosing recording traces (f closes over a
        # variable of a function being differentiated): see Recording.detach.
        self.outer = False
        # id of an array that in-place updates write into -> how many of its entries are not finite
        self.nonfinite: dict[int, int] = {}
        # The user's line (file, line) of the first derivative taken of this recording's traced values
        # without create_graph: a constant to this recording (torch's rule), though it varies with the
        # inputs (api/recorded_functions.py); None if there is none.
        self.severed: tuple[str, int] | None = None

    def values(self) -> list:
        """Each node's value, by node index."""
        return [n.value for n in self.nodes]

    def values_for(self, reads: frozenset) -> list:
        """values(), of which the caller reads those at the indices `reads` (a replay's may be made for those
        first: replay/partial_forward)."""
        return self.values()

    def value_at(self, k: int) -> Any:
        return self.nodes[k].value

    def size(self) -> int:
        """How many nodes were recorded."""
        return len(self.nodes)

    def guard(self, fn: Callable, args: tuple, kwargs: dict, refs: tuple, expected: Any) -> None:
        """Remember that `expected` = fn(args with the traced values at `refs`) was baked in."""
        if self.guards is not None:
            state = None if same_errstate(errstate_token(), self.errstate) else current_errstate()
            self.guards.append(Guard(len(self.nodes), fn, args, kwargs, refs, expected, state))

    def new_input(self, value: Any) -> "Any":
        node = Node(INPUT, (), {}, (), value, 1 << len(self.inputs), None)
        node.index = len(self.nodes)
        self.nodes.append(node)
        self.inputs.append(node)
        return Tracer(value, node, None, self)


class Primitive:
    """A function with derivative rules.

    Rules are registered per positional argument as makers ``(ans, *args, **kw) -> rule``,
    where ``rule(g)`` maps a block of cotangents ``g`` of shape ``(K,) + ans.shape`` to one of
    shape ``(K,) + arg.shape`` (reverse), or ``rule(t)`` maps a block of tangents of the
    argument to tangents of the output (forward). A maker runs once per recorded node and its
    rule is reused by every sweep, so work that does not depend on the seed belongs in the maker.
    """

    __slots__ = ("name", "impl", "vjps", "jvps", "jvp_joint", "vjp_joint", "nondiff", "zero_grad", "constant", "multi_out",
                 "kink", "structure", "sparse", "value_free", "vjp_into", "vjp_add", "in_place",
                 "vjp_in_place", "jvp_in_place")

    def __init__(
        self,
        name: str,
        impl: Callable,
        *,
        nondiff: bool = False,
        zero_grad: bool = False,
        constant: bool = False,
        multi_out: bool = False,
    ) -> None:
        self.name = name
        self.impl = impl
        self.vjps: dict[int, Callable] = {}
        self.jvps: dict[int, Callable] = {}
        # Optional forward rule taking every argument's tangent at once (None for constants),
        # for primitives like concatenate where one combined rule beats a sum of per-argument ones.
        self.jvp_joint: Callable | None = None
        # Its reverse counterpart, optional beside the per-argument makers (which stay, for whatever
        # reads them one by one): rule(g) gives every argument's cotangent at once (a list by
        # argument, None for a zero). A join of n pieces makes one rule per sweep, not n of n arguments each.
        self.vjp_joint: Callable | None = None
        self.nondiff = nondiff  # outputs carry no derivative at all (comparisons, argmax)
        self.zero_grad = zero_grad  # connected, but the derivative is zero (floor, sign)
        # A traced constant (zeros_like(x)): traced so that it can be assigned into, but
        # structurally independent of every input.
        self.constant = constant
        self.multi_out = multi_out  # returns a tuple of arrays
        self.kink: Callable | None = None  # (ans, *args, **kw) -> bool mask of kink points
        # Per-element structure of the derivative: ELEMENTWISE means output element k depends on
        # element k of each argument of the output's size and on nothing else (ufuncs, where).
        self.structure: str | None = None
        # Implementation for a sparse seed block as first argument (engine/seeds.py), if any.
        self.sparse: Callable | None = None
        # The rules never read the values of the arguments or of the result, only their shapes
        # (x + c): a later in-place change of c cannot make a derivative wrong, and the result's
        # memory may be written into by a later in-place update (see `in_place`).
        self.value_free = False
        # Optional in_place(x, *other_args, **kw) -> (part, values): the result is x with `values`
        # written into `part` (a view of x). bind writes them into x's own memory when no recorded
        # rule reads x's values and that memory is the recording's own (a loop of y[i] = v then
        # keeps one array, not one copy per write).
        self.in_place: Callable | None = None
        # Optional reverse rule for argument 0 that adds into the cotangent already gathered for it:
        # vjp_into(acc, g, *other_args, **kw) = acc + rule(g), one operation where the sum takes
        # two (x[1:] and x[:-1] both send a part back to x: the second scatters into the first's).
        self.vjp_into: Callable | None = None
        # Its in-place form for a sum the sweep owns: vjp_add(acc, g, *other_args, **kw) adds
        # rule(g) into acc and returns True, or returns False (acc unchanged) when it cannot. With it, the
        # maker's rule for argument 0 returns a fresh array for a plain g: the sweep owns that and adds the
        # next parts into it.
        self.vjp_add: Callable | None = None
        # Optional reverse rule for argument 0 that writes into the cotangent itself, for a cotangent
        # the sweep owns: vjp_in_place(g, *other_args, **kw) changes g into argument 0's cotangent
        # (assign: g with the written part zeroed). With it, the maker's rule for argument 0 must
        # return a fresh array for a plain g (the sweep then owns that), and the rules for the other
        # arguments may return views of g (the sweep copies them before g is written). A loop of
        # y[i] = v then costs O(K) per write in a sweep, not a copy of the whole block per write.
        self.vjp_in_place: Callable | None = None
        # Its forward counterpart: jvp_in_place(t_x, t_others, *other_args, **kw) writes the tangent
        # of the result into the tangent t_x of argument 0, when the sweep owns t_x and nothing after
        # this node reads it (t_others: the other arguments' tangents, None where zero). With it,
        # jvp_joint must return a fresh array for plain tangents (the sweep then owns that).
        self.jvp_in_place: Callable | None = None

    def defvjp(self, *makers: Callable | None, argnums: tuple[int, ...] | None = None) -> "Primitive":
        for i, maker in zip(argnums or range(len(makers)), makers):
            if maker is not None:
                self.vjps[i] = maker
        return self

    def defjvp(self, *makers: Callable | None, argnums: tuple[int, ...] | None = None) -> "Primitive":
        for i, maker in zip(argnums or range(len(makers)), makers):
            if maker is not None:
                self.jvps[i] = maker
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return bind(self, args, kwargs, None, 1)

    def bind_at(self, args: tuple, frames: int) -> Any:
        """self(*args), called from jaccli's own code whose `frames` innermost frames (the caller's, and its
        callers') are certainly jaccli's: the user's line is looked for beyond them (bind's `frames`)."""
        return bind(self, args, {}, None, frames + 1)

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


INPUT = Primitive("input", lambda x: x)
_MISSING = object()
ELEMENTWISE = "elementwise"


class Node:
    """One recorded primitive application."""

    __slots__ = ("prim", "args", "kwargs", "parents", "value", "deps", "site", "index", "_vjps", "_jvps",
                 "pinned", "in_place", "finite")

    def __init__(self, prim, args, kwargs, parents, value, deps, site, index=-1):
        self.prim = prim
        self.args = args
        self.kwargs = kwargs
        self.parents = parents  # tuple of (argnum, parent node, parent output index or None)
        self.value = value
        self.deps = deps  # bit mask over the trace's inputs: which ones this node depends on
        self.site = site
        self.index = index  # its place in the trace's nodes (-1 until it has one)
        self._vjps: dict[int, Callable | None] | None = None
        self._jvps: dict[int, Callable | None] | None = None
        # Some rule reads this node's value (its own or a later operation's), or a view shares its
        # memory: the value must stay as it is, and no in-place update may write into it.
        self.pinned = not (prim.value_free or prim.constant)
        self.in_place = False  # the value was written into the first argument's memory
        # For a value whose memory a later in-place update changed: whether it was all finite (the
        # diagnostics cannot read it any more); None otherwise.
        self.finite: bool | None = None

    def vjp(self, argnum: int) -> Callable | None:
        """The reverse rule for one argument, made once and cached (None means zero)."""
        if self._vjps is None:
            self._vjps = {}
        return self._rule(self._vjps, self.prim.vjps, argnum, "reverse")

    def jvp(self, argnum: int) -> Callable | None:
        """The forward rule for one argument, made once and cached (None means zero)."""
        if self._jvps is None:
            self._jvps = {}
        return self._rule(self._jvps, self.prim.jvps, argnum, "forward")

    def _rule(self, cache: dict, makers: dict, argnum: int, mode: str) -> Callable | None:
        rule = cache.get(argnum, _MISSING)
        if rule is not _MISSING:
            return rule
        if self.prim.zero_grad:
            rule = None
        else:
            maker = makers.get(argnum)
            if maker is None:
                raise no_rule_error(self, argnum, mode)
            rule = maker(self.value, *self.args, **self.kwargs)
            if mode == "reverse" and rule is not None and is_complex(self.value) and not is_complex(self.args[argnum]) \
                    and self.prim not in REAL_COTANGENTS:
                rule = real_cotangent(rule)
        cache[argnum] = rule
        return rule

    def __repr__(self) -> str:
        return f"Node#{self.index}({self.prim.name})"


def no_rule_error(node: Node, argnum: int, mode: str) -> Exception:
    return UnsupportedOperationError(
        f"{node.prim.name} has no {mode}-mode derivative with respect to its argument {argnum}; "
        f"see 'jaccli ops' for what each function supports",
        node.site,
    )


def is_complex(value: Any) -> bool:
    """Whether a recorded value (an array, a scalar, a traced array, a tuple of them) is complex."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return dtype.kind == "c"
    if isinstance(value, tuple):  # (NumPy's named tuples too: EigResult)
        return any(is_complex(v) for v in value)
    return type(value) is complex


def real_cotangent(rule: Callable) -> Callable:
    """A reverse rule for a real argument of an operation with a complex result: the real part of
    what the rule sends back (the transpose of seeing a real number as a complex one, as JAX's)."""
    def real_rule(g):
        ct = rule(g)
        if ct is None or (type(ct) is np.ndarray and ct.dtype.kind != "c"):  # (is_complex's common case, inline)
            return ct
        return np.real(ct) if is_complex(ct) else ct
    return real_rule


MAX_CUTS = 32  # the first few are enough to name one per input; a loop of comparisons adds no more


def bind(prim: Primitive, args: tuple, kwargs: dict, site: tuple | None = None, frames: int = 0) -> Any:
    """Apply `prim` to `args`, recording it on the highest trace among the traced arguments.

    `site` is the user's file and line, found once by the outermost call and handed down to the
    lower levels, which record the same operation. `frames`: how many frames above bind's are
    certainly jaccli's own (Primitive.__call__'s, a traced array's operator's): the look for the user's
    line starts beyond them, and Python makes no frame object for each one it would step over.
    """
    for a in args:
        if type(a) is Tracer:
            top = a._trace  # the highest trace, unless an argument's is higher: then they are read again on it
            break
    else:  # nothing traced: a rule's or a replay's call on plain values
        if prim.sparse is not None and args and type(args[0]) is SparseBlock:
            out = prim.sparse(*args, **kwargs)
            if out is not NotImplemented:
                return out
            args = (args[0].todense(),) + tuple(args[1:])
        return prim.impl(*args, **kwargs)
    pin = not prim.value_free
    while True:
        vals = []
        parents = []
        deps = 0
        nested = plain = False  # plain: an argument the freezer may hold (not traced, not a Python number)
        i = 0
        for a in args:
            if type(a) is Tracer:
                if a._stale is not None:
                    raise stale_error(a, user_site(2))
                if a._trace is top:
                    v = a._value
                    parent = a._node
                    vals.append(v)
                    parents.append((i, parent, a._idx))
                    deps |= parent.deps
                    if pin:
                        parent.pinned = True
                    if type(v) is Tracer:
                        nested = True
                elif a._trace.level > top.level:
                    top = a._trace
                    break
                else:  # traced on a lower level (a derivative of a derivative): a value of top's, recorded there first
                    vals.append(a)
                    nested = True
            else:
                vals.append(a)
                if type(a) is not float and type(a) is not int:
                    plain = True
            i += 1
        else:
            break
    if nested:
        top.outer = True
    outermost = site is None
    if outermost:
        site = RULE_SITE.v or user_site(2 + frames)
    # Lower levels are applied first, so an implementation only ever sees plain arrays.
    finite = None
    if nested:
        ans = bind(prim, tuple(vals), kwargs, site)
    else:
        try:
            if prim.in_place is not None and outermost and writable(args[0], top):
                ans, finite = write_in_place(prim, args[0]._node, vals, kwargs, top.nonfinite)
            elif len(vals) == 2 and (type(vals[0]) is np.float64 or type(vals[1]) is np.float64) \
                    and prim in SCALAR_FORMS and not kwargs:  # (_on_scalars' own test, in part: arrays skip it)
                ans = _on_scalars(prim, vals[0], vals[1])
            else:
                ans = prim.impl(*vals, **kwargs)
        except Exception as exc:
            # f may catch it and take another way: a replay must raise here too
            top.guard(Raised(prim.impl), tuple(vals), kwargs, tuple(parents), type(exc))
            raise
    if plain and outermost:
        freezer = FREEZER.v
        if freezer is not None and (not prim.value_free or freezer.keep_all):  # (hold's own test)
            freezer.hold(args, prim)  # the plain arguments as f passed them (traced ones are skipped)
    # (a float or complex array, or a float, the common results, tested inline: bind runs once per operation)
    kind = type(ans)
    if prim.nondiff or not ((kind is np.ndarray and ans.dtype.kind in "fc") or kind is np.float64 or (
            all(_is_inexact(v) for v in ans) if prim.multi_out else _is_inexact(ans))):
        # An integer or boolean result carries no derivative and leaves the recording as a plain
        # value; the lowest level guards it (a nested call guarded it on the level below).
        if not nested:
            top.guard(prim.impl, tuple(vals), kwargs, tuple(parents), ans)
            if deps and len(top.cuts) < MAX_CUTS:
                top.cuts.append((deps, prim.name, site))
        return ans
    if prim.constant:
        parents, deps = (), 0
    nodes = top.nodes
    node = Node(prim, tuple(vals), kwargs, tuple(parents), ans, deps, site, len(nodes))
    if kind is np.ndarray:
        if ans.size > top.largest:
            top.largest = ans.size
    else:
        size = getattr(ans, "size", 1)
        if type(size) is int and size > top.largest:
            top.largest = size
    nodes.append(node)
    if finite is not None:
        node.in_place, node.finite = True, finite
    if not nested and top.guards is not None and not same_errstate(errstate_token(), top.errstate):
        top.errstates[node.index] = current_errstate()
    if prim.multi_out:
        outs = tuple(Tracer(v, node, k, top) for k, v in enumerate(ans))
        for out in outs:
            note_view(out, args, top)
        return outs
    out = Tracer(ans, node, None, top)
    # a fresh array, a NumPy scalar or a number is a view of nothing (see views._view_of)
    if (kind is np.ndarray and ans.base is not None) or kind is Tracer:
        note_view(out, args, top)
    return out


# Binary ufuncs -> their operation on Python floats (add, subtract, multiply, true_divide): a loop over
# elements (x[i] * x[i + 1]) or an integrator of a few scalars applies them to NumPy scalars, where the
# ufunc's call costs ~0.8 us and the float operation ~0.05 (filled by rules/elementwise.py).
SCALAR_FORMS: dict[Primitive, Callable] = {}
_TINY = float(np.finfo(np.float64).tiny)


def _on_scalars(prim: Primitive, a: Any, b: Any) -> Any:
    """prim.impl(a, b), through its float form where a and b are float64 scalars (NumPy's or Python's, one
    NumPy's) and the result a normal number: the same number and type (IEEE arithmetic), and no floating-point
    condition NumPy would report (an infinite, NaN, subnormal or zero result takes the ufunc, which reports
    it as it would have, warning or error as np.errstate says)."""
    ta, tb = type(a), type(b)
    if (ta is np.float64 and (tb is np.float64 or tb is float)) or (ta is float and tb is np.float64):
        r = SCALAR_FORMS[prim](float(a), float(b))
        if r - r == 0.0 and (r >= _TINY or r <= -_TINY):
            return np.float64(r)
    return prim.impl(a, b)


def sever(obj: Any, site: tuple | None, own: Any = None) -> None:
    """Mark the recordings (every level but `own`) whose traced values obj, a (nested) list or tuple,
    holds: a derivative was taken of them at `site` without create_graph (see Trace.severed)."""
    kind = type(obj)
    if kind is list or kind is tuple or isinstance(obj, tuple):
        for o in obj:
            sever(o, site, own)
    while type(obj) is Tracer:
        if obj._trace is not own and obj._trace.severed is None:
            obj._trace.severed = site
        obj = obj._value


def rewritable(node: Node) -> bool:
    """Whether node's value, made by a replay of a recording, is memory the replay may write into
    again where the recording wrote in place: its own array (not an input's, not a constant's)."""
    value = node.value
    return (node.prim is not INPUT and type(value) is np.ndarray and value.base is None
            and value.flags.writeable and value.dtype.kind in "fc"
            and (node.in_place or not any(a is value for a in node.args)))


def value_size(value: Any) -> int:
    """The number of elements of a recorded value (an array, a NumPy or Python scalar, a traced array)."""
    size = getattr(value, "size", 1)
    return size if type(size) is int else int(np.size(value))


def _is_inexact(value: Any) -> bool:
    """Whether a traced operation's result carries a derivative: floats and complex numbers do,
    integers and booleans do not."""
    if type(value) is Tracer:
        return True
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return type(value) is float or type(value) is complex
    return dtype.kind in "fc"
