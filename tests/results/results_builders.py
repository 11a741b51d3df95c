"""Builders of small hand-written results data for the tests."""

from __future__ import annotations

from kernelbench.results.run import Grading, Outcome, RunResult, ShapeResult

SOLUTION = '''\
"""A tiny honest solution."""
import torch  # noqa: F401

def kernel(x):\t# tab before the comment
    return x * 2   
# ünïcode line: value: {a: 1}
'''


def result(run_id: str = "20260101_000000_claude_opus_01_demo", *, harness: str = "claude", model: str = "opus",
           effort: str | None = "max", problem: str = "01_demo", gpu: str = "h100_sxm", status: str = "pass",
           peak: float | None = 0.3, trial: int = 1, source: str = "harness", **grading) -> RunResult:
    """A RunResult whose grading matches `status` (pass | fail | err | invalid)."""
    outcome = {"pass": Outcome.PASS, "fail": Outcome.CHECK_FAILED, "err": Outcome.NO_SOLUTION,
               "invalid": Outcome.INVALID}[status]
    fields = {"has_solution": status != "err", "correct": status in ("pass", "invalid"), "outcome": outcome,
              "peak_fraction": peak if status in ("pass", "invalid") else None}
    fields.update(grading)
    return RunResult(run_id=run_id, harness=harness, model=model, effort=effort, problem=problem, gpu=gpu,
                     trial=trial, source=source, grading=Grading(**fields))


def shapes(*pairs: tuple[float, float]) -> list[ShapeResult]:
    """ShapeResults from (candidate_ms, eager_ms) pairs."""
    return [ShapeResult(index=i, shape={"n": i}, median_ms=ms, baselines_ms={"eager": eager})
            for i, (ms, eager) in enumerate(pairs)]
