"""Load user functions from .py files, input arrays from files or literals, and index specs."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import itertools
import os
import sys
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaccli.errors import UsageError, UserFunctionError

__all__ = [
    "LoadedFunction",
    "bind_inputs",
    "load_array",
    "load_function",
    "parse_index_spec",
]

ARRAY_SUFFIXES = (".npy", ".npz", ".csv", ".txt", ".dat")
_FUNC_HINT = "FUNC is path.py or path.py:name"
_FILE_LIST = ", ".join(ARRAY_SUFFIXES)
# Gives each executed user file its own module name, so two loads never share state.
_module_counter = itertools.count()


# ---------------------------------------------------------------- user functions


@dataclass(frozen=True)
class LoadedFunction:
    """A function picked out of a user's .py file.

    Attributes:
        func: The callable itself.
        path: The .py file, as the user spelled it.
        name: The name the function was found under in that file.
        params: Names of the parameters that can be given positionally, in order.
        defaults: Default values of those parameters that have one.
    """

    func: Callable[..., object]
    path: Path
    name: str
    params: list[str] = field(default_factory=list)
    defaults: dict[str, object] = field(default_factory=dict)

    def call(self, inputs: Mapping[str, object]) -> object:
        """Call `func` with inputs keyed by parameter name, as `bind_inputs` returns them."""
        return _call_by_name(self.func, inputs)


def load_function(spec: str) -> LoadedFunction:
    """Execute a user's .py file as a fresh module and pick one function from it.

    Without ``:name`` the function called ``f`` is used, else the file's only public function.
    The file's directory is on ``sys.path`` only while the file runs, so sibling imports work;
    the module and the sibling modules it imported are dropped from ``sys.modules`` afterwards.

    Args:
        spec: ``path.py`` or ``path.py:name``.

    Returns:
        The function with its parameter names and defaults.

    Raises:
        UsageError: The file is missing or not a .py file, or the function cannot be found.
        UserFunctionError: Running the file raised; ``site`` points into the user's code.

    >>> lf = load_function("samples/robot_arm.py")
    >>> lf.name, lf.params
    ('f', ['q'])
    """
    path_text, name = _split_spec(spec)
    path = Path(path_text)
    if not path.exists():
        raise UsageError(f"function file not found: {path_text}; {_FUNC_HINT}")
    if path.is_dir():
        raise UsageError(f"function file {path_text} is a directory; {_FUNC_HINT}")
    if path.suffix != ".py":
        raise UsageError(f"function file {path_text} is not a .py file; {_FUNC_HINT}")

    module = _run_user_file(path, path_text)
    if name is None:
        name = _default_function_name(module, path_text)
    elif not hasattr(module, name):
        raise UsageError(f"{path_text} has no function {name!r}; {_describe_public(module)}")
    func = getattr(module, name)
    if not callable(func):
        kind = type(func).__name__
        raise UsageError(
            f"{path_text}:{name} is not a function (it has type {kind}); {_describe_public(module)}"
        )
    params, defaults = _signature_params(func, f"{path_text}:{name}")
    return LoadedFunction(func=func, path=path, name=name, params=params, defaults=defaults)


def _split_spec(spec: str) -> tuple[str, str | None]:
    head, sep, tail = spec.rpartition(":")
    # Only split where the left part names a .py file, so "C:/x.py" or "a:b/x.py" stay whole.
    if not sep or not head.endswith(".py"):
        return spec, None
    if not tail.isidentifier():
        raise UsageError(f"bad function name {tail!r} in {spec!r}; {_FUNC_HINT}")
    return head, tail


def _run_user_file(path: Path, shown: str) -> types.ModuleType:
    resolved = path.resolve()
    directory = str(resolved.parent)
    module_name = f"_jaccli_user_{next(_module_counter)}_{resolved.stem}"
    import_spec = importlib.util.spec_from_file_location(module_name, resolved)
    if import_spec is None or import_spec.loader is None:
        raise UsageError(f"cannot load {shown} as a Python module; {_FUNC_HINT}")
    module = importlib.util.module_from_spec(import_spec)
    before = set(sys.modules)
    # Registered while it runs: dataclasses and pickling look the module up by name.
    sys.modules[module_name] = module
    sys.path.insert(0, directory)
    # Like `python f.py`, leave no __pycache__ behind in the user's directory.
    write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        import_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise _user_file_error(exc, resolved, shown) from exc
    finally:
        sys.dont_write_bytecode = write_bytecode
        _remove_first(sys.path, directory)
        for name in set(sys.modules) - before:
            if name == module_name or _lives_in(sys.modules[name], name, resolved.parent):
                del sys.modules[name]
    return module


def _remove_first(items: list[str], value: str) -> None:
    try:
        items.remove(value)
    except ValueError:
        pass  # the user's code already took it off sys.path


def _lives_in(module: types.ModuleType, name: str, directory: Path) -> bool:
    """True for a module imported from a sibling file or package of the user's file."""
    top = name.split(".")[0]
    top_module = sys.modules.get(top, module)
    file = getattr(top_module, "__file__", None)
    if not file:
        return False
    file_path = Path(file).resolve()
    return file_path.parent == directory or (
        file_path.name == "__init__.py" and file_path.parent.parent == directory
    )


