"""Load input arrays from .npy, .npz, .csv, .txt and .dat files or from inline numbers and lists."""

from __future__ import annotations

import ast
import math
import os
import re
import stat
import tokenize
import warnings
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from jaccli.errors import UsageError
from .devices import file_kind
from .writers import META_KEY

__all__ = ["ARRAY_SUFFIXES", "is_file", "load_array", "positional_keys", "refuse_special", "unreadable"]

ARRAY_SUFFIXES = (".npy", ".npz", ".csv", ".txt", ".dat")
_FILE_LIST = ", ".join(ARRAY_SUFFIXES)


def positional_keys(archive: dict[str, np.ndarray], names: Sequence[str]) -> list[str]:
    """The keys of an archive's unnamed arrays, ``arr_0, arr_1, ...`` as ``np.savez(file, a, b)`` names
    them, in their order; a key that is one of `names` (a parameter called ``arr_0``) is a name.

    >>> positional_keys({"k": None, "arr_1": None, "arr_0": None}, ["c", "k"])
    ['arr_0', 'arr_1']
    """
    return sorted((key for key in archive if re.fullmatch(r"arr_\d+", key) and key not in names),
                  key=lambda key: int(key[4:]))


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
    with ``nan`` and ``inf`` allowed, giving an int64 array when every number is an integer
    (``3``, ``[0, 2]``: a count or indices for f; the derivative of a differentiated input is
    taken in float64 all the same), else a float64 array.

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
        try:
            if not path.exists():
                raise UsageError(f"input file not found: {text}")
            if path.is_dir():
                raise UsageError(f"input {text} is a directory, not a file")
            refuse_special(path, f"input {text}")
            open(path, "rb").close()
        except OSError as exc:
            raise unreadable(text, exc) from exc
        if suffix == ".npy":
            return _load_npy(path, text)
        if suffix == ".npz":
            return _load_npz(path, text)
        return _load_text(path, text, "," if suffix == ".csv" else None)
    try:
        return _parse_literal(text)
    except UsageError:
        if _exists(text):  # a file, or a device or a pipe (/dev/null, /dev/stdin)
            raise UsageError(f"cannot read input file {text}: jaccli reads {_FILE_LIST} files") from None
        if os.sep in text or (os.altsep and os.altsep in text) or suffix[1:].isalpha():
            raise UsageError(f"input file not found: {text}") from None
        raise


def unreadable(shown: str, error: OSError) -> UsageError:
    """The error for a file that exists (or may) but cannot be read: no permission to it or a
    directory on its path, an I/O error."""
    return UsageError(f"cannot read {shown}: {error.strerror or error}; check the permissions of the file "
                      "and of the directories on its path")


def refuse_special(path: Path, described: str) -> None:
    """Refuse `path` (`described` in the message: "input x.npy") unless it is a regular file or a directory
    (told apart by the caller): reading a named pipe would wait for a writer, maybe forever, and a
    device may never end."""
    mode = path.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise UsageError(f"{described} is {file_kind(mode)}, not a regular file; jaccli reads regular files only: "
                         "save it to one first")


def is_file(text: str) -> bool:
    """Whether `text` names an existing file; False for text no file can be called (a long literal)."""
    try:
        return Path(text).is_file()
    except (OSError, ValueError):
        return False


def _exists(text: str) -> bool:
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


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


# What NumPy raises for a file that is not a valid .npy: a header cut off inside its dict fails in
# Python's tokenizer (TokenError) or parser (SyntaxError), not with a ValueError.
_BAD_NPY = (ValueError, EOFError, OSError, SyntaxError, tokenize.TokenError)


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
        except _BAD_NPY as exc:
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
        except _BAD_NPY as exc:
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
                value = _npz_member(archive, key, shown)
                if key == META_KEY and value.dtype.kind == "U":
                    continue  # the report that jaccli stores in its own .npz files, not an array to read
                arrays[key] = _check_dtype(value, f"{shown}: array {key!r}")
    except UsageError:
        raise
    except (*_BAD_NPY, zipfile.BadZipFile) as exc:
        raise UsageError(f"{shown} is not a valid .npz file ({exc})") from exc
    if not arrays:
        raise UsageError(f"{shown} holds no arrays")
    return arrays


