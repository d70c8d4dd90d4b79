"""Load user functions from .py files and bind input arrays to their parameters."""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# load_array and parse_index_spec live in their own modules; re-exported so existing imports keep working.
from .arrays import ARRAY_SUFFIXES, is_file, load_array, positional_keys, refuse_special, unreadable
from jaccli.errors import UsageError, UserFunctionError
from .index_specs import parse_index_spec
from jaccli.plurals import counted
from .working_directory import same_directory

__all__ = [
    "ARRAY_SUFFIXES",
    "LoadedFunction",
    "bind_inputs",
    "load_array",
    "load_function",
    "parse_index_spec",
]

_FUNC_HINT = "FUNC is path.py or path.py:name"
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
        defaults: Default values of the parameters that have one (keyword-only ones too).
        kwonly: Names of the keyword-only parameters (after ``*`` in the signature), in order:
            inputs bind to them by name only.
    """

    func: Callable[..., object]
    path: Path
    name: str
    params: list[str] = field(default_factory=list)
    defaults: dict[str, object] = field(default_factory=dict)
    kwonly: list[str] = field(default_factory=list)

    def call(self, inputs: Mapping[str, object]) -> object:
        """Call `func` with inputs keyed by parameter name, as `bind_inputs` returns them."""
        return _call_by_name(self.func, inputs)


def load_function(spec: str, interruption: type[KeyboardInterrupt] = KeyboardInterrupt) -> LoadedFunction:
    """Execute a user's .py file as a fresh module and pick one function from it.

    Without ``:name`` the function called ``f`` is used, else the file's only public function.
    The file's directory is on ``sys.path`` only while the file runs, so sibling imports work;
    the module and the sibling modules it imported are dropped from ``sys.modules`` afterwards.

    Args:
        spec: ``path.py`` or ``path.py:name``.
        interruption: what a signal raises while the file runs, passed on as it is: Python's
            KeyboardInterrupt for Ctrl-C by default. A caller whose signal handler raises a subclass
            of its own gives that: any other KeyboardInterrupt is then the file's own ``raise``,
            a UserFunctionError like any exception raised while the file runs.

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
    try:
        if not path.exists():
            raise UsageError(f"function file not found: {path_text}; {_FUNC_HINT}")
        if path.is_dir():
            raise UsageError(f"function file {path_text} is a directory; {_FUNC_HINT}")
        if path.suffix != ".py":
            raise UsageError(f"function file {path_text} is not a .py file; {_FUNC_HINT}")
        refuse_special(path, f"function file {path_text}")
        open(path, "rb").close()
    except OSError as exc:
        raise unreadable(path_text, exc) from exc

    module = _run_user_file(path, path_text, interruption)
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
    params, defaults, kwonly = _signature_params(func, f"{path_text}:{name}")
    return LoadedFunction(func=func, path=path, name=name, params=params, defaults=defaults, kwonly=kwonly)


def spec_file(spec: str) -> str:
    """The file that FUNC names: path.py, of path.py or path.py:name (only a left part naming a .py file is
    split off, so "C:/x.py" or "a:b/x.py" stay whole)."""
    head, sep, _ = spec.rpartition(":")
    return head if sep and head.endswith(".py") else spec


def _split_spec(spec: str) -> tuple[str, str | None]:
    head = spec_file(spec)
    if head is spec:
        return spec, None
    tail = spec[len(head) + 1:]
    if not tail.isidentifier():
        raise UsageError(f"bad function name {tail!r} in {spec!r}; {_FUNC_HINT}")
    return head, tail


def _run_user_file(path: Path, shown: str, interruption: type[KeyboardInterrupt]) -> types.ModuleType:
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
        with same_directory():
            import_spec.loader.exec_module(module)
    except interruption:
        raise
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
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


