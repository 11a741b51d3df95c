"""Commands of the problems stage: `kernelbench problem check DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLE = """example:
  kernelbench problem check problems/04_kahan_softmax --device cpu
checks: problem.yaml is valid; the reference passes its own grading (smoke shapes on cpu, all shapes on cuda);
a perturbed and an all-zeros output are rejected."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("problem", help="work with problem folders")
    sub = p.add_subparsers(dest="problem_command", metavar="COMMAND")
    check = sub.add_parser("check", help="validate a problem: spec, reference, tolerance that can fail",
                           epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("problem_dir", type=Path, nargs="+", help="one or more problem folders")
    check.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    check.set_defaults(func=check_command)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def check_command(args: argparse.Namespace) -> int:
    from kernelbench.problems.check import check_problem

    failed = 0
    for problem_dir in args.problem_dir:
        report = check_problem(problem_dir, device=args.device)
        print(f"{report.problem}: {'PASS' if report.passed else 'FAIL'}")
        for line in report.lines:
            print(f"  {line}")
        failed += not report.passed
    return 1 if failed else 0
