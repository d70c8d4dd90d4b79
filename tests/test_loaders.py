"""Tests for loading user functions, input arrays, input binding and index specs; sample checks."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from jaccli.errors import UsageError, UserFunctionError
from jaccli.io.user_functions import LoadedFunction, bind_inputs, load_array, load_function, parse_index_spec

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


def write_file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def leftover_modules() -> set[str]:
    return {name for name in sys.modules if name.startswith("_jaccli_user_")}


# ---------------------------------------------------------------- load_function


def test_load_function_prefers_f(tmp_path):
    path = write_file(tmp_path, "m.py", "def g(x): return x\ndef f(x, y=2.0): return x * y\n")
    loaded = load_function(str(path))
    assert loaded.name == "f"
    assert loaded.params == ["x", "y"]
    assert loaded.defaults == {"y": 2.0}
    assert loaded.path == path
    assert loaded.func(3.0) == 6.0


def test_load_function_uses_the_only_public_function(tmp_path):
    path = write_file(
        tmp_path,
        "m.py",
        """\
        from math import sin
        import numpy as np

        def _helper(x):
            return x

        def energy(q):
            return _helper(q)
        """,
    )
    assert load_function(str(path)).name == "energy"


def test_load_function_with_several_candidates_lists_them(tmp_path):
    path = write_file(tmp_path, "x.py", "def a(x): pass\ndef b(x): pass\ndef c(x): pass\n")
    with pytest.raises(UsageError) as info:
        load_function(str(path))
    assert str(info.value) == (
        f"{path} defines no function f and 3 public functions (a, b, c); pick one with {path}:NAME"
    )


def test_load_function_without_functions_says_so(tmp_path):
    path = write_file(tmp_path, "x.py", "import numpy as np\nA = 1\n")
    with pytest.raises(UsageError):
        load_function(str(path))


def test_load_function_picks_named_function(tmp_path):
    path = write_file(tmp_path, "m.py", "def f(x): return 1\ndef g(a, b): return 2\n")
    loaded = load_function(f"{path}:g")
    assert (loaded.name, loaded.params, loaded.func(0, 0)) == ("g", ["a", "b"], 2)


def test_load_function_unknown_name_lists_public_functions(tmp_path):
    path = write_file(tmp_path, "m.py", "def f(x): pass\ndef g(x): pass\ndef _h(x): pass\n")
    with pytest.raises(UsageError) as info:
        load_function(f"{path}:nope")
    assert str(info.value) == f"{path} has no function 'nope'; its public functions are f, g"


def test_load_function_rejects_non_callable_name(tmp_path):
    path = write_file(tmp_path, "m.py", "SCALE = 3\ndef f(x): pass\n")
    with pytest.raises(UsageError):
        load_function(f"{path}:SCALE")


def test_load_function_rejects_bad_name_after_colon(tmp_path):
    path = write_file(tmp_path, "m.py", "def f(x): pass\n")
    with pytest.raises(UsageError):
        load_function(f"{path}:1x")


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "missing.py", "function file not found: {p}; FUNC is path.py or path.py:name"),
        (lambda d: d, "function file {p} is a directory; FUNC is path.py or path.py:name"),
        (lambda d: write_file(d, "f.txt", "def f(x): pass\n"), "function file {p} is not a .py file"),
    ],
)
def test_load_function_bad_path_is_usage_error(tmp_path, make, expected):
    path = make(tmp_path)
    with pytest.raises(UsageError) as info:
        load_function(str(path))
    assert expected.format(p=path) in str(info.value)


def test_syntax_error_points_at_line(tmp_path):
    path = write_file(tmp_path, "m.py", "import numpy as np\n\ndef f(x):\n    return x +\n")
    with pytest.raises(UserFunctionError) as info:
        load_function(str(path))
    assert info.value.site == (str(path), 4)
    assert f"running {path} failed: SyntaxError: invalid syntax" in str(info.value)
    assert info.value.exit_code == 3


def test_syntax_error_from_exec_in_user_code_points_at_the_call(tmp_path):
    path = write_file(tmp_path, "m.py", "\nexec('1 +')\ndef f(x): pass\n")
    with pytest.raises(UserFunctionError) as info:
        load_function(str(path))
    assert info.value.site == (str(path), 2)


def test_runtime_error_reports_innermost_user_frame(tmp_path):
    path = write_file(
        tmp_path,
        "m.py",
        """\
        def helper():
            return foo

        VALUE = helper()

        def f(x):
            return x
        """,
    )
    with pytest.raises(UserFunctionError) as info:
        load_function(str(path))
    assert info.value.site == (str(path), 2)
    assert str(info.value) == (
        f"{path}:2: running {path} failed: NameError: name 'foo' is not defined"
    )


class _Stopped(KeyboardInterrupt):
    """What a caller's signal handler raises in place of a plain KeyboardInterrupt."""


def test_keyboard_interrupt_while_the_file_runs_passes_through_unless_the_caller_names_its_own(tmp_path,
                                                                                               monkeypatch):
    import builtins

    path = write_file(tmp_path, "m.py", "raise KeyboardInterrupt\ndef f(x): pass\n")
    with pytest.raises(KeyboardInterrupt):  # Python's Ctrl-C by default: not told apart
        load_function(str(path))
    with pytest.raises(UserFunctionError) as info:
        load_function(str(path), interruption=_Stopped)
    assert info.value.site == (str(path), 1) and info.value.exit_code == 3
    assert str(info.value) == f"{path}:1: running {path} failed: KeyboardInterrupt"
    # The caller's own (a signal arriving while the file runs) passes through.
    monkeypatch.setattr(builtins, "_jaccli_test_stopped", _Stopped("SIGINT"), raising=False)
    signalled = write_file(tmp_path, "s.py", "raise _jaccli_test_stopped\ndef f(x): pass\n")
    with pytest.raises(_Stopped):
        load_function(str(signalled), interruption=_Stopped)
    assert not leftover_modules()


