"""The grading worker: one fresh process per stage, started by `kernelbench.eval.grade`.

Roles:
- `judge` (trusted code only): generates every case's inputs, hands them to the candidate as files, runs the
  reference on its own pristine copy, keeps the expected outputs (and fp64 oracles) in its memory, never on
  disk, then compares the candidate's saved outputs as they arrive. It runs beside the check stage.
- `check` (the candidate): runs the candidate on each case under the runtime guards and saves its outputs.
  The reference never runs in this process, so its results cannot be found in memory.
- `bench` (a candidate, or the eager / compiled / SOTA line): times with every timed output validated.

The job arrives as JSON on stdin, read completely before any candidate code is imported; the result file is
signed with a key that travels on stdin only (never argv or the environment), so text a candidate prints or a
file it writes cannot pass for a result. Whatever the candidate prints or exits with is ignored.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelbench.eval.portable.fresh import Reservoir

RESULT = "worker_result.json"
SIGNATURE = "worker_result.sig"
DONE_MARKER = "check.done"  # written by the parent once the check stage has ended, whatever its end
POLL_S = 0.02
CANDIDATE_ROLES = ("check", "bench")  # the stages that import the solution (sandboxed, watched, guarded)


def sign(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def main() -> int:
    job = json.loads(sys.stdin.read())
    key = bytes.fromhex(job.pop("key"))
    out_dir = Path(job["out_dir"])
    encode, mac = json.dumps, sign  # bound before any candidate code: rebinding the module names changes nothing
    try:
        result = run_job(job)
    except BaseException as exc:  # a candidate's SystemExit or a failed import is recorded, not obeyed
        result = {"fatal": describe(exc), "introspection": list(getattr(exc, "kb_introspection", []))}
    data = encode(result).encode()
    (out_dir / RESULT).write_bytes(data)
    (out_dir / SIGNATURE).write_text(mac(key, data))
    os._exit(0)  # skip atexit hooks and finalisers a candidate may have registered


def describe(exc: BaseException) -> str:
    tail = "".join(traceback.format_exception(exc)[-6:])
    return f"{type(exc).__name__}: {exc}\n{tail}"[:4000]


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    from kernelbench.eval.portable import compare, guards, timing  # noqa: F401  (bound before candidate code)
    from kernelbench.problems.loader import load_module, load_solution

    guards.warm_math_library()  # before the reference or a candidate computes anything (every role)

    device = torch.device(job["device"])
    reference = load_module(Path(job["problem_dir"]) / "reference.py", "reference")
    role = job["role"]
    ctx = {"job": job, "torch": torch, "device": device, "reference": reference, "candidate": None}
    if role in CANDIDATE_ROLES:
        return run_candidate_role(ctx, load_solution)
    guards.pin_backend_flags()
    if role == "judge":
        from kernelbench.eval.judge import run_judge

        return {**run_judge(ctx), "device_info": device_info(torch, device)}
    if role == "fresh":
        from kernelbench.eval.judge import run_fresh_judge

        return run_fresh_judge(ctx)
    raise ValueError(f"unknown worker role {role!r}")


def run_candidate_role(ctx: dict[str, Any], load_solution) -> dict[str, Any]:
    """The check or bench stage: the process is armed before any solution code is imported, and what its guards
    saw joins the result (also when the import itself failed)."""
    from kernelbench.eval.integrity.compiled import name_kernels_after_torch_calls
    from kernelbench.eval.portable import guards

    job = ctx["job"]
    watch, introspection = watch_grader_namespaces(), guard_introspection(job)
    name_kernels_after_torch_calls()  # a forbidden call compiled by torch.compile keeps its name
    try:
        if job["role"] == "bench":
            result = run_bench_lines(ctx, load_solution)
        else:
            ctx["candidate"] = None if job["line"] == "eager" else load_solution(Path(job["module"]), job["line"])
            guards.pin_backend_flags()
            result = {"cases": run_cases(ctx)}
    except BaseException as exc:  # an import the guard refused still reports what it refused
        exc.kb_introspection = introspection.refused
        raise
    return {**result, "namespace_changes": watch.changes(), "introspection": introspection.refused}


def guard_introspection(job: dict[str, Any]):
    """The audit hook that refuses the solution's reach for frames and live objects
    (kernelbench.eval.integrity.introspection), installed before any solution code is imported."""
    from kernelbench.eval.integrity.introspection import IntrospectionGuard

    modules = [job.get("module")] + [line.get("module") for line in job.get("lines") or []]
    roots = sorted({str(Path(m).resolve().parent) + os.sep for m in modules if m})
    guard = IntrospectionGuard(tuple(roots))
    guard.install()
    return guard


# what the check and bench stages run beside a candidate, imported before it so the watch covers them
GRADER_MODULES = ("kernelbench.eval.portable.timing", "kernelbench.eval.portable.guards",
                  "kernelbench.eval.portable.compare", "kernelbench.eval.portable.fresh", "kernelbench.eval.tensorfile",
                  "kernelbench.eval.judge", "kernelbench.eval.verdict", "kernelbench.eval.integrity.profiling",
                  "kernelbench.eval.integrity.cupti_kernels")


def watch_grader_namespaces():
    """A snapshot of the grader's code and the library functions it calls, taken before the candidate is
    imported (kernelbench.eval.integrity.namespaces): the stage reports what changed by the end."""
    import importlib

    from kernelbench.eval.integrity.namespaces import NamespaceWatch

    for name in GRADER_MODULES:
        importlib.import_module(name)
    return NamespaceWatch.take()


def device_info(torch, device) -> dict[str, Any]:
    """What the judge ran on, so the parent needs neither torch nor the GPU to describe it."""
    info = {"torch": torch.__version__, "cuda": torch.version.cuda or ""}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(name=props.name, sm_count=props.multi_processor_count, arch=f"sm_{props.major}{props.minor}",
                    l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0))
    return info


def build_model(ctx: dict[str, Any], shape_index: int, shape: dict[str, Any]):
    torch, reference, candidate = ctx["torch"], ctx["reference"], ctx["candidate"]
    kwargs = reference.get_init_kwargs(shape)
    seed = ctx["job"]["model_seeds"][str(shape_index)]
    ref_model = build_reference(torch, reference, kwargs, seed, ctx["device"])
    if candidate is None:
        model = ref_model
    else:
        torch.manual_seed(seed)
        model = candidate.Model(**kwargs)
        model.load_state_dict(ref_model.state_dict(), strict=True)
        del ref_model
    model = model.to(ctx["device"]).eval()
    if ctx["job"]["line"] == "compiled":
        from kernelbench.problems.baselines import COMPILED_LINE_MODE

        model = torch.compile(model, mode=COMPILED_LINE_MODE)
    return model


def build_reference(torch, reference, kwargs: dict[str, Any], seed: int, device):
    """The reference's parameters, drawn on the grading device: gigabytes of MoE weights drawn by the CPU
    generator cost seconds in every stage of every shape. Every process of a grading draws them the same way
    (same seed, same device), so the candidate still loads exactly the judge's weights; a reference whose
    __init__ cannot run under a CUDA default device falls back to the CPU, again the same in every process."""
    if device.type == "cuda":
        try:
            torch.manual_seed(seed)
            with torch.device(device):
                return reference.Model(**kwargs)
        except (RuntimeError, TypeError, ValueError, AssertionError):  # AssertionError: a build without CUDA
            pass
    torch.manual_seed(seed)
    return reference.Model(**kwargs)


def input_path(job: dict[str, Any], case_id: str) -> Path:
    return Path(job["inputs_dir"]) / f"in_{case_id}.kbt"


def wait_for_inputs(ctx: dict[str, Any], case: dict[str, Any]) -> list:
    """Inputs the judge generated (and will check against); non-tensor arguments come back as given."""
    from kernelbench.eval.tensorfile import load_tensors

    path = input_path(ctx["job"], case["id"])
    deadline = time.monotonic() + ctx["job"].get("input_wait_s", 600)
    while not path.is_file():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the judge never produced inputs for case {case['id']}")
        time.sleep(POLL_S)
    tensors, _, _ = load_tensors(path, ctx["device"])
    layout = json.loads(path.with_suffix(".json").read_text())
    return [tensors[item] if isinstance(item, int) else item["value"] for item in layout]


# ------------------------------------------------------------------------------------------------- check

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
            results[case["id"]] = {"error": describe(exc)}
            if "CUDA" in str(exc) or "cuda" in type(exc).__module__:
                break  # the context is likely broken; later cases would only repeat this
        finally:
            end_marker(ctx["job"], case["id"]).touch()
    return results


def end_marker(job: dict[str, Any], case_id: str) -> Path:
    """Written after each case, output or not, so the judge moves on at once from a case that saved nothing."""
    return Path(job["out_dir"]) / f"end_{case_id}"


def run_case(ctx: dict[str, Any], model, case: dict[str, Any]) -> dict[str, Any]:
    from kernelbench.eval.portable import guards

    torch, device = ctx["torch"], ctx["device"]
    inputs = wait_for_inputs(ctx, case)
    pristine = guards.clone_inputs(inputs)
    guards.poison_free_memory(device)
    guards.fill_uninitialized(True)
    pinned = guards.pin_backend_flags()
    # which checked calls get the full audit (operator names, the problem's code) is the judge's secret draw
    # (cases._audited_seed). On a GPU every other checked call is still recorded by kernel name (CUDA activity
    # costs little per launch; operator recording would cost minutes for a Python-loop solution), so a solution
    # that tells the audited calls apart (by what the profiler costs it) has no unwatched checked call to hand to a
    # library. On the CPU the other calls go unrecorded: recording operators there is the costly kind.
    full = bool(case.get("audit", True))
    names_only = not full and device.type == "cuda"
    with torch.no_grad(), _launch_recorder(device, full or names_only, _problem_code(ctx) if full else [],
                                           kernels_only=names_only) as launches:
        out = model(*inputs)
        guards.synchronize(device)
    guards.fill_uninitialized(False)
    record = {"flags": guards.changed_flags(pinned), "inputs": guards.inputs_changed(pristine, inputs)}
    if full or names_only:
        record["launches"] = launches
    record.update(save_outputs(ctx, out, case["id"]))
    return record


@contextlib.contextmanager
def _launch_recorder(device, enabled: bool, watch_files: list[Path] | None = None, kernels_only: bool = False):
    """Names (and device time) of the kernels a call launched, for the integrity launch audit; and the problem's
    own code, should it run inside a candidate's call."""
    if not enabled:
        yield {}
        return
    from kernelbench.eval.integrity.profiling import record_launches

    with record_launches(device.type, watch_files or [], kernels_only=kernels_only) as launches:
        yield launches


