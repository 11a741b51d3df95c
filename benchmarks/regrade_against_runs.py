"""Grade committed runs' solutions again and put each shape's new median beside the medians the runs recorded:
the check that a change to the grader's timing path (its rotation, its validation) leaves honest timings alone.

    python3 benchmarks/regrade_against_runs.py --out $OUT --agent scripted:triton --problems 03 04 06
    python3 benchmarks/regrade_against_runs.py --out /tmp/regrade --device cpu --shapes smoke --problems 04

For each problem, the PASS runs of that agent on the GPU the runs name are grouped; the newest run's solution.py
is graded (`grade_solution`, the same entry point the harness uses) and every shape's new median is printed with
the recorded trials' medians, the ratio new / median of the recorded ones, the new host-bound sample count and the
grading's stage seconds. Recorded runs must have graded the same file (their solution.py bytes are compared).
On a CPU with smoke shapes the recorded full-shape medians do not apply: the table then shows the new medians only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.results.run import RESULT_FILE, RunResult, Status, load_result

REPO = Path(__file__).resolve().parents[1]


def passing_runs(runs_dir: Path, agent: str, problem: str) -> list[tuple[Path, RunResult]]:
    """The PASS runs of `agent` (harness:model) on the problem whose name starts with `problem`, oldest first."""
    harness, _, model = agent.partition(":")
    found = []
    for path in sorted(runs_dir.glob(f"*/{RESULT_FILE}")):
        run = load_result(path.parent)
        if (run.harness, run.model) == (harness, model) and run.problem.startswith(problem) \
                and run.status is Status.PASS:
            found.append((path.parent, run))
    return sorted(found, key=lambda item: (item[1].trial, item[0].name))


def same_file(run_dirs: list[Path]) -> bool:
    return len({(d / "solution.py").read_bytes() for d in run_dirs}) == 1


def compare_rows(problem: str, recorded: list[RunResult], report, full: bool) -> list[dict]:
    rows = []
    for shape in report.grading.shapes:
        before = [s.median_ms for r in recorded for s in r.grading.shapes
                  if s.index == shape.index and s.median_ms] if full else []
        reference = statistics.median(before) if before else None
        rows.append({"problem": problem, "shape": shape.index, "recorded_ms": before, "new_ms": shape.median_ms,
                     "ratio": shape.median_ms / reference if reference and shape.median_ms else None,
                     "host_bound": shape.host_bound_samples, "trials": len(shape.samples_ms)})
    return rows


def markdown(rows: list[dict], stages: dict[str, dict[str, float]], outcomes: dict[str, str]) -> str:
    lines = ["| problem | shape | recorded medians ms | new median ms | new / recorded | host-bound | trials |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        recorded = " / ".join(f"{m:.4g}" for m in r["recorded_ms"]) or "-"
        new = f"{r['new_ms']:.4g}" if r["new_ms"] else "-"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        bound = "-" if r["host_bound"] is None else f"{r['host_bound']} of {r['trials']}"
        lines.append(f"| {r['problem']} | {r['shape']} | {recorded} | {new} | {ratio} | {bound} | {r['trials']} |")
    lines += ["", "| problem | outcome | stage seconds |", "| --- | --- | --- |"]
    lines += [f"| {p} | {outcomes[p]} | " + ", ".join(f"{k} {v:.1f}" for k, v in s.items()
                                                       if "." not in k) + " |" for p, s in stages.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=Path, default=REPO / "runs")
    parser.add_argument("--agent", default="scripted:triton", help="harness:model of the recorded runs")
    parser.add_argument("--problems", nargs="+", required=True, help="problem name prefixes, e.g. 03 04")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--shapes", default="full", choices=["full", "smoke"])
    args = parser.parse_args(argv)
    from kernelbench.eval.grade import grade_solution

    args.out.mkdir(parents=True, exist_ok=True)
    rows, stages, outcomes = [], {}, {}
    for prefix in args.problems:
        found = passing_runs(args.runs, args.agent, prefix)
        if not found:
            raise KernelBenchError(f"no PASS run of {args.agent} on a problem starting {prefix!r}", path=args.runs,
                                   hint="check --agent (harness:model) and --problems against the run folders")
        dirs = [d for d, _ in found]
        if not same_file(dirs):
            raise KernelBenchError(f"the runs of {args.agent} on {found[0][1].problem} graded different files",
                                   path=dirs[0], hint="pass an agent whose trials submitted one file")
        problem = found[0][1].problem
        report = grade_solution(dirs[-1] / "solution.py", REPO / "problems" / problem, device=args.device,
                                shapes=args.shapes)
        outcomes[problem], stages[problem] = report.grading.outcome.value, dict(report.stages)
        rows += compare_rows(problem, [r for _, r in found], report, args.shapes == "full")
        print(f"{problem}: {outcomes[problem]} in {report.stages.get('total', 0):.0f} s", flush=True)
        text = write_tables(args.out, rows, stages, outcomes)  # after each problem: a cut-short run keeps its part
    print(text)
    return 0


def write_tables(out: Path, rows: list[dict], stages: dict[str, dict[str, float]], outcomes: dict[str, str]) -> str:
    text = markdown(rows, stages, outcomes)
    (out / "regrade.md").write_text(text)
    (out / "regrade.json").write_text(json.dumps({"rows": rows, "stages": stages, "outcomes": outcomes}, indent=1))
    return text


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KernelBenchError as exc:
        print(exc, file=sys.stderr)
        sys.exit(2)
