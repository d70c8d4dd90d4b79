"""strict=True's checks (torch's): every output depends on an input, and with create_graph every derivative does."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaccli.engine import Recording, Tracer, attributed_to, call_traced, dense, primal_nested, reverse, shape_of
from jaccli.errors import StrictModeError


def connectivity(rec: Recording) -> list[list[bool]]:
    """Whether output i structurally depends on differentiated input j, for every i and j."""
    return [[rec.connected(i, j) for j in range(len(rec.wrt))] for i in range(len(rec.outputs))]


def check_strict(connected: list[list[bool]], wrt: tuple[int, ...], names: list[str],
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


def derivative_depends(fn: Callable, args: tuple, wrt_idx: tuple[int, ...], site: Any) -> list[list[bool]]:
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


def check_strict_graph(depends: list[list[bool]], connected: list[list[bool]], wrt: tuple[int, ...],
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


def check_strict_products(depends: list[list[bool]], results: list, per_output: bool, what: str,
                          names: list[str], wrt: tuple[int, ...], hessian: bool = False) -> None:
    """strict with create_graph for a product: each of its `results` (one per output of the derivative
    with `per_output`, else one per input) must depend on the inputs, through some block of `depends`;
    a result an outer differentiation traces (through v, say) passes, as for `check_strict_graph`."""
    for r, res in enumerate(results):
        line = depends[r] if per_output else [row[r] for row in depends]
        if not any(line) and type(res) is not Tracer:
            label = f"for output {r}" if per_output and not hessian else f"with respect to input {r} ({names[wrt[r]]!r})"
            raise _graph_error(f"the {what} {label}", hessian)


def check_strict_product(connected: list[list[bool]], wrt: tuple[int, ...], names: list[str],
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
