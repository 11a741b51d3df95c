"""A stage process from start to end: read the job, prepare the stage, run its role, write the signed reply.

The job arrives on stdin and is validated before any candidate code is imported; the reply is encoded with
functions bound when this module was imported (before any candidate code: rebinding the names later changes
nothing). A trusted stage (judge, fresh) signs it with a key that travels on stdin only, so a file a candidate
writes cannot pass for the judge's reply. A candidate stage gets no key: whatever its process holds, the candidate
can read and use, so its reply is taken as the candidate's claim and checked against evidence gathered outside it. A failure while the stage is prepared (the problem loaded, a candidate
stage's guards armed) is told apart from one after the candidate was imported: only the latter can be the
candidate's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernelbench.eval.failures import describe
from kernelbench.eval.protocol import (
    CANDIDATE_ROLES,
    RESULT,
    SIGNATURE,
    BenchJob,
    BenchReply,
    CheckReply,
    FreshReply,
    JudgeReply,
    Message,
    StageFailure,
    StageInput,
    StageJob,
    sign,
)

if TYPE_CHECKING:  # imported inside the stage's preparation, where a failure is reported as the grader's
    from kernelbench.eval.worker.arming import CandidateGuards
    from kernelbench.eval.worker.context import StageContext

REPLY_ENCODERS: dict[type[Message], Callable[..., bytes]] = {
    kind: kind.__pydantic_serializer__.to_json
    for kind in (JudgeReply, CheckReply, BenchReply, FreshReply, StageFailure)
}


def main() -> int:
    stage_input = StageInput.model_validate_json(sys.stdin.buffer.read())
    key = bytes.fromhex(stage_input.key) if stage_input.key else None
    job = stage_input.job
    del stage_input
    encoders, mac = dict(REPLY_ENCODERS), sign  # bound before any candidate code
    reply = run_stage(job)
    data = encoders[type(reply)](reply, by_alias=True)
    out_dir = Path(job.out_dir)
    (out_dir / RESULT).write_bytes(data)
    if key is not None:  # a trusted stage's (a candidate stage has no key: its reply is a claim)
        (out_dir / SIGNATURE).write_text(mac(key, data))
    os._exit(0)  # skip atexit hooks and finalisers a candidate may have registered


@dataclass
class PreparedStage:
    """A stage ready to run its role: the context, and a candidate stage's armed guards."""

    ctx: StageContext
    guards: CandidateGuards | None = None

    def failure(self, fatal: str, before_candidate: bool) -> StageFailure:
        refused = self.guards.refused() if self.guards is not None else []
        return StageFailure(fatal=fatal, before_candidate=before_candidate, introspection=refused)


def run_stage(job: StageJob) -> Message:
    """The role's reply, or a StageFailure: a candidate's SystemExit or a failed import is recorded, not obeyed."""
    try:
        stage = prepare(job)
    except BaseException as exc:  # noqa: BLE001  (no candidate code has run: the grader's or the problem's failure)
        return StageFailure(fatal=describe(exc), before_candidate=True)
    try:
        return run_role(stage)
    except BaseException as exc:  # noqa: BLE001  (after the candidate was imported: recorded as its stage's end)
        return stage.failure(describe(exc), before_candidate=job.role not in CANDIDATE_ROLES)


def prepare(job: StageJob) -> PreparedStage:
    """Trusted steps only: the problem loaded; a candidate stage's guards armed, the trusted stages' flags pinned."""
    from kernelbench.eval.portable import guards
    from kernelbench.eval.worker.context import open_stage

    ctx = open_stage(job)
    if job.role not in CANDIDATE_ROLES:
        guards.pin_backend_flags()
        return PreparedStage(ctx)
    from kernelbench.eval.worker.arming import arm

    modules = [job.module] + ([line.module for line in job.lines] if isinstance(job, BenchJob) else [])
    return PreparedStage(ctx, arm(modules))


def run_role(stage: PreparedStage) -> Message:
    ctx = stage.ctx
    if ctx.job.role == "judge":
        from kernelbench.eval.worker.judge import run_judge

        return run_judge(ctx)
    if ctx.job.role == "fresh":
        from kernelbench.eval.worker.fresh import run_fresh

        return run_fresh(ctx)
    return run_candidate(stage)


def run_candidate(stage: PreparedStage) -> Message:
    """The check or bench stage: the candidate imported under the armed guards; what the guards saw joins the
    reply (also when the stage fails: StageFailure keeps what the introspection guard refused)."""
    from kernelbench.eval.portable import guards
    from kernelbench.problems.loader import load_solution

    ctx = stage.ctx
    assert stage.guards is not None
    if ctx.job.role == "bench":
        from kernelbench.eval.worker.bench import time_lines

        lines, shapes = time_lines(ctx, load_solution)
        return BenchReply(lines=lines, shapes=shapes, **stage.guards.report().model_dump())
    from kernelbench.eval.worker.check import run_cases

    candidate = None if ctx.line == "eager" else load_solution(Path(ctx.job.module), ctx.line)
    guards.pin_backend_flags()
    records = run_cases(ctx.with_line(ctx.line, candidate))
    return CheckReply(cases=records, **stage.guards.report().model_dump())
