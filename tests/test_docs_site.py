"""The documentation site (mkdocs.yml, docs/): it builds with `mkdocs build --strict`, every page of docs/ is in
its navigation, and a broken link fails the build (the docs extra's mkdocs, in the test extras)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300)


def _nav_pages(nav: list) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_site_builds_strictly_with_every_page_in_its_navigation(tmp_path):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True
    pages = _nav_pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    for page in pages:
        built = tmp_path / "site" / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.stat().st_size > 0, page


def test_a_broken_link_fails_the_build(tmp_path):
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "ci.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr
