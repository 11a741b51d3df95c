"""The trusted grading entry point (docs/grading.md, contract 3): `grade_solution` calls the named stages of
kernelbench.eval.stages in order and decides the verdict from what they recorded.

The grading process never imports the solution: every stage that runs it is a fresh process
(kernelbench.eval.worker), told its job and answering through the typed, signed messages of
kernelbench.eval.protocol. A guard that cannot load or run, or a stage that fails before the candidate is imported,
ends the grading as a harness error with the reason (kernelbench.eval.failures), never as a pass.
"""

from __future__ import annotations

import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.base.models import Environment, Finding, Grading, Outcome
from kernelbench.eval import verdict
from kernelbench.eval.environment import collect_environment
from kernelbench.eval.failures import GraderFault
from kernelbench.eval.grading import (
    STAGE_LIMITS_S,
    GradingOptions,
    GradingPlan,
    GradingState,
    scratch_dir,
)
from kernelbench.eval.integrity.templates import Snapshot
from kernelbench.eval.protocol import Line
from kernelbench.fileio import atomic_write_text
from kernelbench.problems.problem import Problem, as_problem

__all__ = ["STAGE_LIMITS_S", "GradeReport", "grade_solution", "template_paths"]


class StageAnnouncer(Protocol):
    """Told each stage's name as it starts, and how much work it holds where that is known."""

    def __call__(self, name: str, detail: str = "") -> None: ...


class GradeReport(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    grading: Grading
    integrity: list[Finding] = Field(default_factory=list)
    environment: Environment = Field(default_factory=Environment)
    check_log: str = ""
    benchmark_log: str = ""
    # wall seconds per grading stage, and the judge's own steps as judge.<step> (where a grading spends its time)
    stages: dict[str, float] = Field(default_factory=dict)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True) + "\n"


def template_paths(solution: Path, problem: Problem) -> list[Path]:
    """Files a solution must not edit: the problem's own and the workspace copies beside the solution."""
    return [*problem.files, *(solution.parent / n for n in problem.workspace_templates)]


def grade_solution(solution: Path, problem: Problem | Path, *, device: str = "cuda", shapes: str = "full",
                   out_dir: Path | None = None, line: Line = "candidate", lint: bool = True,
                   limits: dict[str, float] | None = None, timing: bool = True,
                   counters: bool = True, held_out: bool = True, sanitizer: bool = False,
                   exclusive: AbstractContextManager | None = None,
                   beside: AbstractContextManager | None = None,
                   stage: StageAnnouncer | None = None) -> GradeReport:
    """Grade one solution file against one problem (opened by the caller, or a problem folder to open); see
    kernelbench.eval.stages for the order of stages.

    `exclusive` is held around the stages that measure (counters, timing), `beside` around the other stages that
    use the GPU (correctness, launch audit, sanitizer, held-out judging): gradings that share a GPU run those side by
    side and measure with nothing else of theirs on it (kernelbench regrade --jobs). `stage` is told
    each stage's name as it starts (for progress). `held_out=False` skips the held-out stage (its result then says
    it was turned off): for callers that grade for another reason; every real grading keeps it on. `sanitizer`
    turns the sanitizer stage on (CUDA gradings only): off by default until benchmarks/gpu_sanitizer.py has shown on
    a GPU that the deck's honest solutions pass it and the planted ones fail it; off, its result says so."""
    started = time.monotonic()
    solution = Path(solution).resolve()
    options = GradingOptions(device=device, shapes=shapes, line=line, lint=lint, timing=timing, counters=counters,
                             held_out=held_out, sanitizer=sanitizer, limits=dict(limits or {}))
    state = GradingState(Grading(device=device, shapes_mode=shapes, has_solution=solution.is_file()))
    if not solution.is_file():
        state.grading.outcome = Outcome.NO_SOLUTION
        state.grading.reasons.append(f"no solution file at {solution}")
        return _finish(GradeReport(grading=state.grading), out_dir)
    problem = as_problem(problem)
    before = Snapshot.take(template_paths(solution, problem))
    isolation = ""
    try:
        from kernelbench.eval.integrity.hooks import load_guards

        guards = load_guards()
        try:
            with tempfile.TemporaryDirectory(prefix="kb-grade-", dir=scratch_dir()) as tmp:
                plan = GradingPlan.create(solution, problem, Path(tmp), options, guards)
                isolation = plan.isolation.note
                state.stages["setup"] = round(time.monotonic() - started, 3)
                correct = run_stages(plan, state, exclusive, stage, beside)
        finally:  # whatever ended the grading, the files it watched are put back
            state.findings += guards.template_findings(before, problem.watched_folder())
        conclude(plan, state, correct)
    except GraderFault as exc:  # the grading could not be carried out: never a verdict on the candidate
        state.grading.outcome = Outcome.HARNESS_ERROR
        state.grading.reasons.insert(0, f"grading aborted: {exc}")
        state.log.check.append(f"[grading aborted] {exc}")
    return _finish(report_of(state, options, problem, started, isolation), out_dir)


