"""Commands of the evaluation stage: `kernelbench grade`, `kernelbench problem check`, `kernelbench hardware ...`,
`kernelbench baselines`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kernelbench.errors import KernelBenchError

if TYPE_CHECKING:
    from kernelbench.problems.layouts.base import Layout

GRADE_EXAMPLE = """example:
  kernelbench grade solution.py --problem problems/04_kahan_softmax --device cpu --shapes smoke --json
  kernelbench grade solution.py --problem path/to/problems-h100/05_topk_bitonic      # KernelBench-Hard layout
  kernelbench grade solution.py --problem path/to/level1/23_Softmax.py               # Stanford KernelBench file
  kernelbench grade hang.py --problem problems/04_kahan_softmax --device cpu --shapes smoke --limit check=20
exit status: 0 only when the outcome is pass."""
CALIBRATE_EXAMPLE = """example:
  kernelbench hardware calibrate --json > calibration.json"""
PROBLEM_CHECK_EXAMPLE = """example:
  kernelbench problem check problems/04_kahan_softmax --device cpu
  kernelbench problem check path/to/problems-h100/01_fp8_gemm path/to/level1/23_Softmax.py --device cuda
checks: problem.yaml is valid; the reference passes its own grading (smoke shapes on cpu, all shapes on cuda);
a perturbed and an all-zeros output are rejected."""
BASELINES_EXAMPLE = """example:
  kernelbench baselines --problem all
  kernelbench baselines --problem problems/01_fp8_gemm --lines eager sota
  kernelbench baselines --problem all --problems .foreign/kernelbench.com/benchmarks/hard/problems-h100
another benchmark's problem (KernelBench-Hard folder, Stanford KernelBench file) is read in its own layout; its
lines are filed in its baselines/ folder (a Stanford file's: baselines/<name>/ beside it)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_grade(subparsers)
    _register_problem(subparsers)
    _register_hardware(subparsers)
    _register_baselines(subparsers)


def _register_grade(subparsers) -> None:
    p = subparsers.add_parser("grade", help="grade a solution against a problem (trusted, fresh processes)",
                              epilog=GRADE_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("solution", type=Path, help="the candidate's solution.py")
    p.add_argument("--problem", type=Path, required=True,
                   help="problem folder (ours or KernelBench-Hard's) or Stanford KernelBench file, e.g. "
                        "problems/01_fp8_gemm")
    add_device_options(p)
    p.add_argument("--json", action="store_true", help="print the GradeReport as JSON on stdout")
    p.add_argument("--out", type=Path, help="write check.log, benchmark.log and grade.json here")
    p.add_argument("--limit", action="append", default=[], metavar="STAGE=SECONDS", type=stage_limit,
                   help="a stage's time limit (stages: check, reference, bench, counters, heldout, heldout_bench, sanitizer; shape_seconds caps timing "
                        "per shape); repeatable, e.g. --limit check=20 --limit bench=120")
    p.add_argument("--counters", choices=["on", "off"], default="on",
                   help="the hardware-counter pass on CUDA gradings (ncu; off where ncu is absent); the result "
                        "says whether it ran")
    p.add_argument("--held-out", choices=["on", "off"], default="on",
                   help="judge the problem's held-out cases after the other stages (default on; they never change "
                        "the verdict); off skips their stage pair, and the result says it was turned off")
    p.add_argument("--sanitizer", choices=["on", "off"], default="off",
                   help="run compute-sanitizer's memcheck and racecheck over one call on the smallest shape (CUDA "
                        "gradings; an error in the candidate's own kernels fails it); default off until the stage is "
                        "validated on a GPU (docs/grading.md, \"Sanitizer\"); off skips the stage, and the result says "
                        "it was turned off")
    p.set_defaults(func=grade_command)


def add_device_options(parser: argparse.ArgumentParser, *, shapes: bool = True) -> None:
    """--device (and --shapes): both default to what this machine can run; see resolve_device_options. (Nothing is
    imported here: every command's parser is built at start-up.)"""
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="where the code runs; auto is cuda when this machine has a CUDA GPU, else cpu")
    if shapes:
        parser.add_argument("--shapes", choices=("auto", "full", "smoke"), default="auto",
                            help="the problem's shapes; auto is full on cuda and the small smoke shapes on cpu")


def resolve_device_options(args: argparse.Namespace) -> None:
    """Turn auto into the device (and shapes) this machine gets, in place, and say on stderr what auto chose."""
    from kernelbench.hardware import resolve_device, resolve_shapes

    chosen = []
    requested = args.device
    args.device = resolve_device(requested)
    if requested == "auto":
        chosen.append(f"device {args.device}" + ("" if args.device == "cuda" else " (no CUDA GPU found)"))
    if getattr(args, "shapes", None) == "auto":
        args.shapes = resolve_shapes("auto", args.device)
        chosen.append(f"{args.shapes} shapes")
    if chosen:
        print(f"using {', '.join(chosen)}; --device and --shapes choose", file=sys.stderr)


def stage_limit(text: str) -> tuple[str, float]:
    from kernelbench.eval.grade import STAGE_LIMITS_S

    stage, _, seconds = text.partition("=")
    known = (*STAGE_LIMITS_S, "shape_seconds")
    try:
        value = float(seconds)
    except ValueError:
        value = -1.0
    if stage not in known or value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not STAGE=SECONDS with STAGE one of {', '.join(known)} "
                                         "and SECONDS a positive number")
    return stage, value


