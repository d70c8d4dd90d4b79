"""Diagnostics over a recording: structural zeros, kinks, and where the first NaN or inf came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from jaccli.engine import (CONDITION_ARGUMENTS, CONVENTION_WORDS, LIMIT_WORDS, MONITOR, Node, Recording, SparseBlock,
                          Trace, limit_met, peek)


def __getattr__(name: str) -> Any:
    # Kink analysis (and its finite differences) is only needed by checks: import it on demand,
    # so the plain jacobian path of the CLI starts faster.
    if name in ("Kink", "find_kinks"):
        from . import kinks

        return getattr(kinks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def registry_notes(prim_name: str) -> str:
    from .kinks import registry_notes as notes

    return notes(prim_name)

__all__ = ["disconnected_pairs", "disconnected_hint", "structural_zero_message", "structural_zero_warnings", "nonfinite_report",
           "Provenance", "NonfiniteMonitor", "trace_nonfinite", "first_nonfinite_primal",
           "recording_of", "SweepBound"]

FORWARD_EVALUATION = "forward evaluation"
REVERSE_SWEEP = "reverse sweep"
FORWARD_SWEEP = "forward sweep"
_SWEEP_NAMES = {"reverse": REVERSE_SWEEP, "forward": FORWARD_SWEEP}


# ---------------------------------------------------------------------------
# Structural zeros
# ---------------------------------------------------------------------------
def disconnected_pairs(rec: Recording) -> list[tuple[int, int]]:
    """Pairs (output i, differentiated input j) with no path between them in the recording.

    Such a block is zero by structure, not by arithmetic: no value of the inputs can change it.

    >>> import numpy as np
    >>> rec = Recording(lambda x, y: x * 2.0, (np.ones(2), np.ones(2)), (0, 1))
    >>> disconnected_pairs(rec)
    [(0, 1)]
    """
    return [(i, j) for i in range(len(rec.outputs)) for j in range(len(rec.wrt)) if not rec.connected(i, j)]


def disconnected_hint(in_name: str, cut: tuple[str, tuple | None] | None = None) -> str:
    """Why an output may not depend on input `in_name`: the operation that cut it off, when the
    recording knows one (`Recording.cut`), else the usual cause, a global used instead of it.

    >>> disconnected_hint("x", ("astype", ("f.py", 3)))
    'x is used only through astype at f.py:3, whose integer or boolean result carries no derivative'
    """
    if cut is None:
        return "a common cause is a function that uses a global variable instead of its argument"
    name, site = cut
    where = f" at {site[0]}:{site[1]}" if site else ""
    return f"{in_name} is used only through {name}{where}, whose integer or boolean result carries no derivative"


def structural_zero_message(out_name: str, in_name: str, block_name: str | None = None,
                            cut: tuple[str, tuple | None] | None = None) -> str:
    """The warning for a result block that is structurally zero, with `disconnected_hint`.

    >>> structural_zero_message("f", "x").split("; ")[0]
    'df_dx is structurally zero: output f does not depend on input x (no path in the recorded computation)'
    """
    block = block_name or f"d{out_name}_d{in_name}"
    return (f"{block} is structurally zero: output {out_name} does not depend on input {in_name} (no path in the "
            f"recorded computation); {disconnected_hint(in_name, cut)}")


def structural_zero_warnings(rec: Recording, out_names: Sequence[str] | None = None,
                             in_names: Sequence[str] | None = None) -> list[str]:
    """One `structural_zero_message` per disconnected (output, input) pair of `rec`.

    Args:
        rec: the recording.
        out_names: a name per output (default "f", or "f0", "f1", ... for a tuple).
        in_names: a name per differentiated input (default "x0", "x1", ...).
    """
    n_out = len(rec.outputs)
    if out_names is None:
        out_names = ["f"] if n_out == 1 else [f"f{i}" for i in range(n_out)]
    if in_names is None:
        in_names = [f"x{k}" for k in rec.wrt]
    return [structural_zero_message(out_names[i], in_names[j], cut=rec.cut(j)) for i, j in disconnected_pairs(rec)]


# ---------------------------------------------------------------------------
# Non-finite values in results
# ---------------------------------------------------------------------------
def nonfinite_report(result_blocks: Mapping[str, Any], max_indices: int = 5) -> list[dict]:
    """Count the NaN and inf entries of each result block.

    Args:
        result_blocks: block name -> array.
        max_indices: how many indices of non-finite entries to list per block.

    Returns:
        One dict per block holding a non-finite entry (blocks that are all finite are left out):
        ``{"block": name, "shape": [...], "nan": count, "posinf": count, "neginf": count,
        "first": [[index...], ...]}`` with the first `max_indices` indices in the block's shape.

    >>> nonfinite_report({"J": np.array([[1.0, np.nan], [np.inf, 0.0]])})
    [{'block': 'J', 'shape': [2, 2], 'nan': 1, 'posinf': 1, 'neginf': 0, 'first': [[0, 1], [1, 0]]}]
    """
    out = []
    for name, block in result_blocks.items():
        arr = np.asarray(block)
        if arr.dtype.kind not in "fc" or _surely_finite(arr):
            continue
        bad = ~np.isfinite(arr)
        if not bad.any():
            continue
        idx = np.argwhere(bad)[:max_indices]
        out.append({"block": str(name), "shape": list(arr.shape), "nan": int(np.isnan(arr).sum()),
                    "posinf": int(np.isposinf(arr).sum()), "neginf": int(np.isneginf(arr).sum()),
                    "first": [[int(i) for i in row] for row in idx]})
    return out


def _surely_finite(arr: np.ndarray) -> bool:
    """Whether every entry of a float array is finite, by one pass that allocates nothing.

    A NaN or inf makes the sum non-finite; a finite sum proves all entries finite. A sum that
    overflows on finite entries only says "maybe": the caller then looks entry by entry.
    """
    with np.errstate(all="ignore"):
        return bool(np.isfinite(np.sum(arr)))


class SweepBound:
    """An evaluator's watch (``Evaluator.watch``): a bound on every entry its sweeps' results can put
    in the result, so that a finite result need not be scanned entry by entry.

    A sweep's result is dense, structured (a SparseBlock: entries summed into their cells plus a
    low-rank part) or None (zeros). The cells of the caches are those values, sums of a sweep's
    entries, or (Hessians) means of two of them: each is at most twice the largest per-sweep bound,
    so a bound that stays below the dtype's largest finite value proves every entry finite at the
    cost of the structured parts (for the 5-point stencil, 5 entries a row where the dense result
    has n). Any result it cannot bound makes the bound inf: then the caller scans.

    >>> watch = SweepBound()
    >>> watch([np.array([[1.0, -3.0]]), None])
    >>> watch.bound, watch.sweeps
    (3.0, 1)
    """

    def __init__(self) -> None:
        self.bound = 0.0
        self.sweeps = 0

    def __call__(self, results: Sequence[Any]) -> None:
        self.sweeps += 1
        for value in results:
            if self.bound < np.inf:
                self.bound = max(self.bound, _entry_bound(value))

    def proves_finite(self, ev: Any, dtype: Any) -> bool:
        """Whether every entry `ev` (the Evaluator watched) holds is finite in `dtype`: it saw every
        sweep `ev` ran, and twice its bound is below the largest finite value of `dtype`."""
        dtype = np.dtype(dtype)
        return (dtype.kind == "f" and self.sweeps == ev.sweeps
                and 2.0 * self.bound < float(np.finfo(dtype).max))


def _entry_bound(value: Any) -> float:
    """The largest magnitude an entry of `value` scattered into a result can have (inf: unknown)."""
    if value is None:
        return 0.0
    with np.errstate(all="ignore"):
        if type(value) is SparseBlock:
            entries = float(np.sum(np.abs(value.val), dtype=np.float64)) if value.val.size else 0.0
            if value.u is None:
                return entries if np.isfinite(entries) else np.inf
            rank = value.u.shape[-1]
            low = rank * _largest(value.u) * _largest(value.v)
            return entries + low if np.isfinite(entries + low) else np.inf
        if isinstance(value, np.ndarray):
            return _largest(value)
    return np.inf


def _largest(arr: np.ndarray) -> float:
    """max |arr| by two passes that allocate nothing; inf when it holds NaN or inf (or is not real)."""
    if arr.dtype.kind not in "fiub":
        return np.inf
    if arr.size == 0:
        return 0.0
    high, low = float(np.max(arr)), float(np.min(arr))  # (each NaN if arr holds one)
    return max(high, -low) if np.isfinite(high) and np.isfinite(low) else np.inf


# ---------------------------------------------------------------------------
# Provenance of the first NaN or inf
# ---------------------------------------------------------------------------
@dataclass
class Provenance:
    """Where the first non-finite value came from.

    Attributes:
        op: the op that produced it (``np.sqrt``), or ``input k`` when an input already held it.
        sweep: "forward evaluation", "reverse sweep", "forward sweep" or "input".
        file, line: the user's source line that called the op.
        values: "nan", "inf" or "nan and inf".
        element: the first non-finite position in the produced value (without the seed axis).
        inactive_where: the value sits in a branch that np.where did not take (in a sweep, a
            0 * inf from the branch's own derivative; the fix is the "double where").
        notes: the op's documented convention, from the registry.
    """

    op: str
    sweep: str
    file: str | None
    line: int | None
    values: str
    element: list[int] = field(default_factory=list)
    inactive_where: bool = False
    notes: str = ""

    @property
    def message(self) -> str:
        site = f" at {self.file}:{self.line}" if self.file else ""
        if self.sweep == "input":
            return f"{self.op} already holds {self.values}"
        msg = f"{self.op} produced {self.values} in the {self.sweep}{site}"
        if self.element:
            msg += f" (element {tuple(self.element)})"
        if self.inactive_where:
            msg += ("; it comes from the branch np.where did not take: its derivative is multiplied by a zero "
                    "cotangent and 0 * inf = nan. Make the branch safe on its own, e.g. "
                    "np.sqrt(np.where(x > 0, x, 1.0)) inside np.where(x > 0, ..., ...)")
        elif self.notes:
            msg += f" ({self.notes})"
        return msg

    def to_dict(self) -> dict:
        """Keys: op, sweep, file, line, values, element, inactive_where, notes, message."""
        return {"op": self.op, "sweep": self.sweep, "file": self.file, "line": self.line, "values": self.values,
                "element": list(self.element), "inactive_where": self.inactive_where, "notes": self.notes,
                "message": self.message}


def _finite(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (tuple, list)):
        return all(_finite(v) for v in value)
    arr = np.asarray(peek(value))
    return arr.dtype.kind not in "fc" or bool(np.isfinite(arr).all())


def _describe(arr: np.ndarray) -> tuple[str, list[int]]:
    nan, inf = bool(np.isnan(arr).any()), bool(np.isinf(arr).any())
    values = "nan and inf" if nan and inf else ("nan" if nan else "inf")
    first = np.argwhere(~np.isfinite(arr))
    return values, ([int(i) for i in first[0]] if len(first) else [])


def _where_inactive(consumer: Node, argnum: int) -> np.ndarray:
    """Positions (in the where's output shape) where branch `argnum` is not taken (the branch after the
    condition is taken where it holds, the next one where it does not)."""
    position = CONDITION_ARGUMENTS[consumer.prim]
    cond = np.broadcast_to(np.asarray(peek(consumer.args[position]), dtype=bool), np.shape(consumer.value))
    return ~cond if argnum == position + 1 else cond


def _branch_mask(consumer: Node, argnum: int, value: np.ndarray) -> np.ndarray | None:
    """Non-finite positions of a where-branch value that np.where selects (None: cannot align)."""
    shape = np.shape(consumer.value)
    try:
        bad = np.broadcast_to(~np.isfinite(value), shape)
    except ValueError:
        return None
    return bad & ~_where_inactive(consumer, argnum)


def _from_inactive_where(trace: Trace | None, node: Node) -> bool:
    """Whether `node` feeds np.where as a branch that holds non-finite values where it is not taken."""
    if trace is None:
        return False
    value = np.asarray(peek(node.value)) if not isinstance(node.value, tuple) else None
    if value is None or value.dtype.kind not in "fc" or np.isfinite(value).all():
        return False
    for consumer in trace.nodes[node.index + 1:]:
        position = CONDITION_ARGUMENTS.get(consumer.prim)
        if position is None:
            continue
        for argnum, parent, _ in consumer.parents:
            if parent is node and argnum in (position + 1, position + 2):
                try:
                    bad = np.broadcast_to(~np.isfinite(value), np.shape(consumer.value))
                except ValueError:
                    continue
                if (bad & _where_inactive(consumer, argnum)).any():
                    return True
    return False


def first_nonfinite_primal(rec: Recording) -> Provenance | None:
    """The op that first produced a NaN or inf that reaches an output of f (None if outputs are finite).

    Walks back from each non-finite output through parents whose values are non-finite (for
    np.where, only through the positions it selects), and reports the earliest op whose traced
    inputs were all finite.
    """
    stack = [ref[0] for ref, val in zip(rec.out_refs, rec.outputs) if ref is not None and not _finite(val)]
    seen: set[int] = set()
    origins = []
    while stack:
        node = stack.pop()
        if node.index in seen:
            continue
        seen.add(node.index)
        bad_parents = []
        for argnum, parent, pidx in node.parents:
            if parent.finite is not None:  # its memory was written into later: its value is gone
                if parent.finite:
                    continue
                bad_parents.append(parent)
                continue
            pval = peek(parent.value if pidx is None else parent.value[pidx])
            if _finite(pval):
                continue
            if node.prim in CONDITION_ARGUMENTS:
                selected = _branch_mask(node, argnum, np.asarray(pval))
                if selected is not None and not selected.any():
                    continue
            bad_parents.append(parent)
        if bad_parents:
            stack.extend(bad_parents)
        else:
            origins.append(node)
    if not origins:
        return None
    node = min(origins, key=lambda n: n.index)
    value = peek(node.value)
    if node.in_place:
        # An in-place write is an origin only by writing a constant NaN or inf (y[i] = np.nan) into
        # an array that was finite: that array then, whose memory may hold later writes by now.
        value = np.zeros_like(value)
        value[(Ellipsis,) + node.args[2]] = node.args[1]
    parts = value if isinstance(value, tuple) else (value,)
    values, element = _describe(next(np.asarray(peek(v)) for v in parts if not _finite(v)))
    site = node.site or (None, None)
    if node in rec.in_nodes:
        k = rec.wrt[rec.in_nodes.index(node)]
        return Provenance(f"input {k}", "input", None, None, values, element)
    return Provenance(node.prim.name, FORWARD_EVALUATION, site[0], site[1], values, element,
                      notes=registry_notes(node.prim.name))


class NonfiniteMonitor:
    """Context manager: while active, remember the first non-finite value any sweep rule produces.

    >>> with NonfiniteMonitor() as mon:
    ...     _ = np.asarray(__import__("jaccli").jacobian(np.sqrt, np.array([0.0, 1.0]), mode="reverse"))
    >>> mon.provenance().op, mon.provenance().sweep
    ('np.sqrt', 'reverse sweep')
    """

    def __init__(self) -> None:
        self.event: tuple[Node, str, np.ndarray] | None = None
        self._saved: Any = None

    def __call__(self, node: Node, argnum: int, value: Any, kind: str) -> None:
        if self.event is not None:
            return
        parts = value if isinstance(value, (tuple, list)) else (value,)
        for part in parts:
            if part is None:
                continue
            arr = np.asarray(peek(part))
            if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
                self.event = (node, kind, arr)
                return

    def __enter__(self) -> "NonfiniteMonitor":
        self._saved = MONITOR.v
        MONITOR.v = self
        return self

    def __exit__(self, *exc: Any) -> None:
        MONITOR.v = self._saved

    def provenance(self, rec: Recording | Any = None, result: Any = None) -> Provenance | None:
        """Explain the first non-finite value: in f's outputs first, else in the sweeps.

        Args:
            rec: the recording the sweeps ran over (or a lazy Jacobian/Hessian holding it); with
                it, non-finite outputs of f are traced to their op, and sweep values are checked
                against np.where's inactive branches.
            result: what the sweeps computed; when given and all finite, nothing is reported
                (a non-finite value that was masked on the way is harmless).
        """
        rec = recording_of(rec)
        if rec is not None:
            prov = first_nonfinite_primal(rec)
            if prov is not None:
                return prov
        if result is not None and _finite_result(result):
            return None
        if self.event is None:
            return None
        node, kind, arr = self.event
        values, element = _describe(arr)
        element = element[1:]  # drop the seed axis
        site = node.site or (None, None)
        trace = rec.trace if rec is not None else None
        notes = registry_notes(node.prim.name)
        limit = limit_met(node)
        if node.prim in CONVENTION_WORDS and "nan" in values:
            notes = CONVENTION_WORDS[node.prim]
        elif limit is not None and "nan" in values:
            met = LIMIT_WORDS.get(node.prim) or f"{node.prim.name.removeprefix('np.')}' = inf here met a zero {limit}"
            notes = f"{met}: the derivative here exists only as a limit"
        return Provenance(node.prim.name, _SWEEP_NAMES.get(kind, kind), site[0], site[1], values, element,
                          _from_inactive_where(trace, node), notes)


def _finite_result(result: Any) -> bool:
    if isinstance(result, Mapping):
        return all(_finite_result(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return all(_finite_result(v) for v in result)
    return _finite(np.asarray(result))


def recording_of(obj: Any) -> Recording | None:
    """The Recording behind a lazy Jacobian/Hessian (or a tuple of them), or `obj` if it is one."""
    if obj is None or isinstance(obj, Recording):
        return obj
    if isinstance(obj, (tuple, list)):
        for o in obj:
            rec = recording_of(o)
            if rec is not None:
                return rec
        return None
    block = getattr(obj, "_block", obj)  # a MatrixView
    ev = getattr(block, "_ev", None)
    return getattr(ev, "rec", None)


def trace_nonfinite(run: Callable[[], Any], rec: Recording | Any = None) -> Provenance | None:
    """Run `run()` (which runs the sweeps) with a monitor, and explain the first NaN or inf.

    Args:
        run: computes the derivative slice and returns it (arrays, a tuple or dict of them).
            Cached rows and columns run no sweep, so call it before anything else asks for them.
        rec: the recording (or lazy Jacobian/Hessian); with it, non-finite outputs of f are
            traced to the op that produced them during the forward evaluation.

    Returns:
        A Provenance, or None when the result is finite (including when a non-finite value
        in np.where's inactive branch was masked) and f's outputs are finite.

    >>> import jaccli
    >>> J = jaccli.jacobian(lambda x: np.sum(np.sqrt(x ** 2)), np.array([0.0, 1.0]))
    >>> trace_nonfinite(lambda: np.asarray(J), J).sweep
    'reverse sweep'
    """
    with NonfiniteMonitor() as mon:
        result = run()
    return mon.provenance(rec, result)
