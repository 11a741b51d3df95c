"""The sanitizer stage on a GPU (docs/grading.md, "Sanitizer"): grades the two planted solutions and the deck's
honest ones with the stage on, and writes what it found and what it cost.

    python benchmarks/gpu_sanitizer.py --out $OUT [--shapes full] [--lines triton eager] [--budget-s 540]
    (on a lent machine: bash benchmarks/gpu_sanitizer.sh, which sets up the sandbox's tools first)

- tests/redteam/gpu/sanitizer_oob_read.py: 04_kahan_softmax whose Triton kernel reads one float past the input
  (and drops it); must be check_failed with a memcheck finding in its kernel.
- tests/redteam/gpu/sanitizer_shared_race.py: 04_kahan_softmax plus a CUDA kernel with a __shared__ read-after-write
  race across warps; must be check_failed with a racecheck finding in row_peek_kernel.
- solutions/<line>/*.py: the deck's honest solutions; none may fail on the sanitizer (a report in a kernel the
  reference also reports is recorded, not failed: those rows say which kernels).

Per solution: the outcome, each tool's result (ran or why not, findings with kernel, kind, count, whether the
reference's run reported the kernel too), the seconds each tool took on the solution's call and on the
reference's, the stage's seconds and the grading's. Written to $OUT/sanitizer.json and $OUT/sanitizer.md; the
exit status is 1 when a planted solution was not caught or an honest one failed on the sanitizer. Gradings run one
at a time (the tools' slowdown is what is measured), without the counter pass, the timing or the held-out stage
(the sanitizer runs before them and does not depend on them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PLANTED = {  # file: (problem, tool that must report, a part of the kernel's name it must report)
    REPO / "tests" / "redteam" / "gpu" / "sanitizer_oob_read.py": ("04_kahan_softmax", "memcheck",
                                                                   "_kahan_softmax_kernel"),
    REPO / "tests" / "redteam" / "gpu" / "sanitizer_shared_race.py": ("04_kahan_softmax", "racecheck",
                                                                      "row_peek_kernel"),
}

# through the Python API (the CLI would load every command's dependencies)
API_GRADE = """
import sys
from pathlib import Path
from kernelbench.eval.grade import grade_solution
report = grade_solution(Path(sys.argv[1]), Path(sys.argv[2]), device=sys.argv[3], shapes=sys.argv[4],
                        timing=False, counters=False, held_out=False, sanitizer=True)
sys.stdout.write(report.dump_json())
"""


def grade(solution: Path, problem: str, device: str, shapes: str, timeout_s: float) -> dict[str, Any]:
    cmd = [sys.executable, "-c", API_GRADE, str(solution), str(REPO / "problems" / problem), device, shapes]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"grading": {"outcome": "harness timeout"}, "wall_s": round(timeout_s, 1)}
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = {"grading": {"outcome": f"no report (exit {proc.returncode})"}, "stderr": proc.stderr[-3000:]}
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


def row(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """What the figures need from one grading report."""
    grading = report.get("grading", {})
    result = grading.get("sanitizer") or {}
    return {"solution": name, "outcome": grading.get("outcome"), "reasons": grading.get("reasons", []),
            "sanitizer": result, "stage_s": report.get("stages", {}).get("sanitizer"),
            "grading_s": report.get("wall_s"), "isolation": report.get("environment", {}).get("isolation"),
            "stderr": report.get("stderr", "")}


def caught(entry: dict[str, Any], tool: str, kernel_part: str) -> bool:
    """The grading failed, and on the planted kernel's report from the expected tool."""
    runs = entry["sanitizer"].get("runs", [])
    own = [f for r in runs if r["tool"] == tool for f in r.get("findings", [])
           if kernel_part in f["kernel"] and f.get("severity") == "error" and f.get("in_reference") is False]
    return entry["outcome"] == "check_failed" and entry["sanitizer"].get("passed") is False and bool(own)


