"""GPU profiles: the physical ceilings scores are fractions of, and detection of the GPU we run on.

Every peak is a *dense* figure (NVIDIA's datasheets print sparse tensor-core throughput; those are halved here).
Each number names its source; `kernelbench hardware calibrate` measures the achievable ceilings on the card in
hand and prints them beside these, so a wrong datasheet entry shows up as a ratio far from ~0.7-0.95.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.errors import KernelBenchError

PEAK_KEYS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")

# torch dtype names and common spellings → the peak key that governs them
DTYPE_ALIASES = {
    "float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "tensorfloat32": "tf32",
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "e4m3": "fp8", "e5m2": "fp8", "int8": "int8", "uint8": "int8", "nvfp4": "fp4", "mxfp4": "fp4",
    "float4_e2m1fn_x2": "fp4",
}


class GpuProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    name: str
    arch: str                     # sm_90, sm_100, sm_120
    sm_count: int
    l2_bytes: int
    dram_gbps: float              # GB/s, 1e9 bytes per second
    peak_tflops: dict[str, float] = Field(default_factory=dict)  # dense, keys from PEAK_KEYS
    memory_gb: float = 0.0
    name_patterns: tuple[str, ...] = ()  # substrings of torch.cuda.get_device_name that identify it
    source: str = ""


MB = 1024 * 1024

# NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column; sparse tensor figures halved). fp64 is the FP64
# tensor-core figure (67); FP32 non-tensor 67. The H200 datasheet (SXM) prints the same compute figures.
HOPPER_SXM_PEAKS = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9,
                    "int8": 1978.9}

PROFILES: dict[str, GpuProfile] = {
    # Compute: HOPPER_SXM_PEAKS (H100 datasheet, SXM column). 132 SMs and 50 MiB L2: NVIDIA H100 whitepaper
    # (SXM5 product), and cudaDeviceProp on the lent H100 80GB HBM3 (132 SMs, 52428800 bytes L2).
    "h100_sxm": GpuProfile(
        key="h100_sxm", name="NVIDIA H100 SXM5 80GB", arch="sm_90", sm_count=132, l2_bytes=50 * MB,
        dram_gbps=3350.0, memory_gb=80, peak_tflops=HOPPER_SXM_PEAKS,
        name_patterns=("H100 80GB HBM3", "H100 SXM"),
        source="NVIDIA H100 datasheet (SXM5), sparse/2"),
    # Same datasheet, H100 PCIe column: FP64 TC 51, FP32 51, TF32 378, BF16 756, FP8 1513, INT8 1513 (dense);
    # HBM2e 2.0 TB/s; 114 SMs (whitepaper).
    "h100_pcie": GpuProfile(
        key="h100_pcie", name="NVIDIA H100 PCIe 80GB", arch="sm_90", sm_count=114, l2_bytes=50 * MB,
        dram_gbps=2000.0, memory_gb=80,
        peak_tflops={"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0,
                     "fp8": 1513.0, "int8": 1513.0},
        name_patterns=("H100 PCIe",),
        source="NVIDIA H100 datasheet (PCIe), sparse/2"),
    # NVIDIA H200 Tensor Core GPU datasheet (SXM): compute as H100 SXM, HBM3e 141 GB at 4.8 TB/s. L2: the lent
    # H200 reported 60 MB through cudaDeviceProp (detection replaces it with the device's own value anyway).
    "h200": GpuProfile(
        key="h200", name="NVIDIA H200 SXM 141GB", arch="sm_90", sm_count=132, l2_bytes=60 * MB,
        dram_gbps=4800.0, memory_gb=141, peak_tflops=HOPPER_SXM_PEAKS,
        name_patterns=("H200",),
        source="NVIDIA H200 datasheet (SXM), sparse/2"),
    # NVIDIA HGX B200 datasheet, 8-GPU totals divided by 8 and sparse figures halved: FP4 18→9 PF, FP8 9→4.5 PF,
    # INT8 4.5 POPS, BF16/FP16 4.5→2.25 PF, TF32 2.2→1.1 PF, FP64/FP64 TC 37 TF; HBM3e 8 TB/s, 180 GB.
    # FP32 (non-tensor) is not on that datasheet: 75 TF is the figure NVIDIA's Blackwell brief gives for B200.
    # 148 SMs and 126 MiB L2 as reported by cudaDeviceProp on B200 systems (detection reads the real value).
    "b200": GpuProfile(
        key="b200", name="NVIDIA B200 180GB", arch="sm_100", sm_count=148, l2_bytes=126 * MB,
        dram_gbps=8000.0, memory_gb=180,
        peak_tflops={"fp64": 37.0, "fp32": 75.0, "tf32": 1100.0, "bf16": 2250.0, "fp16": 2250.0,
                     "fp8": 4500.0, "int8": 4500.0, "fp4": 9000.0},
        name_patterns=("B200",),
        source="NVIDIA HGX B200 datasheet, per GPU, sparse/2"),
    # NVIDIA RTX Blackwell architecture whitepaper, RTX PRO 6000 Blackwell Workstation Edition (GB202, 188 SMs,
    # 128 MB L2, 96 GB GDDR7 at 1792 GB/s): FP32 125 TF; tensor dense with FP32 accumulate: FP16/BF16 503.8,
    # TF32 251.9, FP8 1007.6, INT8 1007.6, FP4 2015.2; FP64 is 1/64 of FP32.
    "rtx_pro_6000": GpuProfile(
        key="rtx_pro_6000", name="NVIDIA RTX PRO 6000 Blackwell", arch="sm_120", sm_count=188, l2_bytes=128 * MB,
        dram_gbps=1792.0, memory_gb=96,
        peak_tflops={"fp64": 1.97, "fp32": 125.0, "tf32": 251.9, "bf16": 503.8, "fp16": 503.8,
                     "fp8": 1007.6, "int8": 1007.6, "fp4": 2015.2},
        name_patterns=("RTX PRO 6000",),
        source="NVIDIA RTX Blackwell whitepaper (RTX PRO 6000 WE), sparse/2"),
}


def get_profile(key: str) -> GpuProfile:
    try:
        return PROFILES[key]
    except KeyError:
        raise KernelBenchError(f"unknown GPU profile '{key}'",
                               hint=f"use one of: {', '.join(sorted(PROFILES))}") from None


def normalize_dtype(dtype: str) -> str:
    """'torch.bfloat16', 'bfloat16', 'bf16' → 'bf16'; 'dram' stays 'dram'."""
    name = str(dtype).removeprefix("torch.").lower()
    return DTYPE_ALIASES.get(name, name)


def match_profile(device_name: str, sm_count: int | None) -> GpuProfile | None:
    """The profile whose name pattern appears in the device name (and whose SM count agrees, when known)."""
    for profile in PROFILES.values():
        named = any(p.lower() in device_name.lower() for p in profile.name_patterns)
        if named and (sm_count is None or sm_count == profile.sm_count):
            return profile
    return None


def detect_profile(device_index: int = 0) -> GpuProfile | None:
    """Profile of the current CUDA GPU with its L2 size read from the device; None without a known GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(device_index)
    profile = match_profile(props.name, props.multi_processor_count)
    if profile is None:
        return None
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return profile.model_copy(update={"l2_bytes": l2}) if l2 > 0 else profile