def test_failing_import_is_user_function_error(tmp_path):
    path = write_file(tmp_path, "m.py", "import numpy\nimport no_such_module_jaccli\ndef f(x): pass\n")
    with pytest.raises(UserFunctionError) as info:
        load_function(str(path))
    assert info.value.site == (str(path), 2)


def test_error_in_sibling_module_points_at_import_line(tmp_path):
    write_file(tmp_path, "broken_helper.py", "X = 1 / 0\n")
    path = write_file(tmp_path, "m.py", "\nimport broken_helper\ndef f(x): pass\n")
    with pytest.raises(UserFunctionError) as info:
        load_function(str(path))
    assert info.value.site == (str(path), 2)


def test_system_exit_while_loading_is_user_function_error(tmp_path):
    path = write_file(tmp_path, "m.py", "import sys\nsys.exit(3)\n")
    with pytest.raises(UserFunctionError):
        load_function(str(path))


def test_sibling_imports_work_and_leave_no_trace(tmp_path):
    write_file(tmp_path, "jaccli_sibling_helper.py", "SCALE = 4.0\n")
    path = write_file(
        tmp_path, "m.py", "import jaccli_sibling_helper as h\ndef f(x): return h.SCALE * x\n"
    )
    path_before, cwd_before, modules_before = list(sys.path), os.getcwd(), leftover_modules()
    loaded = load_function(str(path))
    assert loaded.func(2.0) == 8.0
    assert sys.path == path_before
    assert os.getcwd() == cwd_before
    assert "jaccli_sibling_helper" not in sys.modules
    assert leftover_modules() == modules_before


def test_loading_writes_no_bytecode_next_to_user_files(tmp_path, monkeypatch):
    write_file(tmp_path, "jaccli_sibling_cache.py", "A = 1\n")
    path = write_file(tmp_path, "m.py", "import jaccli_sibling_cache\ndef f(x): return x\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    load_function(str(path))
    assert not (tmp_path / "__pycache__").exists()
    assert sys.dont_write_bytecode is False

def test_failed_load_restores_sys_path_and_modules(tmp_path):
    path = write_file(tmp_path, "m.py", "raise RuntimeError('boom')\n")
    path_before, modules_before = list(sys.path), leftover_modules()
    with pytest.raises(UserFunctionError):
        load_function(str(path))
    assert sys.path == path_before
    assert leftover_modules() == modules_before


def test_each_load_runs_a_fresh_module(tmp_path):
    path = write_file(tmp_path, "m.py", "CALLS = []\ndef f(x):\n    CALLS.append(x)\n    return len(CALLS)\n")
    first, second = load_function(str(path)), load_function(str(path))
    assert first.func(0) == 1 and first.func(0) == 2
    assert second.func(0) == 1


def test_module_level_dataclass_works(tmp_path):
    path = write_file(
        tmp_path,
        "m.py",
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    a: float\ndef f(x): return P(x).a\n",
    )
    assert load_function(str(path)).func(1.5) == 1.5


def test_params_are_the_positional_parameters(tmp_path):
    path = write_file(tmp_path, "m.py", "def f(a, /, b, c=3, *rest, d=4, **kw): return (a, b, c, d)\n")
    loaded = load_function(str(path))
    assert loaded.params == ["a", "b", "c"]
    assert loaded.kwonly == ["d"]  # after *rest: by name only
    assert loaded.defaults == {"c": 3, "d": 4}
    assert loaded.call({"a": 1, "b": 2}) == (1, 2, 3, 4)
    assert loaded.call({"a": 1, "b": 2, "d": 5}) == (1, 2, 3, 5)


# ---------------------------------------------------------------- load_array: literals


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2, 3.0]", np.array([1.0, 2.0, 3.0])),
        ("0.5", np.array(0.5)),
        ("3.", np.array(3.0)),
        ("[[1,2],[3,4e0]]", np.array([[1.0, 2.0], [3.0, 4.0]])),
        ("-1e-3", np.array(-1e-3)),
        ("[1, nan]", np.array([1.0, np.nan])),
        ("[2 ** 70]", None),
        ("(1, -2.5)", np.array([1.0, -2.5])),
        ("  [nan, inf, -inf]  ", np.array([np.nan, np.inf, -np.inf])),
        ("[]", np.zeros(0)),
    ],
)
def test_literal_becomes_float64_array(text, expected):
    if text == "[2 ** 70]":
        with pytest.raises(UsageError):
            load_array(text)
        text, expected = f"[{2 ** 70}]", np.array([2.0 ** 70])  # past int64: float64
    array = load_array(text)
    assert array.dtype == np.float64
    assert_array_equal(array, expected)
    assert array.shape == expected.shape


def test_a_literal_number_beyond_float64_is_inf_and_counted():
    from jaccli.io.arrays import read_overflows

    array = load_array("[1e400, -1e999, inf, 1.0]")
    assert_array_equal(array, [np.inf, -np.inf, np.inf, 1.0])
    assert read_overflows(array) == (2, "its literal")  # not the inf written as such
    assert read_overflows(load_array("[inf, 1.0]"))[0] == 0 and read_overflows(load_array("1e308"))[0] == 0
    assert read_overflows(array.copy())[0] == 0  # only the array read from the literal


