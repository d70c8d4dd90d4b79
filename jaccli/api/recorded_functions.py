"""f, or its gradient, recorded at the inputs for the public functions (a record_once replay when it can be)."""

from __future__ import annotations

import math
import sys
import warnings
from typing import Any, Callable

import numpy as np

from jaccli.engine import (Recording, Tracer, attributed_to, call_traced, definition_site, dense, dtype_of,
                          holds_tracer, is_internal, primal_nested, reverse, sever, shape_of, take_second_order_forms,
                          user_site)
from jaccli.errors import ConstantUnderOuterWarning, UserFunctionError

from .complex_functions import refuse_complex_value


# record_once's modules by name, under this package's own name (benchmarks.ab loads a copy of it as jaccli_ab)
_REPLAY = f"{__name__.partition('.')[0]}.replay"
_RECORD_ONCE = f"{_REPLAY}.record_once"


def record_once_of(f: Callable) -> Any:
    """f when it is a record_once function, else None.

    jaccli.replay (record_once's package: replays, compiled sweeps) loads only when a program uses it,
    not for every `jaccli jacobian` process: until then, no f can be a RecordOnce.
    """
    module = sys.modules.get(_RECORD_ONCE)
    return f if module is not None and isinstance(f, module.RecordOnce) else None


def detach_unless(create_graph: bool, args: tuple) -> tuple:
    # Without create_graph, results do not carry an outer level's derivative (torch's rule).
    if create_graph:
        return args
    for a in args:
        if type(a) is not np.ndarray:
            return tuple(primal_nested(a) for a in args)
    return args  # (plain arrays are their own plain values: what the line above gives)


def any_traced(args: tuple) -> bool:
    """Whether an enclosing differentiation traces one of the inputs themselves."""
    return any(type(a) is Tracer for a in args)


def record(f: Callable, args: tuple, wrt_idx: tuple[int, ...], create_graph: bool,
           gradient_of: tuple | None = None, v: Any = None) -> tuple[Recording, bool]:
    """Record f (or, with ``gradient_of=(batch, holder)``, its gradient) at args; and whether it is fresh.

    A `record_once` function replays its recording for this signature when it can. `v`: a
    product's vector, which without create_graph is a constant too (the caller detaches it).
    """
    once = record_once_of(f)
    fn = f if once is None else f.__wrapped__
    if gradient_of is not None:
        fn = gradient_function(fn, wrt_idx, *gradient_of)
    nested = not create_graph and not _plain_arrays(args, v) and (any(holds_tracer(a) for a in args) or holds_tracer(v))
    if nested:
        _warn_constant_under_outer()
        sever((args, v), user_site())  # (a check of the enclosing f then says why it disagrees)
    if once is None or create_graph or any_traced(args):
        rec, fresh = Recording(fn, detach_unless(create_graph, args), wrt_idx), True
        if create_graph and gradient_of is None and rec.trace.outer:
            take_second_order_forms(rec.trace, create_graph=True)  # an enclosing level differentiates it
    else:
        key = ("f",) if gradient_of is None else ("gradient", gradient_of[0])
        replay = sys.modules[_REPLAY]  # (loaded with record_once: no import statement per call)
        rec, fresh = once.recording(key, args, wrt_idx, lambda: replay.Replayable(fn, args, wrt_idx))
    if not rec.outputs:
        _check_nonempty(rec.outputs)
    if rec.trace.outer and not create_graph:
        if not nested:  # else warned above
            _warn_constant_under_outer()
        rec.detach()  # f closes over a variable that an outer differentiation traces
    return rec, fresh


def _plain_arrays(args: tuple, v: Any) -> bool:
    """Whether the arguments and v are plain arrays (v may be None), which hold no traced value: the
    common call, answered without holds_tracer's walk."""
    for a in args:
        if type(a) is not np.ndarray:
            return False
    return v is None or type(v) is np.ndarray


def _check_nonempty(outputs: tuple) -> None:
    if not outputs:  # (torch.func refuses it too)
        raise UserFunctionError("the function returned an empty tuple, which has nothing to differentiate; "
                                "return a NumPy array (or a tuple of arrays)")


