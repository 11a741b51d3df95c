"""The regraded board's tables as markdown, per GPU the cells were graded on, computed from runs/ by the diff page's
own functions (kernelbench/sitegen/diffpage.py), so the figures a closing note or a results file quotes are the
ones `python build.py` shows:

    python3 benchmarks/regrade_board_tables.py [--runs runs] [--gaps 3]

Prints, for each GPU: how many published cells have a regraded run, published x ours, published x their own
checker here x ours, the cells where their checker disagrees with their published verdict, and the largest peak
gaps with their split into ceilings, input protocol and speed.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.results.regraded import compare
from kernelbench.results.run import RESULT_FILE, load_result
from kernelbench.sitegen.diffpage import OURS, _agreement, _row, checker_disputes, peak_gaps, three_way


def regraded_results(runs_dir: Path) -> dict[str, list]:
    """The regraded runs (those with provenance) of `runs_dir`, by the GPU they were graded on."""
    by_gpu: dict[str, list] = defaultdict(list)
    for result_file in sorted(runs_dir.glob(f"*/{RESULT_FILE}")):
        try:
            result = load_result(result_file.parent)
        except (KernelBenchError, ValueError) as exc:
            print(f"skipped {result_file}: {exc}", file=sys.stderr)
            continue
        if result.provenance is not None:
            by_gpu[result.gpu].append(result)
    return by_gpu


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def board_tables(gpu: str, results: list, gaps: int) -> str:
    cells = [compare(r) for r in results]
    rows = [_row(d) for d in cells]
    with_solution = sum(1 for r in results if r.grading.has_solution)
    out = [f"## Graded on {gpu}: {len(results)} cells ({with_solution} with a solution)", "",
           "Published x ours:", "",
           table(["published", "cells", *OURS], [[a["published"], a["total"], *a["cells"]]
                                                 for a in _agreement(rows) if a["total"]]), ""]
    checked = three_way(rows)
    out += [f"Published x their own checker here x ours ({sum(t['cells'] for t in checked)} cells their checker "
            "ran on):", "",
            table(["published", "their checker here", "ours", "cells"],
                  [[t["published"], t["theirs_here"], t["ours"], t["cells"]] for t in checked]), ""]
    disputes = checker_disputes(rows)
    if disputes:
        out += ["Their checker here against their published verdict:", "",
                table(["cell", "published", "their checker here", "ours", "their cases in our checks",
                       "their checker's line"],
                      [[r["run_id"], r["published"], r["own_checker"], r["ours"], r["their_cases_checked"],
                        (r["own_checker_line"] or "").replace("|", "\\|")[:200]] for r in disputes]), ""]
    out += [f"The {gaps} largest peak gaps (ours / published):", "",
            table(["cell", "ratio", "ceilings", "input protocol", "speed", "roofs (theirs / ours)"],
                  [[g["run_id"], f"{g['ratio']:.2f}", _factor(g["ceiling"]), _factor(g["protocol"]),
                    _factor(g["speed"]), g["roofs"]] for g in peak_gaps(cells)[:gaps]]), ""]
    return "\n".join(out)


def _factor(value) -> str:
    return "" if value is None else f"{value:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs"))
    parser.add_argument("--gaps", type=int, default=3, help="how many of the largest peak gaps to list")
    args = parser.parse_args(argv)
    by_gpu = regraded_results(args.runs)
    if not by_gpu:
        print(f"no regraded runs in {args.runs}", file=sys.stderr)
        return 1
    print("\n".join(board_tables(gpu, results, args.gaps) for gpu, results in sorted(by_gpu.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
