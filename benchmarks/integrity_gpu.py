"""Run the red-team suite on a GPU: every case of tests/integrity/cases.yaml marked `gpu`, the deck's honest
solutions, and a side-stream timing comparison (the hardware-counter check has its own script,
benchmarks/integrity_counters_gpu.py; here its pass runs only in gradings of cases that expect it, since the
passes take turns on the GPU and would serialise the parallel gradings). Prints a class x caught table and writes it (with every grading report) under --out.

    python benchmarks/integrity_gpu.py --out $OUT [--budget-s 200] [--parallel 6]

The candidate's stages run in the bubblewrap sandbox where it works, as in any grading; a lent machine has no
bubblewrap, so extract the carried `.debs/bubblewrap_*.deb` and put its usr/bin first on PATH (as
sweeps/device-demo.sh does), or every report's `environment.isolation` says the grading ran unsandboxed.

Gradings use `--device cuda --shapes smoke` and run several at a time (the point is whether each exploit is
caught, not how fast it runs); the speed-of-light case is also graded on full shapes while the budget allows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kernelbench.base.catalogue import CLASS_NAMES
from tests.support.integrity_suite import (
    Suite,
    SuiteCase,
    deck_line_files,
    judge,
    judge_deck_line,
    load_suite,
)

CASES = REPO / "tests" / "integrity" / "cases"
DEVICE = "cuda"  # --device cpu: a dry run of this script without a GPU


# The grading entry point through its Python API (the CLI also loads every other stage's commands, whose
# dependencies the GPU machine may lack).
# Each stage's start goes to stderr as it happens, so a grading cut off at its deadline still says where it was.
API_GRADE = """
import sys, time
from pathlib import Path
from kernelbench.eval.grade import grade_solution
from kernelbench.harness.shared_turns import SharedGpuTurns
turns = SharedGpuTurns(Path(sys.argv[6])) if sys.argv[6] else None
began = time.monotonic()
def stage(name, detail=""):
    print(f"[{time.monotonic() - began:7.1f} s] {name} {detail}", file=sys.stderr, flush=True)
report = grade_solution(Path(sys.argv[1]), Path(sys.argv[2]), device=sys.argv[4], shapes=sys.argv[3],
                        counters=sys.argv[5] == "on", exclusive=turns.measuring() if turns else None,
                        beside=turns.beside() if turns else None, stage=stage)
sys.stdout.write(report.dump_json())
"""
TURNS = ""  # --turns: the folder of the lock files through which the gradings take the GPU's turns


def grade(solution: Path, problem: str, shapes: str, deadline: float, counters: bool = False) -> dict[str, Any]:
    """Grade in a subprocess that must end by `deadline` (time.monotonic()): a grading queued behind others gets
    what is left of the script's budget, not a budget of its own, so the script ends inside its budget."""
    cmd = [sys.executable, "-c", API_GRADE, str(solution), str(REPO / "problems" / problem), shapes, DEVICE,
           "on" if counters else "off", TURNS]
    started = time.monotonic()
    timeout_s = max(5.0, deadline - started)
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
    except subprocess.TimeoutExpired as cut:
        return {"grading": {"outcome": "harness timeout"}, "integrity": [], "wall_s": timeout_s,
                "stages_seen": _text(cut.stderr)[-2000:]}
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = {"grading": {"outcome": f"no report (exit {proc.returncode})"}, "integrity": [],
                  "stderr": proc.stderr[-2000:]}
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


def _text(output: str | bytes | None) -> str:
    """What a subprocess cut off at its timeout had written (bytes, whatever `text=True` asked)."""
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""


def summary(report: dict[str, Any]) -> dict[str, Any]:
    g = report.get("grading", {})
    return {"outcome": g.get("outcome"), "reasons": [r[:300] for r in g.get("reasons", [])[:3]],
            "findings": [{k: f.get(k) for k in ("check", "class", "severity", "message", "evidence")}
                         for f in report.get("integrity", [])],
            "medians_ms": [s.get("median_ms") for s in g.get("shapes", [])], "wall_s": report.get("wall_s"),
            "stderr": report.get("stderr", "")[-600:], **({"regraded_alone": report["regraded_alone"]}
                                                         if "regraded_alone" in report else {}),
            "isolation": (report.get("environment") or {}).get("isolation"),
            **({"stages_seen": report["stages_seen"][-600:]} if "stages_seen" in report else {}),
            # where a stage died, its own words (the grading's log keeps the stage's output)
            **({"check_log_tail": report.get("check_log", "")[-800:]} if g.get("outcome") != "pass" else {})}