def _problem_code(ctx: dict[str, Any]) -> list[Path]:
    """The problem files whose code must not run inside a candidate's call (none when the line graded is the
    reference or the library line itself)."""
    if ctx["candidate"] is None or ctx["job"]["line"] in ("eager", "compiled", "sota"):
        return []
    problem = Path(ctx["job"]["problem_dir"])
    return [p for p in (problem / "reference.py", problem / "sota.py") if p.is_file()]


def exact_tensors(torch, out: Any) -> tuple[list | None, bool, str]:
    """The output's tensors if every one is exactly torch.Tensor, else the reason (checked before anything
    touches the output: a lazy tensor would run its deferred work)."""
    single = type(out) is torch.Tensor
    items = [out] if single else list(out) if type(out) in (tuple, list) else None
    if items is None or any(type(t) is not torch.Tensor for t in items):
        bad = out if items is None else next(t for t in items if type(t) is not torch.Tensor)
        kind = type(bad)
        return None, single, (f"output is a {kind.__module__}.{kind.__qualname__}, not exactly torch.Tensor "
                              "(subclasses, wrappers and lazy tensors are refused)")
    return items, single, ""


def save_outputs(ctx: dict[str, Any], out: Any, case_id: str) -> dict[str, Any]:
    from kernelbench.eval.tensorfile import save_tensors

    items, single, error = exact_tensors(ctx["torch"], out)
    if items is None:
        return {"type_error": error}
    save_tensors(Path(ctx["job"]["out_dir"]) / f"out_{case_id}.kbt", items, single=single)
    return {"saved": True}


