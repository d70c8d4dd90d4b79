"""Per-thread values: threads record and sweep independently of each other."""

from __future__ import annotations

import threading
from typing import Any


class ThreadSlot(threading.local):
    """One value per thread, in `.v`: threads record and sweep independently of each other."""

    def __init__(self) -> None:
        self.v: Any = None
