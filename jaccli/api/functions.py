"""The public functions: jacobian, hessian, vjp, jvp, hvp and grad."""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from jaccli.replay import sweep_templates
from jaccli.engine import (Recording, Tracer, as_float, attributed_to, call_traced, definition_site, dense, dtype_of,
                          holds_tracer, is_internal, primal_nested, reverse, separable, sever, shape_of, user_site)
from jaccli.errors import ConstantUnderOuterWarning, StrictModeError, UserFunctionError
from .evaluator import MODES, Evaluator, HessianEvaluator
from .lazy import Hessian, Jacobian
from .sample_mixing import check_batch_independence
from jaccli.replay.record_once import RecordOnce, record_once
from jaccli.plurals import counted

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp", "grad", "record_once"]


# ---------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------
def _as_args(inputs: Any) -> tuple[tuple, bool]:
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), True
    return (inputs,), False


def _param_names(f: Callable, n: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = params[:n]
    return names + [f"arg{k}" for k in range(len(names), n)]


def _resolve_wrt(f: Callable, args: tuple, wrt: Any, inputs_is_tuple: bool) -> tuple[tuple[int, ...], bool]:
    """Positions of the differentiated inputs, and whether results nest over inputs."""
    n = len(args)
    if wrt is None:
        return tuple(range(n)), inputs_is_tuple
    single = isinstance(wrt, (int, np.integer, str))
    if not single and not isinstance(wrt, (list, tuple, range, np.ndarray)):
        raise TypeError(f"wrt must be an int, a name, or a sequence of them, not {type(wrt).__name__}")
    items = [wrt] if single else list(wrt)
    if not items:
        raise ValueError("wrt must name at least one input")
    names = _param_names(f, n)
    out = []
    for w in items:
        if isinstance(w, str):
            if w not in names:
                raise ValueError(f"wrt: the function has no input named {w!r}; its inputs are "
                                 f"{', '.join(names)}")
            k = names.index(w)
        elif isinstance(w, (int, np.integer)) and not isinstance(w, bool):
            k = int(w)
            if not -n <= k < n:
                raise ValueError(f"wrt: input {k} is out of range for {n} input(s)")
            k %= n
        else:
            raise TypeError(f"wrt must be an int, a name, or a sequence of them, not {type(w).__name__}")
        if k in out:
            raise ValueError(f"wrt: input {names[k]!r} is listed twice")
        out.append(k)
    return tuple(out), not single


def _validate(batch_axis: Any, mode: str, chunk_size: Any, modes: Sequence[str] = MODES) -> None:
    if batch_axis is not None and (isinstance(batch_axis, bool) or batch_axis != 0
                                   or not isinstance(batch_axis, (int, np.integer))):
        raise ValueError(f"batch_axis should be None or 0, but got {batch_axis!r}.")
    if mode not in modes:
        raise ValueError(f"mode should be one of {', '.join(map(repr, modes))}, but got {mode!r}")
    if chunk_size is not None and chunk_size != "auto":
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)):
            raise ValueError(f"chunk_size should be a positive int or 'auto', but got {chunk_size!r}")
        if chunk_size <= 0:
            raise ValueError(f"chunk_size should be greater than 0, but got {chunk_size}.")


def _detach_unless(create_graph: bool, args: tuple) -> tuple:
    # Without create_graph, results do not carry an outer level's derivative (torch's rule).
    return args if create_graph else tuple(primal_nested(a) for a in args)


def _traced(args: tuple) -> bool:
    return any(type(a) is Tracer for a in args)