# ------------------------------------------------------------------------------------------------- timing

def run_bench_lines(ctx: dict[str, Any], load_solution) -> dict[str, Any]:
    """Time one or several lines (a candidate; or eager, compiled and SOTA) in this one process."""
    from kernelbench.eval.portable import guards

    job = ctx["job"]
    lines = job.get("lines") or [{"line": job["line"], "module": job["module"]}]
    results: dict[str, Any] = {}
    for spec in lines:
        try:
            candidate = None if spec["line"] == "eager" else load_solution(Path(spec["module"]), spec["line"])
            guards.pin_backend_flags()
            line_ctx = {**ctx, "candidate": candidate, "job": {**job, "line": spec["line"]}}
            results[spec["line"]] = {"shapes": run_bench(line_ctx)}
        except Exception as exc:
            results[spec["line"]] = {"error": describe(exc)}
    first = results[lines[0]["line"]]
    if "error" in first and len(lines) == 1:
        raise RuntimeError(first["error"])
    return {"lines": results, "shapes": first.get("shapes", {})}


def run_bench(ctx: dict[str, Any]) -> dict[str, Any]:
    by_shape: dict[int, list[dict]] = {}
    for case in ctx["job"]["cases"]:
        by_shape.setdefault(case["shape_index"], []).append(case)
    results = {}
    for index, cases in sorted(by_shape.items()):
        try:
            results[str(index)] = bench_shape(ctx, index, cases)
        except Exception as exc:
            results[str(index)] = {"error": describe(exc)}
    return results


