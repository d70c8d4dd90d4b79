"""--help: one screen per command (at most 60 lines at 100 columns) ending with examples; the long texts once,
in `jaccli --help`, whose exit statuses wrap between words on any width."""

from __future__ import annotations

import re
import subprocess

import pytest

from jaccli.cli.commands.help_text import EXIT_STATUS
from jaccli.cli.main import cli

from .test_cli import invoke, make_runner
from .test_cli_subprocess import JACCLI, clean_env


def _help(args: list[str], columns: str) -> str:
    """The help as a terminal of `columns` columns shows it (click's test runner pins its width at 80)."""
    done = subprocess.run(JACCLI + args + ["--help"], capture_output=True, text=True, timeout=60,
                          env={**clean_env(), "COLUMNS": columns})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_each_command_help_fits_one_screen_and_ends_with_examples(command):
    lines = _help([command], "100").rstrip("\n").splitlines()
    assert len(lines) <= 60, (command, len(lines))
    assert max(len(line) for line in lines) <= 100
    examples = lines[lines.index("  Examples:") + 1:]
    assert 2 <= len(examples) <= 3 and all(e.startswith("    jaccli ") for e in examples), examples
    assert any(e.startswith(f"    jaccli {command} ") for e in examples)
    # The paragraphs on INPUT and the exit statuses are jaccli --help's, not repeated in every command.
    text = " ".join(lines)
    assert "Exit status" not in text and "loaded without pickles" not in text
    assert "jaccli --help" in text


def test_jaccli_help_holds_func_input_and_the_exit_statuses():
    text = " ".join(invoke(make_runner(), "--help").stdout.split())
    assert "FUNC is path.py" in text and "INPUT is a .npy file (loaded without pickles)" in text
    assert "jaccli runs the file with your rights" in text and "-e EXPR is safe on untrusted text" in text
    for status, meaning in EXIT_STATUS:
        assert f"{status} {meaning}" in text


@pytest.mark.parametrize("columns", ["40", "60", "80", "100", "140"])
def test_exit_status_lines_never_break_a_word(columns):
    section = _help([], columns).split("Exit status:\n")[1]
    lines = section.rstrip("\n").splitlines()
    assert max(len(line) for line in lines) <= max(int(columns), 50)  # (click's narrowest help is 50)
    words = {w for status, meaning in EXIT_STATUS for w in f"{status} {meaning}".split()}
    assert set(section.split()) <= words
    # Each status starts a line of its own, its meaning beside it.
    starts = [line.split()[0] for line in lines if re.match(r"  \S", line)]
    assert starts == [status.split()[0] for status, _ in EXIT_STATUS]