def _user_file_error(exc: BaseException, resolved: Path, shown: str) -> UserFunctionError:
    # A SyntaxError from compile() or exec() in the user's code names "<string>"; use its frames.
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno and exc.filename[0] != "<":
        where = shown if Path(exc.filename).resolve() == resolved else exc.filename
        site: tuple[str, int] | None = (where, exc.lineno)
        detail = exc.msg
    else:
        site = None
        tb = exc.__traceback__
        # The innermost frame in the user's file is the line they can act on.
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(resolved):
                site = (shown, tb.tb_lineno)
            tb = tb.tb_next
        detail = str(exc)
    message = f"running {shown} failed: {type(exc).__name__}"
    return UserFunctionError(f"{message}: {detail}" if detail else message, site=site)


def _public_functions(module: types.ModuleType) -> list[str]:
    return [
        name
        for name, obj in vars(module).items()
        if inspect.isfunction(obj) and obj.__module__ == module.__name__ and not name.startswith("_")
    ]


def _describe_public(module: types.ModuleType) -> str:
    names = _public_functions(module)
    if not names:
        return "it defines no public functions"
    return f"its public functions are {', '.join(names)}"


def _default_function_name(module: types.ModuleType, shown: str) -> str:
    if callable(getattr(module, "f", None)):
        return "f"
    names = _public_functions(module)
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(
            f"{shown} defines no functions; write def f(...) in it or pick a callable with {shown}:NAME"
        )
    raise UsageError(
        f"{shown} defines no function f and {len(names)} public functions ({', '.join(names)}); "
        f"pick one with {shown}:NAME"
    )


def _signature_params(func: Callable[..., object], shown: str) -> tuple[list[str], dict[str, object]]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"cannot read the parameters of {shown}: {exc}") from exc
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [p for p in signature.parameters.values() if p.kind in positional]
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    return [p.name for p in params], defaults


def _call_by_name(func: Callable[..., object], inputs: Mapping[str, object]) -> object:
    signature = inspect.signature(func)
    args, kwargs = [], dict(inputs)
    # Positional-only parameters cannot be passed by keyword; defaults fill any gap before a given one.
    for p in signature.parameters.values():
        if p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            break
        args.append(kwargs.pop(p.name) if p.name in kwargs else p.default)
    return func(*args, **kwargs)


# ---------------------------------------------------------------- arrays


