"""The grading's audits around the stage processes, each through the one guard surface (integrity.hooks): the
static lint, the grader's problem copy, what the checked calls launched, the hardware-counter pass, and the
speed-of-light gate."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from kernelbench.base.catalogue import finding
from kernelbench.eval import verdict
from kernelbench.eval.grading import GradingPlan, GradingState
from kernelbench.eval.roofline import faster_than_light
from kernelbench.problems.loader import file_hashes


def lint(plan: GradingPlan, state: GradingState) -> None:
    if not plan.options.lint:
        return
    started = time.monotonic()
    state.add("lint", plan.guards.static_findings(plan.solution, plan.spec))
    state.clock("lint", started)


def problem_copy(plan: GradingPlan, state: GradingState) -> None:
    """The problem files the stages import must be the ones copied before grading; a candidate that deleted or
    edited them is reported and the copy rebuilt from the bytes read before grading. The checked outputs later
    stages read again must still be what the judge compared (`changed_outputs`)."""
    rewritten = verdict.rewritten_output_findings(changed_outputs(plan, state))
    state.outputs_rewritten = bool(rewritten)
    state.add("checked outputs", rewritten)
    after = file_hashes(plan.pristine_files())
    changed = [Path(k).name for k, v in after.items() if v != plan.pristine_hashes[k]]
    if not changed:
        return
    state.findings += verdict.edited_copy_findings(changed)
    plan.problem.pristine_copy(plan.workdir / "problem")


def graded_copy(plan: GradingPlan, state: GradingState) -> None:
    """The solution every stage imports must be the bytes the lint read (read-only in the sandbox; a grading
    without one could see it rewritten by an earlier stage): reported and put back otherwise."""
    try:
        now = plan.module.read_bytes()
    except OSError:
        now = None
    if now != plan.graded_bytes:
        state.findings += verdict.rewritten_solution_findings(plan.module.name)
        plan.module.write_bytes(plan.graded_bytes)
    changed = [Path(p) for p, digest in file_hashes([Path(p) for p in plan.brought_hashes]).items()
               if digest != plan.brought_hashes[p]]
    # compiled bytecode an earlier stage left beside the solution (its folder accepts new files) is removed, so the
    # next stage imports the source the lint read, never a .pyc planted to stand in for it
    for cache in [p for p in plan.module.parent.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]:
        if cache.is_dir():
            shutil.rmtree(cache, ignore_errors=True)
        else:
            cache.unlink(missing_ok=True)
    for path in changed:  # a file beside it: put back from the solution's own folder
        rel = path.relative_to(plan.module.parent)
        state.findings += verdict.rewritten_solution_findings(str(rel))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((plan.solution.parent / rel).read_bytes())


def machine_code(plan: GradingPlan, state: GradingState):
    """The code of the kernels the solution built while grading (any folder its stages may write) or brought
    beside solution.py, read once per grading when first needed (integrity.machine_code)."""
    if state.machine_code is None:
        from kernelbench.eval.integrity.machine_code import MachineCode, NoMachineCode
        from kernelbench.eval.isolation import SHARED_WRITABLE

        if plan.device != "cuda":
            state.machine_code = NoMachineCode()
        else:
            built = [Path(p) for p in plan.build_env.values()] + [plan.workdir / n for n in SHARED_WRITABLE]
            # what a stage added beside the grader's copy (a build folder) is built here; what was copied there
            # with the solution is what it brought
            built.append(plan.module.parent)
            copied = {plan.module.parent / rel for rel in plan.brought.files} | {plan.module}
            state.machine_code = MachineCode(built, [plan.solution.parent], skip=copied)
    return state.machine_code


def log_machine_code(state: GradingState, code) -> None:
    """What reading the machine code cost, in the check log: a launch audit that takes minutes names its binaries."""
    if code.costs:
        state.stages["machine code"] = round(code.read_s, 3)
        state.log.check.append(f"[machine code] {len(code.costs)} binaries read in {code.read_s:.1f} s")
        state.log.check += [f"[machine code] {line}" for line in code.costs[:40]]


def launches(plan: GradingPlan, state: GradingState) -> None:
    """What actually ran in the checked calls: forbidden libraries (launch audit: a kernel compiled from the
    solution's own sources is its work whatever its name) and, for FP8 problems on a GPU, FP8 tensor-core code in
    the kernels that ran, shape by shape."""
    for name in plan.guards.compiled_kernels(plan.build_env):
        state.launches.setdefault(name, 0.0)
    if not plan.options.lint or not state.launches:
        return
    code = machine_code(plan, state)
    started = time.monotonic()
    state.add("launch audit", plan.guards.launch_findings(state.launches, plan.spec, own=code.own))
    state.clock("launch audit", started)
    log_machine_code(state, code)
    if plan.guards.needs_sass(plan.spec, plan.device):
        started = time.monotonic()
        state.add("fp8 sass", plan.guards.sass_findings(state.launches_by_shape, plan.spec,
                                                        arch=state.device_info.arch, code=code))
        state.clock("sass", started)
    if plan.device == "cuda" and "custom_kernel" in plan.spec.leak_checks:
        state.add("custom kernel", plan.guards.custom_kernel_findings(state.launches_by_shape, code))


def counters(plan: GradingPlan, state: GradingState) -> None:
    """One ncu pass over one timed call, in its own process under its own limit (never inside the timing): the
    call's kernels must read the bytes the problem must read (kernelbench.eval.integrity.counters)."""
    from kernelbench.eval.integrity.counters import ProbeTarget
    from kernelbench.eval.process import worker_env

    if not plan.guards.counters_apply(plan.device):
        return
    if not plan.options.counters:
        state.add("counters", plan.guards.counters_off())
        return
    started = time.monotonic()
    graded_copy(plan, state)
    if state.outputs_rewritten:  # it would judge its call by the candidate's new bytes (problem_copy: INVALID)
        return
    target = ProbeTarget(plan.pristine, plan.module, plan.workdir, plan.device, plan.model_seeds(),
                         {**worker_env(plan.device), **plan.build_env}, plan.isolation)
    state.add("counters", plan.guards.counter_findings(plan.spec, target, plan.timing_cases(),
                                                       plan.options.limit("counters"),
                                                       own=machine_code(plan, state).own,
                                                       measured=state.profiled_calls.append))
    state.clock("counters", started)


def changed_outputs(plan: GradingPlan, state: GradingState) -> dict[str, tuple[str, str]]:
    """The checked outputs later stages read again whose files differ from what the judge compared (by case: the
    judge's digest, the file's now, '' where it is gone)."""
    paths = {case_id: plan.workdir / "check" / f"out_{case_id}.kbt" for case_id in state.judged_digests}
    now = file_hashes(list(paths.values()))
    return {case_id: (judged, now[str(paths[case_id])]) for case_id, judged in state.judged_digests.items()
            if now[str(paths[case_id])] != judged}


def speed_of_light(plan: GradingPlan, state: GradingState) -> None:
    """No shape faster than the hardware allows (where the GPU has a profile), nor far faster than the kernels the
    counter pass measured for one call of it (`profiled_time`)."""
    if state.profile is not None:
        for shape in state.grading.shapes:
            message = faster_than_light(shape, plan.spec, state.profile)
            if message:
                state.findings.append(finding("speed_of_light", 15, message, f"{shape.median_ms:.4g} ms measured"))
    profiled_time(plan, state)


def profiled_time(plan: GradingPlan, state: GradingState) -> None:
    """The counter pass's call against the timed median of its shape (integrity.counters.profiled_time_findings)."""
    from kernelbench.eval.integrity.counters import profiled_time_findings

    medians = {shape.index: shape.median_ms for shape in state.grading.shapes}
    for call in state.profiled_calls:
        state.add("profiled time", profiled_time_findings(call, medians.get(call.shape_index)))