def grade_command(args: argparse.Namespace) -> int:
    from kernelbench.base.models import Outcome
    from kernelbench.eval.grade import STAGES, grade_solution
    from kernelbench.eval.progress import StepProgress

    resolve_device_options(args)
    with StepProgress("grade", total=len(STAGES)) as progress:
        progress.note(f"grading {args.solution} on {args.problem} ({args.device}, {args.shapes} shapes)")
        report = grade_solution(args.solution, args.problem, device=args.device, shapes=args.shapes, out_dir=args.out,
                                limits=dict(args.limit), counters=args.counters == "on",
                                held_out=args.held_out == "on", sanitizer=args.sanitizer == "on",
                                stage=progress.step)
    g = report.grading
    if args.json:
        sys.stdout.write(report.dump_json())
    else:
        pf = f"{g.peak_fraction:.4f}" if g.peak_fraction is not None else "n/a"
        print(f"{g.outcome.value.upper()}  correct={g.correct}  peak_fraction={pf}  ({g.elapsed_s:.1f} s)")
        for reason in g.reasons:
            print(f"  {reason}")
        for f in report.integrity:
            print(f"  [{f.severity}] class {f.klass} {f.class_name}: {f.message} {f.evidence}")
        if g.held_out is not None:
            print(held_out_line(g.held_out))
        if g.sanitizer is not None and g.sanitizer.passed is not False:  # a failure is among the reasons
            print(sanitizer_line(g.sanitizer))
    return 0 if g.outcome is Outcome.PASS else 1


def held_out_line(held) -> str:
    """The held-out result in one line (docs/grading.md, "Held-out cases"); it changes no exit status. Its note
    may quote the candidate's error: control characters are shown escaped."""
    from kernelbench.text import visible

    result = {True: "right", False: "WRONG", None: "not judged"}[held.correct]
    line = (f"  held-out cases (not part of the verdict): {result}, {held.passed} of {len(held.checks)} right"
            + (f" — {visible(held.note)}" if held.note else ""))
    if held.relative_peak_fraction is not None:
        line += (f"\n  held-out shapes timed: {held.relative_peak_fraction:.3g}x the published shapes' peak fraction "
                 f"({len(held.timings)} shapes)")
    if held.timing_note:
        line += f"\n  held-out timing: {visible(held.timing_note)}"
    return line


def sanitizer_line(result) -> str:
    """The sanitizer stage in one line (docs/grading.md, "Sanitizer"); its notes may quote the tool's output."""
    from kernelbench.text import visible

    if result.passed is None:
        notes = [result.note] + [f"{r.tool}: {r.note}" for r in result.runs if r.note]
        return "  sanitizer: " + visible("; ".join(n for n in notes if n))[:400]
    return "  sanitizer: memcheck and racecheck clean" + (
        f" ({sum(len(r.findings) for r in result.runs)} report(s) also in the reference's run)"
        if any(r.findings for r in result.runs) else "")


