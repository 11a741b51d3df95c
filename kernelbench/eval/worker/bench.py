"""The bench stage: one line timed shape by shape under the timing protocol (portable.timing), every timed output
validated (TimedJudge), stress inputs mixed into the rotation, a few windows of timed calls audited by kernel name
on a GPU (audit.py), and a few timed calls on fresh inputs kept for the fresh stage. The candidate and the eager /
compiled / SOTA lines of `kernelbench baselines` go through the very same code."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelbench.base.models import ProtocolTiming
from kernelbench.eval.cases import Case
from kernelbench.eval.failures import GuardFailed, describe
from kernelbench.eval.portable.fresh import Reservoir
from kernelbench.eval.protocol import BenchJob, KeptCall, LineTiming, RefusedCallReplay, ShapeTiming
from kernelbench.eval.worker.audit import mix_rotation_seed, timed_audit
from kernelbench.eval.worker.context import StageContext, exact_tensors, launch_recorder
from kernelbench.eval.worker.timed_judge import TimedJudge


def time_lines(ctx: StageContext, load_solution) -> tuple[dict[str, LineTiming], dict[int, ShapeTiming]]:
    """Time one or several lines (a candidate; or eager, compiled and SOTA) in this one process; the first line's
    shapes come back beside them (a candidate grading times one line)."""
    from kernelbench.eval.portable import guards

    job = ctx.job
    assert isinstance(job, BenchJob)
    if job.pacer_fd is not None and ctx.pacer is None:  # made before the candidate is imported
        from kernelbench.eval.pacing import PacerClient

        ctx = replace(ctx, pacer=PacerClient(job.pacer_fd))
    lines = job.bench_lines()
    results: dict[str, LineTiming] = {}
    for line in lines:
        try:
            candidate = None if line.line == "eager" else load_solution(Path(line.module), line.line)
            guards.pin_backend_flags()
            results[line.line] = LineTiming(shapes=time_shapes(ctx.with_line(line.line, candidate)))
        except Exception as exc:  # the line could not be loaded: its own error, the other lines still timed
            results[line.line] = LineTiming(error=describe(exc))
    first = results[lines[0].line]
    if first.error is not None and len(lines) == 1:
        raise RuntimeError(first.error)
    return results, first.shapes


def time_shapes(ctx: StageContext) -> dict[int, ShapeTiming]:
    by_shape: dict[int, list[Case]] = {}
    for case in ctx.job.cases:
        by_shape.setdefault(case.shape_index, []).append(case)
    results = {}
    for index, cases in sorted(by_shape.items()):
        try:
            results[index] = bench_shape(ctx, index, cases)
        except GuardFailed as exc:
            results[index] = ShapeTiming(guard_error=str(exc))
        except Exception as exc:  # the line raised on this shape: no samples, the reason kept
            results[index] = ShapeTiming(error=describe(exc))
    return results


def bench_shape(ctx: StageContext, index: int, cases: list[Case]) -> ShapeTiming:
    from kernelbench.eval.portable import guards, timing

    torch, device, job = ctx.torch, ctx.device, ctx.job
    assert isinstance(job, BenchJob)
    model = ctx.build_model(index, cases[0].shape)
    # base cases are timed; stress cases (a candidate grading's) are mixed into the rotation, judged, not timed
    base = [c for c in cases if c.label == "base"]
    stress = [c for c in cases if c.label != "base"]
    ordered, n_base = base + stress, len(base)
    input_sets = [ctx.inputs(c.id) for c in ordered]
    judged = TimedJudge(ctx, ordered, input_sets)
    spec = job.timing
    pinned = guards.pin_backend_flags()
    # on the CPU the timed calls run under the launch audit too (CPU timings are smoke, not published): a candidate
    # that tells the timed stage from the checked one (by the profiler's state, its call cadence, files) and calls
    # a library only when timed is seen here; on a GPU the recorder's cost would move the medians, so it records a
    # few secret windows of timed calls (timed_audit), left out of the samples, and the counter pass audits an
    # unprofiled call
    problem_code = ctx.problem_code()
    audit_timed = device.type == "cpu" and bool(problem_code)
    invalid, refused = None, None
    fresh = Reservoir(job.fresh_kept, lambda out: kept_copy(torch, out), pacer=ctx.pacer, shape=index)
    audit = timed_audit(ctx, index, len(input_sets) / n_base) if device.type == "cuda" and problem_code else None
    with torch.no_grad(), launch_recorder(device, audit_timed, problem_code) as launches:
        try:
            result = timing.time_function(
                model, input_sets[:n_base], device, warmup=spec.warmup, trials=spec.trials,
                max_trials=spec.max_trials, stderr_target=spec.stderr_target,
                graph_below_ms=spec.cuda_graph_below_ms, l2_bytes=job.l2_bytes, validate=judged,
                max_seconds=spec.max_seconds, stress_sets=input_sets[n_base:],
                rotation_seed=mix_rotation_seed(job, index), fresh=fresh, audit=audit,
                compare_trials=spec.compare_trials)
        except timing.TimedOutputInvalid as exc:
            invalid, refused = describe(exc), exc
    if audit is not None:  # on a GPU the timed calls' launches are the audited windows'
        launches = {**launches, **audit.launches}
    if invalid is not None:  # the launches are known once the recording has ended
        findings = list(judged.findings)  # the replay's own judging adds none to the report
        replay = replay_refused_call(ctx, index, cases[0].shape, model, judged, ordered, refused)
        return ShapeTiming(error=invalid, integrity=findings, launches=launches, refused_replay=replay)
    return ShapeTiming(
        samples_ms=result.samples_ms, method=result.method, sync_overhead_ms=result.sync_overhead_ms,
        memo_probe=result.memo_probe, notes=result.notes, flags=guards.changed_flags(pinned),
        side_stream_samples=result.side_stream_samples, host_bound_samples=result.host_bound_samples,
        launches=launches, stress_sets=len(input_sets) - n_base,
        audited_calls=audit.audited if audit is not None else None,
        audit_recorder=audit.recorder_name if audit is not None else None,
        blind_windows=audit.blind_windows if audit is not None else 0,
        fresh_calls=fresh.offered, fresh_kept=save_kept(ctx, index, base, fresh),
        persisting_l2_reset=result.persisting_l2_reset, protocol=result.protocol,
        protocols={name: ProtocolTiming(**vars(p)) for name, p in result.protocols.items()})


def replay_refused_call(ctx: StageContext, index: int, shape: dict[str, Any], model, judged: TimedJudge,
                        cases: list[Case], refused) -> RefusedCallReplay | None:
    """The refused timed call made again, eagerly and outside the timed loop, three ways (RefusedCallReplay): its
    values written back into its own tensors in place (pointer kept, version counter moved, as the loop wrote them),
    the values in new tensors, and a model built afresh on new tensors. Each output judged as the timed one was."""
    k = refused.set_index
    if k is None or refused.call_inputs is None or refused.values is None:
        return None
    torch = ctx.torch
    from kernelbench.eval.portable.timing import _copy_into

    answers: list[int] = []  # the other input sets whose checked answer a wrong output here is, exactly

    def judged_call(call_model, inputs: list) -> list[str]:
        try:
            with torch.no_grad():
                out = call_model(*inputs)
                problems = judged(out, k)
                if problems:
                    answers.extend(j for j in answer_of_another_set(torch, out, judged.expected, k)
                                   if j not in answers)
        except Exception as exc:  # the candidate raised: that is this call's problem
            problems = [f"raised {describe(exc)}"]
        return problems or []

    def new_tensors() -> list:
        return [v.clone() if isinstance(v, torch.Tensor) else v for v in refused.values]

    values = new_tensors()  # before any call below can touch the source
    _copy_into(refused.call_inputs, values)
    same = judged_call(model, refused.call_inputs)
    fresh = judged_call(model, new_tensors())
    try:
        rebuilt = ctx.build_model(index, shape)
    except Exception:  # a model that cannot be built twice: the first two calls still tell
        new_model = None
    else:
        new_model = judged_call(rebuilt, new_tensors())
    return RefusedCallReplay(set_index=k, case=cases[k].id, same_tensors=same, new_tensors=fresh,
                             new_model=new_model, answer_of=[cases[j].id for j in answers])


def answer_of_another_set(torch, out: Any, expected: list, k: int) -> list[int]:
    """The input sets other than k whose checked output `out` equals bit for bit: an answer kept from another
    input, which no arithmetic slip reproduces exactly."""
    from kernelbench.eval.worker.context import tensors_of

    mine = tensors_of(torch, out)
    found = []
    for j, theirs in enumerate(expected):
        if j == k:
            continue
        other = tensors_of(torch, theirs)
        if len(other) == len(mine) and all(
                type(a) is torch.Tensor and a.shape == b.shape and a.dtype == b.dtype
                and torch.equal(a.detach().cpu(), b.detach().cpu()) for a, b in zip(mine, other)):
            found.append(j)
    return found


@dataclass
class KeptOutput:
    single: bool
    tensors: list


def kept_copy(torch, out: Any) -> KeptOutput | str:
    """A kept timed output: its exact tensors cloned at once (a later replay, or the candidate, cannot change
    them), or why it is refused (the same exact-type rule as the checked outputs)."""
    items, single, error = exact_tensors(torch, out)
    if items is None:
        return error
    return KeptOutput(single, [t.detach().clone() for t in items])


def save_kept(ctx: StageContext, index: int, base: list[Case], fresh: Reservoir) -> list[KeptCall]:
    """The kept fresh calls' outputs as files beside the reply, with what the fresh stage needs to rebuild their
    inputs: the base case and the permutation seed."""
    from kernelbench.eval.tensorfile import save_tensors

    records = []
    for j, kept in enumerate(fresh.kept):
        record = KeptCall(case=base[kept.base].id, seed=kept.seed, call=kept.call, of=fresh.offered)
        if isinstance(kept.output, str):
            record.type_error = kept.output
        else:
            record.file = f"fresh_{index}_{j}.kbt"
            save_tensors(Path(ctx.job.out_dir) / record.file, kept.output.tensors, single=kept.output.single)
        records.append(record)
    return records
