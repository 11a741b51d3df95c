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

from kernelbench.eval import grade
from kernelbench.eval.cli import stage_limit
from kernelbench.eval.judge import kahan_evidence
from kernelbench.problems.loader import file_hashes, load_module

DECK = Path(__file__).resolve().parents[2] / "problems"


def test_source_folder_is_reported_never_written_workspace_copy_is_restored(tmp_path):
    problem, workspace = tmp_path / "problem", tmp_path / "ws"
    problem.mkdir(), workspace.mkdir()
    source, copy = problem / "reference.py", workspace / "check.py"
    source.write_text("original"), copy.write_text("workspace original")
    watched = [source, copy]
    before, hashes = grade._snapshot(watched), file_hashes(watched)
    source.write_text("edited"), copy.write_text("edited")
    found = grade.template_findings(before, hashes, problem)
    by_path = {Path(f.evidence).name: f for f in found}
    assert by_path["reference.py"].severity == "warning" and source.read_text() == "edited"
    assert by_path["check.py"].severity == "error" and copy.read_text() == "workspace original"


def _handle(*argv: str) -> SimpleNamespace:
    return SimpleNamespace(proc=subprocess.Popen([sys.executable, "-c", *argv]), started=time.monotonic())


def test_a_stage_is_stopped_soon_after_its_partner_ends():
    waiting, partner = _handle("import time; time.sleep(60)"), _handle("pass")
    started = time.monotonic()
    try:
        assert grade.wait_either(waiting, partner, limit_s=60) is True
        assert time.monotonic() - started < grade.PARTNER_GRACE_S + 10
    finally:
        waiting.proc.kill(), waiting.proc.wait(), partner.proc.wait()
    done, other = _handle("pass"), _handle("import time; time.sleep(60)")
    try:
        assert grade.wait_either(done, other, limit_s=60) is False
    finally:
        other.proc.kill(), other.proc.wait()


def test_required_sass_of_the_problem_reaches_the_fp8_check(monkeypatch, tmp_path):
    from kernelbench.eval.integrity import sass

    seen = {}
    monkeypatch.setattr(sass, "collect_sass", lambda roots: ([], []))
    monkeypatch.setattr(sass, "fp8_sass_check", lambda launched, kernels, errors, required=None:
                        seen.setdefault("required", required) and [])
    grader = grade.Grader(DECK / "01_fp8_gemm" / "reference.py", DECK / "01_fp8_gemm", "cuda", "smoke",
                          "candidate", dict(grade.STAGE_LIMITS_S), True, tmp_path)
    grader.launches, grader.device_info = {"my_fp8_gemm_kernel": 1.0}, {"arch": "sm_90"}
    grader.run_launch_checks()
    assert seen["required"] == ["QGMMA", "QMMA"]


def test_naive_softmax_accumulation_gets_a_kahan_finding_with_evidence():
    from kernelbench.eval.integrity.numerics import lane_sums

    problem = DECK / "04_kahan_softmax"
    ref = load_module(problem / "reference.py", "reference")
    shape = {"rows": 4, "vocab": 65536}
    model = ref.Model(**ref.get_init_kwargs(shape))
    (x,) = ref.get_inputs(shape, 7, "cpu", case="absorb")
    oracle = ref.oracle(model, x)
    terms = (oracle / oracle.amax(dim=-1, keepdim=True)).float()
    ctx = {"kahan": True, "torch": torch, "job": {"problem_dir": str(problem)}}
    case = {"id": "s0_stress0"}
    naive = (terms / lane_sums(terms, 1, False).float()[:, None]).float()
    found = kahan_evidence(ctx, case, naive, oracle)
    assert found and found[0]["class"] == 14 and "row" in found[0]["evidence"] and "Kahan" in found[0]["evidence"]
    assert kahan_evidence(ctx, case, oracle.float(), oracle) == []


