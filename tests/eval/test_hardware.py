import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.hardware import PEAK_KEYS, PROFILES, ceiling_for, get_profile, match_profile, normalize_dtype


def test_every_profile_has_the_core_numbers():
    assert set(PROFILES) == {"h100_sxm", "h100_pcie", "h200", "b200", "rtx_pro_6000"}
    for profile in PROFILES.values():
        assert profile.sm_count > 0 and profile.l2_bytes > 0 and profile.dram_gbps > 0
        assert set(profile.peak_tflops) <= set(PEAK_KEYS)
        assert {"fp32", "tf32", "bf16", "fp16", "fp8", "int8"} <= set(profile.peak_tflops)
        # dense tensor-core ladder: each halving of precision doubles throughput
        assert profile.peak_tflops["fp8"] == pytest.approx(2 * profile.peak_tflops["bf16"], rel=0.01)


def test_blackwell_has_fp4_and_hopper_does_not():
    assert "fp4" in PROFILES["b200"].peak_tflops and "fp4" in PROFILES["rtx_pro_6000"].peak_tflops
    assert "fp4" not in PROFILES["h100_sxm"].peak_tflops


def test_ceiling_for_compute_and_memory():
    h100 = get_profile("h100_sxm")
    assert ceiling_for(h100, "compute", "fp8") == (1978.9, "TFLOP/s")
    assert ceiling_for(h100, "compute", "torch.bfloat16") == (989.4, "TFLOP/s")
    assert ceiling_for(h100, "memory", "dram") == (3350.0, "GB/s")
    with pytest.raises(KernelBenchError, match="no dense fp4 peak"):
        ceiling_for(h100, "compute", "fp4")
    with pytest.raises(KernelBenchError):
        get_profile("a100")


def test_detection_by_name_and_sm_count():
    assert match_profile("NVIDIA H100 80GB HBM3", 132).key == "h100_sxm"
    assert match_profile("NVIDIA H100 PCIe", 114).key == "h100_pcie"
    assert match_profile("NVIDIA H200", 132).key == "h200"
    assert match_profile("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 188).key == "rtx_pro_6000"
    assert match_profile("NVIDIA H100 80GB HBM3", 114) is None  # a cut-down part is not silently the SXM
    assert match_profile("NVIDIA A100-SXM4-80GB", 108) is None
    assert normalize_dtype("float8_e4m3fn") == "fp8" and normalize_dtype("dram") == "dram"
