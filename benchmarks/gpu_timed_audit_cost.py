"""What the GPU's timed-call audit costs the bench stage: the same solutions graded with two source trees of the
grader, interleaved (A, B, A, B, ...), reporting the bench stage's seconds and how many timed calls each shape had
audited (left out of the samples).

    git archive OLD_COMMIT kernelbench | tar -x -C /tmp/old
    python benchmarks/gpu_timed_audit_cost.py --tree old=/tmp/old --tree new=. --repeat 2 \\
        solutions/triton/04_kahan_softmax.py solutions/eager/09_add_rmsnorm_fp8_quant.py

Each grading runs in its own process with the tree first on PYTHONPATH (the stages it starts inherit it), on full
shapes (`--shapes`) with the counter pass off. Prints one line per grading and the median ratio per solution;
`--json` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GRADE = """
import json, sys
from pathlib import Path
from kernelbench.eval.grade import grade_solution
import kernelbench.eval.grade as g
report = grade_solution(Path(sys.argv[1]), Path(sys.argv[2]), device=sys.argv[3], shapes=sys.argv[4],
                        counters=False)
d = json.loads(report.dump_json())
print(json.dumps({"module": g.__file__, "outcome": d["grading"]["outcome"], "stages": d.get("stages", {}),
                  "benchmark_log": d.get("benchmark_log", "")}))
"""
AUDITED = re.compile(r"shape (\d+): (\d+) timed calls audited")


def grade_with(tree: Path, solution: Path, device: str, shapes: str) -> dict:
    problem = REPO / "problems" / solution.stem
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree.resolve()), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", GRADE, str(solution.resolve()), str(problem), device, shapes],
                          capture_output=True, text=True, env=env, cwd=tree, timeout=560)
    if proc.returncode != 0:
        return {"error": proc.stderr[-800:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["audited"] = [int(n) for _, n in AUDITED.findall(out.pop("benchmark_log"))]
    return out


def print_ratio(solution: str, rows: list[dict], labels: list[str], stage: str = "bench") -> None:
    """The median seconds of one stage (`total`: the whole grading) of the first two trees on one solution, and
    their ratio."""
    seconds: dict[str, list[float]] = {label: [] for label in labels}
    for row in rows:
        if row["solution"] == solution and stage in row.get("stages", {}):
            seconds[row["tree"]].append(row["stages"][stage])
    if len(labels) < 2 or not all(seconds[label] for label in labels[:2]):
        return
    (a, b), medians = labels[:2], {label: statistics.median(v) for label, v in seconds.items() if v}
    print(f"{solution}: {stage} median {a} {medians[a]:.1f} s, {b} {medians[b]:.1f} s, "
          f"{b}/{a} {medians[b] / medians[a]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("solutions", nargs="+", type=Path)
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH of a tree holding kernelbench/")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--device", default="cuda", help="cpu only to try the script (the audit is the GPU's)")
    parser.add_argument("--shapes", default="full")
    parser.add_argument("--stage", action="append", help="stages whose medians to compare (default: bench; "
                        "`total` is the whole grading)")
    args = parser.parse_args()
    trees = dict(item.split("=", 1) for item in args.tree)
    rows = []
    for solution in args.solutions:
        for r in range(args.repeat):
            for label, tree in trees.items():
                out = grade_with(Path(tree), solution, args.device, args.shapes)
                rows.append({"solution": str(solution), "tree": label, "trial": r, **out})
                bench = out.get("stages", {}).get("bench")
                print(f"{solution} [{label}] trial {r}: {out.get('outcome', out.get('error'))}, bench stage "
                      f"{bench} s, audited calls per shape {out.get('audited')}, grader {out.get('module')}",
                      flush=True)
                if args.json:  # what is graded so far survives a call cut short
                    args.json.write_text(json.dumps(rows, indent=1))
    for solution in args.solutions:
        for stage in args.stage or ["bench"]:
            print_ratio(str(solution), rows, list(trees), stage)
    return 0


if __name__ == "__main__":
    sys.exit(main())
