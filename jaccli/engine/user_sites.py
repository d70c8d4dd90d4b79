"""Which code is the user's: the file and line each recorded operation belongs to."""

from __future__ import annotations

import os
import site
import sys
from typing import Any

from .freezer import FREEZER
from .guards import quiet, unquiet
from .thread_state import ThreadSlot

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_INTERNAL_CODE: dict = {}  # code object -> (its file, _USER, _LIBRARY or _INTERNAL) (see _code_kind)
# id -> code object, for jaccli's and NumPy's code seen so far: user_site steps over these frames with one
# look-up (an id, not the code's equality, which holds between equal code of two files)
_INTERNAL_IDS: dict = {}
# The same for the user's code: user_site stops at its frame with one look-up, where the code's own hash
# (over its bytecode, names and constants) would be computed for _INTERNAL_CODE at every recorded operation;
# id -> (code, {instruction offset: its (file, line)}): a loop's operations share their sites, not found each
# time from the code's line table
_USER_IDS: dict = {}


# While a rule runs, operations it records belong to the user's line of the node being swept.
RULE_SITE = ThreadSlot()


_USER, _LIBRARY, _INTERNAL = 0, 1, 2
# Installed packages and the standard library: code the user calls (scipy.special, ...), not writes.
# (From `site` and `os`, already imported at start-up; sysconfig would add milliseconds to every run.)
_LIBRARY_DIRS = tuple(sorted({os.path.join(os.path.abspath(p), "") for p in (
    *getattr(site, "getsitepackages", lambda: [])(), site.getusersitepackages(), os.path.dirname(os.__file__))
    if p}))


def _code_kind(code: Any) -> int:
    """_INTERNAL for jaccli and NumPy, _LIBRARY for other installed code, _USER for the rest; cached.

    Code objects of two files compare equal when their code is the same (the file is not part of
    that), so an entry holds its file too, and one of another file is not taken from it.
    """
    entry = _INTERNAL_CODE.get(code)
    if entry is not None and entry[0] == code.co_filename:
        return entry[1]
    kind = _file_kind(code.co_filename)
    if entry is None:
        _INTERNAL_CODE[code] = (code.co_filename, kind)
    if kind == _INTERNAL:
        _INTERNAL_IDS[id(code)] = code  # (held: its id stays its own)
    elif kind == _USER:
        _USER_IDS[id(code)] = (code, {})  # (held, as above)
    return kind


def _file_kind(filename: str) -> int:
    if filename.startswith(_PACKAGE_DIR) or _is_numpy_file(filename):
        return _INTERNAL
    if filename.startswith(_LIBRARY_DIRS) or filename.startswith("<frozen"):
        return _LIBRARY
    return _USER


def is_users_file(filename: str) -> bool:
    """Whether a source file is the user's: not jaccli's, NumPy's, the standard library's or an installed package's."""
    return _file_kind(filename) == _USER


def is_internal(code: Any) -> bool:
    """Whether a code object belongs to jaccli or NumPy (not to the user's code); cached."""
    return _code_kind(code) == _INTERNAL


def package_function(skip: int = 1) -> str | None:
    """The installed package's function that the user's code called and that is running now (its
    public module and name: scipy.optimize.rosen), else None. For messages only."""
    frame, outer = sys._getframe(skip), None
    while frame is not None:
        kind = _code_kind(frame.f_code)
        if kind == _USER:
            break
        if kind == _LIBRARY:
            outer = frame
        frame = frame.f_back
    if outer is None or frame is None:
        return None
    module = []
    for part in str(outer.f_globals.get("__name__", "")).split("."):
        if part.startswith("_"):  # scipy.optimize._optimize: the package that exports it
            break
        module.append(part)
    return ".".join(module + [getattr(outer.f_code, "co_qualname", outer.f_code.co_name)])


def user_site(skip: int = 1) -> tuple[str, int] | None:
    """The user's file and line: the innermost frame of the user's own code, else of a library
    (scipy.special called from an installed package), never of jaccli or NumPy."""
    frame = sys._getframe(skip)
    known, internal, users = _INTERNAL_CODE, _INTERNAL_IDS, _USER_IDS
    library = None
    while frame is not None:
        code = frame.f_code
        if id(code) in internal:
            frame = frame.f_back
            continue
        lines = users.get(id(code))
        if lines is not None:
            at = frame.f_lasti
            site = lines[1].get(at)
            if site is None:
                site = lines[1][at] = (code.co_filename, frame.f_lineno)
            return site
        entry = known.get(code)
        kind = entry[1] if entry is not None and entry[0] == code.co_filename else _code_kind(code)
        if kind == _USER:
            return code.co_filename, frame.f_lineno
        if kind == _LIBRARY and library is None:
            library = (code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return library


class attributed_to:  # noqa: N801 - used as a context manager, like contextlib's
    """Operations recorded inside belong to `site` (the user's file and line), not to the caller.

    They are jaccli's own (a sweep's rules), so their plain arguments are not frozen either, and
    they run with NumPy's floating-point warnings off: a rule's inf (sqrt'(0)) or a masked 0 * inf
    is a value for the results and the non-finite report, not a RuntimeWarning from jaccli's
    source, nor an error under ``np.seterr(all="raise")``, which is for f's own arithmetic.
    (A class, as frozen_constants: every sweep enters one.)
    """

    __slots__ = ("site", "outer", "freezer", "quiet")

    def __init__(self, site: tuple[str, int] | None) -> None:
        self.site = site

    def __enter__(self) -> None:
        self.outer, RULE_SITE.v = RULE_SITE.v, self.site
        self.freezer, FREEZER.v = FREEZER.v, None
        self.quiet = quiet()

    def __exit__(self, *exc: Any) -> None:
        RULE_SITE.v = self.outer
        FREEZER.v = self.freezer
        unquiet(self.quiet)


def definition_site(f: Any) -> tuple[str, int] | None:
    """Where the user's function f is defined, if it is plain Python code."""
    code = getattr(f, "__code__", None)
    return None if code is None else (code.co_filename, code.co_firstlineno)


def _is_numpy_file(filename: str) -> bool:
    return f"{os.sep}numpy{os.sep}" in filename or filename.startswith("<__array_function__")
