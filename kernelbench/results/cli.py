"""Commands of the results stage: `kernelbench import kernelbench-hard` and `kernelbench annotate new|check|todo`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelbench.results.verdicts import Verdict

RAW = argparse.RawDescriptionHelpFormatter

IMPORT_EXAMPLE = """example:
  kernelbench import kernelbench-hard published/leaderboard.json \\
      --annotations published/annotations --baselines published/problem_baselines.json --out /tmp/khard
  python build.py --data /tmp/khard --out /tmp/khard-site
"""
NEW_EXAMPLE = """example:
  kernelbench annotate new 20260428_040539_claude_claude-opus-4-7_01_fp8_gemm --verdict rubric_leak \\
      --quote solution.py:1-11 --quote solution.py:60-60
"""
CHECK_EXAMPLE = """example:
  kernelbench annotate check               # runs/ and annotations/ of the current folder
  kernelbench annotate check --data /tmp/khard
"""
TODO_EXAMPLE = """example:
  kernelbench annotate todo --data /tmp/khard --threshold 0.2
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    _register_import(subparsers)
    _register_annotate(subparsers)


# --------------------------------------------------------------------------------------------- import

def _register_import(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("import", help="import published results into a data directory",
                                   description="Import results published elsewhere.", epilog=IMPORT_EXAMPLE,
                                   formatter_class=RAW)
    kinds = parser.add_subparsers(dest="import_kind", metavar="FORMAT", required=True)
    hard = kinds.add_parser("kernelbench-hard", help="a KernelBench-Hard leaderboard.json",
                            description="Write runs/, annotations/ and problems/*/baselines/ for a published "
                                        "KernelBench-Hard board. Imported runs have no transcript. Exits 1 when "
                                        "some input was left out (each is listed), 2 when nothing could be read.",
                            epilog=IMPORT_EXAMPLE, formatter_class=RAW)
    hard.add_argument("leaderboard", type=Path, metavar="LEADERBOARD.json")
    hard.add_argument("--annotations", type=Path, metavar="DIR", help="folder of published annotation YAMLs")
    hard.add_argument("--baselines", type=Path, metavar="FILE", help="problem_baselines.json")
    hard.add_argument("--raw-baselines", type=Path, metavar="DIR",
                      help="per-shape benchmark output (default: raw_baselines/ beside --baselines)")
    hard.add_argument("--gpu", metavar="KEY", help="hardware profile key, when the board's name is not matched")
    hard.add_argument("--force", action="store_true", help="overwrite files that differ from the import")
    hard.add_argument("--out", type=Path, required=True, metavar="DIR", help="data directory to write")
    hard.set_defaults(func=_run_import)


def _run_import(args: argparse.Namespace) -> int:
    from kernelbench.results.importer import import_kernelbench_hard

    report = import_kernelbench_hard(args.leaderboard, args.out, annotations_dir=args.annotations,
                                     baselines_file=args.baselines, raw_baselines_dir=args.raw_baselines,
                                     gpu=args.gpu, force=args.force)
    for diagnostic in report.diagnostics:
        print(f"{diagnostic.severity}: {diagnostic}", file=sys.stderr)
    print(f"imported to {args.out} (gpu {report.gpu}): {report.runs} runs, {report.annotations} annotations, "
          f"{report.baselines} baselines files written; {report.unchanged} unchanged; "
          f"{len(report.kept)} differing files kept")
    return 1 if any(d.severity == "error" for d in report.diagnostics) else 0


# --------------------------------------------------------------------------------------------- annotate

def _register_annotate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("annotate", help="write and check audit annotations",
                                   description="Audit annotations: annotations/<run_id>.yaml.",
                                   epilog=NEW_EXAMPLE + CHECK_EXAMPLE + TODO_EXAMPLE, formatter_class=RAW)
    actions = parser.add_subparsers(dest="annotate_action", metavar="ACTION", required=True)

    new = actions.add_parser("new", help="start an annotation with quotes copied from the run",
                             description="Write annotations/<RUN_ID>.yaml (never overwrites) with the run's "
                                         "identity and the quoted lines copied verbatim.",
                             epilog=NEW_EXAMPLE, formatter_class=RAW)
    new.add_argument("run_id", metavar="RUN_ID")
    new.add_argument("--verdict", required=True, choices=[v.value for v in Verdict])
    new.add_argument("--quote", action="append", default=[], metavar="FILE:A-B",
                     help="lines A to B of a file in the run directory (repeatable)")
    new.add_argument("--summary", help="the summary paragraph (default: a TODO placeholder)")
    new.add_argument("--implication", help="what the verdict means for the score")
    _add_dirs(new)
    new.set_defaults(func=_run_new)

    check = actions.add_parser("check", help="verify every annotation and quote",
                               description="Verify every annotation: schema, known run, quotes verbatim. "
                                           "Exits 1 when anything is wrong.",
                               epilog=CHECK_EXAMPLE, formatter_class=RAW)
    _add_dirs(check)
    check.set_defaults(func=_run_check)

    todo = actions.add_parser("todo", help="list high-scoring cells nobody has annotated",
                              description="List unaudited cells: above the threshold and without annotation.",
                              epilog=TODO_EXAMPLE, formatter_class=RAW)
    todo.add_argument("--threshold", type=float, default=None, help="share of peak (default 0.10)")
    _add_dirs(todo)
    todo.set_defaults(func=_run_todo)


def _add_dirs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, default=Path("."), metavar="DIR",
                        help="folder holding runs/ and annotations/ (default: current folder)")
    parser.add_argument("--runs", type=Path, metavar="DIR", help="runs folder (default: DATA/runs)")
    parser.add_argument("--annotations", type=Path, metavar="DIR",
                        help="annotations folder (default: DATA/annotations)")


