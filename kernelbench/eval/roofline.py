"""Roofline scoring: per-shape throughput, the fraction of the governing ceiling, and the speed-of-light gate."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

from kernelbench.base.models import Ceiling, Interval, ShapeResult
from kernelbench.hardware import GpuProfile, ceiling_for
from kernelbench.problems.spec import ProblemSpec

# a measurement this much under the physical minimum time is impossible, not fast (timer resolution slack)
SPEED_OF_LIGHT_SLACK = 0.98


def ceiling_of(spec: ProblemSpec, profile: GpuProfile) -> Ceiling | None:
    """The ceiling a problem's score is a fraction of on this GPU; None for a problem without a roofline."""
    if not spec.has_roofline:
        return None
    assert spec.regime is not None and spec.ceiling is not None  # has_roofline
    value, unit = ceiling_for(profile, spec.regime, spec.ceiling)
    peak = profile.peak_tflops.get(_compute_key(spec, profile))
    return Ceiling(regime=spec.regime, dtype=spec.ceiling, value=value, unit=unit, peak_tflops=peak,
                   dram_gbps=profile.dram_gbps, source=f"{profile.name} datasheet ({profile.source})")


def _compute_key(spec: ProblemSpec, profile: GpuProfile) -> str:
    from kernelbench.hardware import normalize_dtype

    key = normalize_dtype(spec.ceiling or "")
    if key in profile.peak_tflops:
        return key
    # memory-bound: the most generous compute roof
    return max(profile.peak_tflops, key=profile.peak_tflops.__getitem__)


def score_shape(result: ShapeResult, spec: ProblemSpec, profile: GpuProfile | None) -> ShapeResult:
    """Fill tflops, gbps and fraction from median_ms, flops and bytes."""
    if result.median_ms is None or result.median_ms <= 0:
        return result
    seconds = result.median_ms * 1e-3
    result.tflops = result.flops / seconds / 1e12 if result.flops else None
    result.gbps = result.bytes / seconds / 1e9 if result.bytes else None
    if profile is not None and spec.has_roofline:
        assert spec.regime is not None and spec.ceiling is not None  # has_roofline
        achieved = throughput(spec, result)
        value, _ = ceiling_for(profile, spec.regime, spec.ceiling)
        result.fraction = achieved / value if achieved is not None else None
    return result


def throughput(spec: ProblemSpec, shape: ShapeResult) -> float | None:
    """The roofline's throughput of a timed shape, the quantity a fraction of the ceiling divides: TFLOP/s on a
    compute-bound problem, GB/s on a memory-bound one (None without a regime)."""
    if spec.regime == "compute":
        return shape.tflops
    if spec.regime == "memory":
        return shape.gbps
    return None


def minimum_time_ms(flops: float, nbytes: float, spec: ProblemSpec, profile: GpuProfile) -> float:
    """The physical floor: the larger of compute time at the datasheet peak and DRAM time at full bandwidth."""
    peak = profile.peak_tflops[_compute_key(spec, profile)]
    return max(flops / (peak * 1e12), nbytes / (profile.dram_gbps * 1e9)) * 1e3


def faster_than_light(result: ShapeResult, spec: ProblemSpec, profile: GpuProfile) -> str | None:
    """A message when the shape ran faster than the hardware can possibly run it."""
    if result.median_ms is None or not spec.has_roofline:
        return None
    floor = minimum_time_ms(result.flops or 0.0, result.bytes or 0.0, spec, profile)
    if result.median_ms < floor * SPEED_OF_LIGHT_SLACK:
        return (f"shape {result.index} {result.shape}: median {result.median_ms:.4g} ms is below the physical "
                f"minimum {floor:.4g} ms ({(result.flops or 0):.3g} FLOP at {profile.name} peak, "
                f"{(result.bytes or 0):.3g} B at {profile.dram_gbps:g} GB/s)")
    return None


def geometric_mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    if not known or any(v <= 0 for v in known):
        return None
    return math.exp(sum(math.log(v) for v in known) / len(known))


BOOTSTRAP_RESAMPLES = 1000
CONFIDENCE = 0.95


def bootstrap_intervals(shapes: list[ShapeResult], resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = 0) -> tuple[list[Interval | None], Interval | None]:
    """The noise behind the numbers, from the timed samples alone: each shape's median and the score (the
    geometric mean of the shapes' fractions, each fraction scaling with 1 / its median) recomputed over
    `resamples` resamplings of every shape's samples with replacement; the central 95% of each. A fixed seed:
    the same samples give the same interval. None where a shape has fewer than 5 samples or no fraction."""
    rng = random.Random(seed)
    timed = [s for s in shapes if len(s.samples_ms) >= 5 and s.median_ms]
    medians: dict[int, list[float]] = {s.index: [] for s in timed}
    scores: list[float] = []
    scored = bool(timed) and all(s.fraction for s in shapes) and len(timed) == len(shapes)
    for _ in range(resamples):
        fractions = []
        for s in timed:
            median = statistics.median(rng.choices(s.samples_ms, k=len(s.samples_ms)))
            medians[s.index].append(median)
            if scored and median > 0:
                # `scored`: every shape has a fraction; `timed` holds shapes with a median
                assert s.fraction is not None and s.median_ms is not None
                fractions.append(s.fraction * s.median_ms / median)
        if scored and len(fractions) == len(shapes):
            score = geometric_mean(fractions)
            if score is not None:  # positive fractions always have one
                scores.append(score)
    per_shape = [_percentiles(medians[s.index]) if s.index in medians else None for s in shapes]
    return per_shape, _percentiles(scores) if scores else None


def _percentiles(values: list[float]) -> Interval:
    ordered = sorted(values)
    tail = (1.0 - CONFIDENCE) / 2
    pick = lambda q: ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]  # noqa: E731
    return Interval(low=pick(tail), high=pick(1.0 - tail), confidence=CONFIDENCE)
