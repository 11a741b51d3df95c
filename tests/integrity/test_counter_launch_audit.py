"""The call the hardware-counter pass measures runs with torch's profiler off, like a timed call: its kernel
names go through the launch audit too (a candidate behaving only while the profiler records shows them there)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelbench.eval.integrity.counters import CounterReading, unprofiled_launch_findings

SOFTMAX = SimpleNamespace(forbidden=["torch.softmax"], forbidden_kernels=["cunn_SoftMax"])


def test_library_kernel_in_the_measured_call_is_refused():
    reading = CounterReading(kernels=["void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(...)",
                                      "triton_red_fused_exp_0"], sentinel=True)
    found = unprofiled_launch_findings(reading, SOFTMAX)
    assert [f.klass for f in found] == [1] and found[0].check == "launch_audit"
    assert "profiler off" in found[0].message and "cunn_SoftMax" in found[0].evidence


def test_own_kernels_in_the_measured_call_pass():
    reading = CounterReading(kernels=["softmax_kahan_kernel", "triton_red_fused_exp_0"], sentinel=True)
    assert unprofiled_launch_findings(reading, SOFTMAX) == []


def _grader_stub(checked: dict[str, float]):
    from pathlib import Path

    from kernelbench.eval.grade import Grader
    from kernelbench.problems.spec import load_problem_spec

    stub = SimpleNamespace(launches=checked, lint=True, findings=[], check_log=[],
                           spec=load_problem_spec(Path(__file__).resolve().parents[2] / "problems" / "04_kahan_softmax"))
    stub._add_findings = lambda label, found: Grader._add_findings(stub, label, found)
    stub.compiled_kernels = lambda: []  # nothing compiled by torch.compile here
    return stub, Grader.audit_timed_launches


def test_library_only_in_the_timed_calls_is_refused():
    stub, audit = _grader_stub({"aten::exp": 0.0, "aten::sum": 0.0})
    audit(stub, {"0": {"samples_ms": [1.0], "launches": {"aten::exp": 0.0, "aten::_softmax": 0.0}}, "1": {}})
    assert [f.klass for f in stub.findings] == [1] and "timed calls only" in stub.findings[0].message


def test_timed_calls_seen_when_checked_are_not_reported_twice():
    stub, audit = _grader_stub({"aten::_softmax": 0.0})
    audit(stub, {"0": {"launches": {"aten::_softmax": 0.0}}, "1": {"error": "boom"}})
    assert stub.findings == []


@pytest.mark.parametrize("name, refused", [
    ("triton_per_fused__softmax_0", True), ("cpp_fused__softmax__to_copy_0", True),
    ("triton_red_fused_amax_exp_sub_sum_0", False), ("triton_fused_softmax_kernel", False),
    ("_kahan_softmax_kernel", False), ("triton_poi_fused_add_mul_3", False),
])
def test_a_forbidden_op_compiled_by_torch_compile_keeps_its_name(name, refused):
    """torch.compile names its generated kernels after the aten ops fused into them."""
    from kernelbench.eval.integrity.launches import forbidden_launch_reason
    from kernelbench.eval.integrity.rules import rules_for_spec
    from kernelbench.problems.spec import load_problem_spec

    rules = rules_for_spec(load_problem_spec(Path(__file__).resolve().parents[2] / "problems" / "04_kahan_softmax"))
    assert (forbidden_launch_reason(name, rules) is not None) is refused
