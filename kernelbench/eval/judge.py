"""The judge stage (trusted code only): inputs out, expected outputs kept in memory, verdicts back.

It runs beside the candidate's check stage. For every case it generates the inputs, publishes them as files
for the candidate, runs the reference on its own copy and keeps the expected output (and, for one case per
shape, an fp64 oracle) in its memory. Then it compares each saved candidate output as it arrives: exact
metadata, values within tolerance, the problem's own compare() hook, and the error-size numbers against the
oracle. Nothing the candidate can read ever holds an expected value.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".json").write_text(json.dumps(layout))
    save_tensors(path, tensors, single=False)


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
                return hook(model, *inputs), "ok"
            wide = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
            return copy.deepcopy(model).double()(*wide), "ok"
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


class StageClock:
    """Seconds spent per step of the judge (inputs, reference, oracle, waiting for the candidate, comparing),
    reported to the parent so a grading shows where its time went."""

    def __init__(self):
        self.totals: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.totals[name] = self.totals.get(name, 0.0) + time.monotonic() - started


def prepare_case(ctx: dict[str, Any], model, case: dict[str, Any], keep_inputs: bool,
                 cpu_inputs: list) -> dict[str, Any]:
    """Publish the case's inputs, run the reference; expected values (and the oracle) stay on the device."""
    torch, job, clock = ctx["torch"], ctx["job"], ctx["clock"]
    with clock.step("publish_inputs"):
        publish_inputs(job, case["id"], cpu_inputs)
    with clock.step("reference"):
        inputs = [x.to(ctx["device"]) if isinstance(x, torch.Tensor) else x for x in cpu_inputs]
        with torch.no_grad():
            expected = model(*inputs)
        if job.get("save_expected"):
            items = [expected] if isinstance(expected, torch.Tensor) else list(expected)
            save_tensors(Path(job["out_dir"]) / f"expected_{case['id']}.kbt", items,
                         single=isinstance(expected, torch.Tensor))
    kept = {"expected": expected, "inputs": inputs if keep_inputs else None, "cpu_inputs": cpu_inputs}
    add_oracle(ctx, model, case, inputs, kept)
    return kept


def add_oracle(ctx: dict[str, Any], model, case: dict[str, Any], inputs: list, kept: dict[str, Any]) -> None:
    """The fp64 oracle, for the cases that get one: the error-size detector's, and every case of a Kahan problem
    (its row-sum evidence needs one)."""
    if case.get("oracle") or ctx.get("kahan"):
        with ctx["clock"].step("oracle"):
            kept["oracle"], kept["oracle_status"] = compute_oracle(ctx, model, inputs)


def run_judge(ctx: dict[str, Any]) -> dict[str, Any]:
    """Case by case: publish and run the reference for one case, then judge the case before it, so at most two
    cases' tensors are alive and the candidate always has its next inputs while the previous output is compared."""
    job = ctx["job"]
    ctx["clock"] = clock = StageClock()
    ctx["kahan"] = _kahan_bound(job)
    keep_inputs = callable(getattr(ctx["reference"], "compare", None))
    verdicts: dict[str, Any] = {}
    pending: tuple[dict[str, Any], dict[str, Any]] | None = None
    model, model_shape = None, None
    prefetch = InputPrefetcher(ctx["reference"], job["cases"], prefetch_depth())
    for i, case in enumerate(job["cases"]):
        try:
            with clock.step("inputs"):
                cpu_inputs = prefetch.take(i)
            if model_shape != case["shape_index"]:
                model, model_shape = None, None
                with clock.step("reference"):
                    model, model_shape = build_model(ctx, case["shape_index"], case["shape"]), case["shape_index"]
            kept = prepare_case(ctx, model, case, keep_inputs, cpu_inputs)
        except Exception as exc:
            kept = {"reference_error": describe(exc)}
        if pending is not None:
            verdicts[pending[0]["id"]] = settle_case(ctx, *pending)
        pending = (case, kept)
    if pending is not None:
        verdicts[pending[0]["id"]] = settle_case(ctx, *pending)
    prefetch.close()
    return {"cases": verdicts, "clock": clock.totals, "republished": ctx.get("republished", [])}