def _warn_constant_under_outer() -> None:
    """Warn, at the caller's line, that a result will be a constant to an enclosing differentiation."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is the caller's frame, sys._getframe(1)
    while frame is not None and is_internal(frame.f_code):  # jaccli's own frames (and NumPy's)
        level, frame = level + 1, frame.f_back
    warnings.warn("a derivative taken of values that an enclosing jaccli differentiation traces, without "
                  "create_graph=True, is a constant to it (the outer derivative through it is zero, "
                  "torch's rule); pass create_graph=True to differentiate through it",
                  ConstantUnderOuterWarning, stacklevel=level)


def unwrapped(f: Callable) -> Callable:
    """The user's function itself, out of a record_once wrapper."""
    return f.__wrapped__ if record_once_of(f) is not None else f


def gradient_function(f: Callable, wrt_idx: tuple[int, ...], batch: bool, holder: dict) -> Callable:
    """x -> the gradient of scalar f (per sample when batched), recorded when x is traced."""
    from jaccli.replay import sweep_templates

    site = definition_site(f)

    def grad_fn(*xs: Any) -> tuple:
        # xs[k] (k in wrt_idx) are the inputs of the recording that is calling grad_fn: f is
        # recorded on it and differentiated there, and the gradient's operations follow f's.
        trace = xs[wrt_idx[0]]._trace
        out_is_tuple, outs, refs = call_traced(f, xs, trace)
        take_second_order_forms(trace)  # the gradient is differentiated again: its conventions at kinks
        _check_nonempty(outs)
        name = holder.get("name", "hessian")
        if out_is_tuple and len(outs) != 1:
            raise ValueError(f"{name} needs a function with a single scalar output, but f returns a tuple of "
                             f"{len(outs)} arrays; return one of them")
        out, ref = outs[0], refs[0]
        shape = shape_of(out)
        if batch:
            if len(shape) not in (1, 2) or (len(shape) == 2 and shape[1] != 1):
                raise ValueError(f"hessian with batch_axis=0 needs one scalar per sample (an output of shape "
                                 f"(B,) or (B, 1)), but f returns shape {shape}")
        elif math.prod(shape) != 1:
            # (only hessian takes batch_axis: hvp and vhp have none)
            per_sample = ", or use batch_axis=0 for per-sample Hessians" if name == "hessian" else ""
            raise ValueError(f"{name} needs a scalar output, but f returns shape {shape}; pick one element "
                             f"(e.g. lambda x: f(x)[0]) or reduce it (.sum()){per_sample}")
        refuse_complex_value(out, name)
        holder["traced_value"] = out  # f's value, kept by the recording (Recording.keep)
        in_nodes = tuple(xs[k]._node for k in wrt_idx)
        holder["inner_connected"] = [[ref is not None and bool(ref[0].deps & n.deps) for n in in_nodes]]
        if ref is None:
            return tuple(np.zeros(np.shape(xs[k])) for k in wrt_idx)
        dtype = dtype_of(out)
        seed = np.ones((1,) + shape, dtype=dtype if dtype.kind == "f" else float)

        def sweep() -> tuple:
            with attributed_to(site):  # the gradient's operations belong to f, not to the caller of hessian()
                grads = reverse(trace, (ref,), (seed,), in_nodes, traced=True)
                return tuple(np.zeros(np.shape(xs[k])) if g is None else np.reshape(dense(g), np.shape(xs[k]))
                             for g, k in zip(grads, wrt_idx))
        if sweep_templates.usable(trace):  # f may record the same operations as last time: replay the sweep
            return sweep_templates.gradient(f, (wrt_idx, batch), trace, ref, shape, sweep, holder)
        return sweep()
    return grad_fn


def gradient_recording(f: Callable, args: tuple, wrt_idx: tuple[int, ...], create_graph: bool,
                       batch: bool, name: str = "hessian", v: Any = None) -> Recording:
    """The recording of f's gradient; it keeps f's value and the inner connectivity for replays.
    `name`: the function asking, for the messages (hessian, hvp or vhp); `v`: as for `record`."""
    holder: dict = {"name": name}
    rec, fresh = record(f, args, wrt_idx, create_graph, gradient_of=(batch, holder), v=v)
    if fresh:
        rec.keep("value", holder["traced_value"])
        rec.keep("inner_connected", holder["inner_connected"])
        rec.path = holder.get("path", rec.path)
    return rec
