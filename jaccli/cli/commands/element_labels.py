"""Labels of a result's elements and entries, named as the user names the arrays: ``x[0,1]``, ``f[1], x[0]``."""

from __future__ import annotations

import numpy as np

from .compute import Block


def element_labels(name: str, shape: tuple[int, ...], indices: np.ndarray, sample: int | None = None) -> list[str]:
    """``x[0,1]`` for each flat (row-major) index into an array of `shape`; the bare name for 0-D.

    With `sample` (--batch-axis 0: `shape` is one sample's), the index along the batch axis
    comes first, so that the label names the element of the whole array: ``x[2,0,1]``, ``x[2]``.
    """
    lead = [] if sample is None else [str(sample)]
    if not shape:
        return [f"{name}[{lead[0]}]" if lead else name] * len(indices)
    coords = np.unravel_index(indices, shape)
    return [f"{name}[{','.join(lead + [str(i) for i in c])}]" for c in zip(*(a.tolist() for a in coords))]


def entry_label(b: Block, index: tuple[int, ...]) -> str:
    """The entry at `index` of ``b.data``, as the elements it relates: ``f[1], x[0]``.

    Rows are output elements and columns input elements (a Hessian's: elements of two inputs);
    a vector result's entry is one element. With a batch axis both name the sample's element:
    ``f[2,1], x[2,0]``.
    """
    flat = int(np.ravel_multi_index(index, b.data.shape)) if b.data is not None and b.data.ndim else 0
    if b.kind == "vector":
        return element_labels(b.out_name, b.out_shape, np.array([flat]))[0]
    rows, cols = b.row_indices(), b.col_indices()
    per_sample = max(1, len(rows) * len(cols))
    sample, rest = divmod(flat, per_sample)
    r, c = divmod(rest, max(1, len(cols)))
    batch = sample if b.batch is not None else None
    row = element_labels(b.out_name, b.out_shape, rows[r:r + 1], batch)[0]
    col = element_labels(b.in_name, b.in_shape, cols[c:c + 1], batch)[0]
    return f"{row}, {col}"
