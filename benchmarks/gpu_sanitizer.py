"""The sanitizer stage on a GPU (docs/grading.md, "Sanitizer"): grades the two planted solutions and the deck's
honest ones with the stage on, and writes what it found and what it cost.

    python benchmarks/gpu_sanitizer.py --out $OUT [--shapes full] [--lines triton eager] [--budget-s 540]
        [--part K/N]                       grade only the jobs j with j % N == K (one GPU's share)
        [--stage-limit-s S]                the sanitizer stage's own limit (default: the grader's)
    python benchmarks/gpu_sanitizer.py --out $OUT --merge DIR...   combine the parts' DIR/sanitizer.json
    (on a lent machine: bash benchmarks/gpu_sanitizer.sh, which sets up the sandbox's tools first and runs one
    part per GPU)

- tests/redteam/gpu/sanitizer_oob_read.py: 04_kahan_softmax whose Triton kernel reads one float past the input
  (and drops it); must be check_failed with a memcheck finding in its kernel.
- tests/redteam/gpu/sanitizer_shared_race.py: 04_kahan_softmax plus a CUDA kernel with a __shared__ read-after-write
  race across warps; must be check_failed with a racecheck finding in row_peek_kernel.
- solutions/<line>/*.py: the deck's honest solutions; none may fail on the sanitizer (a report in a kernel the
  reference also reports is recorded, not failed: those rows say which kernels). One that failed its checks (or
  whose grading did not finish) never reached the sanitizer, so says nothing of it: it is listed apart, with its
  first reason, and the closing line speaks only of those that reached it. Such a failure is worth grading that
  solution again alone: several gradings side by side on one GPU can take the memory one of them needs.

Per solution: the outcome, each tool's result (ran or why not, findings with kernel, kind, count, whether the
reference's run reported the kernel too), the seconds each tool took on the solution's call and on the
reference's, the stage's seconds and the grading's. Written to $OUT/sanitizer.json and $OUT/sanitizer.md; the
exit status is 1 when a planted solution was not caught or an honest one failed on the sanitizer. Gradings run one
at a time per process (the tools' slowdown is what is measured), without the counter pass, the timing or the
held-out stage (the sanitizer runs before them and does not depend on them).

Parts: the jobs (planted ones first, then the honest ones) are dealt round robin, job j to part j % N, so N
processes, one per GPU, grade the list together; each part answers only for what it was dealt. The merge puts the
rows back in the jobs' order and applies the same rules to the whole: a planted solution missing from every part
fails it, as does a part that wrote no report or did not finish (its jobs are listed as not graded).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

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
limits = {"sanitizer": float(sys.argv[5])} if sys.argv[5] else None
report = grade_solution(Path(sys.argv[1]), Path(sys.argv[2]), device=sys.argv[3], shapes=sys.argv[4],
                        timing=False, counters=False, held_out=False, sanitizer=True, limits=limits)
sys.stdout.write(report.dump_json())
"""


def grade(solution: Path, problem: str, device: str, shapes: str, timeout_s: float,
          stage_limit_s: float | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-c", API_GRADE, str(solution), str(REPO / "problems" / problem), device, shapes,
           "" if stage_limit_s is None else str(stage_limit_s)]
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


Job = tuple[str, Path, str]  # (row name, solution file, problem)


class Part(BaseModel):
    """One process's share of the jobs: those whose position j in the list has j % count == index."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    index: int
    count: int

    def label(self) -> str:
        return f"{self.index}/{self.count}"


class PartSummary(BaseModel):
    """What one part's folder held, for the merged report."""

    model_config = ConfigDict(extra="forbid")
    folder: str
    part: str = ""                  # "K/N"; "" where the folder held no readable report
    graded: int = 0
    skipped: int = 0
    finished: bool = False
    wall_s: float = 0.0
    note: str = ""                  # why the folder counts for nothing, where it does


class SanitizerReport(BaseModel):
    """$OUT/sanitizer.json: the rows of one run (every job, one part of them, or the parts merged), what was not
    graded, and what failed."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[str]                  # every job's name before the deal: the rows' order and what was asked for
    part: Part | None = None         # the share this run graded; None for every job, and for a merge
    finished: bool = False           # False while gradings are still going (the file is rewritten after each)
    entries: list[dict[str, Any]] = []
    skipped: list[str] = []          # not graded: the budget was spent
    unreached: list[str] = []        # honest, graded, but failed before the sanitizer: "name: first reason"
    lost: list[str] = []             # a merge: dealt to a part that wrote no report or did not finish
    failures: list[str] = []
    wall_s: float = 0.0
    parts: list[PartSummary] = []    # a merge: each part's folder


def parse_part(text: str) -> Part:
    try:
        index, count = (int(n) for n in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N (part K of N, e.g. 0/4)") from None
    if not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"{text!r}: K must be at least 0 and below N (0/4 to 3/4 for 4 GPUs)")
    return Part(index=index, count=count)


def planted_name(path: Path) -> str:
    return f"planted:{path.name}"


def all_jobs(lines: list[str], only: list[str] | None) -> list[Job]:
    """The planted solutions, then each line's honest ones (those of a problem in the deck), in a fixed order."""
    jobs = [(planted_name(p), p, problem) for p, (problem, _, _) in PLANTED.items()]
    jobs += [(f"honest:{line}/{p.name}", p, p.stem) for line in lines
             for p in sorted((REPO / "solutions" / line).glob("*.py"))
             if (REPO / "problems" / p.stem / "problem.yaml").is_file()]
    if only:
        jobs = [job for job in jobs if any(part in job[0] for part in only)]
    return jobs


