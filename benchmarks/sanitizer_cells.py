"""The sanitizer stage over graded runs, as a markdown table: per run, our outcome, what memcheck and racecheck
found (and whether the reference's own run reported the same kernel), and what the stage cost beside the whole
grading. For a regrade run with `--sanitizer on` into a folder of its own:

    python3 benchmarks/sanitizer_cells.py /tmp/sanitized

Prints the table, then the totals: runs the stage ran on whole, clean, failed, not finished, and the stage's
seconds (median, largest) against the grading's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

# beside this script: the regrade's runs, read as its tables read them
from regrade_board_tables import regraded_results


def tool_cell(run) -> str:
    """One tool's result in a few words: its seconds, and each finding with its kernel."""
    if not run.ran:
        return f"not run ({run.note[:80]})" if run.note else "not run"
    found = "; ".join(f"{f.kind} x{f.count} in {f.kernel[:60]}"
                      + (" (the reference too)" if f.in_reference else "")
                      + ("" if f.severity == "error" else f" [{f.severity}]") for f in run.findings)
    return f"{run.seconds:.1f} s, " + (found or "clean")


def rows(runs_dir: Path) -> list[dict]:
    out = []
    for result in (r for results in regraded_results(runs_dir).values() for r in results):
        grading = result.grading
        stage = grading.sanitizer
        tools = {r.tool: r for r in stage.runs} if stage else {}
        out.append({
            "run": result.run_id,
            "outcome": grading.outcome.value,
            "passed": None if stage is None else stage.passed,
            "note": (stage.note if stage else "no sanitizer block") or "",
            "shape": stage.shape if stage else {},
            "memcheck": tool_cell(tools["memcheck"]) if "memcheck" in tools else "",
            "racecheck": tool_cell(tools["racecheck"]) if "racecheck" in tools else "",
            "stage_s": stage.seconds if stage and stage.runs else None,
            "grading_s": grading.elapsed_s,
        })
    return out


def verdict(row: dict) -> str:
    if row["passed"] is not None:
        return "clean" if row["passed"] else "FAILED"
    note = row["note"][:80]  # the stage's own words: "not run: ..." or why a tool did not finish
    return note if note.startswith(("not run", "no sanitizer")) else f"not finished: {note}"


def report(found: list[dict]) -> str:
    lines = ["| run | ours | sanitizer | memcheck | racecheck | stage s | grading s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in found:
        cells = [r["run"], r["outcome"], verdict(r), r["memcheck"], r["racecheck"],
                 "" if r["stage_s"] is None else f"{r['stage_s']:.1f}",
                 "" if r["grading_s"] is None else f"{r['grading_s']:.0f}"]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    whole = [r for r in found if r["passed"] is not None]
    stage_s = [r["stage_s"] for r in whole if r["stage_s"] is not None]
    lines += ["", (f"{len(found)} runs; the stage ran whole on {len(whole)}: "
                   f"{sum(r['passed'] is True for r in whole)} clean, {sum(r['passed'] is False for r in whole)} "
                   f"failed; {len(found) - len(whole)} not run or not finished.")]
    if stage_s:
        lines.append(f"The stage's seconds on those: median {statistics.median(stage_s):.1f}, "
                     f"largest {max(stage_s):.1f}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="the folder of run directories")
    args = parser.parse_args(argv)
    found = rows(args.runs)
    if not found:
        print(f"no regraded runs in {args.runs}", file=sys.stderr)
        return 1
    print(report(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
