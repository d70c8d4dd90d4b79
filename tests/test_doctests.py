"""The examples in the library's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

MODULES = ["jaccli.api.jacobian_hessian", "jaccli.api.products", "jaccli.io.arrays", "jaccli.check.verification", "jaccli.check.compare", "jaccli.check.diagnostics",
           "jaccli.check.finite_differences", "jaccli.io.index_specs", "jaccli.check.kinks", "jaccli.io.user_functions", "jaccli.api.ops_table",
           "jaccli.replay.record_once", "jaccli.io.byte_sizes", "jaccli.io.npy_stream", "jaccli.plurals", "jaccli.io.writers",
           "jaccli.api.conventions"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # examples name samples/ from the repo root
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
