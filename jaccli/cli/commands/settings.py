"""What the options ask for, as plain data (no NumPy here: the CLI imports this at start-up)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .streams import results_path

DEFAULT_MAX_MEMORY = 2**30


@dataclass
class Settings:
    """What shapes the result and what is checked: the options shared by the commands that differentiate.

    `order` is check's and info's --order; `compare`, `rtol` and `atol` are --compare and its
    tolerances (check's too); `fail_on_nonfinite` is --fail-on-nonfinite.
    """

    rows: str | None = None
    cols: str | None = None
    batch_axis: int | None = None
    mode: str = "auto"
    chunk_size: int | str | None = None
    strict: bool = False
    vectors: tuple[str, ...] = ()
    dtype: str | None = None
    max_memory: int = DEFAULT_MAX_MEMORY
    order: int = 1
    compare: str | None = None
    rtol: float | None = None
    atol: float | None = None
    fail_on_nonfinite: bool = False
    workers: int | None = None  # --workers N: a local Dask cluster (jaccli.parallel)
    scheduler: str | None = None  # --scheduler ADDRESS: a running Dask scheduler


@dataclass
class Output:
    """Where and how results go: the output options."""

    path: Path | None = None
    format: str | None = None
    precision: int | None = None
    heatmap: bool = False
    color: str = "auto"  # --color: auto, always or never
    stats: bool = False
    quiet: bool = False
    plot: Path | None = None  # --plot FILE: a picture of the whole matrix
    file_format: str | None = None  # --output-format: -o's format whatever its name (/dev/stdout, a FIFO)

    def __post_init__(self) -> None:
        # Where -o writes: fixed now, against the directory jaccli was started in, so that a
        # function that changes directory (os.chdir) does not move the file. `path` is as given, for messages.
        # (-o /dev/stdout: the results' descriptor, where the command's own process moved its stdout: streams.py)
        self.target = None if self.path is None else results_path(self.path.absolute())
        self.target_plot = None if self.plot is None else results_path(self.plot.absolute())

    @property
    def suffix(self) -> str:
        """The extension that says -o's format (".npy"...): --output-format's, else the path's own; "" for none."""
        if self.file_format is not None:
            return "." + self.file_format
        return "" if self.path is None else self.path.suffix.lower()
