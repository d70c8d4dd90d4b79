"""What travels to Dask's workers: f (pickled, or its file and sibling modules), its inputs and options."""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from jaccli.errors import UsageError

# A function file's directory is sent with it (its modules, and its packages' modules) up to this size.
MAX_SENT_BYTES = 16 * 2**20


class CannotSend(UsageError):
    """f cannot be sent to Dask's workers (cloudpickle refused it, or its directory is too large)."""


@dataclass(frozen=True)
class Pickled:
    """f as cloudpickle bytes: the library's way, as Dask sends functions."""

    data: bytes

    def load(self) -> Callable:
        return pickle.loads(self.data)


@dataclass(frozen=True)
class SourceFiles:
    """A function file and its directory's Python modules: the CLI's FUNC, for workers without the files.

    `files` maps paths relative to the directory to their bytes; `main` is the function file's,
    `name` the function's; `keywords` are f's last parameters, passed by keyword (as the CLI does);
    `origin`: the directory on the client's machine. A worker that finds the same files there (the
    workers of --workers, or a cluster on a shared file system) runs f from there, beside the data
    files it reads as in one process; any other unpacks the files sent.
    """

    files: tuple[tuple[str, bytes], ...]
    main: str
    name: str
    keywords: tuple[str, ...] = ()
    origin: str = ""

    def load(self) -> Callable:
        from jaccli.io.user_functions import load_function

        home = Path(self.origin) if _found_at_origin(self) else _unpacked(self)
        loaded = load_function(f"{home}/{self.main}:{self.name}")
        return ByKeyword(loaded.func, self.keywords) if self.keywords else loaded.func


def _found_at_origin(files: SourceFiles) -> bool:
    """Whether this process sees every file of `files` at its origin, with the same bytes: a data file beside f
    (``np.load(Path(__file__).parent / "w.npy")``) was found in one process and not on the workers, so that
    the same command failed or not as the parallel runs' choice of where the sweeps go decided."""
    if not files.origin:
        return False
    try:
        return all((Path(files.origin) / name).read_bytes() == data for name, data in files.files)
    except OSError:
        return False


_unpacked_at: dict[SourceFiles, Path] = {}
_unpacking = threading.Lock()


def _unpacked(files: SourceFiles) -> Path:
    """The directory holding `files` in this process (a worker): written at first use into a temporary
    directory inside the Dask worker's own local directory, which Dask removes when the worker closes or
    is killed (a nanny's stop, Ctrl-C); removed also when the process exits."""
    import atexit
    import shutil
    import tempfile

    with _unpacking:
        where = _unpacked_at.get(files)
        if where is None:
            where = Path(tempfile.mkdtemp(prefix="jaccli-dask-", dir=_worker_directory()))
            atexit.register(shutil.rmtree, where, True)
            for name, data in files.files:
                target = where / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            _unpacked_at[files] = where
        return where


def _worker_directory() -> str | None:
    """The Dask worker's local directory, or None (the system's temporary directory) outside a worker:
    atexit alone left a copy of the user's files in /tmp for every worker a cluster's close killed."""
    try:
        from distributed import get_worker

        return get_worker().local_directory
    except (ImportError, ValueError):
        return None


@dataclass(frozen=True)
class Expression:
    """-e EXPR: the expression's text, compiled again on the worker."""

    text: str

    def load(self) -> Callable:
        from jaccli.expr.expression import compile_expression

        return compile_expression(self.text)


class ByKeyword:
    """f called with its last len(keywords) arguments by keyword (the CLI binds keyword-only inputs so)."""

    def __init__(self, func: Callable, keywords: tuple[str, ...]) -> None:
        self.func, self.keywords = func, keywords
        self.__name__ = getattr(func, "__name__", "f")
        self.__globals__ = getattr(func, "__globals__", None)  # (the engine swaps np in f's module)

    def __call__(self, *args: Any) -> Any:
        n = len(args) - len(self.keywords)
        return self.func(*args[:n], **dict(zip(self.keywords, args[n:])))


@dataclass(frozen=True)
class Payload:
    """f, its inputs and the evaluator's options: enough for a worker to make the same evaluator.

    `kind` is "jacobian" or "hessian"; `fingerprint` names the point and the function, the key of
    the workers' caches (jaccli.parallel.worker).
    """

    function: Any
    args: tuple
    wrt: tuple[int, ...]
    kind: str
    batch: bool
    mode: str
    fingerprint: str = field(default="", compare=False)

    def __dask_tokenize__(self) -> str:
        return self.fingerprint


def make_payload(function: Any, args: tuple, wrt: tuple[int, ...], kind: str, batch: bool, mode: str) -> Payload:
    import hashlib

    digest = hashlib.sha256(pickle.dumps((function, kind, batch, mode, tuple(wrt)), protocol=5))
    for a in args:
        a = np.asarray(a)
        digest.update(repr((a.dtype.str, a.shape)).encode())
        digest.update(np.ascontiguousarray(a).tobytes() if a.dtype != object else pickle.dumps(a))
    return Payload(function, tuple(args), tuple(wrt), kind, batch, mode, digest.hexdigest()[:32])


def pickled(f: Callable) -> Pickled:
    """f through cloudpickle, or CannotSend with one line saying what to do."""
    import cloudpickle

    try:
        return Pickled(cloudpickle.dumps(f))
    except Exception as error:  # what cloudpickle raises depends on the object it met
        name = getattr(f, "__name__", type(f).__name__)
        raise CannotSend(f"{name} cannot be sent to Dask's workers: {type(error).__name__}: {error}; define it at "
                         "the top level of a module and let it open files or load libraries itself, inside the "
                         "function, rather than closing over them") from None


def source_files(path: Path, name: str, keywords: tuple[str, ...] = ()) -> SourceFiles:
    """The function file `path` with the modules of its directory (and of the packages in it)."""
    path = path.resolve()
    root = path.parent
    files, total = [], 0
    for file in sorted(_modules(root)):
        data = file.read_bytes()
        total += len(data)
        if total > MAX_SENT_BYTES:
            raise CannotSend(f"{path.name}'s directory {root} holds more than {MAX_SENT_BYTES // 2**20} MiB of "
                             "Python modules to send to Dask's workers; move the function file into a directory "
                             "of its own, or install its modules on the workers")
        files.append((file.relative_to(root).as_posix(), data))
    return SourceFiles(tuple(files), path.name, name, tuple(keywords), str(root))


def _modules(root: Path) -> list[Path]:
    """The .py files of `root` and of its package directories (those with an __init__.py), recursively."""
    found = [p for p in root.glob("*.py") if p.is_file()]
    for sub in root.iterdir():
        if sub.is_dir() and not sub.name.startswith((".", "__pycache__")) and (sub / "__init__.py").is_file():
            found += _modules(sub)
    return found
