"""GPU validation of the grader in one call: calibrated ceilings, every problem's reference passing its own
check, a wrong kernel failing, the same solution graded twice, the grader's timing against an independent
measurement (CUPTI kernel durations through torch.profiler), grading time per problem, and the baselines.

    python benchmarks/gpu_validate.py --out $OUT --phases calibrate,check,wrong,repeat,independent,baselines

Prints every figure and writes them to OUT/gpu_validate.json (baselines also as OUT/baselines.tar.gz).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tarfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PHASES = ("calibrate", "check", "wrong", "grade", "repeat", "independent", "baselines", "compiled", "sota", "eager")
SINGLE_LINE_PHASES = ("sota", "eager")  # run only when named: a line measured again on its own


def deck(selected: str) -> list[Path]:
    """The problems, in the order given (comma-separated ids), or all of them."""
    dirs = sorted(p for p in (REPO / "problems").iterdir() if (p / "problem.yaml").is_file())
    if selected == "all":
        return dirs
    by_name = {d.name: d for d in dirs}
    return [by_name[name] for name in selected.split(",") if name in by_name]


def phase_calibrate(args, out: dict) -> None:
    from kernelbench.eval.calibrate import calibrate
    from kernelbench.hardware import detect_profile

    profile = detect_profile()
    out["profile"] = profile.model_dump() if profile else None
    out["calibration"] = calibrate(profile)
    for r in out["calibration"]:
        print(f"calibrate: {r['what']}: measured {r['measured']}, datasheet {r['datasheet']}, ratio {r['ratio']}")


def phase_check(args, out: dict) -> None:
    from kernelbench.eval.problem_check import check_problem

    out["problem_check"] = {}
    for problem in deck(args.problems):
        started = time.monotonic()
        try:
            report = check_problem(problem, device="cuda")
            out["problem_check"][problem.name] = {"passed": report.passed, "lines": report.lines,
                                                  "elapsed_s": time.monotonic() - started}
            print(f"problem check {problem.name}: {'PASS' if report.passed else 'FAIL'} "
                  f"({time.monotonic() - started:.1f} s)\n  " + "\n  ".join(report.lines))
        except Exception as exc:
            out["problem_check"][problem.name] = {"passed": False, "error": traceback.format_exc()[-2000:]}
            print(f"problem check {problem.name}: ERROR {exc}")


def _grade(solution: Path, problem: Path, lint: bool = True) -> dict:
    from kernelbench.eval.grade import grade_solution

    started = time.monotonic()
    report = grade_solution(solution, problem, device="cuda", shapes="full", lint=lint)
    g = report.grading
    return {"outcome": g.outcome.value, "correct": g.correct, "peak_fraction": g.peak_fraction,
            "elapsed_s": time.monotonic() - started, "reasons": g.reasons[:3],
            "findings": [f"[{f.severity}] class {f.klass}: {f.message} {f.evidence}"[:400] for f in report.integrity],
            "shapes": [{"index": s.index, "median_ms": s.median_ms, "iqr_ms": s.spread_ms, "method": s.timing_method,
                        "fraction": s.fraction, "tflops": s.tflops, "gbps": s.gbps, "n": len(s.samples_ms)}
                       for s in g.shapes],
            "benchmark_log": report.benchmark_log[-3000:], "stages": report.stages}


def stage_line(result: dict) -> str:
    """Where a grading's time went: wall seconds per stage and the judge's own steps (judge.*)."""
    stages = result.get("stages") or {}
    return "  stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items())


def phase_wrong(args, out: dict) -> None:
    solution = REPO / "benchmarks" / "gpu_wrong_kahan.py"
    result = _grade(solution, REPO / "problems" / "04_kahan_softmax")
    out["wrong_kernel"] = result
    print(f"wrong kernel: {result['outcome']} (must not be pass); reasons: {result['reasons'][:1]}")
    print(stage_line(result))


def phase_grade(args, out: dict) -> None:
    """Every selected problem's Triton solution graded once: outcome, peak_fraction and where the time went."""
    out["grade"] = {}
    for problem in deck(args.problems):
        solution = REPO / "solutions" / "triton" / f"{problem.name}.py"
        if _remaining(args) < 60 or not solution.is_file():
            print(f"grade {problem.name}: skipped ({'budget' if solution.is_file() else 'no solution'})")
            continue
        result = _grade(solution, problem)
        out["grade"][problem.name] = result
        print(f"grade {problem.name}: {result['outcome']} peak_fraction {result['peak_fraction']} in "
              f"{result['elapsed_s']:.1f} s; reasons {result['reasons'][:1]}")
        print(stage_line(result))
        for f in result["findings"]:
            print(f"  {f}")
        for s in result["shapes"]:
            print(f"  shape {s['index']}: {s['median_ms']} ms ({s['method']}, n={s['n']}), fraction {s['fraction']}")