def _register_problem(subparsers) -> None:
    p = subparsers.add_parser("problem", help="work with problem folders")
    sub = p.add_subparsers(dest="problem_command", metavar="COMMAND")
    check = sub.add_parser("check", help="validate a problem: spec, reference, tolerance that can fail",
                           epilog=PROBLEM_CHECK_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("problems", metavar="problem_dir", type=Path, nargs="+",
                       help="one or more problem folders (or Stanford KernelBench files)")
    add_device_options(check, shapes=False)
    check.set_defaults(func=problem_check_command)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def problem_check_command(args: argparse.Namespace) -> int:
    from kernelbench.eval.problem_check import check_problem
    from kernelbench.problems.problem import open_problem

    resolve_device_options(args)
    failed = 0
    for folder in args.problems:
        report = check_problem(open_problem(folder), device=args.device)
        print(f"{report.problem}: {'PASS' if report.passed else 'FAIL'}")
        for line in report.lines:
            print(f"  {line}")
        failed += not report.passed
    return 1 if failed else 0


def _register_hardware(subparsers) -> None:
    p = subparsers.add_parser("hardware", help="GPU profiles: show them, detect this GPU, calibrate ceilings")
    sub = p.add_subparsers(dest="hardware_command", metavar="COMMAND")
    show = sub.add_parser("show", help="print the profiles and the detected GPU")
    show.set_defaults(func=hardware_show)
    cal = sub.add_parser("calibrate", help="measure bf16/fp8 GEMM and copy ceilings beside the datasheet",
                         epilog=CALIBRATE_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    cal.add_argument("--json", action="store_true")
    cal.set_defaults(func=hardware_calibrate)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def hardware_show(args: argparse.Namespace) -> int:
    from kernelbench.hardware import PROFILES, detect_profile

    for profile in PROFILES.values():
        peaks = ", ".join(f"{k} {v:g}" for k, v in profile.peak_tflops.items())
        print(f"{profile.key:13} {profile.name}: {profile.sm_count} SMs, L2 {profile.l2_bytes / 2**20:g} MiB, "
              f"{profile.dram_gbps:g} GB/s, TFLOP/s: {peaks}")
    detected = detect_profile()
    print(f"detected: {detected.key if detected else 'none (no CUDA GPU that matches a profile)'}")
    return 0


def hardware_calibrate(args: argparse.Namespace) -> int:
    from kernelbench.eval.calibrate import calibrate
    from kernelbench.hardware import detect_profile

    profile = detect_profile()
    if profile is None:
        raise KernelBenchError("no CUDA GPU matching a hardware profile", hint="run this on the GPU machine")
    rows = calibrate(profile)
    if args.json:
        print(json.dumps({"gpu": profile.key, "l2_bytes": profile.l2_bytes, "rows": rows}, indent=2))
        return 0
    print(f"{profile.name} (detected L2 {profile.l2_bytes / 2**20:g} MiB)")
    for r in rows:
        measured = f"{r['measured']:.1f}" if r["measured"] else f"failed: {r.get('error')}"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        print(f"  {r['what']:42} measured {measured} {r['unit']}, datasheet {r['datasheet']}, ratio {ratio}")
    return 0


def _register_baselines(subparsers) -> None:
    p = subparsers.add_parser("baselines", help="time eager / torch.compile / SOTA lines on this GPU",
                              epilog=BASELINES_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", required=True, help="a problem folder, or 'all' for every folder in --problems")
    p.add_argument("--problems", type=Path, default=Path("problems"), help="the deck")
    p.add_argument("--lines", nargs="+", default=["eager", "compiled", "sota"], choices=["eager", "compiled", "sota"],
                   help="the lines to measure")
    add_device_options(p, shapes=False)
    p.set_defaults(func=baselines_command)


def problems_to_measure(value: str, deck: Path) -> list[tuple[Path, Layout | None]]:
    """One problem, or every problem of a deck folder in whatever layout it is written (a folder, or a file of a
    single-file layout), each with the layout it was found in (None: one named by the user, detected on opening)."""
    from kernelbench.problems.deck import deck_entries

    if value != "all":
        return [(Path(value), None)]
    entries: list[tuple[Path, Layout | None]] = [(entry.path, entry.layout) for entry in deck_entries(deck)]
    if not entries:
        raise KernelBenchError("no problem folders found", path=deck)
    return entries


def baselines_command(args: argparse.Namespace) -> int:
    from kernelbench.eval.baselines import measure_baselines, write_baselines
    from kernelbench.eval.progress import StepProgress
    from kernelbench.problems.problem import open_problem

    resolve_device_options(args)
    failures = 0
    entries = problems_to_measure(args.problem, args.problems)
    with StepProgress("baselines", total=len(entries), estimate=True) as progress:
        for folder, layout in entries:
            progress.step(folder.name)
            try:
                problem = open_problem(folder, layout)
                result = measure_baselines(problem, device=args.device, lines=tuple(args.lines),
                                           shapes="full" if args.device == "cuda" else "smoke")
            except KernelBenchError as exc:
                progress.note(f"{folder.name}: {exc}")
                failures += 1
                continue
            path = write_baselines(problem, result)
            summary = ", ".join(f"{k} {v.peak_fraction:.4f}" if v.peak_fraction is not None
                                else f"{k} n/a ({v.reason[:80]})" for k, v in result.lines.items())
            print(f"{problem.name}: {summary} → {path}")
    return 1 if failures else 0
