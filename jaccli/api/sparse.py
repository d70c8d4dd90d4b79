"""Sparse Jacobians and Hessians: detect the pattern, colour it, sweep once per colour, recover CSR.

`sparsity(f, x)` records f, detects which outputs depend on which inputs (jaccli.sparse.detection)
and chooses a colouring plan (jaccli.sparse.plans); `sparse_jacobian` and `sparse_hessian` run one
blocked sweep with a seed per colour and gather the compressed products straight into CSR. Results
are scipy.sparse arrays of the flattened outputs and inputs, nested like `jacobian`'s blocks.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from jaccli.engine import Phase, blocks
from jaccli.errors import UsageError

from .sparse_real import real_lazy
from .lazy import _Block

__all__ = ["Sparsity", "sparsity", "sparse_jacobian", "sparse_hessian", "SparseRun", "sparse_run", "PatternMismatch",
           "SparsityChangedWarning"]

_FORMAT = "jaccli-sparsity-1"


def _scipy() -> Any:
    try:
        import scipy.sparse as sp
    except ImportError:
        raise UsageError("sparse results need scipy: pip install 'jaccli[sparse]'") from None
    return sp


@dataclass
class Sparsity:
    """The sparsity pattern of a Jacobian (or Hessian) at a point, and the plan that computes it.

    Attributes:
        pattern: boolean scipy.sparse CSR array of shape (M, N): all outputs' elements (flattened,
            one after the other) by all differentiated inputs' elements.
        plan: the colouring plan (`plan.mode`, `plan.sweeps`, `plan.tried`).
        out_shapes, in_shapes: shapes of the outputs and of the differentiated inputs.
        hessian: whether this is a Hessian's pattern (symmetric: star colouring and direct recovery,
            or acyclic colouring and recovery by substitution, `recovery`).
        dense_ops: (operation, (file, line)) of the recorded operations whose structure is not
            known, each taken as dense (every output element depending on every input element).
        compared: (operation, (file, line)) where f compared traced values: the pattern holds for
            the control path f took there.
        fingerprint: the recording's structure; a point where f records another structure
            (another control path) gets its pattern detected again.
    """

    pattern: Any
    plan: Any
    out_shapes: tuple
    in_shapes: tuple
    hessian: bool = False
    dense_ops: list = field(default_factory=list)
    compared: list = field(default_factory=list)
    fingerprint: str = ""
    timings: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    @property
    def nnz(self) -> int:
        return int(self.pattern.nnz)

    @property
    def density(self) -> float:
        m, n = self.shape
        return self.nnz / (m * n) if m and n else 0.0

    @property
    def colors(self) -> int:
        """Sweeps of the plan: colours of the columns (forward), rows (reverse), or both."""
        return int(self.plan.sweeps)

    @property
    def mode(self) -> str:
        return self.plan.mode

    @property
    def recovery(self) -> str:
        """How the matrix is read from the compressed sweeps: "direct", or "substitution" (a Hessian on an
        acyclic colouring, fewer sweeps, values to rounding)."""
        return self.plan.recovery

    @property
    def bandwidth(self) -> tuple[int, int]:
        """(lower, upper): the largest i - j and j - i over the entries (i, j)."""
        coo = self.pattern.tocoo()
        if not coo.nnz:
            return 0, 0
        d = coo.row.astype(np.int64) - coo.col.astype(np.int64)
        return int(max(d.max(), 0)), int(max(-d.min(), 0))

    def save(self, path: str | Path) -> None:
        """Write the pattern, the plan's colours and the fingerprint to an .npz file (reuse with
        `Sparsity.load` or `jaccli ... --pattern FILE`)."""
        from jaccli.io.atomic import atomic_write

        p = self.pattern
        plan = self.plan
        fields = {"format": np.array(_FORMAT), "shape": np.array(p.shape), "indptr": p.indptr, "indices": p.indices,
                  "mode": np.array(plan.mode), "recovery": np.array(plan.recovery),
                  "hessian": np.array(self.hessian),
                  "fingerprint": np.array(self.fingerprint),
                  "out_shapes": np.array(repr(self.out_shapes)), "in_shapes": np.array(repr(self.in_shapes))}
        for name in ("column_colors", "row_colors", "reverse_rows", "forward_columns"):
            value = getattr(plan, name)
            if value is not None:
                fields[name] = np.asarray(value)

        def write(handle: Any) -> None:
            np.savez(handle, **fields)
        atomic_write(Path(path), write)

    @classmethod
    def load(cls, path: str | Path) -> "Sparsity":
        """A pattern saved by `save`; UsageError when the file is not one."""
        import ast

        from jaccli.sparse.recovery import Plan
        sp = _scipy()
        not_one = UsageError(f"{path} is not a jaccli sparsity pattern (make one with `jaccli sparsity ... -o FILE.npz`)")
        try:
            loaded = np.load(path, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                raise not_one
            with loaded as z:
                if "format" not in z.files or str(z["format"]) != _FORMAT:
                    raise not_one
                shape = tuple(int(s) for s in z["shape"])
                pattern = sp.csr_array((np.ones(z["indices"].size, bool), z["indices"], z["indptr"]), shape=shape)
                parts = {k: z[k] for k in ("column_colors", "row_colors", "reverse_rows", "forward_columns")
                         if k in z.files}
                if "recovery" in z.files and str(z["recovery"]) == "substitution":
                    from jaccli.sparse.acyclic import substitution
                    parts["substitution"] = substitution(pattern, parts["column_colors"])
                plan = Plan(str(z["mode"]), pattern, **parts)
                return cls(pattern, plan, ast.literal_eval(str(z["out_shapes"])),
                           ast.literal_eval(str(z["in_shapes"])), bool(z["hessian"]),
                           fingerprint=str(z["fingerprint"]))
        except UsageError:
            raise
        except (OSError, ValueError, KeyError) as exc:
            raise UsageError(f"cannot read the pattern {path}: {exc}") from None

    def __repr__(self) -> str:
        m, n = self.shape
        kind = "Hessian" if self.hessian else "Jacobian"
        return (f"Sparsity({kind} {m}x{n}, nnz={self.nnz}, density={self.density:.3g}, "
                f"{self.mode} plan of {self.colors} sweeps)")


class PatternMismatch(UsageError):
    """A given pattern does not fit this point: another shape, kind, or recording."""


class SparsityChangedWarning(UserWarning):
    """f recorded another structure at this point than where its pattern was detected."""


# ---------------------------------------------------------------------------------------------
# Finding the recording, the pattern and the plan
# ---------------------------------------------------------------------------------------------
def _leaves(lazy: Any) -> list[_Block]:
    if isinstance(lazy, _Block):
        return [lazy]
    return [leaf for part in lazy for leaf in _leaves(part)]


def _like(lazy: Any, make: Callable[[int, int], Any]) -> Any:
    """`lazy`'s nesting with each block (i, j) replaced by make(i, j)."""
    if isinstance(lazy, _Block):
        return make(lazy._i, lazy._j)
    return tuple(_like(part, make) for part in lazy)


