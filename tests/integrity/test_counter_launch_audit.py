"""The call the hardware-counter pass measures runs with torch's profiler off, like a timed call: its kernel
names go through the launch audit too (a candidate behaving only while the profiler records shows them there)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelbench.eval.integrity.counters import CounterReading, unprofiled_launch_findings
from kernelbench.eval.protocol import ShapeTiming

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


def _audit_timed(checked: dict[str, float], timed: dict[int, ShapeTiming]):
    """The timing stage's launch audit of the timed calls, on a plan of the Kahan problem (nothing compiled)."""
    from kernelbench.base.models import Grading
    from kernelbench.eval.grading import GradingState
    from kernelbench.eval.integrity.hooks import load_guards
    from kernelbench.eval.stages.timing import audit_timed_launches
    from kernelbench.problems.loader import load_problem_spec

    plan = SimpleNamespace(guards=load_guards(), build_env={}, options=SimpleNamespace(lint=True), device="cpu",
                           spec=load_problem_spec(Path(__file__).resolve().parents[2] / "problems" / "04_kahan_softmax"))
    state = GradingState(Grading(), launches=checked)
    audit_timed_launches(plan, state, timed)
    return state


def test_library_only_in_the_timed_calls_is_refused():
    state = _audit_timed({"aten::exp": 0.0, "aten::sum": 0.0},
                         {0: ShapeTiming(samples_ms=[1.0], launches={"aten::exp": 0.0, "aten::_softmax": 0.0}),
                          1: ShapeTiming()})
    assert [f.klass for f in state.findings] == [1] and "timed calls only" in state.findings[0].message
    assert any("[launch audit, timed calls] ERROR class 1" in line for line in state.log.check)


def test_timed_calls_seen_when_checked_are_not_reported_twice():
    state = _audit_timed({"aten::_softmax": 0.0},
                         {0: ShapeTiming(launches={"aten::_softmax": 0.0}), 1: ShapeTiming(error="boom")})
    assert state.findings == []


@pytest.mark.parametrize("name, refused", [
    ("triton_per_fused__softmax_0", True), ("cpp_fused__softmax__to_copy_0", True),
    ("triton_red_fused_amax_exp_sub_sum_0", False), ("triton_fused_softmax_kernel", False),
    ("_kahan_softmax_kernel", False), ("triton_poi_fused_add_mul_3", False),
])
def test_a_forbidden_op_compiled_by_torch_compile_keeps_its_name(name, refused):
    """torch.compile names its generated kernels after the aten ops fused into them."""
    from kernelbench.eval.integrity.launches import forbidden_launch_reason
    from kernelbench.eval.integrity.rules import rules_for_spec
    from kernelbench.problems.loader import load_problem_spec

    rules = rules_for_spec(load_problem_spec(Path(__file__).resolve().parents[2] / "problems" / "04_kahan_softmax"))
    assert (forbidden_launch_reason(name, rules) is not None) is refused