def ceiling_for(profile: GpuProfile, regime: str, dtype: str) -> tuple[float, Literal["TFLOP/s", "GB/s"]]:
    """The governing ceiling: (TFLOP/s, "TFLOP/s") for compute-bound work, (GB/s, "GB/s") for memory-bound."""
    if regime == "memory":
        return profile.dram_gbps, "GB/s"
    if regime != "compute":
        raise KernelBenchError(f"regime '{regime}' is neither compute nor memory")
    key = normalize_dtype(dtype)
    if key not in profile.peak_tflops:
        raise KernelBenchError(f"{profile.name} has no dense {key} peak",
                               hint=f"known peaks: {', '.join(profile.peak_tflops)}")
    return profile.peak_tflops[key], "TFLOP/s"



def cuda_available() -> bool:
    """Whether this machine has a CUDA GPU that torch can use (False without torch or with a CPU-only build)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(requested: str = "auto") -> str:
    """'auto' is what the machine has: CUDA when present, else the CPU. Asking for CUDA where there is none is
    refused here, before any stage starts, rather than failing later inside the reference's process."""
    if requested == "auto":
        return "cuda" if cuda_available() else "cpu"
    if requested == "cuda" and not cuda_available():
        raise KernelBenchError("--device cuda: this machine has no CUDA GPU (torch.cuda.is_available() is false); "
                               "leave --device out or pass --device cpu to run on the CPU")
    return requested


def resolve_shapes(requested: str, device: str) -> str:
    """'auto' is every shape on a GPU and the problem's small smoke shapes on the CPU (a full shape there would take
    hours)."""
    if requested == "auto":
        return "full" if device == "cuda" else "smoke"
    return requested
