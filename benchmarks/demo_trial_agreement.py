"""How well repeated trials of one cell agree: the figures of the H100 scripted-baseline writeup.

    python benchmarks/demo_trial_agreement.py                      # runs/ of this repository, rich tables
    python benchmarks/demo_trial_agreement.py --markdown           # the writeup's table, as markdown
    python benchmarks/demo_trial_agreement.py --runs DIR --harness scripted --gpu h100_sxm

Groups the committed runs by cell (agent x problem x GPU) and, for every cell whose trials all PASS, prints each
trial's peak_fraction, the spread max/min - 1, and the worst per-shape spread of the median times; then how many
cells and per-shape medians agree within 1 %, 3 % and 10 %. Cells with any other status are listed with their
statuses so a departure from the expected outcome is visible. Reads result.json only (no transcripts).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelbench.errors import KernelBenchError
from kernelbench.results.run import RESULT_FILE, RunResult, Status, load_result

THRESHOLDS = (0.01, 0.03, 0.10)


@dataclass(frozen=True)
class Cell:
    agent: str
    problem: str
    gpu: str
    runs: tuple[RunResult, ...]  # ordered by trial

    @property
    def statuses(self) -> list[Status]:
        return [run.status for run in self.runs]

    @property
    def all_pass(self) -> bool:
        return all(status is Status.PASS for status in self.statuses)

    @property
    def peak_fractions(self) -> list[float | None]:
        return [run.grading.peak_fraction for run in self.runs]

    @property
    def spread(self) -> float | None:
        """max/min - 1 of the trials' peak fractions; None unless every trial passed with a positive score."""
        return spread_of(self.peak_fractions) if self.all_pass and len(self.runs) > 1 else None

    @property
    def shape_spreads(self) -> list[float]:
        """Per shape index, max/min - 1 of the trials' median times (shapes every trial timed)."""
        medians: dict[int, list[float | None]] = defaultdict(list)
        for run in self.runs:
            for shape in run.grading.shapes:
                medians[shape.index].append(shape.median_ms)
        spreads = [spread_of(values) for values in medians.values() if len(values) == len(self.runs)]
        return [value for value in spreads if value is not None]


def spread_of(values: list[float | None]) -> float | None:
    if not values or any(value is None or value <= 0 for value in values):
        return None
    return max(values) / min(values) - 1


def load_runs(runs_dir: Path) -> list[RunResult]:
    if not runs_dir.is_dir():
        raise KernelBenchError(f"no runs directory at {runs_dir}", path=runs_dir,
                               hint="pass --runs DIR, the folder that holds <run_id>/result.json")
    return [load_result(run_dir) for run_dir in sorted(runs_dir.iterdir()) if (run_dir / RESULT_FILE).is_file()]


def group_cells(results: list[RunResult], *, harness: str | None = None, gpu: str | None = None) -> list[Cell]:
    groups: dict[tuple[str, str, str], list[RunResult]] = defaultdict(list)
    for run in results:
        if (harness is None or run.harness == harness) and (gpu is None or run.gpu == gpu):
            groups[(run.agent, run.problem, run.gpu)].append(run)
    return [Cell(agent, problem, gpu_key, tuple(sorted(runs, key=lambda run: run.trial)))
            for (agent, problem, gpu_key), runs in sorted(groups.items())]


def count_within(values: list[float], threshold: float) -> int:
    return sum(1 for value in values if value <= threshold)


def summary_lines(cells: list[Cell]) -> list[str]:
    agreeing = [cell for cell in cells if cell.spread is not None]
    spreads = [cell.spread for cell in agreeing if cell.spread is not None]
    shapes = [value for cell in agreeing for value in cell.shape_spreads]
    if not spreads:
        return ["no cell has two or more passing trials"]
    cell_counts = ", ".join(f"{count_within(spreads, t)} within {t:.0%}" for t in THRESHOLDS)
    shape_counts = ", ".join(f"{count_within(shapes, t)} within {t:.0%}" for t in THRESHOLDS)
    cells_line = f"{len(spreads)} cells whose trials all PASS: {cell_counts}; median spread {statistics.median(spreads):.1%}"
    shapes_line = (f"{len(shapes)} per-shape medians of those cells: {shape_counts}; "
                   f"{len(shapes) - count_within(shapes, 0.10)} spread by more than 10%")
    return [cells_line, shapes_line]


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def score(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def trial_columns(cell: Cell) -> list[str]:
    return [f"{score(pf)} ({status.value})" if status is not Status.PASS else score(pf)
            for pf, status in zip(cell.peak_fractions, cell.statuses)]


def markdown_table(cells: list[Cell]) -> str:
    width = max((len(cell.runs) for cell in cells), default=0)
    header = ["agent", "problem", *[f"t{i + 1}" for i in range(width)], "spread", "worst shape"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for cell in cells:
        if cell.spread is None:
            continue
        worst = max(cell.shape_spreads, default=None)
        row = [f"`{cell.agent}`", cell.problem, *trial_columns(cell), percent(cell.spread), percent(worst)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def rich_table(cells: list[Cell]) -> Table:
    table = Table(title="trial agreement per cell (peak_fraction; spread = max/min - 1)")
    for column in ("agent", "problem", "gpu", "trials", "spread", "worst shape"):
        table.add_column(column)
    for cell in cells:
        table.add_row(cell.agent, cell.problem, cell.gpu, "  ".join(trial_columns(cell)),
                      percent(cell.spread), percent(max(cell.shape_spreads, default=None)))
    return table


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=Path(__file__).resolve().parent.parent / "runs",
                        help="folder of run directories (default: runs/ of this repository)")
    parser.add_argument("--harness", default=None, help="only this harness (e.g. scripted)")
    parser.add_argument("--gpu", default=None, help="only this GPU profile key (e.g. h100_sxm)")
    parser.add_argument("--markdown", action="store_true", help="print the passing cells as a markdown table")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console()
    try:
        cells = group_cells(load_runs(args.runs), harness=args.harness, gpu=args.gpu)
    except KernelBenchError as error:
        console.print(f"error: {error}", style="red", markup=False)
        return 2
    if args.markdown:
        print(markdown_table(cells))
    else:
        console.print(rich_table(cells))
    for line in summary_lines(cells):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
