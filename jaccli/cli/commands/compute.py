"""Call the library for each command and collect the result blocks, evaluated in memory or streamed."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

import jaccli
from jaccli.check.diagnostics import disconnected_hint, disconnected_pairs, structural_zero_message
from jaccli.errors import UnsupportedOperationError, UsageError
from jaccli.io.index_specs import parse_index_spec
from jaccli.plurals import counted

from .failures import shown_path
from .problem import Problem, load_vectors
from .settings import Settings

MATRIX_COMMANDS = ("jacobian", "hessian")


@dataclass
class Block:
    """One result block, lazy until evaluated.

    Rows are the elements of `out_name` (shape `out_shape`, per sample), columns those of
    `in_name`; a vector result (grad, jvp, vjp, hvp) has only rows, its own elements.
    """

    key: str
    kind: str
    out_name: str
    out_shape: tuple[int, ...]
    in_name: str = ""
    in_shape: tuple[int, ...] = ()
    batch: int | None = None
    rows: np.ndarray | None = None
    cols: np.ndarray | None = None
    lazy: Any = None
    data: np.ndarray | None = None
    dtype: np.dtype = field(default_factory=lambda: np.dtype(np.float64))
    streamed_rows: int = 0  # rows written to disk by stream_pieces: the lazy block caches (and counts) none
    # A vector's (output, input) in the report: what it is the derivative of (grad, vjp and hvp: f
    # and one input; jvp: one output and the input, None when several inputs are summed over).
    of: tuple[str, str | None] | None = None

    @property
    def M(self) -> int:
        return math.prod(self.out_shape)

    @property
    def N(self) -> int:
        return math.prod(self.in_shape)

    @property
    def selected(self) -> bool:
        return self.rows is not None or self.cols is not None

    @property
    def full_shape(self) -> tuple[int, ...]:
        """The dense block's shape: out.shape + in.shape (Hessian: x.shape + y.shape)."""
        lead = (self.batch,) if self.batch is not None else ()
        return lead + self.out_shape + self.in_shape

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of what is computed and written: the full block, or the 2-D selection."""
        if not self.selected:
            return self.full_shape
        lead = (self.batch,) if self.batch is not None else ()
        rows = self.M if self.rows is None else len(self.rows)
        cols = self.N if self.cols is None else len(self.cols)
        return lead + (rows, cols)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def row_indices(self) -> np.ndarray:
        return np.arange(self.M) if self.rows is None else self.rows

    def col_indices(self) -> np.ndarray:
        return np.arange(self.N) if self.cols is None else self.cols

    @property
    def stats(self) -> dict:
        if self.lazy is None:
            return {}
        stats = self.lazy.stats
        return {**stats, "rows_evaluated": max(stats["rows_evaluated"], self.streamed_rows)}


@dataclass
class Verdict:
    """A check run on the result (check, --compare, --fail-on-nonfinite).

    `data` goes into the JSON report under `key`; `lines` are for people (stderr, or stdout
    through `show` when the verdict is the command's result, as for check); `failure` is the
    one-line error when it did not pass.
    """

    key: str
    passed: bool
    data: Any = None
    lines: list[str] = field(default_factory=list)
    failure: str = ""
    show: Callable[[Any], None] | None = None
    inconclusive: bool = False  # (check) not passed, but nothing failed: exit 5, not 1


@dataclass
class Outcome:
    """Blocks of one command and how they were obtained."""

    command: str
    blocks: list[Block]
    name: str = ""  # the command as typed, when it differs from what is computed (check computes a jacobian)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    sweeps: int = 0
    seeds: int = 0
    mode: str = ""
    path: str = "recording"  # the way the derivatives were made (jaccli.replay.PATHS)
    streamed: bool = False
    pending: Any = None  # -o J.zarr written by Dask's workers: the store, put in place with its metadata
    # Filled by the diagnostics after evaluation: per-block non-finite counts (see nonfinite.py),
    # the op that produced the first NaN or inf, and the checks that ran (check, --compare...).
    nonfinite: list[dict] = field(default_factory=list)
    origin: Any = None
    kinks: list[dict] | None = None  # (kink_notes.kinks_at: ops of f at their kink; None for check)
    verdicts: list[Verdict] = field(default_factory=list)
    parallel: list[str] = field(default_factory=list)  # --workers/--scheduler: where the blocks ran (--stats)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks)


def prepare(problem: Problem, command: str, settings: Settings) -> Outcome:
    """Record the function and set up the blocks; products and gradients are computed here too."""
    start = time.perf_counter()
    if command in MATRIX_COMMANDS:
        blocks = matrix_blocks(problem, command, settings)
    else:
        blocks = _vector_blocks(problem, command, settings)
    outcome = Outcome(command, blocks, warnings=list(problem.warnings))
    outcome.timings["record_s"] = time.perf_counter() - start
    if command in MATRIX_COMMANDS:
        _select(blocks, settings)
        zero = [b for b in blocks if not b.lazy.connected]
        if settings.strict:
            # A verdict, as --compare's: the result and the report are still shown, then exit 1.
            outcome.verdicts.append(_strict(problem, command, blocks, zero))
        if not settings.strict or outcome.verdicts[-1].passed:  # (a failure's error line says it all)
            outcome.warnings += [_zero_message(problem, b) for b in zero]
    else:
        outcome.warnings += _zero_gradient_warnings(problem, command, blocks)
        outcome.sweeps = outcome.seeds = 1
        outcome.mode = {"grad": "reverse", "vjp": "reverse", "jvp": "forward", "hvp": "forward-over-reverse"}[command]
    return outcome


def _zero_gradient_warnings(problem: Problem, command: str, blocks: list[Block]) -> list[str]:
    """grad and vjp: an all-zero block whose input no output depends on is a structural zero."""
    zero = [j for j, b in enumerate(blocks) if command in ("grad", "vjp") and b.data is not None
            and b.data.size and not np.any(b.data)]
    if not zero:
        return []
    # Recorded again only in this rare case; the library's grad and vjp keep their recording.
    from jaccli.engine import Recording

    with np.errstate(all="ignore"):
        rec = Recording(problem.func, problem.args, problem.wrt)
    return [structural_zero_message(problem.name, blocks[j].out_name, blocks[j].key, cut=_shown(rec.cut(j))) for j in zero
            if not any(rec.connected(i, j) for i in range(len(rec.outputs)))]


def _zero_message(problem: Problem, b: Block) -> str:
    if b.kind != "hessian":
        return structural_zero_message(b.out_name, b.in_name, b.key, cut=_shown(b.lazy.cut_by))
    # Not the closure-over-a-global hint: a gradient that ignores an input is common (f linear in it).
    return (f"{b.key} is structurally zero: the gradient {_dependent(problem, b)} does not depend on input "
            f"{b.in_name} (no path in the recorded computation), as when f is linear in {b.in_name} or does not "
            "use it")


def _shown(cut: tuple[str, tuple | None] | None) -> tuple[str, tuple | None] | None:
    """A recording's cut (op, (file, line)) with the file as the user would write it."""
    if cut is None or cut[1] is None:
        return cut
    return cut[0], (shown_path(cut[1][0]), cut[1][1])


def _dependent(problem: Problem, b: Block) -> str:
    """What a block differentiates: the output f, or for a Hessian block the gradient df_dx."""
    return f"d{problem.name}_d{b.out_name}" if b.kind == "hessian" else b.out_name


def _strict(problem: Problem, command: str, blocks: list[Block], zero: list[Block]) -> Verdict:
    """--strict: a verdict that fails, naming the output and the input, when a block is structurally zero.

    Its report entry is ``{"passed", "disconnected": [{"output", "input", "block"}]}``.
    """
    pairs: list[tuple[str, str, str]] = []
    cut = None
    if command == "hessian":
        # An f that ignores an input has a gradient that ignores it too; say so in f's terms.
        from jaccli.engine import Recording

        with np.errstate(all="ignore"):
            rec = Recording(problem.func, problem.args, problem.wrt)
        names = problem.wrt_names
        found = disconnected_pairs(rec)
        pairs += [(problem.name, names[j], f"d{problem.name}_d{names[j]}") for i, j in found]
        if found:
            cut = rec.cut(found[0][1])
    linear = False
    if not pairs:
        pairs = [(_dependent(problem, b), b.in_name, b.key) for b in zero]
        linear = command == "hessian"
        if zero and not linear:
            cut = zero[0].lazy.cut_by
    data = {"passed": not pairs, "disconnected": [{"output": o, "input": i, "block": k} for o, i, k in pairs]}
    if not pairs:
        return Verdict("strict", True, data)
    out, name, key = pairs[0]
    hint = "f is linear in that input, or the inputs enter f separately" if linear \
        else disconnected_hint(name, _shown(cut))
    position = problem.params.index(name)
    more = "; also " + ", ".join(f"{k} ({o} does not depend on {i})" for o, i, k in pairs[1:]) if pairs[1:] else ""
    return Verdict("strict", False, data,
                   failure=f"--strict: output {out} is independent of input {position} ({name!r}): {key} is "
                           f"structurally zero, as no path in the recorded computation leads from {name} to {out}; "
                           f"{hint}{more}")


def _nested(result: Any, rows_are_tuple: bool) -> list[list[Any]]:
    return [list(r) for r in result] if rows_are_tuple else [list(result)]


def matrix_blocks(problem: Problem, command: str, s: Settings) -> list[Block]:
    # --strict is checked on the blocks (prepare), so that the message can name them.
    kw = dict(wrt=problem.wrt, batch_axis=s.batch_axis, mode=s.mode, chunk_size=s.chunk_size)
    names = problem.wrt_names
    in_shapes = [_feature(np.shape(problem.args[k]), s.batch_axis) for k in problem.wrt]
    blocks = []
    if command == "jacobian":
        result = jaccli.jacobian(problem.func, problem.args, **kw)
        _refuse_complex(problem, result)
        grid = _nested(result, isinstance(result[0], tuple))
        for i, row in enumerate(grid):
            out_name = problem.name if len(grid) == 1 and not isinstance(result[0], tuple) else f"{problem.name}{i}"
            for j, J in enumerate(row):
                lead = 1 if s.batch_axis is not None else 0
                out_shape = tuple(J.shape[lead:J.ndim - len(in_shapes[j])])
                blocks.append(Block(f"d{out_name}_d{names[j]}", "jacobian", out_name, out_shape, names[j],
                                    in_shapes[j], _batch(J, s), lazy=J, dtype=J.dtype))
    else:
        grid = _nested(jaccli.hessian(problem.func, problem.args, **kw), True)
        for i, row in enumerate(grid):
            for j, H in enumerate(row):
                blocks.append(Block(f"d2{problem.name}_d{names[i]}_d{names[j]}", "hessian", names[i], in_shapes[i],
                                    names[j], in_shapes[j], _batch(H, s), lazy=H, dtype=H.dtype))
    return blocks


def several_blocks(command: str, blocks: list[Block]) -> tuple[str, str]:
    """What `blocks` are, for a target that holds one: ``"2 blocks (df_dx, df_dy), one per input"``,
    and ``", or pick one input with --wrt"`` when that gives one block, else "".

    A tuple's outputs cannot be selected by an option: only a file that holds several blocks helps.
    """
    outputs = {b.out_name for b in blocks} if command in ("jacobian", "jvp") else set()
    inputs = {b.in_name for b in blocks} if command == "jacobian" else \
        set() if command == "jvp" else {b.out_name for b in blocks}
    per = "output of the tuple f returns" if len(outputs) > 1 else "pair of inputs" if command == "hessian" \
        else "input"
    if len(outputs) > 1 and len(inputs) > 1:
        per += " and input"
    what = f"{len(blocks)} blocks ({', '.join(b.key for b in blocks)}), one per {per}"
    return what, ("" if len(outputs) > 1 else ", or pick one input with --wrt")


def _feature(shape: tuple, batch_axis: int | None) -> tuple:
    return tuple(shape[1:]) if batch_axis is not None else tuple(shape)


def _batch(lazy: Any, s: Settings) -> int | None:
    return lazy.shape[0] if s.batch_axis is not None else None


def _select(blocks: list[Block], s: Settings) -> None:
    for b in blocks:
        try:
            b.rows = None if s.rows is None else parse_index_spec(s.rows, b.M, "rows")
            b.cols = None if s.cols is None else parse_index_spec(s.cols, b.N, "cols")
        except UsageError as error:
            raise UsageError(f"{error} (block {b.key})" if len(blocks) > 1 else str(error)) from None


def _vector(key: str, name: str, value: Any, of: tuple[str, str | None]) -> Block:
    array = np.asarray(value)
    return Block(key, "vector", name, array.shape, data=array, dtype=array.dtype, of=of)


def _vector_blocks(problem: Problem, command: str, s: Settings) -> list[Block]:
    names, fname = problem.wrt_names, problem.name
    if command == "grad":
        return [_vector(f"d{fname}_d{n}", n, g, (fname, n))
                for n, g in zip(names, jaccli.grad(problem.func, problem.args, wrt=problem.wrt))]
    # vjp takes one vector per output (f, or f0, f1... for a tuple); jvp and hvp one per input.
    vectors = load_vectors(s.vectors, [fname] if command == "vjp" else names, s.dtype,
                           numbered=fname if command == "vjp" else None)
    v: Any = vectors[0] if len(vectors) == 1 else tuple(vectors)
    fn = {"vjp": jaccli.vjp, "jvp": jaccli.jvp, "hvp": jaccli.hvp}[command]
    value, result = _product(fn, problem, v, per_output=command == "vjp")
    _refuse_complex(problem, value)
    if command != "jvp":
        return [_vector(f"{command}_{n}", n, x, (fname, n)) for n, x in zip(names, result)]
    wrt = names[0] if len(names) == 1 else None
    if isinstance(value, tuple):
        return [_vector(f"jvp_{fname}{i}", f"{fname}{i}", x, (f"{fname}{i}", wrt)) for i, x in enumerate(result)]
    return [_vector(f"jvp_{fname}", fname, result, (fname, wrt))]


def _refuse_complex(problem: Problem, result: Any) -> None:
    """The command line reads and writes real arrays: a complex result (jaccli.jacobian's for a
    complex-valued f, jvp's tangent) is refused, not written as its real part."""
    for leaf in (result if isinstance(result, tuple) else (result,)):
        if isinstance(leaf, tuple):
            _refuse_complex(problem, leaf)
        elif getattr(leaf, "dtype", None) is not None and np.dtype(leaf.dtype).kind == "c":
            raise UnsupportedOperationError(
                f"{problem.name} returns complex values; the command line writes real derivatives: return "
                "np.real, np.imag or np.abs of them, or call jaccli.jacobian in Python (docs/complex.md)")


def _product(fn: Callable, problem: Problem, v: Any, per_output: bool) -> tuple:
    given = len(v) if isinstance(v, tuple) else 1
    try:
        value, result = fn(problem.func, problem.args, v, wrt=problem.wrt)
    except ValueError as error:
        text = str(error)
        # The library reads vectors given for one output as one stacked vector, and counts a tuple's outputs.
        if per_output and given > 1 and text.startswith("v has invalid size"):
            shape = re.search(r"should be (\(.*?\))", text)
            raise _one_output(problem, given, shape.group(1) if shape else "") from None
        counts = re.match(r"v is a tuple of invalid length: should be (\d+) but got (\d+)", text)
        if per_output and counts:
            outputs = int(counts.group(1))
            names = ", ".join(f"{problem.name}{i}" for i in range(outputs))
            raise UsageError(f"--vector: {counted(given, 'vector')} given for the {counted(outputs, 'output')} "
                             f"of {problem.name} ({names}); give one per output, positionally or as "
                             f"{problem.name}0=SOURCE") from None
        # The library names the vector `v`; on the command line it is --vector.
        entry = re.match(r"Entry (\d+) in v ", text)
        if entry:  # the library counts the vectors; the command line names them
            k = int(entry.group(1))
            label = f"{problem.name}{k}" if per_output else problem.params[problem.wrt[k]]
            text = f"the vector for {label} {text[entry.end():]}"
        if text.startswith(("v ", "the vector for ", "The vector v")):
            raise UsageError(f"--vector: {text}") from None
        raise
    if per_output and given > 1 and not isinstance(value, tuple):
        # Vectors that together fit the output's size would pass as one: refused all the same.
        raise _one_output(problem, given, str(np.shape(value)))
    return value, result


def _one_output(problem: Problem, given: int, shape: str) -> UsageError:
    shaped = f" of its shape {shape}" if shape else ""
    return UsageError(f"--vector: {given} vectors given for 1 output: {problem.name} returns one array, not a tuple, "
                      f"so vjp takes one vector{shaped}; give --vector once")


# ---------------------------------------------------------------- evaluation


def evaluate(outcome: Outcome) -> None:
    """Compute every block's data in memory, only the selected rows and columns."""
    start = time.perf_counter()
    for b in outcome.blocks:
        if b.data is not None:
            continue
        # The cache itself, read-only (as the library's np.asarray(J)): a copy of a large block costs
        # as much as its sweeps.
        b.data = np.asarray(b.lazy) if not b.selected else _selection(b)
    outcome.timings["evaluate_s"] = time.perf_counter() - start
    _finish_stats(outcome)


def _selection(b: Block) -> np.ndarray:
    """The selected rows x columns of `b`, computing only those. Ranges (--rows 0:2000) are taken
    by slices, as J[a:b] takes them: a copy of the cache's slice, where picking rows x columns by
    index arrays costs about twice that."""
    rows, cols = _as_slice(b.rows), _as_slice(b.cols)
    if rows is None or cols is None:
        return b.lazy.matrix.evaluate(b.rows, b.cols)
    lead = (slice(None),) if b.batch is not None else ()
    return np.asarray(b.lazy.matrix[lead + (rows, cols)])


def _as_slice(idx: np.ndarray | None) -> slice | None:
    """`idx` as a slice when it is a run of consecutive positions (None: all of them), else None."""
    if idx is None:
        return slice(None)
    if idx.size and int(idx[-1]) - int(idx[0]) == idx.size - 1 and bool((np.diff(idx) == 1).all()):
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return None


def stream_pieces(block: Block, budget: int) -> tuple[tuple[int, ...], int, Iterator[tuple[int, np.ndarray]]]:
    """The file shape, its row axis and ``(first_row, rows)`` pieces of `block`, for writing it row by row.

    A full block is written as out.shape + in.shape: pieces are whole slices along the
    output's first axis. A selection is written as its [R, C] matrix. With --batch-axis the
    file has the samples first, and a piece holds its rows of every sample (row axis 1).
    """
    lead = 0 if block.batch is None else 1
    if (block.M if block.rows is None else len(block.rows)) == 1:  # (the whole block, or the rows selected)
        each = " per sample" if lead else ""
        what = "has a single row" if block.rows is None else "has a single row selected"
        raise UsageError(f"{block.key} {what}{each} and cannot be streamed; select fewer columns with --cols")
    unit = 1 if block.selected else math.prod(block.out_shape[1:])
    row_bytes = max(1, block.N if block.cols is None else len(block.cols)) * block.dtype.itemsize
    row_bytes *= block.batch or 1
    per_piece = max(unit, (budget // 4 // row_bytes) // unit * unit)
    view = block.lazy.matrix

    def pieces() -> Iterator[tuple[int, np.ndarray]]:
        for start, piece in view.stream(block.rows, block.cols, chunk_size=per_piece):
            block.streamed_rows += piece.shape[lead]
            if block.selected:
                yield start, piece
            else:
                batch = piece.shape[:lead]
                yield start // unit, piece.reshape(batch + (-1,) + block.out_shape[1:] + block.in_shape)

    return block.shape, lead, pieces()


SWEEP_KINDS = ("reverse", "forward", "diagonal")  # a Jacobian's report names the kinds it ran in this order


def _finish_stats(outcome: Outcome) -> None:
    lazies = [b.lazy for b in outcome.blocks if b.lazy is not None]
    if not lazies:
        return
    evaluators = {id(J._ev): J._ev for J in lazies}.values()
    outcome.sweeps = sum(ev.sweeps for ev in evaluators)
    outcome.seeds = sum(ev.seeds_used for ev in evaluators)
    outcome.path = ", ".join(dict.fromkeys(ev.rec.path for ev in evaluators))
    if outcome.command == "hessian":
        outcome.mode = "reverse-over-reverse" if any(ev.mode == "reverse" for ev in evaluators) \
            else "forward-over-reverse"
        return
    kinds = set().union(*(ev.kinds for ev in evaluators))
    outcome.mode = "+".join(k for k in SWEEP_KINDS if k in kinds) or "cached"


def finish_stream(outcome: Outcome, seconds: float) -> None:
    outcome.timings["evaluate_s"] = seconds
    outcome.streamed = True
    _finish_stats(outcome)