def _record(f: Callable, args: tuple, wrt_idx: tuple[int, ...], create_graph: bool,
            gradient_of: tuple | None = None, v: Any = None) -> tuple[Recording, bool]:
    """Record f (or, with ``gradient_of=(batch, holder)``, its gradient) at args; and whether it is fresh.

    A `record_once` function replays its recording for this signature when it can. `v`: a
    product's vector, which without create_graph is a constant too (the caller detaches it).
    """
    once = f if isinstance(f, RecordOnce) else None
    fn = _plain(f)
    if gradient_of is not None:
        fn = _gradient_function(fn, wrt_idx, *gradient_of)
    nested = not create_graph and (any(holds_tracer(a) for a in args) or holds_tracer(v))
    if nested:
        _warn_constant_under_outer()
        sever((args, v), user_site())  # (a check of the enclosing f then says why it disagrees)
    if once is None or create_graph or _traced(args):
        rec, fresh = Recording(fn, _detach_unless(create_graph, args), wrt_idx), True
    else:
        key = ("f",) if gradient_of is None else ("gradient", gradient_of[0])
        rec, fresh = once.recording(key, args, wrt_idx, lambda: Recording(fn, args, wrt_idx, replayable=True))
    _check_nonempty(rec.outputs)
    if rec.trace.outer and not create_graph:
        if not nested:  # else warned above
            _warn_constant_under_outer()
        rec.detach()  # f closes over a variable that an outer differentiation traces
    return rec, fresh


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


def _plain(f: Callable) -> Callable:
    return f.__wrapped__ if isinstance(f, RecordOnce) else f


def _nest(blocks: list[list[Any]], out_tuple: bool, in_tuple: bool) -> Any:
    if out_tuple and in_tuple:
        return tuple(tuple(row) for row in blocks)
    if out_tuple:
        return tuple(row[0] for row in blocks)
    if in_tuple:
        return tuple(blocks[0])
    return blocks[0][0]


def _connectivity(rec: Recording) -> list[list[bool]]:
    """Whether output i structurally depends on differentiated input j, for every i and j."""
    return [[rec.connected(i, j) for j in range(len(rec.wrt))] for i in range(len(rec.outputs))]


def _check_strict(connected: list[list[bool]], wrt: tuple[int, ...], names: list[str],
                  hessian: bool = False) -> None:
    for i, row in enumerate(connected):
        for j, k in enumerate(wrt):
            if not row[j]:
                if hessian:
                    raise StrictModeError(
                        f"While computing the hessian, found that the gradient with respect to input {i} "
                        f"({names[wrt[i]]!r}) is independent of input {j} ({names[k]!r}): no path in the "
                        "recorded computation. This is not allowed in strict mode; the function must be "
                        "twice differentiable with a gradient that depends on the inputs.")
                raise StrictModeError(
                    f"Output {i} of the user-provided function is independent of input {j} ({names[k]!r}): no "
                    "path in the recorded computation leads from it to the output. This is not allowed in "
                    "strict mode.")