def test_an_integer_literal_beyond_int64_is_float64_and_its_wide_integers_counted():
    from jaccli.io.arrays import literal_wide_ints

    array = load_array(f"[[1, {2 ** 63}], [-{2 ** 63}, -{2 ** 63 + 1}]]")
    assert array.dtype == np.float64 and literal_wide_ints(array) == 2  # -2**63 is int64's own
    assert literal_wide_ints(load_array(f"[{2 ** 63 - 1}, -{2 ** 63}]")) == 0
    assert literal_wide_ints(load_array("[1e20, 1]")) == 0 and literal_wide_ints(array.copy()) == 0


@pytest.mark.parametrize(("text", "expected"), [("3", 3), ("[0, 2]", [0, 2]), ("[[1, -2], [3, 4]]", [[1, -2], [3, 4]]),
                                                ("(5,)", [5])])
def test_an_all_integer_literal_is_an_int64_array_as_numpy_makes_it(text, expected):
    array = load_array(text)
    assert array.dtype == np.int64
    assert_array_equal(array, np.array(expected))


@pytest.mark.parametrize(
    "text",
    [
        "[1, [2, 3]]",
        "[[1, 2], [3]]",
        "'abc'",
        "{'a': 1}",
        "1+2j",
        "[2j]",
        "[True, 1]",
        "foo",
        "__import__('os')",
        "[1, 2",
        "-[1]",
        "",
    ],
)
def test_bad_literal_is_usage_error(text):
    with pytest.raises(UsageError):
        load_array(text)


@pytest.mark.parametrize("name", ["missing.npy", "nope.csv", "sub/dir/x", "weights.np", "X.TXT"])
def test_missing_input_file_is_reported(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as info:
        load_array(name)
    assert str(info.value) == f"input file not found: {name}"


def test_existing_file_with_unknown_extension_is_refused(tmp_path):
    path = write_file(tmp_path, "x.json", "[1, 2]")
    with pytest.raises(UsageError):
        load_array(str(path))


@pytest.mark.parametrize("name", [os.devnull, "/dev/stdin"])
def test_a_device_is_not_reported_as_missing(name):
    with pytest.raises(UsageError):
        load_array(name)


def test_directory_with_array_suffix_is_refused(tmp_path):
    (tmp_path / "d.npy").mkdir()
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "d.npy"))


# ---------------------------------------------------------------- load_array: .npy and .npz


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_npy_keeps_its_dtype(tmp_path, rng, dtype):
    array = (rng.normal(size=(3, 4)) * 5).astype(dtype)
    np.save(tmp_path / "a.npy", array)
    loaded = load_array(str(tmp_path / "a.npy"))
    assert loaded.dtype == dtype
    assert_array_equal(loaded, array)


def test_npy_keeps_nan_and_inf(tmp_path):
    np.save(tmp_path / "a.npy", np.array([np.nan, np.inf, 1.0]))
    assert_array_equal(load_array(str(tmp_path / "a.npy")), [np.nan, np.inf, 1.0])


@pytest.mark.parametrize("keep", [0, 5, 60, 127, -8, -1])
def test_truncated_npy_is_refused(tmp_path, keep):
    np.save(tmp_path / "full.npy", np.arange(10.0))
    data = (tmp_path / "full.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:keep])
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "cut.npy"))


def _npy_with_header(header: bytes) -> bytes:
    """A version 1.0 .npy file with this header text (padded as NumPy pads it) and no data."""
    header = header.ljust(117) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


@pytest.mark.parametrize("header", [
    b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,",  # cut inside the dict: a TokenError
    b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)))}",  # a SyntaxError
    b"{'descr': '<f8', 'fortran_order': False}",
])
def test_npy_with_a_broken_header_is_refused_alone_and_inside_an_npz(tmp_path, header):
    (tmp_path / "x.npy").write_bytes(_npy_with_header(header))
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "x.npy"))
    import zipfile

    with zipfile.ZipFile(tmp_path / "a.npz", "w") as archive:
        archive.writestr("x.npy", _npy_with_header(header))
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "a.npz"))


def test_truncated_npy_message_gives_sizes(tmp_path):
    np.save(tmp_path / "full.npy", np.arange(10.0))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-8])
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "cut.npy"))


def test_pickled_object_npy_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.array([1, "a", None], dtype=object), allow_pickle=True)
    with pytest.raises(UsageError) as info:
        load_array(str(tmp_path / "x.npy"))
    assert str(info.value) == (
        f"{tmp_path / 'x.npy'} holds Python objects (a pickled object array); jaccli loads .npy files "
        "with allow_pickle=False for safety: save a numeric array instead"
    )


def test_pickle_named_npy_is_refused(tmp_path):
    import pickle

    (tmp_path / "x.npy").write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "x.npy"))


@pytest.mark.parametrize(
    "array",
    [
        np.array([1 + 2j]),
        np.array(["a", "b"]),
        np.zeros(2, dtype=[("a", "f8"), ("b", "i4")]),
        np.array(["2024-01-01"], dtype="datetime64[D]"),
    ],
)
def test_non_numeric_npy_is_refused(tmp_path, array):
    np.save(tmp_path / "x.npy", array)
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "x.npy"))


def test_npz_gives_dict_in_archive_order(tmp_path, rng):
    b, a = rng.normal(size=3), rng.normal(size=(2, 2))
    np.savez(tmp_path / "in.npz", b=b, a=a)
    loaded = load_array(str(tmp_path / "in.npz"))
    assert list(loaded) == ["b", "a"]
    assert_array_equal(loaded["a"], a)


