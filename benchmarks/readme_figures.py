"""The README's performance figures, made from benchmarks/RESULTS.md: `python -m benchmarks.readme_figures`.

The block between BEGIN and END in README.md and in docs/benchmarks.md is this module's output and
nothing else, so a figure there is always one that RESULTS.md records (a test compares them). Run it
after every full benchmark run; `--check` only says whether the pages are up to date.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
# Each page with a figures block, and how it names RESULTS.md (the user guide links only within docs/).
PAGES = {
    ROOT / "README.md": "[benchmarks/RESULTS.md](benchmarks/RESULTS.md)",
    ROOT / "docs" / "benchmarks.md": "`benchmarks/RESULTS.md`",
}
BEGIN = "<!-- figures: made by `python -m benchmarks.readme_figures` from benchmarks/RESULTS.md; do not edit -->"
END = "<!-- end of figures -->"

# What each problem is (benchmarks/problems.md); the instance's sizes follow its id.
PROBLEMS = {
    "P1": "elementwise Jacobian",
    "P2": "MLP Jacobian",
    "P3": "Rosenbrock Hessian",
    "P4": "per-sample Jacobians",
    "P5": "10 rows of an MLP Jacobian",
    "P6": "softmax Hessian",
}


def sections(text: str) -> dict[str, list[list[dict[str, str]]]]:
    """Each `##` section of RESULTS.md: its tables, each a list of rows keyed by the header's cells."""
    out: dict[str, list[list[dict[str, str]]]] = {}
    tables: list[list[dict[str, str]]] = []
    header = None
    for line in text.splitlines():
        if line.startswith("## "):
            tables, header = [], None
            out[line[3:].strip()] = tables
        elif not line.startswith("|"):
            header = None
        elif header is None:
            header = [c.strip() for c in line.strip().strip("|").split("|")]
            tables.append([])
        else:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                tables[-1].append(dict(zip(header, cells)))
    return out


def _table(tables: dict, prefix: str, index: int = 0) -> list[dict[str, str]]:
    """The rows of the `index`-th table of the section whose title starts with `prefix`."""
    for title, found in tables.items():
        if title.startswith(prefix) and len(found) > index:
            return found[index]
    raise ValueError(f"benchmarks/RESULTS.md has no section {prefix!r} with {index + 1} tables")


def _header_fact(text: str, label: str) -> str:
    m = re.search(rf"^\* {label}: (.*)$", text, re.M)
    return m.group(1).strip() if m else "?"


def _verdict(cell: str) -> str:
    """`**MISS** (13.99x ≤ 2.0x hand batched)` -> `MISS 13.99x ≤ 2.0x hand batched`."""
    m = re.match(r"\*\*(\w+)\*\*\s*\((.*)\)$", cell)
    return f"{m.group(1)} {m.group(2)}" if m else cell.replace("**", "")


def _torch_ratio(cell: str) -> str:
    """`**PASS** (0.73x torch, 0.09x HIPS)` -> `0.73x`."""
    m = re.search(r"([\d.]+x) torch", cell)
    return m.group(1) if m else "?"


def render(text: str, results_ref: str = "[benchmarks/RESULTS.md](benchmarks/RESULTS.md)") -> str:
    """The figures block (markers included) for RESULTS.md's text; `results_ref` names RESULTS.md."""
    tables = sections(text)
    when = re.search(r"on (\d{4}-\d\d-\d\d \d\d:\d\d UTC)", text)
    machine = _header_fact(text, "Machine").split(" (")[0]
    steady = {r["instance"]: r for r in _table(tables, "In process, steady state")}
    replayed = {r["instance"]: r for r in _table(tables, "In process with `record_once`")}
    e2e = {r["process (start to saved .npy)"]: r for r in _table(tables, "End to end")}

    lines = [BEGIN, "",
             f"From the latest full run, {when.group(1) if when else 'date unknown'} on {machine} "
             f"({results_ref}, every ratio measured in that run):", ""]
    for row in _table(tables, "Targets"):
        lines.append(f"- {row['result']}, target {row['target']}: {row['measured (this run)']} "
                     f"(limit: {row['limit']})")
    for row in _table(tables, "Targets", 1):
        lines.append(f"- {row['result']}, target {row['target, with `record_once`']}, with `record_once`: "
                     f"{row['measured (this run)']} (limit: {row['limit']})")
    anchors = [f"{name} {row['/ numpy script']}" for name, row in e2e.items()
               if name not in ("jaccli", "numpy closed form")]
    if anchors:
        lines.append(f"- end to end, against the same NumPy script: {', '.join(anchors)}")
    lines += ["", "In process, per call: f recorded on each call, and with `jaccli.record_once(f)` "
              "(recorded once, replayed after). \"vs torch\" is jaccli's time over the fastest PyTorch "
              "method's; the bound is target 2b's.", "",
              "| instance | problem | jaccli | vs torch | bound | record_once | vs torch | bound |",
              "|---|---|---|---|---|---|---|---|"]
    for iid, row in steady.items():
        again = replayed.get(iid, {})
        lines.append("| " + " | ".join([
            iid, PROBLEMS.get(iid[:2], ""),
            row["jaccli"].split(" ±")[0], _torch_ratio(row["T2: faster than torch & HIPS"]),
            _verdict(row["T2: bound"]),
            again.get("jaccli record_once", "?").split(" ±")[0],
            _torch_ratio(again.get("T2: faster than torch & HIPS", "")),
            _verdict(again.get("T2: bound", "?"))]) + " |")
    lines += _issue44(tables)
    lines += ["", END]
    return "\n".join(lines)


