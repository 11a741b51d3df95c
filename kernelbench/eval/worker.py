"""The grading worker: one fresh process per stage, started by `kernelbench.eval.grade`.

Roles: `check` runs a candidate on every case and saves its outputs; `reference` runs the reference on the same
inputs (in its own process, so a candidate can never find the reference's results in memory) and saves the
expected outputs and fp64 oracles; `bench` times a candidate (or the eager / compiled / SOTA line) with every
timed output validated. The job arrives as JSON on stdin, read completely before any candidate code is
imported; the verdict is decided by the parent, which compares the saved tensors itself. The result file is
signed with a key that travels on stdin only (never argv or the environment), so text a candidate prints or a
file it writes cannot pass for a result. Whatever the candidate prints or exits with is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

RESULT = "worker_result.json"
SIGNATURE = "worker_result.sig"


def sign(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def main() -> int:
    job = json.loads(sys.stdin.read())
    key = bytes.fromhex(job.pop("key"))
    out_dir = Path(job["out_dir"])
    try:
        result = run_job(job)
    except BaseException as exc:  # a candidate's SystemExit or a failed import is recorded, not obeyed
        result = {"fatal": _describe(exc)}
    data = json.dumps(result).encode()
    (out_dir / RESULT).write_bytes(data)
    (out_dir / SIGNATURE).write_text(sign(key, data))
    os._exit(0)  # skip atexit hooks and finalisers a candidate may have registered


def _describe(exc: BaseException) -> str:
    tail = "".join(traceback.format_exception(exc)[-6:])
    return f"{type(exc).__name__}: {exc}\n{tail}"[:4000]


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    from kernelbench.eval.portable import guards
    from kernelbench.problems.loader import load_module, load_solution

    device = torch.device(job["device"])
    reference = load_module(Path(job["problem_dir"]) / "reference.py", "reference")
    candidate = None if job["line"] == "eager" else load_solution(Path(job["module"]), job["line"])
    guards.pin_backend_flags()
    ctx = {"job": job, "torch": torch, "device": device, "reference": reference, "candidate": candidate}
    if job["role"] == "bench":
        return {"shapes": run_bench(ctx)}
    return {"cases": run_cases(ctx)}


def build_model(ctx: dict[str, Any], shape_index: int, shape: dict[str, Any]):
    torch, reference, candidate = ctx["torch"], ctx["reference"], ctx["candidate"]
    kwargs = reference.get_init_kwargs(shape)
    seed = ctx["job"]["model_seeds"][str(shape_index)]
    torch.manual_seed(seed)
    ref_model = reference.Model(**kwargs)
    if ctx["job"]["role"] == "reference" or candidate is None:
        model = ref_model
    else:
        torch.manual_seed(seed)
        model = candidate.Model(**kwargs)
        model.load_state_dict(ref_model.state_dict(), strict=True)
        del ref_model
    model = model.to(ctx["device"]).eval()
    if ctx["job"]["line"] == "compiled":
        model = torch.compile(model)
    return model


# ------------------------------------------------------------------------------------------------- cases

def run_cases(ctx: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    models: dict[int, Any] = {}
    for case in ctx["job"]["cases"]:
        try:
            if case["shape_index"] not in models:
                models.clear()
                models[case["shape_index"]] = build_model(ctx, case["shape_index"], case["shape"])
            results[case["id"]] = run_case(ctx, models[case["shape_index"]], case)
        except Exception as exc:
            results[case["id"]] = {"error": _describe(exc)}
            if "CUDA" in str(exc) or "cuda" in type(exc).__module__:
                break  # the context is likely broken; later cases would only repeat this
    return results


def run_case(ctx: dict[str, Any], model, case: dict[str, Any]) -> dict[str, Any]:
    from kernelbench.eval.portable import guards

    torch, device = ctx["torch"], ctx["device"]
    inputs = ctx["reference"].get_inputs(case["shape"], case["seed"], device, case=case["case"], scale=case["scale"])
    pristine = guards.clone_inputs(inputs)
    guards.poison_free_memory(device)
    guards.fill_uninitialized(True)
    pinned = guards.pin_backend_flags()
    audit = case.get("oracle") and ctx["job"]["role"] == "check"
    with torch.no_grad(), _launch_recorder(device, audit) as launches:
        out = model(*inputs)
        guards.synchronize(device)
    guards.fill_uninitialized(False)
    record = {"flags": guards.changed_flags(pinned), "inputs": guards.inputs_changed(pristine, inputs)}
    if audit:
        record["launches"] = launches
    record.update(save_outputs(ctx, out, case["id"]))
    if case.get("oracle") and ctx["job"]["role"] == "reference":
        record["oracle"] = save_oracle(ctx, model, pristine, case["id"])
    return record


@contextlib.contextmanager
def _launch_recorder(device, enabled: bool):
    """Names (and device time) of the kernels a call launched, for the integrity launch audit."""
    if not enabled:
        yield {}
        return
    from kernelbench.eval.integrity.profiling import record_launches

    with record_launches(device.type) as launches:
        yield launches


def save_outputs(ctx: dict[str, Any], out: Any, case_id: str) -> dict[str, Any]:
    """Exact types are checked here, before anything touches the output (a lazy tensor would run its work)."""
    torch = ctx["torch"]
    single = type(out) is torch.Tensor
    items = (out,) if single else tuple(out) if type(out) in (tuple, list) else None
    if items is None or any(type(t) is not torch.Tensor for t in items):
        bad = out if items is None else next(t for t in items if type(t) is not torch.Tensor)
        kind = type(bad)
        return {"type_error": f"output is a {kind.__module__}.{kind.__qualname__}, not exactly torch.Tensor "
                              "(subclasses, wrappers and lazy tensors are refused)"}
    devices = [t.device.type for t in items]
    torch.save({"outputs": [t.detach().cpu() for t in items], "single": single},
               Path(ctx["job"]["out_dir"]) / f"{ctx['job']['prefix']}_{case_id}.pt")
    return {"devices": devices}


def save_oracle(ctx: dict[str, Any], model, inputs: list, case_id: str) -> str:
    """fp64 result for the error-size detector: the reference's oracle() hook, else the model in double."""
    import copy

    torch = ctx["torch"]
    try:
        with torch.no_grad():
            hook = getattr(ctx["reference"], "oracle", None)
            if hook is not None:
                out = hook(model, *inputs)
            else:
                wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
                out = copy.deepcopy(model).double()(*wide)
        items = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        torch.save({"outputs": [t.detach().cpu() for t in items], "single": isinstance(out, torch.Tensor)},
                   Path(ctx["job"]["out_dir"]) / f"oracle_{case_id}.pt")
        return "ok"
    except Exception as exc:
        return f"unavailable: {type(exc).__name__}: {str(exc)[:300]}"