def test_npz_with_object_array_names_the_key(tmp_path):
    np.savez(tmp_path / "in.npz", good=np.ones(2), bad=np.array([None, 1], dtype=object))
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "in.npz"))


def test_npz_with_complex_array_is_refused(tmp_path):
    np.savez(tmp_path / "in.npz", z=np.ones(2, dtype=complex))
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "in.npz"))


@pytest.mark.parametrize("keep", [0, 10, 200, -10])
def test_truncated_npz_is_refused(tmp_path, keep):
    np.savez(tmp_path / "full.npz", a=np.arange(50.0), b=np.ones(3))
    data = (tmp_path / "full.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[:keep])
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "cut.npz"))


def test_empty_npz_is_refused(tmp_path):
    np.savez(tmp_path / "e.npz")
    with pytest.raises(UsageError):
        load_array(str(tmp_path / "e.npz"))


# ---------------------------------------------------------------- load_array: text files


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("1,2,3\n4,5,6\n", (2, 3)),
        ("1,2,3\n", (3,)),
        ("1\n2\n3\n4\n", (4,)),
        ("7.5\n", ()),
    ],
)
def test_csv_squeezes_length_one_axes(tmp_path, text, shape):
    path = write_file(tmp_path, "a.csv", text)
    assert load_array(str(path)).shape == shape


def test_csv_skips_header_and_comments(tmp_path):
    path = write_file(tmp_path, "a.csv", "# exported\nx, y\n1, 2\n3, nan # note\n-inf,4\n")
    assert_array_equal(load_array(str(path)), [[1, 2], [3, np.nan], [-np.inf, 4]])


def test_csv_with_byte_order_mark_loads(tmp_path):
    (tmp_path / "a.csv").write_bytes("\ufeff1,2\n3,4\n".encode())
    assert_array_equal(load_array(str(tmp_path / "a.csv")), [[1, 2], [3, 4]])


def test_whitespace_text_files_load(tmp_path):
    txt = write_file(tmp_path, "a.txt", "1 2\t3\n4  5 6\n")
    dat = write_file(tmp_path, "a.dat", "1.5\n2.5\n")
    assert_array_equal(load_array(str(txt)), [[1, 2, 3], [4, 5, 6]])
    assert_array_equal(load_array(str(dat)), [1.5, 2.5])


@pytest.mark.parametrize(
    ("name", "text", "detail"),
    [
        ("bad.csv", "a,b\n1,2\n3,x\n", "could not convert string 'x' to float64 on line 3, column 2"),
        ("bad.csv", "# exported\nx, y\n1, 2\n\n# more\n3, x \n", "could not convert string ' x ' to float64 on "
         "line 6, column 2"),
        ("bad.csv", "\ufeffa,b\r\n1,2\r\n,\r\n", "could not convert string '' to float64 on line 3, column 1"),
        ("bad.csv", "1,2,\n", "could not convert string '' to float64 on line 1, column 3"),
        ("bad.csv", "# c\n\n1,2\n3,4 # note\n5,6,7\n", "the number of columns changed from 2 to 3 on line 5"),
        ("bad.csv", "1,2\n3\n", "the number of columns changed from 2 to 1 on line 2"),
        ("bad.csv", "1,2,3\n4,5\n", "the number of columns changed from 3 to 2 on line 2"),
        ("bad.csv", "1,2\n3,x\n", "could not convert string 'x' to float64 on line 2, column 2"),
        ("bad.txt", "x y\n1 2\n# c\n3\tx\n", "could not convert string 'x' to float64 on line 4, column 2"),
    ],
)
def test_malformed_text_file_names_the_line_of_the_file(tmp_path, name, text, detail):
    (tmp_path / name).write_text(text, encoding="utf-8", newline="")
    with pytest.raises(UsageError) as info:
        load_array(str(tmp_path / name))
    separated = "commas" if name.endswith(".csv") else "whitespace"
    assert str(info.value) == f"cannot read {tmp_path / name}: {detail} (expected numbers separated by {separated})"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", ": the file is empty"),
        ("\n  \n", ": the file is empty"),
        ("a,b\n", ", only the header line 'a,b'"),
        ("# exported\nx, y\n# nothing yet\n", ", only the header line 'x, y'"),
        ("# only a comment\n\n", ", only comments and blank lines"),
        ("# only a comment\n", ", only comments and blank lines"),
    ],
)
def test_csv_without_numbers_says_what_it_holds_instead(tmp_path, text, why):
    path = write_file(tmp_path, "e.csv", text)
    with pytest.raises(UsageError) as info:
        load_array(str(path))
    assert str(info.value) == f"{path} holds no numbers{why}; put rows of numbers separated by commas in it"


# ---------------------------------------------------------------- bind_inputs


def two_inputs(x, y):
    return x


def with_default(x, y, scale=1.0):
    return x


def test_positional_inputs_bind_in_order():
    bound = bind_inputs(two_inputs, ["[1, 2]", "3"])
    assert list(bound) == ["x", "y"]
    assert_array_equal(bound["y"], 3.0)


def test_named_inputs_bind_and_come_back_in_parameter_order():
    bound = bind_inputs(two_inputs, ["y=[5]", "x=1"])
    assert list(bound) == ["x", "y"]
    assert_array_equal(bound["y"], [5.0])


def test_positional_inputs_bind_the_first_parameters_as_in_python():
    bound = bind_inputs(with_default, ["scale=3", "1", "2"])
    assert [float(v) for v in bound.values()] == [1.0, 2.0, 3.0]
    assert list(bound) == ["x", "y", "scale"]


