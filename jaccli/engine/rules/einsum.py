"""Rules for np.einsum: the rule for each operand is one einsum of the seed block with the others."""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOperationError
from ..user_sites import user_site
from ..facts import MATRIX_PRODUCTS, NOT_SEPARABLE, SAMPLE_RULES, STRUCTURES, allow_in_expressions
from ..structure import Contracts
from ..registry import family, primitive, register, register_derived
from ._util import dtype_of, in_dtype, loop_dtypes, refuse_core_axes

family("products")

# NumPy's order for integer labels (string.ascii_uppercase + ascii_lowercase, written out: importing
# string compiles its Template pattern, ~0.7 ms of every run)
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_PATHS: dict = {}


def _path(subscripts: str, shapes: tuple) -> list:
    """A contraction order for these shapes, found once (paths let NumPy use BLAS for pairs)."""
    key = (subscripts, shapes)
    path = _PATHS.get(key)
    if path is None:
        if len(_PATHS) > 4096:
            _PATHS.clear()
        dummies = [np.broadcast_to(np.zeros(()), s) for s in shapes]
        path = _PATHS[key] = np.einsum_path(subscripts, *dummies, optimize="greedy")[0]
    return path


def _einsum_impl(*ops, spec):
    terms, out = spec
    subscripts = ",".join(terms) + "->" + out
    if len(ops) < 2:
        return np.einsum(subscripts, *ops)
    ans = np.einsum(subscripts, *ops, optimize=_path(subscripts, tuple(np.shape(o) for o in ops)))
    return ans if out else ans[()]  # one number: a scalar, as NumPy's einsum without optimize= gives


einsum = primitive("np.einsum", _einsum_impl)
STRUCTURES[einsum] = Contracts()
SAMPLE_RULES[einsum] = NOT_SEPARABLE
MATRIX_PRODUCTS.add(einsum)


def _free(used: str) -> str:
    """A label not in `used`: the block axis, or the second copy of a repeated label."""
    return next(c for c in _LETTERS if c not in used)


def _jvp_maker(i: int):
    def maker(ans, *ops, spec):
        terms, out = spec
        z = _free("".join(terms) + out)
        block_spec = (terms[:i] + (z + terms[i],) + terms[i + 1:], z + out)
        before, after = ops[:i], ops[i + 1:]
        return lambda t: einsum(*before, t, *after, spec=block_spec)
    return maker


def _vjp_maker(i: int):
    def maker(ans, *ops, spec):
        terms, out = spec
        term = terms[i]
        sizes = dict(zip(term, np.shape(ops[i])))
        dtype = dtype_of(ans)
        used = "".join(terms) + out
        z = _free(used)
        used += z
        target, extra_terms, extra_ops = [], [], []
        for c in term:
            if c in target:
                # A repeated label (a diagonal, a trace): the cotangent lives on the diagonal,
                # which an identity matrix linking the two copies puts it on.
                f = _free(used)
                used += f
                target.append(f)
                extra_terms.append(c + f)
                extra_ops.append(np.eye(sizes[c], dtype=dtype))
            else:
                target.append(c)
        elsewhere = "".join(terms[:i] + terms[i + 1:]) + out + "".join(extra_terms)
        for c in dict.fromkeys(term):
            if c not in elsewhere:
                # Summed within this operand only: the cotangent is constant along it.
                extra_terms.append(c)
                extra_ops.append(np.ones(sizes[c], dtype=dtype))
        block_spec = ((z + out,) + terms[:i] + terms[i + 1:] + tuple(extra_terms), z + "".join(target))
        others = ops[:i] + ops[i + 1:] + tuple(extra_ops)
        return lambda g: einsum(g, *others, spec=block_spec)
    return maker


class _PerOperand(dict):
    """Rules for any number of operands, made on demand."""

    def __init__(self, make) -> None:
        super().__init__()
        self._make = make

    def get(self, i, default=None):
        return self._make(i)

    def __bool__(self) -> bool:
        return True


einsum.vjps = _PerOperand(_vjp_maker)
einsum.jvps = _PerOperand(_jvp_maker)


def _sublist(labels) -> str:
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in labels)