def _npz_member(archive: np.lib.npyio.NpzFile, key: str, shown: str) -> np.ndarray:
    """One array of an .npz; a member that is not a valid .npy file is a UsageError naming it."""
    member = key if key.endswith(".npy") or f"{key}.npy" not in archive.zip.namelist() else f"{key}.npy"
    try:
        value = archive[key]
    except _BAD_NPY as exc:
        if "allow_pickle" in str(exc):
            raise UsageError(
                f"{shown}: array {key!r} holds Python objects (a pickled object array); "
                "jaccli loads .npz files with allow_pickle=False for safety: "
                "save numeric arrays instead"
            ) from exc
        raise UsageError(f"{shown}: member {member!r} is not a valid .npy array ({exc}); save the archive again") \
            from exc
    if not isinstance(value, np.ndarray):
        # NumPy returns the raw bytes of a member that does not start like a .npy file.
        raise UsageError(f"{shown}: member {member!r} is not a .npy array; an .npz input holds only .npy arrays "
                         "(as np.savez writes them)")
    return value


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
    skip = 0
    try:
        skip = _header_skip(path, delimiter)
        with warnings.catch_warnings():
            # An empty file only warns in NumPy; it is reported below as an error.
            warnings.simplefilter("ignore", UserWarning)
            array = np.loadtxt(
                path, delimiter=delimiter, dtype=np.float64, skiprows=skip, encoding="utf-8-sig"
            )
    except (ValueError, OSError) as exc:
        if isinstance(exc, ValueError) and not delimiter:
            _refuse_commas(path, shown)
        # NumPy's advice about `usecols` after the ';' refers to its API, not to jaccli.
        detail = str(exc).split("; use `usecols`")[0]
        if isinstance(exc, ValueError) and not isinstance(exc, UnicodeError):
            detail = _on_line(detail, path, delimiter, skip)
        message = f"cannot read {shown}: {detail} (expected numbers separated by {separated})"
        raise UsageError(message) from exc
    if array.size == 0:
        if not delimiter:
            _refuse_commas(path, shown)
        raise UsageError(f"{shown} holds no numbers{_why_empty(path, skip)}; put rows of numbers separated by "
                         f"{separated} in it")
    if np.isinf(array).any():  # (the file is read again only then)
        overflows = sum(_overflows(field) for _, fields in _content_lines(path, delimiter, skip) for field in fields)
        _note(array, "overflows", overflows, (overflows, shown))
    return array


def _overflows(field: str) -> bool:
    """Whether a number in a text file is too large for float64 ("1e400"): inf, but not written as inf."""
    text = field.strip()
    return _is_number(text) and math.isinf(float(text)) and text.lstrip("+-").lower() not in ("inf", "infinity")


def _refuse_commas(path: Path, shown: str) -> None:
    """A whitespace-separated file that failed to load, but holds a line of numbers separated by commas."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        lines = list(enumerate(fh, start=1))
    for number, line in lines:
        values = line.split("#", 1)[0].split(",")
        if len(values) > 1 and all(_is_number(v) for v in values):
            raise UsageError(f"cannot read {shown}: its numbers are separated by commas (line {number}), and a "
                             f"{path.suffix} file holds numbers separated by whitespace; rename it to .csv, or "
                             "separate the numbers with spaces")


def _content_lines(path: Path, delimiter: str | None, skip: int) -> Iterator[tuple[int, list[str]]]:
    """``(line number from 1, fields)`` of the lines NumPy reads as data: after the header, without comments."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            content = line.split("#", 1)[0].rstrip("\r\n")
            if number > skip and content.strip():
                yield number, content.split(delimiter)


def _on_line(detail: str, path: Path, delimiter: str | None, skip: int) -> str:
    """NumPy's message with its "at row N" (data rows, counted from 0 or 1) made the file's line number."""
    convert = re.search(r"could not convert string (.*) to \w+ at row \d+, column (\d+)", detail)
    columns = re.search(r"number of columns changed from (\d+) to \d+ at row \d+", detail)
    found = 0
    if convert:
        try:
            bad = str(ast.literal_eval(convert.group(1))).strip()
        except (ValueError, SyntaxError):
            bad = None
        column = int(convert.group(2))
        found = next((n for n, fields in _content_lines(path, delimiter, skip)
                      if len(fields) >= column and fields[column - 1].strip() == bad), 0)
    elif columns:
        first = int(columns.group(1))
        found = next((n for n, fields in _content_lines(path, delimiter, skip) if len(fields) != first), 0)
    else:
        return detail
    return re.sub(r" at row \d+", f" on line {found}" if found else "", detail).rstrip(".")


