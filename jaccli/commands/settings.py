"""What the options ask for, as plain data (no NumPy here: the CLI imports this at start-up)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_MEMORY = 2**30


@dataclass
class Settings:
    """What shapes the result: the options shared by jacobian and hessian, and --vector."""

    rows: str | None = None
    cols: str | None = None
    batch_axis: int | None = None
    mode: str = "auto"
    chunk_size: int | str | None = None
    strict: bool = False
    vectors: tuple[str, ...] = ()
    dtype: str | None = None
    max_memory: int = DEFAULT_MAX_MEMORY


@dataclass
class Output:
    """Where and how results go: the output options."""

    path: Path | None = None
    format: str | None = None
    precision: int | None = None
    heatmap: bool = False
    color: bool = True
    stats: bool = False
    quiet: bool = False
