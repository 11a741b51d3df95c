"""The fresh stage (trusted code only): the timed calls the bench stage kept on fresh inputs (portable.fresh),
judged against the reference like checked outputs."""

from __future__ import annotations

from pathlib import Path

from kernelbench.eval.failures import GuardFailed, describe
from kernelbench.eval.protocol import CaseVerdict, FreshJob, FreshReply, KeptCall
from kernelbench.eval.worker.context import StageContext
from kernelbench.eval.worker.judge import Expected, Judge, add_oracle, judge_output, to_device


def run_fresh(ctx: StageContext) -> FreshReply:
    """Rebuild each kept call's inputs from the problem's generator (the base case's seed, not the published file,
    which the candidate could have edited) and the call's permutation seed, run the reference, and compare the
    kept output like a checked one."""
    from kernelbench.eval.portable.fresh import freshen

    job = ctx.job
    assert isinstance(job, FreshJob)
    judge = Judge.open(ctx, oracle_everywhere=job.kahan)
    cases = {c.id: c for c in job.cases}
    records = job.fresh
    verdicts = [CaseVerdict() for _ in records]  # in the records' order, whatever order they are judged
    model, model_shape = None, None
    drawn: tuple[str | None, list | None] = (None, None)  # the last base set drawn: (case id, inputs)
    for i in sorted(range(len(records)), key=lambda i: (cases[records[i].case].shape_index, records[i].case)):
        record: KeptCall = records[i]
        case = cases[record.case]
        try:
            if model_shape != case.shape_index:
                model, model_shape = None, None
                with judge.clock.step("reference"):
                    model, model_shape = ctx.build_model(case.shape_index, case.shape), case.shape_index
            with judge.clock.step("inputs"):
                if drawn[0] != case.id:  # records of one base set come together often: draw it once
                    drawn = (None, None)
                    base = ctx.reference.get_inputs(case.shape, case.seed, "cpu", case=case.case, scale=case.scale)
                    drawn = (case.id, [to_device(x, ctx.device) for x in base])
                inputs = freshen(drawn[1], record.seed)
            kept = Expected(inputs=inputs)
            with judge.clock.step("reference"), ctx.torch.no_grad():
                kept.expected = model(*inputs)
            add_oracle(judge, model, case, inputs, kept)
            label = f"{case.id} (timed call {record.call} of {record.of}, fresh inputs)"
            with judge.clock.step("compare"):
                verdicts[i] = judge_output(judge, label, case.oracle, Path(job.bench_dir) / str(record.file), kept)
        except GuardFailed as exc:
            verdicts[i] = CaseVerdict(guard_error=str(exc))
        except Exception as exc:  # the reference or the kept file: the verdict says which
            verdicts[i] = CaseVerdict(reference_error=describe(exc))
    return FreshReply(fresh=verdicts, clock=judge.clock.totals)
