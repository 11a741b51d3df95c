"""What judging timed outputs like checked ones costs: stage seconds and the timed medians of an honest solution,
graded a few times (the medians of the repeats are printed).

The timed rotation mixes stress inputs in (judged, not timed) and every timed output goes through the judge's
comparison (the problem's compare() hook, the Kahan row-sum evidence); the check stage checks the added stress
draws first. To compare with the grader before that change, run this same script from a copy of the older tree
(it imports the package of the tree it sits in):

    python benchmarks/eval_timed_judging.py --problem problems/04_kahan_softmax --repeat 3
    python benchmarks/eval_timed_judging.py --problem problems/04_kahan_softmax --shapes full \\
        --shape rows=64,vocab=65536 --shape rows=8,vocab=262144 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.eval_grading_time import parse_shape, problem_with_shapes

STAGES = ("check", "judge", "bench", "total")


def grade_once(solution: Path, problem: Path, device: str, shapes: str) -> dict:
    from kernelbench.eval.grade import grade_solution

    report = grade_solution(solution, problem, device=device, shapes=shapes)
    g = report.grading
    return {"outcome": g.outcome.value, "checks": len(g.checks), "reasons": g.reasons[:2],
            **{k: report.stages.get(k, 0.0) for k in STAGES},
            "medians_ms": [s.median_ms for s in g.shapes], "trials": [len(s.samples_ms) for s in g.shapes]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "04_kahan_softmax")
    parser.add_argument("--solution", type=Path, help="default: solutions/eager/<problem>.py")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--shapes", choices=["smoke", "full"], default="smoke")
    parser.add_argument("--shape", action="append", type=parse_shape, default=[],
                        help="KEY=N,KEY=N replacing the problem's (full) shapes, repeatable")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    problem_src = args.problem.resolve()
    solution = (args.solution or REPO / "solutions" / "eager" / f"{problem_src.name}.py").resolve()
    runs = []
    with tempfile.TemporaryDirectory(prefix="kb-timed-judging-") as tmp:
        problem = problem_with_shapes(problem_src, args.shape, Path(tmp)) if args.shape else problem_src
        for i in range(args.repeat):
            run = grade_once(solution, problem, args.device, args.shapes)
            runs.append(run)
            print(f"run {i + 1}: {run['outcome']}, {run['checks']} checks, "
                  + ", ".join(f"{k} {run[k]:.2f} s" for k in STAGES)
                  + f", timed medians {[round(m, 4) for m in run['medians_ms'] if m]} ms, trials {run['trials']}"
                  + (f", reasons {run['reasons']}" if run["reasons"] else ""))
    print(f"{solution.relative_to(REPO)} on {problem_src.name} ({args.device}, {args.shapes}"
          f"{', ' + str(len(args.shape)) + ' custom shapes' if args.shape else ''}), median of {len(runs)} runs:")
    for key in STAGES:
        print(f"  {key:6} stage {statistics.median(r[key] for r in runs):7.2f} s")
    shapes = len(runs[0]["medians_ms"])
    for s in range(shapes):
        values = [r["medians_ms"][s] for r in runs if len(r["medians_ms"]) > s and r["medians_ms"][s]]
        if values:
            print(f"  shape {s} timed median {statistics.median(values):.4f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
