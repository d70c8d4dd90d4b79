"""jacobian and hessian: lazy Jacobian and Hessian objects over one recording of f (of its gradient)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.engine import Recording, definition_site, is_complex, primal_nested, separable

from .arguments import as_args, param_names, resolve_wrt, validate_options
from .complex_functions import complex_arg, complex_jacobian, holomorphic_hessian, refuse_complex_inputs
from .evaluator import MODES, Evaluator
from .hessian_evaluator import HessianEvaluator
from .lazy import Hessian, Jacobian
from .recorded_functions import any_traced, gradient_function, gradient_recording, record, record_once_of, unwrapped
from .sample_mixing import check_batch_independence
from .steady_calls import lane_block, steady_block
from .strict_mode import check_strict, check_strict_graph, connectivity, derivative_depends

__all__ = ["jacobian", "hessian"]

# What a record_once recording is marked with (in its `structure`, shared with its replays) once a
# jacobian (hessian) call with the default options found its outputs fit: its replays are then
# taken straight to their lazy blocks (`_steady`), those checks passed as the recording passed them.
_JACOBIAN_CHECKED, _HESSIAN_CHECKED = "jacobian's checks passed", "hessian's checks passed"


def _nest(blocks: list[list[Any]], out_tuple: bool, in_tuple: bool) -> Any:
    if out_tuple and in_tuple:
        return tuple(tuple(row) for row in blocks)
    if out_tuple:
        return tuple(row[0] for row in blocks)
    if in_tuple:
        return tuple(blocks[0])
    return blocks[0][0]


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


def jacobian(f: Callable, inputs: Any, *, wrt: Any = None, batch_axis: int | None = None, strict: bool = False,
             mode: str = "auto", chunk_size: int | str | None = None, create_graph: bool = False,
             holomorphic: bool = False) -> Any:
    """Lazy Jacobian of f at `inputs`.

    Args:
        f: a function of NumPy arrays returning an array or a tuple of arrays.
        inputs: an array, or a tuple/list of arrays passed to f as positional arguments.
        wrt: which inputs to differentiate (positions or parameter names); the others are data.
        batch_axis: None, or 0 for per-sample Jacobians ``(B,) + out.shape[1:] + in.shape[1:]``.
        strict: raise when an output is structurally independent of a differentiated input.
        mode: "auto" (reverse for rows, forward when fewer columns are needed, or as many in a
            large block where f's reverse rules cost more: real FFTs), "reverse", "forward".
        chunk_size: seeds per sweep (an int), or None/"auto" for a memory budget.
        create_graph: keep results differentiable when f is itself being differentiated.
        holomorphic: f is holomorphic in its complex inputs: J is f'(z) (as JAX's holomorphic=True).

    Returns:
        A `Jacobian` (``J.shape == f(x).shape + x.shape``), or tuples of them: ``J[i][j]`` for
        tuple outputs and tuple inputs, a flat tuple when only one side is a tuple. Where an input
        or an output is complex, complex NumPy arrays instead, by JAX's conventions (docs/complex.md).

    >>> import numpy as np, jaccli
    >>> J = jaccli.jacobian(lambda x: x ** 2, np.array([1.0, 2.0, 3.0]))
    >>> J.shape, J[1]
    ((3, 3), array([0., 4., 0.]))
    """
    if _steady(f, inputs, wrt, batch_axis, chunk_size, strict or create_graph or holomorphic, mode):
        block = lane_block(f, inputs, Jacobian, mode)
        if type(block) is not Jacobian:  # (no lane, or it gave way: the usual steady way, from its replay if made)
            block = steady_block(f, inputs, Jacobian, Evaluator, mode, ("f",), _JACOBIAN_CHECKED,
                                 ("result dtype", 0, 0, mode), _steady_jacobian_evaluator,
                                 lambda rec: _jacobian_blocks(rec, f, (inputs,), (0,), False, None, mode, None), block)
        if block is not None:
            return block
    args, inputs_is_tuple = as_args(inputs)
    wrt_idx, in_tuple = resolve_wrt(f, args, wrt, inputs_is_tuple)
    validate_options(batch_axis, mode, chunk_size)
    options = dict(batch_axis=batch_axis, strict=strict, mode=mode, chunk_size=chunk_size, create_graph=create_graph)
    if holomorphic or any(complex_arg(args[k]) for k in wrt_idx):
        return complex_jacobian(jacobian, f, args, wrt_idx, in_tuple, holomorphic, batch_axis == 0, **options)
    rec, _ = record(f, args, wrt_idx, create_graph)
    if any(is_complex(o) for o in rec.outputs):
        return complex_jacobian(jacobian, f, args, wrt_idx, in_tuple, False, batch_axis == 0, **options)
    _check_batch_shapes(rec, batch_axis == 0)
    check = None
    if strict:
        names, connected = param_names(f, len(args)), connectivity(rec)
        check_strict(connected, rec.wrt, names)
        if create_graph:
            depends = derivative_depends(unwrapped(f), args, wrt_idx, definition_site(unwrapped(f)))
            check = lambda blocks=None: check_strict_graph(depends, connected, rec.wrt, names, blocks)  # noqa: E731
    if create_graph and (rec.trace.outer or any_traced(args)):  # f's inputs, or values it uses, are traced outside
        return _eager_traced(rec, f, args, batch_axis, in_tuple, rec.out_is_tuple, check=check)
    if check is not None:
        check()
    if batch_axis is None and not strict:
        rec.structure[_JACOBIAN_CHECKED] = True  # (a record_once recording's: its replays', see _steady)
    return _jacobian_blocks(rec, f, args, wrt_idx, in_tuple, batch_axis, mode, chunk_size)


def _steady(f: Callable, inputs: Any, wrt: Any, batch_axis: Any, chunk_size: Any, other_options: bool,
            mode: str) -> bool:
    """Whether a call may take a record_once recording's replay straight to its lazy blocks: f's one
    input is a float ndarray, differentiated, and the options are the defaults (any `mode`)."""
    return record_once_of(f) is not None and type(inputs) is np.ndarray and wrt is None and batch_axis is None \
        and chunk_size is None and not other_options and inputs.dtype.kind == "f" and mode in MODES


def _jacobian_blocks(rec: Recording, f: Callable, args: tuple, wrt_idx: tuple, in_tuple: bool, batch_axis: Any,
                     mode: str, chunk_size: Any) -> Any:
    """jacobian()'s lazy blocks over `rec`, f recorded (or replayed) and checked."""
    ev = _jacobian_evaluator(rec, f, args, wrt_idx, batch_axis, mode, chunk_size)
    blocks = [[Jacobian(ev, i, j, ev.kept(("result dtype", i, j, mode), _result_dtype, rec, i, j, mode))
               for j in range(len(wrt_idx))] for i in range(len(rec.live))]
    return _nest(blocks, rec.out_is_tuple, in_tuple)