def _parse(subscripts: str, shapes: list) -> tuple[tuple[str, ...], str]:
    """Explicit subscripts with every '...' spelled out as fresh labels, right-aligned."""
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, out = subscripts.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} subscript terms for {len(shapes)} operands")
    named = "".join(c for c in subscripts if c.isalpha())
    n_ell = max((len(s) - len(t) + 3 for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(c for c in _LETTERS if c not in named)[:n_ell]
    spelled = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            t = t.replace("...", ell[n_ell - (len(s) - len(t) + 3):])
        spelled.append(t)
    for k, (t, s) in enumerate(zip(spelled, shapes)):  # NumPy's checks and messages
        if len(t) > len(s):
            raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand {k}")
        if len(t) < len(s):
            raise ValueError(f"operand {k} has more dimensions than subscripts given in einstein sum, but no "
                             "'...' ellipsis provided to broadcast the extra dimensions.")
    if arrow:
        out = out.replace("...", ell)
        for c in out:
            if c not in "".join(spelled):
                raise ValueError(f"einstein sum subscripts string included output subscript '{c}' which never "
                                 "appeared in an input")
    else:
        labels = lhs.replace("...", "").replace(",", "")
        out = ell + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    return tuple(spelled), out


def _in_einsum_dtype(operands: tuple, dtype, order, casting) -> tuple:
    """The operands cast to the dtype NumPy's einsum computes in, for its dtype= and casting= (its
    error where the casting rule refuses), found on stand-ins of one element per axis."""
    if isinstance(operands[0], str):  # (subscripts, *arrays)
        arrays = range(1, len(operands))
    else:  # (array, sublist, array, sublist, ..., [output sublist])
        arrays = range(0, len(operands) - len(operands) % 2, 2)
    stand_ins = [np.zeros((1,) * np.ndim(o), dtype_of(o)) if i in arrays else o for i, o in enumerate(operands)]
    common = np.result_type(np.einsum(*stand_ins, dtype=dtype, order=order, casting=casting))
    return tuple(in_dtype(o, common) if i in arrays else o for i, o in enumerate(operands))


def _einsum_handler(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    if dtype is not None or casting != "safe":
        operands = _in_einsum_dtype(operands, dtype, order, casting)
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:
        ops = list(operands[0::2])
        lists = list(operands[1::2])
        subscripts = ",".join(_sublist(s) for s in lists[: len(ops)])
        if len(operands) % 2:
            subscripts += "->" + _sublist(operands[-1])
            ops = ops[: len(lists)]
    terms, out_term = _parse(subscripts, [np.shape(o) for o in ops])
    # Broadcasting: a length-1 axis against a longer one is dropped from its operand, so that
    # every label has one length and the reverse rules sum over what was broadcast.
    sizes: dict = {}
    for t, o in zip(terms, ops):
        for c, n in zip(t, np.shape(o)):
            if n != 1:
                if sizes.get(c, n) != n:
                    raise ValueError(f"operands could not be broadcast together: label '{c}' has lengths "
                                     f"{sizes[c]} and {n}")
                sizes[c] = n
    squeezed = []
    for k, (t, o) in enumerate(zip(terms, ops)):
        shape = np.shape(o)
        keep = [p for p, (c, n) in enumerate(zip(t, shape)) if not (n == 1 and sizes.get(c, 1) > 1)]
        if len(keep) < len(t):
            ops[k] = np.reshape(o, tuple(shape[p] for p in keep))
            t = "".join(t[p] for p in keep)
        squeezed.append(t)
    ans = einsum(*ops, spec=(tuple(squeezed), out_term))
    if not out_term and optimize is not False and len(ops) > 1:
        return np.copy(ans)  # a 0-d array: NumPy's contraction path ends in one
    return ans


register(np.einsum, _einsum_handler, prims=(einsum,),
         notes="explicit, implicit, '...' and repeated labels; each block rule is one einsum")
allow_in_expressions("einsum")


def _gufunc(name: str, subscripts: str):
    """vecdot, matvec and vecmat over their default (last) axes, as einsums."""
    def handler(x1, x2, /, **kw):
        axis = kw.pop("axis", None) if name == "vecdot" else None
        refuse_core_axes(kw, name)
        dtype = loop_dtypes(getattr(np, name), (x1, x2), kw)[0]  # dtype=, casting=: NumPy's loop, or its error
        x1, x2 = in_dtype(x1, dtype), in_dtype(x2, dtype)
        if axis is not None:  # vecdot's one core axis, in each operand
            x1, x2 = np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1)
        return _einsum_handler(subscripts, x1, x2)
    return handler


for _name, _subscripts in (("vecdot", "...i,...i->..."), ("matvec", "...ij,...j->...i"),
                           ("vecmat", "...i,...ij->...j")):
    if hasattr(np, _name):
        register_derived(getattr(np, _name), _gufunc(_name, _subscripts), uses=(einsum,))
if hasattr(np.linalg, "vecdot"):
    register_derived(np.linalg.vecdot, lambda x1, x2, /, *, axis=-1: _gufunc("vecdot", "...i,...i->...")(
        x1, x2, axis=axis), uses=(einsum,))