def _derivative_depends(fn: Callable, args: tuple, wrt_idx: tuple[int, ...], site: Any) -> list[list[bool]]:
    """Whether the derivative of output i of fn w.r.t. differentiated input j structurally depends on
    a differentiated input: torch's strict check under create_graph=True (a function linear in its
    inputs has a constant derivative). One reverse sweep per output, seeded with ones (the union of
    its rows' structure) and recorded, at the plain values of args: one more call of fn."""
    n = len(wrt_idx)

    def sweeps(*xs: Any) -> tuple:
        trace = xs[wrt_idx[0]]._trace
        _, outs, refs = call_traced(fn, xs, trace)
        in_nodes = tuple(xs[k]._node for k in wrt_idx)
        cts: list = []
        for out, ref in zip(outs, refs):
            grads = [None] * n
            if ref is not None:
                with attributed_to(site):
                    grads = reverse(trace, (ref,), (np.ones((1,) + shape_of(out)),), in_nodes, traced=True)
            cts.extend(np.zeros(()) if g is None else dense(g) for g in grads)
        return tuple(cts)

    rec = Recording(sweeps, primal_nested(args), wrt_idx)
    return [[any(rec.connected(i * n + j, k) for k in range(n)) for j in range(n)]
            for i in range(len(rec.outputs) // n)]


def _graph_error(what: str, hessian: bool) -> StrictModeError:
    example = "a quadratic function such as a @ a or a * b has a constant hessian" if hessian else \
        "a linear function such as 3 * a has a constant jacobian"
    return StrictModeError(
        f"With create_graph=True, {what} is independent of the inputs: no path in the recorded derivative "
        f"leads from an input to it ({example}). This is not allowed in strict mode when create_graph=True; "
        "pass create_graph=False or strict=False.")


def _check_strict_graph(depends: list[list[bool]], connected: list[list[bool]], wrt: tuple[int, ...],
                        names: list[str], blocks: list[list[Any]] | None = None, hessian: bool = False) -> None:
    """strict with create_graph: every derivative block must depend on the inputs (torch's rule).

    `blocks`: the blocks computed under an outer differentiation; one that it traces (through a value
    that f closes over, or a traced data input) depends on something the outer level differentiates,
    as torch's requires_grad would say, and passes."""
    for i, row in enumerate(depends):
        for j, k in enumerate(wrt):
            if row[j] or not connected[i][j] or (blocks is not None and type(blocks[i][j]) is Tracer):
                continue
            raise _graph_error(f"the hessian block of inputs {i} ({names[wrt[i]]!r}) and {j} ({names[k]!r})"
                               if hessian else f"the jacobian of output {i} of the user-provided function with "
                               f"respect to input {j} ({names[k]!r})", hessian)


def _check_strict_products(depends: list[list[bool]], results: list, per_output: bool, what: str,
                           names: list[str], wrt: tuple[int, ...], hessian: bool = False) -> None:
    """strict with create_graph for a product: each of its `results` (one per output of the derivative
    with `per_output`, else one per input) must depend on the inputs, through some block of `depends`;
    a result an outer differentiation traces (through v, say) passes, as for `_check_strict_graph`."""
    for r, res in enumerate(results):
        line = depends[r] if per_output else [row[r] for row in depends]
        if not any(line) and type(res) is not Tracer:
            label = f"for output {r}" if per_output and not hessian else f"with respect to input {r} ({names[wrt[r]]!r})"
            raise _graph_error(f"the {what} {label}", hessian)


def _check_strict_product(connected: list[list[bool]], wrt: tuple[int, ...], names: list[str],
                          hessian: bool = False) -> None:
    """The products in strict mode (torch's): every output (with `hessian`, every gradient, for hvp
    and vhp) depends on some input, and every input reaches some output (gradient)."""
    for i, row in enumerate(connected):
        if not any(row):
            if hessian:
                raise StrictModeError(
                    f"While computing the hessian, found that the gradient with respect to input {i} "
                    f"({names[wrt[i]]!r}) is independent of the inputs: no path in the recorded computation. This "
                    "is not allowed in strict mode; the function must be twice differentiable with a gradient "
                    "that depends on the inputs (a linear function has a constant one).")
            raise StrictModeError(
                f"Output {i} of the user-provided function does not depend on any differentiated input: no path "
                "in the recorded computation. The outputs must be computed in a differentiable manner from the "
                "input when running in strict mode.")
    for j, k in enumerate(wrt):
        if not any(row[j] for row in connected):
            if hessian:
                raise StrictModeError(
                    f"While computing the hessian, found that no gradient of the user-provided function depends "
                    f"on input {j} ({names[k]!r}): no path in the recorded computation. This is not allowed in "
                    "strict mode.")
            raise StrictModeError(
                f"The output of the user-provided function is independent of input {j} ({names[k]!r}): no path "
                "in the recorded computation leads from it to an output. This is not allowed in strict mode.")


def _check_batch_shapes(rec: Recording, batch: bool) -> None:
    if not batch:
        return
    sizes = {np.shape(rec.inputs[k])[0] if np.ndim(rec.inputs[k]) else None for k in rec.wrt}
    sizes |= {np.shape(o)[0] if np.ndim(o) else None for o in rec.outputs}
    if None in sizes:
        raise ValueError("batch_axis=0 needs every differentiated input and every output to have a batch "
                         "axis 0; a 0-d array has none")
    if len(sizes) > 1:
        raise ValueError(f"batch_axis=0: inconsistent batch sizes {sorted(sizes)} on axis 0 of the inputs and "
                         "outputs; every one must have the same number of samples")


def _result_dtype(rec: Recording, i: int, j: int, mode: str) -> np.dtype:
    # The anchors' rule: reverse mode gives the input's dtype, forward mode the output's.
    if mode == "forward":
        dt = np.result_type(rec.outputs[i])
    else:
        dt = np.result_type(rec.inputs[rec.wrt[j]])
    return dt if dt.kind == "f" else np.dtype(np.float64)


# ---------------------------------------------------------------------------
# jacobian and hessian
# ---------------------------------------------------------------------------
def jacobian(f: Callable, inputs: Any, *, wrt: Any = None, batch_axis: int | None = None, strict: bool = False,
             mode: str = "auto", chunk_size: int | str | None = None, create_graph: bool = False) -> Any:
    """Lazy Jacobian of f at `inputs`.

    Args:
        f: a function of NumPy arrays returning an array or a tuple of arrays.
        inputs: an array, or a tuple/list of arrays passed to f as positional arguments.
        wrt: which inputs to differentiate (positions or parameter names); the others are data.
        batch_axis: None, or 0 for per-sample Jacobians ``(B,) + out.shape[1:] + in.shape[1:]``.
        strict: raise when an output is structurally independent of a differentiated input.
        mode: "auto" (reverse for rows, forward when fewer columns are needed), "reverse", "forward".
        chunk_size: seeds per sweep (an int), or None/"auto" for a memory budget.
        create_graph: keep results differentiable when f is itself being differentiated.

    Returns:
        A `Jacobian` (``J.shape == f(x).shape + x.shape``), or tuples of them: ``J[i][j]`` for
        tuple outputs and tuple inputs, a flat tuple when only one side is a tuple.

    >>> import numpy as np, jaccli
    >>> J = jaccli.jacobian(lambda x: x ** 2, np.array([1.0, 2.0, 3.0]))
    >>> J.shape, J[1]
    ((3, 3), array([0., 4., 0.]))
    """
    args, inputs_is_tuple = _as_args(inputs)
    wrt_idx, in_tuple = _resolve_wrt(f, args, wrt, inputs_is_tuple)
    _validate(batch_axis, mode, chunk_size)
    rec, _ = _record(f, args, wrt_idx, create_graph)
    _check_batch_shapes(rec, batch_axis == 0)
    check = None
    if strict:
        names, connected = _param_names(f, len(args)), _connectivity(rec)
        _check_strict(connected, rec.wrt, names)
        if create_graph:
            depends = _derivative_depends(_plain(f), args, wrt_idx, definition_site(_plain(f)))
            check = lambda blocks=None: _check_strict_graph(depends, connected, rec.wrt, names, blocks)  # noqa: E731
    if create_graph and (rec.trace.outer or _traced(args)):  # f's inputs, or values it uses, are traced outside
        return _eager_traced(rec, f, args, batch_axis, in_tuple, rec.out_is_tuple, check=check)
    if check is not None:
        check()
    ev = Evaluator(rec, batch=batch_axis == 0, mode=mode, chunk_size=chunk_size)
    blocks = [[Jacobian(ev, i, j, _result_dtype(rec, i, j, mode)) for j in range(len(wrt_idx))]
              for i in range(len(rec.outputs))]
    return _nest(blocks, rec.out_is_tuple, in_tuple)


def _gradient_function(f: Callable, wrt_idx: tuple[int, ...], batch: bool, holder: dict) -> Callable:
    """x -> the gradient of scalar f (per sample when batched), recorded when x is traced."""
    site = definition_site(f)

    def grad_fn(*xs: Any) -> tuple:
        # xs[k] (k in wrt_idx) are the inputs of the recording that is calling grad_fn: f is
        # recorded on it and differentiated there, and the gradient's operations follow f's.
        trace = xs[wrt_idx[0]]._trace
        out_is_tuple, outs, refs = call_traced(f, xs, trace)
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
            return sweep_templates.gradient(f, (wrt_idx, batch), trace, ref, shape, sweep)
        return sweep()
    return grad_fn


def hessian(f: Callable, inputs: Any, *, wrt: Any = None, batch_axis: int | None = None, strict: bool = False,
            mode: str = "forward", chunk_size: int | str | None = None, create_graph: bool = False) -> Any:
    """Lazy Hessian of a scalar f at `inputs`.

    Args:
        f: a function returning one scalar (any shape with one element), or one per sample
            with ``batch_axis=0``.
        inputs: an array, or a tuple/list of arrays.
        wrt: which inputs to differentiate (positions or names).
        batch_axis: None, or 0 for per-sample Hessians ``(B,) + x.shape[1:] * 2``.
        strict: raise when a gradient is structurally independent of an input.
        mode: the outer mode: "forward" (forward-over-reverse, the default) or "reverse"
            (reverse-over-reverse); "auto" means "forward".
        chunk_size: Hessian-vector products per sweep, or None/"auto".
        create_graph: keep results differentiable under an outer differentiation.

    Returns:
        A `Hessian` (``H.shape == x.shape + x.shape``) or, for several inputs, ``H[i][j]`` blocks
        of shape ``x_i.shape + x_j.shape``.

    >>> import numpy as np, jaccli
    >>> H = jaccli.hessian(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]))
    >>> H.shape, np.asarray(H)
    ((2, 2), array([[ 6.,  0.],
           [ 0., 12.]]))
    """
    args, inputs_is_tuple = _as_args(inputs)
    wrt_idx, in_tuple = _resolve_wrt(f, args, wrt, inputs_is_tuple)
    _validate(batch_axis, mode, chunk_size)
    rec = _gradient_recording(f, args, wrt_idx, create_graph, batch_axis == 0)
    check = None
    if strict:
        names, connected = _param_names(f, len(args)), _connectivity(rec)
        _check_strict(rec.kept_value("inner_connected"), rec.wrt, names)
        _check_strict(connected, rec.wrt, names, hessian=True)
        if create_graph:
            gradient = _gradient_function(_plain(f), wrt_idx, batch_axis == 0, {"name": "hessian"})
            depends = _derivative_depends(gradient, args, wrt_idx, definition_site(_plain(f)))
            check = lambda blocks=None: _check_strict_graph(depends, connected, rec.wrt, names, blocks,  # noqa: E731
                                                            hessian=True)
    if create_graph and (rec.trace.outer or _traced(args)):
        return _eager_traced(rec, f, args, batch_axis, in_tuple, in_tuple, gradient=True, check=check)
    if check is not None:
        check()
    outer = "reverse" if mode == "reverse" else "forward"
    ev = HessianEvaluator(rec, batch=batch_axis == 0, mode=outer, chunk_size=chunk_size)
    ev.value = rec.kept_value("value")
    blocks = [[Hessian(ev, i, j, np.result_type(rec.inputs[k])) for j, k in enumerate(wrt_idx)]
              for i in range(len(wrt_idx))]
    return _nest(blocks, in_tuple, in_tuple)


def _gradient_recording(f: Callable, args: tuple, wrt_idx: tuple[int, ...], create_graph: bool,
                        batch: bool, name: str = "hessian", v: Any = None) -> Recording:
    """The recording of f's gradient; it keeps f's value and the inner connectivity for replays.
    `name`: the function asking, for the messages (hessian, hvp or vhp); `v`: as for `_record`."""
    holder: dict = {"name": name}
    rec, fresh = _record(f, args, wrt_idx, create_graph, gradient_of=(batch, holder), v=v)
    if fresh:
        rec.keep("value", holder["traced_value"])
        rec.keep("inner_connected", holder["inner_connected"])
    return rec


def _eager_traced(rec: Recording, f: Callable, args: tuple, batch_axis: Any, in_tuple: bool, out_tuple: bool,
                  gradient: bool = False, check: Callable | None = None) -> Any:
    """Under an outer differentiation with create_graph=True: full blocks as traced arrays.

    `rec` is the recording of f (of its gradient, with `gradient`) whose values the outer level
    traces; the blocks are computed at once, so that the outer level records their operations.
    `check`: strict mode's, called with the blocks ``[i][j]`` before they are returned.
    """
    wrt_idx = rec.wrt
    batch = batch_axis == 0
    if batch:
        # Seeds for all samples at once: right only when no sample depends on another. The check
        # runs on f at the plain values (the outer level need not record it).
        plain = _gradient_recording(f, primal_nested(args), wrt_idx, False, True) if gradient \
            else Recording(_plain(f), primal_nested(args), wrt_idx)
        if not separable(plain.trace, np.shape(plain.outputs[0])[0]):
            check_batch_independence(plain, np.shape(plain.outputs[0])[0])
    blocks = []
    for i, out in enumerate(rec.outputs):
        oshape = np.shape(out)
        m = int(np.prod(oshape[1:] if batch else oshape))
        row = []
        # A dense identity here: the sweep's values are traced (an outer differentiation is
        # recording), and structured seeds turn dense when they meet traced values anyway.
        seed = np.eye(m).reshape((m,) + (oshape[1:] if batch else oshape))
        if batch:
            seed = np.broadcast_to(seed[:, None], (m,) + oshape)
        cts = rec.vjp([seed if o == i else None for o in range(len(rec.outputs))])
        for j, k in enumerate(wrt_idx):
            ishape = np.shape(args[k])
            ct = cts[j]
            if ct is None:
                ct = np.zeros((m,) + ishape)
            if batch:
                block = np.moveaxis(np.reshape(ct, (m, oshape[0], -1)), 0, 1)
                row.append(np.reshape(block, (oshape[0],) + oshape[1:] + ishape[1:]))
            else:
                row.append(np.reshape(ct, oshape + ishape))
        blocks.append(row)
    if check is not None:
        check(blocks)
    return _nest(blocks, out_tuple, in_tuple)


# ---------------------------------------------------------------------------
# Products and the gradient
# ---------------------------------------------------------------------------
def _check_v(v: Any, shapes: list[tuple], side: str, what: str) -> list[np.ndarray]:
    if v is None:
        if len(shapes) == 1 and int(np.prod(shapes[0])) == 1:
            return [np.ones(shapes[0])]
        raise ValueError(f"The vector v can only be None if the {side} of the user-provided function is a single "
                         "array with a single element.")
    vs = list(v) if isinstance(v, (tuple, list)) and len(shapes) > 1 else [v]
    if len(vs) != len(shapes):
        raise ValueError(f"v is a tuple of invalid length: should be {len(shapes)} but got {len(vs)}.")
    out = []
    for k, (vk, shape) in enumerate(zip(vs, shapes)):
        entry = f"Entry {k} in " if len(shapes) > 1 else ""
        if type(vk) is not Tracer and np.iscomplexobj(vk):
            raise ValueError(f"{entry}v is complex; jaccli differentiates real functions: give a real v "
                             "(its real and imaginary parts one at a time)")
        arr = np.asarray(_vector_as_float(vk, entry), dtype=float) if type(vk) is not Tracer else vk
        if np.shape(arr) != tuple(shape):
            # A flat v of the right size is read in row-major order, and a v whose shape differs only
            # by axes of length 1 ((1, 3) for (3,)) is reshaped; any other shape is refused, since
            # reshaping it (a transposed v) would give a product with the entries mismatched.
            squeezed = tuple(n for n in np.shape(arr) if n != 1) == tuple(n for n in shape if n != 1)
            if squeezed or (np.ndim(arr) == 1 and int(np.size(arr)) == int(np.prod(shape))):
                arr = np.reshape(arr, shape)
            else:
                raise ValueError(f"{entry}v has invalid size: should be {tuple(shape)} but got {np.shape(arr)} "
                                 f"({what}; a flat v of {counted(int(np.prod(shape)), 'entry')} is also read, "
                                 "row-major, and axes of length 1 may be added or left out).")
        out.append(arr)
    return out


def _vector_as_float(vk: Any, entry: str) -> Any:
    """vk checked as the inputs are (`as_float`): a masked array, None, or an array of objects,
    strings or dates is refused, not read as numbers with its mask dropped. The message names v."""
    try:
        return as_float(vk)
    except TypeError as e:
        vector = f"{entry.lower()}the vector v"
        message = str(e).replace("an input to differentiate", vector)
        raise TypeError(message if message != str(e) else f"{vector}: {e}") from None


def _value(rec: Recording) -> Any:
    return tuple(rec.outputs) if rec.out_is_tuple else rec.outputs[0]


def _shaped(block: Any, like: Any) -> Any:
    """One seed's product block shaped and typed like `like`; None (a structural zero) gives zeros."""
    if block is None:
        return np.zeros(np.shape(like), dtype=np.result_type(like))
    return _cast(np.reshape(block, np.shape(like)), like)


def vjp(f: Callable, inputs: Any, v: Any = None, *, wrt: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(f(inputs), v^T J)``: one reverse sweep, without forming J.

    `strict` (torch's): raise when an output depends on no input or an input reaches no output;
    with create_graph, also when the product is independent of the inputs (f linear in them).

    >>> import numpy as np, jaccli
    >>> jaccli.vjp(lambda x: x ** 2, np.array([1.0, 2.0]), np.array([1.0, 1.0]))[1]
    array([2., 4.])
    """
    args, inputs_is_tuple = _as_args(inputs)
    wrt_idx, in_tuple = _resolve_wrt(f, args, wrt, inputs_is_tuple)
    rec, _ = _record(f, args, wrt_idx, create_graph, v=v)
    if strict:
        _check_strict_product(_connectivity(rec), rec.wrt, _param_names(f, len(args)))
    (v,) = _detach_unless(create_graph, (v,))
    vs = _check_v(v, [np.shape(o) for o in rec.outputs], "output", "the output's shape")
    cts = rec.vjp([vk[None] for vk in vs])
    res = [_shaped(ct, rec.inputs[k]) for ct, k in zip(cts, wrt_idx)]
    if strict and create_graph:
        _check_strict_products(_derivative_depends(_plain(f), args, wrt_idx, definition_site(_plain(f))), res,
                               False, "vector-jacobian product", _param_names(f, len(args)), wrt_idx)
    return _value(rec), (tuple(res) if in_tuple else res[0])


def jvp(f: Callable, inputs: Any, v: Any = None, *, wrt: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(f(inputs), J v)``: one forward sweep, without forming J. `strict` as for `vjp`.

    >>> import numpy as np, jaccli
    >>> jaccli.jvp(lambda x: x ** 2, np.array([1.0, 2.0]), np.array([1.0, 0.0]))[1]
    array([2., 0.])
    """
    args, inputs_is_tuple = _as_args(inputs)
    wrt_idx, in_tuple = _resolve_wrt(f, args, wrt, inputs_is_tuple)
    rec, _ = _record(f, args, wrt_idx, create_graph, v=v)
    if strict:
        _check_strict_product(_connectivity(rec), rec.wrt, _param_names(f, len(args)))
    (v,) = _detach_unless(create_graph, (v,))
    vs = _check_v(v, [rec.in_shape(j) for j in range(len(wrt_idx))], "input", "the input's shape")
    outs = rec.jvp([vk[None] for vk in vs])
    res = [_shaped(t, o) for t, o in zip(outs, rec.outputs)]
    if strict and create_graph:
        _check_strict_products(_derivative_depends(_plain(f), args, wrt_idx, definition_site(_plain(f))), res,
                               True, "jacobian-vector product", _param_names(f, len(args)), wrt_idx)
    return _value(rec), (tuple(res) if rec.out_is_tuple else res[0])


def _gradient_product(f: Callable, inputs: Any, v: Any, wrt: Any, create_graph: bool, strict: bool,
                      reverse: bool) -> tuple:
    """``(f(inputs), product)``: one sweep over f's recorded gradient seeded with v, forward (H v) or
    reverse (v^T H)."""
    args, inputs_is_tuple = _as_args(inputs)
    wrt_idx, in_tuple = _resolve_wrt(f, args, wrt, inputs_is_tuple)
    name = "vhp" if reverse else "hvp"
    rec = _gradient_recording(f, args, wrt_idx, create_graph, False, name, v)
    if strict:
        names = _param_names(f, len(args))
        _check_strict_product(rec.kept_value("inner_connected"), rec.wrt, names)
        _check_strict_product(_connectivity(rec), rec.wrt, names, hessian=True)
    (v,) = _detach_unless(create_graph, (v,))
    vs = _check_v(v, [rec.in_shape(j) for j in range(len(wrt_idx))], "input", "the input's shape")
    seeds = [vk[None] for vk in vs]
    outs = rec.vjp(seeds) if reverse else rec.jvp(seeds)
    res = [_shaped(t, rec.inputs[k]) for t, k in zip(outs, wrt_idx)]
    if strict and create_graph:
        gradient = _gradient_function(_plain(f), wrt_idx, False, {"name": name})
        _check_strict_products(_derivative_depends(gradient, args, wrt_idx, definition_site(_plain(f))), res,
                               not reverse, "vector-hessian product" if reverse else "hessian-vector product",
                               names, wrt_idx, hessian=True)
    return rec.kept_value("value"), (tuple(res) if in_tuple else res[0])


def hvp(f: Callable, inputs: Any, v: Any = None, *, wrt: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(f(inputs), H v)`` for scalar f: one forward sweep over the recorded gradient.

    `strict` (torch's): raise when f depends on no input, an input does not reach f, or a gradient
    is independent of the inputs (f linear there); with create_graph, also when the product is
    (f quadratic there).

    >>> import numpy as np, jaccli
    >>> jaccli.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 1.0]))[1]
    array([ 6., 12.])
    """
    return _gradient_product(f, inputs, v, wrt, create_graph, strict, reverse=False)


def vhp(f: Callable, inputs: Any, v: Any = None, *, wrt: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(f(inputs), v^T H)`` for scalar f: one reverse sweep over the recorded gradient
    (reverse over reverse, as torch.autograd.functional.vhp). H is symmetric where f is twice
    continuously differentiable, so this equals `hvp`'s H v; `hvp`'s forward sweep is the cheaper one.
    `strict` as for `hvp`.

    >>> import numpy as np, jaccli
    >>> jaccli.vhp(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]), np.array([1.0, 0.0]))[1]
    array([4., 2.])
    """
    return _gradient_product(f, inputs, v, wrt, create_graph, strict, reverse=True)


def grad(f: Callable, inputs: Any, *, wrt: Any = None, create_graph: bool = False) -> Any:
    """Gradient of a scalar f: an array shaped like the input (a tuple for several inputs).

    >>> import numpy as np, jaccli
    >>> jaccli.grad(lambda x: (x ** 2).sum(), np.array([1.0, 2.0]))
    array([2., 4.])
    """
    args, inputs_is_tuple = _as_args(inputs)
    wrt_idx, in_tuple = _resolve_wrt(f, args, wrt, inputs_is_tuple)
    rec, _ = _record(f, args, wrt_idx, create_graph)
    if rec.out_is_tuple or int(np.prod(np.shape(rec.outputs[0]))) != 1:
        shape = "a tuple" if rec.out_is_tuple else f"shape {np.shape(rec.outputs[0])}"
        raise ValueError(f"grad needs a function with one scalar output, but f returns {shape}; use jacobian "
                         "for vector outputs, or reduce the output (e.g. .sum())")
    seed = np.ones((1,) + np.shape(rec.outputs[0]))
    cts = rec.vjp([seed])
    res = [_shaped(ct, rec.inputs[k]) for ct, k in zip(cts, wrt_idx)]
    return tuple(res) if in_tuple else res[0]


def _cast(value: Any, like: Any) -> Any:
    if type(value) is Tracer:
        return value
    dt = np.result_type(like)
    return value.astype(dt) if dt.kind == "f" and value.dtype != dt else value
