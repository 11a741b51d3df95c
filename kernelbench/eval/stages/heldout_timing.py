"""The held-out timing stage (docs/grading.md, "Held-out timing"): once the verdict's stages and the held-out judging
have run, the held-out shapes a passing candidate was judged right on are timed by the bench stage's own code
(kernelbench.eval.worker.bench), in a bench process of their own, with fewer trials and a time limit of their own.
Each shape's median and fraction of the ceiling are computed as a published shape's (stages.timing.shape_result),
and `HeldOut.relative_peak_fraction` sets them against the published shapes'.

Nothing here reaches the verdict: no finding is recorded, a failure is a note in `HeldOut.timing_note`, and the
published shapes' timings are read, never written. Since no verdict rests on them, the held-out timings are not
policed as the published ones are (no kept calls judged on fresh inputs, no grader's clock, no second timing);
the calls on the input set's own values (the in-place probe) are judged against the held-out check stage's
output, and a wrong one is a note."""

from __future__ import annotations

from kernelbench.base.models import Grading, HeldOut, ShapeResult
from kernelbench.eval.cases import Case, mix_seed
from kernelbench.eval.grading import GradingPlan, GradingState, run_stage
from kernelbench.eval.protocol import BenchJob, BenchReply, ShapeTiming, TimingSettings
from kernelbench.eval.roofline import geometric_mean, throughput
from kernelbench.eval.stages.heldout import SHAPE_LABEL
from kernelbench.eval.stages.heldout import STAGE as HELDOUT
from kernelbench.problems.spec import ProblemSpec

STAGE = "heldout_bench"
# the cost bound: per held-out shape at most this many timed calls and this many seconds of calls (the published
# shapes': the problem's trials, up to max_trials, within shape_seconds); the stage's limit is STAGE_LIMITS_S's
TRIALS = 10
SHAPE_SECONDS = 5.0


def bench(plan: GradingPlan, state: GradingState) -> None:
    """Time the held-out shapes judged right, where the candidate passed and its published shapes were timed."""
    held = state.grading.held_out
    if held is None or not held.checks or plan.options.line != "candidate" or not plan.options.timing:
        return
    if not_passed := published_shortfall(plan, state):
        held.timing_note = f"not timed: {not_passed}"
        return
    right = shapes_judged_right(plan, held)
    if not right:
        held.timing_note = "not timed: no held-out shape was judged right"
        return
    cases = [base_case(plan, index) for index in right]
    missing = missing_files(plan, cases)
    if missing:  # the bench stage would wait for them until its limit
        held.timing_note = f"not timed: {len(missing)} held-out grading files are missing (first: {missing[0]})"
        return
    restored = restore_graded_copy(plan)
    reply, error = time_cases(plan, state, cases)
    notes = [restored] if restored else []
    if reply is None:
        held.timing_note = "; ".join(notes + [f"not timed: {error or 'the held-out bench stage gave no reply'}"])[:1000]
        return
    first = len(plan.shapes)
    for index in right:
        timing = reply.shapes.get(first + index, ShapeTiming())
        result = held_shape_result(plan, state, index, timing)
        held.timings.append(result)
        if result.median_ms is None:
            notes.append(f"shape {index} {result.shape}: not timed: {timing_failure(timing)}")
        elif timing.memo_probe.startswith("failed"):  # timed, but a call on the set's own values was wrong
            notes.append(f"shape {index} {result.shape}: after its input was overwritten in place, a wrong "
                         f"output: {timing.memo_probe[len('failed: '):][:300]}")
        state.log.bench.append(f"[held-out] shape {index} {result.shape}: " + (
            f"median {result.median_ms:.4f} ms over {len(result.samples_ms)} calls" if result.median_ms is not None
            else "not timed"))
    held.relative_peak_fraction = relative_peak_fraction(plan.spec, state.grading, held.timings, len(right), notes)
    held.timing_note = "; ".join(notes)[:1000]


def published_shortfall(plan: GradingPlan, state: GradingState) -> str:
    """Why the published shapes' timing leaves nothing to compare with, or no pass ('' where it does neither)."""
    timed = [s for s in state.grading.shapes if s.median_ms is not None]
    if len(timed) < len(plan.shapes):
        return "not every published shape was timed"
    if state.wrong_timed_shapes or state.unjudged:
        return "the published shapes' timed calls did not all pass"
    if any(f.severity == "error" for f in state.findings):
        return "the grading has an integrity error (INVALID)"
    return ""


