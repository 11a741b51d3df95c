"""Run under ncu by `counters.measure`: one timed call of the candidate inside an NVTX range.

    python -m kernelbench.eval.integrity.counter_probe JOB.json

The model is built as the bench stage builds it (same weights seed) and fed the grading's own timing inputs.
The warm-up calls rotate over the input sets as the timed loop's do, so the measured call (the next set in the
rotation, one already seen) finds whatever a cache keyed on its inputs would have kept. Inside the range, a
sentinel kernel first (its row proves ncu saw the range, so a call that launched nothing is told apart from a
range ncu missed), then the call, then a device-wide synchronise. What happened goes to the status file; the
call's output, once the range is closed, to `output_path`, which the grader judges against the candidate's checked
output of the same inputs (a candidate that computes something else when it finds a profiler is caught there).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

INPUT_WAIT_S = 5.0
NVTX_RANGE = "kb_counter_probe"  # ncu profiles the kernels of this range only (counters.ncu_command)


class ProbeMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProbeJob(ProbeMessage):
    """What the grader hands the probe (a file, since ncu owns the probe's command line)."""

    problem_dir: str
    module: str
    device: str
    shape_index: int
    shape: dict[str, Any]
    model_seed: int
    inputs_dir: str
    case_ids: list[str]
    warmup: int
    status_path: str
    output_path: str = ""  # where the measured call's output goes (the grader's to judge)


class ProbeStatus(ProbeMessage):
    """How far the probe got: written before each step, so a probe killed or crashed says where."""

    called: bool = False
    stage: Literal["setup", "warm-up", "range", "call", "done"] = "setup"
    error: str = ""
    input_set: int | None = None
    warmup_calls: int | None = None


def main(argv: list[str]) -> int:
    job: ProbeJob = ProbeJob.model_validate_json(Path(argv[0]).read_bytes())
    status = Path(job.status_path)
    try:
        _write(status, ProbeStatus(stage="setup"))
        _write(status, run(job, status))
    except BaseException as exc:  # noqa: BLE001  (a candidate's SystemExit or crash is recorded, not obeyed)
        stage = read_status(status).stage if status.is_file() else "setup"
        _write(status, ProbeStatus(stage=stage, error=f"{type(exc).__name__}: {exc}\n"
                                                      f"{''.join(traceback.format_exception(exc)[-4:])}"))
    os._exit(0)  # skip atexit hooks a candidate may have registered


def read_status(path: Path) -> ProbeStatus:
    return ProbeStatus.model_validate_json(path.read_bytes())


def run(job: ProbeJob, status: Path) -> ProbeStatus:
    import torch

    from kernelbench.eval.portable import guards
    from kernelbench.eval.portable.timing import L2Flusher, device_l2_bytes, reset_persisting_l2
    from kernelbench.eval.worker.context import build_model, wait_for_inputs
    from kernelbench.problems.loader import load_reference, load_solution

    device = torch.device(job.device)
    reference = load_reference(Path(job.problem_dir))
    candidate = load_solution(Path(job.module), "candidate")
    model = build_model(torch, device, reference, candidate, job.model_seed, job.shape)
    sets = [wait_for_inputs(Path(job.inputs_dir) / f"in_{case_id}.kbt", device, INPUT_WAIT_S)
            for case_id in job.case_ids]
    guards.pin_backend_flags()
    cuda = device.type == "cuda"
    flush = L2Flusher(device, device_l2_bytes(device))
    _write(status, ProbeStatus(stage="warm-up"))
    with torch.no_grad():
        for i in range(job.warmup):
            model(*sets[i % len(sets)])
        measured = job.warmup % len(sets)
        _write(status, ProbeStatus(stage="range"))  # the grader's own steps: a failure is not the candidate's
        if cuda:
            torch.cuda.synchronize(device)
            flush()
            reset_persisting_l2()
            torch.cuda.synchronize(device)
            torch.cuda.nvtx.range_push(NVTX_RANGE)
            torch.cuda._sleep(1000)  # the sentinel
        _write(status, ProbeStatus(stage="call"))
        out = model(*sets[measured])
        if cuda:
            torch.cuda.synchronize(device)
            torch.cuda.nvtx.range_pop()
    if job.output_path:
        _save_output(torch, out, Path(job.output_path))
    return ProbeStatus(called=True, stage="done", input_set=measured, warmup_calls=job.warmup)


def _save_output(torch, out: Any, path: Path) -> None:
    """As the check stage saves a checked output; an output that is not plain tensors is left unsaved (the grader
    then finds no output to judge)."""
    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.eval.worker.context import exact_tensors

    items, single, _ = exact_tensors(torch, out)
    if items is not None:
        save_tensors(path, items, single=single)


def _write(path: Path, status: ProbeStatus) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(status.model_dump_json())
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
