import math

import pytest

from kernelbench.eval.roofline import (
    ceiling_of,
    faster_than_light,
    geometric_mean,
    minimum_time_ms,
    score_shape,
)
from kernelbench.hardware import get_profile
from kernelbench.problems.loader import load_problem_spec
from kernelbench.results.run import ShapeResult


@pytest.fixture
def spec(toy_problem):
    return load_problem_spec(toy_problem)


def test_throughput_and_fraction(spec):
    h100 = get_profile("h100_sxm")
    shape = {"M": 4096, "N": 4096, "K": 4096}
    result = ShapeResult(index=0, shape=shape, flops=spec.flops_of(shape), bytes=spec.bytes_of(shape), median_ms=10.0)
    score_shape(result, spec, h100)
    assert result.tflops == pytest.approx(2 * 4096**3 / 0.01 / 1e12)
    assert result.fraction == pytest.approx(result.tflops / 67.0)  # the toy problem is governed by fp32
    assert result.gbps == pytest.approx(spec.bytes_of(shape) / 0.01 / 1e9)


def test_geometric_mean():
    assert geometric_mean([0.25, 1.0]) == pytest.approx(0.5)
    assert geometric_mean([0.5, None, 0.5]) == pytest.approx(0.5)
    assert geometric_mean([]) is None and geometric_mean([0.0, 1.0]) is None


def test_speed_of_light_gate(spec):
    h100 = get_profile("h100_sxm")
    shape = {"M": 8192, "N": 8192, "K": 8192}
    flops, nbytes = spec.flops_of(shape), spec.bytes_of(shape)
    floor = minimum_time_ms(flops, nbytes, spec, h100)
    assert floor == pytest.approx(flops / 67e12 * 1e3)
    fast = ShapeResult(index=0, shape=shape, flops=flops, bytes=nbytes, median_ms=floor * 0.5)
    slow = ShapeResult(index=0, shape=shape, flops=flops, bytes=nbytes, median_ms=floor * 1.5)
    assert "below the physical minimum" in faster_than_light(fast, spec, h100)
    assert faster_than_light(slow, spec, h100) is None


def test_ceiling_record(spec):
    ceiling = ceiling_of(spec, get_profile("b200"))
    assert (ceiling.regime, ceiling.unit, ceiling.value) == ("compute", "TFLOP/s", 75.0)
    assert ceiling.dram_gbps == 8000.0 and not math.isnan(ceiling.peak_tflops)
