"""Tests for jaccli.expr.expression: safe expressions give NumPy's results and refuse everything else up front."""

from __future__ import annotations

import builtins
import contextlib
import doctest
import inspect
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import jaccli.expr.expression
import jaccli.expr.checker
import jaccli.expr.evaluation
from jaccli.errors import EXIT_USAGE, UsageError
from jaccli.expr.expression import DEFAULT_FUNCTIONS, MAX_DEPTH, MAX_LENGTH, compile_expression


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


@pytest.fixture
def inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "x": rng.normal(size=4),
        "y": rng.normal(size=4),
        # Diagonally dominant, so inv/solve/cholesky-style functions are well conditioned.
        "A": rng.normal(size=(4, 4)) + 6.0 * np.eye(4),
    }


# ---------------------------------------------------------------- results match NumPy

CASES = [
    ("sin(x) * exp(y) + x**2", lambda x, y, A: np.sin(x) * np.exp(y) + x**2),
    ("np.cos(x) / (1 + y**2)", lambda x, y, A: np.cos(x) / (1 + y**2)),
    ("numpy.tanh(x) - y", lambda x, y, A: np.tanh(x) - y),
    ("x @ y", lambda x, y, A: x @ y),
    ("x // 0.3 + x % 0.3", lambda x, y, A: x // 0.3 + x % 0.3),
    ("-x + +y", lambda x, y, A: -x + y),
    ("2**3 * x - 1e-3", lambda x, y, A: 8 * x - 1e-3),
    ("abs(x) ** 2 ** 0.5", lambda x, y, A: np.abs(x) ** (2**0.5)),
    ("where(x > y, x, y)", lambda x, y, A: np.where(x > y, x, y)),
    ("where(x <= 0, 0, x) + where(y != 0, 1, 2)", lambda x, y, A: np.maximum(x, 0) + 1),
    ("sum(x * y)", lambda x, y, A: np.sum(x * y)),
    ("sum(outer(x, y), axis=0)", lambda x, y, A: np.outer(x, y).sum(axis=0)),
    ("mean(x**2, keepdims=True)", lambda x, y, A: np.mean(x**2, keepdims=True)),
    ("np.linalg.norm(x)", lambda x, y, A: np.linalg.norm(x)),
    ("linalg.norm(x - y, ord=1)", lambda x, y, A: np.linalg.norm(x - y, ord=1)),
    ("numpy.linalg.norm(A, ord='fro')", lambda x, y, A: np.linalg.norm(A, ord="fro")),
    ("x[0] * y[-1] + x[1:3] @ y[::-1][1:3]", lambda x, y, A: x[0] * y[-1] + x[1:3] @ y[::-1][1:3]),
    ("reshape(x, (2, 2))[:, 0]", lambda x, y, A: x.reshape(2, 2)[:, 0]),
    ("reshape(x, -1)[-2:]", lambda x, y, A: x[-2:]),
    ("stack([x, y])[..., 1]", lambda x, y, A: np.stack([x, y])[..., 1]),
    ("stack((x, y), axis=1)", lambda x, y, A: np.stack((x, y), axis=1)),
    ("einsum('i,i->', x, y)", lambda x, y, A: np.einsum("i,i->", x, y)),
    ("einsum('ij,j->i', A, x)", lambda x, y, A: A @ x),
    ("pi * x + e * y + np.pi", lambda x, y, A: np.pi * x + np.e * y + np.pi),
    ("maximum(x, 0.5) + clip(y, -0.5, 0.5)", lambda x, y, A: np.maximum(x, 0.5) + np.clip(y, -0.5, 0.5)),
    ("logaddexp(x, y) + hypot(x, y) + arctan2(y, x)",
     lambda x, y, A: np.logaddexp(x, y) + np.hypot(x, y) + np.arctan2(y, x)),
    ("linalg.inv(A) @ x", lambda x, y, A: np.linalg.inv(A) @ x),
    ("linalg.det(A) * trace(A)", lambda x, y, A: np.linalg.det(A) * np.trace(A)),
    ("linalg.solve(A, x)", lambda x, y, A: np.linalg.solve(A, x)),
    ("np.linalg.slogdet(A)[1]", lambda x, y, A: np.linalg.slogdet(A)[1]),
    ("np.linalg.svd(A)[1]", lambda x, y, A: np.linalg.svd(A)[1]),
    ("triu(A, 1) + tril(A, k=-1) + diag(diagonal(A))", lambda x, y, A: A),
    ("transpose(A)[0] + flip(x) + roll(y, 1)", lambda x, y, A: A.T[0] + x[::-1] + np.roll(y, 1)),
    ("kron(x, y)[3] + tensordot(A, A, 2) + inner(x, y)",
     lambda x, y, A: np.kron(x, y)[3] + np.tensordot(A, A, 2) + np.inner(x, y)),
    ("cumsum(x)[-1] + cumprod(y)[0] + prod(x) + var(x) + std(y)",
     lambda x, y, A: np.sum(x) + y[0] + np.prod(x) + np.var(x) + np.std(y)),
    ("max(x) - min(y) + amax(A, axis=0) - amin(A, 1)",
     lambda x, y, A: np.max(x) - np.min(y) + A.max(axis=0) - A.min(axis=1)),
    ("concatenate((x, y))[5] + hstack((x, y))[0] + vstack((x, y))[1, 2]",
     lambda x, y, A: y[1] + x[0] + y[2]),
    ("sqrt(abs(x)) + cbrt(y) + square(x) + sign(y) + absolute(x)",
     lambda x, y, A: np.sqrt(np.abs(x)) + np.cbrt(y) + x**2 + np.sign(y) + np.abs(x)),
    ("log1p(x**2) + expm1(y) + exp2(x) + log2(1 + x**2) + log10(2 + y**2)",
     lambda x, y, A: np.log1p(x**2) + np.expm1(y) + np.exp2(x) + np.log2(1 + x**2) + np.log10(2 + y**2)),
]


@pytest.mark.parametrize(("text", "reference"), CASES, ids=[case[0] for case in CASES])
def test_expression_matches_numpy(text, reference, inputs):
    f = compile_expression(text)
    got = f(**{name: inputs[name] for name in f.params})
    np.testing.assert_allclose(got, reference(**inputs), rtol=1e-12, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(
    x=arrays(np.float64, 5, elements=st.floats(-5, 5)),
    y=arrays(np.float64, 5, elements=st.floats(-5, 5)),
)
def test_elementwise_expression_matches_numpy_on_any_floats(x, y):
    f = compile_expression("sin(x) * exp(y) + x**2 - tanh(y) / (1 + x**2)")
    np.testing.assert_allclose(f(x, y), np.sin(x) * np.exp(y) + x**2 - np.tanh(y) / (1 + x**2))


def test_tuple_expression_returns_each_output(inputs):
    f = compile_expression("x * y, x + y, sum(x)")
    out = f(inputs["x"], inputs["y"])
    assert isinstance(out, tuple) and len(out) == 3
    np.testing.assert_allclose(out[0], inputs["x"] * inputs["y"])
    np.testing.assert_allclose(out[1], inputs["x"] + inputs["y"])
    np.testing.assert_allclose(out[2], inputs["x"].sum())


def test_values_are_never_converted_to_python_types(inputs):
    # Stands in for the engine's traced arrays: any float()/bool()/int() on a value fails.
    class NoConversion(np.ndarray):
        def __float__(self):
            raise AssertionError("float() called on a value")

        def __bool__(self):
            raise AssertionError("bool() called on a value")

        def __int__(self):
            raise AssertionError("int() called on a value")

        __index__ = __int__

    x = inputs["x"].view(NoConversion)
    y = inputs["y"].view(NoConversion)
    f = compile_expression("where(x > y, sin(x), y)[1:3] * sum(x, axis=0) + linalg.norm(x) + x[0], x @ y")
    first, second = f(x, y)
    reference = np.where(inputs["x"] > inputs["y"], np.sin(inputs["x"]), inputs["y"])[1:3]
    reference = reference * inputs["x"].sum() + np.linalg.norm(inputs["x"]) + inputs["x"][0]
    np.testing.assert_allclose(np.asarray(first), reference)
    np.testing.assert_allclose(np.asarray(second), inputs["x"] @ inputs["y"])


@contextlib.contextmanager
def builtins_refused(*names: str) -> Iterator[list[str]]:
    """Make the named builtins fail and record calls on this thread; plain setattr, so pytest's own imports are
    untouched. Other threads (pytest-xdist's channel to the controller, which calls getattr) get the real
    builtins: refusing them there takes the worker down."""
    called: list[str] = []
    saved = {name: getattr(builtins, name) for name in names}
    here = threading.get_ident()

    def refuser(name):
        def refuse(*args, **kwargs):
            # The parser itself imports unicodedata to normalise non-ASCII names.
            if threading.get_ident() != here or (name == "__import__" and args and args[0] == "unicodedata"):
                return saved[name](*args, **kwargs)
            called.append(name)
            raise AssertionError(f"builtin {name} was called")

        return refuse

    try:
        for name in names:
            setattr(builtins, name, refuser(name))
        yield called
    finally:
        for name, value in saved.items():
            setattr(builtins, name, value)


DANGEROUS_BUILTINS = ("__import__", "eval", "exec", "compile", "open", "globals", "locals", "vars", "getattr")


def test_builtins_are_refused_on_the_test_thread_only():
    seen = []
    with builtins_refused("getattr") as called:
        other = threading.Thread(target=lambda: seen.append(getattr(np, "pi")))
        other.start()
        other.join()
        try:  # (not pytest.raises: it calls getattr on the exception)
            getattr(np, "pi")
        except AssertionError as error:
            refused = str(error)
    assert seen == [np.pi] and called == ["getattr"] and refused == "builtin getattr was called"


def test_evaluation_never_calls_builtins(inputs):
    f = compile_expression("np.linalg.norm(sin(x) * exp(y) + x**2) + sum(x[1:3], axis=0), x @ y")
    with builtins_refused(*DANGEROUS_BUILTINS) as called:
        out = f(inputs["x"], y=inputs["y"])
    assert called == []
    np.testing.assert_allclose(out[1], inputs["x"] @ inputs["y"])


# ---------------------------------------------------------------- parameters and signature


@pytest.mark.parametrize(
    ("text", "params"),
    [
        ("y * x + z", ("y", "x", "z")),
        ("b + a * b + a", ("b", "a")),
        ("sin(w) + np.cos(v) * pi", ("w", "v")),
        ("(\n  q +\n  p\n)", ("q", "p")),
        ("sum(t, axis=0) + u", ("t", "u")),
        ("linalg.norm(u, ord=2)", ("u",)),
        ("1 + 2", ()),
        ("e * x", ("x",)),
    ],
)
def test_params_are_free_names_in_order_of_first_appearance(text, params):
    assert compile_expression(text).params == params


def test_signature_binds_like_a_python_function():
    f = compile_expression("x * y")
    signature = inspect.signature(f)
    assert list(signature.parameters) == ["x", "y"]
    assert {p.kind for p in signature.parameters.values()} == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
    assert f.__name__ == "expr"
    assert f.text == "x * y"
    assert float(f(2.0, 3.0)) == float(f(y=3.0, x=2.0)) == 6.0
    with pytest.raises(TypeError):
        f(1.0)
    with pytest.raises(TypeError):
        f(1.0, 2.0, z=3.0)


def test_constant_expression_has_no_inputs():
    f = compile_expression("1 + 2 * pi")
    assert f.params == ()
    assert f() == pytest.approx(1 + 2 * np.pi)


def test_caller_chooses_allowed_functions(inputs):
    f = compile_expression("np.sq(x) + sq(y)", allowed_functions={"sq": np.square})
    np.testing.assert_allclose(f(inputs["x"], inputs["y"]), inputs["x"] ** 2 + inputs["y"] ** 2)
    with pytest.raises(UsageError):
        compile_expression("sin(x)", allowed_functions={"sq": np.square})


def test_bad_allowed_function_names_are_a_programming_error():
    with pytest.raises(ValueError):
        compile_expression("x", allowed_functions={"__import__": __import__})


def test_linalg_functions_are_only_reachable_through_linalg():
    assert "linalg.norm" in DEFAULT_FUNCTIONS and "norm" not in DEFAULT_FUNCTIONS
    with pytest.raises(UsageError):
        compile_expression("np.norm(x)")


def test_a_fresh_process_allows_every_function_any_rules_module_allows():
    # Rules modules that wait for f (np.linalg's, np.fft's, SciPy's) may declare functions an expression calls;
    # the checker must have them all before any f runs.
    code = """if True:
        from jaccli.expr.expression import DEFAULT_FUNCTIONS
        first = set(DEFAULT_FUNCTIONS)
        from jaccli.engine.rules import every_rule
        every_rule()
        print(sorted(set(DEFAULT_FUNCTIONS) - first), "linalg.norm" in first)
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"]


def test_doctests_pass():
    for module in (jaccli.expr.expression, jaccli.expr.checker, jaccli.expr.evaluation):
        assert doctest.testmod(module).failed == 0


# ---------------------------------------------------------------- refusals

ESCAPES = [
    # code execution and introspection
    "__import__('os').system('echo hi')",
    "__import__",
    "().__class__.__bases__[0].__subclasses__()",
    "x.__class__.__mro__[1].__subclasses__()",
    "x.__class__",
    "(x).__class__",
    "x[0].__class__",
    "x.__dict__",
    "x.real.__class__",
    "pi.__class__",
    "np.sin.__call__(x)",
    "np.sin.__globals__",
    "np.linalg.__dict__",
    "__builtins__['eval']('1')",
    "ｘ.__class__",
    "(lambda: 1)()",
    "lambda: 1",
    "[c for c in ()]",
    "sum(c for c in x)",
    "{c: c for c in x}",
    "open('/etc/passwd')",
    "eval('1')",
    "exec('1')",
    "compile('1', '', 'eval')",
    "getattr(x, 'T')",
    "type(x)",
    "globals()",
    "locals()",
    "vars()",
    "breakpoint()",
    "print(x)",
    "f(x)(y)",
    # module attributes other than allowed functions
    "np.load('x.npy')",
    "np.lib.format",
    "numpy.lib.format.open_memmap('x.npy')",
    "numpy.sys",
    "np.sys.modules",
    "np",
    "np.linalg",
    "linalg",
    "np.sin",
    "x.T",
    "x.sum()",
    "linalg.svd(x).U",
    # functions as values, names that are taken
    "sin",
    "sin(sin)",
    "sum + x",
    "max * 2",
    # literals that are not numbers
    '"abc"',
    "b'abc'",
    "None",
    "...",
    "1j * x",
    "{}",
    "{1}",
    "{'a': 1}",
    "[x, y]",
    'f"{x}"',
    "einsum('i;import os', x)",
    "linalg.norm(x, 'fro')",
    "sum(x, dtype='object')",
    # statements and control flow
    "x if x else y",
    "x and y",
    "x or y",
    "(x := 1)",
    "x := 1",
    "x = 1",
    "import os",
    "await x",
    "(yield x)",
    # operators outside the list
    "not x",
    "~x",
    "x | y",
    "x & y",
    "x ^ y",
    "x << 2",
    "x in y",
    "x is y",
    "a < b < c",
    # arguments
    "*x",
    "sin(*x)",
    "sum(**{})",
    "sum(x, **{'axis': 0})",
    "sum(x, out=x)",
    "sum(x, __class__=1)",
    "sum(x, axis=0, axis=1)",
    # indexes must be integer constants and slices
    "x[y]",
    "x[sin(0)]",
    "x[0.5]",
    "x['a']",
    "x[None]",
    "x[1 + 1]",
    "x[(0, 1), 2]",
    # resource exhaustion before anything runs
    "9**9**9",
    "10**5000 * 10**5000",
    "(2**5000) * (2**5000) * (2**5000)",
    "(x,) * 10**9",
    "sum([x] * 10**9)",
    "x" * (MAX_LENGTH + 1),
    "-" * 5000 + "x",
    "(" * 1000 + "x" + ")" * 1000,
    "sin(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1),
    "+".join(["x"] * (MAX_DEPTH + 2)),
    # not an expression at all
    "",
    "   ",
    "\x00",
    "sin(x",
    "x y",
]


@pytest.fixture
def spy_functions() -> tuple[dict, list]:
    calls: list[str] = []

    def spy(name, function):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return function(*args, **kwargs)

        return wrapper

    return {name: spy(name, function) for name, function in DEFAULT_FUNCTIONS.items()}, calls


@pytest.mark.parametrize("text", ESCAPES, ids=[repr(text[:40]) for text in ESCAPES])
def test_escape_attempt_is_refused_before_anything_runs(text, spy_functions):
    functions, calls = spy_functions
    # `compile` stays: ast.parse uses it to build the tree, which runs nothing.
    with builtins_refused("__import__", "eval", "exec", "open", "globals", "locals", "vars") as called:
        try:
            compile_expression(text, allowed_functions=functions)
        except UsageError as error:
            caught = error
        else:
            caught = None
    assert called == [] and calls == []
    assert caught is not None, f"{text!r} was accepted"
    assert caught.exit_code == EXIT_USAGE
    assert str(caught).startswith("expression: ")
    assert len(str(caught)) < 2000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x.__class__", "expression: attribute access 'x.__class__' is not allowed; use functions like sin(x)"),
        ("x.T", "use transpose(x)"),
        ("__import__('os')", "names starting with '__' are reserved"),
        ("open('/etc/passwd')", "'open' is not an allowed function"),
        ("sinn(x)", "did you mean 'sin'?"),
        ("sin", "'sin' is a function; call it, e.g. sin(x)"),
        ("x if x else y", "use where(c, a, b)"),
        ("[x, y]", "use a tuple 'x, y'"),
        ('"abc"', "string \"abc\" is not allowed"),
        ("x[y]", "use integer constants and slices"),
        ("a < b < c", "chained comparison"),
        ("x & y", "allowed: + - * / // % ** @"),
        ("sum(x, out=x)", "keyword 'out=' is not allowed"),
        ("9**9**9", "too large"),
        ("x" * (MAX_LENGTH + 1), "too long"),
        ("sin(" * 150 + "x" + ")" * 150, "nested too deeply"),
        ("-" * 5000 + "x", "nested too deeply"),
        ("", "empty"),
    ],
)
def test_refusal_says_what_is_wrong_and_what_is_allowed(text, message):
    with pytest.raises(UsageError) as caught:
        compile_expression(text)
    assert message in str(caught.value)


def test_syntax_error_reports_the_column():
    with pytest.raises(UsageError) as caught:
        compile_expression("  sin(x,,)")
    message = str(caught.value)
    assert message.startswith("expression: invalid syntax at column 9")
    assert message.endswith("  sin(x,,)\n          ^")


def test_names_reserved_for_constants_are_not_inputs():
    f = compile_expression("x * e + inf * 0 * x")
    assert f.params == ("x",)