def _why_empty(path: Path, skip: int) -> str:
    """Why a text file gave no numbers: it is empty, holds only a header, or only comments."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        lines = fh.read().splitlines()
    if not "".join(lines).strip():
        return ": the file is empty"
    if skip:
        return f", only the header line {lines[skip - 1].strip()!r}"
    return ", only comments and blank lines"


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


# The integer arrays _parse_literal made, by id: a differentiated input typed as "[1, 2]" becomes
# float64 without the warning an integer file gets (commands/problem.py).
_INT_LITERALS: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


def is_int_literal(array: object) -> bool:
    """Whether `array` is an integer array read from a literal on the command line ("3", "[0, 2]")."""
    return _INT_LITERALS.get(id(array)) is array


# The float arrays _parse_literal and _load_text made from numbers out of range, by id, with what was
# lost: "overflows", numbers too large for float64 ("1e400", which Python and NumPy read as inf), with
# where they were written; "wide_ints", integers too large for int64, which made an all-integer
# literal float64. The CLI warns, as for a --dtype float32 overflow.
_NOTED: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()
_NOTES: dict[int, dict[str, object]] = {}


def read_overflows(array: object) -> tuple[int, str]:
    """How many numbers of the literal or text file `array` was read from were too large for float64
    and became inf (``"[1e400, 1]"``: 1), and where they were written (``"its literal"``, or the file
    as given); ``(0, "")`` for any other array, and for ``inf`` written as such."""
    return _noted(array, "overflows", (0, ""))


def literal_wide_ints(array: object) -> int:
    """How many integers of the literal `array` was read from are beyond int64 (``"[99999999999999999999,
    1]"``: 1), which made the literal float64 rather than the int64 of an all-integer literal; else 0."""
    return _noted(array, "wide_ints", 0)


def _noted(array: object, key: str, default: object) -> object:
    return _NOTES[id(array)].get(key, default) if _NOTED.get(id(array)) is array else default


def _note(array: np.ndarray, key: str, count: int, value: object) -> None:
    if not count:
        return
    if _NOTED.get(id(array)) is not array:
        _NOTED[id(array)], _NOTES[id(array)] = array, {}
        weakref.finalize(array, _NOTES.pop, id(array), None)
    _NOTES[id(array)][key] = value


def _flat(value: object) -> Iterator[object]:
    if isinstance(value, list):
        for v in value:
            yield from _flat(v)
    else:
        yield value


# NumPy's limit on an array's dimensions (NPY_MAXDIMS: 64 since NumPy 2, 32 before)
_MAX_DIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def _depth(value: object) -> int:
    """How deep lists nest in `value` (0 for a number), along its first items."""
    depth = 0
    while isinstance(value, list) and value:
        depth, value = depth + 1, value[0]
    return depth + isinstance(value, list)


def _all_ints(value: object) -> bool:
    if isinstance(value, list):  # ([] is float64, as in np.array([]))
        return bool(value) and all(_all_ints(v) for v in value)
    return isinstance(value, int)


def _parse_literal(text: str) -> np.ndarray:
    hint = f"give a number, a list of numbers or a file ({_FILE_LIST})"
    try:
        tree = ast.parse(text, mode="eval")
        value = _literal_value(tree.body)
    except SyntaxError:
        raise UsageError(f"cannot read input {text!r}: not a number or list of numbers; {hint}") from None
    except _NotNumbers as exc:
        raise UsageError(f"cannot read input {text!r}: {exc}; {hint}") from None
    wide = 0
    try:
        if _all_ints(value):  # a count or an index for f, as np.array makes it (differentiated: float64)
            try:
                ints = np.array(value, dtype=np.int64)
            except OverflowError:  # float64 below, with a warning (commands/problem.py)
                wide = sum(not -2 ** 63 <= v < 2 ** 63 for v in _flat(value))
            else:
                _INT_LITERALS[id(ints)] = ints
                return ints
        array = np.array(value, dtype=np.float64)
    except ValueError:
        depth = _depth(value)
        reason = f"it nests lists {depth} deep, and a NumPy array has at most {_MAX_DIMS} dimensions" \
            if depth > _MAX_DIMS else "it is a ragged list (rows of different lengths)"
    except OverflowError:
        reason = "an integer is too large for float64"
    else:
        # Python reads a float literal beyond float64's range as inf; no literal is inf otherwise.
        overflows = sum(isinstance(n, ast.Constant) and n.value in (math.inf, -math.inf) for n in ast.walk(tree))
        _note(array, "overflows", overflows, (overflows, "its literal"))
        _note(array, "wide_ints", wide, wide)
        return array
    raise UsageError(f"cannot read input {text!r}: {reason}")
