"""A Jacobian swept in blocks of rows (issue 44): a long concatenation's pieces away from a block's seeds
are not visited; the results are the closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import jaccli
from jaccli.api import sweep_seeds
from jaccli.engine.rules import indexing, joining



@pytest.mark.parametrize("chunk", [7, 40])
def test_a_concatenation_swept_in_blocks_visits_only_the_pieces_near_each_block_s_seeds(monkeypatch, chunk):
    pieces, width = 40, 5

    def f(x):
        return np.concatenate([np.sin(x[width * i:width * i + width]) * x[width * i] for i in range(pieces)])

    # structured seeds, kept structured through the join, at these small sizes too
    monkeypatch.setattr(sweep_seeds, "DENSE_SEED_ELEMENTS", 0)
    monkeypatch.setattr(joining, "_DENSE_PER_PIECE", 0)
    sliced = []
    taken = indexing.get_basic.sparse
    monkeypatch.setattr(indexing.get_basic, "sparse", lambda g, idx: sliced.append(idx) or taken(g, idx))
    x = np.linspace(0.5, 1.5, pieces * width)
    J = np.asarray(jaccli.jacobian(f, x, mode="reverse", chunk_size=chunk))
    n = x.size
    i = np.arange(n)
    expected = np.zeros((n, n))
    expected[i, i] = np.cos(x) * x[i // width * width]
    expected[i, i // width * width] += np.sin(x)
    np.testing.assert_allclose(J, expected, rtol=1e-15, atol=1e-15)
    blocks = -(-n // chunk)
    # each block's seeds (rows) fall in at most chunk // width + 2 pieces; before, every piece in every block
    assert len(sliced) <= blocks * (chunk // width + 2) < blocks * pieces