def restore_graded_copy(plan: GradingPlan) -> str:
    """The solution and problem copies put back as the verdict's stages saw them (the held-out stages ran candidate
    code); what was rewritten is a note here, the findings staying out of the verdict."""
    from kernelbench.eval.stages.audits import graded_copy, problem_copy

    scratch = GradingState(Grading(device=plan.device))
    graded_copy(plan, scratch)
    problem_copy(plan, scratch)
    if not scratch.findings:
        return ""
    return "put back before timing: " + "; ".join(f.message for f in scratch.findings)[:300]


def shapes_judged_right(plan: GradingPlan, held: HeldOut) -> list[int]:
    """The held-out shapes (not the property cases' shapes) all of whose cases passed, by index in `held.shapes`."""
    first = len(plan.shapes)
    shapes = {c.shape_index - first for c in plan.heldout if c.label == SHAPE_LABEL}
    failed = {c.shape_index for c in held.checks if not c.passed}
    judged = {c.shape_index for c in held.checks}
    return sorted(shapes & judged - failed)


def base_case(plan: GradingPlan, index: int) -> Case:
    """The held-out shape's judged base case, as the bench stage times a base case (its inputs and its checked
    output are the held-out judge's and check stage's)."""
    case = next(c for c in plan.heldout if c.shape_index == len(plan.shapes) + index and c.label == SHAPE_LABEL)
    return case.model_copy(update={"label": "base"})


def missing_files(plan: GradingPlan, cases: list[Case]) -> list[str]:
    """The timed cases' inputs (the held-out judge's) and checked outputs (the held-out check stage's)."""
    paths = []
    for case in cases:
        paths += [plan.workdir / "inputs" / f"in_{case.id}.kbt", plan.workdir / f"{HELDOUT}_check" / f"out_{case.id}.kbt"]
    return [p.name for p in paths if not p.is_file()]


def timing_settings(plan: GradingPlan) -> TimingSettings:
    """The published shapes' settings, fewer calls: at most TRIALS timed calls within SHAPE_SECONDS a shape, and
    no other input protocols compared."""
    settings = plan.timing_settings()
    return settings.model_copy(update={
        "trials": min(settings.trials, TRIALS), "max_trials": min(settings.max_trials, TRIALS), "stderr_target": 0.0,
        "compare_trials": 0, "max_seconds": min(settings.max_seconds or SHAPE_SECONDS, SHAPE_SECONDS)})


def time_cases(plan: GradingPlan, state: GradingState, cases: list[Case]) -> tuple[BenchReply | None, str]:
    """One bench process over the cases, none of its calls kept for a fresh stage (so none paced)."""
    job = BenchJob(**{**plan.job_fields(STAGE, cases), "timing": timing_settings(plan)},
                   expected_dir=str(plan.workdir / f"{HELDOUT}_check"), expected_prefix="out", judge_timed=True,
                   rotation_seed=mix_seed(0, plan.secret, HELDOUT, "rotation"), fresh_kept=0)
    run = run_stage(plan, state, job, name=STAGE)
    return run.reply_as(BenchReply), (run.error or "").splitlines()[0][:300] if run.error else ""


def held_shape_result(plan: GradingPlan, state: GradingState, index: int, timing: ShapeTiming) -> ShapeResult:
    """A published shape's result (median, spread, fraction of the ceiling), indexed by held-out shape."""
    from kernelbench.eval.stages.timing import shape_result

    return shape_result(plan, state, index, plan.heldout_shapes[index], timing)


def timing_failure(timing: ShapeTiming) -> str:
    return ((timing.guard_error or timing.error or "no samples").splitlines() or ["no samples"])[0][:300]


def relative_peak_fraction(spec: ProblemSpec, grading: Grading, timings: list[ShapeResult], expected: int,
                           notes: list[str]) -> float | None:
    """The held-out shapes' geometric-mean fraction of the ceiling over the published shapes' (the score's own
    aggregate). The ceiling is one number per problem and GPU, so this is the ratio of the geometric means of the
    roofline's throughput (TFLOP/s on a compute-bound problem, GB/s on a memory-bound one), which is also what it
    is on the CPU, where there is no ceiling. None unless every published and every held-out shape judged right has
    a throughput."""
    held = [throughput(spec, t) for t in timings if t.median_ms is not None]
    published = [throughput(spec, s) for s in grading.shapes]
    if len(held) < expected or any(v is None for v in held + published):
        if len(held) == expected:
            notes.append("no relative figure: the problem has no roofline throughput for a shape")
        else:
            notes.append("no relative figure: not every held-out shape judged right was timed")
        return None
    mean_held, mean_published = geometric_mean(held), geometric_mean(published)
    if not mean_held or not mean_published:
        notes.append("no relative figure: a throughput of zero")
        return None
    return mean_held / mean_published

