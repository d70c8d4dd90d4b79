"""Error messages as the command line shows them: one line, in the command line's words."""

from __future__ import annotations

import re

__all__ = ["MAX_MESSAGE", "cli_words", "one_line"]

# The longest error line: a message beyond it (a function's exception holding a large array, say) is cut.
MAX_MESSAGE = 1000

# The library's words (Python arguments and calls) and the command line's, for messages the command line passes on.
_CLI_WORDS = [
    (re.compile(r"\bbatch_axis=0\b"), "--batch-axis 0"),
    (re.compile(r"\bwithout batch_axis\b"), "without --batch-axis"),
    (re.compile(r"\(J\[a:b\], --rows\)"), "with --rows"),
    (re.compile(r"pick one element \(e\.g\. lambda x: f\(x\)\[0\]\) or reduce it \(\.sum\(\)\)"),
     "make f return one element or a sum (.sum())"),
]


def cli_words(message: str) -> str:
    """`message` (a library error's, worded for Python callers) with the command line's words for the same
    things: ``--batch-axis 0`` for ``batch_axis=0``, ``--rows`` for ``J[a:b]``."""
    for pattern, words in _CLI_WORDS:
        message = pattern.sub(words, message)
    return message


def one_line(message: str) -> str:
    """`message` on one line, at most about MAX_MESSAGE characters: a longer one keeps its start and its end (where
    the file and line are) around a note of what was cut."""
    text = " ".join(line.strip() for line in message.splitlines() if line.strip())
    if len(text) <= MAX_MESSAGE:
        return text
    head, tail = text[:MAX_MESSAGE - 200], text[-150:]
    cut = len(text) - len(head) - len(tail)
    return f"{head} ... [{cut} characters cut; --debug shows the whole error] ... {tail}"
