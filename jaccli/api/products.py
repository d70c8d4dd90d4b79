"""vjp, jvp, hvp, vhp and grad: one sweep each, seeded with the vector v, no matrix formed."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.engine import Recording, Tracer, definition_site, is_complex

from .complex_functions import holomorphic_error, refuse_complex_inputs, refuse_complex_value
from .arguments import as_args, check_vector, param_names, resolve_wrt
from .recorded_functions import detach_unless, gradient_function, gradient_recording, record, unwrapped
from .strict_mode import check_strict_product, check_strict_products, connectivity, derivative_depends

__all__ = ["vjp", "jvp", "hvp", "vhp", "grad"]


def _value(rec: Recording) -> Any:
    return tuple(rec.outputs) if rec.out_is_tuple else rec.outputs[0]


def _shaped(block: Any, like: Any) -> Any:
    """One seed's product block shaped and typed like `like`; None (a structural zero) gives zeros."""
    if type(block) is np.ndarray and type(like) is np.ndarray and block.dtype == like.dtype:
        return block.reshape(like.shape)  # (what the general way below gives, for a loop of products)
    if block is None:
        return np.zeros(np.shape(like), dtype=np.result_type(like))
    return _cast(np.reshape(block, np.shape(like)), like)


def vjp(f: Callable, inputs: Any, v: Any = None, *, wrt: Any = None, create_graph: bool = False,
        strict: bool = False, holomorphic: bool = False) -> tuple:
    """``(f(inputs), v^T J)``: one reverse sweep, without forming J.

    `strict` (torch's): raise when an output depends on no input or an input reaches no output;
    with create_graph, also when the product is independent of the inputs (f linear in them).
    Complex inputs and outputs take complex vectors, by JAX's conventions (docs/complex.md);
    `holomorphic` only checks that they are complex.

    >>> import numpy as np, jaccli
    >>> jaccli.vjp(lambda x: x ** 2, np.array([1.0, 2.0]), np.array([1.0, 1.0]))[1]
    array([2., 4.])
    """
    return _jacobian_product(f, inputs, v, wrt, create_graph, strict, holomorphic, reverse=True)


def jvp(f: Callable, inputs: Any, v: Any = None, *, wrt: Any = None, create_graph: bool = False,
        strict: bool = False, holomorphic: bool = False) -> tuple:
    """``(f(inputs), J v)``: one forward sweep, without forming J. `strict` as for `vjp`.

    >>> import numpy as np, jaccli
    >>> jaccli.jvp(lambda x: x ** 2, np.array([1.0, 2.0]), np.array([1.0, 0.0]))[1]
    array([2., 0.])
    """
    return _jacobian_product(f, inputs, v, wrt, create_graph, strict, holomorphic, reverse=False)


def _jacobian_product(f: Callable, inputs: Any, v: Any, wrt: Any, create_graph: bool, strict: bool,
                      holomorphic: bool, reverse: bool) -> tuple:
    """``(f(inputs), product)``: one sweep over f's recording seeded with v, reverse (v^T J) or
    forward (J v)."""
    args, inputs_is_tuple = as_args(inputs)
    wrt_idx, in_tuple = resolve_wrt(f, args, wrt, inputs_is_tuple)
    rec, _ = record(f, args, wrt_idx, create_graph, v=v)
    if strict:
        check_strict_product(connectivity(rec), rec.wrt, param_names(f, len(args)))
    (v,) = detach_unless(create_graph, (v,))
    complex_out = [is_complex(o) for o in rec.outputs]
    complex_in = [is_complex(rec.inputs[k]) for k in wrt_idx] if holomorphic or not reverse else None
    if holomorphic and not all(complex_in):
        raise holomorphic_error("vjp" if reverse else "jvp", "inputs")
    if holomorphic and not all(complex_out):
        raise holomorphic_error("vjp" if reverse else "jvp", "outputs")
    if reverse:
        vs = check_vector(v, [np.shape(o) for o in rec.outputs], "output", "the output's shape", complex_out)
        cts = rec.vjp([vk[None] for vk in vs])
        res = [_shaped(ct, rec.inputs[k]) for ct, k in zip(cts, wrt_idx)]
    else:
        vs = check_vector(v, [rec.in_shape(j) for j in range(len(wrt_idx))], "input", "the input's shape", complex_in)
        outs = rec.jvp([vk[None] for vk in vs])
        res = [_shaped(t, o) for t, o in zip(outs, rec.outputs)]
    if strict and create_graph:
        check_strict_products(derivative_depends(unwrapped(f), args, wrt_idx, definition_site(unwrapped(f))), res,
                              not reverse, "vector-jacobian product" if reverse else "jacobian-vector product",
                              param_names(f, len(args)), wrt_idx)
    return _value(rec), (tuple(res) if (in_tuple if reverse else rec.out_is_tuple) else res[0])


