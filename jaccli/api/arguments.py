"""The arguments of the public functions: the inputs, which of them to differentiate, the options, the vector v."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np

from jaccli.engine import Tracer, as_float, holds_tracer, lift
from jaccli.plurals import counted

from .evaluator import MODES

_FLOAT, _COMPLEX = np.dtype(float), np.dtype(complex)


def as_args(inputs: Any) -> tuple[tuple, bool]:
    """The inputs as f's positional arguments, and whether they came as a tuple (or list)."""
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), True
    return (inputs,), False


def param_names(f: Callable, n: int) -> list[str]:
    """The names of f's first n positional parameters; argK for those it does not name."""
    try:
        params = [p.name for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = params[:n]
    return names + [f"arg{k}" for k in range(len(names), n)]


def resolve_wrt(f: Callable, args: tuple, wrt: Any, inputs_is_tuple: bool) -> tuple[tuple[int, ...], bool]:
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
    names = param_names(f, n)
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


def validate_options(batch_axis: Any, mode: str, chunk_size: Any, modes: Sequence[str] = MODES) -> None:
    """Refuse a batch_axis, mode or chunk_size that jacobian and hessian do not take."""
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


def check_vector(v: Any, shapes: list[tuple], side: str, what: str, complex_sides: Sequence[bool] = ()) -> list[np.ndarray]:
    """A product's v as one float array per output (or input: `side`) of `shapes`, complex for those
    `complex_sides` marks; None for one scalar."""
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
        complex_side = k < len(complex_sides) and complex_sides[k]
        if type(vk) is np.ndarray and vk.dtype == (_COMPLEX if complex_side else _FLOAT) \
                and vk.shape == tuple(shape):
            out.append(vk)  # what the checks below give back (a loop of products paid for them on every call)
            continue
        entry = f"Entry {k} in " if len(shapes) > 1 else ""
        if type(vk) is not Tracer and holds_tracer(vk):
            vk = lift(vk)  # a list or tuple holding traced values (v differentiated itself): one traced array
        if type(vk) is not Tracer and np.iscomplexobj(vk) and not complex_side:
            raise ValueError(f"{entry}v is complex but the {side} it goes with is real: give a real v "
                             "(as JAX, a vector has its " + side + "'s dtype; docs/complex.md)")
        arr = np.asarray(_vector_as_float(vk, entry), dtype=complex if complex_side else float) \
            if type(vk) is not Tracer else vk
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