def phase_repeat(args, out: dict) -> None:
    out["repeat"] = {}
    for name in args.repeat.split(","):
        problem = REPO / "problems" / name
        solution = problem / "reference.py" if args.repeat_reference else REPO / "solutions" / "triton" / f"{name}.py"
        if not solution.is_file() or not problem.is_dir():
            continue
        lint = not args.repeat_reference  # a reference uses the very ops it forbids to solutions
        first = _grade(solution, problem, lint)
        second = _grade(solution, problem, lint) if _remaining(args) > first["elapsed_s"] + 20 else None
        if second is None:
            out["repeat"][name] = {"first": first, "second": "skipped: budget"}
            print(f"repeat {name}: graded once ({first['outcome']}, {first['elapsed_s']:.1f} s), no budget left")
            print(stage_line(first))
            print(first["benchmark_log"])
            continue
        pf = [first["peak_fraction"], second["peak_fraction"]]
        diff = abs(pf[0] - pf[1]) / max(pf) if all(pf) else None
        out["repeat"][name] = {"first": first, "second": second, "relative_difference": diff}
        print(f"repeat {name}: {first['outcome']}/{second['outcome']} peak_fraction {pf}, relative difference "
              f"{diff}, grading time {first['elapsed_s']:.1f} s / {second['elapsed_s']:.1f} s")
        print(stage_line(first))
        print(stage_line(second))
        for f in first["findings"]:
            print(f"  {f}")
        print(first["benchmark_log"])


def _cupti_kernel_ms(model, inputs, flush, trials: int = 30) -> float:
    """Sum of kernel device durations per call (CUPTI via torch.profiler), median over calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    per_call = []
    for _ in range(trials):
        flush()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(*inputs)
            torch.cuda.synchronize()
        total_us = sum(e.device_time for e in prof.events()
                       if str(e.device_type).endswith("CUDA") and not e.name.startswith(("Memset", "Memcpy")))
        per_call.append(total_us / 1e3)
    return statistics.median(per_call)


def phase_independent(args, out: dict) -> None:
    """The grader's events+sync timing vs CUPTI kernel durations, on a few kernels of different lengths."""
    import torch

    from kernelbench.eval.portable.timing import L2Flusher, device_l2_bytes, time_function

    device = torch.device("cuda")
    flush = L2Flusher(device, device_l2_bytes(device))
    rows = []
    for label, n in (("bf16 GEMM 4096^3", 4096), ("bf16 GEMM 8192^3", 8192), ("bf16 GEMM 2048^3", 2048)):
        sets = [[torch.randn(n, n, device="cuda", dtype=torch.bfloat16),
                 torch.randn(n, n, device="cuda", dtype=torch.bfloat16)] for _ in range(3)]
        graded = time_function(torch.mm, sets, device, warmup=10, trials=30)
        independent = _cupti_kernel_ms(torch.mm, sets[0], flush)
        rows.append({"kernel": label, "grader_median_ms": graded.median_ms, "grader_method": graded.method,
                     "sync_overhead_ms": graded.sync_overhead_ms, "cupti_median_ms": independent,
                     "relative_difference": abs(graded.median_ms - independent) / independent})
        print(f"independent: {label}: grader {graded.median_ms:.4f} ms ({graded.method}), CUPTI "
              f"{independent:.4f} ms, diff {rows[-1]['relative_difference']:.3%}, sync overhead "
              f"{graded.sync_overhead_ms * 1e3:.1f} us")
    out["independent_timing"] = rows