def _shapes(rec: Any) -> tuple[tuple, tuple]:
    outs = tuple(tuple(rec.out_shape(i)) for i in range(len(rec.outputs)))
    ins = tuple(tuple(rec.in_shape(j)) for j in range(len(rec.wrt)))
    return outs, ins


def _recorded_elements(rec: Any) -> int:
    """The elements of every recorded value: the work of one sweep, for the colouring's effort (sparse.effort)."""
    return sum(np.size(node.value) for node in rec.trace.nodes if not node.prim.multi_out)


def _detected(rec: Any, hessian: bool, mode: str, key: str) -> Sparsity:
    """Detect and colour; `mode`: the Jacobian's mode, or the Hessian's recovery; `key`: rec's fingerprint."""
    from jaccli.sparse import hessian_plan, jacobian_plan
    from jaccli.sparse.detection import detect
    from jaccli.sparse.effort import sweep_seconds
    sp = _scipy()
    start = time.perf_counter()
    found = detect(rec)
    pattern = sp.csr_array(sp.block_array(found.blocks, format="csr"), dtype=bool)
    detected = time.perf_counter()
    if hessian:
        pattern = sp.csr_array(pattern + pattern.T, dtype=bool)
    sweep_s = sweep_seconds(_recorded_elements(rec))
    if hessian:
        plan = hessian_plan(pattern, recovery=mode, sweep_s=sweep_s)
    else:
        plan = jacobian_plan(pattern, mode=mode, sweep_s=sweep_s)
    outs, ins = _shapes(rec)
    timings = {"detection_s": detected - start, "coloring_s": time.perf_counter() - detected}
    return Sparsity(pattern, plan, outs, ins, hessian, found.dense_ops, found.compared, key, timings)