def test_positional_input_reaching_a_named_parameter_is_refused():
    # Python: with_default(2, 3, x=1) raises "got multiple values for argument 'x'"; no silent y=2.
    with pytest.raises(UsageError):
        bind_inputs(with_default, ["x=1", "2", "3"])


def test_parameters_with_defaults_may_stay_unbound():
    assert list(bind_inputs(with_default, ["1", "2"])) == ["x", "y"]


def test_too_many_inputs():
    with pytest.raises(UsageError) as info:
        bind_inputs(two_inputs, ["1", "2", "3"])
    assert str(info.value) == "two_inputs takes 2 inputs (x, y) but 3 were given"


def test_unknown_parameter_name():
    with pytest.raises(UsageError) as info:
        bind_inputs(two_inputs, ["z=1"])
    assert str(info.value) == "two_inputs has no parameter 'z'; its parameters are x, y"


def test_parameter_bound_twice():
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, ["x=1", "x=2"])


def test_missing_input():
    with pytest.raises(UsageError) as info:
        bind_inputs(with_default, ["1"])
    assert str(info.value) == (
        "missing input for parameter 'y' of with_default: give it positionally or as y=SOURCE"
    )


def test_several_missing_inputs_are_all_named():
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, [])


def test_input_counts_read_naturally():
    def one(x):
        return x

    def none():
        return 0

    with pytest.raises(UsageError):
        bind_inputs(one, ["1", "2"])
    with pytest.raises(UsageError):
        bind_inputs(none, ["1"])
    assert bind_inputs(none, []) == {}


@pytest.mark.parametrize("source, sources, wrong", [
    ("def f(*args): return args[0]\n", ["1"], "*args"),
    ("def f(*args): return args[0]\n", [], "*args"),
    ("def f(**kw): return kw['x']\n", ["x=1"], "**kw"),
    ("def f(**kw): return kw['x']\n", ["1"], "**kw"),
])
def test_variadic_only_function_says_inputs_need_named_parameters(tmp_path, source, sources, wrong):
    loaded = load_function(str(write_file(tmp_path, "v.py", source)))
    with pytest.raises(UsageError) as info:
        bind_inputs(loaded, sources)
    assert str(info.value) == (f"f has only {wrong}, and jaccli binds each input to a named parameter: give f "
                               "named parameters, as in def f(x, y), or wrap it in a function that has them")
    assert "takes no inputs" not in str(info.value)


@pytest.mark.parametrize("source, sources, head", [
    ("def f(x, *rest): return x\n", ["1", "2"], "f takes 1 input (x) but 2 were given; "),
    ("def f(x, **kw): return x\n", ["1", "y=2"], "f has no parameter 'y'; its parameters are x; "),
])
def test_inputs_meant_for_star_parameters_say_why_they_do_not_bind(tmp_path, source, sources, head):
    loaded = load_function(str(write_file(tmp_path, "v.py", source)))
    assert list(bind_inputs(loaded, sources[:1])) == ["x"]  # the named parameter still binds
    with pytest.raises(UsageError) as info:
        bind_inputs(loaded, sources)
    assert str(info.value).startswith(head + "jaccli binds each input to a named parameter, not to ")
    assert str(info.value).endswith(": give f named parameters, as in def f(x, y), or wrap it in a function "
                                    "that has them")


KWONLY = "import numpy as np\ndef f(x, y=1.0, *, alpha=0.5, beta):\n    return x * alpha + beta\n"


def test_keyword_only_parameters_bind_by_name(tmp_path):
    loaded = load_function(str(write_file(tmp_path, "k.py", KWONLY)))
    assert (loaded.params, loaded.kwonly, loaded.defaults) == (["x", "y"], ["alpha", "beta"],
                                                               {"y": 1.0, "alpha": 0.5})
    bound = bind_inputs(loaded, ["beta=3", "[1, 2]", "alpha=2"])
    assert list(bound) == ["x", "alpha", "beta"]  # parameter order
    assert_array_equal(loaded.call(bound), [5.0, 7.0])


@pytest.mark.parametrize("sources, message", [
    (["[1, 2]"], "missing input for parameter 'beta' of f: give it by name, as beta=SOURCE "
                 "(beta is keyword-only)"),
    (["1", "2", "3"], "f takes 2 positional inputs (x, y) but 3 were given; alpha, beta are keyword-only: "
                      "give alpha=SOURCE"),
    (["1", "gamma=2"], "f has no parameter 'gamma'; its parameters are x, y, *, alpha, beta"),
    (["1", "beta=2", "beta=3"], "input for parameter 'beta' of f given twice (beta=2 and beta=3)"),
])
def test_keyword_only_binding_errors_say_what_to_write(tmp_path, sources, message):
    loaded = load_function(str(write_file(tmp_path, "k.py", KWONLY)))
    with pytest.raises(UsageError) as info:
        bind_inputs(loaded, sources)
    assert str(info.value) == message


def test_empty_named_source():
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, ["x=", "1"])


def test_loaded_function_binds_with_its_own_name(tmp_path):
    path = write_file(tmp_path, "m.py", "def energy(q, k): return q\n")
    loaded = load_function(str(path))
    assert isinstance(loaded, LoadedFunction)
    with pytest.raises(UsageError):
        bind_inputs(loaded, ["1", "2", "3"])


def test_positional_npz_binds_by_key(tmp_path):
    np.savez(tmp_path / "in.npz", y=np.ones(2), x=np.zeros(3))
    bound = bind_inputs(two_inputs, [str(tmp_path / "in.npz")])
    assert list(bound) == ["x", "y"]
    assert bound["x"].shape == (3,)


