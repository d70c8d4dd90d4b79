"""The performance figures of README.md and docs/benchmarks.md are benchmarks/RESULTS.md's, made by
benchmarks/readme_figures.py: a page whose block differs from what the script makes fails here."""
import pytest

from benchmarks import readme_figures as figures

RESULTS = figures.RESULTS.read_text(encoding="utf-8")


def test_pages_show_the_figures_of_results_md():
    stale = figures.stale_pages(RESULTS)
    assert not stale, (f"the figures in {', '.join(map(str, stale))} are not benchmarks/RESULTS.md's: "
                       "run python -m benchmarks.readme_figures")


def test_block_says_what_results_md_records():
    block = figures.render(RESULTS)
    # RESULTS.md records the softmax Hessian (P6-n500) missing its 3x bound, and record_once meeting it.
    assert "| P6-n500 | softmax Hessian | 508 µs | 0.80x | MISS 6.20x ≤ 3.0x floor | 112 µs | 0.18x | " \
           "PASS 1.37x ≤ 3.0x floor |" in block
    assert "- **PASS**, target 1. end to end" in block and ": 1.47x (limit: ≤ 1.5x)" in block
    assert "- **MISS**, target 4. lazy rows" in block
    assert "- **PASS**, target 2a. in process: faster than torch best and HIPS autograd, with `record_once`: " \
           "13 of 13 instances" in block
    assert block.count("\n| P") == 13


def test_a_changed_figure_in_results_md_makes_the_pages_stale():
    changed = RESULTS.replace("| P6-n500 | 81.6 µs ±0% | 2.88 ms ±1% | 298 µs ±0% | 508 µs ±1% |",
                              "| P6-n500 | 81.6 µs ±0% | 2.88 ms ±1% | 298 µs ±0% | 575 µs ±1% |")
    assert changed != RESULTS
    stale = figures.stale_pages(changed)
    assert set(stale) == set(figures.PAGES)
    assert all("| P6-n500 | softmax Hessian | 575 µs |" in text for text in stale.values())


def test_only_the_block_is_replaced():
    page = f"before\n{figures.BEGIN}\nold\n{figures.END}\nafter\n"
    assert figures.replace_block(page, "NEW") == "before\nNEW\nafter\n"
    with pytest.raises(ValueError):
        figures.replace_block("no markers", "NEW")


def test_results_md_without_a_section_is_refused():
    with pytest.raises(ValueError):
        figures.render(RESULTS.replace("## End to end", "## Something else"))


def test_check_exits_1_when_stale(monkeypatch, tmp_path, capsys):
    results = tmp_path / "RESULTS.md"
    results.write_text(RESULTS.replace("174 µs ±6%", "501 µs ±1%"), encoding="utf-8")
    pages = {}
    for i, (path, ref) in enumerate(figures.PAGES.items()):
        copy = tmp_path / f"page{i}.md"
        copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        pages[copy] = ref
    monkeypatch.setattr(figures, "RESULTS", results)
    monkeypatch.setattr(figures, "PAGES", pages)
    monkeypatch.setattr(figures, "ROOT", tmp_path)
    assert figures.main(["--check"]) == 1
    assert figures.main([]) == 0
    assert all("| P2-n100-m100 | MLP Jacobian | 365 µs | 0.54x | MISS 3.22x ≤ 1.5x floor | 501 µs |"
               in p.read_text(encoding="utf-8") for p in pages)
    assert figures.main(["--check"]) == 0
    assert "match" in capsys.readouterr().out
