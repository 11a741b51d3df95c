"""The timing protocol, the same for candidates and for the eager / compiled / SOTA lines.

Per timed call: flush L2 (a write over >= 2x the L2), reset persisting-L2 lines, keep the GPU busy a little
longer than the host needs to launch the call (a device-side spin, so the start event does not fire while the
host is still launching), take the next input set of the rotation (made fresh, with `fresh`: see fresh.py), time
with CUDA events around the call, then synchronise the whole device and record a third event (so work left on
side streams is counted: see `_measure`), validate the output (or keep it for the judge) outside the interval.
Warmup calls follow the very same path, so a candidate cannot tell warmup from scoring.

A sample is the device's interval: the launch cover hides the host's launch work as a graph replay does, so a
call's time does not depend on whether the grader could replay it. The host's time issuing the call is kept
beside it (a call whose host time exceeds its device time is host-bound: in an eager loop it would run at the
host's pace). Host work that needs the inputs' values waits for the device (a copy to the host synchronises), so
it lands inside the interval; what could escape it, work on values the candidate got some other way, is weighed by
the grader's own clock (kernelbench.eval.pacing).

Input protocols (`PROTOCOLS`): which tensors a timed call receives. "buffers" (the default, and what the score uses):
new values, never seen before, written into one set of tensors every call (the first input set's, when every set
has its layout), as a server with static input buffers does; "tensors": new values in tensors allocated for the
call; "same": the first input set's tensors and values every call, as most published boards time. After the scored loop, `compare` times a short eager loop under each
other protocol (every output validated, as in the scored loop), so a call whose speed depends on its inputs'
identity (a plan or a CUDA graph keyed on pointers) shows it. Stress input sets, when
given, are mixed into the rotation at seeded positions (`Rotation`): validated like every call, left out of the
samples. Kernels faster than `graph_below_ms` (0 by default: never) are timed by replaying a CUDA graph captured per
input set, where the replay is faithful (`faithful_graphs`).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from .fresh import Reservoir, draw_seed, freshen

Validate = Callable[[Any, int], list[str]]  # (output, input-set index) → problems, empty when fine

_perf_counter = time.perf_counter  # bound before any candidate code can patch the module attribute
SIDE_STREAM_MARGIN_MS = 0.03  # beyond the synchronise's own jitter
MIN_TRIALS_WHEN_OUT_OF_TIME = 5


InputProtocol = Literal["buffers", "tensors", "same"]  # as kernelbench.base.models.InputProtocol
PROTOCOLS: tuple[InputProtocol, ...] = ("buffers", "tensors", "same")


class TimedOutputInvalid(Exception):
    """A timed call returned a wrong output. `set_index`, `call_inputs` (the tensors the call was given) and
    `values` (where its values came from) let the caller call it again outside the timed loop (bench.py)."""

    set_index: int | None = None
    call_inputs: list | None = None
    values: list | None = None


@dataclass
class ProtocolTiming:
    """One input protocol's short eager loop (or the scored loop's own figures): the median device interval, the
    median of the host's time issuing the call, and how many samples the host's time exceeded the device's."""

    median_ms: float
    host_median_ms: float
    samples: int
    host_bound_samples: int
    method: str = "events"


@dataclass
class Timing:
    samples_ms: list[float] = field(default_factory=list)
    host_samples_ms: list[float] = field(default_factory=list)  # the host's time issuing each sampled call
    method: str = "events"
    sync_overhead_ms: float | None = None
    memo_probe: str = "skipped"
    side_stream_samples: int = 0     # samples whose work finished after the launch's own end event
    host_bound_samples: int = 0      # samples whose call took the host longer to issue than the device to run
    notes: list[str] = field(default_factory=list)
    persisting_l2_reset: bool | None = None  # on a GPU: whether persisting L2 lines were reset before each call
    protocol: InputProtocol = "buffers"
    protocols: dict[InputProtocol, ProtocolTiming] = field(default_factory=dict)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def iqr_ms(self) -> float:
        if len(self.samples_ms) < 4:
            return max(self.samples_ms) - min(self.samples_ms)
        q = statistics.quantiles(self.samples_ms, n=4)
        return q[2] - q[0]


# ------------------------------------------------------------------------------------------------- L2

_reset_fn: Callable[[], None] | None = None


