"""The held-out stage (docs/grading.md, "Held-out cases"): after every other stage, a judge and a check stage of
their own on the problem's held-out cases (kernelbench.problems.heldout), whose result goes to
`Grading.held_out` and nowhere else.

A pair of processes of its own, so that nothing that happens on a held-out case (a crash, a hang up to the
stage's limit, a broken CUDA context, a guard's finding) reaches the published cases' records or findings: the
verdict on the published shapes is the same with or without held-out cases.
"""

from __future__ import annotations

import time

from kernelbench.base.models import HeldOut, SeedResult
from kernelbench.eval import verdict
from kernelbench.eval.cases import Case
from kernelbench.eval.failures import GuardFailed
from kernelbench.eval.grading import GradingPlan, GradingState
from kernelbench.eval.process import finish_beside, finish_stage
from kernelbench.eval.protocol import DONE_MARKER, CaseRecord, CheckJob, CheckReply, JudgeJob, JudgeReply

STAGE = "heldout"
SHAPE_LABEL = "heldout:shape"  # a held-out shape's base case (cases.heldout_cases), the one timed where judged right
TURNED_OFF = "not judged: held-out judging was turned off for this grading by its caller (--held-out off)"


def check(plan: GradingPlan, state: GradingState, correct: bool) -> None:
    """Judge the held-out cases where the published ones passed with no integrity error (the column speaks of
    solutions that count; judging the others would cost a pair of processes for nothing); record the result in
    `state.grading.held_out`."""
    if plan.options.line != "candidate":  # the deck's own lines (eager, compiled, SOTA) are baselines, not entrants
        return
    if not plan.options.held_out:
        state.grading.held_out = HeldOut(note=TURNED_OFF)
        return
    if not plan.heldout:
        if plan.heldout_note:
            state.grading.held_out = HeldOut(note=plan.heldout_note)
        return
    seeds, first = plan.model_seeds(), len(plan.shapes)
    result = HeldOut(shapes=plan.heldout_shapes, heldout_hash=plan.heldout_hash,
                     weights_seeds=[seeds[first + j] for j in range(len(plan.heldout_shapes))])
    state.grading.held_out = result
    if not correct:
        result.note = "not judged: the solution failed on the published shapes"
        return
    if any(f.severity == "error" for f in state.findings):
        result.note = "not judged: the grading has an integrity error (INVALID)"
        return
    started = time.monotonic()
    try:
        records, reply = run_pair(plan, state)
    finally:
        state.clock(STAGE, started)
    if reply is None:
        result.note = "not judged: the held-out judge gave no reply (its stage log is in check.log)"
        return
    judge_all(plan, state, result, records, reply)


def run_pair(plan: GradingPlan, state: GradingState) -> tuple[dict[str, CaseRecord], JudgeReply | None]:
    """The held-out judge and check stages side by side, in folders of their own."""
    check_dir = plan.workdir / f"{STAGE}_check"
    limit = plan.options.limit(STAGE)
    judge = plan.start(JudgeJob(**{**plan.job_fields(f"{STAGE}_judge", plan.heldout), "check_dir": str(check_dir),
                                   "keep_ids": timed_ids(plan)}))
    checked = finish_beside(plan.start(CheckJob(**plan.job_fields(f"{STAGE}_check", plan.heldout))), judge, limit)
    state.log.stage(checked)
    check_dir.mkdir(exist_ok=True)
    (check_dir / DONE_MARKER).touch()
    judged = finish_stage(judge, limit + plan.options.limit("reference"))
    state.log.stage(judged)
    reply = checked.reply_as(CheckReply)
    if reply is None and checked.error:
        state.log.check.append(f"[held-out] the check stage gave no reply: {checked.error.splitlines()[0][:300]}")
    return (reply.cases if reply is not None else {}), judged.reply_as(JudgeReply)


def timed_ids(plan: GradingPlan) -> list[str]:
    """The cases whose inputs and checked outputs the held-out timing stage reads again (stages.heldout_timing)."""
    return [c.id for c in plan.heldout if c.label == SHAPE_LABEL] if plan.options.timing else []


def judge_all(plan: GradingPlan, state: GradingState, result: HeldOut, records: dict[str, CaseRecord],
              reply: JudgeReply) -> None:
    """One SeedResult per held-out case. A guard's finding on a held-out case fails that case (its message is the
    evidence); it is not a finding of the grading."""
    first = len(plan.shapes)
    for case in plan.heldout:
        try:
            seed_result = judge_one(case, records.get(case.id), reply.cases.get(case.id))
        except (verdict.ReferenceFailed, GuardFailed) as exc:
            result.checks = []
            result.note = f"not judged: {exc}"[:1000]
            state.log.check.append(f"[held-out] {result.note}")
            return
        result.checks.append(seed_result.model_copy(update={"shape_index": case.shape_index - first}))
        state.log.check.append(f"[held-out] {'PASS' if seed_result.passed else 'FAIL'} {case.label} {case.shape} "
                               f"seed {case.seed}" + (f"\n    {seed_result.message}" if seed_result.message else ""))
    result.correct = all(c.passed for c in result.checks)
    failed = [c for c in result.checks if not c.passed]
    if failed:
        where = failed[0].shape_index
        result.note = (f"{len(failed)} of {len(result.checks)} held-out cases failed; first: {failed[0].case} on "
                       f"{result.shapes[where]} (seed {failed[0].seed}, weights seed {result.weights_seeds[where]}): "
                       f"{failed[0].message}")[:1000]


def judge_one(case: Case, record: CaseRecord | None, judged) -> SeedResult:
    """The published cases' rule (verdict.judge_case), the seed being the case's own (it replays the inputs)."""
    seed_result, found = verdict.judge_case(case, record, judged)
    errors = [f"{f.class_name or f.check}: {f.message}" for f in found if f.severity == "error"]
    update: dict = {"seed": case.seed}
    if errors and seed_result.passed:
        update.update(passed=False, message="; ".join(errors)[:1000])
    return seed_result.model_copy(update=update)
