"""The timing stages: the bench stage times the candidate shape by shape (every timed output judged, stress inputs
mixed into the rotation, fresh inputs for every timed call), the fresh stage judges the timed calls it kept, and
the roofline turns medians into fractions of the hardware's ceiling. `shape_result` is shared with the baselines'
eager / compiled / SOTA lines (kernelbench.eval.baselines), which are timed by the very same bench stage."""

from __future__ import annotations

import statistics
from typing import Any

from kernelbench.base.models import Finding, ShapeResult
from kernelbench.eval import verdict
from kernelbench.eval.cases import Case, mix_seed
from kernelbench.eval.failures import GraderFault
from kernelbench.eval.gradelog import shape_line, timing_notes
from kernelbench.eval.grading import FRESH_KEPT_PER_SHAPE, GradingPlan, GradingState, run_stage
from kernelbench.eval.pacing import CALIBRATION_CALLS, PacedShape
from kernelbench.eval.protocol import BenchJob, BenchReply, FreshReply, KeptCall, ShapeTiming
from kernelbench.eval.roofline import score_shape
from kernelbench.eval.stages.conditions import record_conditions


def bench(plan: GradingPlan, state: GradingState) -> None:
    from kernelbench.eval.stages.audits import graded_copy

    state.timed = True
    graded_copy(plan, state)  # the bench stage imports the bytes the lint and the check stage saw
    missing = plan.missing_timing_files()
    if missing:
        state.findings += verdict.missing_files_findings(missing)
        state.grading.reasons.append(f"timing skipped: {len(missing)} grading files were deleted")
        return
    run = run_stage(plan, state, timed_job(plan, state, plan.timing_cases() + plan.timed_stress, timing=0))
    failure = run.failure
    if failure is not None and failure.before_candidate:
        raise GraderFault(f"the bench stage could not be prepared: {failure.fatal.splitlines()[0]}")
    state.findings += verdict.candidate_stage_findings("bench", failure or run.reply_as(BenchReply))
    reply = run.reply_as(BenchReply)
    if reply is None:  # killed, unsigned, or failed before timing
        state.grading.reasons.append(run.error or "the bench stage returned no timings")
        return
    paced = run.pacer.shapes if run.pacer is not None else None
    for index, shape in enumerate(plan.shapes):
        timing = reply.shapes.get(index, ShapeTiming())
        state.grading.shapes.append(candidate_shape(plan, state, index, shape, timing))
    if run.pacer is not None and run.pacer.violations:
        state.log.bench.append(f"pacer: {len(run.pacer.violations)} messages out of protocol; first: "
                               f"{run.pacer.violations[0]}")
    record_conditions(plan, state, run)
    audit_timed_launches(plan, state, reply.shapes)
    from kernelbench.eval.stages.audits import problem_copy

    problem_copy(plan, state)  # the fresh stage imports the problem copy a candidate stage could reach
    overheads = judge_fresh_calls(plan, state, reply.shapes, paced)
    if paced is not None:
        suspects: dict[int, list[Finding]] = {}
        for result in state.grading.shapes:
            below = external_clock(state, result, paced.get(result.index), overheads.get(result.index))
            if below:
                suspects[result.index] = below
        if suspects:
            time_again(plan, state, suspects)


def timed_job(plan: GradingPlan, state: GradingState, cases: list[Case], *, timing: int) -> BenchJob:
    """The bench stage's job: `cases` timed with every timed output judged against the check stage's, on a
    rotation of the grader's drawing; `timing` 0 is the first timing (folder bench), 1 a shape timed again."""
    out = "bench" if timing == 0 else f"bench-{AGAIN}"
    return plan.bench_job(cases, out_dir=str(plan.workdir / out), expected_dir=str(plan.workdir / "check"),
                          expected_prefix="out", judge_timed=True,
                          rotation_seed=mix_seed(timing, plan.secret, "rotation"), fresh_kept=FRESH_KEPT_PER_SHAPE,
                          error_sizes={c.id: state.error_sizes.get(c.id, []) for c in cases if c.label == "base"})


