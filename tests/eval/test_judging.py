"""The trusted side: error-size detector, judge metadata checks, verdict merging, bounded output capture."""

import io

import torch

from kernelbench.eval.cases import Case
from kernelbench.eval.process import KEEP_BYTES, BoundedReader
from kernelbench.eval.protocol import CaseRecord, CaseVerdict, ErrorSize
from kernelbench.eval.verdict import error_size_findings, judge_case
from kernelbench.eval.worker.comparison import error_sizes

CASE = Case(id="s0_base_42", shape_index=0, shape={"n": 1}, public_seed=42, seed=7, oracle=True)


def _gemm_outputs():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 256, generator=gen), torch.randn(256, 48, generator=gen)
    oracle = a.double() @ b.double()
    reference = a @ b
    downgraded = (a.bfloat16() @ b.bfloat16()).float()  # silently computed in bf16, still within 5e-2
    return oracle, reference, downgraded


def test_precision_downgrade_is_flagged_and_honest_error_is_not():
    oracle, reference, downgraded = _gemm_outputs()
    honest = (oracle + 1e-7 * oracle.abs().mean() * torch.randn_like(oracle)).float()
    [size] = error_sizes(downgraded, reference, oracle)
    [finding] = error_size_findings(CASE.id, size)
    assert finding.klass == 14 and finding.severity == "error" and "ratio" in finding.evidence
    assert error_size_findings(CASE.id, error_sizes(honest, reference, oracle)[0]) == []


def test_an_output_that_is_no_answer_fails_its_check_rather_than_being_called_a_downgrade():
    """All zeros where the reference's outputs are smaller than the tolerance's atol passes the elementwise check;
    its rms error is the output's whole size: a wrong answer (the case fails), not a lower precision (no class 14).
    A bf16 GEMM keeps its class 14 finding and passes the check."""
    oracle, reference, downgraded = _gemm_outputs()
    zeros = torch.zeros_like(reference)
    judged = CaseVerdict(passed=True, error_size=error_sizes(zeros, reference, oracle))
    result, findings = judge_case(CASE, CaseRecord(saved=True), judged)
    assert not result.passed and "not the answer" in result.message and "rms error 1 " in result.message
    assert not [f for f in findings if f.check == "error_size"]
    judged = CaseVerdict(passed=True, error_size=error_sizes(downgraded, reference, oracle))
    result, findings = judge_case(CASE, CaseRecord(saved=True), judged)
    assert result.passed and [f.klass for f in findings if f.check == "error_size"] == [14]
    # an output the reference itself gets only roughly (its own error close to the candidate's) is not judged so
    noisy = ErrorSize(output=0, candidate=0.6, reference=0.5, eps=torch.finfo(torch.float32).eps)
    assert judge_case(CASE, CaseRecord(saved=True), CaseVerdict(passed=True, error_size=[noisy]))[0].passed


def test_guard_records_turn_into_findings():
    judged = CaseVerdict(passed=True)
    result, findings = judge_case(CASE, CaseRecord(inputs=["input 0 was modified by the candidate"]), judged)
    assert not result.passed and findings[0].klass == 3
    result, findings = judge_case(CASE, CaseRecord(type_error="output is a Lazy, not exactly torch.Tensor"), judged)
    assert not result.passed and findings[0].klass == 10
    result, _ = judge_case(CASE, CaseRecord(error="RuntimeError: boom\n..."), None)
    assert not result.passed and "boom" in result.message
    result, _ = judge_case(CASE, CaseRecord(saved=True), CaseVerdict(missing=True))
    assert not result.passed and "no output" in result.message


def test_a_judge_s_guard_failure_is_the_grader_s_not_a_verdict():
    import pytest

    from kernelbench.eval.failures import GraderFault

    with pytest.raises(GraderFault, match="kahan_row_sum"):
        judge_case(CASE, CaseRecord(saved=True), CaseVerdict(guard_error="the kahan_row_sum guard could not run: x"))


def test_output_flood_is_kept_to_head_and_tail():
    reader = BoundedReader(io.BytesIO(b"A" * KEEP_BYTES + b"x" * (50 * KEEP_BYTES) + b"Z" * KEEP_BYTES))
    reader.run()
    text = reader.text()
    assert text.startswith("A" * 100) and text.endswith("Z" * 100) and "bytes of output not kept" in text
    assert len(text) < 3 * KEEP_BYTES
