"""The CUPTI kernel recorder of the timed windows on a GPU: calibration time, the names it records for a softmax
and a row sum, the time a window adds around a call (enable, flush, disable), and torch's profiler state during
it (must be off: that is the point of recording through CUPTI directly).

    python3 benchmarks/gpu_cupti_smoke.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    import torch

    from kernelbench.eval.integrity.cupti_kernels import kernel_recorder

    started = time.perf_counter()
    recorder = kernel_recorder()
    print(f"calibrated in {time.perf_counter() - started:.3f} s")
    x = torch.randn(64, 4096, device="cuda")
    profiler_on = []
    with recorder.recording() as names:
        torch.softmax(x, -1)
        x.sum(-1)
        profiler_on.append(torch.autograd.profiler._is_profiler_enabled)
    print("recorded:", sorted(names))
    print("torch profiler enabled while recording:", profiler_on[0])
    window_ms = []
    for _ in range(20):
        torch.cuda.synchronize()
        began = time.perf_counter()
        with recorder.recording():
            torch.softmax(x, -1)
        window_ms.append((time.perf_counter() - began) * 1e3)
    plain_ms = []
    for _ in range(20):
        torch.cuda.synchronize()
        began = time.perf_counter()
        torch.softmax(x, -1)
        torch.cuda.synchronize()
        plain_ms.append((time.perf_counter() - began) * 1e3)
    print(f"one call in a window: median {statistics.median(window_ms):.3f} ms; "
          f"the same call synchronised, no window: {statistics.median(plain_ms):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
