"""The dispatch tables the registry fills, through which the traced array finds each operation's handler."""

from __future__ import annotations

from typing import Any

# Filled by registry.py: NumPy callable -> handler(*args, **kwargs).
FUNCTION_HANDLERS: dict[Any, Any] = {}
UFUNC_HANDLERS: dict[Any, Any] = {}
# Internal operations the traced array's methods need (getitem, setitem, astype, ...), by name.
INTERNAL: dict[str, Any] = {}
# Installers of the rules for optional packages (scipy.special), called with a callable that has no
# rule (or None, before f runs); each returns whether rules for it are installed now.
OPTIONAL_RULES: list[Any] = []
# Types that stand for a traced array they hold -> the function that gives it (engine/filling.py's Filled:
# an array f made with np.zeros, after f wrote a traced value into it).
HOLDERS: dict[type, Any] = {}
# ndarray subclasses that an operation must not hold as plain constants (both of engine/filling.py's).
NOT_PLAIN: set[type] = set()
# Array types that a NumPy call taking them and a traced value is left to: the sweeps' structured seed
# blocks (engine/seeds.py adds its SparseBlock), whose own methods densify them or keep their structure.
DEFERS_TO: set[type] = set()
# (module, name, the package's function, jaccli's version) for an optional package's Python functions
# that convert their arguments before any dispatch (scipy.special.logsumexp): swapped in while f runs.
FUNCTION_SWAPS: list[tuple[Any, str, Any, Any]] = []
# Functions value -> what stands in for it while f runs, or None: for an optional package's objects that
# are not its module's attributes (a scipy.stats distribution frozen before f runs, `prior = norm(0, 1)`).
STAND_IN_HOOKS: list[Any] = []


def installed_for(func: Any) -> bool:
    """Whether rules for `func` (an optional package's callable) have just been installed."""
    installed = False
    for install in OPTIONAL_RULES:
        installed = install(func) or installed
    return installed
