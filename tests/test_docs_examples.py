"""Every example shown with its output in README.md and docs/*.md runs and prints what it shows.

An example is a line `$ jaccli ...` in a ```console block; the lines after it, up to the next `$ `
line or the block's end, are what it prints: its stdout, then its stderr. A line `...` stands for
any number of lines, and a time in milliseconds (`--stats`' `12.3 ms`) for any time. The installed
`jaccli` runs from the repository's root with COLUMNS=100 and no colour; an `-o FILE` goes into a
temporary directory, whose path is taken out of the output again.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from .test_cli_subprocess import JACCLI, clean_env

pytestmark = pytest.mark.xdist_group("test_docs_examples")  # (pytest -n: one worker, module fixtures made once)

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ANY_LINES = "..."
TIME = re.compile(r"\b\d+(\.\d+)? ms\b")


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    command: str
    shown: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def examples_in(text: str, page: str) -> list[Example]:
    """The `$ jaccli` examples of one Markdown page's ```console blocks."""
    found: list[Example] = []
    in_console, command, start, shown = False, None, 0, []

    def close() -> None:
        if command is not None:
            found.append(Example(page, start, command, tuple(shown)))

    for number, line in enumerate(text.splitlines(), 1):
        if not in_console:
            in_console = line.strip() == "```console"
            command = None
        elif line.strip() == "```":
            close()
            in_console, command = False, None
        elif line.startswith("$ "):
            close()
            command, start, shown = (line[2:] if line.startswith("$ jaccli ") else None), number, []
        elif command is not None:
            shown.append(line)
    return found


def all_examples() -> list[Example]:
    return [ex for page in PAGES
            for ex in examples_in(page.read_text(encoding="utf-8"), page.relative_to(ROOT).as_posix())]


def matches(shown: tuple[str, ...] | list[str], printed: list[str]) -> bool:
    """Whether `printed` is what `shown` shows, a `...` line standing for any lines."""
    if not shown:
        return not printed
    if shown[0] == ANY_LINES:
        return any(matches(shown[1:], printed[i:]) for i in range(len(printed) + 1))
    return bool(printed) and same_line(shown[0], printed[0]) and matches(shown[1:], printed[1:])


def same_line(shown: str, printed: str) -> bool:
    return shown == printed or TIME.sub("T ms", shown) == TIME.sub("T ms", printed)


def run(example: Example, tmp: Path) -> list[str]:
    """What the example's command prints (stdout, then stderr), as lines, with `tmp/` taken out."""
    args = shlex.split(example.command)[1:]
    for i, arg in enumerate(args[:-1]):
        if arg in ("-o", "--output"):
            args[i + 1] = str(tmp / args[i + 1])
    done = subprocess.run(JACCLI + args, cwd=ROOT, capture_output=True, text=True,
                          env=clean_env(NO_COLOR="1", TERM="dumb"), timeout=120)
    text = (done.stdout + done.stderr).replace(f"{tmp}/", "")
    return [line.rstrip() for line in text.splitlines()]


EXAMPLES = all_examples()


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, list[str]]:
    """Every example's output, the commands run side by side (each one mostly waits on start-up)."""
    tmp = tmp_path_factory.mktemp("examples")

    def one(ex: Example) -> list[str]:
        own = tmp / ex.id.replace("/", "_").replace(":", "_")
        own.mkdir()
        return run(ex, own)
    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip((ex.id for ex in EXAMPLES), pool.map(one, EXAMPLES)))


def test_pages_show_examples():
    pages = {ex.page for ex in EXAMPLES}
    assert "README.md" in pages and len(EXAMPLES) >= 5, pages


@pytest.mark.parametrize("example", EXAMPLES, ids=[ex.id for ex in EXAMPLES])
def test_example_prints_what_it_shows(example: Example, printed):
    got = printed[example.id]
    assert matches(example.shown, got), (
        f"{example.id}: $ {example.command}\n--- shown\n" + "\n".join(example.shown)
        + "\n--- printed\n" + "\n".join(got))


def test_a_changed_number_fails(printed):
    """The comparison sees one digit changed in a real example's output."""
    example = next(ex for ex in EXAMPLES if any(re.search(r"\d", line) for line in ex.shown))
    assert matches(example.shown, printed[example.id])
    i = next(i for i, line in enumerate(example.shown) if re.search(r"\d", line))
    changed = list(example.shown)
    changed[i] = re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), changed[i], count=1)
    assert not matches(changed, printed[example.id])


def test_parser_and_wildcard():
    page = "\n".join(["```console", "$ jaccli a", "1", "...", "3", "$ echo x", "x", "$ jaccli b", "```",
                      "$ jaccli not-in-a-block", "```python", "$ jaccli neither", "```"])
    a, b = examples_in(page, "p.md")
    assert (a.command, a.shown, a.line) == ("jaccli a", ("1", "...", "3"), 2)
    assert (b.command, b.shown) == ("jaccli b", ())
    assert matches(a.shown, ["1", "3"]) and matches(a.shown, ["1", "2", "2", "3"])
    assert not matches(a.shown, ["1", "2"]) and not matches(a.shown, ["0", "3"])
    assert matches(("time: load 1.4 ms, total 14.5 ms",), ["time: load 0.9 ms, total 112 ms"])
    assert not matches(("time: load 1.4 ms, total 14.5 ms",), ["time: load 0.9 s, total 112 ms"])
