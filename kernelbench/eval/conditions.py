"""The GPU's conditions across the timed loop: its clocks, temperature, power and clocks-event (throttle) reasons,
sampled through NVML by the grader's own process while the bench stage runs.

Whatever the bench stage's process reports is the candidate's to forge (kernelbench.eval.pacing), so the grader
samples the GPU itself, from a thread of its own started before the stage's process and stopped after it is
killed (`GpuSampler`, started by kernelbench.eval.process.start_stage). Each shape's samples are the ones taken
while the grader's pacer was answering that shape's calls: the pacer stamps its own clock (time.monotonic_ns, the
sampler's) at every READY and COMMIT, and READY carries the shape's index, so the stretch from a shape's first
nonce to its last commitment is that shape's timed loop (warm-up included), as the grader saw it
(kernelbench.eval.stages.conditions assigns them).

A sample whose reasons hold a thermal or power slowdown (`THROTTLING`) was taken with the clocks held down by heat
or power; a shape with such a sample is flagged. The GPU idling, a clock setting or sync boost are not slowdowns
of the work. Where NVML cannot be used (nvidia-ml-py missing, no driver: a CPU machine) the conditions say "not
measured" and why; no number is ever filled in without a reading behind it.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kernelbench.base.models import GpuConditions, Range

SAMPLE_EVERY_S = 0.02
# NVML's clocks-event reasons (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*): bits fixed by its ABI
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
THROTTLING = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # the clocks held down by power or heat
NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0


@dataclass(frozen=True)
class Sample:
    """One reading of the GPU; a quantity NVML would not give is None."""

    at_ns: int                       # time.monotonic_ns(), the pacer's clock
    sm_mhz: int | None = None
    memory_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    reasons: int | None = None       # the clocks-event reasons' bits

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.sm_mhz, self.memory_mhz, self.temperature_c, self.power_w, self.reasons))

    @property
    def throttled(self) -> bool:
        return self.reasons is not None and bool(self.reasons & THROTTLING)


def reason_names(bits: int) -> list[str]:
    names = [name for bit, name in REASONS.items() if bits & bit]
    unknown = bits & ~sum(REASONS)
    return names + ([f"unknown_{unknown:#x}"] if unknown else [])


def not_measured(reason: str) -> GpuConditions:
    return GpuConditions(measured=False, reason=reason)


def load_nvml() -> ModuleType:
    import pynvml  # nvidia-ml-py, in the eval extra

    return pynvml


class GpuSampler(threading.Thread):
    """Reads one GPU every `every_s` seconds from the grader's process until `end()`. `begin()` opens NVML and
    finds the GPU: where it cannot, `unavailable` says why and no thread runs. `nvml` is the pynvml module (a test
    passes a fake one)."""

    def __init__(self, target: str, nvml: Any = None, every_s: float = SAMPLE_EVERY_S):
        super().__init__(daemon=True, name="kernelbench-gpu-sampler")
        self.target, self.nvml, self.every_s = target, nvml, every_s
        self.samples: list[Sample] = []
        self.unavailable = ""
        self.gpu = ""
        self.failed: dict[str, str] = {}  # a quantity NVML refused, with its first error
        self._handle: Any = None
        self._ended = threading.Event()
        self._opened = False

    def begin(self) -> GpuSampler:
        try:
            self.nvml = self.nvml if self.nvml is not None else load_nvml()
        except ImportError as exc:
            self.unavailable = f"nvidia-ml-py is not installed ({exc}); pip install -e '.[eval]'"
            return self
        try:
            self.nvml.nvmlInit()
        except self._errors as exc:  # no driver, no library
            self.unavailable = f"NVML could not be initialised: {exc}"
            return self
        self._opened = True
        try:
            self._handle, self.gpu = self._find_gpu()
        except self._errors + (ValueError,) as exc:
            self.unavailable = f"NVML has no GPU {self.target!r}: {exc}"
            self._close()
            return self
        self.start()
        return self

    @property
    def _errors(self) -> tuple[type[BaseException], ...]:
        """What NVML raises (pynvml.NVMLError and its subclasses, one per return code)."""
        return (self.nvml.NVMLError,)

    def _find_gpu(self) -> tuple[Any, str]:
        """The GPU by its UUID (what the judge reported), else by its index in NVML's order."""
        if self.target.startswith(("GPU-", "MIG-")):
            return self.nvml.nvmlDeviceGetHandleByUUID(self.target), self.target
        if self.target.strip().isdigit():
            index = int(self.target)
            return self.nvml.nvmlDeviceGetHandleByIndex(index), f"index {index} in NVML's order"
        raise ValueError("neither a GPU UUID nor an index")

    def run(self) -> None:
        while True:
            self.samples.append(self.read())
            if self._ended.wait(self.every_s):
                return

    def read(self) -> Sample:
        nvml, handle = self.nvml, self._handle
        # nvidia-ml-py before 12.535 names it after throttling
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        power_mw = self._query("power", nvml.nvmlDeviceGetPowerUsage, handle)
        return Sample(at_ns=time.monotonic_ns(),
                      sm_mhz=self._query("sm clock", nvml.nvmlDeviceGetClockInfo, handle, NVML_CLOCK_SM),
                      memory_mhz=self._query("memory clock", nvml.nvmlDeviceGetClockInfo, handle, NVML_CLOCK_MEM),
                      temperature_c=self._query("temperature", nvml.nvmlDeviceGetTemperature, handle,
                                                NVML_TEMPERATURE_GPU),
                      power_w=None if power_mw is None else power_mw / 1000.0,
                      reasons=self._query("throttle reasons", reasons, handle))

    def _query(self, what: str, fn: Any, *args: Any) -> Any:
        """One quantity, or None where NVML refuses it (not supported on this GPU, the GPU lost)."""
        try:
            return fn(*args)
        except self._errors as exc:
            self.failed.setdefault(what, str(exc))
            return None

    def end(self) -> None:
        self._ended.set()
        if self.is_alive():
            self.join(timeout=5)
        self._close()

    def _close(self) -> None:
        if self._opened:
            self._opened = False
            try:
                self.nvml.nvmlShutdown()
            except self._errors:
                pass  # nothing to keep: the readings are taken

    def conditions(self, start_ns: int | None = None, end_ns: int | None = None) -> GpuConditions:
        """The summary of the samples within [start_ns, end_ns] (the whole stage without them), widened by one
        sampling period either side: a stretch shorter than the period still has the readings around it."""
        if self.unavailable:
            return not_measured(self.unavailable)
        slack = int(self.every_s * 1e9)
        chosen = [s for s in self.samples if (start_ns is None or s.at_ns >= start_ns - slack)
                  and (end_ns is None or s.at_ns <= end_ns + slack)]
        return summarise(chosen, gpu=self.gpu, period_ms=self.every_s * 1e3, failed=self.failed)


