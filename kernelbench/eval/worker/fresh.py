"""The fresh stage (trusted code only): the timed calls the bench stage kept on fresh inputs (portable.fresh),
judged against the reference like checked outputs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelbench.eval.failures import GuardFailed, describe
from kernelbench.eval.protocol import CaseVerdict, FreshJob, FreshReply, KeptCall
from kernelbench.eval.worker.context import StageContext
from kernelbench.eval.worker.judge import Expected, Judge, add_oracle, judge_output, to_device
from kernelbench.problems.loader import inputs_device


def kept_fingerprint(ctx: StageContext, path: Path, weight: int) -> int:
    from kernelbench.eval.portable.fresh import fingerprint
    from kernelbench.eval.tensorfile import load_tensors

    device = "cuda" if ctx.job.device == "cuda" and ctx.torch.cuda.is_available() else "cpu"
    tensors, header = load_tensors(path, device)
    return fingerprint(tensors[0] if header.single else tuple(tensors), weight)


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
    model: Callable[..., Any] | None = None
    model_shape: int | None = None
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
                    base = ctx.reference.get_inputs(case.shape, case.seed, inputs_device(ctx.reference, ctx.device),
                                                    case=case.case, scale=case.scale)
                    drawn = (case.id, [to_device(x, ctx.device) for x in base])
                assert drawn[1] is not None  # this case's base set, drawn above
                inputs = freshen(drawn[1], record.seed)
            kept = Expected(inputs=inputs)
            assert model is not None  # this shape's model, built above
            with judge.clock.step("reference"), ctx.torch.no_grad():
                kept.expected = model(*inputs)
            add_oracle(judge, model, case, inputs, kept)
            label = f"{case.id} (timed call {record.call} of {record.of}, fresh inputs)"
            path = Path(job.bench_dir) / str(record.file)
            with judge.clock.step("compare"):
                verdicts[i] = judge_output(judge, label, case.oracle, path, kept)
                if not verdicts[i].passed:
                    against_earlier_answers(judge, case, model, drawn[1], record.earlier, kept, path, verdicts[i])
            if record.weight is not None:  # the output the call committed to (eval.pacing), by the same function
                verdicts[i].fingerprint = kept_fingerprint(ctx, path, record.weight)
        except GuardFailed as exc:
            verdicts[i] = CaseVerdict(guard_error=str(exc))
        except Exception as exc:  # the reference or the kept file: the verdict says which
            verdicts[i] = CaseVerdict(reference_error=describe(exc))
    if job.pacer_fd is not None and job.calibrate:
        with judge.clock.step("calibration"):
            calibrate(ctx, cases)
    return FreshReply(fresh=verdicts, clock=judge.clock.totals)


def against_earlier_answers(judge: Judge, case, model, base: list, earlier: list[tuple[int, int]], kept: Expected,
                            path: Path, verdict: CaseVerdict) -> None:
    """A wrong kept output compared with the reference's answers to inputs earlier calls saw: its base set as the
    checked calls saw it, then its base set under each earlier timed call's permutation (`earlier`, the grader's
    record of their seeds; an earlier call on another base set gives inputs no call saw, whose answer no kept output
    matches by chance). Within the case's tolerance of one of them, and not of its own, it is an answer kept from
    an earlier call under a key the permutation does not change (memoisation), which no wrong arithmetic gives.
    Only answers that differ from the fresh inputs' own beyond the tolerance count (an output invariant under the
    permutation tells nothing). The first match is recorded; without one, how far the output is from the base set's
    answer."""
    from kernelbench.eval.portable.fresh import freshen
    from kernelbench.eval.tensorfile import load_tensors

    torch = judge.ctx.torch
    device = "cuda" if judge.ctx.job.device == "cuda" and torch.cuda.is_available() else "cpu"
    tensors, header = load_tensors(path, device)
    out = tensors[0] if header.single else tuple(tensors)
    fresh_expected = to_device(kept.expected, device)
    first_miss: str | None = None
    candidates = [("its base set's inputs unpermuted", lambda: base)] + [
        (f"its base set under timed call {number}'s permutation", lambda seed=seed: freshen(base, seed))
        for number, seed in earlier]
    for what, inputs_of in candidates:
        inputs = to_device(inputs_of(), device)
        found = _compare_with_answer(judge, case, model, inputs, out, fresh_expected, to_device(kept.inputs, device),
                                     device)
        if found is None:
            continue  # this answer is the fresh inputs' own: nothing to tell apart
        matches, error = found
        if matches:
            verdict.matches_earlier_answer = True
            verdict.earlier_answer = f"within tolerance of the answer to {what}{error}"
            return
        first_miss = first_miss or f"not the answer to {what} either: {error[:200]}"
    verdict.earlier_answer = first_miss


def _compare_with_answer(judge: Judge, case, model, inputs: list, out, fresh_expected, fresh_inputs, device: str
                         ) -> tuple[bool, str] | None:
    """The kept output against the reference's answer to `inputs`: (within tolerance, the error or first message),
    or None where that answer is within tolerance of the fresh inputs' own."""
    from kernelbench.eval.portable.compare import compare_outputs

    tolerance = judge.comparer.tolerance_of(case)
    with judge.ctx.torch.no_grad():
        answer = to_device(model(*inputs), device)
    if not compare_outputs(answer, fresh_expected, tolerance, fresh_inputs, judge.comparer.index_outputs).messages:
        return None
    against = compare_outputs(out, answer, tolerance, inputs, judge.comparer.index_outputs)
    if against.messages:
        return False, against.messages[0]
    return True, f" (max abs error {against.max_abs_err:.4g})" if against.max_abs_err is not None else ""


