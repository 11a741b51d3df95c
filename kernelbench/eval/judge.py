"""The judge stage (trusted code only): inputs out, expected outputs kept in memory, verdicts back.

It runs beside the candidate's check stage. For every case it generates the inputs, publishes them as files
for the candidate, runs the reference on its own copy and keeps the expected output (and, for one case per
shape, an fp64 oracle) in its memory. Then it compares each saved candidate output as it arrives: exact
metadata, values within tolerance, the problem's own compare() hook, and the error-size numbers against the
oracle. Nothing the candidate can read ever holds an expected value.
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any

from kernelbench.eval.portable.compare import Comparison, compare_outputs
from kernelbench.eval.tensorfile import load_tensors, save_tensors
from kernelbench.eval.worker import DONE_MARKER, POLL_S, build_model, describe, input_path


def publish_inputs(job: dict[str, Any], case_id: str, inputs: list) -> None:
    """Tensors into one file, the argument layout (tensor index or literal value) beside it; layout first, since
    the candidate waits for the tensor file."""
    import torch

    tensors, layout = [], []
    for item in inputs:
        if isinstance(item, torch.Tensor):
            layout.append(len(tensors))
            tensors.append(item)
        else:
            layout.append({"value": item})
    path = input_path(job, case_id)
    path.with_suffix(".json").write_text(json.dumps(layout))
    save_tensors(path, tensors, single=False)


def _to_cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (tuple, list)):
        return type(value)(_to_cpu(v) for v in value)
    return value


def _to(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value


def compute_oracle(ctx: dict[str, Any], model, inputs: list) -> tuple[Any, str]:
    """fp64 result for the error-size detector: the reference's oracle() hook, else the model in double."""
    torch = ctx["torch"]
    try:
        with torch.no_grad():
            hook = getattr(ctx["reference"], "oracle", None)
            if hook is not None:
                return _to_cpu(hook(model, *inputs)), "ok"
            wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
            return _to_cpu(copy.deepcopy(model).double()(*wide)), "ok"
    except Exception as exc:
        return None, f"unavailable: {type(exc).__name__}: {str(exc)[:300]}"


class InputPrefetcher:
    """Draws upcoming cases' inputs on the CPU in worker threads (torch releases the GIL inside its ops), a few
    cases ahead of the reference: on big shapes the CPU generator, not the GPU, is what grading waits for.

    Contract 2 draws inputs on the CPU and then moves them, so drawing with device="cpu" gives the same
    values; the judge moves them itself after publishing them (no device-to-host copy back)."""

    def __init__(self, reference, cases: list[dict[str, Any]], ahead: int):
        from concurrent.futures import ThreadPoolExecutor

        self.reference, self.cases, self.ahead = reference, cases, max(1, ahead)
        self.pool = ThreadPoolExecutor(max_workers=self.ahead, thread_name_prefix="inputs")
        self.futures: dict[int, Any] = {}
        for i in range(min(self.ahead, len(cases))):
            self._submit(i)

    def _submit(self, i: int) -> None:
        c = self.cases[i]
        self.futures[i] = self.pool.submit(self.reference.get_inputs, c["shape"], c["seed"], "cpu",
                                           case=c["case"], scale=c["scale"])

    def take(self, i: int) -> list:
        if i + self.ahead < len(self.cases):
            self._submit(i + self.ahead)
        return self.futures.pop(i).result()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def prefetch_depth() -> int:
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def prepare_case(ctx: dict[str, Any], model, case: dict[str, Any], keep_inputs: bool,
                 cpu_inputs: list) -> dict[str, Any]:
    torch, job = ctx["torch"], ctx["job"]
    publish_inputs(job, case["id"], cpu_inputs)
    inputs = [x.to(ctx["device"]) if isinstance(x, torch.Tensor) else x for x in cpu_inputs]
    with torch.no_grad():
        expected = model(*inputs)
    if job.get("save_expected"):
        items = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        save_tensors(Path(job["out_dir"]) / f"expected_{case['id']}.kbt", items,
                     single=isinstance(expected, torch.Tensor))
    kept = {"expected": _to_cpu(expected), "inputs": cpu_inputs if keep_inputs else None}
    if case.get("oracle"):
        kept["oracle"], kept["oracle_status"] = compute_oracle(ctx, model, inputs)
    return kept


