"""The call the hardware-counter pass measures runs with torch's profiler off, like a timed call: its kernel
names go through the launch audit too (a candidate behaving only while the profiler records shows them there)."""

from __future__ import annotations

from types import SimpleNamespace

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
