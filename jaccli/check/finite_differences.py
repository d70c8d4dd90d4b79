"""Central finite differences in float64, with Richardson extrapolation and error estimates."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from jaccli.api.arguments import as_args, resolve_wrt
from jaccli.api.recorded_functions import gradient_recording
from jaccli.engine import Phase
from jaccli.errors import UsageError

__all__ = ["finite_difference_jacobian", "fd_step", "fd_columns", "kinked_columns"]

_EPS = float(np.finfo(np.float64).eps)


def fd_step(x: Any) -> np.ndarray:
    """Central-difference step for x: eps**(1/3) * max(1, |x|) with float64's eps."""
    return _EPS ** (1.0 / 3.0) * np.maximum(1.0, np.abs(x))


def float64_args(args: tuple, wrt_idx: Sequence[int]) -> tuple:
    # Differentiated inputs and float data go to float64; integer data (labels, indices) stay.
    out = []
    for k, a in enumerate(args):
        if k in wrt_idx or (isinstance(a, np.ndarray) and a.dtype.kind == "f"):
            a = np.asarray(a, dtype=np.float64)
        out.append(a)
    return tuple(out)


def plain_outputs(f: Callable) -> Callable:
    """f as a function returning a list of outputs; ``.returns_tuple[0]`` says whether f returned a tuple."""
    def run(*args: Any) -> list:
        out = f(*args)
        run.returns_tuple[0] = isinstance(out, tuple)
        return list(out) if isinstance(out, tuple) else [out]
    run.returns_tuple = [False]
    return run


# The attribute that an exception f raised at a finite-difference point carries: the size of the step taken
FD_STEP_FAILED = "jaccli_fd_step"


def _stepper(fun: Callable, args: tuple, k: int, batch: bool) -> tuple[int | None, np.ndarray, Callable]:
    """(B or None, input k's flat float64 elements, at): ``at(c, step)`` is fun's outputs, flat per sample, with
    element c of input k moved by `step` (in every sample), and the moved element's new value."""
    x = np.asarray(args[k], dtype=np.float64)
    b = x.shape[0] if batch else None
    flat = x.reshape((b, -1) if batch else (-1,))

    def at(c: int, step: Any) -> tuple[list[np.ndarray], Any]:
        moved = flat.copy()
        moved[..., c] = flat[..., c] + step
        a = list(args)
        a[k] = moved.reshape(x.shape)
        try:
            got = fun(*a)
        except Exception as error:
            # (for the error's reader: f failed off the point it was given, at a step check took: FD_STEP_FAILED)
            cause: BaseException | None = error
            while cause is not None:  # (the command line's guard raises f's own exception as its cause)
                setattr(cause, FD_STEP_FAILED, float(np.max(np.abs(step))))
                cause = cause.__cause__
            raise
        outs = [np.reshape(np.asarray(o, dtype=np.float64), (b, -1) if batch else (-1,)) for o in got]
        return outs, moved[..., c]
    return b, flat, at