def _issue44(tables: dict) -> list[str]:
    """The targets of issues 44 and 39 and the workloads' headline figures, when the run had them."""
    title = next((t for t in tables if t.startswith("Issue 44 and 39 targets")), None)
    if title is None:
        return []
    lines = ["", "Issues 44 (Python loops, ODE integrators, the CLI's cost, record_once's memory) and 39 "
             "(a spectral residual), from the same run:", ""]
    for row in tables[title][0]:
        lines.append(f"- {row['result']}, {row['target']}: {row['measured (this run)']} (limit: {row['limit']})")
    found = [t for t in tables if t.startswith("Workloads of issue 44")]
    if found and tables[found[0]]:
        memory = {}
        mem_title = next((t for t in tables if t.startswith("Workloads: peak memory")), None)
        if mem_title and tables[mem_title]:
            memory = {r["workload"]: r for r in tables[mem_title][0]}
        lines += ["", "| workload | jaccli | record_once | torch.func best | jaccli / torch.func | "
                  "record_once / plain | replay / plain memory |", "|---|---|---|---|---|---|---|"]
        for row in tables[found[0]][0]:
            lines.append("| " + " | ".join([
                row["workload"], row["jaccli"].split(" ±")[0], row["record_once"].split(" ±")[0],
                row["torch.func best"].split(" ±")[0] + _method(row["torch.func best"]),
                row["jaccli / torch.func"], row["record_once / plain"],
                memory.get(row["workload"], {}).get("replay / plain", "–")]) + " |")
    return lines


def _method(cell: str) -> str:
    """`88.1 ms ±3% (jacfwd)` -> ` (jacfwd)`."""
    m = re.search(r"( \([^()]*\))$", cell)
    return m.group(1) if m else ""


def _span(page: str) -> tuple[int, int]:
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError("no figures block (its BEGIN and END marker lines)")
    return start, end + len(END)


def current_block(page: str) -> str:
    start, end = _span(page)
    return page[start:end]


def replace_block(page: str, block: str) -> str:
    """The page's text with its figures block replaced by `block`."""
    start, end = _span(page)
    return page[:start] + block + page[end:]


def stale_pages(results: str) -> dict[Path, str]:
    """Each page whose figures block differs from what `results` (RESULTS.md's text) makes: its new text."""
    stale = {}
    for path, ref in PAGES.items():
        page = path.read_text(encoding="utf-8")
        block = render(results, ref)
        if current_block(page) != block:
            stale[path] = replace_block(page, block)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if a page's figures differ from RESULTS.md's; change nothing")
    args = parser.parse_args(argv)
    stale = stale_pages(RESULTS.read_text(encoding="utf-8"))
    names = ", ".join(str(path.relative_to(ROOT)) for path in stale)
    if not stale:
        print("the figures match benchmarks/RESULTS.md")
    elif args.check:
        print(f"figures differ from benchmarks/RESULTS.md in {names}: run python -m benchmarks.readme_figures",
              file=sys.stderr)
        return 1
    else:
        for path, text in stale.items():
            path.write_text(text, encoding="utf-8")
        print(f"figures rewritten from benchmarks/RESULTS.md in {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