def bench_shape(ctx: dict[str, Any], index: int, cases: list[dict]) -> dict[str, Any]:
    from kernelbench.eval.portable import guards, timing
    from kernelbench.eval.portable.fresh import Reservoir

    torch, device, job = ctx["torch"], ctx["device"], ctx["job"]
    model = build_model(ctx, index, cases[0]["shape"])
    # base cases are timed; stress cases (a candidate grading's) are mixed into the rotation, judged, not timed
    base = [c for c in cases if c.get("label", "base") == "base"]
    stress = [c for c in cases if c.get("label", "base") != "base"]
    ordered, n_base = base + stress, len(base)
    input_sets = [wait_for_inputs(ctx, c) for c in ordered]
    judged = TimedJudge(ctx, ordered, input_sets)
    spec = job["timing"]
    pinned = guards.pin_backend_flags()
    # on the CPU the timed calls run under the launch audit too (CPU timings are smoke, not published): a candidate
    # that tells the timed stage from the checked one (by the profiler's state, its call cadence, files) and calls
    # a library only when timed is seen here; on a GPU the recorder's cost would move the medians, so it records a
    # few secret windows of timed calls (timed_audit), left out of the samples, and the counter pass audits an
    # unprofiled call
    audit_timed = device.type == "cpu" and bool(_problem_code(ctx))
    invalid = None
    fresh = Reservoir(int(job.get("fresh_kept", 0)), lambda out: kept_copy(torch, out))
    audit = timed_audit(ctx, index, len(input_sets) / n_base) if device.type == "cuda" and _problem_code(ctx) \
        else None
    with torch.no_grad(), _launch_recorder(device, audit_timed, _problem_code(ctx)) as launches:
        try:
            result = timing.time_function(
                model, input_sets[:n_base], device, warmup=spec["warmup"], trials=spec["trials"],
                max_trials=spec["max_trials"], stderr_target=spec["stderr_target"],
                graph_below_ms=spec["cuda_graph_below_ms"], l2_bytes=job.get("l2_bytes"), validate=judged,
                max_seconds=spec.get("max_seconds"), stress_sets=input_sets[n_base:],
                rotation_seed=mix_rotation_seed(job, index), fresh=fresh, audit=audit)
        except timing.TimedOutputInvalid as exc:
            invalid = describe(exc)
    if audit is not None:  # on a GPU the timed calls' launches are the audited windows'
        launches = {**launches, **audit.launches}
    if invalid is not None:  # the launches are known once the recording has ended
        return {"error": invalid, "integrity": judged.findings, "launches": launches}
    return {"samples_ms": result.samples_ms, "method": result.method, "sync_overhead_ms": result.sync_overhead_ms,
            "memo_probe": result.memo_probe, "notes": result.notes, "flags": guards.changed_flags(pinned),
            "side_stream_samples": result.side_stream_samples, "host_bound_samples": result.host_bound_samples,
            "launches": launches, "stress_sets": len(input_sets) - n_base,
            "audited_calls": audit.audited if audit is not None else None,
            "audit_recorder": audit.recorder_name if audit is not None else None,
            "blind_windows": audit.blind_windows if audit is not None else 0,
            "fresh_calls": fresh.offered, "fresh_kept": save_kept(ctx, index, base, fresh)}


# Three windows of eight calls in the loop's first stretch, then one in every block of the same length after it.
# Eight, not four: a candidate that computes honestly until several calls come back to back (a cadence sniff) and
# was slowed at a window's start, or by a busy machine, is back to its timed route inside the window.
AUDIT_WINDOWS, AUDIT_WINDOW_CALLS = 3, 8


