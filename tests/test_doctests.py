"""The examples in the library's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

MODULES = ["jaccli.api", "jaccli.arrays", "jaccli.checks", "jaccli.compare", "jaccli.diagnostics",
           "jaccli.finite_diff", "jaccli.indexspec", "jaccli.kinks", "jaccli.loaders", "jaccli.ops",
           "jaccli.replay", "jaccli.sizes", "jaccli.stream", "jaccli.words", "jaccli.writers"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # examples name samples/ from the repo root
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
