"""--compare REF: the computed blocks against a stored derivative (a hand-written Jacobian, a golden file).

How a reference is matched to the result:

- an ``.npz`` is compared block by block, by key (``df_dx``, ``d2f_dx_dy``); arrays named
  ``arr_0, arr_1, ...`` (``np.savez`` without names) bind to the first blocks in order, as
  positional arguments do in a Python call, so ``np.savez(file, J0, df_dy=J1)`` mixes both; other
  arrays (``__meta__`` of jaccli's own files, blocks not computed this time) are ignored;
- any other file (``.npy``, ``.csv``, ``.txt``) is the single block's reference;
- a reference has the block's full shape (out.shape + in.shape, or its flattened [M, N] form);
  with ``--rows``/``--cols`` it may also be the [R, C] selection itself. A full reference is
  sliced the same way as the result; a reference of the selection's shape is taken as the
  selection. A reference whose shape is both (a selection that reorders or repeats as many rows
  as the block has, ``--rows 2,1,0`` of 3) is read both ways, and the one that agrees better
  with the result is reported (``read_as``), the full block on a tie. Any other shape is a usage
  error naming both shapes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaccli.io.arrays import load_array, positional_keys
from jaccli.check.verification import default_tolerances
from jaccli.check.compare import compare_arrays
from jaccli.errors import UsageError
from jaccli.plurals import all_of, counted, verb

from .compute import Block, Outcome, Verdict, several_blocks
from .element_labels import entry_label
from .problem import Problem
from .settings import Settings

TOP = 5


def _references(source: str, command: str, blocks: list[Block]) -> list[tuple[Block, np.ndarray]]:
    loaded = load_array(source)
    keys = ", ".join(b.key for b in blocks)
    if not isinstance(loaded, dict):
        if len(blocks) != 1:
            what, wrt = several_blocks(command, blocks)
            raise UsageError(f"--compare {source}: holds one array, but the result has {what}; use an .npz with "
                             f"arrays named after the blocks{wrt}")
        return [(blocks[0], loaded)]
    arrays = loaded  # (load_array leaves out the report stored in jaccli's own files)
    # As for inputs, np.savez(file, J0, df_dy=J1) binds like a Python call: arr_0, arr_1, ... take the
    # first blocks in order, the other keys name theirs (keys that name no block are ignored).
    numbered = positional_keys(arrays, [b.key for b in blocks])
    if len(numbered) > len(blocks):
        raise UsageError(f"--compare {source}: holds {counted(len(numbered), 'unnamed array')} "
                         f"({', '.join(numbered)}), but the result has {counted(len(blocks), 'block')} ({keys}); "
                         "name its arrays after the blocks")
    twice = next(((b.key, key) for b, key in zip(blocks, numbered) if b.key in arrays), None)
    if twice is not None:
        raise UsageError(f"--compare {source}: {twice[1]} is the reference of {twice[0]} by its place, and the "
                         f"archive also has an array named {twice[0]}; save each block either by name or by place")
    by_block = {b.key: arrays[key] for b, key in zip(blocks, numbered)}
    missing = [b.key for b in blocks if b.key not in arrays and b.key not in by_block]
    if missing:
        raise UsageError(f"--compare {source}: no array named {missing[0]!r}; the archive holds "
                         f"{', '.join(arrays) or 'nothing'}; name its arrays after the blocks ({keys})")
    return [(b, by_block[b.key] if b.key in by_block else arrays[b.key]) for b in blocks]


def _fit(b: Block, ref: np.ndarray, source: str) -> list[tuple[str, np.ndarray]]:
    """The readings of the reference for ``b.data``: the same slice taken from the full block
    ("full"), or the reference as it is ("selection"); both when its shape fits both."""
    ref = np.asarray(ref)
    assert b.data is not None
    lead = (b.batch,) if b.batch is not None else ()
    readings = []
    if ref.shape in (b.full_shape, lead + (b.M, b.N)):
        matrix = ref.reshape(lead + (b.M, b.N)) if b.kind != "vector" else ref
        if b.kind == "vector" or not b.selected:
            readings.append(("full", matrix.reshape(b.data.shape)))
        else:
            readings.append(("full", matrix[..., b.row_indices(), :][..., b.col_indices()]))
    if b.selected and ref.shape == b.data.shape and not (
            readings and np.array_equal(readings[0][1], ref, equal_nan=True)):  # (--rows 0:M reads it the same)
        readings.append(("selection", ref))
    if readings:
        return readings
    shapes = f"the full block {b.full_shape}"
    if b.selected:
        shapes += f" or the [R, C] selection {b.data.shape}"
    raise UsageError(f"--compare {source}: {b.key} has shape {b.data.shape} but the reference has shape "
                     f"{ref.shape}; give {shapes}")


def _tolerances(blocks: list[Block], settings: Settings) -> tuple[float, float]:
    # The loosest precision among the blocks sets the defaults, as in `jaccli check`.
    dtype = max((b.dtype for b in blocks), key=lambda d: np.finfo(d).eps if d.kind == "f" else 0.0)
    rtol, atol = default_tolerances(dtype)
    return (rtol if settings.rtol is None else settings.rtol, atol if settings.atol is None else settings.atol)


def _num(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _worst_line(w: dict) -> str:
    errs = "" if w["abs_err"] is None else f" (abs err {w['abs_err']:.3g}" + (
        f", rel err {w['rel_err']:.3g})" if w["rel_err"] is not None else ")")
    at = ", ".join(map(str, w["index"]))
    return f"{w['block']}[{at}] ({w['label']}): computed {_num(w['computed'])} vs reference " \
           f"{_num(w['reference'])}{errs}"


def compare(problem: Problem, outcome: Outcome, settings: Settings) -> Verdict:
    """Compare every block with its reference; the verdict for the report and the exit status."""
    source = settings.compare
    assert source is not None
    pairs = [(b, _fit(b, ref, source)) for b, ref in _references(source, outcome.command, outcome.blocks)]
    rtol, atol = _tolerances([b for b, _ in pairs], settings)
    blocks, worst, both = {}, [], []
    relative = 0  # reference entries a relative error is measured against: finite and nonzero
    for b, readings in pairs:
        # the reading with the fewest mismatches (min keeps the first, the full block, on a tie)
        read_as, rep = min(((name, compare_arrays(b.data, ref, rtol, atol, top=TOP)) for name, ref in readings),
                           key=lambda pair: pair[1].mismatches)
        entry = rep.to_dict()
        entry["read_as"] = read_as
        ref = np.asarray(dict(readings)[read_as])
        relative += int(np.count_nonzero(np.isfinite(ref) & (ref != 0))) if ref.dtype.kind in "fc" else \
            int(np.count_nonzero(ref))
        if len(readings) > 1:
            both.append(f"  ({b.key}: the reference's shape is both the full block's and the selection's; "
                        f"read as the {'full block' if read_as == 'full' else 'selection'}, which agrees better)")
        for w in entry["worst"]:
            w["label"] = entry_label(b, tuple(w["index"]))
            worst.append({"block": b.key, **w})
        blocks[b.key] = entry
    worst.sort(key=lambda w: math.inf if w["abs_err"] is None else w["abs_err"] / max(w["allowed"], 1e-300),
               reverse=True)
    entries = sum(int(np.size(b.data)) for b, _ in pairs)
    mismatches = sum(e["mismatches"] for e in blocks.values())
    passed = mismatches == 0
    data = {"reference": source, "passed": passed, "rtol": rtol, "atol": atol, "entries": entries,
            "mismatches": mismatches,
            "max_abs_err": max((e["max_abs_err"] for e in blocks.values()), default=0.0),
            "max_rel_err": max((e["max_rel_err"] for e in blocks.values()), default=0.0) if relative else None,
            "worst": worst[:TOP], "blocks": blocks}
    # Against a reference of zeros no relative error is defined: "max rel error 0" would read as a perfect match.
    errors = f"max abs error {data['max_abs_err']:.3g}, " + (f"max rel error {data['max_rel_err']:.3g}" if relative
                                                              else "no relative error: the reference is all zeros")
    # The errors are over entries finite in both: a NaN against a number must not read as "error 0".
    nonfinite = sum(e["nonfinite_mismatches"] for e in blocks.values())
    odd = f" ({nonfinite} of them NaN or inf against a different value)" if nonfinite else ""
    if nonfinite:
        errors += f" where both are finite; {nonfinite} NaN or inf against a different value"
    if passed:
        lines = [f"compare with {source}: passed: {all_of(entries, 'entry')} {verb(entries, 'agree', 'agrees')} "
                 f"within rtol={rtol:g}, "
                 f"atol={atol:g} ({errors})"] + both
        return Verdict("compare", True, data, lines)
    failing = [w for w in worst if w["abs_err"] is None or w["abs_err"] > w["allowed"]]
    lines = [f"compare with {source}: FAILED: {mismatches} of {counted(entries, 'entry')} "
             f"{verb(mismatches, 'differ', 'differs')} beyond rtol={rtol:g}, "
             f"atol={atol:g} ({errors}); worst entries:"]
    lines += [f"  {_worst_line(w)}" for w in failing[:TOP]] + both
    failure = (f"--compare: {mismatches} of {counted(entries, 'entry')} {verb(mismatches, 'differ', 'differs')} "
               f"from {source} beyond rtol={rtol:g}, "
               f"atol={atol:g}{odd}; worst {_worst_line(failing[0])}")
    return Verdict("compare", False, data, lines, failure)