def load_array(source: str) -> np.ndarray | dict[str, np.ndarray]:
    """Read one input: a file, or an inline number or list of numbers.

    Files are picked by extension:

    - ``.npy``: loaded with ``allow_pickle=False``; truncated files are refused.
    - ``.npz``: a dict of every array in the archive, in archive order.
    - ``.csv`` (commas) and ``.txt``/``.dat`` (whitespace): float64. Lines starting with ``#``
      are comments, and a first line with no numbers in it is a header and skipped. Like
      ``np.loadtxt``'s default, length-1 axes are squeezed: a single value gives a 0-D array,
      a single row or a single column gives 1-D, anything else 2-D.

    Anything else is read as a Python literal: a number or nested lists/tuples of numbers,
    with ``nan`` and ``inf`` allowed, giving a float64 array.

    Arrays must be boolean, integer or real floating point; NaN and inf are kept as data.
    File arrays keep their dtype.

    Args:
        source: A file path or a literal such as ``"[[1, 2], [3, 4]]"``.

    Returns:
        The array, or for ``.npz`` a dict of name to array.

    Raises:
        UsageError: Missing or unreadable file, or a literal that is not numbers.

    >>> load_array("[[1, 2], [3, 4]]").shape
    (2, 2)
    """
    text = source.strip()
    if not text:
        raise UsageError("empty input; give a file (.npy, .npz, .csv, .txt, .dat) or a number or list")
    path = Path(text)
    suffix = path.suffix.lower()
    if suffix in ARRAY_SUFFIXES:
        if not path.exists():
            raise UsageError(f"input file not found: {text}")
        if path.is_dir():
            raise UsageError(f"input {text} is a directory, not a file")
        if suffix == ".npy":
            return _load_npy(path, text)
        if suffix == ".npz":
            return _load_npz(path, text)
        return _load_text(path, text, "," if suffix == ".csv" else None)
    try:
        return _parse_literal(text)
    except UsageError:
        if path.is_file():
            raise UsageError(f"cannot read input file {text}: jaccli reads {_FILE_LIST} files") from None
        if os.sep in text or (os.altsep and os.altsep in text) or suffix[1:].isalpha():
            raise UsageError(f"input file not found: {text}") from None
        raise


def _check_dtype(array: np.ndarray, shown: str) -> np.ndarray:
    dtype = array.dtype
    if dtype.hasobject:
        raise UsageError(f"{shown} holds Python objects, not numbers")
    if dtype.kind == "c":
        raise UsageError(f"{shown} holds complex numbers: complex inputs are not supported")
    if dtype.names is not None:
        raise UsageError(f"{shown} is a structured array (named fields); save a plain numeric array")
    if dtype.kind not in "biuf":
        raise UsageError(f"{shown} holds {dtype} values, not numbers; save a numeric array")
    return array