def test_positional_npz_and_positional_file_fill_the_rest(tmp_path):
    np.savez(tmp_path / "in.npz", y=np.ones(2))
    bound = bind_inputs(two_inputs, ["[7]", str(tmp_path / "in.npz")])
    assert_array_equal(bound["x"], [7.0])
    assert_array_equal(bound["y"], [1.0, 1.0])


def test_unnamed_npz_arrays_bind_positionally(tmp_path):
    np.savez(tmp_path / "in.npz", np.zeros(3), np.ones(2))
    bound = bind_inputs(two_inputs, [str(tmp_path / "in.npz")])
    assert bound["x"].shape == (3,) and bound["y"].shape == (2,)


def test_npz_mixing_unnamed_and_named_arrays_binds_as_a_python_call(tmp_path):
    # np.savez(file, a, y=b) binds as f(a, y=b).
    np.savez(tmp_path / "in.npz", np.zeros(3), y=np.ones(2))
    bound = bind_inputs(two_inputs, [str(tmp_path / "in.npz")])
    assert_array_equal(bound["x"], np.zeros(3))
    assert_array_equal(bound["y"], np.ones(2))
    # in the archive's place among the positional inputs, in the order of their numbers
    np.savez(tmp_path / "later.npz", arr_1=np.full(1, 2.0), arr_0=np.full(1, 1.0), z=np.full(1, 3.0))
    bound = bind_inputs(lambda w, x, y, z: w, ["[0]", str(tmp_path / "later.npz")])
    assert {k: float(v[0]) for k, v in bound.items()} == {"w": 0.0, "x": 1.0, "y": 2.0, "z": 3.0}
    # arr_0 reaching a parameter the archive also names is the usual "given twice"
    np.savez(tmp_path / "twice.npz", np.zeros(3), x=np.ones(2))
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, [str(tmp_path / "twice.npz")])


def test_a_parameter_called_arr_0_takes_that_array_by_name(tmp_path):
    np.savez(tmp_path / "in.npz", np.zeros(3), np.ones(2))
    bound = bind_inputs(lambda x, arr_0: x, [str(tmp_path / "in.npz")])
    assert_array_equal(bound["arr_0"], np.zeros(3))
    assert_array_equal(bound["x"], np.ones(2))


def test_npz_keys_that_are_not_parameters(tmp_path):
    np.savez(tmp_path / "in.npz", x=np.ones(1), w=np.ones(1), b=np.ones(1))
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, [str(tmp_path / "in.npz")])


def test_npz_key_clashing_with_named_input(tmp_path):
    np.savez(tmp_path / "in.npz", x=np.ones(1), y=np.ones(1))
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, ["x=1", str(tmp_path / "in.npz")])


def test_named_npz_with_one_array_binds_that_array(tmp_path):
    np.savez(tmp_path / "w.npz", weights=np.arange(3.0))
    bound = bind_inputs(two_inputs, [f"y={tmp_path / 'w.npz'}", "1"])
    assert_array_equal(bound["y"], [0.0, 1.0, 2.0])


def test_named_npz_picks_the_array_with_the_parameter_name(tmp_path):
    np.savez(tmp_path / "in.npz", x=np.zeros(1), y=np.arange(2.0))
    bound = bind_inputs(two_inputs, [f"y={tmp_path / 'in.npz'}", "1"])
    assert_array_equal(bound["y"], [0.0, 1.0])


def test_named_npz_without_a_matching_array(tmp_path):
    np.savez(tmp_path / "in.npz", a=np.zeros(1), b=np.zeros(1))
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, [f"y={tmp_path / 'in.npz'}", "1"])


def test_file_name_with_equals_sign_is_positional(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("a=b.npy", np.arange(2.0))
    bound = bind_inputs(two_inputs, ["a=b.npy", "1"])
    assert_array_equal(bound["x"], [0.0, 1.0])


def test_load_errors_pass_through_binding():
    with pytest.raises(UsageError):
        bind_inputs(two_inputs, ["x=nowhere/x.npy", "1"])


# ---------------------------------------------------------------- parse_index_spec


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 20),
    start=st.none() | st.integers(-25, 25),
    stop=st.none() | st.integers(-25, 25),
    step=st.none() | st.integers(-5, 5).filter(lambda s: s != 0),
    form=st.sampled_from(["two", "three"]),
)
def test_slices_match_numpy(size, start, stop, step, form):
    def part(v: int | None) -> str:
        return "" if v is None else str(v)

    if form == "two" and step is None:
        spec = f"{part(start)}:{part(stop)}"
    else:
        spec = f"{part(start)}:{part(stop)}:{part(step)}"
    result = parse_index_spec(spec, size)
    assert result.dtype == np.int64
    assert_array_equal(result, np.arange(size)[start:stop:step])


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 30), data=st.data())
def test_index_lists_match_numpy(size, data):
    picks = data.draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=8))
    result = parse_index_spec(",".join(map(str, picks)), size)
    assert_array_equal(result, np.arange(size)[picks])


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("3", [3]),
        ("-1", [4]),
        (" 0 , 2 ", [0, 2]),
        ("4,4,0", [4, 4, 0]),
        ("0:3,-1", [0, 1, 2, 4]),
        ("...", [0, 1, 2, 3, 4]),
        (":", [0, 1, 2, 3, 4]),
        ("::-1", [4, 3, 2, 1, 0]),
        ("3:1", []),
        ("-100:100", [0, 1, 2, 3, 4]),
        ("+1", [1]),
    ],
)
def test_index_spec_forms(spec, expected):
    assert_array_equal(parse_index_spec(spec, 5), expected)


