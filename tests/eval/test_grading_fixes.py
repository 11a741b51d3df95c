"""Grader plumbing without a full grading: template checks, partner stages, the FP8 SASS requirement, the Kahan
finding, stage limits on the command line, and the lint switched off for reference and baseline lines."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelbench.base.models import Grading
from kernelbench.eval import grading, process
from kernelbench.eval.cli import stage_limit
from kernelbench.eval.grading import GradingOptions, GradingPlan, GradingState
from kernelbench.eval.integrity.hooks import load_guards
from kernelbench.eval.integrity.templates import Snapshot, grading_template_findings
from kernelbench.eval.protocol import ShapeTiming
from kernelbench.eval.verdict import timing_guard_findings
from kernelbench.eval.worker.comparison import Comparer
from kernelbench.problems.loader import load_module
from kernelbench.problems.loader import load_problem_spec
from kernelbench.problems.problem import open_problem

DECK = Path(__file__).resolve().parents[2] / "problems"


def test_source_folder_is_reported_never_written_workspace_copy_is_restored(tmp_path):
    problem, workspace = tmp_path / "problem", tmp_path / "ws"
    problem.mkdir(), workspace.mkdir()
    source, copy = problem / "reference.py", workspace / "check.py"
    source.write_text("original"), copy.write_text("workspace original")
    before = Snapshot.take([source, copy])
    source.write_text("edited"), copy.write_text("edited")
    found = grading_template_findings(before, problem)
    by_path = {Path(f.file).name: f for f in found}
    assert by_path["reference.py"].severity == "warning" and source.read_text() == "edited"
    assert by_path["check.py"].severity == "error" and copy.read_text() == "workspace original"
    assert all(f.check == "template_hash" and f.klass == 12 for f in found)
    assert "-workspace original" in by_path["check.py"].evidence  # the diff against the bytes from before


def _handle(*argv: str) -> SimpleNamespace:
    return SimpleNamespace(proc=subprocess.Popen([sys.executable, "-c", *argv]), started=time.monotonic(),
                           watch=None)


@pytest.mark.slow
def test_a_stage_is_stopped_soon_after_its_partner_ends():
    waiting, partner = _handle("import time; time.sleep(60)"), _handle("pass")
    started = time.monotonic()
    try:
        assert process.wait_either(waiting, partner, limit_s=60) is True
        assert time.monotonic() - started < process.PARTNER_GRACE_S + 10
    finally:
        waiting.proc.kill(), waiting.proc.wait(), partner.proc.wait()
    done, other = _handle("pass"), _handle("import time; time.sleep(60)")
    try:
        assert process.wait_either(done, other, limit_s=60) is False
    finally:
        other.proc.kill(), other.proc.wait()


def _plan(tmp_path: Path, problem: str, device: str) -> GradingPlan:
    return GradingPlan.create(DECK / problem / "reference.py", open_problem(DECK / problem), tmp_path,
                              GradingOptions(device=device, shapes="smoke"), load_guards())


def test_required_sass_of_the_problem_reaches_the_fp8_check(monkeypatch, tmp_path):
    from kernelbench.eval.integrity import sass
    from kernelbench.eval.protocol import DeviceInfo
    from kernelbench.eval.stages import audits

    seen = {}
    monkeypatch.setattr(sass, "fp8_shape_findings", lambda per_shape, code_of, errors, required, enforce:
                        seen.update(required=required, enforce=enforce, shapes=per_shape) or [])
    plan = _plan(tmp_path, "01_fp8_gemm", "cuda")
    state = GradingState(Grading(), launches={"my_fp8_gemm_kernel": 1.0},
                         launches_by_shape={0: {"my_fp8_gemm_kernel": 1.0}}, device_info=DeviceInfo(arch="sm_90"))
    audits.launches(plan, state)
    assert seen == {"required": ["QGMMA", "QMMA"], "enforce": True, "shapes": {0: {"my_fp8_gemm_kernel": 1.0}}}


def test_naive_softmax_accumulation_gets_a_kahan_finding_with_evidence():
    from kernelbench.eval.integrity.numerics import lane_sums

    problem = DECK / "04_kahan_softmax"
    ref = load_module(problem / "reference.py", "reference")
    shape = {"rows": 4, "vocab": 65536}
    model = ref.Model(**ref.get_init_kwargs(shape))
    (x,) = ref.get_inputs(shape, 7, "cpu", case="absorb")
    oracle = ref.oracle(model, x)
    terms = (oracle / oracle.amax(dim=-1, keepdim=True)).float()
    comparer = Comparer(torch, ref, "cpu", load_guards().kahan_bound(load_problem_spec(problem), open_problem(problem)))
    naive = (terms / lane_sums(terms, 1, False).float()[:, None]).float()
    found = comparer.kahan_evidence("s0_stress0", naive, oracle)
    assert found and found[0].klass == 14 and "row" in found[0].evidence and "Kahan" in found[0].evidence
    assert comparer.kahan_evidence("s0_stress0", oracle.float(), oracle) == []


def test_a_kahan_guard_that_raises_is_the_grader_s_failure_not_a_verdict():
    """The row-sum check runs on an output the comparison accepted: if it raises, no finding and no verdict on
    the candidate can be trusted, so the stage reports the guard's failure (the grading becomes a harness error)."""
    from kernelbench.eval.failures import GuardFailed

    problem = DECK / "04_kahan_softmax"
    ref = load_module(problem / "reference.py", "reference")
    comparer = Comparer(torch, ref, "cpu", 1e-6)
    with pytest.raises(GuardFailed, match="kahan_row_sum guard could not run"):
        comparer.kahan_evidence("c", torch.empty(0, 4), torch.empty(0, 4, dtype=torch.float64))