def run_judge(ctx: dict[str, Any]) -> dict[str, Any]:
    job = ctx["job"]
    keep_inputs = callable(getattr(ctx["reference"], "compare", None))
    kept: dict[str, dict[str, Any]] = {}
    model, model_shape = None, None
    prefetch = InputPrefetcher(ctx["reference"], job["cases"], prefetch_depth())
    for i, case in enumerate(job["cases"]):
        try:
            cpu_inputs = prefetch.take(i)
            if model_shape != case["shape_index"]:
                model, model_shape = None, None
                model, model_shape = build_model(ctx, case["shape_index"], case["shape"]), case["shape_index"]
            kept[case["id"]] = prepare_case(ctx, model, case, keep_inputs, cpu_inputs)
        except Exception as exc:
            kept[case["id"]] = {"reference_error": describe(exc)}
    prefetch.close()
    del model
    if not job.get("check_dir"):
        return {cid: {"reference_error": k["reference_error"]} if "reference_error" in k else {"prepared": True}
                for cid, k in kept.items()}
    verdicts = {}
    for case in job["cases"]:
        verdicts[case["id"]] = judge_case(ctx, case, kept.pop(case["id"]))
        if case["label"] != "base":  # only base cases are timed later: free the disk (often RAM) now
            for path in (input_path(job, case["id"]), Path(job["check_dir"]) / f"out_{case['id']}.kbt"):
                path.unlink(missing_ok=True)
    return verdicts


def wait_for_output(job: dict[str, Any], case_id: str) -> Path | None:
    check_dir = Path(job["check_dir"])
    path = check_dir / f"out_{case_id}.kbt"
    while not path.is_file():
        if (check_dir / DONE_MARKER).is_file():
            return path if path.is_file() else None
        time.sleep(POLL_S)
    return path


def judge_case(ctx: dict[str, Any], case: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    if "reference_error" in kept:
        return {"reference_error": kept["reference_error"]}
    path = wait_for_output(ctx["job"], case["id"])
    if path is None:
        return {"missing": True}
    try:
        return judge_output(ctx, case, path, kept)
    except Exception as exc:
        return {"passed": False, "messages": [f"the candidate's output could not be compared: {describe(exc)}"]}


def judge_output(ctx: dict[str, Any], case: dict[str, Any], path: Path, kept: dict[str, Any]) -> dict[str, Any]:
    torch, job = ctx["torch"], ctx["job"]
    device = "cuda" if job["device"] == "cuda" and torch.cuda.is_available() else "cpu"
    tensors, single, meta = load_tensors(path, device)
    out = tensors[0] if single else tuple(tensors)
    expected = _to(kept["expected"], device)
    result = compare_outputs(out, expected, job["tolerance"])
    _metadata(result, meta, expected, job["device"])
    hook = getattr(ctx["reference"], "compare", None)
    if result.ok and hook is not None:
        for message in hook(out, expected, _to(kept["inputs"], device), job["tolerance"]) or []:
            result.fail(message)
    verdict = {"passed": result.ok, "messages": result.messages, "max_abs_err": result.max_abs_err,
               "max_rel_err": result.max_rel_err, "worst_index": result.worst_index}
    if result.ok and kept.get("oracle") is not None:
        verdict["error_size"] = error_sizes(out, expected, _to(kept["oracle"], device))
    elif case.get("oracle"):
        verdict["error_size_status"] = kept.get("oracle_status", "")
    return verdict


def _metadata(result: Comparison, meta: list[dict], expected: Any, device: str) -> None:
    import torch

    exps = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    for i, (info, e) in enumerate(zip(meta, exps)):
        if info["device"] != device:
            result.fail(f"output {i} is on {info['device']}, expected {device}")
        if not info["dense"] and e.is_contiguous():
            result.fail(f"output {i} has overlapping strides {tuple(info['stride'])} (a broadcast view), "
                        "expected a contiguous tensor")


def relative_rms(a, b) -> float:
    import torch

    a64, b64 = a.double(), b.double()
    mask = torch.isfinite(a64) & torch.isfinite(b64)
    if not bool(mask.any()):
        return 0.0
    denom = float(b64[mask].pow(2).mean().sqrt())
    return float((a64 - b64)[mask].pow(2).mean().sqrt()) / denom if denom > 0 else 0.0


def error_sizes(out: Any, expected: Any, oracle: Any) -> list[dict[str, float]]:
    """Per floating output: the candidate's and the reference's rms error against the fp64 oracle."""
    import torch

    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    exps = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    oras = [oracle] if isinstance(oracle, torch.Tensor) else list(oracle)
    sizes = []
    for i, (o, e, r) in enumerate(zip(outs, exps, oras)):
        if e.is_floating_point() and o.shape == r.shape:
            sizes.append({"output": i, "candidate": relative_rms(o, r), "reference": relative_rms(e, r),
                          "eps": torch.finfo(e.dtype).eps})
    return sizes
