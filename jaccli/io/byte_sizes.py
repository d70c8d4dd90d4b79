"""Sizes in bytes as people write them (1073741824, 512MiB, 2G, 1.5GB); no NumPy, for the CLI's start-up."""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


def parse_size(text: str) -> int:
    """The number of bytes `text` names; ValueError (a message to show) when it names none, or 0.

    >>> parse_size("512MiB"), parse_size("2G"), parse_size("1000")
    (536870912, 2000000000, 1000)
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size; write e.g. 1GiB, 512M or 1000000 (bytes)")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{text!r} must be more than 0 bytes")
    return size