def _sparsity_for(rec: Any, f: Any, given: Sparsity | None, hessian: bool, mode: str,
                  refuse_changed: bool = False) -> Sparsity:
    """`given` when it fits this recording; else the pattern detected here (kept by record_once).
    With `refuse_changed`, a `given` pattern of another recording is a UsageError, not detected again."""
    from jaccli.sparse.detection import fingerprint
    outs, ins = _shapes(rec)
    cache = getattr(f, "sparsity_patterns", None) if given is None else None  # (record_once's)
    if given is not None:
        if given.hessian != hessian:
            raise PatternMismatch(f"the pattern given is a {'Hessian' if given.hessian else 'Jacobian'}'s, "
                             f"not a {'Hessian' if hessian else 'Jacobian'}'s")
        if (given.out_shapes, given.in_shapes) != (outs, ins):
            raise PatternMismatch(f"the pattern given is for outputs {list(given.out_shapes)} and inputs "
                             f"{list(given.in_shapes)}, not {list(outs)} and {list(ins)}")
        if mode not in ("auto", given.recovery if hessian else given.mode):
            given = None  # another side or recovery was asked for: colour again
    key = fingerprint(rec)
    if cache is not None and (key, hessian, mode) in cache:
        return cache[(key, hessian, mode)]
    if given is not None and given.fingerprint == key:
        return given
    if given is not None and refuse_changed:
        raise PatternMismatch("it was detected where f recorded other operations than it does at this point (another "
                         "function, or another branch of an if or loop count): the pattern may not hold here; "
                         "detect it again at this point with `jaccli sparsity`")
    if given is not None:
        warnings.warn("f recorded other operations at this point than where its sparsity pattern was detected "
                      "(another branch of an if, or another loop count): the pattern was detected again",
                      SparsityChangedWarning, stacklevel=3)
    found = _detected(rec, hessian, mode, key)
    if cache is not None:
        if len(cache) >= 8:
            cache.pop(next(iter(cache)))
        cache[(key, hessian, mode)] = found
    return found


# ---------------------------------------------------------------------------------------------
# Compressed sweeps
# ---------------------------------------------------------------------------------------------
def _seeds_of(block: np.ndarray, offsets: np.ndarray, seeded: tuple) -> list:
    """A sweep's seeds: the rows `block` of the seed matrix split by the shapes of the `seeded` side."""
    return [block[:, a:b].reshape((len(block),) + s) for a, b, s in zip(offsets, offsets[1:], seeded)]


def _products(ev: Any, seeds: Any, seeded: tuple, results: tuple, sweep: Callable,
              phase: str = "compressed sweeps (colours)") -> np.ndarray:
    """The K sweeps of the seed matrix's columns (K x sum of `results` sizes), a chunk of seeds per
    sweep: seeds of the `seeded` side (inputs for JVPs, outputs for VJPs) split by their shapes."""
    k = seeds.shape[1]
    dense = seeds.toarray().T  # a seed per colour
    sizes = [math.prod(s) for s in results]
    out = np.empty((k, sum(sizes)), dtype=np.result_type(*ev.rec.outputs, np.float64))
    offsets = np.cumsum([0] + [math.prod(s) for s in seeded])
    start = 0
    remote = ev.remote
    if remote is not None:  # the colour groups' sweeps on Dask's workers, written here in the same order
        per = remote.block_size(ev, ev.chunk(k, 1), k)
        parts = [slice(first, min(first + per, k)) for first in range(0, k, per)]
        swept = remote.run(ev, [(f"rec.{sweep.__name__}", (_seeds_of(dense[part], offsets, seeded),))
                                for part in parts])
    with Phase(phase, k) as progress:
        for step in blocks(k, ev.chunk(k, 1), split=not isinstance(ev.chunk_size, int)) if remote is None else parts:
            if remote is None:
                part = slice(start, start + step)
                start += step
                got = sweep(_seeds_of(dense[part], offsets, seeded))
            else:
                part, got = step, next(swept)
            block = dense[part]
            at = 0
            for res, size in zip(got, sizes):
                out[part, at:at + size] = 0.0 if res is None else np.reshape(res, (len(block), size))
                at += size
            ev.sweeps += 1
            progress.advance(len(block))
    return out


def _compute(ev: Any, sparse: Sparsity) -> Any:
    plan = sparse.plan
    products = []
    outs = sparse.in_shapes if sparse.hessian else sparse.out_shapes  # (a Hessian's outputs: the gradient)
    if plan.mode in ("forward", "symmetric", "bidirectional"):  # J @ S, M x K
        products.append(_products(ev, plan.forward_seeds(), sparse.in_shapes, outs, ev.rec.jvp,
                                  "compressed forward sweeps (colours)").T)
    if plan.mode in ("reverse", "bidirectional"):  # S^T @ J, K x N
        products.append(_products(ev, plan.reverse_seeds(), outs, sparse.in_shapes, ev.rec.vjp,
                                  "compressed reverse sweeps (colours)"))
    return plan.recover(*products)