def _dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    return args.runs or args.data / "runs", args.annotations or args.data / "annotations"


def _run_new(args: argparse.Namespace) -> int:
    from kernelbench.results.authoring import new_annotation

    runs, annotations = _dirs(args)
    path = new_annotation(args.run_id, args.verdict, runs, annotations, args.quote, args.summary, args.implication)
    print(f"wrote {path}; fill in the TODO fields, then run: kernelbench annotate check")
    return 0


def _run_check(args: argparse.Namespace) -> int:
    from kernelbench.results.authoring import check_annotations
    from kernelbench.results.dataset import load_dataset

    runs, annotations = _dirs(args)
    dataset = load_dataset(args.data, runs_dir=runs, annotations_dir=annotations)
    report = check_annotations(dataset, annotations)
    for diagnostic in report.diagnostics:
        print(f"{diagnostic.severity}: {diagnostic}")
    states = ", ".join(f"{n} {state}" for state, n in report.quotes.items() if n)
    print(f"{report.annotations} annotations, quotes: {states or 'none'}; "
          f"{sum(d.severity == 'error' for d in report.diagnostics)} errors")
    return 0 if report.ok else 1


def _run_todo(args: argparse.Namespace) -> int:
    from kernelbench.results import leaderboard
    from kernelbench.results.dataset import load_dataset

    runs, annotations = _dirs(args)
    dataset = load_dataset(args.data, runs_dir=runs, annotations_dir=annotations)
    threshold = leaderboard.UNAUDITED_THRESHOLD if args.threshold is None else args.threshold
    cells = leaderboard.unaudited_cells(leaderboard.build_boards(dataset, unaudited_threshold=threshold))
    for cell in cells:
        print(f"{cell.peak_fraction:.4f}  {cell.gpu}  {cell.agent}  {cell.problem}  {cell.run_id}")
    print(f"{len(cells)} unaudited cells above {threshold:g} of peak"
          + ("; start one with: kernelbench annotate new RUN_ID --verdict clean" if cells else ""))
    return 0