def calibrate(ctx: StageContext, cases: dict) -> None:
    """What surrounds a paced timed call, without the call (eval.pacing): for each shape, `calibration_calls`
    times, the grader's nonce, the L2 flush, the inputs freshened, a synchronise, the grader's weight, the
    reference output fingerprinted, the commitment. The grader's clock over these is the overhead a candidate's
    paced calls carry beside their own work."""
    from kernelbench.eval.pacing import PacerClient
    from kernelbench.eval.portable.timing import L2Flusher, device_l2_bytes
    from kernelbench.eval.worker.context import launch_recorder, problem_code_files

    job = ctx.job
    assert isinstance(job, FreshJob) and job.pacer_fd is not None
    torch, device = ctx.torch, ctx.device
    pacer = PacerClient(job.pacer_fd)
    flush = L2Flusher(device, device_l2_bytes(device))
    # on the CPU the bench stage launch-audits every timed call, so its own steps around each call run under the
    # profiler and the problem-code watch (a Python trace function) too, which cost per op and per Python call:
    # measured under the same recorder, or the overhead would be too small (honest CPU gradings were refused)
    with launch_recorder(device, device.type == "cpu", problem_code_files(Path(job.problem_dir))):
        for index, case_id in sorted(job.calibrate.items()):
            calibrate_shape(ctx, pacer, flush, index, cases[case_id], job.calibration_calls)


def calibrate_shape(ctx: StageContext, pacer, flush, index: int, case, calls: int) -> None:
    from kernelbench.eval.portable.fresh import fingerprint, freshen

    torch, device = ctx.torch, ctx.device
    model = ctx.build_model(case.shape_index, case.shape)
    base = [to_device(x, device) for x in
            ctx.reference.get_inputs(case.shape, case.seed, inputs_device(ctx.reference, device), case=case.case,
                                     scale=case.scale)]
    with torch.no_grad():
        output = model(*base)
    for _ in range(calls):
        seed = pacer.ready(index)
        flush()
        freshen(base, seed)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        pacer.commit(index, fingerprint(output, pacer.done(index)))