def _split(matrix: Any, lazy: Any, outs: tuple, ins: tuple) -> Any:
    sp = _scipy()
    rows = np.cumsum([0] + [math.prod(s) for s in outs])
    cols = np.cumsum([0] + [math.prod(s) for s in ins])
    return _like(lazy, lambda i, j: sp.csr_array(matrix[rows[i]:rows[i + 1], cols[j]:cols[j + 1]]))


@dataclass
class SparseRun:
    """A sparse Jacobian or Hessian with how it was made (for reports such as the CLI's --stats).

    Attributes:
        matrix: CSR of all outputs by all differentiated inputs (flattened), or of the selection.
        blocks: `matrix` split into blocks nested like `jacobian`'s (None for a selection).
        sparsity: the pattern and plan of the whole matrix.
        plan: the plan that ran (the selection's own when rows or cols were given).
        sweeps: sweeps run; timings: detection_s, coloring_s (0 for a reused pattern), sweeps_s.
        recording: the recording swept: f's (a Hessian's: its gradient's).
    """

    matrix: Any
    blocks: Any
    sparsity: Sparsity
    plan: Any
    sweeps: int
    timings: dict
    recording: Any = None


def sparse_run(f: Callable, inputs: Any, *, wrt: Any = None, hessian: bool = False, sparsity: Sparsity | None = None,
               mode: str = "auto", rows: Any = None, cols: Any = None, refuse_changed: bool = False,
               recovery: str = "auto") -> SparseRun:
    """The sparse Jacobian (or Hessian) of f at `inputs`, or only its `rows` and `cols` (indices into
    the flattened matrix, or functions of the axis length giving them) computed with the colours of
    the selection alone. `refuse_changed`: a
    `sparsity` detected for another recording is refused (UsageError) instead of detected again."""
    _check_mode(mode, hessian and rows is None and cols is None)
    _check_recovery(recovery)
    _scipy()
    if isinstance(sparsity, (str, Path)):  # (a pattern saved by Sparsity.save, or by jaccli sparsity -o)
        sparsity = Sparsity.load(sparsity)
    elif sparsity is not None and not isinstance(sparsity, Sparsity):
        raise TypeError(f"sparsity should be a Sparsity (jaccli.sparsity(...)) or the path of one saved, not "
                        f"{type(sparsity).__name__}")
    lazy = real_lazy(f, inputs, wrt, hessian)
    ev = _leaves(lazy)[0]._ev
    found = _sparsity_for(ev.rec, f, sparsity, hessian, recovery if hessian else mode, refuse_changed)
    timings = {"detection_s": 0.0, "coloring_s": 0.0, **(found.timings if found is not sparsity else {})}
    start, before = time.perf_counter(), ev.sweeps
    if rows is None and cols is None:
        matrix, plan = _compute(ev, found), found.plan
        outs = found.in_shapes if hessian else found.out_shapes
        blocks = _split(matrix, lazy, outs, found.in_shapes)
    else:
        from .sparse_selection import compute_selected, selected_indices
        m, n = found.shape
        rows, cols = selected_indices(rows, m, "rows"), selected_indices(cols, n, "cols")
        matrix, plan = compute_selected(ev, found, rows, cols, mode, _products)
        blocks = None
    timings["sweeps_s"] = time.perf_counter() - start
    return SparseRun(matrix, blocks, found, plan, ev.sweeps - before, timings, ev.rec)


# ---------------------------------------------------------------------------------------------
# The public functions
# ---------------------------------------------------------------------------------------------
def sparsity(f: Callable, inputs: Any, *, wrt: Any = None, hessian: bool = False, mode: str = "auto",
             recovery: str = "auto") -> Sparsity:
    """The sparsity pattern of f's Jacobian (or Hessian) at `inputs`, and the plan to compute it.

    Args:
        f: a function of NumPy arrays (scalar-valued for ``hessian=True``).
        inputs: an array, or a tuple of arrays passed as positional arguments.
        wrt: which inputs to differentiate (positions or names).
        hessian: the pattern of the Hessian (symmetric) instead of the Jacobian's.
        mode: "auto" (fewest sweeps), "forward", "reverse" or "bidirectional" (Jacobians).
        recovery: for a Hessian, "auto" (the fewest sweeps worth their colouring time),
            "direct" (star colouring: exact values) or "substitution" (acyclic colouring: fewer
            sweeps, values to rounding).

    Returns:
        A `Sparsity`: ``S.pattern`` (boolean CSR, flattened outputs by flattened inputs),
        ``S.colors`` (sweeps), ``S.mode``, ``S.nnz``, ``S.density``, ``S.bandwidth``.

    >>> import numpy as np, jaccli
    >>> S = jaccli.sparsity(lambda x: x[1:] - x[:-1] ** 2, np.ones(5))
    >>> S.shape, S.nnz, S.colors
    ((4, 5), 8, 2)
    """
    _check_mode(mode, hessian)
    _check_recovery(recovery)
    _scipy()
    lazy = real_lazy(f, inputs, wrt, hessian)
    return _sparsity_for(_leaves(lazy)[0]._ev.rec, f, None, hessian, recovery if hessian else mode)


