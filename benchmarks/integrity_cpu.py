"""The red-team suite on the CPU, as CI grades it, written out for comparison: every case of
tests/integrity/cases.yaml marked `cpu`, the deck's honest eager solutions and the accepted routes, each graded by
the real `kernelbench grade --device cpu --shapes smoke --json`. Prints the class x caught table and each
grading's wall seconds, and writes every report's outcome and findings to --out (JSON), so two grader trees can be
compared case by case (`--compare OLD.json`: after grading, what changed since that file; `--diff OLD NEW`: only
that, nothing graded).

    python benchmarks/integrity_cpu.py --out after.json [--parallel 2] [--only CASE ...] [--compare before.json]
    python benchmarks/integrity_cpu.py --diff before.json after.json
    python benchmarks/integrity_cpu.py --table after.json      # the table of a file written earlier
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.integrity_suite import SuiteCase, judge, load_suite  # noqa: E402

SUITE_DIR = REPO / "tests" / "integrity"
ACCEPTED = {"14_pairwise_fp32_tree.py": "04_kahan_softmax"}
API_GRADE = """
import json, sys
from pathlib import Path
from kernelbench.eval.grade import grade_solution
solution, problem, limits = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
report = grade_solution(Path(solution), Path(problem), device="cpu", shapes="smoke", limits=limits)
sys.stdout.write(report.dump_json())
"""


def class_name(klass: int) -> str:
    try:
        from kernelbench.base.catalogue import CLASS_NAMES
    except ImportError:
        from kernelbench.eval.integrity.catalogue import CLASS_NAMES
    return CLASS_NAMES[klass]


def grade(solution: Path, problem: str, limits: dict[str, float] | None) -> dict[str, Any]:
    """The grader as the suite's test runs it: the CLI, or its Python API where a case sets stage limits."""
    problem_dir = str(REPO / "problems" / problem)
    if limits:
        cmd = [sys.executable, "-c", API_GRADE, str(solution), problem_dir, json.dumps(limits)]
    else:
        cmd = [sys.executable, "-m", "kernelbench", "grade", str(solution), "--problem", problem_dir,
               "--device", "cpu", "--shapes", "smoke", "--json"]
    started = time.monotonic()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900, cwd=REPO)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = {"grading": {"outcome": f"no report (exit {proc.returncode})"}, "integrity": [],
                  "stderr": proc.stderr[-2000:]}
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


def summary(report: dict[str, Any], case: SuiteCase | None) -> dict[str, Any]:
    grading = report.get("grading", {})
    return {"outcome": grading.get("outcome"),
            "errors": sorted({f"{f['check']}/{f['class']}" for f in report.get("integrity", [])
                              if f.get("severity") == "error"}),
            "findings": sorted({f"{f['check']}/{f['class']}/{f['severity']}" for f in report.get("integrity", [])}),
            "failed_checks": sorted({str(c.get("case")) for c in grading.get("checks", []) if not c.get("passed")}),
            "caught": None if case is None else not judge(case, report, "cpu"),
            "wall_s": report.get("wall_s"), "stderr": report.get("stderr", "")[-400:]}


def jobs(only: list[str] | None) -> dict[str, tuple[Path, str, dict[str, float] | None, SuiteCase | None]]:
    suite = load_suite(SUITE_DIR / "cases.yaml")
    out: dict[str, tuple[Path, str, dict[str, float] | None, SuiteCase | None]] = {
        c.file: (SUITE_DIR / "cases" / c.file, c.problem, c.limits or None, c) for c in suite.cases
        if c.cpu and (REPO / "problems" / c.problem / "problem.yaml").is_file()}
    out.update({f"honest:{p.name}": (p, p.stem, None, None) for p in sorted((REPO / "solutions" / "eager").glob("*.py"))
                if (REPO / "problems" / p.stem / "problem.yaml").is_file()})
    out.update({f"accepted:{n}": (SUITE_DIR / "accepted" / n, problem, None, None) for n, problem in ACCEPTED.items()})
    return {k: v for k, v in out.items() if not only or k in only or k.split(":")[-1] in only}


