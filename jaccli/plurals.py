"""Counted nouns for messages, so that one thing is never "1 entries"."""

from __future__ import annotations

__all__ = ["all_of", "counted", "verb"]

_PLURALS = {"entry": "entries", "matrix": "matrices", "index": "indices", "axis": "axes"}


def counted(n: int, noun: str) -> str:
    """``n`` and `noun`, in the plural unless ``n`` is 1.

    Args:
        n: how many.
        noun: the singular (``entry``, ``sweep``, ``row``).

    Returns:
        ``"1 entry"``, ``"0 entries"``, ``"3 sweeps"``.

    >>> counted(1, "entry"), counted(0, "entry"), counted(3, "sweep"), counted(2, "NaN/inf mismatch")
    ('1 entry', '0 entries', '3 sweeps', '2 NaN/inf mismatches')
    """
    if n == 1:
        return f"{n} {noun}"
    head, _, last = noun.rpartition(" ")
    plural = _PLURALS.get(last, last + ("es" if last.endswith(("s", "x", "ch", "sh")) else "s"))
    return f"{n} {head + ' ' if head else ''}{plural}"


def all_of(n: int, noun: str) -> str:
    """``all 9 entries``, or ``the 1 entry``.

    >>> all_of(9, "entry"), all_of(1, "entry")
    ('all 9 entries', 'the 1 entry')
    """
    return f"{'the' if n == 1 else 'all'} {counted(n, noun)}"


def verb(n: int, plural: str, singular: str) -> str:
    """The verb that agrees with a count of `n`: ``verb(1, "differ", "differs")`` is ``differs``.

    >>> f"{counted(1, 'entry')} {verb(1, 'differ', 'differs')}", f"{counted(2, 'entry')} {verb(2, 'differ', 'differs')}"
    ('1 entry differs', '2 entries differ')
    """
    return singular if n == 1 else plural
