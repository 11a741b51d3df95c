"""How wide the published numbers' noise is: the 95% bootstrap intervals of the runs in a data folder.

    python benchmarks/interval_widths.py [--data .] [--out benchmarks/results/interval_widths.md]

For every run with timed samples: each shape's median interval as a share of its median, and the score's
interval as a share of the score (kernelbench/eval/roofline.py:bootstrap_intervals). The intervals are computed
again from the recorded samples and compared with the stored ones (the bootstrap is seeded: they must agree). For
every board cell with at least three valid scored trials, the trials' range beside the shown trial's interval:
how much of the spread between gradings one grading's interval covers. Prints a Markdown report (and writes it to
--out when given). Nothing here is timed: the figures are the recorded samples' own.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

from kernelbench.base.models import Interval
from kernelbench.eval.roofline import bootstrap_intervals
from kernelbench.results.dataset import load_dataset
from kernelbench.results.leaderboard import TRIAL_SPREAD_MIN, build_cells, trials_of


def quantiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"n={len(ordered)}, median {100 * statistics.median(ordered):.2f}%, p90 {100 * p90:.2f}%, "
            f"max {100 * ordered[-1]:.2f}%")


def same(a: Interval | None, b: Interval | None) -> bool:
    """Equal up to the last bits of a float (the stored score went through JSON and the geometric mean)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a.low, b.low, rel_tol=1e-9) and math.isclose(a.high, b.high, rel_tol=1e-9)


def run_widths(dataset) -> tuple[list[float], list[float], dict[str, int], list[str]]:
    shape_widths, score_widths, widest = [], [], []
    counts = {"agree": 0, "differ": 0, "not stored": 0}
    for run_id, record in sorted(dataset.runs.items()):
        grading = record.result.grading
        if not any(s.samples_ms for s in grading.shapes):
            continue
        per_shape, score = bootstrap_intervals(grading.shapes)
        stored = [s.median_interval_ms for s in grading.shapes] + [grading.peak_fraction_interval]
        if all(interval is None for interval in stored):
            counts["not stored"] += 1  # graded before the intervals were recorded
        elif all(same(a, b) for a, b in zip(per_shape + [score], stored)):
            counts["agree"] += 1
        else:
            counts["differ"] += 1
        for shape, interval in zip(grading.shapes, per_shape):
            if interval is not None and shape.median_ms:
                width = (interval.high - interval.low) / shape.median_ms
                shape_widths.append(width)
                widest.append(f"{width:.4f} {run_id} shape {shape.index} ({len(shape.samples_ms)} samples)")
        if score is not None and grading.peak_fraction:
            score_widths.append((score.high - score.low) / grading.peak_fraction)
    widest.sort(reverse=True)
    return shape_widths, score_widths, counts, widest[:5]


def trial_rows(dataset) -> list[str]:
    rows = []
    for cell in build_cells(trials_of(dataset)):
        if cell.trial_range is None:
            continue
        low, high = cell.trial_range
        interval = cell.peak_interval
        shown = f"{100 * interval[0]:.2f}–{100 * interval[1]:.2f}%" if interval else "none"
        rows.append(f"| {cell.agent} | {cell.problem} | {cell.gpu} | {cell.n_scored} | "
                    f"{100 * low:.2f}–{100 * high:.2f}% | {shown} |")
    return rows


def report(data: Path) -> str:
    dataset = load_dataset(data)
    shape_widths, score_widths, counts, widest = run_widths(dataset)
    lines = [f"# Interval widths of the runs in `{data}`", "",
             f"Runs loaded: {len(dataset.runs)}; runs with timed samples: {sum(counts.values())}.", "",
             f"- a shape median's 95% interval, as a share of the median: {quantiles(shape_widths)}",
             f"- the score's 95% interval, as a share of the score: {quantiles(score_widths)}",
             (f"- intervals recomputed from the samples: equal to the stored ones in {counts['agree']} runs, "
              f"different in {counts['differ']}, not stored (graded before they were) in {counts['not stored']}"),
             "", "The widest shape intervals (share, run, shape):", ""]
    lines += [f"    {w}" for w in widest]
    rows = trial_rows(dataset)
    lines += ["", f"Cells with at least {TRIAL_SPREAD_MIN} valid scored trials: {len(rows)}", ""]
    if rows:
        lines += ["| agent | problem | gpu | scored trials | trials' range | shown trial's interval |",
                  "| --- | --- | --- | --- | --- | --- |", *rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("."), help="the data folder (runs/, annotations/)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    text = report(args.data)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