def _load_npy(path: Path, shown: str) -> np.ndarray:
    with open(path, "rb") as fh:
        try:
            version = np.lib.format.read_magic(fh)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(fh)
        except (ValueError, EOFError, OSError) as exc:
            raise UsageError(f"{shown} is not a valid .npy file ({exc})") from exc
        if dtype.hasobject:
            raise UsageError(
                f"{shown} holds Python objects (a pickled object array); jaccli loads .npy files "
                "with allow_pickle=False for safety: save a numeric array instead"
            )
        # np.load's own error for a short file varies by version and path; check the size first.
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        available = os.fstat(fh.fileno()).st_size - fh.tell()
        if available < expected:
            raise UsageError(
                f"{shown} is not a valid .npy file: it is truncated "
                f"(its header promises {expected} bytes of data, the file holds {available})"
            )
        fh.seek(0)
        try:
            array = np.load(fh, allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise UsageError(f"{shown} is not a valid .npy file ({exc})") from exc
    return _check_dtype(array, shown)


def _load_npz(path: Path, shown: str) -> dict[str, np.ndarray]:
    import zipfile  # only .npz inputs need it

    if not zipfile.is_zipfile(path):
        raise UsageError(f"{shown} is not a valid .npz file (not a zip archive; truncated or corrupt?)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as archive:
            for key in archive.files:
                try:
                    arrays[key] = archive[key]
                except ValueError as exc:
                    if "allow_pickle" in str(exc):
                        raise UsageError(
                            f"{shown}: array {key!r} holds Python objects (a pickled object array); "
                            "jaccli loads .npz files with allow_pickle=False for safety: "
                            "save numeric arrays instead"
                        ) from exc
                    raise
                _check_dtype(arrays[key], f"{shown}: array {key!r}")
    except UsageError:
        raise
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{shown} is not a valid .npz file ({exc})") from exc
    if not arrays:
        raise UsageError(f"{shown} holds no arrays")
    return arrays


def _header_skip(path: Path, delimiter: str | None) -> int:
    """Lines to skip so that a first line of column names is not read as data."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            content = line.split("#", 1)[0].strip()
            if not content:
                continue
            fields = content.split(delimiter)
            return number if not any(_is_number(f) for f in fields) else 0
    return 0


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _load_text(path: Path, shown: str, delimiter: str | None) -> np.ndarray:
    separated = "commas" if delimiter else "whitespace"
    try:
        skip = _header_skip(path, delimiter)
        with warnings.catch_warnings():
            # An empty file only warns in NumPy; it is reported below as an error.
            warnings.simplefilter("ignore", UserWarning)
            array = np.loadtxt(
                path, delimiter=delimiter, dtype=np.float64, skiprows=skip, encoding="utf-8-sig"
            )
    except (ValueError, OSError) as exc:
        # NumPy's advice about `usecols` after the ';' refers to its API, not to jaccli.
        detail = str(exc).split("; use `usecols`")[0]
        message = f"cannot read {shown}: {detail} (expected numbers separated by {separated})"
        raise UsageError(message) from exc
    if array.size == 0:
        raise UsageError(f"{shown} holds no numbers")
    return array


class _NotNumbers(Exception):
    pass


_NAMED_FLOATS = {"nan": float("nan"), "inf": float("inf"), "NaN": float("nan"), "Inf": float("inf")}


def _literal_value(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, complex):
            raise _NotNumbers("complex inputs are not supported")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _NotNumbers(f"{value!r} is not a number")
        return value
    if isinstance(node, ast.Name):
        if node.id in _NAMED_FLOATS:
            return _NAMED_FLOATS[node.id]
        raise _NotNumbers(f"{node.id} is not a number")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal_value(node.operand)
        if isinstance(operand, list):
            raise _NotNumbers("a sign applies to numbers, not to lists")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal_value(item) for item in node.elts]
    if any(isinstance(n, ast.Constant) and isinstance(n.value, complex) for n in ast.walk(node)):
        raise _NotNumbers("complex inputs are not supported")
    raise _NotNumbers(f"{type(node).__name__.lower()} expressions are not numbers")


def _parse_literal(text: str) -> np.ndarray:
    hint = f"give a number, a list of numbers or a file ({_FILE_LIST})"
    try:
        tree = ast.parse(text, mode="eval")
        value = _literal_value(tree.body)
    except SyntaxError:
        raise UsageError(f"cannot read input {text!r}: not a number or list of numbers; {hint}") from None
    except _NotNumbers as exc:
        raise UsageError(f"cannot read input {text!r}: {exc}; {hint}") from None
    try:
        return np.array(value, dtype=np.float64)
    except ValueError:
        reason = "it is a ragged list (rows of different lengths)"
    except OverflowError:
        reason = "an integer is too large for float64"
    raise UsageError(f"cannot read input {text!r}: {reason}")


# ---------------------------------------------------------------- binding inputs to parameters


def bind_inputs(
    fn: LoadedFunction | Callable[..., object], sources: Sequence[str]
) -> dict[str, np.ndarray]:
    """Match input sources to a function's parameters.

    A source is ``SOURCE`` (positional) or ``name=SOURCE`` (when the text before the first ``=``
    is an identifier). Named sources bind first; positional ones then fill the remaining
    parameters left to right. A positional ``.npz`` binds its arrays by key, except that an
    archive whose keys are all ``arr_0, arr_1, ...`` (``np.savez`` without names) counts as that
    many positional inputs. ``name=file.npz`` takes the archive's only array, or else its array
    called ``name``. Parameters with defaults may stay unbound.

    Args:
        fn: A loaded function or any Python callable.
        sources: Input specs as given on the command line.

    Returns:
        Arrays keyed by parameter name, in parameter order.

    Raises:
        UsageError: Too many or missing inputs, unknown names, or a parameter given twice.

    >>> bind_inputs(lambda x, y=2.0: x, ["[1, 2]"])
    {'x': array([1., 2.])}
    """
    if isinstance(fn, LoadedFunction):
        shown, params, defaults = fn.name, fn.params, fn.defaults
    else:
        shown = getattr(fn, "__name__", "the function")
        params, defaults = _signature_params(fn, shown)
    param_list = ", ".join(params) or "none"

    named: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    positional: list[tuple[str, np.ndarray]] = []

    def bind(name: str, array: np.ndarray, given_as: str) -> None:
        if name not in params:
            raise UsageError(f"{shown} has no parameter {name!r}; its parameters are {param_list}")
        if name in named:
            raise UsageError(
                f"input for parameter {name!r} of {shown} given twice ({origin[name]} and {given_as})"
            )
        named[name], origin[name] = array, given_as

    for source in sources:
        name, sep, rest = source.partition("=")
        name = name.strip()
        # "a=b.npy" may also be a file's name; the file wins when no parameter is called "a".
        is_file_name = name not in params and Path(source).is_file()
        if sep and name.isidentifier() and not is_file_name:
            if not rest.strip():
                raise UsageError(f"empty source in {source!r}; give {name}=FILE or {name}=VALUE")
            bind(name, _one_array(load_array(rest), name, rest.strip()), source)
            continue
        loaded = load_array(source)
        if not isinstance(loaded, dict):
            positional.append((source, loaded))
        elif all(key.startswith("arr_") and key not in params for key in loaded):
            positional.extend((f"{source}[{key}]", loaded[key]) for key in loaded)
        else:
            unknown = [key for key in loaded if key not in params]
            if unknown:
                raise UsageError(
                    f"{source} holds arrays {', '.join(unknown)} that are not parameters of {shown}; "
                    f"its parameters are {param_list}"
                )
            for key, array in loaded.items():
                bind(key, array, f"{source}[{key}]")

    free = [p for p in params if p not in named]
    if len(positional) > len(free):
        given = len(named) + len(positional)
        takes = f"{_count(len(params), 'input')} ({param_list})" if params else "no inputs"
        raise UsageError(f"{shown} takes {takes} but {given} {'was' if given == 1 else 'were'} given")
    bound = dict(named)
    bound.update((param, array) for param, (_, array) in zip(free, positional))
    missing = [p for p in params if p not in bound and p not in defaults]
    if missing:
        names = ", ".join(repr(p) for p in missing)
        plural = "s" if len(missing) > 1 else ""
        raise UsageError(
            f"missing input for parameter{plural} {names} of {shown}: "
            f"give {'them' if plural else 'it'} positionally or as {missing[0]}=SOURCE"
        )
    return {p: bound[p] for p in params if p in bound}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _one_array(loaded: np.ndarray | dict[str, np.ndarray], name: str, source: str) -> np.ndarray:
    if not isinstance(loaded, dict):
        return loaded
    if len(loaded) == 1:
        return next(iter(loaded.values()))
    if name in loaded:
        return loaded[name]
    raise UsageError(
        f"{source} holds {len(loaded)} arrays ({', '.join(loaded)}) and none is called {name!r}; "
        f"use a .npz with one array or with an array named {name}"
    )


# ---------------------------------------------------------------- index specs


def parse_index_spec(spec: str, size: int, what: str = "rows") -> np.ndarray:
    """Turn a ``--rows``/``--cols`` spec into indices into ``range(size)``.

    Accepted forms: ``i``; ``a:b`` or ``a:b:c`` with NumPy slice semantics (parts may be empty,
    negative, clipped; a step may be negative); ``...`` for everything; comma-separated lists of
    any of these (``0,5,-1`` or ``0:3,7``); ``@file`` holding a 1-D integer array of indices or a
    boolean mask of length ``size``. Single indices must be in ``[-size, size)``. Order and
    duplicates are kept, and an empty selection is returned as an empty array.

    Args:
        spec: The index spec.
        size: Length of the axis being indexed.
        what: The option's noun, used in messages (``"rows"`` gives ``--rows``).

    Returns:
        A 1-D int64 array of non-negative indices.

    Raises:
        UsageError: Bad syntax, zero step, out-of-range index, or a bad index file.

    >>> parse_index_spec("-1,0:4:2", 5)
    array([4, 0, 2])
    """
    text = spec.strip()
    prefix = f"--{what} {spec}"
    if not text:
        raise UsageError(f"{prefix}: empty index; use i, a:b, a:b:c, i,j,k or @file.npy")
    if text.startswith("@"):
        return _index_file(text[1:].strip(), size, what, prefix)
    parts = [_index_item(item.strip(), size, what, prefix) for item in text.split(",")]
    return np.concatenate(parts).astype(np.int64, copy=False)


def _parse_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _index_item(item: str, size: int, what: str, prefix: str) -> np.ndarray:
    if item == "...":
        return np.arange(size, dtype=np.int64)
    if ":" in item:
        pieces = item.split(":")
        bounds = [None if not p.strip() else _parse_int(p) for p in pieces]
        if len(pieces) > 3 or any(b is None and p.strip() for b, p in zip(bounds, pieces)):
            raise UsageError(f"{prefix}: bad slice {item!r}; use a:b or a:b:c with integers")
        if len(bounds) == 3 and bounds[2] == 0:
            raise UsageError(f"{prefix}: slice step cannot be zero")
        picked = range(size)[slice(*bounds)]
        return np.arange(picked.start, picked.stop, picked.step, dtype=np.int64)
    index = _parse_int(item)
    if index is None:
        raise UsageError(
            f"{prefix}: bad index {item!r}; use i, a:b, a:b:c, i,j,k or @file.npy"
        )
    return np.array([_in_range(index, size, what, prefix)], dtype=np.int64)


def _in_range(index: int, size: int, what: str, prefix: str) -> int:
    if not -size <= index < size:
        raise UsageError(f"{prefix}: index {index} is out of range for {size} {what}")
    return index % size


def _index_file(source: str, size: int, what: str, prefix: str) -> np.ndarray:
    if not source:
        raise UsageError(f"{prefix}: give a file after '@', e.g. @{what}.npy")
    loaded = load_array(source)
    if isinstance(loaded, dict):
        raise UsageError(f"{prefix}: an index file holds one array; use .npy, not .npz")
    values = np.atleast_1d(loaded)
    if values.ndim != 1:
        raise UsageError(f"{prefix}: index file {source} holds a {values.ndim}-D array; it must be 1-D")
    if values.dtype == np.bool_:
        if len(values) != size:
            raise UsageError(
                f"{prefix}: the mask in {source} has {len(values)} entries but there are {size} {what}"
            )
        return np.flatnonzero(values).astype(np.int64)
    if values.dtype.kind == "f":
        # Text files always load as float64; whole numbers there are meant as indices.
        if not np.all(np.isfinite(values) & (values == np.round(values))):
            raise UsageError(f"{prefix}: index file {source} holds non-integer values")
        values = values.astype(np.int64)
    out_of_range = (values < -size) | (values >= size)
    if np.any(out_of_range):
        bad = int(values[np.argmax(out_of_range)])
        raise UsageError(f"{prefix}: index {bad} in {source} is out of range for {size} {what}")
    return (values % size if size else values).astype(np.int64)
