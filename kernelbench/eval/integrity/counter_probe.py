"""Run under ncu by `counters.measure`: one timed call of the candidate inside an NVTX range.

    python -m kernelbench.eval.integrity.counter_probe JOB.json

The model is built as the bench stage builds it (same weights seed) and fed the grading's own timing inputs.
The warm-up calls rotate over the input sets as the timed loop's do, so the measured call (the next set in the
rotation, one already seen) finds whatever a cache keyed on its inputs would have kept. Inside the range, a
sentinel kernel first (its row proves ncu saw the range, so a call that launched nothing is told apart from a
range ncu missed), then the call, then a device-wide synchronise. What happened goes to the status file; the
candidate's output is not read by anyone.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    status = Path(job["status_path"])
    try:
        _write(status, {"called": False, "stage": "setup"})
        _write(status, run(job, status))
    except BaseException as exc:  # noqa: BLE001  (a candidate's SystemExit or crash is recorded, not obeyed)
        stage = json.loads(status.read_text()).get("stage") if status.is_file() else "setup"
        _write(status, {"called": False, "stage": stage,
                        "error": f"{type(exc).__name__}: {exc}\n{''.join(traceback.format_exception(exc)[-4:])}"})
    os._exit(0)  # skip atexit hooks a candidate may have registered


def run(job: dict[str, Any], status: Path) -> dict[str, Any]:
    import torch

    from kernelbench.eval.integrity.counters import NVTX_RANGE
    from kernelbench.eval.portable import guards
    from kernelbench.eval.portable.timing import L2Flusher, device_l2_bytes, reset_persisting_l2
    from kernelbench.eval.worker import build_model, wait_for_inputs
    from kernelbench.problems.loader import load_module, load_solution

    device = torch.device(job["device"])
    ctx = {"torch": torch, "device": device,
           "reference": load_module(Path(job["problem_dir"]) / "reference.py", "reference"),
           "candidate": load_solution(Path(job["module"]), "candidate"),
           "job": {"model_seeds": {str(job["shape_index"]): job["model_seed"]}, "line": "candidate",
                   "inputs_dir": job["inputs_dir"], "input_wait_s": 5}}
    model = build_model(ctx, job["shape_index"], job["shape"])
    sets = [wait_for_inputs(ctx, {"id": case_id}) for case_id in job["case_ids"]]
    guards.pin_backend_flags()
    cuda = device.type == "cuda"
    flush = L2Flusher(device, device_l2_bytes(device))
    _write(status, {"called": False, "stage": "warm-up"})
    with torch.no_grad():
        for i in range(job["warmup"]):
            model(*sets[i % len(sets)])
        measured = job["warmup"] % len(sets)
        _write(status, {"called": False, "stage": "range"})  # the grader's own steps: a failure is not the candidate's
        if cuda:
            torch.cuda.synchronize(device)
            flush()
            reset_persisting_l2()
            torch.cuda.synchronize(device)
            torch.cuda.nvtx.range_push(NVTX_RANGE)
            torch.cuda._sleep(1000)  # the sentinel
        _write(status, {"called": False, "stage": "call"})
        model(*sets[measured])
        if cuda:
            torch.cuda.synchronize(device)
            torch.cuda.nvtx.range_pop()
    return {"called": True, "input_set": measured, "warmup_calls": job["warmup"]}


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