def _find_persisting_reset() -> Callable[[], None] | None:
    try:
        from cuda.bindings import runtime as cudart  # cuda-python, when installed

        return lambda: cudart.cudaCtxResetPersistingL2Cache()
    except Exception:  # not installed, or built for another CUDA: the runtime library itself is tried next
        pass
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            lib = ctypes.CDLL(name)
            return lambda: lib.cudaCtxResetPersistingL2Cache()
        except OSError:
            continue
    return None


def _no_reset() -> None:
    """Neither cuda-python nor a CUDA runtime library was found: nothing to call (Timing.persisting_l2_reset)."""


def persisting_l2_reset_found() -> bool:
    global _reset_fn
    if _reset_fn is None:
        _reset_fn = _find_persisting_reset() or _no_reset
    return _reset_fn is not _no_reset


def reset_persisting_l2() -> None:
    """Evict lines an access-policy window marked persisting, so they cannot survive the flush."""
    persisting_l2_reset_found()
    assert _reset_fn is not None  # set by persisting_l2_reset_found
    _reset_fn()


class L2Flusher:
    """Writes a buffer of at least twice the L2 before every timed call."""

    def __init__(self, device: torch.device, l2_bytes: int):
        self.device = device
        self.nbytes = max(2 * l2_bytes, 64 << 20) if device.type == "cuda" else 0
        self.buffer = torch.empty(self.nbytes, dtype=torch.uint8, device=device) if self.nbytes else None
        self.count = 0

    def __call__(self) -> None:
        if self.buffer is None:
            return
        self.count += 1
        # the reset first: it may wait for the device, and the GPU must still be busy with the fill when the
        # start event and the call are queued (otherwise a host round trip lands inside the interval)
        reset_persisting_l2()
        self.buffer.fill_(self.count % 251 + 1)


def device_l2_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 0
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (50 << 20))


# ------------------------------------------------------------------------------------------------- launch cover

class LaunchCover:
    """A device-side spin queued after the flush and before the start event, a little longer than the host
    takes to launch the call. Without it the start event fires as soon as the flush ends, and whatever part of
    the host's launch work is still running lands inside the measured interval (tens of microseconds for a
    cuBLAS call, more for a Python model launching several kernels): an independent kernel-duration measurement
    then disagrees by 10-20% on sub-millisecond kernels.

    A call that synchronises inside itself (an `.item()`, a host-side decision) makes the host wait for the
    device, cover included: its host time is the cover plus the work before the wait, and a cover sized from it
    grew call after call to its cap (2 ms of idle spin per call). So where the host was still in the call when the
    cover ended (`outlasted`), only the host time beyond the cover counts as launch work to hide."""

    MAX_US = 2000.0

    def __init__(self, device: torch.device):
        self.device = device
        self.host_launch_us: list[float] = []
        self.cycles_per_us = _spin_cycles_per_us(device) if device.type == "cuda" else 0.0
        self.last_cover_us = 0.0  # the cover queued before the call being timed

    def record_launch(self, host_ms: float, outlasted: bool = False) -> None:
        host_us = host_ms * 1e3
        self.host_launch_us.append(max(0.0, host_us - self.last_cover_us) if outlasted else host_us)

    @property
    def cover_us(self) -> float:
        recent = self.host_launch_us[-5:]
        return min(self.MAX_US, 20.0 + 1.5 * statistics.median(recent)) if recent else 50.0

    def __call__(self) -> None:
        self.last_cover_us = self.cover_us
        if self.cycles_per_us > 0:
            torch.cuda._sleep(int(self.last_cover_us * self.cycles_per_us))


def _spin_cycles_per_us(device: torch.device) -> float:
    """The spin kernel counts clock cycles; how many make a microsecond, measured once (clocks vary by part, and
    an idle GPU runs slow: a ~10 ms spin first brings the clock up to where the timed calls will run)."""
    try:
        cycles = 2_000_000
        torch.cuda._sleep(10 * cycles)
        start, end, _ = _events()
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        return cycles / (start.elapsed_time(end) * 1e3)
    except Exception:  # no spin kernel in this torch build: time without the cover
        return 0.0


# ------------------------------------------------------------------------------------------------- one call

def _check(validate: Validate | None, out: Any, k: int) -> None:
    if validate is not None:
        problems = validate(out, k)
        if problems:
            raise TimedOutputInvalid(f"timed call on input set {k}: " + "; ".join(problems))