def summarise(samples: list[Sample], *, gpu: str, period_ms: float,
              failed: dict[str, str] | None = None) -> GpuConditions:
    """Min / median / max of the clocks and power, the hottest reading, every reason seen and the share of
    samples under a thermal or power slowdown."""
    if not samples:
        return not_measured("no NVML sample was taken within this stretch of the bench stage")
    if all(s.empty for s in samples):
        refused = "; ".join(f"{what}: {error}" for what, error in sorted((failed or {}).items()))
        return not_measured(f"NVML gave no reading of this GPU ({refused or 'every query failed'})")
    read = [s.reasons for s in samples if s.reasons is not None]
    seen = 0
    for bits in read:
        seen |= bits
    throttled = sum(1 for s in samples if s.throttled)
    temperatures = [s.temperature_c for s in samples if s.temperature_c is not None]
    return GpuConditions(
        measured=True, gpu=gpu, samples=len(samples), period_ms=period_ms,
        sm_clock_mhz=_range([s.sm_mhz for s in samples]),
        memory_clock_mhz=_range([s.memory_mhz for s in samples]),
        max_temperature_c=float(max(temperatures)) if temperatures else None,
        power_w=_range([s.power_w for s in samples]),
        throttle_reasons=reason_names(seen),
        throttled_share=throttled / len(read) if read else None,
        throttled=throttled > 0, refused=dict(failed or {}))


def _range(values: list[int | float | None]) -> Range | None:
    known = [float(v) for v in values if v is not None]
    if not known:
        return None
    return Range(min=min(known), median=float(statistics.median(known)), max=max(known))


def describe(conditions: GpuConditions) -> str:
    if not conditions.measured:
        return f"not measured: {conditions.reason}"
    parts = [f"{conditions.samples} samples every {conditions.period_ms:g} ms"]
    for label, span, unit in (("SM clock", conditions.sm_clock_mhz, "MHz"),
                              ("memory clock", conditions.memory_clock_mhz, "MHz"),
                              ("power", conditions.power_w, "W")):
        if span is not None:
            parts.append(f"{label} {span.median:g} {unit} ({span.min:g}-{span.max:g})")
    if conditions.max_temperature_c is not None:
        parts.append(f"max {conditions.max_temperature_c:g} C")
    parts.append("reasons: " + (", ".join(conditions.throttle_reasons) or "none"))
    parts += [f"{what} not read ({error})" for what, error in sorted(conditions.refused.items())]
    if conditions.throttled:
        parts.append(f"TIMED WHILE THROTTLED ({conditions.throttled_share or 0:.0%} of the samples under a "
                     "thermal or power slowdown)")
    return "; ".join(parts)
