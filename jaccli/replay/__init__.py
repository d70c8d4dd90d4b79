"""record_once and what makes repeated calls fast: replays of a recording, compiled sweeps, sweep templates.

The library (jaccli.api) uses this package through these names; the engine never imports it:
a `Replayable` is an engine `Recording` that also keeps its guards, and answers its sweeps
through the `Recording.answer` hook.

    record_once, RecordOnce   f recorded once per input signature, replayed afterwards
    Replayable                a recording that replays at new inputs (`replay`), its sweeps
                              answered by compiled sweeps (compiled_sweeps) once they are kept
    sweep_templates           a gradient's traced sweep replayed when f records the same operations
                              (`usable`, `gradient`, `clear`)
    PATHS                     the ways a result is made, as `J.stats["path"]` and --stats say:
                              "recording", "sweep template", "replay", "compiled sweep"
"""

from . import sweep_templates
from .record_once import RecordOnce, record_once
from .replays import COMPILED_SWEEP, REPLAY, Replayable

PATHS = ("recording", sweep_templates.TEMPLATE, REPLAY, COMPILED_SWEEP)

__all__ = ["PATHS", "RecordOnce", "Replayable", "record_once", "sweep_templates"]