def external_clock(state: GradingState, result: ShapeResult, paced: PacedShape | None,
                   overhead_ms: float | None, *, again: bool = False) -> list[Finding]:
    """A shape's median weighed against the grader's own clock (eval.pacing), which the result also shows. More
    calls reported than paced is a finding at once; a median below the clock's floor is returned, a suspicion
    for `time_again` to settle, since a machine busy with other work lengthens every span the clock sees."""
    result.paced_calls = len(paced.spans_ms()) if paced else 0
    result.external_span_ms = paced.shortest_span_ms() if paced else None
    if result.median_ms is None:
        return []
    state.log.bench.append(
        f"shape {result.index}: grader's clock{' (timed again)' if again else ''}: {result.paced_calls} paced calls, "
        f"shortest span {_ms(result.external_span_ms)}, median {_ms(paced.median_span_ms() if paced else None)}, "
        f"overhead without a call {_ms(overhead_ms)} (published median {result.median_ms:.4f} ms)")
    counted = verdict.paced_count_findings(result.index, result.median_ms, len(result.samples_ms), paced)
    if counted:
        state.findings += counted
        return []
    return verdict.paced_floor_findings(result.index, result.median_ms, paced, overhead_ms, again=again)


AGAIN = "again"  # the second timing's folders: bench-again (the candidate's), fresh-again


def time_again(plan: GradingPlan, state: GradingState, suspects: dict[int, list[Finding]]) -> None:
    """The shapes whose published median fell below the grader's clock are timed again, in a new bench stage of
    their own, with their kept calls judged and the overhead measured again. Below the clock both times: the
    findings of both timings convict. Not the second time: the first is shown as a warning and the second timing
    replaces the first, so a candidate that lies only once gains nothing, and an honest kernel timed while the
    machine was busy is not convicted. Where the second timing cannot be had, the first findings stand."""
    from kernelbench.eval.stages.audits import graded_copy, problem_copy

    first = len(state.findings)
    graded_copy(plan, state)
    cases = [c for c in plan.timing_cases() + plan.timed_stress if c.shape_index in suspects]
    run = run_stage(plan, state, timed_job(plan, state, cases, timing=1), name="bench")
    reply = run.reply_as(BenchReply)
    state.findings += verdict.candidate_stage_findings("bench", run.failure or reply)
    if reply is None or run.pacer is None:
        for found in suspects.values():
            state.findings += found
        state.log.bench.append(f"timed again: {run.error or 'no timings'}; the first timing's findings stand")
        return
    retimed = {i: candidate_shape(plan, state, i, plan.shapes[i], reply.shapes.get(i, ShapeTiming()))
               for i in sorted(suspects)}
    record_conditions(plan, state, run, list(retimed.values()))
    audit_timed_launches(plan, state, reply.shapes)
    problem_copy(plan, state)
    again = {i: t for i, t in reply.shapes.items() if i in suspects}
    overheads = judge_fresh_calls(plan, state, again, run.pacer.shapes, bench_dir=f"bench-{AGAIN}",
                                  fresh_dir=f"fresh-{AGAIN}")
    for index, found in sorted(suspects.items()):
        settle_clock(state, index, found, retimed[index], run.pacer.shapes.get(index), overheads.get(index))
    state.findings[first:] = [f for i, f in enumerate(state.findings[first:], first)
                              if f not in state.findings[:i]]  # what both timings found once


def settle_clock(state: GradingState, index: int, found: list[Finding], result: ShapeResult,
                 paced: PacedShape | None, overhead_ms: float | None) -> None:
    """One suspect shape after its second timing (see `time_again`)."""
    below = external_clock(state, result, paced, overhead_ms, again=True)
    if result.median_ms is None or overhead_ms is None or below:  # not cleared by evidence: the first findings stand
        state.findings += found + below
        return
    state.findings += verdict.clock_settled_findings(index, found, result.median_ms)
    state.grading.shapes = [result if s.index == index else s for s in state.grading.shapes]
    state.log.bench.append(f"shape {index}: the second timing is published (median {result.median_ms:.4f} ms)")


def _ms(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.4f} ms"


