"""What a traced array refuses, and why: conversions out of the recording, out= arguments, calls without rules."""

from __future__ import annotations

import inspect
import itertools
import linecache
import re
import sys
import types
import warnings
from typing import Any

import numpy as np

from ..errors import TracingError, UnsupportedOperationError
from .handlers import FUNCTION_SWAPS
from .user_sites import package_function, user_site


def numpy_name(func: Any) -> str:
    """`np.fft.fft` style name of a NumPy callable, for messages."""
    if isinstance(func, np.ufunc):
        if getattr(np, func.__name__, None) is not func:  # scipy.special's and other packages' ufuncs
            special = sys.modules.get("scipy.special")
            if special is not None and getattr(special, func.__name__, None) is func:
                return f"scipy.special.{func.__name__}"
            return f"the ufunc {func.__name__} (not NumPy's own)"
        return f"np.{func.__name__}"
    module = getattr(func, "__module__", "") or ""
    name = getattr(func, "__name__", repr(func))
    for prefix, short in (("numpy.linalg", "np.linalg"), ("numpy.fft", "np.fft"), ("numpy.random", "np.random"),
                          ("numpy.lib.scimath", "np.emath")):
        if module.startswith(prefix):
            return f"{short}.{name}"
    return f"np.{name}"


def refuse_ufunc_out(ufunc: Any, method: str, kwargs: dict) -> None:
    """A traced array's ufunc call with out= (NumPy writes into an existing array), or where= with a
    mask that leaves entries undefined: refused, with what to write instead."""
    if kwargs.get("out") is not None:
        name = ufunc.__name__
        if kwargs.get("where", True) is not True:  # the safe-division idiom: out holds the fill
            raise TracingError(
                f"np.{name}(..., out=..., where=mask) writes into an existing array; write "
                f"`y = np.where(mask, np.{name}(a, np.where(mask, b, 1)), fill)` instead, with "
                "fill what `out` held (np.where(mask, b, 1) keeps the entries not taken finite)", user_site(3))
        raise TracingError(
            f"np.{name}(..., out=...) writes into an existing array; write `y = np.{name}(...)` instead",
            user_site(3))
    if method == "__call__" and kwargs.get("where", True) is not True and not np.all(kwargs["where"]):
        # (a reduction's where= leaves entries out of it, which is well defined)
        name = numpy_name(ufunc)
        raise UnsupportedOperationError(
            f"{name} with where= is not supported by jaccli (NumPy leaves the entries outside the mask "
            f"undefined without out=); write np.where(mask, {name}(...), fill)", user_site(3))


_OUT_POSITION: dict[Any, int | None] = {}  # NumPy function -> the position of its `out` parameter


def passes_out(func: Any, args: tuple) -> bool:
    """Whether args passes an `out` array by position (np.clip(x, 0, 1, buf))."""
    try:
        at = _OUT_POSITION[func]
    except KeyError:
        names = positional_names(func)
        at = _OUT_POSITION[func] = names.index("out") if "out" in names else None  # not after *args
    return at is not None and len(args) > at and args[at] is not None


def positional_names(func: Any) -> list[str]:
    """The names of the parameters that func takes by position, as inspect.signature gives them.

    Read from a Python function's code (NumPy's dispatchers wrap one, or a builtin) and from a
    builtin's text signature without inspect, which parses that with Python's tokenizer: its first
    use compiles the tokenizer's regular expressions (2-8 ms once a process, billed to the first
    call that gave a builtin such as np.concatenate a traced argument: a record_once replay's
    traced sweep, 5 plain calls of P3-n100)."""
    target = inspect.unwrap(func)
    if type(target) is types.FunctionType:
        code = target.__code__
        return list(code.co_varnames[:code.co_argcount])
    text = getattr(target, "__text_signature__", None) if type(target) is types.BuiltinFunctionType else None
    if text is None:
        try:
            params = list(inspect.signature(func).parameters.values())
        except (TypeError, ValueError):
            return []
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return [p.name for p in itertools.takewhile(lambda p: p.kind in positional, params)]
    names = []
    for part in _top_level(text.strip()[1:-1]):
        name = part.split("=", 1)[0].strip()
        if name.startswith("*"):
            break
        if name and name != "/" and not name.startswith("$"):  # ($module: bound, as inspect drops it)
            names.append(name)
    return names


def _top_level(text: str) -> list[str]:
    """text split at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# What to write instead of some unsupported functions, where NumPy has a supported relative.
INSTEAD: dict = {}


def cast_errors(dtype: Any, to: Any, order: str, casting: str) -> None:
    """NumPy's errors for x.astype(to, order, casting), raised by a cast of an empty array (whose warnings,
    a complex value's imaginary part dropped, are not the user's: the cast itself gives them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.empty(0, dtype).astype(to, order=order, casting=casting)


def escape_error(what: str, instead: str) -> TracingError:
    return TracingError(f"{what} takes a traced value out of jaccli's recording, so its derivative is lost; {instead}",
                        user_site(3))