def _gradient_product(f: Callable, inputs: Any, v: Any, wrt: Any, create_graph: bool, strict: bool,
                      reverse: bool) -> tuple:
    """``(f(inputs), product)``: one sweep over f's recorded gradient seeded with v, forward (H v) or
    reverse (v^T H)."""
    args, inputs_is_tuple = as_args(inputs)
    wrt_idx, in_tuple = resolve_wrt(f, args, wrt, inputs_is_tuple)
    name = "vhp" if reverse else "hvp"
    refuse_complex_inputs(args, wrt_idx, name)
    rec = gradient_recording(f, args, wrt_idx, create_graph, False, name, v)
    if strict:
        names = param_names(f, len(args))
        check_strict_product(rec.kept_value("inner_connected"), rec.wrt, names)
        check_strict_product(connectivity(rec), rec.wrt, names, hessian=True)
    (v,) = detach_unless(create_graph, (v,))
    vs = check_vector(v, [rec.in_shape(j) for j in range(len(wrt_idx))], "input", "the input's shape")
    seeds = [vk[None] for vk in vs]
    outs = rec.vjp(seeds) if reverse else rec.jvp(seeds)
    res = [_shaped(t, rec.inputs[k]) for t, k in zip(outs, wrt_idx)]
    if strict and create_graph:
        gradient = gradient_function(unwrapped(f), wrt_idx, False, {"name": name})
        check_strict_products(derivative_depends(gradient, args, wrt_idx, definition_site(unwrapped(f))), res,
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


def grad(f: Callable, inputs: Any, *, wrt: Any = None, create_graph: bool = False, holomorphic: bool = False) -> Any:
    """Gradient of a scalar f: an array shaped like the input (a tuple for several inputs).

    Of a real f of complex inputs, JAX's convention: df/dx - i df/dy (the conjugate of the direction
    of steepest ascent); of a holomorphic f (holomorphic=True), f'(z). See docs/complex.md.

    >>> import numpy as np, jaccli
    >>> jaccli.grad(lambda x: (x ** 2).sum(), np.array([1.0, 2.0]))
    array([2., 4.])
    """
    if holomorphic:
        from .jacobian_hessian import jacobian

        return jacobian(f, inputs, wrt=wrt, create_graph=create_graph, holomorphic=True)
    args, inputs_is_tuple = as_args(inputs)
    wrt_idx, in_tuple = resolve_wrt(f, args, wrt, inputs_is_tuple)
    rec, _ = record(f, args, wrt_idx, create_graph)
    if rec.out_is_tuple or int(np.prod(np.shape(rec.outputs[0]))) != 1:
        shape = "a tuple" if rec.out_is_tuple else f"shape {np.shape(rec.outputs[0])}"
        raise ValueError(f"grad needs a function with one scalar output, but f returns {shape}; use jacobian "
                         "for vector outputs, or reduce the output (e.g. .sum())")
    refuse_complex_value(rec.outputs[0], "grad")
    seed = np.ones((1,) + np.shape(rec.outputs[0]))
    cts = rec.vjp([seed])
    res = [_shaped(ct, rec.inputs[k]) for ct, k in zip(cts, wrt_idx)]
    return tuple(res) if in_tuple else res[0]


def _cast(value: Any, like: Any) -> Any:
    if type(value) is Tracer:
        return value
    dt = np.result_type(like)
    return value.astype(dt) if dt.kind in "fc" and value.dtype != dt else value
