"""Record a user's function once at a point, then answer any number of block sweeps over it."""

from __future__ import annotations

import types
from contextlib import contextmanager
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import TracingError, UserFunctionError
from . import rules  # noqa: F401  (fills the registry)
from .core import ELEMENTWISE, Trace, _plan_reverse, forward, reverse
from .seeds import dense
from .tracer import Tracer, primal


# ---------------------------------------------------------------------------
# np.array([traced, ...]) cannot be intercepted by NumPy's protocols; while f runs, the
# names bound to the numpy module in f's globals point to a proxy that handles it.
# ---------------------------------------------------------------------------
def _contains_tracer(obj: Any) -> bool:
    if type(obj) is Tracer:
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_tracer(o) for o in obj)
    return False


def _build(obj: Any, dtype: Any = None) -> Any:
    if isinstance(obj, (list, tuple)):
        return np.stack([_build(o) for o in obj])
    if dtype is not None and type(obj) is Tracer and np.dtype(dtype).kind in "fc":
        return obj
    return obj


def _array(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    if type(obj) is Tracer and kwargs.get("copy", True) is not False:
        return np.copy(obj)  # np.array copies: writing into the result must not change obj
    if _contains_tracer(obj):
        if dtype is not None and np.dtype(dtype).kind not in "fc":
            return np.array(primal_nested(obj), dtype, *args, **kwargs)
        return _build(obj, dtype)
    return np.array(obj, dtype, *args, **kwargs)


def _asarray(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
    if _contains_tracer(obj):
        return _array(obj, dtype)
    return np.asarray(obj, dtype, *args, **kwargs)


def primal_nested(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return type(obj)(primal_nested(o) for o in obj)
    return primal(obj)


class _NumpyProxy(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


NUMPY_PROXY = _NumpyProxy("numpy")
NUMPY_PROXY.array = _array
NUMPY_PROXY.asarray = _asarray
NUMPY_PROXY.asanyarray = _asarray
NUMPY_PROXY.ascontiguousarray = _asarray


_NAMES_CACHE: dict[tuple, tuple[int, list[str]]] = {}


def _numpy_names(glb: dict) -> list[str]:
    """The names bound to the numpy module in a globals dict (rescanned when the dict changes size)."""
    key = (id(glb), glb.get("__name__"), glb.get("__file__"))
    cached = _NAMES_CACHE.get(key)
    if cached is not None and cached[0] == len(glb) and all(glb.get(k) is np for k in cached[1]):
        return cached[1]
    items = list(glb.items())
    names = [k for k, v in items if v is np]
    if not any(v is NUMPY_PROXY for _, v in items):  # not while an outer recording has swapped them
        _NAMES_CACHE[key] = (len(glb), names)
    return names


@contextmanager
def intercept_numpy(f: Callable):
    """While f runs, let `np.array([...traced...])` in f's module build a traced array."""
    glb = getattr(f, "__globals__", None)
    if glb is None:
        yield
        return
    swapped = _numpy_names(glb)
    for k in swapped:
        glb[k] = NUMPY_PROXY
    try:
        yield
    finally:
        for k in swapped:
            glb[k] = np


def as_float(x: Any) -> Any:
    """Inputs are differentiated in floating point: integers and booleans become float64."""
    if type(x) is Tracer:
        return x
    arr = np.asarray(x)
    if arr.dtype.kind == "c":
        raise TypeError("complex inputs are not supported by jaccli: split them into real and imaginary parts")
    if arr.dtype.kind != "f":
        return arr.astype(np.float64)
    return arr


# ---------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------
class Recording:
    """f evaluated once at `args` with the inputs in `wrt` traced.

    Attributes:
        outputs: the primal outputs (a tuple, even when f returns one array).
        out_is_tuple: whether f returned a tuple.
        inputs: the arguments as passed to f (floats; traced ones replaced by their values).
    """

    def __init__(self, f: Callable, args: Sequence[Any], wrt: Sequence[int]) -> None:
        self.trace = Trace()
        self.wrt = tuple(wrt)
        call_args = list(args)
        self.in_nodes = []
        for i in self.wrt:
            t = self.trace.new_input(as_float(args[i]))
            call_args[i] = t
            self.in_nodes.append(t._node)
        self.inputs = tuple(primal_value(a, self.trace) for a in call_args)
        with intercept_numpy(f):
            out = _call_user(f, call_args)
        self.out_is_tuple = isinstance(out, tuple)
        outs = out if self.out_is_tuple else (out,)
        self.out_refs = []
        values = []
        for k, o in enumerate(outs):
            if isinstance(o, list) and _contains_tracer(o):
                o = np.stack(o)
            if type(o) is Tracer and o._trace is self.trace:
                self.out_refs.append((o._node, o._idx))
                values.append(o._value)
            else:
                self.out_refs.append(None)
                values.append(_check_output(o, k))
        self.outputs = tuple(values)
        self.sweeps = 0

    def out_shape(self, i: int) -> tuple:
        return np.shape(self.outputs[i])

    def in_shape(self, j: int) -> tuple:
        return np.shape(self.inputs[self.wrt[j]])

    def connected(self, i: int, j: int) -> bool:
        """Whether output i structurally depends on differentiated input j (a path in the tape)."""
        ref = self.out_refs[i]
        return ref is not None and bool(ref[0].deps & self.in_nodes[j].deps)

    def elementwise(self, i: int, j: int) -> bool:
        """Whether output i is an elementwise function of input j, which makes d out_i / d in_j diagonal.

        True when both have the same number of elements and every operation on a path from the
        input to the output maps element k to element k (ufuncs and np.where whose traced
        arguments have the result's size; other inputs count as constants). The check reads
        the recording's structure only, never the values.
        """
        ref = self.out_refs[i]
        start = self.in_nodes[j]
        if ref is None or ref[1] is not None or not ref[0].deps & start.deps:
            return False
        size = _size(start.value)
        if _size(ref[0].value) != size:
            return False
        for node in _plan_reverse(self.trace, (ref,), start.deps):
            if node is start:
                continue
            if node.prim.structure != ELEMENTWISE or _size(node.value) != size:
                return False
            for _, parent, pidx in node.parents:
                # A traced argument of the result's size broadcasts only over length-1 axes:
                # element k still meets element k.
                if parent.deps & start.deps and (pidx is not None or _size(parent.value) != size):
                    return False
        return True

    def vjp(self, seeds: Sequence[Any | None], wrt: Sequence[int] | None = None, structured: bool = False) -> list:
        """One reverse sweep: a block of cotangents per output -> a block per differentiated input.

        With `structured`, results may be `SparseBlock`s (cheaper to scatter into a matrix).
        """
        wrt = range(len(self.wrt)) if wrt is None else wrt
        outs = [(ref, s) for ref, s in zip(self.out_refs, seeds) if ref is not None and s is not None]
        nodes = tuple(self.in_nodes[j] for j in wrt)
        if not outs:
            return [None] * len(nodes)
        self.sweeps += 1
        out = reverse(self.trace, tuple(r for r, _ in outs), tuple(s for _, s in outs), nodes)
        return out if structured else [dense(o) for o in out]

    def jvp(self, tangents: Sequence[Any | None], wrt: Sequence[int] | None = None,
            structured: bool = False) -> list:
        """One forward sweep: a block of tangents per differentiated input -> a block per output."""
        wrt = range(len(self.wrt)) if wrt is None else wrt
        pairs = [(self.in_nodes[j], t) for j, t in zip(wrt, tangents) if t is not None]
        refs = [r for r in self.out_refs if r is not None]
        if not pairs or not refs:
            return [None] * len(self.out_refs)
        self.sweeps += 1
        got = iter(forward(self.trace, tuple(n for n, _ in pairs), tuple(t for _, t in pairs), tuple(refs)))
        out = [None if r is None else next(got) for r in self.out_refs]
        return out if structured else [dense(o) for o in out]


def _size(value: Any) -> int:
    size = getattr(value, "size", 1)
    return size if type(size) is int else int(np.size(value))


def _call_user(f: Callable, args: list) -> Any:
    try:
        return f(*args)
    except ValueError as exc:
        # `out[i] = x[i]` into a plain array: NumPy replaces the TracingError raised by
        # Tracer.__float__ with "setting an array element with a sequence"; report the real cause.
        cause = exc.__cause__
        if isinstance(cause, TracingError):
            raise TracingError(
                "writing a traced value into a plain array (one made with np.zeros or np.empty) takes it out "
                "of jaccli's recording, so its derivative is lost; make the array with np.zeros_like(x) and "
                "assign into that, or collect the values in a list and np.stack them", cause.site) from None
        raise


def primal_value(a: Any, trace: Trace) -> Any:
    if type(a) is Tracer and a._trace is trace:
        return a._value
    return a


def _check_output(o: Any, k: int) -> Any:
    if type(o) is Tracer:
        return o  # traced at an outer level only: a constant here
    try:
        arr = np.asarray(o)
    except Exception:  # noqa: BLE001 - anything that is not array-like
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        what = type(o).__name__
        if isinstance(o, (list, tuple)) and o:
            what = f"a {what} of {type(o[0]).__name__}"
        elif arr is not None:
            what = f"{what} of dtype {arr.dtype}"
        raise UserFunctionError(
            f"the function returned {what} as output {k}, not an array of numbers; "
            "return a NumPy array (or a tuple of arrays)")
    return arr
