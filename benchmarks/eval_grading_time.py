"""Where a grading spends its time, stage by stage (the GradeReport's `stages`), on any device.

On the CPU the full shapes are too big, so `--shape` replaces the problem's shapes in a copy under /tmp
(medium shapes exercise the same code paths: input files, reference, oracle, comparison, bench stage):

    python benchmarks/eval_grading_time.py --problem problems/09_add_rmsnorm_fp8_quant --device cpu \\
        --shape tokens=2048,hidden=4096 --shape tokens=4096,hidden=4096 --shape tokens=301,hidden=2880

By default the problem's reference is graded as the solution (lint off, as for reference lines).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def parse_shape(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split("=") for item in text.split(","))}


def problem_with_shapes(problem: Path, shapes: list[dict[str, int]], dest: Path) -> Path:
    """A copy of the problem whose `shapes` are the given ones (the source folder is left alone)."""
    target = dest / problem.name
    shutil.copytree(problem, target, ignore=shutil.ignore_patterns("baselines", "__pycache__"))
    spec = yaml.safe_load((target / "problem.yaml").read_text())
    spec["shapes"] = shapes
    (target / "problem.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", type=Path, required=True)
    parser.add_argument("--solution", type=Path, help="default: the problem's reference.py")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--shape", action="append", type=parse_shape, default=[],
                        help="KEY=N,KEY=N replacing the problem's shapes (repeatable)")
    args = parser.parse_args()
    from kernelbench.eval.grade import grade_solution

    with tempfile.TemporaryDirectory(prefix="kb-grading-time-") as tmp:
        problem = problem_with_shapes(args.problem, args.shape, Path(tmp)) if args.shape else args.problem
        solution = args.solution or problem / "reference.py"
        started = time.monotonic()
        report = grade_solution(solution, problem, device=args.device, shapes="full", lint=args.solution is not None)
        elapsed = time.monotonic() - started
    g = report.grading
    print(f"{args.problem.name} on {args.device}: {g.outcome.value} in {elapsed:.1f} s, {len(g.checks)} cases")
    for name, seconds in report.stages.items():
        print(f"  {name:24} {seconds:8.2f} s")
    for reason in g.reasons[:3]:
        print(f"  reason: {reason[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