# Graded after the others, by themselves:
ALONE = {
    "bad_alloc_all.py": "takes the whole GPU",
    # its sniff needs calls within 15 ms of each other: among twelve gradings the gaps were 29 ms (median), and a
    # logging copy took its library route on 1 of 507 timed calls, so it did the work and its pass was right
    "08_cadence_sniff_fast_bench.py": "cheats only when the machine is quiet",
}


def expects_counters(case: SuiteCase) -> bool:
    """Cases the hardware-counter pass must see: its DRAM-bytes rule, or its audit of a call made with torch's
    profiler off (`counters: true` in cases.yaml)."""
    want = case.expectation("cuda").finding
    return case.counters or (want is not None and "dram_bytes" in want.check)


def needs_full_shapes(case: SuiteCase) -> bool:
    """Smoke inputs are a few KB, below anything DRAM counters can judge."""
    want = case.expectation("cuda").finding
    return want is not None and "dram_bytes" in want.check


SLOW_PROBLEMS = {"02_kda"}  # cold Triton autotuning (fla's SOTA line took 215 s alone): started first


def starts_first(job: tuple) -> bool:
    _, problem, shapes, *_ = job
    return problem in SLOW_PROBLEMS or shapes == "full"


def run_cases(cases: list[SuiteCase], honest: list[Path], deck_lines: list[Path], parallel: int,
              deadline: float, partial: Path, accepted: list[tuple[Path, str]] = (),
              honest_full: bool = False) -> dict[str, Any]:
    jobs = {"full:15_cached_rotation.py": (CASES / "15_cached_rotation.py", "04_kahan_softmax", "full", deadline)}
    if DEVICE != "cuda" or not any(c.file == "15_cached_rotation.py" for c in cases):
        jobs = {}
    jobs.update({c.file: (CASES / c.file, c.problem, "full" if needs_full_shapes(c) else "smoke", deadline,
                          expects_counters(c)) for c in cases if c.file not in ALONE})
    # --honest-full: the honest solutions as a published grading grades them (full shapes, the counter pass on, so
    # its judgement of the measured call meets honest kernels), not the smoke check of the attacks' suite
    jobs.update({f"honest:{p.parent.name}/{p.name}": (p, p.stem, "full" if honest_full else "smoke", deadline,
                                                      honest_full) for p in honest})
    jobs.update({f"deck:{p.parent.name}/{p.name}": (p, p.parent.name, "smoke", deadline) for p in deck_lines})
    jobs.update({f"accepted:{p.name}": (p, problem, "smoke", deadline) for p, problem in accepted})
    order = sorted(jobs, key=lambda k: not starts_first(jobs[k]))  # stable: slow ones first, else as listed
    results: dict[str, Any] = {}
    with ThreadPoolExecutor(parallel) as pool:
        futures = {pool.submit(grade, *jobs[k]): k for k in order}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            keep_report(partial.parent, futures[future], results[futures[future]])
            # what is graded so far comes back even if the call is cut short
            partial.write_text(json.dumps({k: summary(v) for k, v in results.items()}, indent=1))
    for key in [k for k in order if out_of_memory(results[k])]:  # the GPU was shared: grade those again alone
        if time.monotonic() < deadline:
            results[key] = {**grade(*jobs[key]), "regraded_alone": "out of GPU memory beside the other gradings"}
            keep_report(partial.parent, key, results[key])
            partial.write_text(json.dumps({k: summary(v) for k, v in results.items()}, indent=1))
    return {k: results[k] for k in jobs}


def keep_report(out: Path, key: str, report: dict[str, Any]) -> None:
    """Each grading's whole report (its check log with every failed case), since the summary keeps only a tail:
    a grading that fails on the device can then be read case by case after the machine is gone."""
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in key)
    (out / "reports").mkdir(exist_ok=True)
    (out / "reports" / f"{name}.json").write_text(json.dumps(report, indent=1))


