"""FUNC and INPUTs of a command: load the function or expression, bind and cast the inputs, resolve --wrt."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from jaccli.io.arrays import is_file, is_int_literal, literal_wide_ints, load_array, positional_keys, read_overflows
from jaccli.errors import UsageError
from jaccli.io.user_functions import bind_inputs, load_function
from jaccli.plurals import counted

from .failures import Terminated, shown_path
from .usercode import GuardedFunction, user_code_output

# The derivative of an expression is named after f, as in df_dx.
EXPRESSION_NAME = "f"


@dataclass
class Problem:
    """A function at a point: what every command differentiates.

    Attributes:
        func: the user's function, guarded so its own errors are told apart from jaccli's.
        name: the function's name in block keys (``df_dx``): its name in the file, or f.
        spec: FUNC as given (``model.py:g``), or the expression's text.
        user_file: the user's .py file; None for an expression.
        params: names of the positional arguments passed to func, in order.
        args: the values passed (inputs, and defaults that fill gaps before a later input).
        inputs: the arrays the user gave, by parameter name.
        wrt: positions in `args` of the differentiated inputs.
        warnings: notes for the user (casts, ...).
    """

    func: Callable[..., Any]
    name: str
    spec: str
    user_file: Path | None
    params: list[str]
    args: tuple
    inputs: dict[str, np.ndarray]
    wrt: tuple[int, ...]
    warnings: list[str] = field(default_factory=list)

    @property
    def is_expression(self) -> bool:
        return self.user_file is None

    @property
    def wrt_names(self) -> list[str]:
        return [self.params[k] for k in self.wrt]

    @property
    def what(self) -> str:
        """The function as named in messages."""
        if self.user_file is None:
            return "the expression"
        return f"{self.name} in {shown_path(str(self.user_file))}"

    @property
    def definition(self) -> str:
        """Where the function is defined, ``f in model.py:3``; empty for an expression."""
        code = getattr(getattr(self.func, "func", None), "__code__", None)
        if self.user_file is None or code is None:
            return ""
        return f"{self.name} in {shown_path(code.co_filename)}:{code.co_firstlineno}"

    def describe_inputs(self) -> str:
        """``x (3,), y (2, 2)``: names and shapes, for messages."""
        return ", ".join(f"{n} {tuple(a.shape)}" for n, a in self.inputs.items())


def load_problem(func_spec: str | None, expression: str | None, sources: Sequence[str],
                 wrt: str | None, dtype: str | None) -> Problem:
    """Load FUNC (or compile -e EXPR), bind the INPUT sources, cast them, and resolve --wrt.

    Raises:
        UsageError: bad FUNC, input, --wrt or --dtype.
        UserFunctionError: running the function's file failed.
    """
    if expression is not None:
        from jaccli.expr.expression import compile_expression  # only -e needs the expression parser

        compiled = compile_expression(expression)
        func: Callable[..., Any] = compiled
        name, spec, user_file, params, defaults = EXPRESSION_NAME, expression, None, list(compiled.params), {}
        kwonly: list[str] = []
        bound = bind_inputs(compiled, sources)
    else:
        if func_spec is None:
            raise UsageError("give FUNC (a .py file) or -e EXPR")
        with user_code_output():  # what the file prints while it loads goes to stderr
            # A signal raises Terminated here (cli/main.py): a plain KeyboardInterrupt is the file's own raise.
            loaded = load_function(func_spec, interruption=Terminated)
        func, name, spec = loaded.func, loaded.name, func_spec
        user_file, params, defaults, kwonly = loaded.path, loaded.params, loaded.defaults, loaded.kwonly
        bound = bind_inputs(loaded, sources)
    if not bound:
        raise UsageError(f"{name} takes no inputs, so there is nothing to differentiate")
    # Positional arguments up to the last one given (defaults fill the gaps before it), then the
    # keyword-only ones given, which the function receives by keyword.
    last = max((params.index(p) for p in bound if p in params), default=-1)
    keywords = [p for p in kwonly if p in bound]
    call_params = params[:last + 1] + keywords
    values = [bound[p] if p in bound else defaults[p] for p in call_params]
    names = params + kwonly
    positions = tuple(call_params.index(names[k]) for k in _resolve_wrt(wrt, names, bound, name))
    warnings: list[str] = []
    values = _cast(values, call_params, positions, dtype, warnings)
    inputs = {p: values[call_params.index(p)] for p in names if p in bound}
    return Problem(GuardedFunction(func, name, call_params, tuple(keywords)), name, spec, user_file, call_params,
                   tuple(values), inputs, positions, warnings)


def _resolve_wrt(spec: str | None, params: list[str], bound: dict, name: str) -> tuple[int, ...]:
    given = [p for p in params if p in bound]
    if spec is None:
        return tuple(params.index(p) for p in given)
    listed = ", ".join(given)
    out: list[int] = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            raise UsageError(f"--wrt {spec}: empty name; give input names or positions, e.g. --wrt {given[0]}")
        if item.lstrip("-").isdigit():
            k = int(item)
            if not -len(params) <= k < len(params):
                raise UsageError(f"--wrt {spec}: position {k} is out of range; {name} has {len(params)} "
                                 f"parameter(s): {', '.join(params)}")
            param = params[k % len(params)]
        elif item in params:
            param = item
        else:
            raise UsageError(f"--wrt {spec}: {name} has no input {item!r}; its inputs are {listed}")
        if param not in bound:
            raise UsageError(f"--wrt {spec}: input {param!r} was not given (it keeps its default); "
                             f"give it as {param}=SOURCE to differentiate it")
        k = params.index(param)
        if k in out:
            raise UsageError(f"--wrt {spec}: input {param!r} is listed twice")
        out.append(k)
    return tuple(out)


def _cast_to(value: np.ndarray, dtype: str, name: str, warnings: list[str]) -> np.ndarray:
    """`value` as `dtype`; finite values too large for it become inf, with one warning line."""
    with np.errstate(over="ignore"):
        cast = value.astype(dtype)
    overflows = int(np.count_nonzero(np.isinf(cast) & ~np.isinf(value)))
    if overflows:
        entries = "1 entry becomes" if overflows == 1 else f"{overflows} entries become"
        warnings.append(f"input {name} overflows {dtype}: {entries} inf")
    return cast


def _cast(values: list, params: list[str], wrt: tuple[int, ...], dtype: str | None,
          warnings: list[str]) -> list:
    out = list(values)
    for k, value in enumerate(values):
        if not isinstance(value, np.ndarray):
            continue
        overflows, where = read_overflows(value)
        if overflows:  # (as a --dtype float32 overflow: a warning, and the value is inf)
            entries = "1 entry becomes" if overflows == 1 else f"{overflows} entries become"
            warnings.append(f"input {params[k]} overflows float64: {entries} inf (a number beyond 1.8e308 "
                            f"in {where})")
        wide = literal_wide_ints(value)
        if wide and k not in wrt:  # (differentiated, it is float64 all the same)
            entries = "1 integer" if wide == 1 else f"{wide} integers"
            warnings.append(f"input {params[k]} overflows int64: {entries} beyond 9.2e18 in its literal, so it "
                            "is float64, not the int64 of an integer literal (write its numbers as floats, with a "
                            "decimal point or an exponent, to silence this)")
        kind = value.dtype.kind
        if dtype is not None and (k in wrt or kind == "f"):
            out[k] = _cast_to(value, dtype, params[k], warnings)
        elif kind == "f" and value.dtype.itemsize > 8:
            # long double (float128): NumPy's linear algebra refuses it, the checks' finite differences
            # and tolerances are float64's, and JSON holds doubles; jaccli computes in float64.
            warnings.append(f"input {params[k]} holds {value.dtype} values; computed in float64 (give float64 "
                            "or float32 inputs, or --dtype float64 to silence this)")
            out[k] = _cast_to(value, "float64", params[k], warnings)
        elif kind == "f" and value.dtype.itemsize < 4 and k in wrt:
            # (the library computes them in float32 too: engine.as_float; said here, once per input)
            warnings.append(f"input {params[k]} holds {value.dtype} values; differentiated in float32 (its 3 "
                            "significant digits are too few for a derivative; give --dtype float32 to silence this)")
            out[k] = value.astype(np.float32)
        elif k in wrt and is_int_literal(value):  # typed as integers: differentiated in float64, no warning
            out[k] = value.astype(np.float64)
        elif k in wrt and kind in "biu":
            warnings.append(f"input {params[k]} holds {value.dtype} values; differentiated as float64")
    return out


def load_vectors(sources: Sequence[str], targets: list[str], dtype: str | None,
                 numbered: str | None = None) -> list[np.ndarray]:
    """Bind --vector sources to `targets` (input names, or output names for vjp), in order.

    A source is ``SOURCE`` (positional, filling the targets left to right), ``name=SOURCE``, or
    an .npz whose arrays are named after the targets (``arr_0, arr_1...`` count as positional).
    With `numbered` (the function's name, for vjp) the names ``f0, f1, ...`` are targets too:
    the outputs of a function that returns a tuple, known only once it has run.
    """
    def position(name: str) -> int | None:
        if name in targets:
            return targets.index(name)
        rest = name[len(numbered):] if numbered and name.startswith(numbered) else ""
        return int(rest) if rest.isdigit() else None

    shown = ", ".join(targets) + (f", {numbered}0, {numbered}1, ..." if numbered else "")
    named: dict[int, np.ndarray] = {}
    positional: list[np.ndarray] = []

    def bind(name: str, array: np.ndarray, source: str) -> None:
        k = position(name)
        if k is None:
            raise UsageError(f"--vector {source}: {name!r} is not one of {shown}")
        if k in named:
            raise UsageError(f"--vector {source}: a vector for {name} is given twice")
        named[k] = array

    for source in sources:
        name, sep, rest = source.partition("=")
        if sep and name.strip().isidentifier() and not is_file(source):
            loaded = load_array(rest)
            if isinstance(loaded, dict):
                loaded = loaded[name.strip()] if name.strip() in loaded else _only(loaded, source)
            bind(name.strip(), loaded, source)
            continue
        loaded = load_array(source)
        if not isinstance(loaded, dict):
            positional.append(loaded)
            continue
        unnamed = positional_keys(loaded, targets)  # (as for inputs: np.savez(file, a, y=b))
        positional.extend(loaded[key] for key in unnamed)
        for key, array in loaded.items():
            if key not in unnamed:
                bind(key, array, f"{source}[{key}]")
    count = max([len(targets), len(named) + len(positional)] + [k + 1 for k in named])
    if numbered is None and count > len(targets):
        raise UsageError(f"--vector: {counted(len(named) + len(positional), 'vector')} given for "
                         f"{counted(len(targets), 'differentiated input')} ({shown}); give one per input, "
                         "positionally or as "
                         f"{targets[0]}=SOURCE")
    free = iter(k for k in range(count) if k not in named)
    named.update(zip(free, positional))
    missing = [k for k in range(count) if k not in named]
    if missing:
        # Several outputs are f0, f1, ...: the missing one is named so, not after the function.
        which = ", ".join(f"{numbered}{k}" if numbered and count > 1 else targets[k] for k in missing)
        raise UsageError(f"--vector: no vector given for {which}; give one per {'output' if numbered else 'input'}"
                         f" ({shown}), positionally or as name=SOURCE")
    for k in range(count):
        _refuse_nonfinite(named[k], f"{numbered}{k}" if numbered and count > 1 else targets[k])
    return [named[k].astype(dtype or np.float64) for k in range(count)]


def _refuse_nonfinite(vector: np.ndarray, target: str) -> None:
    """A NaN or inf in a vector would spread to every entry it multiplies, and be blamed on an operation of f."""
    bad = np.argwhere(~np.isfinite(vector)) if vector.dtype.kind == "f" else ()
    if len(bad):
        index = tuple(int(i) for i in bad[0])
        value = vector[index]
        what = "NaN" if np.isnan(value) else "inf" if value > 0 else "-inf"
        if not index:
            raise UsageError(f"--vector: the vector for {target} is {what}; give a finite number")
        at = index[0] if len(index) == 1 else index
        raise UsageError(f"--vector: the vector for {target} has {'an' if what == 'inf' else 'a'} {what} at "
                         f"position {at}; give finite numbers")


def _only(loaded: dict, source: str) -> np.ndarray:
    if len(loaded) == 1:
        return next(iter(loaded.values()))
    raise UsageError(f"--vector {source}: the archive holds {', '.join(loaded)}; name the array to use")
