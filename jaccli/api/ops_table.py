"""The table of supported NumPy operations, from the registry, for `jaccli ops`."""

from __future__ import annotations

from jaccli.engine import Entry, every_rule

__all__ = ["ops_table", "format_ops_plain", "OPS_COLUMNS"]

# Column keys of ops_table rows and the headers format_ops_plain gives them.
OPS_COLUMNS = (("name", "name"), ("family", "family"), ("kind", "kind"), ("reverse", "reverse"),
               ("forward", "forward"), ("max_order", "order"), ("block_seeds", "blocks"), ("notes", "notes"))


def _forward(entry: Entry) -> bool:
    # A primitive may have one joint forward rule for all its arguments (concatenate) instead of
    # one per argument; Entry.forward only looks at the latter.
    return entry.forward or all(p.zero_grad or p.jvps or p.jvp_joint is not None for p in entry.prims)


def ops_table() -> list[dict]:
    """Every supported NumPy function, method and operator, sorted by family then name.

    Returns:
        One dict per registry entry with the keys ``name`` (``np.sin``), ``family``, ``kind``
        (primitive, derived, zero: derivative 0, nondiff: no derivative), ``reverse`` and
        ``forward`` (a rule exists for that mode), ``max_order`` ("any": rules are written with
        differentiable operations), ``block_seeds`` (every rule takes a block of K seeds: True)
        and ``notes`` (the convention at non-differentiable points). The scipy.special family is
        listed when SciPy is installed (its rules are otherwise installed when f's module imports it).

    >>> row = next(r for r in ops_table() if r["name"] == "np.sin")
    >>> row["family"], row["reverse"], row["forward"]
    ('elementwise', True, True)
    """
    rows = [{"name": e.name, "family": e.family, "kind": e.kind, "reverse": bool(e.reverse),
             "forward": bool(_forward(e)), "max_order": e.max_order, "block_seeds": True, "notes": e.notes}
            for e in every_rule().values()]
    rows.sort(key=lambda r: (r["family"], r["name"]))
    return rows


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def format_ops_plain(rows: list[dict]) -> str:
    """The table as aligned plain text with a header line, one operation per line (no colour).

    >>> print(format_ops_plain([{"name": "np.sin", "family": "elementwise", "kind": "primitive",
    ...     "reverse": True, "forward": True, "max_order": "any", "block_seeds": True, "notes": ""}]))
    name    family       kind       reverse  forward  order  blocks  notes
    np.sin  elementwise  primitive  yes      yes      any    yes
    """
    table = [[header for _, header in OPS_COLUMNS]]
    table += [[_cell(row.get(key, "")) for key, _ in OPS_COLUMNS] for row in rows]
    widths = [max(len(line[c]) for line in table) for c in range(len(OPS_COLUMNS) - 1)]
    lines = ["  ".join([cell.ljust(w) for cell, w in zip(line, widths)] + [line[-1]]).rstrip() for line in table]
    return "\n".join(lines)
