"""The AD engine's public face: what the rest of jaccli uses of it, each name loaded on first use.

Inside, one module per job: the traced array (tracer.py) records primitives on the tape (tape.py),
rules by family (rules/) say how to sweep them (sweeps.py, sweep_plans.py), and a Recording
(recording.py) runs f once under all of it. Importing this package costs nothing until a name is
used, so that `jaccli --version` and `--help` do not pay for NumPy and the engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Name -> the module of the engine that defines it.
_EXPORTS = {
    "ELEMENTWISE": "tape", "INPUT": "tape", "LEVELS": "tape", "MAX_CUTS": "tape", "Node": "tape", "Trace": "tape",
    "sever": "tape", "is_complex": "tape",
    "MONITOR": "sweeps", "forward": "sweeps", "reverse": "sweeps",
    "Guard": "guards", "errstate_token": "guards",
    "Tracer": "tracer", "holds_tracer": "tracer", "lift": "tracer", "peek": "tracer",
    "SparseBlock": "seeds", "TRACED_PARTS": "seeds", "dense": "seeds",
    "scatter_cols": "seed_ops", "scatter_rows": "seed_ops",
    "attributed_to": "user_sites", "definition_site": "user_sites", "is_internal": "user_sites",
    "user_site": "user_sites",
    "primal_nested": "numpy_proxies", "offer_block": "block_memory", "KEPT_WHOLE": "block_memory",
    "ROWS_COPIED": "block_memory", "usual_sweep_only": "block_memory", "standing_offer": "block_memory",
    "run_offered": "block_memory",
    "dtype_of": "rules._util", "shape_of": "rules._util", "all_finite": "rules._util", "no_zero": "rules._util",
    "recycle_block": "rules._util", "SYMMETRIC_PART": "rules.linalg_decomp",
    "REGISTRY": "registry", "Entry": "registry", "every_rule": "rules",
    "separable": "sample_independence",
    "CONDITION_ARGUMENTS": "facts", "EXPRESSION_FUNCTIONS": "facts", "KINK_CROSSINGS": "facts", "MATRIX_PRODUCTS": "facts",
    "LIMIT_WORDS": "facts", "CONVENTION_WORDS": "facts",
    "STRUCTURES": "facts", "HEAVIER_IN_REVERSE": "facts", "COPIES_SUM": "facts",
    "WRITES_ARGUMENT": "facts", "FINITE_ON_FINITE": "facts", "MAY_FAIL": "facts",
    "Recording": "recording", "Unique": "recording", "as_float": "recording", "call_traced": "recording",
    "pause_for": "recording", "private_copy": "recording", "private_float": "recording",
    "current_errstate": "guards", "plan_form": "sweep_plans", "renewed_plan": "sweep_plans", "rewritable": "tape",
    "write_in_place": "views", "limit_met": "limits", "take_second_order_forms": "second_order",
    "Phase": "progress", "ProgressObserver": "progress", "blocks": "progress", "counting": "progress",
    "current_observer": "progress", "observing": "progress",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from .block_memory import KEPT_WHOLE, ROWS_COPIED, offer_block, run_offered, standing_offer, usual_sweep_only
    from .facts import (CONDITION_ARGUMENTS, CONVENTION_WORDS, COPIES_SUM, EXPRESSION_FUNCTIONS, FINITE_ON_FINITE,
                        HEAVIER_IN_REVERSE, KINK_CROSSINGS, LIMIT_WORDS, MATRIX_PRODUCTS, MAY_FAIL, STRUCTURES,
                        WRITES_ARGUMENT)
    from .guards import Guard, current_errstate, errstate_token
    from .limits import limit_met
    from .numpy_proxies import primal_nested
    from .progress import Phase, ProgressObserver, blocks, counting, current_observer, observing
    from .recording import Recording, Unique, as_float, call_traced, pause_for, private_copy, private_float
    from .registry import REGISTRY, Entry
    from .rules import every_rule
    from .rules._util import all_finite, dtype_of, no_zero, recycle_block, shape_of
    from .sample_independence import separable
    from .second_order import take_second_order_forms
    from .seed_ops import scatter_cols, scatter_rows
    from .seeds import TRACED_PARTS, SparseBlock, dense
    from .sweeps import MONITOR, forward, reverse
    from .sweep_plans import plan_form, renewed_plan
    from .tape import ELEMENTWISE, INPUT, LEVELS, MAX_CUTS, Node, Trace, is_complex, rewritable, sever
    from .tracer import Tracer, holds_tracer, lift, peek
    from .user_sites import attributed_to, definition_site, is_internal, user_site
    from .views import write_in_place


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