def _events() -> tuple[torch.cuda.Event, ...]:
    return tuple(torch.cuda.Event(enable_timing=True) for _ in range(3))


@dataclass
class Sample:
    ms: float            # the sample: the device's interval (up to the device-wide synchronise when that is later)
    host_ms: float       # the host's time issuing the call
    late: bool = False   # side-stream work set the device's interval

    @property
    def host_bound(self) -> bool:
        return self.host_ms > self.ms


def _measure(launch: Callable[[], Any], device: torch.device, flush: Callable[[], None],
             overhead_ms: float, cover: LaunchCover | None = None) -> tuple[Sample, Any]:
    """Time one call: events around the launch, then a device-wide synchronise and a third event. Returns the
    sample and the output.

    The third event is processed only once every stream is idle, so work a candidate leaves on a side stream
    moves it; when it lands later than the launch's own end event plus the synchronise's usual cost, the
    sample is taken up to it instead (and marked)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    flush()
    if device.type != "cuda":
        begin = _perf_counter()
        out = launch()
        ms = (_perf_counter() - begin) * 1e3
        return Sample(ms, 0.0), out  # on the CPU the interval is the host's: nothing to tell apart
    # no synchronise after the flush: the GPU is still busy with it while the start event and the call are
    # queued, so the start event fires right before the work instead of a host round trip earlier
    start, end, after = _events()
    if cover is not None:
        cover()
    start.record()
    began = _perf_counter()
    out = launch()
    host_ms = (_perf_counter() - began) * 1e3
    if cover is not None:
        cover.record_launch(host_ms, outlasted=start.query())  # the device got past the cover before the host
    end.record()
    torch.cuda.synchronize(device)
    after.record()
    after.synchronize()
    own, total = start.elapsed_time(end), start.elapsed_time(after) - overhead_ms
    return classify_sample(own, total, host_ms), out


def classify_sample(own_ms: float, total_ms: float, host_ms: float) -> Sample:
    """The sample from a call's three intervals (its own events, up to the device-wide synchronise, the host's
    time issuing it): the device's interval, up to the synchronise when side-stream work ends later."""
    late = total_ms > own_ms + max(SIDE_STREAM_MARGIN_MS, 0.25 * own_ms)
    return Sample(total_ms if late else own_ms, host_ms, late)


def _sync_overhead_ms(device: torch.device, n: int = 30) -> float:
    """How late the event after a device-wide synchronise lands when nothing is running."""
    if device.type != "cuda":
        return 0.0
    samples = []
    for _ in range(n):
        torch.cuda.synchronize(device)
        start, end, after = _events()
        start.record()
        end.record()
        torch.cuda.synchronize(device)
        after.record()
        after.synchronize()
        samples.append(end.elapsed_time(after))
    return statistics.median(samples)


def _capture_graphs(fn: Callable, input_sets: list[list], device: torch.device) -> list[tuple[Any, Any]]:
    graphs = []
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for inputs in input_sets:  # warm up on the capture stream, as graph capture requires
            fn(*inputs)
    torch.cuda.current_stream(device).wait_stream(stream)
    for inputs in input_sets:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = fn(*inputs)
        graphs.append((graph, out))
    torch.cuda.synchronize(device)
    return graphs


# ------------------------------------------------------------------------------------------------- protocol

def _enough(samples: list[float], trials: int, max_trials: int, stderr_target: float,
            out_of_time: bool = False) -> bool:
    if len(samples) >= max_trials or (out_of_time and len(samples) >= MIN_TRIALS_WHEN_OUT_OF_TIME):
        return True
    if len(samples) < trials:
        return False
    if stderr_target <= 0:
        return True
    mean = statistics.fmean(samples)
    stderr = statistics.stdev(samples) / math.sqrt(len(samples))
    return stderr <= stderr_target * mean


class Rotation:
    """Which input set each timed call takes. Without stress sets: the base sets in turn. With stress sets: blocks,
    each a permutation of every set (base and stress) drawn from a seeded generator, so stress inputs meet the
    candidate at positions it cannot predict, in warmup and trials alike. Indices below `n_base` are base sets."""

    def __init__(self, n_base: int, n_stress: int = 0, seed: int | None = None):
        self.n_base, self.n_stress = n_base, n_stress
        self.rng = random.Random(seed) if n_stress else None
        self.block: list[int] = []

    def next(self) -> int:
        if not self.block:
            self.block = list(range(self.n_base + self.n_stress))
            if self.rng is not None:
                self.rng.shuffle(self.block)
        return self.block.pop(0)

    def is_stress(self, k: int) -> bool:
        return k >= self.n_base

    def stress_left(self) -> list[int]:
        """The stress sets the current block has not used yet: called once the samples suffice, so every stress
        set runs after any call of the sequence a candidate might start misbehaving at, but the last few."""
        left = [k for k in self.block if self.is_stress(k)]
        self.block = [k for k in self.block if not self.is_stress(k)]
        return left