def shape_result(plan: GradingPlan, state: GradingState, index: int, shape: dict[str, Any],
                 timing: ShapeTiming) -> ShapeResult:
    """One shape's timing as published: median and spread of the samples, and the roofline's numbers."""
    result = ShapeResult(index=index, shape=shape, flops=plan.spec.flops_of(shape), bytes=plan.spec.bytes_of(shape))
    if timing.error is not None or timing.guard_error is not None or not timing.samples_ms:
        return result
    samples = timing.samples_ms
    result.median_ms, result.spread_ms, result.samples_ms = statistics.median(samples), iqr(samples), samples
    result.timing_method = timing.method
    result.protocol, result.protocols = timing.protocol, dict(timing.protocols)
    scored = timing.protocols.get(timing.protocol) if timing.protocol else None
    if plan.device == "cuda" and scored is not None:
        result.host_median_ms = scored.host_median_ms
    if plan.device == "cuda":  # on the CPU every sample is the host's: nothing to tell apart
        result.host_bound_samples = timing.host_bound_samples
    score_shape(result, plan.spec, state.profile)
    return result


def candidate_shape(plan: GradingPlan, state: GradingState, index: int, shape: dict[str, Any],
                    timing: ShapeTiming) -> ShapeResult:
    """A candidate's shape: its result, and what the timing guards saw (or why it could not be timed)."""
    if timing.guard_error is not None:
        raise GraderFault(f"shape {index}: {timing.guard_error}")
    result = shape_result(plan, state, index, shape, timing)
    if result.median_ms is None:
        error = timing.error or "no samples"
        state.findings += verdict.timing_failure_findings(index, error, timing.refused_replay) + timing.integrity
        state.grading.reasons.append(f"timing failed on shape {index}: {verdict.first_line(error)}")
        state.log.bench.append(f"shape {index}: timing failed: {error}")
        if timing.refused_replay is not None:
            replayed = verdict.replay_summary(timing.refused_replay)
            state.grading.reasons.append(f"shape {index}: the refused timed call, called again outside the loop: "
                                         f"{replayed}")
            state.log.bench.append(f"shape {index}: the refused call again: {replayed}")
        if verdict.timed_output_wrong(timing):  # a wrong output, whenever it is met, fails the checks
            state.wrong_timed_shapes.append(index)
        return result
    state.findings += verdict.timing_guard_findings(index, timing, plan.device)
    if verdict.timed_output_wrong(timing):  # the in-place probe's call was wrong: a wrong output fails the checks
        state.wrong_timed_shapes.append(index)
        state.grading.reasons.append(f"shape {index}: after its input was overwritten in place, a wrong output: "
                                     f"{timing.memo_probe[len('failed: '):][:300]}")
    state.log.bench += timing_notes(index, timing)
    state.log.bench.append(shape_line(result, timing))
    return result


def iqr(samples: list[float]) -> float:
    if len(samples) < 4:
        return max(samples) - min(samples)
    q = statistics.quantiles(samples, n=4)
    return q[2] - q[0]


def audit_timed_launches(plan: GradingPlan, state: GradingState, shapes: dict[int, ShapeTiming]) -> None:
    """The launch audit of the timed calls (CPU gradings record them): only what the checked calls did not
    already show, so a library seen in both is reported once."""
    timed = {name for timing in shapes.values() for name in timing.launches}
    timed |= set(plan.guards.compiled_kernels(plan.build_env))
    fresh = sorted(timed - set(state.launches))
    if not plan.options.lint or not fresh:
        return
    from kernelbench.eval.stages.audits import machine_code

    state.add("launch audit, timed calls", plan.guards.timed_launch_findings(fresh, plan.spec,
                                                                             own=machine_code(plan, state).own))