def table(results: dict[str, dict[str, Any]], cases: dict[str, SuiteCase | None]) -> list[str]:
    rows = ["| class | case | outcome | error finding(s) | caught | wall s |", "| --- | --- | --- | --- | --- | --- |"]
    for key in sorted(results, key=lambda k: (cases[k].klass or 99 if cases[k] else 100, k)):
        res, case = results[key], cases[key]
        label = (f"{case.klass} {class_name(case.klass)}" if case.klass else "bad input") if case else "honest"
        caught = {True: "yes", False: "NO", None: "pass expected"}[res["caught"]]
        rows.append(f"| {label} | {key} | {res['outcome']} | {', '.join(res['errors']) or '-'} | {caught} | "
                    f"{res['wall_s']} |")
    return rows


def drawn_per_grading(summary: dict[str, Any]) -> dict[str, Any]:
    """A grading's summary less what its secret seed draws anew each time (the property cases' distributions)."""
    return {**summary, "failed_checks": [c for c in summary.get("failed_checks", []) if not c.startswith("property:")]}


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = ("outcome", "errors", "failed_checks", "caught")
    old, new = ({k: drawn_per_grading(v) for k, v in d.items()} for d in (old, new))
    lines = [f"{k}: {field} {old[k][field]!r} -> {new[k][field]!r}" for k in sorted(set(old) & set(new))
             for field in keys if old[k].get(field) != new[k].get(field)]
    lines += [f"{k}: only in the old file" for k in sorted(set(old) - set(new))]
    lines += [f"{k}: only in the new file" for k in sorted(set(new) - set(old))]
    total_old = sum(v["wall_s"] or 0 for v in old.values())
    total_new = sum(v["wall_s"] or 0 for v in new.values())
    return lines + [f"summed grading wall seconds: {total_old:.0f} -> {total_new:.0f}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="JSON of every grading's summary")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="case files (or honest:/accepted: keys) to grade")
    parser.add_argument("--compare", type=Path, help="a previous --out file: print what differs from it")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("OLD", "NEW"), help="compare two --out files only")
    parser.add_argument("--table", type=Path, help="print the table of an --out file written earlier")
    args = parser.parse_args()
    if args.table:
        results = json.loads(args.table.read_text())
        print("\n".join(table(results, {k: v[3] for k, v in jobs(list(results)).items()})))
        return 0
    if args.diff:
        old, new = (json.loads(p.read_text()) for p in args.diff)
        print("\n".join(compare(old, new)))
        return 0
    if args.out is None:
        parser.error("--out is required unless --diff is given")
    todo = jobs(args.only)
    started = time.monotonic()
    results: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(args.parallel) as pool:
        futures = {pool.submit(grade, path, problem, limits): key for key, (path, problem, limits, _) in todo.items()}
        for future in as_completed(futures):
            key = futures[future]
            results[key] = summary(future.result(), todo[key][3])
            print(f"[{time.monotonic() - started:4.0f} s] {key}: {results[key]['outcome']}", flush=True)
    args.out.write_text(json.dumps({k: results[k] for k in sorted(results)}, indent=1) + "\n")
    print("\n".join(table(results, {k: v[3] for k, v in todo.items()})))
    caught = [r["caught"] for r in results.values() if r["caught"] is not None]
    honest = [k for k, r in results.items() if r["caught"] is None and (r["outcome"] != "pass" or r["errors"])]
    print(f"\n{sum(caught)} of {len(caught)} cases caught; honest/accepted not passing cleanly: {honest or 'none'}; "
          f"{time.monotonic() - started:.0f} s wall")
    if args.compare:
        print("\n".join(compare(json.loads(args.compare.read_text()), results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
