"""Outside jaccli/engine, jaccli reaches the engine through its face and never imports its private names."""

from __future__ import annotations

import ast
from pathlib import Path

import jaccli
import jaccli.engine

PACKAGE = Path(jaccli.__file__).parent


def _absolute(module: str | None, level: int, path: Path) -> str:
    """The dotted name a (possibly relative) `from module import ...` in `path` refers to."""
    if not level:
        return module or ""
    parts = ["jaccli", *path.relative_to(PACKAGE).parent.parts]
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _engine_imports(source: str, path: Path):
    """(line, module, names) of each import of jaccli.engine or a module inside it, in `source` (at `path`)."""
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, path)
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("jaccli.engine"):
                    yield node.lineno, alias.name, []
            continue
        else:
            continue
        if module == "jaccli" and "engine" in names:
            yield node.lineno, "jaccli.engine", []
        elif module == "jaccli.engine" or module.startswith("jaccli.engine."):
            yield node.lineno, module, names


def _private_imports(source: str, path: Path) -> list[str]:
    """The imports in `source` (the text of `path`) of a private module or name of the engine."""
    found = []
    for line, module, names in _engine_imports(source, path):
        private_module = any(part.startswith("_") for part in module.split(".")[2:])
        private_names = [n for n in names if n.startswith("_")]
        if private_module or private_names:
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: from {module} import {', '.join(names)}")
    return found


def test_nothing_outside_the_engine_imports_its_private_modules_or_names():
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if "engine" not in p.relative_to(PACKAGE).parts[:1]]
    assert len(outside) > 50
    found = [line for p in outside for line in _private_imports(p.read_text(), p)]
    assert found == []


def test_the_check_sees_relative_and_absolute_private_imports():
    place = PACKAGE / "api" / "probe.py"  # where the lines below would stand; nothing is written
    samples = {"from jaccli.engine.rules._util import dtype_of": 1, "from ..engine.rules import _util": 1,
               "from jaccli.engine import _EXPORTS": 1, "from ..engine._x import y": 1,
               "import jaccli.engine._x": 1, "from jaccli.engine import dtype_of, peek": 0,
               "from jaccli.engine.recording import Recording": 0, "from .sweep_seeds import _x": 0}
    for source, count in samples.items():
        assert len(_private_imports(source, place)) == count, source


def test_the_face_exports_what_it_lists():
    for name in jaccli.engine._EXPORTS:
        assert getattr(jaccli.engine, name) is not None, name