def test_stage_limits_parse_or_say_what_is_wrong():
    assert stage_limit("check=20") == ("check", 20.0) and stage_limit("shape_seconds=5") == ("shape_seconds", 5.0)
    for bad in ("check", "checks=3", "bench=-1", "bench=soon"):
        with pytest.raises(argparse.ArgumentTypeError, match="STAGE=SECONDS"):
            stage_limit(bad)


class _Stop(Exception):
    pass


def test_reference_and_baseline_lines_are_graded_without_the_lint(monkeypatch, toy_problem):
    seen = []

    def init(self, solution, problem_dir, device, shapes_mode, line, limits, lint, workdir):
        seen.append(lint)
        raise _Stop

    monkeypatch.setattr(grade.Grader, "__init__", init)
    from kernelbench.eval.baselines import measure_baselines
    from kernelbench.problems.check import check_problem

    for call in (lambda: check_problem(toy_problem, "cpu"), lambda: measure_baselines(toy_problem, "cpu")):
        with pytest.raises(_Stop):
            call()
    assert seen == [False, False]


def test_reference_weights_fall_back_to_the_cpu_the_same_way_in_every_process(toy_problem):
    """On this CPU-only build the CUDA path raises, and the weights are exactly the CPU-seeded ones."""
    from kernelbench.eval.worker import build_reference

    ref = load_module(toy_problem / "reference.py", "reference")
    kwargs = ref.get_init_kwargs({"M": 4, "N": 5, "K": 6})
    on_cpu = build_reference(torch, ref, kwargs, 11, torch.device("cpu")).state_dict()
    fallback = build_reference(torch, ref, kwargs, 11, torch.device("cuda")).state_dict()
    assert on_cpu.keys() == fallback.keys() and all(torch.equal(on_cpu[k], fallback[k]) for k in on_cpu)
    assert all(v.device.type == "cpu" for v in fallback.values())


def test_kahan_finding_only_for_outputs_right_element_by_element(tmp_path):
    """NaN (a stale buffer) is the comparison's to report, not blamed on the accumulation."""
    from kernelbench.eval.judge import judge_output
    from kernelbench.eval.tensorfile import save_tensors
    from kernelbench.problems.spec import load_problem_spec

    problem = DECK / "04_kahan_softmax"
    ref = load_module(problem / "reference.py", "reference")
    spec = load_problem_spec(problem)
    shape = {"rows": 2, "vocab": 4096}
    model = ref.Model(**ref.get_init_kwargs(shape))
    (x,) = ref.get_inputs(shape, 3, "cpu", case="absorb")
    expected, oracle = model(x), ref.oracle(model, x)
    ctx = {"kahan": True, "torch": torch, "reference": ref, "clock": None,
           "job": {"problem_dir": str(problem), "device": "cpu",
                   "tolerance": {k: v.model_dump() for k, v in spec.tolerance.items()}}}
    path = tmp_path / "out.kbt"
    save_tensors(path, [torch.full_like(expected, float("nan"))], single=True)
    verdict = judge_output(ctx, {"id": "c"}, path, {"expected": expected, "oracle": oracle, "inputs": [x]})
    assert not verdict["passed"] and verdict["integrity"] == []


def test_a_blind_timed_window_on_a_gpu_is_reported_with_its_recorder(tmp_path):
    def grader_on(device):
        return grade.Grader(DECK / "04_kahan_softmax" / "reference.py", DECK / "04_kahan_softmax", device, "smoke",
                            "candidate", dict(grade.STAGE_LIMITS_S), True, tmp_path / device)

    raw = {"samples_ms": [1.0], "blind_windows": 1, "audited_calls": 8, "audit_recorder": "cupti"}
    grader = grader_on("cuda")
    grader._timing_guards(0, raw)
    found = [f for f in grader.findings if f.check == "timed_windows"]
    assert len(found) == 1 and found[0].klass == 11 and found[0].severity == "warning"
    assert "recorder: cupti" in found[0].evidence
    assert any("8 timed calls audited" in line for line in grader.bench_log)
    cpu = grader_on("cpu")
    cpu._timing_guards(0, {**raw, "audited_calls": None})
    assert not [f for f in cpu.findings if f.check == "timed_windows"]