# ------------------------------------------------------------------------------------------------- timing

def run_bench(ctx: dict[str, Any]) -> dict[str, Any]:
    by_shape: dict[int, list[dict]] = {}
    for case in ctx["job"]["cases"]:
        by_shape.setdefault(case["shape_index"], []).append(case)
    results = {}
    for index, cases in sorted(by_shape.items()):
        try:
            results[str(index)] = bench_shape(ctx, index, cases)
        except Exception as exc:
            results[str(index)] = {"error": _describe(exc)}
    return results


def bench_shape(ctx: dict[str, Any], index: int, cases: list[dict]) -> dict[str, Any]:
    from kernelbench.eval.portable import guards, timing
    from kernelbench.eval.portable.compare import compare_outputs

    torch, device, job = ctx["torch"], ctx["device"], ctx["job"]
    model = build_model(ctx, index, cases[0]["shape"])
    input_sets = [ctx["reference"].get_inputs(c["shape"], c["seed"], device, case=c["case"], scale=c["scale"])
                  for c in cases]
    expected = [load_expected(ctx, c["id"]) for c in cases]

    def validate(out: Any, k: int) -> list[str]:
        return compare_outputs(out, expected[k], job["tolerance"]).messages

    spec = job["timing"]
    pinned = guards.pin_backend_flags()
    with torch.no_grad():
        result = timing.time_function(
            model, input_sets, device, warmup=spec["warmup"], trials=spec["trials"], max_trials=spec["max_trials"],
            stderr_target=spec["stderr_target"], graph_below_ms=spec["cuda_graph_below_ms"],
            l2_bytes=job.get("l2_bytes"), validate=validate)
    return {"samples_ms": result.samples_ms, "method": result.method, "sync_overhead_ms": result.sync_overhead_ms,
            "memo_probe": result.memo_probe, "notes": result.notes, "flags": guards.changed_flags(pinned)}


def load_expected(ctx: dict[str, Any], case_id: str):
    torch = ctx["torch"]
    data = torch.load(Path(ctx["job"]["expected_dir"]) / f"{ctx['job']['expected_prefix']}_{case_id}.pt",
                      weights_only=True)
    items = [t.to(ctx["device"]) for t in data["outputs"]]
    return items[0] if data["single"] else tuple(items)


if __name__ == "__main__":
    sys.exit(main())