def test_stage_limits_parse_or_say_what_is_wrong():
    assert stage_limit("check=20") == ("check", 20.0) and stage_limit("shape_seconds=5") == ("shape_seconds", 5.0)
    for bad in ("check", "checks=3", "bench=-1", "bench=soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="STAGE=SECONDS"):
            stage_limit(bad)


class _Stop(Exception):
    pass


def test_reference_and_baseline_lines_are_graded_without_the_lint(monkeypatch, toy_problem):
    seen = []

    def init(solution, problem_dir, workdir, options, guards):
        seen.append(options.lint)
        raise _Stop

    monkeypatch.setattr(grading.GradingPlan, "create", init)
    from kernelbench.eval.baselines import measure_baselines
    from kernelbench.eval.problem_check import check_problem

    for call in (lambda: check_problem(toy_problem, "cpu"), lambda: measure_baselines(toy_problem, "cpu")):
        with pytest.raises(_Stop):
            call()
    assert seen == [False, False]


def test_reference_weights_fall_back_to_the_cpu_the_same_way_in_every_process(toy_problem):
    """On this CPU-only build the CUDA path raises, and the weights are exactly the CPU-seeded ones."""
    from kernelbench.eval.worker.context import build_reference

    ref = load_module(toy_problem / "reference.py", "reference")
    kwargs = ref.get_init_kwargs({"M": 4, "N": 5, "K": 6})
    on_cpu = build_reference(torch, ref.Model, [], kwargs, 11, torch.device("cpu")).state_dict()
    fallback = build_reference(torch, ref.Model, [], kwargs, 11, torch.device("cuda")).state_dict()
    assert on_cpu.keys() == fallback.keys() and all(torch.equal(on_cpu[k], fallback[k]) for k in on_cpu)
    assert all(v.device.type == "cpu" for v in fallback.values())


@pytest.mark.parametrize("error", [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.75 GiB"),
                                   RuntimeError("CUDA error: out of memory"),
                                   RuntimeError("CUDA error: an illegal memory access was encountered")])
def test_reference_weights_never_fall_back_because_the_gpu_was_full(error):
    """Out of GPU memory (another grading holding the card) is raised, not answered with the CPU's draw: the CPU
    generator gives other weights, and a stage that fell back when the judge did not was graded against them."""
    from kernelbench.eval.worker.context import build_reference

    builds = []

    class Reference(torch.nn.Module):
        def __init__(self):
            super().__init__()
            builds.append(1)
            if len(builds) == 1:  # the first build, the one on the GPU, meets a full card
                raise error
            self.w = torch.nn.Parameter(torch.randn(3))

    with pytest.raises(type(error)):
        build_reference(torch, Reference, [], {}, 11, torch.device("cuda"))
    assert len(builds) == 1  # no second draw on the CPU


def test_a_reference_that_cannot_build_on_the_gpu_still_falls_back():
    """A property of the reference's own code (here a TypeError under a CUDA default device) is the same in every
    process, so the CPU draw stays the answer to it."""
    from kernelbench.eval.worker.context import build_reference

    builds = []

    class Reference(torch.nn.Module):
        def __init__(self):
            super().__init__()
            builds.append(1)
            if len(builds) == 1:  # the build on the GPU
                raise TypeError("expected a CPU tensor")
            self.w = torch.nn.Parameter(torch.randn(3))

    built = build_reference(torch, Reference, [], {}, 11, torch.device("cuda"))
    torch.manual_seed(11)
    assert torch.equal(built.w, torch.randn(3))


def test_kahan_finding_only_for_outputs_right_element_by_element(tmp_path):
    """NaN (a stale buffer) is the comparison's to report, not blamed on the accumulation."""
    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.eval.worker.judge import Expected, judge_output

    problem = DECK / "04_kahan_softmax"
    ref = load_module(problem / "reference.py", "reference")
    spec = load_problem_spec(problem)
    shape = {"rows": 2, "vocab": 4096}
    model = ref.Model(**ref.get_init_kwargs(shape))
    (x,) = ref.get_inputs(shape, 3, "cpu", case="absorb")
    expected, oracle = model(x), ref.oracle(model, x)
    tolerance = {k: v.model_dump() for k, v in spec.tolerance.items()}
    judge = SimpleNamespace(ctx=SimpleNamespace(torch=torch, job=SimpleNamespace(device="cpu")),
                            comparer=Comparer(torch, ref, "cpu", 1e-6, tolerance))
    path = tmp_path / "out.kbt"
    save_tensors(path, [torch.full_like(expected, float("nan"))], single=True)
    verdict = judge_output(judge, "c", False, path, Expected(expected=expected, oracle=oracle, inputs=[x]))
    assert not verdict.passed and verdict.integrity == []


def test_a_blind_timed_window_on_a_gpu_is_reported_with_its_recorder():
    from kernelbench.eval.gradelog import timing_notes

    timing = ShapeTiming(samples_ms=[1.0], blind_windows=1, audited_calls=8, audit_recorder="cupti")
    found = [f for f in timing_guard_findings(0, timing, "cuda") if f.check == "timed_windows"]
    assert len(found) == 1 and found[0].klass == 11 and found[0].severity == "warning"
    assert "recorder: cupti" in found[0].evidence
    assert any("8 timed calls audited" in line for line in timing_notes(0, timing))
    on_cpu = timing.model_copy(update={"audited_calls": None})
    assert not [f for f in timing_guard_findings(0, on_cpu, "cpu") if f.check == "timed_windows"]


def test_a_gpu_without_a_persisting_l2_reset_says_so(monkeypatch):
    """The reset of persisting L2 lines (class 13) needs cuda-python or the CUDA runtime library; where neither is
    found the timing goes on with the flush alone and the report carries an info finding saying so."""
    from kernelbench.eval.portable import timing as timing_module

    monkeypatch.setattr(timing_module, "_reset_fn", None)
    monkeypatch.setattr(timing_module, "_find_persisting_reset", lambda: None)
    assert timing_module.persisting_l2_reset_found() is False
    timing_module.reset_persisting_l2()  # a no-op, not an error
    found = [f for f in timing_guard_findings(0, ShapeTiming(samples_ms=[1.0], persisting_l2_reset=False), "cuda")
             if f.check == "l2_reset"]
    assert len(found) == 1 and found[0].klass == 13 and found[0].severity == "info"
    assert not [f for f in timing_guard_findings(0, ShapeTiming(samples_ms=[1.0]), "cpu") if f.check == "l2_reset"]