def fd_columns(fun: Callable, args: tuple, k: int, cols: np.ndarray, *, richardson: bool,
                batch: bool) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """Central differences of every output of fun along the flat elements `cols` of input k.

    Returns one value and one error-estimate array per output, shaped (M, len(cols)) or
    (B, M, len(cols)) with batch (column c perturbs element c of every sample at once), and
    the number of evaluations of fun.
    """
    b, flat, at = _stepper(fun, args, k, batch)

    def central(c: int, h: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
        fp, xp = at(c, h)
        fm, xm = at(c, -h)
        # The step actually taken, so that x +- h need not be representable.
        denom = np.asarray(xp - xm)[..., None] if batch else xp - xm
        d = [(p - m) / denom for p, m in zip(fp, fm)]
        rnd = [_EPS * (np.abs(p) + np.abs(m)) / denom for p, m in zip(fp, fm)]
        return d, rnd

    if not len(cols):
        vals = [np.empty(np.shape(np.reshape(np.asarray(o, dtype=np.float64), (b, -1) if batch else (-1,))) + (0,))
                for o in fun(*args)]
        return vals, [v.copy() for v in vals], 1
    vals: list[np.ndarray] = []
    errs: list[np.ndarray] = []
    evals = 0
    with np.errstate(all="ignore"), Phase("finite differences (columns)", len(cols)) as progress:
        for q, c in enumerate(cols):
            h = fd_step(flat[..., c])
            d1, rnd = central(c, h)
            evals += 2
            if richardson:
                d2, _ = central(c, h / 2)
                evals += 2
                val, err = [], []
                for a1, a2, r1 in zip(d1, d2, rnd):
                    rich = a2 + (a2 - a1) / 3.0
                    trunc = np.abs(a1 - a2)
                    # Extrapolation helps only where truncation, not rounding, dominates the error.
                    use = np.isfinite(rich) & (trunc > 3.0 * r1)
                    v = np.where(use, rich, a1)
                    # |D(h) - D(h/2)| bounds the extrapolated value's error loosely when f is smooth
                    # (it is O(h^2) there, far below any tolerance) and still holds when a kink within
                    # the step makes the error O(h), where h^2 extrapolation would claim too much.
                    e = np.where(use, trunc + 3.0 * r1, r1 + trunc * 4.0 / 3.0)
                    fallback = ~np.isfinite(v) & np.isfinite(a2)
                    val.append(np.where(fallback, a2, v))
                    err.append(np.where(fallback, 2.0 * r1, e))
            else:
                val, err = d1, rnd
            if not vals:
                vals = [np.empty(v.shape + (len(cols),)) for v in val]
                errs = [np.empty(v.shape + (len(cols),)) for v in val]
            for i, (v, e) in enumerate(zip(val, err)):
                vals[i][..., q] = v
                errs[i][..., q] = np.where(np.isfinite(e), e, 0.0)
            progress.advance(1)
    return vals, errs, evals


def kinked_columns(fun: Callable, args: tuple, k: int, cols: np.ndarray, *, batch: bool, rtol: float,
                   atol: float) -> list[np.ndarray]:
    """Where fun is kinked (or jumps) along each flat element `cols` of input k: its one-sided differences,
    forward and backward, disagree beyond the tolerance and their own error.

    Each side is extrapolated from steps h and h/2 (2 D(h/2) - D(h) cancels the O(h) error of a
    one-sided difference), so a smooth fun gives two values that agree to O(h^2): ``|u| ** 2`` at 0 is
    not kinked, ``|u|`` is. Returns one boolean array per output, shaped as `fd_columns`' values.
    """
    b, flat, at = _stepper(fun, args, k, batch)

    def side(base: list, c: int, h: Any) -> tuple[list, list, list, list]:
        far, xf = at(c, h)
        near, xn = at(c, h / 2)
        hf, hn = xf - flat[..., c], xn - flat[..., c]  # the steps actually taken
        hf = np.asarray(hf)[..., None] if batch else hf
        hn = np.asarray(hn)[..., None] if batch else hn
        d = [2.0 * (n - f0) / hn - (f1 - f0) / hf for f0, n, f1 in zip(base, near, far)]
        rnd = [_EPS * (np.abs(f0) + np.abs(n) + np.abs(f1)) * 4.0 / np.abs(hn) for f0, n, f1 in zip(base, near, far)]
        return d, rnd, far, near

    out: list[np.ndarray] = []
    with np.errstate(all="ignore"):
        base = [np.reshape(np.asarray(o, dtype=np.float64), (b, -1) if batch else (-1,)) for o in fun(*args)]
        for q, c in enumerate(cols):
            h = fd_step(flat[..., c])
            plus, r_plus, far_p, near_p = side(base, c, h)
            minus, r_minus, far_m, near_m = side(base, c, -h)
            for i, (p, m, rp, rm) in enumerate(zip(plus, minus, r_plus, r_minus)):
                # (10x: a kink changes the slope by O(1); a smooth fun's sides differ by O(h^2) only)
                allowed = 10.0 * (atol + rtol * np.maximum(np.abs(p), np.abs(m))) + rp + rm
                kinked = ~(np.abs(p - m) <= allowed)  # (NaN on a side: kinked, as a jump would be)
                # A jump (the AD gradient of a kinked f, for order 2) can leave both sides alike (+-1 about 0):
                # fun(x + h) - fun(x - h) does not halve with h there, as it does where fun is continuous.
                wide, narrow = np.abs(far_p[i] - far_m[i]), np.abs(near_p[i] - near_m[i])
                kinked |= (narrow > 0.75 * wide) & (wide > 2.0 * np.abs(h if not batch else np.asarray(h)[..., None])
                                                     * allowed)
                if len(out) <= i:
                    out.append(np.zeros(kinked.shape + (len(cols),), dtype=bool))
                out[i][..., q] = kinked
    return out


def gradient_function(f: Callable, args: tuple, wrt_idx: tuple[int, ...]) -> Callable:
    """x -> AD gradients of f (per-sample gradients for a batched f), one per input in wrt: the gradient
    a Hessian differentiates, with its conventions at kinks (abs one-sided at 0, engine/second_order.py),
    so that order 2 compares the Hessian with differences of that function."""
    batch = np.ndim(plain_outputs(f)(*args)[0]) != 0

    def grads(*a: Any) -> list:
        return [np.asarray(g) for g in gradient_recording(f, a, wrt_idx, False, batch).outputs]
    return grads


def flat_indices(idx: Any, size: int, what: str) -> np.ndarray:
    """Normalise row or column indices (None: all) into [0, size), or say which one is out of range."""
    if idx is None:
        return np.arange(size)
    arr = np.atleast_1d(np.asarray(idx))
    if arr.dtype.kind not in "iu":
        raise UsageError(f"{what} must be integer indices, not {arr.dtype}")
    bad = arr[(arr < -size) | (arr >= size)]
    if bad.size:
        raise UsageError(f"{what} index {int(bad[0])} is out of range for {size} {what}")
    return (arr % size).astype(np.intp) if size else arr.astype(np.intp)


def batch_flag(batch_axis: Any) -> bool:
    """batch_axis=0 -> True, None -> False, anything else is a usage error."""
    if batch_axis not in (None, 0):
        raise UsageError(f"batch_axis should be None or 0, but got {batch_axis!r}")
    return batch_axis == 0


def finite_difference_jacobian(f: Callable, args: Any, wrt_index: int = 0, rows: Any = None, cols: Any = None, *,
                               order: int = 1, richardson: bool = True, batch_axis: int | None = None) -> Any:
    """Central finite differences in float64 of the Jacobian (order 1) or Hessian (order 2).

    Inputs are cast to float64 (integer data arguments are left alone). Column j of input
    ``args[wrt_index]`` (a flat element index) costs 2 evaluations of f at x +- h e_j, with
    ``h = eps**(1/3) * max(1, |x_j|)``, or 4 with Richardson extrapolation, which also uses
    h/2 and is applied where its truncation estimate beats the rounding estimate.

    Order 2 differentiates the AD gradient (the one a Hessian differentiates) rather than taking second
    differences of f: the error is about 1e-10 instead of 1e-5, and together with a check of
    the gradient against differences of f and forward-over-reverse against reverse-over-
    reverse (``check_derivative(order=2)``), this checks every rule involved.

    Args:
        f: a function of arrays.
        args: an array or a tuple of arrays (f's positional arguments).
        wrt_index: which argument to perturb.
        rows, cols: flat indices of the wanted rows (output elements; for order 2, elements of
            the same input) and columns; None means all. Only the columns cost evaluations.
        order: 1 (Jacobian) or 2 (Hessian of a scalar f).
        richardson: extrapolate from steps h and h/2.
        batch_axis: None, or 0 for per-sample blocks ``(B, rows, cols)``; indices then refer
            to one sample's elements.

    Returns:
        The ``[rows][:, cols]`` slice of the flattened matrix, ``(len(rows), len(cols))``; a tuple
        of them when f returns a tuple (order 1).

    >>> finite_difference_jacobian(lambda x: x ** 2, np.array([1.0, 2.0])).round(8)
    array([[2., 0.],
           [0., 4.]])
    """
    tup, _ = as_args(args)
    k = resolve_wrt(f, tup, wrt_index, False)[0][0]
    batch = batch_flag(batch_axis)
    if order not in (1, 2):
        raise UsageError(f"order must be 1 or 2, not {order!r}")
    a64 = float64_args(tup, (k,))
    fun = gradient_function(f, a64, (k,)) if order == 2 else plain_outputs(f)
    n_in = int(np.prod(np.shape(a64[k])[1:] if batch else np.shape(a64[k])))
    vals, _, _ = fd_columns(fun, a64, k, flat_indices(cols, n_in, "columns"), richardson=richardson, batch=batch)
    picked = [v[..., flat_indices(rows, v.shape[-2], "rows"), :] for v in vals]
    if order == 2 or not fun.returns_tuple[0]:
        return picked[0]
    return tuple(picked)
