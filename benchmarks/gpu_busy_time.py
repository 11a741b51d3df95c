"""Can the GPU's own busy time, read through NVML from outside the timed process, check a timed loop's medians?

The grader's clock today is wall time around each paced call, which holds the call and the pacer's overhead (fresh
inputs, the output's fingerprint, the pipe): on most shapes the overhead is many times the call, so the clock
cannot tell a true median from a rewritten one (docs/integrity.md, "The grader's clock"). NVML's GPU Performance
Monitoring (GPM, Hopper and later) counts how long the GPU was busy between two samples, device-wide and from any
process; the host's share of the overhead is idle time there. This benchmark asks whether that count is precise
enough: loops of calls with known device time (CUDA events around each call), host gaps between calls standing in
for the pacer's overhead, and GPM's busy time over the loop beside the events' sum.

    python benchmarks/gpu_busy_time.py [--calls 200] [--gaps-us 0 600]

Prints, per (workload, gap, calls): the loop's wall time, the events' sum, GPM's GRAPHICS_UTIL x the sampled
interval, and their ratio; GPU only, and it says so where GPM is not supported.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

WORKLOADS = {  # name: (matrix side, dtype) of one matmul, from about 10 us to about 1 ms on an H100
    "mm1024": (1024, torch.bfloat16),
    "mm2048": (2048, torch.bfloat16),
    "mm4096": (4096, torch.bfloat16),
    "mm8192": (8192, torch.bfloat16),
}


def gpm(nvml, handle):
    """A function running `loop` between two GPM samples: (interval s, {metric: percent})."""
    metrics = {"graphics_util": nvml.NVML_GPM_METRIC_GRAPHICS_UTIL, "sm_util": nvml.NVML_GPM_METRIC_SM_UTIL}

    def measure(loop):
        first, second = nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()
        try:
            torch.cuda.synchronize()
            nvml.nvmlGpmSampleGet(handle, first)
            started = time.perf_counter()
            loop()
            torch.cuda.synchronize()
            interval = time.perf_counter() - started
            nvml.nvmlGpmSampleGet(handle, second)
            request = nvml.c_nvmlGpmMetricsGet_t()
            request.version = nvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(metrics)
            request.sample1, request.sample2 = first, second
            for i, metric in enumerate(metrics.values()):
                request.metrics[i].metricId = metric
            nvml.nvmlGpmMetricsGet(request)
            return interval, {name: request.metrics[i].value for i, name in enumerate(metrics)}
        finally:
            nvml.nvmlGpmSampleFree(first)
            nvml.nvmlGpmSampleFree(second)

    return measure


def timed_loop(side: int, dtype, calls: int, gap_us: float) -> tuple[Callable[[], None], list]:
    a = torch.randn(side, side, device="cuda", dtype=dtype)
    b = torch.randn(side, side, device="cuda", dtype=dtype)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()

    def loop():
        for start, end in events:
            start.record()
            a @ b
            end.record()
            end.synchronize()  # the pacer waits for each call's output before the next
            until = time.perf_counter() + gap_us * 1e-6
            while time.perf_counter() < until:  # the host's share of the overhead: the GPU idles
                pass

    return loop, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--gaps-us", type=float, nargs="+", default=[0.0, 600.0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pynvml as nvml

    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    print(f"GPU: {torch.cuda.get_device_name()}, driver {nvml.nvmlSystemGetDriverVersion()}")
    try:
        supported = nvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice
    except nvml.NVMLError as exc:
        print(f"GPM query failed: {exc}")
        return 1
    print(f"GPM supported: {bool(supported)}")
    if not supported:
        return 1
    measure = gpm(nvml, handle)
    print("workload | gap us | calls | wall ms | events sum ms | GPM busy ms (graphics util x interval) | "
          "busy / events | sm util %")
    for name, (side, dtype) in WORKLOADS.items():
        for gap in args.gaps_us:
            for calls in args.calls:
                for _ in range(args.repeat):
                    loop, events = timed_loop(side, dtype, calls, gap)
                    try:
                        interval, values = measure(loop)
                    except nvml.NVMLError as exc:
                        print(f"{name} | {gap:g} | {calls} | GPM failed: {exc}")
                        continue
                    summed = sum(s.elapsed_time(e) for s, e in events)
                    busy = values["graphics_util"] / 100 * interval * 1e3
                    print(f"{name} | {gap:g} | {calls} | {interval * 1e3:.2f} | {summed:.3f} | {busy:.3f} | "
                          f"{busy / summed:.3f} | {values['sm_util']:.1f}")
    per_call(nvml, handle, measure)
    return 0


def per_call(nvml, handle, measure) -> None:
    """GPM around each single call (the pacer could sample at each call's nonce and its DONE): the busy time of
    one call against its events, median and spread over 30 calls per workload."""
    import statistics

    print("\nper call: workload | calls | events median us | GPM busy median us | busy/events p10 / median / p90")
    for name, (side, dtype) in WORKLOADS.items():
        ratios, busy, timed = [], [], []
        for _ in range(30):
            loop, events = timed_loop(side, dtype, 1, 0.0)
            try:
                interval, values = measure(loop)
            except nvml.NVMLError as exc:
                print(f"{name} | GPM failed: {exc}")
                break
            event_ms = events[0][0].elapsed_time(events[0][1])
            busy.append(values["graphics_util"] / 100 * interval * 1e3)
            timed.append(event_ms)
            ratios.append(busy[-1] / event_ms)
        if ratios:
            q = statistics.quantiles(ratios, n=10)
            print(f"{name} | {len(ratios)} | {statistics.median(timed) * 1e3:.1f} | "
                  f"{statistics.median(busy) * 1e3:.1f} | {q[0]:.3f} / {statistics.median(ratios):.3f} / {q[-1]:.3f}")


if __name__ == "__main__":
    raise SystemExit(main())
