"""The check stage (the candidate's process): every case run under the runtime guards, its output saved for the
judge, what the guards saw recorded per case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelbench.eval.cases import Case
from kernelbench.eval.failures import describe
from kernelbench.eval.protocol import CaseRecord, StageJob
from kernelbench.eval.worker.context import StageContext, exact_tensors, launch_recorder


def run_cases(ctx: StageContext) -> dict[str, CaseRecord]:
    records: dict[str, CaseRecord] = {}
    models: dict[int, Any] = {}
    for case in ctx.job.cases:
        try:
            if case.shape_index not in models:
                models.clear()
                models[case.shape_index] = ctx.build_model(case.shape_index, case.shape)
            records[case.id] = run_case(ctx, models[case.shape_index], case)
        except Exception as exc:  # the candidate raised (or its model could not be built): the case's record
            records[case.id] = CaseRecord(error=describe(exc))
            if "CUDA" in str(exc) or "cuda" in type(exc).__module__:
                break  # the context is likely broken; later cases would only repeat this
        finally:
            end_marker(ctx.job, case.id).touch()
    return records


def end_marker(job: StageJob, case_id: str) -> Path:
    """Written after each case, output or not, so the judge moves on at once from a case that saved nothing."""
    return Path(job.out_dir) / f"end_{case_id}"


def run_case(ctx: StageContext, model, case: Case) -> CaseRecord:
    from kernelbench.eval.portable import guards

    torch, device = ctx.torch, ctx.device
    inputs = ctx.inputs(case.id)
    pristine = guards.clone_inputs(inputs)
    guards.poison_free_memory(device)
    guards.fill_uninitialized(True)
    pinned = guards.pin_backend_flags()
    # which checked calls get the full audit (operator names, the problem's code) is the judge's secret draw
    # (cases._audited_seed). On a GPU every other checked call is still recorded by kernel name (CUDA activity
    # costs little per launch; operator recording would cost minutes for a Python-loop solution), so a solution
    # that tells the audited calls apart (by what the profiler costs it) has no unwatched checked call to hand to a
    # library. On the CPU the other calls go unrecorded: recording operators there is the costly kind.
    full = case.audit
    names_only = not full and device.type == "cuda"
    with torch.no_grad(), launch_recorder(device, full or names_only, ctx.problem_code() if full else [],
                                          kernels_only=names_only) as launches:
        out = model(*inputs)
        guards.synchronize(device)
    guards.fill_uninitialized(False)
    record = CaseRecord(flags=guards.changed_flags(pinned), inputs=guards.inputs_changed(pristine, inputs),
                        launches=launches if full or names_only else None)
    return save_output(ctx, out, case.id, record)


def save_output(ctx: StageContext, out: Any, case_id: str, record: CaseRecord) -> CaseRecord:
    from kernelbench.eval.tensorfile import save_tensors

    items, single, error = exact_tensors(ctx.torch, out)
    if items is None:
        return record.model_copy(update={"type_error": error})
    save_tensors(Path(ctx.job.out_dir) / f"out_{case_id}.kbt", items, single=single)
    return record.model_copy(update={"saved": True})
