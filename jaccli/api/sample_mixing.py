"""The numeric probe for a batched function that mixes samples, where per-sample derivatives are undefined."""

from __future__ import annotations

import math

import numpy as np

from jaccli.engine import Recording
from jaccli.errors import BatchMixingError


def check_batch_independence(rec: Recording, B: int) -> None:
    """Raise if some sample's outputs depend on another sample's inputs.

    Uses one forward sweep over the recording with 2*ceil(log2 B) tangents: for each bit of the
    sample index, perturb the samples whose bit is 0 (then 1) and require the other samples'
    outputs to stay exactly unchanged. Any pair of distinct samples differs in some bit, so any
    coupling that is present at this point is caught.
    """
    if B <= 1:
        return
    bits = max(1, math.ceil(math.log2(B)))
    sample = np.arange(B)
    rng = np.random.default_rng(0)
    for j in range(len(rec.wrt)):
        shape = rec.in_shape(j)
        if not shape or shape[0] != B:
            raise BatchMixingError(
                f"batch_axis=0 needs every differentiated input to have the batch size {B} on axis 0, "
                f"but input {j} has shape {shape}")
        on = ((sample[None, :] >> np.arange(bits)[:, None]) & 1).astype(bool)
        masks = np.stack([on, ~on], axis=1).reshape(2 * bits, B)  # bit 0 on, bit 0 off, bit 1 on, ...
        k = len(masks)
        # A random scale per sample times a random direction over the features: any coupling of
        # two samples shows up (a cancellation would need these random numbers to conspire), at
        # the cost of two small random vectors instead of a full random block.
        scale = rng.uniform(0.5, 1.5, size=B) * masks
        direction = rng.uniform(0.5, 1.5, size=shape[1:])
        t = scale.reshape((k, B) + (1,) * (len(shape) - 1)) * direction
        outs = rec.jvp([t if w == j else None for w in range(len(rec.wrt))])
        for i, o in enumerate(outs):
            if o is None:
                continue
            o = np.abs(np.reshape(np.asarray(o), (k, B, -1))).max(axis=2)
            leaked = np.where(masks, 0.0, o)
            hit = np.argwhere((leaked != 0.0) | np.isnan(leaked))
            if hit.size:
                _report_mixing(rec, i, j, int(hit[0, 1]), B)


def _report_mixing(rec: Recording, i: int, j: int, victim: int, B: int) -> None:
    """Name a sample whose input reaches output i of sample `victim` (one reverse sweep)."""
    seed = np.zeros((1,) + rec.out_shape(i))
    seed[0, victim] = 1.0
    ct = rec.vjp([seed if o == i else None for o in range(len(rec.outputs))])[j]
    reach = np.abs(np.reshape(np.asarray(ct), (B, -1))).max(axis=1) if ct is not None else np.zeros(B)
    others = [s for s in np.flatnonzero((reach != 0) | np.isnan(reach)) if s != victim]
    source = int(others[0]) if others else "another"
    raise BatchMixingError(
        f"batch_axis=0: the function mixes samples: output {i} of sample {victim} depends on input {j} of "
        f"sample {source}, so per-sample derivatives are not defined; compute the full Jacobian without "
        "batch_axis (Paddle would silently return summed cross-sample terms here)")
