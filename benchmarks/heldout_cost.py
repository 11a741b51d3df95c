"""What the held-out cases add to one grading (docs/grading.md, "Held-out cases"): the held-out stage runs last,
on its own, so its seconds in the GradeReport's `stages` are exactly the wall time it adds.

    python benchmarks/heldout_cost.py --problem problems/05_topk_bitonic \\
        --solution solutions/eager/05_topk_bitonic.py --repeat 3

Grades on the CPU with the smoke shapes (what CI does) unless --device cuda; prints, per grading, the total, the
held-out stage, its share, how many held-out cases it judged and their result.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", type=Path, required=True)
    parser.add_argument("--solution", type=Path, required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-timing", action="store_true", help="skip the bench stage (as problem check does)")
    args = parser.parse_args()
    from kernelbench.eval.grade import grade_solution

    shapes = "smoke" if args.device == "cpu" else "full"
    added = []
    for i in range(args.repeat):
        report = grade_solution(args.solution, args.problem, device=args.device, shapes=shapes,
                                timing=not args.no_timing)
        total, held_s = report.stages.get("total", 0.0), report.stages.get("heldout", 0.0)
        held = report.grading.held_out
        cases = len(held.checks) if held else 0
        result = "none declared" if held is None else {True: "right", False: "wrong", None: "not judged"}[held.correct]
        print(f"grading {i + 1}: {report.grading.outcome.value}, total {total:.1f} s, held-out stage {held_s:.1f} s "
              f"({100 * held_s / total:.0f}%), {cases} held-out cases, {result}")
        added.append(held_s)
    print(f"held-out stage: median {statistics.median(added):.1f} s over {len(added)} gradings "
          f"(min {min(added):.1f}, max {max(added):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