def audit_window_starts(rng, shortest: int, max_calls: int) -> set[int]:
    """One window's first call in each block of the timed loop. The first AUDIT_WINDOWS blocks together are the
    loop's shortest length (`shortest` calls), so every call of a loop that stops there may be watched; the blocks
    go on to `max_calls`, so a candidate that changes after call 60, or 600, meets windows there too."""
    block = max(-(-shortest // AUDIT_WINDOWS), AUDIT_WINDOW_CALLS)
    return {b * block + rng.randrange(block - AUDIT_WINDOW_CALLS + 1) for b in range(-(-max_calls // block))}


def timed_audit(ctx: dict[str, Any], index: int, calls_per_base_call: float = 1.0):
    """The windows of timed calls a GPU grading records (portable.timing.TimedAudit): AUDIT_WINDOW_CALLS
    consecutive calls each, opening at trial-loop calls drawn from the grading's secret seed, one in each block of
    the loop (audit_window_starts), so every stretch of the timed loop may be the one watched.
    `calls_per_base_call`: the loop's calls per call on a base set (stress sets take turns with the base sets and
    give no sample), which sets the loop's shortest length."""
    import random

    from kernelbench.eval.portable.timing import TimedAudit

    job = ctx["job"]
    trials = int(job["timing"]["trials"])
    max_trials = max(int(job["timing"].get("max_trials") or trials), trials)
    # the samples plus the audited calls (left out of the samples), with the stress calls between them
    shortest = math.ceil((trials + AUDIT_WINDOWS * AUDIT_WINDOW_CALLS) * calls_per_base_call)
    rng = random.Random(f"{mix_rotation_seed(job, index)}:audit")
    # far past any loop's end (a set of ints is cheap)
    starts = audit_window_starts(rng, shortest, 20 * math.ceil(max_trials * calls_per_base_call) + shortest)
    recorder, name = window_recorder(ctx)
    return TimedAudit(recorder, starts, AUDIT_WINDOW_CALLS, recorder_name=name)


def window_recorder(ctx: dict[str, Any]):
    """Kernel names through CUPTI directly (torch's profiler stays off and no trace function is set, so a candidate
    asking either is told the same in a recorded call as in another); where CUPTI cannot be used, torch's profiler
    with CUDA activity only (no aten recording: it would slow the window's calls enough for a cadence watcher to
    notice). Returns the recorder and its name, which the shape's result notes."""
    from kernelbench.eval.integrity.cupti_kernels import CuptiUnavailable, kernel_recorder

    try:
        return kernel_recorder().recording, "cupti"
    except (CuptiUnavailable, OSError) as exc:
        return (lambda: _launch_recorder(ctx["device"], True, _problem_code(ctx), kernels_only=True),
                f"torch profiler ({exc})")


def kept_copy(torch, out: Any) -> Any:
    """A kept timed output: its exact tensors cloned at once (a later replay, or the candidate, cannot change
    them), or why it is refused (the same exact-type rule as the checked outputs)."""
    items, single, error = exact_tensors(torch, out)
    if items is None:
        return error
    return {"single": single, "tensors": [t.detach().clone() for t in items]}


def save_kept(ctx: dict[str, Any], index: int, base: list[dict], fresh: Reservoir) -> list[dict[str, Any]]:
    """The kept fresh calls' outputs as files beside the result, with what the judge needs to rebuild their
    inputs: the base case and the permutation seed."""
    from kernelbench.eval.tensorfile import save_tensors

    records = []
    for j, kept in enumerate(fresh.kept):
        record = {"case": base[kept.base]["id"], "seed": kept.seed, "call": kept.call, "of": fresh.offered}
        if isinstance(kept.output, str):
            record["type_error"] = kept.output
        else:
            name = f"fresh_{index}_{j}.kbt"
            save_tensors(Path(ctx["job"]["out_dir"]) / name, kept.output["tensors"], single=kept.output["single"])
            record["file"] = name
        records.append(record)
    return records


def mix_rotation_seed(job: dict[str, Any], index: int) -> int | None:
    """The shape's rotation seed, from the grading's secret one (grade.Grader.run_timing)."""
    seed = job.get("rotation_seed")
    return None if seed is None else int(seed) * 1_000_003 + index


class TimedJudge:
    """Validates every timed output. A candidate grading's (job["judge_timed"]) goes through the judge's own
    comparison (judge.judged_comparison: tolerance, exact metadata, the Kahan row-sum evidence, the problem's
    compare() hook with pristine inputs) against the candidate's checked output of the same case, which the judge
    has passed; the library lines timed for baselines keep the plain tolerance (their checks are not the judge's).
    Kahan findings of a failed timed call are kept for the report."""

    def __init__(self, ctx: dict[str, Any], cases: list[dict], input_sets: list[list]):
        from kernelbench.eval.tensorfile import load_output

        job, self.torch = ctx["job"], ctx["torch"]
        self.cases, self.findings = cases, []
        self.expected = [load_output(Path(job["expected_dir"]) / f"{job['expected_prefix']}_{c['id']}.kbt",
                                     ctx["device"]) for c in cases]
        self.full, self.tolerance = bool(job.get("judge_timed")), job["tolerance"]
        self.sizes: dict[str, list] = job.get("error_sizes") or {}
        self.ctx: dict[str, Any] = {}
        self.pristine: list[list | None] = [None] * len(cases)
        if self.full:
            from kernelbench.eval.judge import kahan_problem
            from kernelbench.eval.portable.guards import clone_inputs

            self.ctx = {"torch": self.torch, "job": job, "reference": ctx["reference"],
                        "kahan": kahan_problem(Path(job["problem_dir"]))}
            if callable(getattr(ctx["reference"], "compare", None)):  # the hook reads inputs a call may have edited
                self.pristine = [clone_inputs(s) for s in input_sets]

    def __call__(self, out: Any, k: int) -> list[str]:
        if not self.full:
            from kernelbench.eval.portable.compare import compare_outputs

            return compare_outputs(out, self.expected[k], self.tolerance).messages
        from kernelbench.eval.integrity.profiling import unrecorded

        with unrecorded():  # the grader's checks are not the candidate's launches
            return self.judge(out, k)

    def judge(self, out: Any, k: int) -> list[str]:
        from kernelbench.eval.judge import judged_comparison
        from kernelbench.eval.tensorfile import tensor_meta

        case = {**self.cases[k], "id": f"{self.cases[k]['id']} (timed call)"}
        meta = [tensor_meta(t) for t in _tensors(self.torch, out) if type(t) is self.torch.Tensor]
        # the checked output stands in for the fp64 oracle: the evidence only recovers the row's terms from it
        result, kahan = judged_comparison(self.ctx, case, out, self.expected[k], self.pristine[k],
                                          self.expected[k], meta)
        kahan += self.precision(out, k) if result.ok else []
        self.findings += kahan
        messages = result.messages + [f"{f['check']}: {f['message']} ({f['evidence']})" for f in kahan]
        label = self.cases[k].get("label", "base")
        return [f"[{label}] {m}" for m in messages] if label != "base" and messages else messages

    def precision(self, out: Any, k: int) -> list[dict]:
        """The check stage's error-size detector, for the timed calls of a case the judge measured against its fp64
        oracle: the timed output's distance from the checked one, less the checked output's own error, is a lower
        bound on the timed output's error; held to the detector's limits, it tells a call that drops precision
        once timed (the timed stage holds no oracle: it would be the answer)."""
        sizes = self.sizes.get(self.cases[k]["id"])
        if not sizes:
            return []
        from types import SimpleNamespace

        from kernelbench.eval.judge import relative_rms
        from kernelbench.eval.verdict import error_size_findings

        outs, exps = _tensors(self.torch, out), _tensors(self.torch, self.expected[k])
        case = SimpleNamespace(id=f"{self.cases[k]['id']} (timed call; its error bounded below by its distance from "
                                  "the checked output)")
        found = []
        for size in sizes:
            i = size["output"]
            bound = max(0.0, relative_rms(outs[i], exps[i]) - size["candidate"])
            found += [f for f in error_size_findings(case, {**size, "candidate": bound}) if f.severity == "error"]
        return [f.model_dump(mode="json", by_alias=True) for f in found]


def _tensors(torch, out: Any) -> list:
    """An output as the list of its parts (a tensor alone, or the items of a tuple or list)."""
    return [out] if type(out) is torch.Tensor else list(out) if type(out) in (tuple, list) else []


if __name__ == "__main__":
    sys.exit(main())