def time_function(fn: Callable, input_sets: list[list], device: torch.device, *, warmup: int = 10,
                  trials: int = 30, max_trials: int = 200, stderr_target: float = 0.0,
                  graph_below_ms: float = 0.0, l2_bytes: int | None = None,
                  validate: Validate | None = None, max_seconds: float | None = None,
                  stress_sets: list[list] | None = None, rotation_seed: int | None = None,
                  fresh: Reservoir | None = None, audit: TimedAudit | None = None,
                  protocol: InputProtocol = "buffers", compare_trials: int = 0) -> Timing:
    """Time `fn` over rotating input sets; every call (warmup included) is flushed and validated.

    `stress_sets` (optional) are mixed into the rotation at positions drawn from `rotation_seed`: each call on one
    follows the very same path (flush, cover, events, validation; validate gets index len(input_sets) + j), but its
    time is left out of the samples, so inputs whose cost differs (skewed routing, ties) do not move the medians.
    `fresh` (optional) gives every call on a base set inputs no call has seen (`fresh.freshen` of the set, seeded
    just before the call), written into the set's own tensors or into new ones as `protocol` says (see the
    module docstring): such a call has no expected output here, so it is offered to the reservoir, whose kept
    outputs are judged afterwards by a trusted process; stress calls and the replay probe stay validated here.
    `compare_trials` (optional) times that many eager calls under each other protocol after the scored loop.
    `audit` (optional) records the launches of a few windows of consecutive timed calls (TimedAudit); their times
    are left out of the samples.
    `max_seconds` (optional) caps the wall time of the trials for very slow lines; the sample count stays
    visible in the result."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown input protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    began = _perf_counter()
    sets = list(input_sets) + list(stress_sets or [])
    rotation = Rotation(len(input_sets), len(sets) - len(input_sets), rotation_seed)
    flush = L2Flusher(device, device_l2_bytes(device) if l2_bytes is None else l2_bytes)
    overhead = _sync_overhead_ms(device)
    timing = Timing(sync_overhead_ms=overhead, protocol=protocol,
                    persisting_l2_reset=persisting_l2_reset_found() if device.type == "cuda" else None)
    cover = LaunchCover(device) if device.type == "cuda" else None
    warm: list[Sample] = []
    calls = TimedCalls(fn, sets, rotation, fresh, validate, protocol)

    def measure(launch: Callable[[], Any]) -> tuple[Sample, Any]:
        return _measure(launch, device, flush, overhead, cover)

    while len(warm) < max(warmup, 1):
        k = rotation.next()
        sample = calls.run(k, measure)
        if rotation.is_stress(k):
            continue
        warm.append(sample)
        if max_seconds is not None and len(warm) >= 3 and _perf_counter() - began > max_seconds / 4:
            break  # a slow call is warm after a few: keep the time for the timed trials
    if device.type == "cuda" and statistics.median(s.ms for s in warm[-3:]) < graph_below_ms:
        calls.use_graphs(faithful_graphs(_try_capture(fn, sets, device, timing), sets, len(input_sets), device,
                                         validate, timing))

    if audit is not None:
        audit.learn_grader_launches(lambda: calls.grader_work(flush, cover, device))
    n = 0

    def timed_call(k: int) -> tuple[Sample, bool]:
        nonlocal n
        if audit is not None:
            audit.before(n)
        sample = calls.run(k, measure)
        audited = audit is not None and audit.after(n)
        n += 1
        return sample, audited

    try:
        while not _enough(timing.samples_ms, trials, max_trials, stderr_target,
                          max_seconds is not None and _perf_counter() - began > max_seconds):
            k = rotation.next()
            sample, audited = timed_call(k)
            if not rotation.is_stress(k) and not audited:
                timing.samples_ms.append(sample.ms)
                timing.host_samples_ms.append(sample.host_ms)
                timing.side_stream_samples += sample.late
                timing.host_bound_samples += sample.host_bound
        for k in rotation.stress_left():
            timed_call(k)
    finally:  # a window still open (the loop ended, or a timed output was refused) is closed and kept
        if audit is not None:
            audit.close()
    if timing.samples_ms:
        timing.protocols[protocol] = _summary(_scored_samples(timing), timing.method)
    if compare_trials > 0:
        _compare_protocols(calls, measure, timing, compare_trials, max_seconds)
    calls.restore_base_sets()
    timing.memo_probe = probe_memoisation(fn, input_sets, calls.graphs, device, validate)
    return timing


def _scored_samples(timing: Timing) -> list[Sample]:
    return [Sample(ms, host_ms) for ms, host_ms in zip(timing.samples_ms, timing.host_samples_ms)]


def _summary(samples: list[Sample], method: str) -> ProtocolTiming:
    return ProtocolTiming(median_ms=statistics.median(s.ms for s in samples),
                          host_median_ms=statistics.median(s.host_ms for s in samples),
                          samples=len(samples), host_bound_samples=sum(s.host_bound for s in samples),
                          method=method)


def _compare_protocols(calls: TimedCalls, measure: Callable, timing: Timing, trials: int,
                       max_seconds: float | None) -> None:
    """A short eager loop under each protocol the score does not use (the base sets in turn, a warm-up round
    first), every output validated like the scored loop's: the same tensors are judged here, fresh ones kept for
    the trusted judge. Eager whatever the scored loop replayed: the candidate's own call meets its inputs."""
    graphs, calls.graphs = calls.graphs, None
    began = _perf_counter()
    try:
        for protocol in PROTOCOLS:
            if protocol == timing.protocol:
                continue
            calls.protocol = protocol
            calls.restore_base_sets()
            samples = []
            for n in range(calls.rotation.n_base + trials):
                sample = calls.run(n % calls.rotation.n_base, measure)
                if n >= calls.rotation.n_base:
                    samples.append(sample)
                if max_seconds is not None and _perf_counter() - began > max_seconds and len(samples) >= 3:
                    break
            if samples:
                timing.protocols[protocol] = _summary(samples, "events")
    finally:
        calls.graphs, calls.protocol = graphs, timing.protocol


