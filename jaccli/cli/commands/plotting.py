"""--plot: the blocks of a Jacobian or Hessian (or check's error matrix) drawn as one image of the whole matrix."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from jaccli.errors import UsageError
from jaccli.io.atomic import check_target, writing

from .compute import Block
from .element_labels import element_labels
from .settings import Output


def check_plot(out: Output) -> None:
    """Refuse, before anything runs, a --plot file of an unknown format, one that cannot be written, or
    --plot without matplotlib."""
    if out.plot is None:
        return
    from jaccli.cli.render.plots import plot_format, require_matplotlib

    plot_format(out.plot)
    require_matplotlib()
    try:
        check_target(out.plot)
    except UsageError as error:
        raise UsageError(f"--plot {str(error).removeprefix('cannot write ')}") from None


def _span(name: str, shape: tuple[int, ...], indices: np.ndarray, batch: int | None) -> object:
    from jaccli.cli.render.plots import Span

    per_sample = len(indices)

    def label(k: int) -> str:
        sample, k = divmod(k, per_sample) if batch is not None else (None, k)
        return element_labels(name, shape, indices[k:k + 1], sample)[0]

    return Span(name, per_sample * (batch or 1), label)


def draw(blocks: Sequence[Block], matrices: Sequence[np.ndarray], out: Output, title: str, what: str) -> None:
    """Draw `matrices` (one per block, in the block's data layout) as one matrix: outputs down, inputs across.

    With a batch axis the samples' rows are stacked (sample 0's rows first).
    """
    from jaccli.cli.render.plots import heatmap

    assert out.plot is not None
    out_names = list(dict.fromkeys(b.out_name for b in blocks))
    in_names = list(dict.fromkeys(b.in_name for b in blocks))
    first = {b.out_name: b for b in reversed(blocks)}
    across = {b.in_name: b for b in reversed(blocks)}
    rows = [_span(n, first[n].out_shape, first[n].row_indices(), first[n].batch) for n in out_names]
    cols = [_span(n, across[n].in_shape, across[n].col_indices(), None) for n in in_names]
    shape = (sum(r.size for r in rows), sum(c.size for c in cols))
    if 0 in shape:
        raise UsageError(f"--plot {out.plot}: the matrix is empty ({shape[0]} x {shape[1]}); there is nothing to draw")
    by_pair = {(b.out_name, b.in_name): m for b, m in zip(blocks, matrices)}
    grid = [[np.asarray(by_pair[(o, i)], dtype=np.float64).reshape(r.size, c.size) if (o, i) in by_pair
             else np.zeros((r.size, c.size)) for i, c in zip(in_names, cols)] for o, r in zip(out_names, rows)]
    with writing(out.plot):
        heatmap(grid, rows, cols, out.target_plot, title=title, what=what)
    if not out.quiet:
        sys.stderr.write(f"wrote {out.plot}\n")


def draw_sparse(problem: object, hessian: bool, done: object, blocks: dict | None, out: Output) -> None:
    """A sparse result (the library's SparseRun) drawn from its stored entries: the whole matrix split into
    its outputs and inputs by `blocks` (sparse_results.layout), or a --rows/--cols selection (None) with its
    flat indices."""
    from jaccli.cli.render.plots import Span, sparse_heatmap

    assert out.plot is not None
    matrix = done.matrix
    if 0 in matrix.shape:
        raise UsageError(f"--plot {out.plot}: the matrix is empty ({matrix.shape[0]} x {matrix.shape[1]}); "
                         "there is nothing to draw")
    if blocks is None:  # a selection: rows and columns by their index in the flattened matrix
        rows, cols = [Span("row", matrix.shape[0])], [Span("column", matrix.shape[1])]
    else:
        rows, cols = ([_span(b["name"], tuple(b["shape"]), np.arange(b["stop"] - b["start"]), None)
                       for b in blocks[side]] for side in ("rows", "cols"))
    kind = "Hessian" if hessian else "Jacobian"
    with writing(out.plot):
        sparse_heatmap(matrix, rows, cols, out.target_plot, title=f"sparse {kind} of {problem.what}, "
                       f"nnz {matrix.nnz}", row_title="inputs" if hessian else "outputs")
    if not out.quiet:
        sys.stderr.write(f"wrote {out.plot}\n")