def out_of_memory(report: dict[str, Any]) -> bool:
    """A grading that ran out of GPU memory while a dozen others shared the GPU says nothing about its case."""
    text = " ".join([report.get("stderr", ""), *report.get("grading", {}).get("reasons", [])])
    return "out of memory" in text


def side_stream_ratio(side: dict[str, Any], honest: dict[str, Any]) -> dict[str, Any]:
    """The side-stream case does 20x the honest work off the main stream: timed with a device-wide synchronise
    its median must show that work (a ratio well above 1), not the near-zero time of the launch alone."""
    a = [s.get("median_ms") for s in side.get("grading", {}).get("shapes", [])]
    b = [s.get("median_ms") for s in honest.get("grading", {}).get("shapes", [])]
    ratios = [x / y for x, y in zip(a, b) if x and y]
    return {"side_stream_ms": a, "honest_eager_ms": b, "ratios": ratios,
            "caught": bool(ratios) and min(ratios) >= 3.0}


def host_work_counted(result: dict[str, Any], host_ms: float = 2.0) -> dict[str, Any]:
    """The host-work case spends 2 ms on the host per call: every shape's median must include it."""
    medians = [s.get("median_ms") for s in result.get("grading", {}).get("shapes", [])]
    return {"median_ms": medians, "caught": bool(medians) and all(m is not None and m >= host_ms for m in medians)}


def gpu_label() -> str:
    """The name the tables give the GPU the suite ran on (short: 'H200', 'H100 80GB HBM3'), never a guess."""
    try:
        import torch

        return torch.cuda.get_device_name(0).removeprefix("NVIDIA ").strip() or "GPU"
    except Exception:  # noqa: BLE001 - no GPU: the table still prints
        return "GPU"


def table(suite_cases: list[SuiteCase], results: dict[str, Any], cpu_results: dict[str, bool],
          gpu: str = "GPU") -> list[str]:
    rows = [f"| class | case | {gpu} outcome | {gpu} finding(s) | caught on {gpu} | caught on CPU (CI) |",
            "| --- | --- | --- | --- | --- | --- |"]
    for case in sorted(suite_cases, key=lambda c: (c.klass or 99, c.file)):
        res = results.get(case.file)
        if res is None:
            continue
        problems = judge(case, res, "cuda")
        errs = sorted({f"{f['check']}/{f['class']}" for f in res.get("integrity", []) if f.get("severity") == "error"})
        label = f"{case.klass} {CLASS_NAMES[case.klass]}" if case.klass else "bad input"
        cpu = {True: "yes", False: "NO"}.get(cpu_results.get(case.file), "n/a (GPU only)" if not case.cpu else "-")
        rows.append(f"| {label} | {case.file} | {res['grading'].get('outcome')} | {', '.join(errs) or '-'} | "
                    f"{'yes' if not problems else 'NO: ' + '; '.join(problems)[:120]} | {cpu} |")
    return rows


