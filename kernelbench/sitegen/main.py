"""`python build.py`: build the site from runs/, annotations/ and problems/ (see --help)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import NoReturn

from kernelbench.errors import Diagnostic, KernelBenchError
from kernelbench.sitegen.pipeline import REPO, BuildConfig, BuildReport, build_site

EXAMPLES = """examples:
  python build.py                                   # site/ from this repository's runs/ and annotations/
  python build.py --strict                          # fail (exit 1) if any input has a problem
  python build.py --data /tmp/imported --out /tmp/site   # a data folder written by `kernelbench import`
  python build.py --serve                           # http://127.0.0.1:8000, rebuilt and reloaded on every edit
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python build.py",
        description=__doc__.splitlines()[0],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=REPO,
        metavar="DIR",
        help="folder holding runs/ and annotations/ (and optionally problems/); default: the repository",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default: site/); refused when it is, contains or lies inside the data "
        "(the build replaces it whole)",
    )
    parser.add_argument(
        "--problems",
        type=Path,
        default=None,
        metavar="DIR",
        help="problem deck (default: DATA/problems when it exists)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit non-zero if any input problem is reported"
    )
    parser.add_argument("--watch", action="store_true", help="rebuild whenever an input changes")
    parser.add_argument(
        "--serve",
        nargs="?",
        type=int,
        const=8000,
        default=None,
        metavar="PORT",
        help="serve on 127.0.0.1:PORT (default 8000), rebuild on changes, reload the open page",
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="worker processes for run pages (default: CPUs)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--timings", action="store_true", help="print the time each build stage took")
    return parser.parse_args(argv)


def config_from(args: argparse.Namespace) -> BuildConfig:
    config = BuildConfig(
        data_dir=args.data.resolve(),
        out_dir=(args.out or REPO / "site").resolve(),
        problems_dir=args.problems.resolve() if args.problems else None,
        strict=args.strict,
        progress=not args.quiet and sys.stderr.isatty(),
    )
    if args.jobs:
        config.jobs = args.jobs
    return config


def print_report(report: BuildReport, strict: bool, timings: bool = False) -> None:
    from rich.console import Console

    console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)
    for diag in report.diagnostics:
        console.print(f"{diag.severity}: {diag}", style="red" if diag.severity == "error" else "yellow")
    summary = (
        f"built {report.out_dir} in {report.seconds:.2f} s: {report.pages} pages, "
        f"{report.rendered} rendered, {report.pages - report.rendered} unchanged"
    )
    if report.diagnostics:
        summary += f"; {len(report.diagnostics)} problem(s) reported" + (
            " (--strict: failing)" if strict else ""
        )
    console.print(summary, style="bold")
    if timings:
        console.print(
            "stages: " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in report.timings.items())
            + f"; {report.cpu_s:.3f} CPU-s in the building process"
        )


def main(argv: list[str] | None = None, held: list | None = None) -> int:
    """`held`: see `pipeline.build_site` (a command's own process, `command`)."""
    args = parse_args(argv)
    config = config_from(args)
    try:
        if args.serve is not None or args.watch:
            from kernelbench.sitegen.server import run_dev_loop

            def show(result: BuildReport, strict: bool) -> None:
                print_report(result, strict, args.timings)

            return run_dev_loop(config, port=args.serve, print_report=show)
        report = build_site(config, held=held)
    except KernelBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; the previous site is untouched", file=sys.stderr)
        return 130
    print_report(report, config.strict, args.timings)
    return 1 if config.strict and report.diagnostics else 0


def command() -> NoReturn:
    """`python build.py`: `main`, then the process ends at once, its output flushed. A build of ten thousand runs
    leaves half a million objects (the deck loaded, its views and pages planned, the runs tables' rows); freeing them
    one by one, when the build returns and again as the interpreter shuts down, took a third of a second of a
    rebuild's wall time for nothing: the build hands them over (`held`) and the process's end frees them all. Every
    file the build writes is closed and swapped in before it returns; a spare site is deleted by a process of its
    own (output.discard); the render workers have ended. Under a profiler or a tracer (cProfile, coverage), which
    write what they found as the interpreter ends, it ends as any program does."""
    held: list = []
    code = main(held=held)
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


__all__ = ["main", "command", "Diagnostic"]