def sparse_jacobian(f: Callable, inputs: Any, *, wrt: Any = None, sparsity: Sparsity | None = None,
                    mode: str = "auto", rows: Any = None, cols: Any = None) -> Any:
    """The Jacobian of f at `inputs` as scipy.sparse CSR arrays, in few compressed sweeps.

    Args:
        f: a function of NumPy arrays returning an array or a tuple of arrays.
        inputs: an array, or a tuple of arrays passed as positional arguments.
        wrt: which inputs to differentiate (positions or names).
        sparsity: a `Sparsity` from an earlier call (`jaccli.sparsity`) to reuse, or the path of one
            saved (`Sparsity.save`, `jaccli sparsity -o`); it is checked against this point's recording
            and detected again if f took another path.
        mode: "auto" (fewest sweeps), "forward", "reverse" or "bidirectional".
        rows, cols: indices into the flattened matrix (all outputs by all differentiated inputs):
            only these rows and columns, computed with the colours of the selection alone. Integers
            (negative from the end), a boolean mask or a slice, as NumPy indexes a 1-D array.

    Returns:
        A CSR array of shape ``(out.size, x.size)``, or nested tuples of them as `jacobian`; with
        `rows` or `cols`, one CSR array of shape ``(len(rows), len(cols))``.

    >>> import numpy as np, jaccli
    >>> J = jaccli.sparse_jacobian(lambda x: x[1:] * x[:-1], np.arange(1.0, 5.0))
    >>> J.shape, J.nnz, J.toarray()[0]
    ((3, 4), 6, array([2., 1., 0., 0.]))
    """
    done = sparse_run(f, inputs, wrt=wrt, sparsity=sparsity, mode=mode, rows=rows, cols=cols)
    return done.matrix if done.blocks is None else done.blocks


def sparse_hessian(f: Callable, inputs: Any, *, wrt: Any = None, sparsity: Sparsity | None = None,
                   rows: Any = None, cols: Any = None, recovery: str = "auto") -> Any:
    """The Hessian of scalar f at `inputs` as an exactly symmetric scipy.sparse CSR array, from one
    Hessian-vector product per colour: a star colouring read back directly, or an acyclic
    colouring with fewer colours recovered by substitution (values to rounding) when it saves
    sweeps worth its colouring time.

    Args:
        f: a function returning one scalar.
        inputs: an array, or a tuple of arrays.
        wrt: which inputs to differentiate.
        sparsity: a `Sparsity` with ``hessian=True`` from an earlier call, or the path of one saved, to reuse.
        rows, cols: indices into the flattened Hessian: only these, as for `sparse_jacobian`.
        recovery: "auto", "direct" (star colouring, exact) or "substitution" (acyclic colouring).

    Returns:
        A CSR array of shape ``(x.size, x.size)``, or blocks ``H[i][j]`` for several inputs; with
        `rows` or `cols`, one CSR array of the selection.

    >>> import numpy as np, jaccli
    >>> H = jaccli.sparse_hessian(lambda x: np.sum(x[1:] * x[:-1]), np.ones(4))
    >>> H.toarray()[1]
    array([1., 0., 1., 0.])
    """
    done = sparse_run(f, inputs, wrt=wrt, hessian=True, sparsity=sparsity, rows=rows, cols=cols, recovery=recovery)
    return done.matrix if done.blocks is None else done.blocks


def _check_recovery(recovery: str) -> None:
    from jaccli.sparse.plans import RECOVERIES
    if recovery not in RECOVERIES:
        raise ValueError(f"recovery should be one of {', '.join(map(repr, RECOVERIES))}, but got {recovery!r}")


def _check_mode(mode: str, hessian: bool) -> None:
    allowed = ("auto",) if hessian else ("auto", "forward", "reverse", "bidirectional")
    if mode not in allowed:
        raise ValueError(f"mode should be one of {', '.join(map(repr, allowed))}, but got {mode!r}")