def settle_case(ctx: dict[str, Any], case: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    """Judge one case (when a candidate runs beside the judge) and free what the later stages do not need."""
    job = ctx["job"]
    if not job.get("check_dir"):
        return {"reference_error": kept["reference_error"]} if "reference_error" in kept else {"prepared": True}
    verdict = judge_case(ctx, case, kept)
    if case["id"] not in set(job.get("keep_ids", [])):  # only the timed cases' files are read again
        for path in (input_path(job, case["id"]), input_path(job, case["id"]).with_suffix(".json"),
                     Path(job["check_dir"]) / f"out_{case['id']}.kbt", Path(job["check_dir"]) / f"end_{case['id']}"):
            path.unlink(missing_ok=True)
    return verdict


def _kahan_bound(job: dict[str, Any]) -> bool:
    """Problems with a Kahan leak check get an fp64 oracle on every case (the row-sum evidence needs it)."""
    return kahan_problem(Path(job["problem_dir"])) and bool(job.get("check_dir"))


def kahan_problem(problem_dir: Path) -> bool:
    """Whether the problem names a Kahan leak check (its outputs' row sums are held to the problem's bound)."""
    from kernelbench.eval.integrity.numerics import KAHAN_CHECKS
    from kernelbench.problems.spec import load_problem_spec

    try:
        spec = load_problem_spec(problem_dir)
    except Exception:
        return False
    return bool(set(spec.leak_checks) & KAHAN_CHECKS)


MAX_REPUBLISH = 3


def wait_for_output(ctx: dict[str, Any], case_id: str, inputs: list | None = None) -> Path | None:
    """Wait for the candidate's output; inputs deleted before the candidate wrote it are published again
    (a candidate deleting grading files would otherwise wait for its inputs until the stage limit)."""
    job = ctx["job"]
    check_dir = Path(job["check_dir"])
    path = check_dir / f"out_{case_id}.kbt"
    republished = ctx.setdefault("republished", [])
    ended = check_dir / f"end_{case_id}"  # the check stage's end-of-case marker (worker.end_marker)
    while not path.is_file():
        if (check_dir / DONE_MARKER).is_file() or ended.is_file():
            return path if path.is_file() else None
        if inputs is not None and not input_path(job, case_id).is_file():
            if republished.count(case_id) >= MAX_REPUBLISH:
                return None
            republished.append(case_id)
            publish_inputs(job, case_id, inputs)
        time.sleep(POLL_S)
    return path


def judge_case(ctx: dict[str, Any], case: dict[str, Any], kept: dict[str, Any]) -> dict[str, Any]:
    if "reference_error" in kept:
        return {"reference_error": kept["reference_error"]}
    with ctx["clock"].step("wait_candidate"):
        path = wait_for_output(ctx, case["id"], kept.get("cpu_inputs"))
    if path is None:
        return {"missing": True}
    try:
        with ctx["clock"].step("compare"):
            return judge_output(ctx, case, path, kept)
    except Exception as exc:
        return {"passed": False, "messages": [f"the candidate's output could not be compared: {describe(exc)}"]}


def judge_output(ctx: dict[str, Any], case: dict[str, Any], path: Path, kept: dict[str, Any]) -> dict[str, Any]:
    torch, job = ctx["torch"], ctx["job"]
    device = "cuda" if job["device"] == "cuda" and torch.cuda.is_available() else "cpu"
    tensors, single, meta = load_tensors(path, device)
    out = tensors[0] if single else tuple(tensors)
    expected = _to(kept["expected"], device)
    result, kahan = judged_comparison(ctx, case, out, expected, _to(kept["inputs"], device), kept.get("oracle"), meta)
    verdict = {"passed": result.ok, "messages": result.messages, "max_abs_err": result.max_abs_err,
               "max_rel_err": result.max_rel_err, "worst_index": result.worst_index, "integrity": kahan}
    if result.ok and case.get("oracle") and kept.get("oracle") is not None:
        verdict["error_size"] = error_sizes(out, expected, _to(kept["oracle"], device))
    elif case.get("oracle"):
        verdict["error_size_status"] = kept.get("oracle_status", "")
    return verdict


def judged_comparison(ctx: dict[str, Any], case: dict[str, Any], out: Any, expected: Any, inputs: list | None,
                      oracle: Any, meta: list[dict]) -> tuple[Comparison, list[dict]]:
    """One output judged: exact metadata, values within tolerance, the Kahan row-sum evidence, the problem's
    compare() hook. The checked outputs (here) and the timed ones (worker.bench_shape) both go through it, so a
    candidate that changes what it computes once timed meets the same checks there.

    ctx needs torch, job (device, tolerance, problem_dir), reference and kahan (see kahan_problem)."""
    job = ctx["job"]
    result = compare_outputs(out, expected, job["tolerance"])
    # only an output right element by element can be blamed on its accumulation (NaN or wrong values are the
    # comparison's to report)
    kahan = kahan_evidence(ctx, case, out, oracle) if result.ok else []
    _metadata(result, meta, expected, job["device"])
    hook = getattr(ctx["reference"], "compare", None)
    if result.ok and hook is not None:
        for message in hook(out, expected, inputs, job["tolerance"]) or []:
            result.fail(message)
    return result, kahan


def kahan_evidence(ctx: dict[str, Any], case: dict[str, Any], out: Any, oracle: Any) -> list[dict]:
    """The Kahan leak check (integrity hook): row sums of the candidate's output against the problem's bound,
    with what plain and compensated fp32 accumulation give on the same terms as evidence."""
    if not ctx.get("kahan") or oracle is None or not isinstance(out, ctx["torch"].Tensor):
        return []
    from kernelbench.eval.integrity.numerics import kahan_check

    bound = _row_sum_bound(ctx)
    if bound is None:
        return []
    try:
        found = kahan_check(out, oracle, bound, case_id=case["id"])
    except Exception:  # a malformed output is the comparison's to report
        return []
    return [f.model_dump(mode="json", by_alias=True) for f in found]


def _row_sum_bound(ctx: dict[str, Any]) -> float | None:
    """reference.py's ROW_SUM_BOUND, read once per process (every timed call is judged: no file parse per call)."""
    if "kahan_bound" not in ctx:
        from kernelbench.eval.integrity.hooks import row_sum_bound

        ctx["kahan_bound"] = row_sum_bound(Path(ctx["job"]["problem_dir"]))
    return ctx["kahan_bound"]


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
    """rms(a - b) / rms(b) over the elements finite in both (where() rather than a boolean gather: no copies)."""
    import torch

    a64, b64 = a.double(), b.double()
    mask = torch.isfinite(a64) & torch.isfinite(b64)
    zero = a64.new_zeros(())
    denom = float(torch.where(mask, b64, zero).square().sum())
    return math.sqrt(float(torch.where(mask, a64 - b64, zero).square().sum()) / denom) if denom > 0 else 0.0


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


# ------------------------------------------------------------------------------------------------- fresh calls

def run_fresh_judge(ctx: dict[str, Any]) -> dict[str, Any]:
    """Judge the timed calls the bench stage kept (portable.fresh): rebuild each call's inputs from the problem's
    generator (the base case's seed, not the published file, which the candidate could have edited) and the
    call's permutation seed, run the reference, and compare the kept output like a checked one."""
    from kernelbench.eval.portable.fresh import freshen

    job = ctx["job"]
    ctx["clock"] = clock = StageClock()
    ctx["kahan"] = kahan_problem(Path(job["problem_dir"]))
    cases = {c["id"]: c for c in job["cases"]}
    records = job["fresh"]
    verdicts: list[dict[str, Any]] = [{} for _ in records]  # in the records' order, whatever order they are judged
    model, model_shape = None, None
    drawn: tuple[str | None, list | None] = (None, None)  # the last base set drawn: (case id, inputs)
    for i in sorted(range(len(records)), key=lambda i: (cases[records[i]["case"]]["shape_index"], records[i]["case"])):
        record = records[i]
        case = cases[record["case"]]
        try:
            if model_shape != case["shape_index"]:
                model, model_shape = None, None
                with clock.step("reference"):
                    model, model_shape = build_model(ctx, case["shape_index"], case["shape"]), case["shape_index"]
            with clock.step("inputs"):
                if drawn[0] != case["id"]:  # records of one base set come together often: draw it once
                    drawn = (None, None)
                    base = ctx["reference"].get_inputs(case["shape"], case["seed"], "cpu", case=case["case"],
                                                       scale=case["scale"])
                    drawn = (case["id"], [_to(x, ctx["device"]) for x in base])
                inputs = freshen(drawn[1], record["seed"])
            kept = {"inputs": inputs, "cpu_inputs": None}
            with clock.step("reference"), ctx["torch"].no_grad():
                kept["expected"] = model(*inputs)
            add_oracle(ctx, model, case, inputs, kept)
            fresh_case = {**case, "id": f"{case['id']} (timed call {record['call']} of {record['of']}, fresh "
                                        "inputs)"}
            with clock.step("compare"):
                verdicts[i] = judge_output(ctx, fresh_case, Path(job["bench_dir"]) / record["file"], kept)
        except Exception as exc:
            verdicts[i] = {"reference_error": describe(exc)}
    return {"fresh": verdicts, "clock": clock.totals}
