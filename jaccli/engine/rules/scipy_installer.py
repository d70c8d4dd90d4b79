"""Installing the rules for one of SciPy's modules once f's module has imported it (jaccli never imports SciPy)."""

from __future__ import annotations

import importlib
import sys
import threading
from typing import Any

from ..registry import family


class ScipyRules:
    """The rules for SciPy module `module_name` (also their family's name), made by `register_rules(module)` of
    jaccli's rules module `rules_module` (imported then, so that jaccli's start-up does not pay for it) the
    first time a recording starts while that SciPy module is imported (`install_for(None)`, in
    handlers.OPTIONAL_RULES)."""

    def __init__(self, module_name: str, rules_module: str) -> None:
        self.module_name = module_name
        self.rules_module = rules_module
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
                module = importlib.import_module(self.module_name)
            except ImportError:
                return False
            rules = importlib.import_module(f"{__package__}.{self.rules_module}")
            previous = family(self.module_name)
            try:
                rules.register_rules(module)
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