@pytest.mark.parametrize(
    ("spec", "what", "message"),
    [
        ("7", "rows", "--rows 7: index 7 is out of range for 5 rows"),
        ("-6", "cols", "--cols -6: index -6 is out of range for 5 cols"),
        ("1,9", "rows", "--rows 1,9: index 9 is out of range for 5 rows"),
        ("1:x", "rows", "--rows 1:x: bad slice '1:x'"),
        ("1:2:3:4", "rows", "bad slice '1:2:3:4'"),
        ("::0", "rows", "--rows ::0: slice step cannot be zero"),
        ("", "rows", "empty index"),
        ("a", "rows", "--rows a: bad index 'a'"),
        ("1,,2", "rows", "bad index ''"),
        ("1.5", "rows", "bad index '1.5'"),
    ],
)
def test_bad_index_spec(spec, what, message):
    with pytest.raises(UsageError) as info:
        parse_index_spec(spec, 5, what=what)
    assert message in str(info.value)


def test_index_file_of_integers(tmp_path):
    np.save(tmp_path / "r.npy", np.array([3, -1, 0, 3], dtype=np.int32))
    result = parse_index_spec(f"@{tmp_path / 'r.npy'}", 5)
    assert result.dtype == np.int64
    assert_array_equal(result, [3, 4, 0, 3])


def test_index_file_mask(tmp_path):
    np.save(tmp_path / "m.npy", np.array([True, False, True, False, False]))
    assert_array_equal(parse_index_spec(f"@{tmp_path / 'm.npy'}", 5), [0, 2])


def test_index_text_file_of_whole_numbers(tmp_path):
    path = write_file(tmp_path, "r.txt", "4\n1\n")
    assert_array_equal(parse_index_spec(f"@{path}", 5), [4, 1])


@pytest.mark.parametrize(
    "array",
    [
        np.array([True, False]),
        np.array([0, 5]),
        np.array([[0, 1]]),
        np.array([0.5]),
    ],
)
def test_bad_index_file(tmp_path, array):
    np.save(tmp_path / "r.npy", array)
    with pytest.raises(UsageError):
        parse_index_spec(f"@{tmp_path / 'r.npy'}", 5)


def test_index_file_must_exist_and_not_be_npz(tmp_path):
    with pytest.raises(UsageError):
        parse_index_spec(f"@{tmp_path / 'none.npy'}", 5)
    np.savez(tmp_path / "r.npz", a=np.arange(2))
    with pytest.raises(UsageError):
        parse_index_spec(f"@{tmp_path / 'r.npz'}", 5)
    with pytest.raises(UsageError):
        parse_index_spec("@", 5)


# ---------------------------------------------------------------- samples and their closed-form derivatives
#
# Each entry: sample name -> (input sources relative to samples/, output shape, derivatives).
# Derivatives map an input name to a function of the bound inputs giving the Jacobian with
# shape out.shape + in.shape; "hessian" entries give d2f/dx2 for scalar samples.


def robot_arm_jacobian(q):
    links = np.array([1.0, 0.8, 0.5])
    angles = np.cumsum(q)
    # Joint j moves every link from j outwards.
    dx = [-np.sum(links[j:] * np.sin(angles[j:])) for j in range(3)]
    dy = [np.sum(links[j:] * np.cos(angles[j:])) for j in range(3)]
    return np.array([dx, dy, [1.0, 1.0, 1.0]])


def mlp_weights():
    with np.load(SAMPLES / "mlp_weights.npz") as w:
        return w["W1"], w["b1"], w["W2"], w["b2"]


def mlp_jacobian(x):
    W1, b1, W2, _ = mlp_weights()
    h = np.tanh(W1 @ x + b1)
    return W2 @ ((1 - h**2)[:, None] * W1)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x):
    n = len(x)
    diagonal = np.zeros(n)
    diagonal[:-1] = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    off = -400 * x[:-1]
    return np.diag(diagonal) + np.diag(off, 1) + np.diag(off, -1)


def kinetics_jacobian_c(c, k):
    return np.array(
        [
            [-k[0], k[2] * c[2], k[2] * c[1]],
            [k[0], -2 * k[1] * c[1] - k[2] * c[2], -k[2] * c[1]],
            [0.0, 2 * k[1] * c[1], 0.0],
        ]
    )


def kinetics_jacobian_k(c, k):
    return np.array(
        [
            [-c[0], 0.0, c[1] * c[2]],
            [c[0], -c[1] ** 2, -c[1] * c[2]],
            [0.0, c[1] ** 2, 0.0],
        ]
    )


def heat_pde_jacobian(u):
    n = len(u)
    inv_h2 = (n + 1) ** 2
    return (
        np.diag(-2.0 * inv_h2 + np.exp(u))
        + np.diag(np.full(n - 1, inv_h2), 1)
        + np.diag(np.full(n - 1, inv_h2), -1)
    )


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def logistic_gradient_w(w, X, y, alpha=0.01):
    return X.T @ (sigmoid(X @ w) - y) / len(y) + alpha * w


def logistic_gradient_X(w, X, y, alpha=0.01):
    return np.outer(sigmoid(X @ w) - y, w) / len(y)


def logistic_gradient_y(w, X, y, alpha=0.01):
    return -(X @ w) / len(y)


def logistic_hessian_w(w, X, y, alpha=0.01):
    s = sigmoid(X @ w)
    return X.T @ ((s * (1 - s))[:, None] * X) / len(y) + alpha * np.eye(len(w))


