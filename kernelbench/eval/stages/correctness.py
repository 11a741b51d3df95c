"""The correctness stage: the judge (trusted) and the candidate's check stage run side by side. Inputs flow to the
candidate as files, outputs flow back as files, expected values never leave the judge's memory; the judge's
verdicts and the check stage's guard records become one SeedResult per case."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.eval import verdict
from kernelbench.eval.failures import GraderFault
from kernelbench.eval.gradelog import case_line
from kernelbench.eval.grading import GradingPlan, GradingState
from kernelbench.eval.process import StageRun, finish_beside, finish_stage
from kernelbench.eval.protocol import DONE_MARKER, PROGRESS_FILE, CaseRecord, CheckReply, JudgeReply


def check(plan: GradingPlan, state: GradingState, announce: Callable[[str, str], None] | None = None) -> bool:
    """True when every case passed and the check stage returned its records. `announce` is told how many cases
    the judge has settled as it goes ("correctness", "case 4 of 15")."""
    started = time.monotonic()
    check_dir = plan.workdir / "check"
    from kernelbench.eval.stages.sanitizer import kept_cases

    keep = [c.id for c in plan.timing_cases() + plan.timed_stress] if plan.options.timing or plan.options.counters \
        else []
    keep += [c.id for c in kept_cases(plan) if c.id not in keep]  # the sanitizer stage calls on one of them
    judge = plan.start(plan.judge_job(plan.cases, check_dir=str(check_dir), keep_ids=keep))
    checked = finish_beside(plan.start(plan.check_job()), judge, plan.options.limit("check"),
                            cases_judged(judge.out_dir, announce) if announce is not None else None)
    state.log.stage(checked)
    check_dir.mkdir(exist_ok=True)
    (check_dir / DONE_MARKER).touch()
    judged = finish_stage(judge, plan.options.limit("check") + plan.options.limit("reference"))
    state.log.stage(judged)
    state.stages["check"], state.stages["judge"] = round(checked.elapsed_s, 3), round(judged.elapsed_s, 3)
    state.clock("correctness", started)
    reply = judge_reply(plan, judged)
    state.note_device(reply.device_info, plan.device)
    state.stages.update({f"judge.{k}": round(v, 3) for k, v in reply.clock.items()})
    state.findings += verdict.republished_findings(reply.republished)
    records = check_records(state, checked)
    for case in plan.cases:
        judged_case = reply.cases.get(case.id)
        state.error_sizes[case.id] = judged_case.error_size if judged_case is not None else []
        if judged_case is not None and judged_case.output_digest is not None:
            state.judged_digests[case.id] = judged_case.output_digest
        try:
            result, found = verdict.judge_case(case, records.get(case.id), judged_case)
        except verdict.ReferenceFailed as exc:
            raise KernelBenchError(f"the reference failed: {exc}", path=plan.problem.reference_file) from None
        state.grading.checks.append(result)
        state.findings += found
        state.log.check.append(case_line(case, result))
    shape_of = {case.id: case.shape_index for case in plan.cases}
    for case_id, record in records.items():
        per_shape = state.launches_by_shape.setdefault(shape_of.get(case_id, -1), {})
        for name, t in (record.launches or {}).items():
            state.launches[name] = state.launches.get(name, 0.0) + t
            per_shape[name] = per_shape.get(name, 0.0) + t
    failed = [c for c in state.grading.checks if not c.passed]
    if failed:
        state.grading.reasons.append(f"{len(failed)} of {len(state.grading.checks)} checks failed; first: "
                                     f"shape {failed[0].shape_index} {failed[0].case}: {failed[0].message}")
    return not failed and checked.reply is not None


# what torch says when code reaches for CUDA on a machine (or a torch build) without it
CUDA_MISSING = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "Found no NVIDIA driver",
                "CUDA driver initialization failed")


def cases_judged(judge_dir: Path, announce: Callable[[str, str], None]) -> Callable[[], None]:
    """A poll of the judge's progress file that tells `announce` each new count (display only: a judge that wrote
    nothing, or a count that does not parse, is simply not shown)."""
    shown = [""]

    def poll() -> None:
        try:
            judged, total = (Path(judge_dir) / PROGRESS_FILE).read_text().split()
        except (OSError, ValueError):
            return
        if judged != shown[0]:
            shown[0] = judged
            announce("correctness", f"case {int(judged)} of {int(total)} judged")
    return poll


def judge_reply(plan: GradingPlan, judged: StageRun) -> JudgeReply:
    reply = judged.reply_as(JudgeReply)
    if reply is None:
        raise reference_failed(plan.problem.folder, judged.error)
    return reply


def reference_failed(where: Path, error: str) -> KernelBenchError:
    """The reference's process gave no reply: its first line only (the traceback is in the stage log that --out
    keeps). A reference that reached for CUDA where there is none needs a GPU; it is not broken."""
    if any(marker in error for marker in CUDA_MISSING):
        return KernelBenchError("this problem needs a CUDA GPU and this machine has none: grade it on a GPU machine",
                                path=where)
    first = next((line for line in error.strip().splitlines() if line.strip()), "it gave no reply")
    return KernelBenchError(f"the reference failed to run: {first}", path=where,
                            hint="run `kernelbench problem check` on this problem; --out DIR keeps the stage logs")


def check_records(state: GradingState, checked: StageRun) -> dict[str, CaseRecord]:
    """The check stage's records per case. A stage that failed before the candidate was imported is the grader's
    failure; without a reply at all, every case counts as not run (the candidate's process ended)."""
    failure = checked.failure
    if failure is not None and failure.before_candidate:
        raise GraderFault(f"the check stage could not be prepared: {failure.fatal.splitlines()[0]}")
    if checked.reply is None:
        state.grading.reasons.append(checked.error)
        state.findings += verdict.signature_findings(checked.error)
    elif failure is not None:  # the candidate failed to import or build: its error is the reason, not the cases
        state.grading.reasons.append(f"check stage failed: {failure.fatal.strip().splitlines()[0][:500]}")
    state.findings += verdict.candidate_stage_findings("check", failure or checked.reply_as(CheckReply))
    reply = checked.reply_as(CheckReply)
    return reply.cases if reply is not None else {}
