"""The GPU's conditions across the timed loop (kernelbench/eval/conditions.py), read by the grader's own process
through NVML: here a fake NVML module stands in for the driver, so the summaries, the throttle flag and the
assignment of samples to shapes are checked on any machine."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from kernelbench.base.models import Grading, ShapeResult
from kernelbench.eval import conditions
from kernelbench.eval.conditions import GpuSampler, Sample, summarise
from kernelbench.eval.grading import GradingState
from kernelbench.eval.pacing import PacedCall, PacedShape
from kernelbench.eval.process import StageRun
from kernelbench.eval.stages.conditions import record_conditions

UUID = "GPU-0f0e0d0c-1111-2222-3333-444455556666"
IDLE, POWER_CAP, HW_THERMAL, SYNC_BOOST = 0x1, 0x4, 0x40, 0x10


class NVMLError(Exception):
    pass


class FakeNvml:
    """The few calls of pynvml the sampler makes, answering from `state`, which a test changes as it goes."""

    NVMLError = NVMLError

    def __init__(self, *, init_error: str | None = None, refuse: tuple[str, ...] = ()):
        self.init_error, self.refuse = init_error, refuse
        self.state = {"sm": 1980, "mem": 2619, "temp": 40, "power_mw": 120_000, "reasons": IDLE}
        self.opened = 0

    def nvmlInit(self):
        if self.init_error:
            raise NVMLError(self.init_error)
        self.opened += 1

    def nvmlShutdown(self):
        self.opened -= 1

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid != UUID:
            raise NVMLError("Not Found")
        return "handle"

    def nvmlDeviceGetHandleByIndex(self, index):
        return "handle"

    def _answer(self, what: str):
        if what in self.refuse:
            raise NVMLError("Not Supported")
        return self.state[what]

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self._answer("sm" if kind == conditions.NVML_CLOCK_SM else "mem")

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self._answer("temp")

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._answer("power_mw")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self._answer("reasons")


def _sample(at_ms: float, sm: int = 1980, temp: int = 60, power: float = 500.0, reasons: int = 0) -> Sample:
    return Sample(at_ns=int(at_ms * 1e6), sm_mhz=sm, memory_mhz=2619, temperature_c=temp, power_w=power,
                  reasons=reasons)


def test_a_summary_gives_the_clocks_range_the_hottest_reading_and_the_share_throttled():
    samples = [_sample(0, sm=1980, temp=61), _sample(20, sm=1755, temp=74, power=700.0, reasons=POWER_CAP),
               _sample(40, sm=1410, temp=83, power=690.0, reasons=HW_THERMAL | POWER_CAP),
               _sample(60, sm=1980, temp=70, reasons=SYNC_BOOST)]
    summary = summarise(samples, gpu=UUID, period_ms=20.0)
    assert summary.measured and summary.samples == 4 and summary.gpu == UUID
    assert (summary.sm_clock_mhz.min, summary.sm_clock_mhz.median, summary.sm_clock_mhz.max) == (1410, 1867.5, 1980)
    assert summary.max_temperature_c == 83 and summary.power_w.max == 700.0
    assert summary.throttle_reasons == ["sw_power_cap", "sync_boost", "hw_thermal_slowdown"]
    assert summary.throttled and summary.throttled_share == 0.5


def test_an_idle_gpu_or_a_clock_setting_is_not_a_slowdown():
    samples = [_sample(0, reasons=IDLE), _sample(20, reasons=IDLE | SYNC_BOOST | 0x2), _sample(40, reasons=0)]
    summary = summarise(samples, gpu=UUID, period_ms=20.0)
    assert not summary.throttled and summary.throttled_share == 0.0
    assert summary.throttle_reasons == ["gpu_idle", "applications_clocks_setting", "sync_boost"]
    assert conditions.reason_names(0x1 | 0x400) == ["gpu_idle", "unknown_0x400"]


def _paced(first_ms: float, last_ms: float, calls: int = 3) -> PacedShape:
    shape = PacedShape(2)
    step = (last_ms - first_ms) / (calls - 1)
    for i in range(calls):
        sent = int((first_ms + i * step) * 1e6)
        shape.calls.append(PacedCall(i + 1, i, sent, sent + 1000, 7, sent + 2000, 0))
    return shape


def _graded(samples: list[Sample], paced: dict[int, PacedShape], shapes: int = 3, device: str = "cuda"):
    sampler = GpuSampler(UUID, nvml=FakeNvml(), every_s=0.01)
    sampler.samples, sampler.gpu = samples, UUID
    state = GradingState(Grading(shapes=[ShapeResult(index=i, shape={"n": i}) for i in range(shapes)]))
    run = StageRun(role="bench", pacer=SimpleNamespace(shapes=paced), gpu=sampler if device == "cuda" else None)
    record_conditions(SimpleNamespace(device=device), state, run)
    return state


def test_samples_go_to_the_shape_whose_calls_the_pacer_was_answering():
    # shape 0 paced from 100 to 300 ms, shape 1 from 400 to 600 ms (throttled there), shape 2 never paced
    samples = [_sample(ms, sm=1980 if ms < 350 else 1500, reasons=0 if ms < 350 else POWER_CAP)
               for ms in range(0, 700, 10)]
    state = _graded(samples, {0: _paced(100, 300), 1: _paced(400, 600)})
    first, second, unpaced = (s.conditions for s in state.grading.shapes)
    assert first.samples == 23 and first.sm_clock_mhz.min == 1980 and not first.throttled  # 90..310 ms
    assert second.throttled and second.throttled_share == 1.0 and second.sm_clock_mhz.max == 1500
    assert not unpaced.measured and "not paced" in unpaced.reason
    whole = state.grading.conditions
    assert whole.samples == 70 and whole.throttled and 0 < whole.throttled_share < 1
    assert any("shape 1: GPU conditions" in line and "TIMED WHILE THROTTLED" in line for line in state.log.bench)


def test_a_shape_shorter_than_the_period_keeps_the_readings_around_it():
    samples = [_sample(ms) for ms in range(0, 100, 10)]
    state = _graded(samples, {0: _paced(41, 43)}, shapes=1)
    assert state.grading.shapes[0].conditions.samples == 2  # the readings at 40 and 50 ms


def test_a_cpu_grading_says_its_conditions_were_not_measured():
    state = _graded([], {}, shapes=1, device="cpu")
    assert state.grading.conditions.reason == "the grading ran on the CPU"
    assert not state.grading.shapes[0].conditions.measured


def test_the_sampler_reads_the_gpu_from_its_own_thread_until_ended():
    nvml = FakeNvml()
    sampler = GpuSampler(UUID, nvml=nvml, every_s=0.002).begin()
    assert sampler.is_alive() and nvml.opened == 1
    time.sleep(0.05)
    nvml.state.update(sm=1350, temp=88, reasons=HW_THERMAL)
    time.sleep(0.05)
    sampler.end()
    assert not sampler.is_alive() and nvml.opened == 0
    taken = len(sampler.samples)
    time.sleep(0.02)
    assert len(sampler.samples) == taken > 10  # none after the end
    summary = sampler.conditions()
    assert summary.sm_clock_mhz.min == 1350 and summary.sm_clock_mhz.max == 1980
    assert summary.max_temperature_c == 88 and summary.power_w.median == 120.0 and summary.throttled


def test_a_quantity_nvml_refuses_is_left_out_not_made_up():
    sampler = GpuSampler(UUID, nvml=FakeNvml(refuse=("power_mw", "reasons")), every_s=0.002).begin()
    time.sleep(0.02)
    sampler.end()
    summary = sampler.conditions()
    assert summary.measured and summary.power_w is None and summary.throttled_share is None
    assert not summary.throttled and summary.sm_clock_mhz is not None
    assert sampler.failed == summary.refused == {"power": "Not Supported", "throttle reasons": "Not Supported"}
    assert "power not read (Not Supported)" in conditions.describe(summary)
    refused_all = FakeNvml(refuse=("sm", "mem", "temp", "power_mw", "reasons"))
    sampler = GpuSampler(UUID, nvml=refused_all, every_s=0.002).begin()
    time.sleep(0.01)
    sampler.end()
    assert not sampler.conditions().measured and "Not Supported" in sampler.conditions().reason


@pytest.mark.parametrize("nvml, target, why", [
    (FakeNvml(init_error="NVML Shared Library Not Found"), UUID, "NVML could not be initialised: NVML Shared"),
    (FakeNvml(), "GPU-not-this-one", "NVML has no GPU 'GPU-not-this-one': Not Found"),
    (FakeNvml(), "", "neither a GPU UUID nor an index"),
])
def test_without_nvml_or_the_gpu_the_conditions_say_why(nvml, target, why):
    sampler = GpuSampler(target, nvml=nvml).begin()
    assert not sampler.is_alive() and nvml.opened == 0
    summary = sampler.conditions()
    assert not summary.measured and why in summary.reason and summary.samples == 0
    assert summary.sm_clock_mhz is None and summary.max_temperature_c is None


def test_without_nvidia_ml_py_the_conditions_say_how_to_install_it(monkeypatch):
    def missing():
        raise ImportError("No module named 'pynvml'")

    monkeypatch.setattr(conditions, "load_nvml", missing)
    summary = GpuSampler(UUID).begin().conditions()
    assert not summary.measured and "nvidia-ml-py is not installed" in summary.reason


def test_the_real_nvml_here_either_reads_or_says_why():
    """This machine's own NVML (none on CI): the real module's failure is handled, never filled in."""
    sampler = GpuSampler(UUID).begin()  # no GPU has this UUID: on a GPU machine NVML says it has none such
    sampler.end()
    summary = sampler.conditions()
    assert not summary.measured and summary.reason


def test_torch_s_uuid_of_the_gpu_is_turned_into_nvml_s_name_for_it():
    from kernelbench.eval.worker.context import nvml_uuid

    assert nvml_uuid("0F0E0D0C-1111-2222-3333-444455556666") == UUID  # torch's text leaves "GPU-" out
    assert nvml_uuid(UUID) == UUID and nvml_uuid(None) is None and nvml_uuid("") is None


def test_a_bench_stage_is_watched_from_before_its_process_starts_until_it_is_killed(tmp_path, monkeypatch):
    """The stage's process (here one that fails at once on a problem that is not there) never touches the
    sampler: it runs in the grader's process, from start_stage to finish_stage."""
    from kernelbench.eval.process import finish_stage, start_stage
    from kernelbench.eval.protocol import BenchJob, TimingSettings

    nvml = FakeNvml()
    monkeypatch.setattr(conditions, "load_nvml", lambda: nvml)
    job = BenchJob(problem_dir=str(tmp_path / "none"), module=str(tmp_path / "none.py"), device="cpu", cases=[],
                   out_dir=str(tmp_path / "bench"), inputs_dir=str(tmp_path), model_seeds={}, tolerance={},
                   timing=TimingSettings(warmup=1, trials=1, max_trials=1, stderr_target=0.0,
                                         cuda_graph_below_ms=0.0, input_sets=1),
                   expected_dir=str(tmp_path), expected_prefix="out")
    before = time.monotonic_ns()
    handle = start_stage(job, cwd=tmp_path, watch_gpu=True, gpu_uuid=UUID)
    assert handle.gpu is not None and handle.gpu.is_alive()
    run = finish_stage(handle, 120)
    assert run.gpu is handle.gpu and not run.gpu.is_alive() and nvml.opened == 0
    assert run.gpu.samples and before <= run.gpu.samples[0].at_ns
    assert run.gpu.conditions().measured and run.gpu.conditions().gpu == UUID
