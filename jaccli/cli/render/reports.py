"""Reports for people on terminals (info, ops, check): facts and tables that never cut a name, shape or number."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

__all__ = ["fits", "natural_width", "print_facts", "print_report_table"]


def natural_width(console: Console, renderable: RenderableType) -> int:
    """The width `renderable` takes when nothing is squeezed."""
    # Measuring against the console's own width would clamp to it and hide the overflow.
    options = console.options.update_width(1_000_000)
    return Measurement.get(console, options, renderable).maximum


def _atoms(text: str) -> list[str]:
    """The words of `text`, a bracketed group such as a shape ``(32, 32)`` counting as one."""
    atoms, current, depth = [], "", 0
    for ch in text:
        depth = depth + 1 if ch in "([{" else max(depth - 1, 0) if ch in ")]}" else depth
        if ch.isspace() and depth == 0:
            if current:
                atoms.append(current)
            current = ""
        else:
            current += ch
    return atoms + ([current] if current else [])


def _wrap(atoms: Sequence[str], width: int) -> list[str]:
    """Atoms joined into lines of at most `width` cells; an atom wider than that gets a line of its own."""
    lines: list[str] = []
    for atom in atoms:
        if lines and cell_len(lines[-1]) + 1 + cell_len(atom) <= width:
            lines[-1] += " " + atom
        else:
            lines.append(atom)
    return lines or [""]


def _fact_lines(items: Sequence[tuple[Text, list[str]]], width: int, indent: int) -> list[Text]:
    """``key  value`` lines, values wrapped between their atoms; under their keys when the atoms do not fit beside."""
    key_width = max((k.cell_len for k, _ in items), default=0)
    beside = width - indent - key_width - 2
    under = width - indent - 2
    widest = max((cell_len(a) for _, atoms in items for a in atoms), default=0)
    stacked = widest > beside and beside < under
    lines = []
    for key, atoms in items:
        head = Text(" " * indent) + key
        if stacked:
            lines.append(head)
            lines += [Text(" " * (indent + 2) + line) for line in _wrap(atoms, under)]
            continue
        wrapped = _wrap(atoms, beside)
        lines.append(head + Text(" " * (key_width - key.cell_len + 2) + wrapped[0]))
        lines += [Text(" " * (indent + key_width + 2) + line) for line in wrapped[1:]]
    return lines


def print_facts(
    console: Console,
    items: Sequence[tuple[str, str]],
    *,
    indent: int = 0,
    colon: bool = False,
    prose: Collection[str] | bool = (),
) -> None:
    """Print ``key value`` facts with bold keys, never cutting a name, number or shape inside a value.

    Values wrap between words; a bracketed group such as ``(2, 2)`` stays on one line, except in
    the values of the keys in `prose` (True: every key), which are free text. Lines are printed
    whole: a word wider than the terminal is wrapped by the terminal, not cut.

    >>> import io
    >>> from jaccli.cli.render.terminal import make_console
    >>> console = make_console(io.StringIO(), width=24)
    >>> print_facts(console, [("inputs", "x (3,) float64, y (2, 2) float32")], colon=True)
    >>> print(console.file.getvalue(), end="")
    inputs:  x (3,) float64,
             y (2, 2)
             float32
    """
    def words(key: str) -> bool:
        return prose if isinstance(prose, bool) else key in prose

    keyed = [(Text(f"{k}:" if colon else k, style="bold"), v.split() if words(k) else _atoms(v)) for k, v in items]
    if keyed:
        console.print(Text("\n").join(_fact_lines(keyed, console.width, indent)), soft_wrap=True)


# A prose column narrower than this (or than its longest word) is listed under the table instead.
_PROSE_MIN = 20


def _report_table(headers: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int],
                  split: Mapping[int, Callable[[str], list[str]]]) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for header, width in zip(headers, widths):
        table.add_column(header, no_wrap=True, width=width)
    for row in rows:
        table.add_row(*("\n".join(_wrap(split[c](cell), widths[c])) if c in split else cell
                        for c, cell in enumerate(row)))
    return table


def _report_widths(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]],
                   split: Mapping[int, Callable[[str], list[str]]], least: Mapping[int, int]) -> list[int] | None:
    """Column widths that show every cell whole (those in `split` wrapped), or None if they do not fit."""
    natural = [max(cell_len(cell) for cell in [header, *(row[c] for row in rows)]) for c, header in enumerate(headers)]
    overhead = natural_width(console, _report_table(headers, [], natural, {})) - sum(natural)
    room = console.width - overhead - sum(n for c, n in enumerate(natural) if c not in split)
    if room >= sum(natural[c] for c in split):
        return natural
    least = {c: min(max([cell_len(a) for row in rows for a in split[c](row[c])] + [cell_len(headers[c]), least[c]]),
                    natural[c])
             for c in split}
    if not split or room < sum(least.values()):
        return None
    spare, want = room - sum(least.values()), {c: natural[c] - least[c] for c in split}
    total = sum(want.values()) or 1
    return [least[c] + min(want[c], spare * want[c] // total) if c in split else n for c, n in enumerate(natural)]


def fits(console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bool:
    """Whether a table of these whole cells fits the console's width."""
    return _report_widths(console, headers, rows, {}, {}) is not None


def print_report_table(
    console: Console,
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    prose: Collection[str] = (),
    wrap: Collection[str] = (),
    caption: str | None = None,
) -> None:
    """A titled table of strings whose cells are never cut: names, shapes and numbers stay whole.

    The columns named in `prose` (free text such as notes) wrap between words, and are listed
    under the table, keyed by the first column, when they would be narrower than a few words;
    those in `wrap` (``8192 B (8.0 KiB)``) wrap between words too, a bracketed group staying
    whole. When the other columns do not fit, each row is printed as ``header value`` lines.
    """
    split: dict[int, Callable[[str], list[str]]] = {}
    least: dict[int, int] = {}
    for c, header in enumerate(headers):
        if header in prose:
            split[c], least[c] = str.split, _PROSE_MIN
        elif header in wrap:
            split[c], least[c] = _atoms, 0
    console.print(Text(title))
    widths = _report_widths(console, headers, rows, split, least)
    if widths is not None:
        console.print(_report_table(headers, rows, widths, split))
    else:
        kept = [c for c in range(len(headers)) if c not in split]
        short = [[row[c] for c in kept] for row in rows]
        widths = _report_widths(console, [headers[c] for c in kept], short, {}, {}) if split and kept else None
        if widths is None:
            for row in rows:
                print_facts(console, list(zip(headers, row)), indent=2, prose=prose)
        else:
            console.print(_report_table([headers[c] for c in kept], short, widths, {}))
            for c in split:
                listed = [(row[kept[0]], row[c]) for row in rows if row[c] not in ("", "-")]
                if listed:
                    console.print(Text(f"{headers[c]}:"))
                    print_facts(console, listed, indent=2, prose=headers[c] in prose)
    if caption:
        console.print(Text("  " + caption))