@dataclass
class TimedAudit:
    """Launch records of a few windows of consecutive timed calls, drawn by the caller (secretly), so a candidate
    that computes one way when checked and another once timed (told by its folder, its call cadence, anything but
    the recorder itself) is seen doing it. `recorder()` is the checked calls' own recorder (a context manager
    yielding a dict filled with launch name -> device time when it exits). A window's calls are left out of the
    samples (the recorder's cost is in them); what the grader itself launches around a call (learnt once, alone,
    under the same recorder) is left out of the names."""

    recorder: Callable[[], Any]
    starts: set[int]                 # numbers of the trial-loop calls (stress calls counted) that open a window
    length: int = 4
    recorder_name: str = ""          # which recorder it is, for the report
    launches: dict[str, float] = field(default_factory=dict)
    audited: int = 0
    grader_names: set[str] = field(default_factory=set)
    blind_windows: int = 0           # windows that recorded no kernel at all: the recorder saw nothing
    _open: tuple[Any, dict] | None = None
    _last: int = -1

    def learn_grader_launches(self, work: Callable[[], None]) -> None:
        with self.recorder() as names:
            work()
        self.grader_names = set(names)

    def before(self, n: int) -> None:
        if self._open is None and n in self.starts:
            stack = contextlib.ExitStack()
            self._open, self._last = (stack, stack.enter_context(self.recorder())), n + self.length - 1

    def after(self, n: int) -> bool:
        """Whether call n was recorded (closing the window after its last call)."""
        if self._open is None:
            return False
        self.audited += 1
        if n >= self._last:
            self.close()
        return True

    def close(self) -> None:
        if self._open is None:
            return
        (stack, names), self._open = self._open, None
        stack.close()  # the recorder fills `names` as it exits
        if not names:  # not even the grader's own flush, which every recorded call launches
            self.blind_windows += 1
        for name, t in names.items():
            if name not in self.grader_names:
                self.launches[name] = self.launches.get(name, 0.0) + t