# the stages as run_stages announces them, in order
STAGES = ("lint", "correctness", "problem copy", "launch audit", "sanitizer", "counters", "timing",
          "speed of light", "baseline medians", "held-out", "held-out timing")


def run_stages(plan: GradingPlan, state: GradingState, exclusive: AbstractContextManager | None = None,
               stage: StageAnnouncer | None = None, beside: AbstractContextManager | None = None) -> bool:
    """Every stage in order (kernelbench.eval.stages); True when the solution passed every check. The measuring
    stages run inside `exclusive`, the others that use the GPU inside `beside` (each entered once per group of
    stages, never one inside the other); `stage` is told the name (one of STAGES) of each as it starts, and how
    much work it holds (cases, shapes) where that is known."""
    from kernelbench.eval.stages import audits, correctness, heldout, heldout_timing, sanitizer, timing

    announce: StageAnnouncer = stage or (lambda name, detail="": None)
    # `beside` is taken again for each stage, so a neighbour's measurement waiting for the GPU goes between them:
    # held across all of them, one slow host-driven solution (a check stage and a launch audit of four minutes
    # each) kept three gradings' measurements waiting seven minutes on one H100
    announce("lint")
    audits.lint(plan, state)
    with beside or nullcontext():
        announce("correctness", f"{len(plan.cases)} cases")
        correct = correctness.check(plan, state, stage)
    with beside or nullcontext():
        announce("problem copy")
        audits.problem_copy(plan, state)
        announce("launch audit")
        audits.launches(plan, state)
    with beside or nullcontext():
        # a memory error or race in the candidate's own kernels fails it as a wrong output would (nothing is timed)
        correct = not sanitizer.check(plan, state, correct, announce) and correct
    if correct:
        # the GPU alone only where something is measured: a grading without counters or timing never waits for it
        with exclusive if exclusive is not None and measures(plan) else nullcontext():
            announce("counters")
            audits.counters(plan, state)
            if plan.options.timing:
                announce("timing", f"{len(plan.shapes)} shapes")
                timing.bench(plan, state)
                announce("speed of light")
                audits.speed_of_light(plan, state)
                announce("baseline medians")
                timing.baseline_medians(plan, state)
        # once the verdict's stages have all run, and outside `exclusive`: the held-out judging measures nothing
        announce("held-out", f"{len(plan.heldout)} cases" if plan.options.held_out else "turned off")
    with beside or nullcontext():
        heldout.check(plan, state, correct)  # judged only where correct; otherwise it records why not
    if correct and plan.options.timing:
        with exclusive or nullcontext():
            announce("held-out timing")
            heldout_timing.bench(plan, state)  # the held-out shapes judged right, timed apart from the verdict
    return correct


def measures(plan: GradingPlan) -> bool:
    """Whether the grading measures anything on its device: the counter pass or the timing."""
    return plan.options.timing or (plan.options.counters and plan.guards.counters_apply(plan.device))


def conclude(plan: GradingPlan, state: GradingState, correct: bool) -> None:
    """The score (geometric mean of the shapes' fractions of the ceiling) and the outcome."""
    from kernelbench.eval.roofline import bootstrap_intervals, ceiling_of, geometric_mean

    grading = state.grading
    grading.peak_fraction = geometric_mean([s.fraction for s in grading.shapes]) if grading.shapes else None
    per_shape, grading.peak_fraction_interval = bootstrap_intervals(grading.shapes)
    for shape, interval in zip(grading.shapes, per_shape):
        shape.median_interval_ms = interval
    if state.profile is not None:
        grading.ceiling = ceiling_of(plan.spec, state.profile)
    verdict.decide(grading, state.findings, correct=correct and not state.wrong_timed_shapes, timed=state.timed,
                   shapes_expected=len(plan.shapes), unjudged=state.unjudged)


def report_of(state: GradingState, options: GradingOptions, problem: Problem, started: float,
              isolation: str) -> GradeReport:
    grading = state.grading
    grading.elapsed_s = time.monotonic() - started
    state.stages["total"] = round(grading.elapsed_s, 3)
    environment = collect_environment(options.device, state.profile, problem.content_hash, state.device_info)
    environment.isolation = isolation
    return GradeReport(grading=grading, integrity=state.findings, environment=environment,
                       check_log=state.log.check_text(state.stages), benchmark_log=state.log.bench_text(),
                       stages=state.stages)


def _finish(report: GradeReport, out_dir: Path | None) -> GradeReport:
    if out_dir is not None:
        out_dir = Path(out_dir)
        atomic_write_text(out_dir / "check.log", report.check_log)
        atomic_write_text(out_dir / "benchmark.log", report.benchmark_log)
        atomic_write_text(out_dir / "grade.json", report.dump_json())
    return report
