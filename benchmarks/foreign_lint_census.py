"""The static lint over a published board's real solutions: which rules fire, on how many cells, and on cells the
board published as correct. A CPU-only first look at what the regrade will meet, and a check of our rules against
code this project did not write: a rule that fires on many honest-looking published solutions is a rule to read
again before any GPU time is spent.

    python benchmarks/foreign_lint_census.py BOARD.json --solutions DIR --deck DIR [--json OUT]

Prints, per rule (its class and message with the varying part dropped), the cells it fires on and how many of them
the board published as correct; then each flagged cell with its rules and the solution's line numbers. No solution
text is printed or written: only run ids, rules and line numbers.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelbench.eval.integrity.lint import lint_source  # noqa: E402
from kernelbench.harness.regrade import plan_cells  # noqa: E402
from kernelbench.results.published import load_published_board  # noqa: E402


def rule_of(message: str) -> str:
    """The rule a message comes from: quoted names, parentheses and a leading `name:` are the varying part."""
    rule = re.sub(r"\([^)]*\)", "", message)
    rule = re.sub(r"^[\w:.#\" /<>-]+?: (?=library call|includes a library header|sets a persisting|starts proc|"
                  r"deletes)", "", rule)
    rule = re.sub(r"'[^']*'", "'…'", rule)
    return re.sub(r"\s+", " ", rule).strip()


def census(board_path: Path, solutions: Path, deck: Path) -> dict:
    board = load_published_board(board_path)
    cells, specs = [], {}
    for job in plan_cells(board, solutions, deck):
        if job.solution is None or job.opened is None:
            continue
        spec = specs.get(job.problem) or specs.setdefault(job.problem, job.opened.spec)
        findings = lint_source(job.solution.read_text(encoding="utf-8", errors="replace"), spec)
        cells.append({
            "run_id": job.cell.run_id,
            "problem": job.problem,
            "published_correct": job.cell.correct,
            "findings": [{"class": f.klass, "severity": f.severity, "rule": rule_of(f.message), "line": f.line}
                         for f in findings if f.severity in ("error", "warning")],
        })
    return {"board": str(board_path), "cells": cells}


def report(data: dict) -> str:
    cells = data["cells"]
    out = [f"{len(cells)} cells with a solution and a problem folder; "
           f"{sum(c['published_correct'] for c in cells)} published correct"]
    for severity in ("error", "warning"):
        flagged = [c for c in cells if any(f["severity"] == severity for f in c["findings"])]
        out.append(f"\n{severity}s: {len(flagged)} cells ({sum(c['published_correct'] for c in flagged)} of them "
                   f"published correct)")
        by_rule: dict[tuple, set] = collections.defaultdict(set)
        for cell in cells:
            for f in cell["findings"]:
                if f["severity"] == severity:
                    by_rule[(f["class"], f["rule"])].add(cell["run_id"])
        correct = {c["run_id"] for c in cells if c["published_correct"]}
        out.append("| class | rule | cells | published correct |")
        out.append("| --- | --- | --- | --- |")
        for (klass, rule), ids in sorted(by_rule.items(), key=lambda item: (-len(item[1]), item[0])):
            out.append(f"| {klass} | {rule} | {len(ids)} | {len(ids & correct)} |")
    out.append("\nflagged cells (errors; solution line numbers):")
    for cell in cells:
        errors = [f for f in cell["findings"] if f["severity"] == "error"]
        if errors:
            rules = collections.defaultdict(list)
            for f in errors:
                rules[(f["class"], f["rule"])].append(f["line"])
            mark = "published correct" if cell["published_correct"] else "published failing"
            out.append(f"- {cell['run_id']} ({mark})")
            for (klass, rule), lines in sorted(rules.items()):
                shown = ", ".join(str(n) for n in sorted({n for n in lines if n})[:8])
                out.append(f"    class {klass}: {rule} [lines {shown}]")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("board", type=Path)
    parser.add_argument("--solutions", type=Path, required=True)
    parser.add_argument("--deck", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    data = census(args.board, args.solutions, args.deck)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    print(report(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