class Formatted(str):
    """A traced value formatted with a spec (Tracer.__format__): a string, whose conversion back
    to a number (float(f"{x:.17g}")) is refused as the value's own is, not a silent way around it."""

    __slots__ = ()

    def __float__(self):
        raise escape_error("float() of a formatted traced value", "keep values as arrays and use NumPy functions "
                                                             "(format them for printing only)")

    def __int__(self):
        raise escape_error("int() of a formatted traced value", "keep values as arrays (format them for printing only)")

    def __complex__(self):
        raise escape_error("complex() of a formatted traced value", "keep values as real arrays")


_SCALAR_CALL = re.compile(r"\b(?:np|numpy)\.(float64|float32|float16|double|single|half|longdouble|float_|"
                          r"int64|int32|intp|bool_)\s*\(")


def scalar_type_called(site: tuple[str, int] | None) -> str | None:
    """The NumPy scalar type called on the user's line (np.float64(x)), which converts through
    __array__ without a frame of its own: read from the line's source, for the message only."""
    if site is None:
        return None
    found = _SCALAR_CALL.findall(linecache.getline(*site))
    return found[0] if len(set(found)) == 1 else None


def inside_np_vectorize() -> bool:
    """Whether NumPy's np.vectorize is converting the inputs (the caller's caller's frames)."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if isinstance(frame.f_locals.get("self"), np.vectorize):
            return True
        frame = frame.f_back
    return False


# NumPy functions that convert their input to read its memory directly, by code object: what to write instead.
_READS_MEMORY = {
    np.lib.stride_tricks.as_strided.__code__: (
        "np.lib.stride_tricks.as_strided reads a traced array's memory outside jaccli's recording, so it cannot "
        "be differentiated; use np.lib.stride_tricks.sliding_window_view for windows, or indexing "
        "(x[::2], x[i:j], x[idx]) for other views"),
}


def memory_reader() -> str | None:
    """The message for a NumPy function in _READS_MEMORY converting the input (the caller's caller's frame)."""
    frame = sys._getframe(2)
    return None if frame is None else _READS_MEMORY.get(frame.f_code)


# escape_error's arguments for a traced value converted where jaccli cannot tell by what (Tracer.__array__).
PLAIN_CONVERSION = ("converting to a plain NumPy array (np.array/np.asarray of a traced value in a module f's module "
                    "does not import, a list holding traced values where jaccli cannot see it, or writing a traced "
                    "value into an array f did not make itself)",
                    "make the array in f or in a module of yours it imports (r = np.zeros(m), then r[i] = ...), or "
                    "build it with np.stack([...]) or np.concatenate")


def installed_package_escape() -> TracingError | None:
    """The error for an installed package's function, called by the user's code, converting a traced
    value (Tracer.__array__), naming it; None when no such function is running."""
    package = package_function(3)
    if package is None:
        return None
    return TracingError(f"{package}, an installed package's function, converts f's traced values to plain NumPy "
                        f"arrays: this takes them out of jaccli's recording, so their derivative is lost; write what "
                        f"{package} computes with NumPy in your own code (f's module or a module of yours it "
                        f"imports, where jaccli records it), or call it on plain values only", user_site(3))


def unswapped_caller() -> str | None:
    """The name of an optional package's function jaccli stands in for (FUNCTION_SWAPS) whose own
    code is converting a traced value: it was reached under a name jaccli did not swap."""
    codes = {getattr(original, "__code__", None): f"{module.__name__}.{name}"
             for module, name, original, _ in FUNCTION_SWAPS}
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code in codes:
            return codes[frame.f_code]
        frame = frame.f_back
    return None


def mark_read_only(x: Any, message: str) -> Any:
    """Refuse writes into x and into its views (x[0] = v, x += v, np.put(x, ...)) with `message`.

    For the traced arrays NumPy gives read-only: the windows of sliding_window_view, the result
    of np.broadcast_to.
    """
    x._read_only = message
    return x


def read_only_message(x: Any) -> str | None:
    while x is not None:
        if x._read_only is not None:
            return x._read_only
        x = x._base
    return None


def same_value_cast(value: Any, dtype: np.dtype) -> bool:
    """NumPy's own error where casting `value` to `dtype` changes a value (astype(casting="same_value"))."""
    np.asarray(value).astype(dtype, casting="same_value")
    return True


# ndarray's methods that write into the array: not named as NumPy functions to write instead.
IN_PLACE_METHODS = {"partition", "sort", "put", "fill", "resize", "setfield", "itemset", "byteswap", "setflags"}


# An np.matrix operand of a traced value (Tracer.__array_ufunc__, __array_function__)
MATRIX_REFUSED = ("np.matrix is not supported by jaccli (NumPy recommends regular arrays: a matrix's * and ** are matrix "
           "products, its results keep two axes); make it an array with np.asarray(M), and write M @ x for products")
