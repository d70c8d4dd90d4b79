"""Where the chain rule meets 0 * inf: 0 for a structural zero, NaN for a zero value (the derivative exists only as a limit).

sqrt'(0) = inf times a tangent or cotangent that is 0 there has no value. The zero is structural
when it cannot depend on the input (a `where` branch not taken, an entry no seed reaches, a
constant 0 factor): the product is then 0. When it is a value that happens to be 0 (2x at x = 0,
-sin(0)), the derivative exists only as a limit the rules cannot see: NaN, reported. A sweep that
meets one (rare: the rules look only where a factor is not finite) tells them apart by a probe: the
same sweep over the recording's operations replayed at a nearby point, on the same path (the
recording's constants, masks and branches kept): a structural zero is 0 there too, a zero value
is not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tape import INPUT
from .tracer import peek
from .thread_state import ThreadSlot

# The Probe of the sweep running on this thread (None outside sweeps, and inside a probe's own).
SWEEP = ThreadSlot()
# True while a probe's own sweep runs: a rule whose derivative near its point is concentrated at the
# point itself (abs's slope in a create_graph gradient, rules/elementwise.py) then says it is not 0.
PROBING = ThreadSlot()

_STEP = 1e-3  # relative: any point on the same path will do, the probe only asks what is 0


# id(node) -> (node's index, site and primitive, "tangent" or "cotangent"): where a sweep found 0 * inf
# with a zero value, for the non-finite report (check/diagnostics.py). The latest few only, and no
# reference to the node (whose values a recording lets go of).
MET: dict[int, tuple] = {}
_KEPT = 256


def limit_met(node: Any) -> str | None:
    """"tangent" or "cotangent" if a sweep found a zero of that kind meeting node's infinite
    derivative (a derivative that exists only as a limit), else None."""
    met = MET.get(id(node))
    return met[3] if met is not None and met[:3] == (node.index, node.site, node.prim) else None


class Probe:
    """What a sweep needs to run itself again at a nearby point: set in SWEEP while it runs."""

    __slots__ = ("run", "trace", "kind", "node", "_values")

    def __init__(self, run: Any, trace: Any, kind: str) -> None:
        self.run = run  # (values, node, argnum) -> what the probe sees there (Probe.value_zeros)
        self.trace = trace
        self.kind = kind  # "tangent" or "cotangent"
        self.node = None  # the node whose rules run now (set by the sweep)
        self._values: dict | None = None

    def values(self) -> dict | None:
        """Each node's value at a nearby point, on the recording's path: None if it cannot be replayed."""
        if self._values is None:
            self._values = _replayed(self.trace) or {}
        return self._values or None

    def value_zeros(self, meet: np.ndarray, argnum: int) -> np.ndarray:
        """Which of the entries `meet` (0 times a non-finite factor, in the rule input's shape) are
        zero values: all of them when the probe cannot tell."""
        node, values = self.node, self.values()
        SWEEP.v, PROBING.v = None, True
        try:
            seen = None if values is None else self.run(values, node, argnum)
        except Exception:  # noqa: BLE001 - a probe that fails (a domain error nearby) tells nothing
            seen = None
        finally:
            SWEEP.v, PROBING.v = self, None
        if seen is None:
            zeros = meet
        else:
            seen = np.asarray(seen.todense() if hasattr(seen, "todense") else seen)
            try:
                seen = np.broadcast_to(seen, np.shape(meet))
            except ValueError:
                seen = None
            if seen is None:
                zeros = meet
            else:
                zeros = meet & (seen != 0)  # (NaN there too: not structural)
        if zeros.any() and node is not None:
            if len(MET) >= _KEPT:
                MET.pop(next(iter(MET)))
            MET[id(node)] = (node.index, node.site, node.prim, self.kind)
        return zeros


def _replayed(trace: Any) -> dict | None:
    """node -> its value recomputed from inputs moved by a small random step, with every constant
    argument (the masks of branches taken, indices) as recorded."""
    rng = np.random.default_rng(0x43)
    values: dict = {}
    for node in trace.nodes:
        if node.prim is INPUT:
            v = peek(node.value)
            if type(v) is not np.ndarray and not isinstance(v, (float, np.floating)):
                return None
            v = np.asarray(v, dtype=float)
            with np.errstate(all="ignore"):
                moved = v + _STEP * (1.0 + np.abs(v)) * rng.uniform(0.5, 1.0, np.shape(v)) * \
                    rng.choice((-1.0, 1.0), np.shape(v))
            values[node] = np.where(np.isfinite(v), moved, v)  # (inf stays inf, not inf - inf)
            continue
        args = [peek(a) for a in node.args]  # (a lower level's traced constant: its plain value)
        for argnum, parent, pidx in node.parents:
            pv = values.get(parent)
            if pv is None:
                return None
            args[argnum] = pv if pidx is None else pv[pidx]
        with np.errstate(all="ignore"):
            values[node] = node.prim.impl(*args, **node.kwargs)
    return values