class TimedCalls:
    """One call of the rotation, eager or replayed from its CUDA graph, on fresh inputs where asked: written into
    one set of tensors ("buffers"), into new tensors ("tensors"), or none ("same": the first set as it is)."""

    def __init__(self, fn: Callable, sets: list[list], rotation: Rotation, fresh: Reservoir | None,
                 validate: Validate | None, protocol: InputProtocol = "buffers"):
        self.fn, self.sets, self.rotation, self.fresh, self.validate = fn, sets, rotation, fresh, validate
        self.protocol = protocol
        self.graphs: list[tuple[Any, Any]] | None = None
        # fresh values are drawn from copies of the base sets: the sets' own tensors hold the last call's values
        self.pristine: list[list] = [[x.clone() if isinstance(x, torch.Tensor) else x for x in s]
                                     for s in sets[:rotation.n_base]] if fresh is not None else []
        # "buffers" writes every call's values into the first set's tensors, where every set has their layout
        self.shared = bool(self.pristine) and all(_same_layout(sets[0], s) for s in sets[1:])

    def use_graphs(self, graphs: list[tuple[Any, Any]] | None) -> None:
        """Graphs read fixed buffers: fresh inputs are copied into them whatever the protocol."""
        self.graphs = graphs

    def restore_base_sets(self) -> None:
        """Fresh calls written into the sets' tensors left them holding permuted values: the base sets' own values
        go back in, so a call validated here (the replay probe, the "same" protocol) has its expected output."""
        for k, values in enumerate(self.pristine):
            _copy_into(self.sets[k], values)

    def grader_work(self, flush: Callable[[], None], cover: LaunchCover | None, device: torch.device) -> None:
        """What the grader launches around a call (flush, launch cover, fresh inputs, the kept copy), alone."""
        flush()
        if cover is not None:
            cover()
        base = freshen(self.sets[0], draw_seed()) if self.fresh is not None else self.sets[0]
        for x in base:
            if isinstance(x, torch.Tensor):
                x.clone()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def inputs(self, k: int, seed: int | None) -> list:
        """Call k's inputs: the set's values (fresh when seeded) in the tensors the protocol says."""
        values = freshen(self.pristine[k], seed) if seed is not None else None
        if values is not None and self.protocol == "tensors" and not self.graphs:
            return values
        # each graph reads its own set's buffers; "buffers" writes into the first set's where the layouts allow
        target = 0 if self.protocol == "buffers" and self.shared and not self.graphs else k
        if values is None:
            if target == k:
                return self.sets[k]
            values = self.sets[k]
        _copy_into(self.sets[target], values)
        return [held if isinstance(held, torch.Tensor) else value  # the set's own scalars
                for held, value in zip(self.sets[target], values)]

    def run(self, k: int, measure: Callable[[Callable[[], Any]], tuple[Sample, Any]]) -> Sample:
        if self.protocol == "same" and not self.rotation.is_stress(k):
            k = 0
        fresh = self.fresh if self.fresh is not None and not self.rotation.is_stress(k) and \
            self.protocol != "same" else None
        seed = fresh.seed() if fresh is not None else None
        inputs = self.inputs(k, seed)
        if self.graphs:
            sample, _ = measure(self.graphs[k][0].replay)
            out = self.graphs[k][1]
        else:
            sample, out = measure(lambda: self.fn(*inputs))
        if seed is None:
            try:
                _check(self.validate, out, k)
            except TimedOutputInvalid as exc:  # a validated call's values are its own set's (`inputs`)
                exc.set_index, exc.call_inputs, exc.values = k, inputs, self.sets[k]
                raise
        else:
            assert fresh is not None  # a seed is drawn for a fresh call only
            fresh.offer(k, seed, out)
        return sample


def _copy_into(buffers: list, values: list) -> None:
    """Values written into existing tensors in place, as any in-place operation writes them: the same pointer, the
    version counter moved. A candidate may keep work derived from an input under its identity and version (a
    padded copy, a packed layout), as PyTorch's own caches do; a write hidden from the counter (through `.data`)
    would make such honest state stale and call the grader's own back door the candidate's memoisation. A cache
    that follows the counter gains nothing in the timed loop either: every call's values move it."""
    for dst, src in zip(buffers, values):
        if isinstance(dst, torch.Tensor) and dst is not src:
            _write_in_place(dst, src)


