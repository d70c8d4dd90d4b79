"""Tests for the table of supported operations."""

from __future__ import annotations

import json

from jaccli.engine.registry import REGISTRY
from jaccli.api.ops_table import OPS_COLUMNS, format_ops_plain, ops_table


def row_named(rows, name):
    return next(r for r in rows if r["name"] == name)


def test_every_registry_entry_appears_once():
    names = [r["name"] for r in ops_table()]
    assert sorted(names) == sorted(REGISTRY) and len(names) == len(set(names))


def test_rows_are_sorted_by_family_then_name():
    rows = ops_table()
    keys = [(r["family"], r["name"]) for r in rows]
    assert keys == sorted(keys)


def test_rows_have_the_documented_keys_and_are_json():
    rows = ops_table()
    assert all(set(r) == {key for key, _ in OPS_COLUMNS} for r in rows)
    assert all(r["block_seeds"] is True for r in rows)
    json.dumps(rows, allow_nan=False)


def test_sin_is_a_primitive_with_both_modes():
    row = row_named(ops_table(), "np.sin")
    assert row == {"name": "np.sin", "family": "elementwise", "kind": "primitive", "reverse": True, "forward": True,
                   "max_order": "any", "block_seeds": True, "notes": ""}


def test_where_notes_say_the_cotangent_is_masked():
    notes = row_named(ops_table(), "np.where")["notes"]
    assert "masked" in notes and "where(c, g, 0)" in notes


def test_joint_forward_rule_counts_as_forward_support():
    # concatenate has one forward rule for all its arguments, not one per argument.
    assert row_named(ops_table(), "np.concatenate")["forward"] is True


def test_kinds_distinguish_zero_and_missing_derivatives():
    rows = ops_table()
    assert row_named(rows, "np.floor")["kind"] == "zero"
    assert row_named(rows, "np.equal")["kind"] == "nondiff"
    assert row_named(rows, "np.abs" if "np.abs" in REGISTRY else "np.absolute")["notes"].startswith("abs'(0) = 0")


def test_plain_format_has_a_header_and_one_aligned_line_per_op():
    rows = ops_table()
    lines = format_ops_plain(rows).splitlines()
    assert lines[0].split() == ["name", "family", "kind", "reverse", "forward", "order", "blocks", "notes"]
    assert len(lines) == len(rows) + 1
    sin = next(line for line in lines if line.startswith("np.sin "))
    assert sin.split() == ["np.sin", "elementwise", "primitive", "yes", "yes", "any", "yes"]
    # Columns line up: every line has "family" values starting at the same position.
    start = lines[0].index("family")
    assert all(line[start - 2:start] == "  " for line in lines)
