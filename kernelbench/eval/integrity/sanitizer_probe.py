"""Run under compute-sanitizer by the sanitizer stage (kernelbench.eval.stages.sanitizer): one call of a line
(the candidate, or the reference for comparison) on one case's inputs.

    python -m kernelbench.eval.integrity.sanitizer_probe JOB.json

The model is built as every stage builds it (the shape's weights seed), the inputs are the judge's own file for
the case (the check stage's inputs), and the line is called once, then the device synchronised, so every report
about the call's kernels is in before the process ends. What happened goes to the status file; the output is not
read by anyone (the checks judged the outputs already).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

INPUT_WAIT_S = 5.0


class SanitizerMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SanitizerJob(SanitizerMessage):
    """What the stage hands the probe (a file: the tool owns the probe's command line)."""

    problem_dir: str
    module: str                       # the candidate's copy (not imported for the reference line)
    line: Literal["candidate", "reference"]
    device: str
    shape: dict[str, Any]
    model_seed: int
    input_path: str
    status_path: str


class SanitizerStatus(SanitizerMessage):
    """How far the probe got, written before each step (a probe killed or crashed says where)."""

    stage: Literal["setup", "call", "done"] = "setup"
    called: bool = False
    error: str = ""


def main(argv: list[str]) -> int:
    # Before torch is imported: no caching allocator, so each tensor is its own cudaMalloc and memcheck knows its
    # exact bounds. With the cache, a read one element past a tensor lands in the cache's next block (memory
    # that is allocated, so not "out of bounds" to the tool) and the planted bug goes unseen.
    os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    job = SanitizerJob.model_validate_json(Path(argv[0]).read_bytes())
    status = Path(job.status_path)
    try:
        _write(status, SanitizerStatus())
        run(job, status)
        _write(status, SanitizerStatus(stage="done", called=True))
    except BaseException as exc:  # noqa: BLE001  (a candidate's SystemExit or crash is recorded, not obeyed)
        stage = read_status(status).stage if status.is_file() else "setup"
        _write(status, SanitizerStatus(stage=stage, error=f"{type(exc).__name__}: {exc}\n"
                                                          f"{''.join(traceback.format_exception(exc)[-4:])}"))
    sys.stdout.flush()
    os._exit(0)  # skip atexit hooks a candidate may have registered


def run(job: SanitizerJob, status: Path) -> None:
    import torch

    from kernelbench.eval.portable import guards
    from kernelbench.eval.worker.context import build_model, wait_for_inputs
    from kernelbench.problems.loader import load_reference, load_solution

    device = torch.device(job.device)
    reference = load_reference(Path(job.problem_dir))
    candidate = load_solution(Path(job.module), "candidate") if job.line == "candidate" else None
    model = build_model(torch, device, reference, candidate, job.model_seed, job.shape)
    inputs = wait_for_inputs(Path(job.input_path), device, INPUT_WAIT_S)
    guards.pin_backend_flags()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    _write(status, SanitizerStatus(stage="call"))
    with torch.no_grad():
        model(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def read_status(path: Path) -> SanitizerStatus:
    return SanitizerStatus.model_validate_json(path.read_bytes())


def _write(path: Path, status: SanitizerStatus) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(status.model_dump_json())
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
