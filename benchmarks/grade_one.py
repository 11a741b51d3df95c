"""Grade one solution through the Python API and say where the time went: each stage's start with its second goes
to OUT.stages.log as it happens (so a grading cut off still says where it was), the report to OUT.json at the end,
then the outcome, findings, per-shape medians and the sanitizer's result to the same log.

    python3 benchmarks/grade_one.py SOLUTION PROBLEM_DIR OUT [--no-lint] [--counters off] [--sanitizer on]
        [--device cuda] [--shapes full]

Used by benchmarks/gpu_long_gradings.sh for gradings longer than one device command.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kernelbench.eval.grade import grade_solution


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("solution", type=Path)
    parser.add_argument("problem", type=Path)
    parser.add_argument("out", type=Path, help="OUT.json and OUT.stages.log are written")
    parser.add_argument("--no-lint", action="store_true", help="no static lint (a red-team case, not a candidate)")
    parser.add_argument("--counters", choices=["on", "off"], default="on")
    parser.add_argument("--sanitizer", choices=["on", "off"], default="off")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--shapes", default="full", choices=["full", "smoke"])
    args = parser.parse_args(argv)
    began = time.monotonic()
    with open(f"{args.out}.stages.log", "w") as log:
        def say(*words: object) -> None:
            print(f"[{time.monotonic() - began:7.1f} s]", *words, file=log, flush=True)

        report = grade_solution(args.solution, args.problem, device=args.device, shapes=args.shapes,
                                lint=not args.no_lint, counters=args.counters == "on",
                                sanitizer=args.sanitizer == "on", stage=lambda name, detail="": say(name, detail))
        Path(f"{args.out}.json").write_text(report.dump_json())
        grading = report.grading
        say("OUTCOME", grading.outcome.value, grading.reasons[:3])
        for found in report.integrity:
            say("FINDING", found.check, found.severity, found.message[:300])
        for index, shape in enumerate(grading.shapes):
            say("SHAPE", index, shape.median_ms)
        if grading.sanitizer is not None:
            say("SANITIZER", grading.sanitizer.passed, grading.sanitizer.note[:200], f"{grading.sanitizer.seconds:.1f} s")
            for run in grading.sanitizer.runs:
                say("  TOOL", run.tool, run.ran, run.note[:200], f"{run.seconds:.1f} s",
                    [(f.kind, f.kernel[:80], f.count, f.in_reference) for f in run.findings])
    return 0


if __name__ == "__main__":
    sys.exit(main())