def deck_line_rows(suite: Suite, results: dict[str, Any]) -> list[str]:
    """The deck's own lines graded as candidates: anything beyond their own class 1 library use (and what
    cases.yaml allows them, with its reason) is a false positive."""
    rows = []
    for key, report in results.items():
        if key.startswith("deck:"):
            problem, line = key[len("deck:"):].removesuffix(".py").split("/")
            problems = judge_deck_line(report, suite.deck_allowance(problem, line))
            found = sorted({f"{f['check']}/{f['class']}" for f in report.get("integrity", [])
                            if f["severity"] == "error"})
            rows.append(f"| {problem}/{line} | {report['grading'].get('outcome')} | {', '.join(found) or '-'} | "
                        f"{'; '.join(problems) or 'none'} |")
    return ["", "| deck line | outcome | error findings | false positives |", "| --- | --- | --- | --- |"] + rows \
        if rows else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=200.0, help="stop starting new phases after this")
    parser.add_argument("--parallel", type=int, default=12)
    parser.add_argument("--cpu-results", type=Path, help="JSON {case file: caught} from the CI run, for the table")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--only", nargs="*", help="case files to run (default: all marked gpu)")
    parser.add_argument("--honest", action="store_true", help="with --only: grade the honest solutions too")
    parser.add_argument("--honest-full", action="store_true",
                        help="grade the honest solutions on full shapes with the counter pass on")
    parser.add_argument("--honest-match", nargs="*", default=["*"],
                        help="with --honest: only the honest solutions whose 'kind/file' matches one of these globs "
                             "(so a budget of one call can take the deck in parts)")
    parser.add_argument("--turns", action="store_true",
                        help="the gradings take turns on the GPU as `kernelbench regrade --jobs` does: counters and "
                             "timing alone, the other stages side by side (medians not shared with a neighbour)")
    parser.add_argument("--deck-lines", action="store_true",
                        help="also grade every problem's reference.py and sota.py as candidates (false positives)")
    args = parser.parse_args()
    global DEVICE, TURNS
    DEVICE = args.device
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    TURNS = str(args.out / "turns") if args.turns else ""
    suite = load_suite(REPO / "tests" / "integrity" / "cases.yaml")
    cases = [c for c in suite.cases if c.gpu and (REPO / "problems" / c.problem / "problem.yaml").is_file()
             and not c.limits and (not args.only or c.file in args.only)]
    honest = sorted(p for kind in ("triton", "eager") for p in (REPO / "solutions" / kind).glob("*.py")
                    if (REPO / "problems" / p.stem / "problem.yaml").is_file() and (args.honest or not args.only)
                    and any(fnmatch(f"{kind}/{p.name}", pattern) for pattern in args.honest_match))
    extra: dict[str, Any] = {}
    deadline = started + max(30.0, args.budget_s - (time.monotonic() - started) - 30)
    deck_lines = deck_line_files(REPO / "problems") if args.deck_lines else []
    accepted = [(REPO / "tests" / "integrity" / "accepted" / a.file, a.problem) for a in suite.accepted
                if a.gpu and (not args.only or a.file in args.only)]
    results = run_cases(cases, honest, deck_lines, args.parallel, deadline, args.out / "integrity_partial.json",
                        accepted, honest_full=args.honest_full)
    print(f"[{time.monotonic() - started:.0f} s] graded {len(results)} solutions", flush=True)
    if "full:15_cached_rotation.py" in results:
        extra["15_cached_rotation_full"] = summary(results.pop("full:15_cached_rotation.py"))
    for case in cases:
        if case.file in ALONE and time.monotonic() - started < args.budget_s - 30:
            results[case.file] = grade(CASES / case.file, case.problem, "smoke", time.monotonic() + 90)
    side, honest_eager = results.get("09_side_stream.py"), results.get("honest:eager/04_kahan_softmax.py")
    if side and honest_eager:
        extra["side_stream"] = side_stream_ratio(side, honest_eager)
    if results.get("09_host_work.py"):
        extra["host_work"] = host_work_counted(results["09_host_work.py"])
    cpu_results = json.loads(args.cpu_results.read_text()) if args.cpu_results and args.cpu_results.is_file() else {}
    gpu = gpu_label()
    rows = table(cases, results, cpu_results, gpu)
    accepted_rows = [f"| {k[len('accepted:'):]} | {v['grading'].get('outcome')} | "
                     f"{', '.join(sorted({f['check'] + '/' + str(f['class']) for f in v.get('integrity', []) if f['severity'] == 'error'})) or '-'} | "
                     f"{'; '.join(n for s in v.get('grading', {}).get('shapes', []) for n in s.get('notes', []) if 'graph' in n)[:300] or '-'} |"
                     for k, v in results.items() if k.startswith("accepted:")]
    honest_rows = [f"| {k} | {v['grading'].get('outcome')} | "
                   f"{', '.join(sorted({f['check'] + '/' + str(f['class']) + '/' + f['severity'] for f in v.get('integrity', [])})) or '-'} |"
                   for k, v in results.items() if k.startswith("honest:")]
    text = "\n".join(rows + ["", f"| honest solution | {gpu} outcome | findings |", "| --- | --- | --- |"] + honest_rows
                     + ["", "| accepted route (must pass) | outcome | error findings | graph notes |",
                        "| --- | --- | --- | --- |"] + accepted_rows
                     + deck_line_rows(suite, results))
    (args.out / "integrity_table.md").write_text(text + "\n")
    (args.out / "integrity_gpu.json").write_text(json.dumps(
        {"results": {k: summary(v) for k, v in results.items()}, **extra,
         "elapsed_s": round(time.monotonic() - started, 1)}, indent=1))
    print(text)
    print(json.dumps(extra, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