def dealt(jobs: list[Job], part: Part | None) -> list[Job]:
    """This run's share: every job, or job j where j % N == K (planted ones are dealt like the others)."""
    return jobs if part is None else jobs[part.index::part.count]


def failures_of(entries: list[dict[str, Any]], answerable: set[str]) -> list[str]:
    """A planted solution this run answers for (asked for, and dealt to it) that was not caught, graded or not;
    an honest one graded that failed on the sanitizer."""
    by_name = {e["solution"]: e for e in entries}
    failures = []
    for path, (_, tool, kernel) in PLANTED.items():
        name = planted_name(path)
        if name not in answerable:
            continue
        entry = by_name.get(name)
        if entry is None or not caught(entry, tool, kernel):
            failures.append(f"planted {path.name} not caught by {tool} in {kernel}"
                            + ("" if entry is not None else " (not graded)"))
    failures += [f"honest {e['solution']} failed on the sanitizer" for e in entries
                 if e["solution"].startswith("honest:") and e["sanitizer"].get("passed") is False]
    return failures


def unreached_of(entries: list[dict[str, Any]]) -> list[str]:
    """The honest solutions graded whose grading ended before the sanitizer (a failed check, an import error, a
    grading that did not finish): "name: the first reason". The sanitizer did not run there, so their rows show
    nothing of it; they are neither passes nor failures of the stage."""
    return [f"{e['solution']}: {first_reason(e)}" for e in entries
            if e["solution"].startswith("honest:") and not reached_sanitizer(e)]


def reached_sanitizer(entry: dict[str, Any]) -> bool:
    """The grading got as far as the sanitizer stage: its checks passed (the stage then ran, or says why not), or
    the stage itself failed the grading."""
    return entry["outcome"] == "pass" or entry["sanitizer"].get("passed") is not None


def first_reason(entry: dict[str, Any]) -> str:
    """Why the grading ended where it did: its first reason, else its outcome (with the process's last line where
    no report came back)."""
    if entry["reasons"]:
        return " ".join(str(entry["reasons"][0]).split())[:300]
    last = next((line.strip() for line in reversed(entry.get("stderr", "").splitlines()) if line.strip()), "")
    return f"{entry['outcome']}" + (f" ({last[:200]})" if last else "")


def grade_jobs(args: argparse.Namespace) -> SanitizerReport:
    """Grade this run's share one at a time, the report rewritten after each grading (a run cut short keeps its
    rows), no grading started with under 30 s of the budget left."""
    started = time.monotonic()
    deadline = started + args.budget_s
    jobs = all_jobs(args.lines, args.only)
    mine = dealt(jobs, args.part)
    report = SanitizerReport(jobs=[name for name, _, _ in jobs], part=args.part)
    for name, path, problem in mine:
        left = deadline - time.monotonic()
        if left < 30:
            report.skipped.append(name)
            continue
        entry = row(name, grade(path, problem, args.device, args.shapes, left, args.stage_limit_s))
        report.entries.append(entry)
        print(f"{name}: {entry['outcome']} sanitizer={entry['sanitizer'].get('passed')} "
              f"stage {entry['stage_s']} s, grading {entry['grading_s']} s", flush=True)
        report.wall_s = round(time.monotonic() - started, 1)
        write_json(args.out, report)
    report.failures = failures_of(report.entries, {name for name, _, _ in mine})
    report.unreached = unreached_of(report.entries)
    report.finished = True
    report.wall_s = round(time.monotonic() - started, 1)
    return report