def _write_in_place(dst: torch.Tensor, src: torch.Tensor) -> None:
    if dst.is_inference():  # an inference tensor takes in-place writes only in inference mode (and has no counter)
        with torch.inference_mode():
            dst.copy_(src)
        return
    with torch.no_grad():  # an input that requires grad is still the candidate's buffer, written as data
        dst.copy_(src)


def _try_capture(fn: Callable, input_sets: list[list], device: torch.device, timing: Timing):
    try:
        graphs = _capture_graphs(fn, input_sets, device)
    except Exception as exc:  # host syncs or allocations the capture refuses: time eagerly instead
        torch.cuda.synchronize(device)
        timing.notes.append(f"CUDA graph capture failed ({type(exc).__name__}: {exc}); timed with events")
        return None
    timing.method = "cuda_graph"
    return graphs


def faithful_graphs(graphs: list[tuple[Any, Any]] | None, sets: list[list], n_base: int, device: torch.device,
                    validate: Validate | None, timing: Timing) -> list[tuple[Any, Any]] | None:
    """The captured graphs, if replaying them does what calling the candidate does; None (time eagerly, with a
    note) otherwise. Capture records one call's launches with their arguments fixed: a candidate that keeps state
    of its own (its own CUDA graphs, launch plans bound to its inputs' pointers, a persistent output buffer, a
    cache keyed on identity) may be replay-correct or not, and a stale replay is the grader's artefact, never
    evidence against the candidate. Each graph must give its own set's output, and follow an in-place change of
    its inputs as a call does."""
    if not graphs or validate is None:
        return graphs
    reason = _replay_problem(graphs, sets, n_base, device, validate)
    if reason is None:
        return graphs
    timing.method = "events"
    timing.notes.append(f"a CUDA graph of this candidate's call does not replay as the call runs ({reason}): "
                        "timed eagerly with events")
    return None


def _replay_problem(graphs: list[tuple[Any, Any]], sets: list[list], n_base: int, device: torch.device,
                    validate: Validate) -> str | None:
    for k, (graph, out) in enumerate(graphs):
        graph.replay()
        _sync(device)
        problems = validate(out, k)
        if problems:
            return f"input set {k}: {problems[0][:200]}"
    if n_base < 2 or not _same_layout(sets[0], sets[1]):
        return None
    kept = [x.clone() if isinstance(x, torch.Tensor) else x for x in sets[0]]
    _copy_into(sets[0], sets[1])
    graphs[0][0].replay()
    _sync(device)
    problems = validate(graphs[0][1], 1)
    _copy_into(sets[0], kept)
    return f"input set 0 changed in place: {problems[0][:200]}" if problems else None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def probe_memoisation(fn: Callable, input_sets: list[list], graphs: Any, device: torch.device,
                      validate: Validate | None) -> str:
    """Overwrite set 0's tensors in place (same pointer, version counter moved, as an in-place operation moves it)
    with set 1's values: a call must now produce set 1's output. The result says what it gave otherwise: "stale:
    ..." when the output is bit for bit its answer to the values before (an answer kept under the tensors' pointer
    or id: memoisation), "failed: ..." when it is wrong in some other way (state such as a launch plan keyed on the pointer: a wrong
    output, not a kept answer). The probe is an eager call whatever the timing replayed: memoisation is the
    candidate's, a stale graph is the grader's (graphs are kept only when they follow such a change,
    `faithful_graphs`)."""
    if validate is None or len(input_sets) < 2 or not _same_layout(input_sets[0], input_sets[1]):
        return "skipped"
    before = _cloned_tensors(fn(*input_sets[0]))  # its answer to the values the tensors hold now
    _copy_into(input_sets[0], input_sets[1])
    out = fn(*input_sets[0])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    problems = validate(out, 1)
    if not problems:
        return "ok"
    after = _cloned_tensors(out)
    kept = bool(after) and len(after) == len(before) and all(
        a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b) for a, b in zip(after, before))
    return ("stale: " if kept else "failed: ") + "; ".join(problems)


def _cloned_tensors(out: Any) -> list[torch.Tensor]:
    """An output's tensors, copied at once (a persistent output buffer is overwritten by the next call)."""
    items = out if isinstance(out, (tuple, list)) else [out]
    return [t.detach().clone() for t in items if isinstance(t, torch.Tensor)]


def _same_layout(a: list, b: list) -> bool:
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor) and (x.shape != y.shape or x.dtype != y.dtype or x.stride() != y.stride()):
            return False
    return len(a) == len(b)