def _jacobian_evaluator(rec: Recording, f: Callable, args: tuple, wrt_idx: tuple, batch_axis: Any, mode: str,
                        chunk_size: Any) -> Evaluator:
    ev = Evaluator(rec, batch=batch_axis == 0, mode=mode, chunk_size=chunk_size)
    ev.origin = ("jacobian", f, args, wrt_idx)
    return ev


def hessian(f: Callable, inputs: Any, *, wrt: Any = None, batch_axis: int | None = None, strict: bool = False,
            mode: str = "forward", chunk_size: int | str | None = None, create_graph: bool = False,
            holomorphic: bool = False) -> Any:
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
        holomorphic: f is a holomorphic function of complex inputs: H is f''(z), a complex array.

    Returns:
        A `Hessian` (``H.shape == x.shape + x.shape``) or, for several inputs, ``H[i][j]`` blocks
        of shape ``x_i.shape + x_j.shape``.

    >>> import numpy as np, jaccli
    >>> H = jaccli.hessian(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]))
    >>> H.shape, np.asarray(H)
    ((2, 2), array([[ 6.,  0.],
           [ 0., 12.]]))
    """
    if _steady(f, inputs, wrt, batch_axis, chunk_size, strict or create_graph or holomorphic, mode):
        block = lane_block(f, inputs, Hessian, _outer(mode))
        if type(block) is not Hessian:  # (as jacobian()'s)
            block = steady_block(f, inputs, Hessian, HessianEvaluator, _outer(mode), ("gradient", False),
                                 _HESSIAN_CHECKED, ("input dtype", 0), _steady_hessian_evaluator,
                                 lambda rec: _hessian_blocks(rec, f, (inputs,), (0,), False, None, mode, None), block)
        if block is not None:
            return block
    args, inputs_is_tuple = as_args(inputs)
    wrt_idx, in_tuple = resolve_wrt(f, args, wrt, inputs_is_tuple)
    validate_options(batch_axis, mode, chunk_size)
    if holomorphic:
        return holomorphic_hessian(hessian, f, args, wrt_idx, in_tuple, batch_axis=batch_axis, strict=strict,
                                   mode=mode, chunk_size=chunk_size, create_graph=create_graph)
    refuse_complex_inputs(args, wrt_idx, "hessian")
    rec = gradient_recording(f, args, wrt_idx, create_graph, batch_axis == 0)
    check = None
    if strict:
        names, connected = param_names(f, len(args)), connectivity(rec)
        check_strict(rec.kept_value("inner_connected"), rec.wrt, names)
        check_strict(connected, rec.wrt, names, hessian=True)
        if create_graph:
            gradient = gradient_function(unwrapped(f), wrt_idx, batch_axis == 0, {"name": "hessian"})
            depends = derivative_depends(gradient, args, wrt_idx, definition_site(unwrapped(f)))
            check = lambda blocks=None: check_strict_graph(depends, connected, rec.wrt, names, blocks,  # noqa: E731
                                                           hessian=True)
    if create_graph and (rec.trace.outer or any_traced(args)):
        return _eager_traced(rec, f, args, batch_axis, in_tuple, in_tuple, gradient=True, check=check)
    if check is not None:
        check()
    if batch_axis is None and not strict:
        rec.structure[_HESSIAN_CHECKED] = True  # (as jacobian's)
    return _hessian_blocks(rec, f, args, wrt_idx, in_tuple, batch_axis, mode, chunk_size)


def _hessian_blocks(rec: Recording, f: Callable, args: tuple, wrt_idx: tuple, in_tuple: bool, batch_axis: Any,
                    mode: str, chunk_size: Any) -> Any:
    """hessian()'s lazy blocks over `rec`, f's gradient recorded (or replayed) and checked."""
    ev = _hessian_evaluator(rec, f, args, wrt_idx, batch_axis, mode, chunk_size)

    def block(i: int, j: int) -> Hessian:
        k = wrt_idx[j]
        return Hessian(ev, i, j, ev.kept(("input dtype", k), np.result_type, rec.inputs[k]))
    if not in_tuple:  # (one input: its one block, without the nested lists _nest reads)
        return block(0, 0)
    n = len(wrt_idx)
    return _nest([[block(i, j) for j in range(n)] for i in range(n)], True, True)


def _outer(mode: str) -> str:
    """A Hessian's outer sweeps for hessian()'s `mode`: "reverse", else "forward"."""
    return "reverse" if mode == "reverse" else "forward"


def _steady_jacobian_evaluator(rec: Recording, f: Callable, x: np.ndarray, mode: str) -> Evaluator:
    """The evaluator jacobian() makes over `rec`, f's replay at its one input x, with the default options but
    `mode` (a steady call's, made when its block needs one: steady_calls.Deferred)."""
    return _jacobian_evaluator(rec, f, (x,), (0,), None, mode, None)


def _steady_hessian_evaluator(rec: Recording, f: Callable, x: np.ndarray, mode: str) -> HessianEvaluator:
    """As _steady_jacobian_evaluator, hessian()'s (`mode`: its outer sweeps', which _hessian_evaluator takes too)."""
    return _hessian_evaluator(rec, f, (x,), (0,), None, mode, None)


def _hessian_evaluator(rec: Recording, f: Callable, args: tuple, wrt_idx: tuple, batch_axis: Any, mode: str,
                       chunk_size: Any) -> HessianEvaluator:
    ev = HessianEvaluator(rec, batch=batch_axis == 0, mode=_outer(mode), chunk_size=chunk_size)
    ev.origin = ("hessian", f, args, wrt_idx)
    return ev


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
        plain = gradient_recording(f, primal_nested(args), wrt_idx, False, True) if gradient \
            else Recording(unwrapped(f), primal_nested(args), wrt_idx)
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