def read_part(folder: Path) -> tuple[SanitizerReport | None, str]:
    """A part's report, or why there is none to use."""
    path = folder / "sanitizer.json"
    try:
        report = SanitizerReport.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None, f"{path}: no report (the part's process ended before its first grading; see its log)"
    except (OSError, ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"{path}: unreadable ({first[:200]}); grade that part again"
    if report.part is None:
        return None, f"{path}: written without --part (a whole run or a merge); merge only the parts of one deal"
    return report, ""


def merge(folders: list[Path]) -> SanitizerReport:
    """The parts' rows in the jobs' order and the failure rules over the whole: a planted solution missing from
    every part fails it, and so does each part that is missing, unreadable, from another deal, or unfinished."""
    problems: list[str] = []
    summaries: list[PartSummary] = []
    parts: dict[int, SanitizerReport] = {}
    jobs: list[str] | None = None
    count = 0
    for folder in folders:
        report, why = read_part(folder)
        if report is None:
            problems.append(why)
            summaries.append(PartSummary(folder=str(folder), note=why))
            continue
        assert report.part is not None  # read_part refuses the rest
        label = report.part.label()
        summaries.append(PartSummary(folder=str(folder), part=label, graded=len(report.entries),
                                     skipped=len(report.skipped), finished=report.finished, wall_s=report.wall_s))
        if jobs is None:
            jobs, count = report.jobs, report.part.count
        if report.jobs != jobs or report.part.count != count:
            why = f"{folder}/sanitizer.json: part {label} of another deal (other jobs, or not of {count} parts)"
        elif report.part.index in parts:
            why = f"{folder}/sanitizer.json: part {label} given twice"
        else:
            parts[report.part.index] = report
            continue
        problems.append(why)
        summaries[-1].note = why
    jobs = jobs or []
    lost: list[str] = []
    for index in range(count):
        report = parts.get(index)
        share = jobs[index::count]
        if report is None:
            problems.append(f"part {index}/{count}: no report among the folders merged")
            lost += share
        elif not report.finished:
            done = {e["solution"] for e in report.entries} | set(report.skipped)
            problems.append(f"part {index}/{count}: did not finish (its process was killed or crashed)")
            lost += [name for name in share if name not in done]
    order = {name: i for i, name in enumerate(jobs)}
    entries = sorted((e for r in parts.values() for e in r.entries), key=lambda e: order.get(e["solution"], 0))
    skipped = sorted((n for r in parts.values() for n in r.skipped), key=lambda n: order.get(n, 0))
    # without a single readable part the jobs asked for are unknown: every planted solution is still owed
    answerable = set(jobs) if jobs else {planted_name(p) for p in PLANTED}
    return SanitizerReport(jobs=jobs, finished=True, entries=entries, skipped=skipped,
                           lost=sorted(lost, key=lambda n: order[n]), parts=summaries,
                           unreached=unreached_of(entries),
                           failures=problems + failures_of(entries, answerable),
                           wall_s=max((r.wall_s for r in parts.values()), default=0.0))


def parts_table(parts: list[PartSummary]) -> str:
    lines = ["| part | folder | graded | skipped | finished | wall s |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {p.part or '?'} | {p.folder.replace('|', '/')} | {p.graded} | {p.skipped} | "
              f"{'yes' if p.finished else 'NO'} | {p.wall_s} |" for p in parts]
    return "\n".join(lines) + "\n"


def markdown(report: SanitizerReport) -> str:
    text = table(report.entries)
    if report.parts:
        text += "\n" + parts_table(report.parts)
    if report.skipped:
        text += f"\nNot graded (budget spent): {', '.join(report.skipped)}\n"
    if report.lost:
        text += f"\nNot graded (their part wrote no report or did not finish): {', '.join(report.lost)}\n"
    if report.unreached:
        text += ("\nDid not reach the sanitizer (failed before it, so nothing is known of them there):\n"
                 + "".join(f"- {line}\n" for line in report.unreached))
    if report.failures:
        return text + "\n" + "\n".join(f"- {f}" for f in report.failures) + "\n"
    return text + "\n" + closing_line(report) + "\n"


def closing_line(report: SanitizerReport) -> str:
    """What a run without failures showed, and no more: of the honest solutions, only those that reached the
    sanitizer are vouched for."""
    honest = sum(1 for e in report.entries if e["solution"].startswith("honest:"))
    if not report.unreached:
        return "Every planted solution graded was caught; no honest solution failed on the sanitizer."
    reached = honest - len(report.unreached)
    return (f"Every planted solution graded was caught; of the {honest} honest solutions graded, {reached} reached "
            f"the sanitizer and none of them failed on it; {len(report.unreached)} did not reach it (listed above).")


def write_json(out: Path, report: SanitizerReport) -> None:
    tmp = out / ".sanitizer.json.tmp"
    tmp.write_text(report.model_dump_json(indent=1))
    tmp.replace(out / "sanitizer.json")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shapes", default="full", choices=["full", "smoke"])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a dry run of the script")
    parser.add_argument("--lines", nargs="*", default=["triton", "eager"], help="honest lines under solutions/")
    parser.add_argument("--budget-s", type=float, default=540.0, help="start no grading after this")
    parser.add_argument("--only", nargs="*", help="grade only the solutions whose name holds one of these")
    parser.add_argument("--stage-limit-s", type=float, help="the sanitizer stage's limit (the grader's default: "
                        "STAGE_LIMITS_S['sanitizer'])")
    share = parser.add_mutually_exclusive_group()
    share.add_argument("--part", type=parse_part, help="K/N: grade only the jobs j with j %% N == K")
    share.add_argument("--merge", type=Path, nargs="+", metavar="DIR",
                       help="grade nothing: combine each DIR/sanitizer.json (the parts) into --out")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    report = merge(args.merge) if args.merge else grade_jobs(args)
    write_json(args.out, report)
    text = markdown(report)
    (args.out / "sanitizer.md").write_text(text)
    print(text)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
