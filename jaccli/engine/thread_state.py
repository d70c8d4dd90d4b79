"""Per-thread values and the traced array class, for engine modules that cannot import tracer.py
(which imports them)."""

from __future__ import annotations

import threading
from typing import Any


class ThreadSlot(threading.local):
    """One value per thread, in `.v`: threads record and sweep independently of each other."""

    def __init__(self) -> None:
        self.v: Any = None


TRACER: list = [None]  # the Tracer class, set by tracer.py
