"""A forward replay that computes the values its steady call's sweeps read, and the rest only when something reads them.

A record_once function's steady call replays f, then runs a compiled sweep, which reads a few of the
replay's values. Ten rows of a stencil's Jacobian read u, for the derivative of u ** 3, and nothing that
only leads to f's output (the Laplacian, u ** 3 and their sum: 1.6 ms of a 4.2 ms call at n = 9*10^4). Ten
rows of a two-layer network read tanh's value, not W2 @ t + b2 (issue 44, items 2 and 4). So the compiled
sweeps run on a recording's replays note the values they read (`Forward.reads`), and its next replays run
the forward `Split` for those: the steps that make them, every guard, and what these read. The rest of
the steps (`Split.rest`) run when something reads a value that is not made yet: another request's usual
sweep, the replay's nodes, its outputs. XLA leaves out of a jitted function what it does not return, in
the same way.

Made whatever reads them:
- guards: a replay must find the branches f took;
- operations that may raise at some values (facts.MAY_FAIL): a singular matrix's inverse raises in f, and
  must in the replay too, which then records f afresh and raises as f does.

Not split:
- a recording that writes in place;
- one run under an error state that raises, calls or logs (a left-out operation's warning is given when
  the rest runs, if it ever does; an error could not be);
- a long one (over codegen.CHUNK steps), whose steps are not kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaccli.engine import MAY_FAIL

from .codegen import CHUNK, STEP, compile_steps

QUIET = frozenset({"ignore", "warn"})  # the error-state settings under which a step's only effect is its value


class Split:
    """A forward replay in two: `values(inputs)`, every node's value in a list that holds None where a
    value is left for later (the nodes not in `made`), or None where a guard fails or an operation raises
    (as Forward.values); `rest(vals)`, the values left for later (`left`, in that order) from such a list."""

    __slots__ = ("run", "extra", "rest", "made", "left")

    def values(self, inputs: list) -> list | None:
        return self.run(inputs, self.extra)


def keeps_steps(steps: list, in_place: frozenset, errstates: dict, base: dict) -> bool:
    """Whether a Forward of these steps keeps them for its Splits (see the module's doc): `in_place`, the
    nodes it writes in place; `errstates`, the recording's error states where not `base`, the replay's."""
    return len(steps) <= CHUNK and not in_place and all(v in QUIET for v in base.values()) \
        and all(all(v in QUIET for v in state.values()) for state in errstates.values())


def split_of(fw: Any) -> Split | None:
    """The Split of the forward replay `fw` (replay_trace.Forward) for the values its programs read so far,
    made once per set of them; None where it would leave nothing out, or `fw` keeps no steps."""
    reads = fw.reads
    got = fw.parts.get(reads)
    if got is None:
        got = fw.parts[reads] = _split(fw, reads) or False
    return got or None


def _split(fw: Any, reads: frozenset) -> Split | None:
    steps, loads, structure = fw.steps, fw.loads, fw.structure
    if steps is None or not reads:
        return None
    live = set(reads)
    kept, left = [], []
    for step in reversed(steps):
        k = step[0]
        if step[6] is STEP and k not in live and structure[k][0] not in MAY_FAIL:
            left.append(step)
            continue
        live.update(slot for _, slot, _ in step[3])
        kept.append(step)
    if not left:
        return None
    kept.reverse()
    left.reverse()
    made = frozenset(loads) | {step[0] for step in kept if step[6] is STEP}
    split = Split()
    split.run = compile_steps(kept, loads, [("slot", k, None) if k in made else None for k in range(len(structure))],
                              "replay")
    split.made, split.extra = made, fw.extra
    split.left = tuple(step[0] for step in left)
    read = {slot for step in left for _, slot, _ in step[3]} - set(split.left)
    split.rest = compile_steps(left, {slot: ("vals", slot) for slot in sorted(read)},
                               [("slot", k, None) for k in split.left], "rest")
    return split


def completed(split: Split, vals: list, errstate: dict) -> None:
    """Fill in `vals` (split.run's) the values it left for later, under the replay's error state `errstate`
    (the state it was recorded and replayed under: a warning is given as f would have given it)."""
    with np.errstate(**errstate):
        got = split.rest(vals)
    if got is None:  # (no guard in it, no operation that may raise: a failure here is jaccli's)
        raise RuntimeError("jaccli: a record_once replay could not compute the rest of f's values; call clear() "
                           "on the record_once function and report this")
    for k, value in zip(split.left, got):
        vals[k] = value