def _remaining(args) -> float:
    return args.deadline - time.monotonic()


def _baselines_pass(args, out: dict, lines: tuple[str, ...], written: set) -> None:
    from kernelbench.eval.baselines import measure_baselines, write_baselines

    problems = deck(args.problems)
    for done, problem in enumerate(problems):
        if _remaining(args) < 25:
            print(f"baselines {lines} {problem.name}: skipped, device budget nearly spent")
            out["baselines"].setdefault(problem.name, {})["skipped_" + "_".join(lines)] = True
            continue
        started = time.monotonic()
        share = max(25.0, (_remaining(args) - 10) / (len(problems) - done))  # one slow line cannot eat the rest
        try:
            result = measure_baselines(problem, lines=lines, limits={"bench": 0.7 * share / len(lines),
                                                                     "reference": 0.5 * share,
                                                                     "shape_seconds": args.shape_seconds})
            written.add(write_baselines(problem, result, merge=True))
            out["baselines"].setdefault(problem.name, {}).update(
                {k: {"peak_fraction": v.peak_fraction, "available": v.available, "reason": v.reason[:300],
                     "median_ms": [t.median_ms for t in v.shapes], "methods": [t.timing_method for t in v.shapes]}
                 for k, v in result.lines.items()})
        except Exception as exc:
            out["baselines"].setdefault(problem.name, {})["error_" + "_".join(lines)] = \
                f"{type(exc).__name__}: {exc}"[:2000]
        print(f"baselines {lines} {problem.name} ({time.monotonic() - started:.0f} s): "
              f"{json.dumps(out['baselines'][problem.name], default=str)[:600]}")
        _pack(args, written)


def _pack(args, written: set) -> None:
    if written and args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)  # --out may name a folder not made yet
        with tarfile.open(Path(args.out) / "baselines.tar.gz", "w:gz") as tar:
            for path in sorted(written):
                tar.add(path, arcname=str(Path(path).relative_to(REPO)))


def phase_baselines(args, out: dict) -> None:
    """eager and SOTA lines for every problem first, then the slow torch.compile line while budget remains."""
    out["baselines"] = {}
    written: set = set()
    _baselines_pass(args, out, ("eager", "sota"), written)
    out["baselines_first_pass_s"] = time.monotonic() - args.started


def phase_compiled(args, out: dict) -> None:
    _single_line_pass(args, out, "compiled")


def phase_sota(args, out: dict) -> None:
    """The SOTA line alone (merged into the problem's baselines file), for a library whose first call is slow."""
    _single_line_pass(args, out, "sota")


def phase_eager(args, out: dict) -> None:
    """The eager line alone (merged into the problem's baselines file), e.g. after its SOTA line was measured."""
    _single_line_pass(args, out, "eager")


def _single_line_pass(args, out: dict, line: str) -> None:
    out.setdefault("baselines", {})
    _baselines_pass(args, out, (line,), set())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--phases", default=",".join(p for p in PHASES if p not in SINGLE_LINE_PHASES))
    parser.add_argument("--problems", default="all", help="all, or comma-separated problem ids")
    parser.add_argument("--repeat", default="04_kahan_softmax", help="problems whose triton solution is graded twice")
    parser.add_argument("--repeat-reference", action="store_true",
                        help="grade the problem's own reference.py twice instead of solutions/triton")
    parser.add_argument("--budget-s", type=float, default=3600, help="stop starting new work after this long")
    parser.add_argument("--shape-seconds", type=float, default=None,
                        help="cap the timed trials of one shape of one baseline line (at least 5 trials)")
    args = parser.parse_args()
    args.started = time.monotonic()
    args.deadline = args.started + args.budget_s
    out: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for phase in args.phases.split(","):
        started = time.monotonic()
        if _remaining(args) < 30:
            print(f"phase {phase}: skipped, device budget nearly spent")
            continue
        try:
            globals()[f"phase_{phase}"](args, out)
        except Exception:
            out[f"{phase}_error"] = traceback.format_exc()[-3000:]
            print(f"phase {phase} failed:\n{out[f'{phase}_error']}")
        out[f"{phase}_elapsed_s"] = time.monotonic() - started
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "gpu_validate.json").write_text(json.dumps(out, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
