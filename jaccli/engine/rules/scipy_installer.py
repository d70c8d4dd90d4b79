"""Installing the rules for one of SciPy's modules once f's module has imported it (jaccli never imports SciPy)."""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from ..registry import family


class ScipyRules:
    """The rules for SciPy module `module_name`, made by `register(module)` the first time a recording
    starts while that module is imported (`install_for(None)`, in handlers.OPTIONAL_RULES)."""

    def __init__(self, module_name: str, family_name: str, register: Callable[[Any], None]) -> None:
        self.module_name = module_name
        self.family_name = family_name
        self.register = register
        self.installed = False
        self._lock = threading.Lock()

    def install(self) -> bool:
        """Register the rules once (imports the module); False when SciPy is missing."""
        if self.installed:
            return True
        with self._lock:
            if self.installed:
                return True
            try:
                module = __import__(self.module_name, fromlist=["_"])
            except ImportError:
                return False
            previous = family(self.family_name)
            try:
                self.register(module)
            finally:
                family(previous)
            self.installed = True
        return True

    def install_for(self, func: Any) -> bool:
        """With None (before f runs): install the rules when f's module has imported the module. These
        modules have no ufuncs, so no other callable needs them: False."""
        if func is None and not self.installed and self.module_name in sys.modules:
            self.install()
        return False
