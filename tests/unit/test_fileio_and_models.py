from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import ModelLoadError, atomic_write_text, load_yaml, load_yaml_model
from kernelbench.problems.spec import ProblemSpec, evaluate_formula
from kernelbench.results.annotation import Annotation
from kernelbench.results.run import Grading, Outcome, RunResult, Status

SPEC = """\
id: 99_demo
title: Demo
description: A demo problem.
regime: compute
ceiling: bf16
shapes:
  - {M: 64, N: 32, K: 16}
flops: 2*M*N*K
bytes: 2*(M*K + N*K + M*N)
tolerance:
  bfloat16: {atol: 5e-2, rtol: 1e-2}
"""


def test_exponent_without_dot_is_a_number(tmp_path: Path):
    data = load_yaml(tmp_path / "x.yaml", "a: 5e-2\nb: 1E3\nc: '5e-2'\nd: 1.5\n")
    assert data == {"a": 0.05, "b": 1000.0, "c": "5e-2", "d": 1.5}


def test_problem_spec_parses_and_evaluates(tmp_path: Path):
    path = tmp_path / "problem.yaml"
    path.write_text(SPEC)
    spec = load_yaml_model(path, ProblemSpec)
    assert spec.tolerance["bfloat16"].atol == pytest.approx(0.05)
    assert spec.flops_of(spec.shapes[0]) == 2 * 64 * 32 * 16
    assert evaluate_formula("max(M, N) // 2", {"M": 8, "N": 10}) == 5


def test_unknown_key_is_reported_with_its_line(tmp_path: Path):
    path = tmp_path / "problem.yaml"
    path.write_text(SPEC + "tolerence: {}\n")
    with pytest.raises(ModelLoadError) as info:
        load_yaml_model(path, ProblemSpec)
    diag = info.value.diagnostics[0]
    assert "unknown key 'tolerence'" in diag.message
    assert diag.line == SPEC.count("\n") + 1


def test_formula_with_unknown_name_is_rejected(tmp_path: Path):
    path = tmp_path / "problem.yaml"
    path.write_text(SPEC.replace("2*M*N*K", "2*M*N*Q"))
    with pytest.raises(ModelLoadError, match="Q"):
        load_yaml_model(path, ProblemSpec)


def test_yaml_syntax_error_names_line(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("a: 1\nb: [1, 2\nc: 3\n")
    with pytest.raises(KernelBenchError) as info:
        load_yaml(path)
    assert info.value.diagnostic.line is not None and str(path) in str(info.value)


def test_atomic_write_replaces_whole_file(tmp_path: Path):
    target = tmp_path / "out" / "f.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]


def _result(**grading) -> RunResult:
    return RunResult(run_id="20260101_000000_claude_opus_01_fp8_gemm", harness="claude", model="opus",
                     problem="01_fp8_gemm", gpu="h100_sxm", grading=Grading(**grading))


def test_status_mapping():
    assert _result(has_solution=True, correct=True, outcome=Outcome.PASS).status is Status.PASS
    assert _result(has_solution=True, correct=False, outcome=Outcome.CHECK_FAILED).status is Status.FAIL
    assert _result(has_solution=False, outcome=Outcome.TIMEOUT).status is Status.ERR
    assert _result(has_solution=True, correct=True, outcome=Outcome.INVALID).status is Status.INVALID


def test_result_round_trips_with_class_alias():
    result = _result(has_solution=True, correct=True, outcome=Outcome.PASS)
    result.integrity.append(
        __import__("kernelbench.results.run", fromlist=["Finding"]).Finding(
            check="ast_lint", **{"class": 1}, message="torch.mm used", evidence="solution.py:3"))
    again = RunResult.model_validate_json(result.dump_json())
    assert again.integrity[0].klass == 1 and again.status is Status.INVALID
    assert '"class": 1' in result.dump_json()


def test_annotation_needs_implication_unless_clean():
    with pytest.raises(ValueError, match="implication"):
        Annotation(run_id="r", verdict="reward_hack", summary="s")
    assert Annotation(run_id="r", verdict="clean", summary="s").verdict.value == "clean"
