"""`kernelbench hardware calibrate`: measure achievable ceilings on this GPU and set them beside the datasheet.

A datasheet peak that is off shows up as a ratio far from the usual 0.7-0.95 (GEMM) or 0.8-0.95 (copy).
"""

from __future__ import annotations

from typing import Any

from kernelbench.hardware import GpuProfile

GEMM_SIZE = 8192
COPY_BYTES = 4 << 30


def _median_ms(fn, warmup: int = 5, trials: int = 20) -> float:
    import statistics

    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(trials):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def measure_bf16_gemm(n: int = GEMM_SIZE) -> float:
    import torch

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = _median_ms(lambda: torch.mm(a, b))
    return 2 * n**3 / (ms * 1e-3) / 1e12


def measure_fp8_gemm(n: int = GEMM_SIZE) -> float:
    import torch

    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants
    one = torch.tensor(1.0, device="cuda")
    ms = _median_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    return 2 * n**3 / (ms * 1e-3) / 1e12


def measure_copy(nbytes: int = COPY_BYTES) -> float:
    """Device-to-device copy, counting bytes read plus bytes written."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def calibrate(profile: GpuProfile) -> list[dict[str, Any]]:
    rows = []
    for name, fn, key, unit in (("bf16 GEMM 8192^3 (cuBLAS)", measure_bf16_gemm, "bf16", "TFLOP/s"),
                                ("fp8 e4m3 GEMM 8192^3 (torch._scaled_mm)", measure_fp8_gemm, "fp8", "TFLOP/s"),
                                ("D2D copy 4 GiB (read+write)", measure_copy, "dram", "GB/s")):
        datasheet = profile.dram_gbps if key == "dram" else profile.peak_tflops.get(key)
        try:
            measured = fn()
            rows.append({"what": name, "key": key, "unit": unit, "measured": measured, "datasheet": datasheet,
                         "ratio": measured / datasheet if datasheet else None})
        except Exception as exc:
            rows.append({"what": name, "key": key, "unit": unit, "measured": None, "datasheet": datasheet,
                         "ratio": None, "error": f"{type(exc).__name__}: {exc}"})
    return rows