def judge_fresh_calls(plan: GradingPlan, state: GradingState, shapes: dict[int, ShapeTiming],
                      paced: dict[int, PacedShape] | None = None, *, bench_dir: str = "bench",
                      fresh_dir: str = "fresh") -> dict[int, float | None]:
    """The timed calls kept on fresh inputs (portable.fresh), judged against the reference by a trusted process;
    unjudged timings are not published (the grading is then a benchmark failure). Paced (a candidate's): the
    grader's own choice of calls, nonces and commitments, not the bench stage's account of them; the fresh stage
    then also measures, per shape, the overhead around a paced call (returned: median ms per shape)."""
    records = [r for timing in shapes.values() for r in timing.fresh_kept]
    state.findings += verdict.refused_kept_findings(records)
    if paced is not None:
        verified: list[KeptCall] = []
        for index, timing in sorted(shapes.items()):
            if not timing.samples_ms:
                continue
            kept, found = verdict.paced_kept_findings(index, timing.fresh_kept, paced.get(index))
            verified += kept
            state.findings += found
        records = verified
    records = [r for r in records if r.file is not None]
    calibrate = calibration_cases(plan, shapes) if paced is not None else {}
    if not records and not calibrate:
        return {}
    run = run_stage(plan, state, plan.fresh_job(bench_dir=str(plan.workdir / bench_dir), fresh=records,
                                                out_dir=str(plan.workdir / fresh_dir),
                                                line="candidate", calibrate=calibrate,
                                                calibration_calls=CALIBRATION_CALLS.get(plan.device, 4) if calibrate else 0))
    overheads = {index: shape.median_span_ms() for index, shape in (run.pacer.shapes if run.pacer else {}).items()}
    reply = run.reply_as(FreshReply)
    state.stages.update({f"fresh.{k}": round(v, 3) for k, v in (reply.clock if reply else {}).items()})
    unjudged = fresh_unjudged(run.error, reply) if records else ""
    if unjudged:
        state.unjudged = f"the timed calls on fresh inputs could not be judged: {unjudged}"
        state.grading.reasons.append(state.unjudged)
        return overheads
    if reply is None:
        return overheads
    cases = {c.id: c for c in plan.timing_cases()}
    for record, judged in zip(records, reply.fresh):
        if judged.guard_error is not None:
            raise GraderFault(f"a kept timed call: {judged.guard_error}")
        state.findings += verdict.fresh_verdict_findings(cases[record.case], record, judged)
        if not judged.passed:  # a wrong output on inputs no earlier call saw fails the checks like any other
            index = cases[record.case].shape_index
            state.wrong_timed_shapes.append(index)
            also = f"; {judged.earlier_answer}" if judged.earlier_answer else ""
            state.grading.reasons.append(f"shape {index}: timed call {record.call} of {record.of}, on fresh inputs, "
                                         f"gave a wrong output: {(judged.messages or ['no output'])[0][:300]}{also}")
        state.findings += verdict.commitment_findings(record, judged)
        state.log.bench.append(fresh_line(cases[record.case].shape_index, record, judged.passed))
    return overheads


def calibration_cases(plan: GradingPlan, shapes: dict[int, ShapeTiming]) -> dict[int, str]:
    """Per timed shape, the base case whose inputs the fresh stage freshens to measure a paced call's overhead."""
    first: dict[int, str] = {}
    for case in plan.timing_cases():
        first.setdefault(case.shape_index, case.id)
    return {index: first[index] for index, timing in shapes.items() if timing.samples_ms and index in first}


def fresh_unjudged(error: str, reply: FreshReply | None) -> str:
    if reply is None:
        return (error or "no reply").splitlines()[0]
    first = next((v.reference_error for v in reply.fresh if v.reference_error is not None), None)
    return first.splitlines()[0] if first is not None else ""


def fresh_line(shape_index: int, record: KeptCall, passed: bool) -> str:
    return f"shape {shape_index}: fresh-input call {record.call} of {record.of} judged: {'ok' if passed else 'WRONG'}"


def baseline_medians(plan: GradingPlan, state: GradingState) -> None:
    """The problem's eager / compiled / SOTA lines measured on this GPU (`kernelbench baselines`), beside the
    candidate's: each line's peak fraction and its median per shape (full shapes only: the lines are timed there)."""
    from kernelbench.problems.baselines import load_baselines

    if state.profile is None or plan.options.shapes != "full":
        return
    path = plan.problem.baselines_file(state.profile.key)
    if not path.is_file():
        return
    for name, line in load_baselines(path).lines.items():
        state.grading.baselines[name] = line.peak_fraction if line.available else None
        by_index = line.median_ms_by_shape()
        for shape in state.grading.shapes:
            if shape.index in by_index:
                shape.baselines_ms[name] = by_index[shape.index]
