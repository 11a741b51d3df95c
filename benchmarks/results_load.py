"""How long loading and deriving the leaderboard takes for a large synthetic data directory.

    python benchmarks/results_load.py [--runs 1000] [--dir /tmp/kb-results-bench]

Writes N runs (several agents × problems × trials, some INVALID / FAIL / ERR, per-shape timings), annotations with
a verified quote for a tenth of them, then times `load_dataset`, `build_boards` and the two exports, and prints
the figures with peak memory. The data goes under /tmp, never inside the repository.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import time
from pathlib import Path

from kernelbench.results.annotation import Annotation, Quote
from kernelbench.results.dataset import load_dataset
from kernelbench.results.leaderboard import build_boards, export_csv, export_json
from kernelbench.results.run import Finding, Grading, Outcome, RunResult, ShapeResult
from kernelbench.results.yamlout import dump_annotation

SOLUTION = "".join(f"line {i}: x = x * {i}\n" for i in range(1, 201))


def synthetic_run(index: int, rng: random.Random) -> RunResult:
    agent, problem, trial = index % 20, (index // 20) % 10, index // 200 + 1
    outcome = rng.choices([Outcome.PASS, Outcome.CHECK_FAILED, Outcome.NO_SOLUTION, Outcome.INVALID],
                          [6, 2, 1, 1])[0]
    passed = outcome in (Outcome.PASS, Outcome.INVALID)
    shapes = [ShapeResult(index=i, shape={"n": 2 ** i}, median_ms=rng.uniform(0.05, 2.0),
                          baselines_ms={"eager": rng.uniform(0.1, 4.0), "sota": rng.uniform(0.05, 1.0)})
              for i in range(5)] if passed else []
    run = RunResult(run_id=f"20260101_{index:06d}_h{agent % 4}_m{agent}_{problem:02d}_p{problem}_t{trial}",
                    harness=f"h{agent % 4}", model=f"m{agent}", effort="high", problem=f"{problem:02d}_p{problem}",
                    gpu="h100_sxm" if index % 3 else "b200", trial=trial,
                    grading=Grading(has_solution=outcome is not Outcome.NO_SOLUTION, correct=passed,
                                    outcome=outcome, peak_fraction=rng.uniform(0, 0.8) if passed else None,
                                    shapes=shapes, baselines={"eager": 0.05, "compiled": 0.1, "sota": 0.3}))
    if outcome is Outcome.INVALID:
        run.integrity.append(Finding(check="launch_audit", **{"class": 1}, message="cuBLAS kernel launched"))
    return run


def write_deck(root: Path, n: int) -> None:
    rng = random.Random(7)
    for index in range(n):
        run = synthetic_run(index, rng)
        folder = root / "runs" / run.run_id
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(run.dump_json())
        (folder / "solution.py").write_text(SOLUTION)
        if index % 10 == 0:
            quote = Quote(file="solution.py", lines=[10, 19], label="loop", text="".join(
                SOLUTION.splitlines(keepends=True)[9:19]))
            note = Annotation(run_id=run.run_id, verdict="interesting", summary="s", implication="i", quotes=[quote])
            (root / "annotations").mkdir(exist_ok=True)
            (root / "annotations" / f"{run.run_id}.yaml").write_text(dump_annotation(note))


def timed(label: str, func):
    start = time.perf_counter()
    value = func()
    print(f"{label:<28} {time.perf_counter() - start:8.3f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kb-results-bench"))
    args = parser.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    timed(f"write {args.runs} runs", lambda: write_deck(args.dir, args.runs))
    dataset = timed("load_dataset", lambda: load_dataset(args.dir))
    boards = timed("build_boards", lambda: build_boards(dataset))
    timed("export json + csv", lambda: (export_json(boards, args.dir / "out" / "leaderboard.json"),
                                        export_csv(boards, args.dir / "out" / "leaderboard.csv")))
    cells = sum(len(b.cells) for b in boards)
    print(f"{len(dataset.runs)} runs, {len(dataset.annotations)} annotations, {len(dataset.diagnostics)} diagnostics,"
          f" {len(boards)} boards, {cells} cells")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