def tool_cell(run: dict[str, Any]) -> str:
    seconds = f"{run.get('seconds', 0):.1f} s" + (f" (+ reference {run['reference_seconds']:.1f} s)"
                                                   if run.get("reference_seconds") is not None else "")
    if run.get("note"):
        return f"{run['note'][:120]}; {seconds}"
    findings = run.get("findings", [])
    if not findings:
        return f"clean; {seconds}"
    kinds = "; ".join(f"{'FAIL' if f['severity'] == 'error' and f.get('in_reference') is False else 'noted'} "
                      f"{f['kind'][:60]} in {f['kernel'][:60]} x{f['count']}" for f in findings[:3])
    return f"{kinds}; {seconds}"


def table(entries: list[dict[str, Any]]) -> str:
    lines = ["| solution | outcome | sanitizer | memcheck | racecheck | stage s | grading s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for e in entries:
        runs = {r["tool"]: r for r in e["sanitizer"].get("runs", [])}
        verdict = {True: "clean", False: "FAIL", None: "not run"}[e["sanitizer"].get("passed")]
        if e["sanitizer"].get("note"):
            verdict += f" ({e['sanitizer']['note'][:80]})"
        cells = [tool_cell(runs[t]).replace("|", "/") if t in runs else "" for t in ("memcheck", "racecheck")]
        lines.append(f"| {e['solution']} | {e['outcome']} | {verdict} | {cells[0]} | {cells[1]} | "
                     f"{e['stage_s'] if e['stage_s'] is not None else ''} | {e['grading_s']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shapes", default="full", choices=["full", "smoke"])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a dry run of the script")
    parser.add_argument("--lines", nargs="*", default=["triton", "eager"], help="honest lines under solutions/")
    parser.add_argument("--budget-s", type=float, default=540.0, help="start no grading after this")
    parser.add_argument("--only", nargs="*", help="grade only the solutions whose name holds one of these")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    jobs = [(f"planted:{p.name}", p, problem) for p, (problem, _, _) in PLANTED.items()]
    jobs += [(f"honest:{line}/{p.name}", p, p.stem) for line in args.lines
             for p in sorted((REPO / "solutions" / line).glob("*.py"))
             if (REPO / "problems" / p.stem / "problem.yaml").is_file()]
    if args.only:
        jobs = [job for job in jobs if any(part in job[0] for part in args.only)]
    entries, skipped = [], []
    for name, path, problem in jobs:
        left = deadline - time.monotonic()
        if left < 30:
            skipped.append(name)
            continue
        entry = row(name, grade(path, problem, args.device, args.shapes, left))
        entries.append(entry)
        print(f"{name}: {entry['outcome']} sanitizer={entry['sanitizer'].get('passed')} "
              f"stage {entry['stage_s']} s, grading {entry['grading_s']} s", flush=True)
        (args.out / "sanitizer.json").write_text(json.dumps({"entries": entries, "skipped": skipped}, indent=1))
    failures = []
    for (path, (_, tool, kernel)) in PLANTED.items():
        entry = next((e for e in entries if e["solution"] == f"planted:{path.name}"), None)
        if entry is None and args.only:
            continue  # not asked for
        if entry is None or not caught(entry, tool, kernel):
            failures.append(f"planted {path.name} not caught by {tool} in {kernel}")
    failures += [f"honest {e['solution']} failed on the sanitizer" for e in entries
                 if e["solution"].startswith("honest:") and e["sanitizer"].get("passed") is False]
    text = table(entries) + (f"\nNot graded (budget spent): {', '.join(skipped)}\n" if skipped else "") + (
        "\n" + "\n".join(f"- {f}" for f in failures) + "\n" if failures else "\nEvery planted solution graded was "
        "caught; no honest solution failed on the sanitizer.\n")
    (args.out / "sanitizer.json").write_text(json.dumps({"entries": entries, "skipped": skipped,
                                                         "failures": failures}, indent=1))
    (args.out / "sanitizer.md").write_text(text)
    print(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