def _signature_params(func: Callable[..., object],
                      shown: str) -> tuple[list[str], dict[str, object], list[str]]:
    """The positional parameters' names, every default, and the keyword-only parameters' names."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"cannot read the parameters of {shown}: {exc}") from exc
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [p for p in signature.parameters.values() if p.kind in positional]
    kwonly = [p for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    defaults = {p.name: p.default for p in params + kwonly if p.default is not inspect.Parameter.empty}
    return [p.name for p in params], defaults, [p.name for p in kwonly]


def _call_by_name(func: Callable[..., object], inputs: Mapping[str, object]) -> object:
    signature = inspect.signature(func)
    args, kwargs = [], dict(inputs)
    # Positional-only parameters cannot be passed by keyword; defaults fill any gap before a given one.
    for p in signature.parameters.values():
        if p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            break
        args.append(kwargs.pop(p.name) if p.name in kwargs else p.default)
    return func(*args, **kwargs)


# ---------------------------------------------------------------- binding inputs to parameters


_EXPRESSIONS = f"{__name__.partition('.')[0]}.expr.evaluation"  # (this package's own name, as recorded_functions')


def bind_inputs(
    fn: LoadedFunction | Callable[..., object], sources: Sequence[str]
) -> dict[str, np.ndarray]:
    """Match input sources to a function's parameters.

    A source is ``SOURCE`` (positional) or ``name=SOURCE`` (when the text before the first ``=``
    is an identifier). As in a Python call, positional sources bind to the first parameters in
    order, and a parameter they reach must not also be bound by name (``f(1, x=2)`` for
    ``def f(x, y)`` is an error, not ``y=1``). A positional ``.npz`` binds its arrays by key, except that its
    arrays ``arr_0, arr_1, ...`` (``np.savez`` without names) are that many positional inputs in its
    place: ``np.savez(file, a, k=b)`` binds as ``f(a, k=b)``. ``name=file.npz`` takes the archive's only array, or else its array
    called ``name``. Parameters with defaults may stay unbound. Keyword-only parameters (after
    ``*``) bind by name only.

    Args:
        fn: A loaded function or any Python callable.
        sources: Input specs as given on the command line.

    Returns:
        Arrays keyed by parameter name, in parameter order.

    Raises:
        UsageError: Too many or missing inputs, unknown names, or a parameter given twice
            (by name twice, or positionally and by name).

    >>> bind_inputs(lambda x, y=2.0: x, ["[1, 2]"])
    {'x': array([1, 2])}
    """
    reserved: Mapping[str, str] = {}
    if isinstance(fn, LoadedFunction):
        shown, params, defaults, kwonly = fn.name, fn.params, fn.defaults, fn.kwonly
    else:
        shown = getattr(fn, "__name__", "the function")
        params, defaults, kwonly = _signature_params(fn, shown)
        # (-e's module loads with an expression: until then, no fn is one)
        expressions = sys.modules.get(_EXPRESSIONS)
        if expressions is not None and isinstance(fn, expressions.ExpressionFunction):
            shown, reserved = "the expression", fn.reserved
    param_list = ", ".join(params + (["*"] + kwonly if kwonly else [])) or "none"
    unnamed = _unnamed(fn.func if isinstance(fn, LoadedFunction) else fn)
    fix = f"give {shown} named parameters, as in def {shown}(x, y), or wrap it in a function that has them"
    if unnamed and not params:
        raise UsageError(f"{shown} has only {unnamed}, and jaccli binds each input to a named parameter: {fix}")
    # Appended where inputs were meant for *args or **kwargs (def f(x, *rest)).
    hint = f"; jaccli binds each input to a named parameter, not to {unnamed}: {fix}" if unnamed else ""

    named: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    positional: list[tuple[str, np.ndarray]] = []

    def bind(name: str, array: np.ndarray, given_as: str) -> None:
        if name in reserved:
            raise UsageError(_reserved_message(name, reserved[name], given_as))
        if name not in params and name not in kwonly:
            raise UsageError(f"{shown} has no parameter {name!r}; its parameters are {param_list}{hint}")
        if name in named:
            raise UsageError(
                f"input for parameter {name!r} of {shown} given twice ({origin[name]} and {given_as})"
            )
        named[name], origin[name] = array, given_as

    for source in sources:
        name, sep, rest = source.partition("=")
        name = name.strip()
        # "a=b.npy" may also be a file's name; the file wins when no parameter is called "a".
        is_file_name = name not in params and name not in kwonly and is_file(source)
        if sep and name.isidentifier() and not is_file_name:
            if not rest.strip():
                raise UsageError(f"empty source in {source!r}; give {name}=FILE or {name}=VALUE")
            bind(name, _one_array(load_array(rest), name, rest.strip()), source)
            continue
        loaded = load_array(source)
        if not isinstance(loaded, dict):
            positional.append((source, loaded))
            continue
        # np.savez(file, a, k=b) is f(a, k=b): arr_0, arr_1, ... are positional inputs here, the rest by name.
        numbered = positional_keys(loaded, params + kwonly)
        positional.extend((f"{source}[{key}]", loaded[key]) for key in numbered)
        loaded = {key: array for key, array in loaded.items() if key not in numbered}
        unknown = [key for key in loaded if key not in params and key not in kwonly]
        taken = next((key for key in unknown if key in reserved), None)
        if taken is not None:
            raise UsageError(_reserved_message(taken, reserved[taken], f"{source}[{taken}]"))
        if unknown:
            raise UsageError(
                f"{source} holds arrays {', '.join(unknown)} that are not parameters of {shown}; "
                f"its parameters are {param_list}{hint}"
            )
        for key, array in loaded.items():
            bind(key, array, f"{source}[{key}]")

    by_position = [n for n in named if n in params]
    if len(positional) + len(by_position) > len(params):
        given = len(by_position) + len(positional)
        if kwonly:
            takes = f"{counted(len(params), 'positional input')} ({', '.join(params) or 'none'})"
            hint = f"; {', '.join(kwonly)} {'is' if len(kwonly) == 1 else 'are'} keyword-only: give " \
                   f"{kwonly[0]}=SOURCE" + hint
        else:
            takes = f"{counted(len(params), 'input')} ({param_list})" if params else "no inputs"
        raise UsageError(f"{shown} takes {takes} but {given} {'was' if given == 1 else 'were'} given{hint}")
    for param, (source, _) in zip(params, positional):
        if param in named:
            raise UsageError(
                f"input for parameter {param!r} of {shown} given twice ({source} positionally and "
                f"{origin[param]}); positional inputs bind to the first parameters ({param_list}) in "
                "order: give them before naming later ones, or name every input"
            )
    bound = dict(named)
    bound.update((param, array) for param, (_, array) in zip(params, positional))
    missing = [p for p in params + kwonly if p not in bound and p not in defaults]
    if missing:
        names = ", ".join(repr(p) for p in missing)
        plural = "s" if len(missing) > 1 else ""
        how = "positionally or as" if missing[0] in params else "by name, as"
        keyword_only = "" if missing[0] in params else f" ({missing[0]} is keyword-only)"
        raise UsageError(
            f"missing input for parameter{plural} {names} of {shown}: "
            f"give {'them' if plural else 'it'} {how} {missing[0]}=SOURCE{keyword_only}"
        )
    return {p: bound[p] for p in params + kwonly if p in bound}


def _reserved_message(name: str, meaning: str, given_as: str) -> str:
    """An input named after a constant or function of an expression: say what the name means there."""
    return (f"{given_as}: in an expression {name} is {meaning}, so no input can be called {name}; "
            f"use another name, such as {name}1, in the expression and as {name}1=SOURCE")


def _unnamed(func: Callable[..., object]) -> str:
    """The ``*args`` and ``**kwargs`` parameters of `func` as written (``"*args, **kw"``), or ""."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return ""
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return ", ".join(stars[p.kind] + p.name for p in parameters if p.kind in stars)


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