def softmax(z):
    e = np.exp(z - np.max(z))
    return e / e.sum()


def softmax_xent_gradient_z(z, p):
    return p.sum() * softmax(z) - p


def softmax_xent_gradient_p(z, p):
    return -(z - np.log(np.sum(np.exp(z))))


def softmax_xent_hessian_z(z, p):
    s = softmax(z)
    return p.sum() * (np.diag(s) - np.outer(s, s))


SAMPLE_DERIVATIVES = {
    "robot_arm": (["robot_arm_q.npy"], (3,), {"q": robot_arm_jacobian}, {}),
    "mlp": (["mlp_x.npy"], (2,), {"x": mlp_jacobian}, {}),
    "rosenbrock": (["rosenbrock_x.npy"], (), {"x": rosenbrock_gradient}, {"x": rosenbrock_hessian}),
    "kinetics": (
        ["kinetics_c.npy", "kinetics_k.npy"],
        (3,),
        {"c": kinetics_jacobian_c, "k": kinetics_jacobian_k},
        {},
    ),
    "heat_pde": (["heat_pde_u.npy"], (32,), {"u": heat_pde_jacobian}, {}),
    "logistic": (
        ["logistic_w.npy", "logistic_X.csv", "logistic_y.txt"],
        (),
        {"w": logistic_gradient_w, "X": logistic_gradient_X, "y": logistic_gradient_y},
        {"w": logistic_hessian_w},
    ),
    "softmax_xent": (
        ["softmax_xent_z.npy", "softmax_xent_p.csv"],
        (),
        {"z": softmax_xent_gradient_z, "p": softmax_xent_gradient_p},
        {"z": softmax_xent_hessian_z},
    ),
}


def central_difference(func, inputs, name):
    """d func / d inputs[name], shape out.shape + in.shape, by central differences."""
    x = np.asarray(inputs[name], dtype=np.float64)
    out_shape = np.shape(func(**inputs))
    result = np.zeros(out_shape + x.shape)
    for index in np.ndindex(x.shape):
        step = 1e-6 * max(1.0, abs(x[index]))
        plus, minus = x.copy(), x.copy()
        plus[index] += step
        minus[index] -= step
        diff = np.asarray(func(**{**inputs, name: plus})) - np.asarray(func(**{**inputs, name: minus}))
        result[(...,) + index] = diff / (2 * step)
    return result


@pytest.fixture(params=sorted(SAMPLE_DERIVATIVES))
def sample(request):
    name = request.param
    sources, out_shape, jacobians, hessians = SAMPLE_DERIVATIVES[name]
    loaded = load_function(str(SAMPLES / f"{name}.py"))
    inputs = bind_inputs(loaded, [str(SAMPLES / s) for s in sources])
    return loaded, inputs, out_shape, jacobians, hessians


def test_sample_evaluates_to_finite_values_of_documented_shape(sample):
    loaded, inputs, out_shape, _, _ = sample
    assert loaded.name == "f"
    out = np.asarray(loaded.func(**inputs))
    assert out.shape == out_shape
    assert np.all(np.isfinite(out))


def test_sample_closed_form_derivatives_match_central_differences(sample):
    loaded, inputs, _, jacobians, hessians = sample
    for name, jacobian in jacobians.items():
        expected = jacobian(**inputs)
        numeric = central_difference(loaded.func, inputs, name)
        scale = max(1.0, np.abs(expected).max())
        assert_allclose(expected, numeric, rtol=1e-5, atol=1e-6 * scale, err_msg=f"d/d{name}")
    for name, hessian in hessians.items():
        gradient = jacobians[name]
        numeric = central_difference(gradient, inputs, name)
        assert_allclose(hessian(**inputs), numeric, rtol=1e-5, atol=1e-5, err_msg=f"d2/d{name}2")


def test_rosenbrock_closed_form_agrees_with_the_tridiagonal_formula():
    # An independent form (problems.md, P3): H[i,i] = (1200 x_i^2 - 400 x_{i+1} + 2)[i < n-1] + 200[i > 0],
    # H[i,i+1] = H[i+1,i] = -400 x_i; the gradient from d_i = x_{i+1} - x_i^2.
    x = np.load(SAMPLES / "rosenbrock_x.npy")
    n = x.size
    d = x[1:] - x[:-1] ** 2
    g = np.zeros(n)
    g[:-1] += -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    H = np.zeros((n, n))
    H[np.arange(n - 1), np.arange(n - 1)] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    H[np.arange(1, n), np.arange(1, n)] += 200.0
    H[np.arange(n - 1), np.arange(1, n)] = H[np.arange(1, n), np.arange(n - 1)] = -400.0 * x[:-1]
    assert_allclose(rosenbrock_gradient(x), g, rtol=1e-12)
    assert_allclose(rosenbrock_hessian(x), H, rtol=1e-12)


def test_sample_inputs_by_npz_and_by_name_agree():
    loaded = load_function(str(SAMPLES / "kinetics.py"))
    from_npz = bind_inputs(loaded, [str(SAMPLES / "kinetics_inputs.npz")])
    by_name = bind_inputs(loaded, [f"k={SAMPLES / 'kinetics_k.npy'}", f"c={SAMPLES / 'kinetics_c.npy'}"])
    assert list(from_npz) == list(by_name) == ["c", "k"]
    for key in from_npz:
        assert_array_equal(from_npz[key], by_name[key])


def test_sample_data_files_are_small():
    for path in SAMPLES.iterdir():
        if path.suffix != ".py" and path.name != "README.md":
            assert path.stat().st_size < 50_000, path.name

