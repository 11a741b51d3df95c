"""The noise behind a score: bootstrap intervals of each shape's median and of the geometric-mean score, from the
timed samples alone, the same every time for the same samples."""

from __future__ import annotations

import random

from kernelbench.base.models import ShapeResult
from kernelbench.eval.roofline import bootstrap_intervals


def _shape(index: int, samples: list[float], fraction: float | None = 0.5) -> ShapeResult:
    ordered = sorted(samples)
    return ShapeResult(index=index, shape={"n": index}, median_ms=ordered[len(ordered) // 2], samples_ms=samples,
                       fraction=fraction)


def _noisy(center: float, relative: float, n: int = 30, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-relative, relative)) for _ in range(n)]


def test_the_interval_holds_the_median_and_widens_with_the_noise():
    quiet, loud = _shape(0, _noisy(1.0, 0.01)), _shape(1, _noisy(1.0, 0.2))
    (q, l), score = bootstrap_intervals([quiet, loud])
    assert q.low <= quiet.median_ms <= q.high and l.low <= loud.median_ms <= l.high
    assert (l.high - l.low) > 5 * (q.high - q.low)
    assert score.low <= 0.5 <= score.high and score.confidence == 0.95


def test_the_same_samples_give_the_same_interval():
    shapes = [_shape(0, _noisy(2.0, 0.1)), _shape(1, _noisy(0.3, 0.05, seed=2))]
    assert bootstrap_intervals(shapes) == bootstrap_intervals(shapes)


def test_too_few_samples_or_no_fraction_give_no_interval():
    (few,), score = bootstrap_intervals([_shape(0, [1.0, 1.1, 0.9])])
    assert few is None and score is None
    (timed,), unscored = bootstrap_intervals([_shape(0, _noisy(1.0, 0.1), fraction=None)])
    assert timed is not None and unscored is None  # the median's interval, but no score to bound


def test_more_samples_of_the_same_noise_narrow_the_interval():
    widths = []
    for n in (10, 40, 160, 640):
        (interval,), _ = bootstrap_intervals([_shape(0, _noisy(1.0, 0.2, n=n, seed=3))])
        widths.append(interval.high - interval.low)
    assert widths == sorted(widths, reverse=True) and widths[-1] < widths[0] / 3


def test_known_samples_give_an_interval_of_their_own_values_around_the_median():
    samples = [float(v) for v in range(1, 22)]  # median 11
    (interval,), score = bootstrap_intervals([_shape(0, samples, fraction=0.4)])
    assert interval.low in samples and interval.high in samples  # a median of an odd count is one of the samples
    assert 6 <= interval.low < 11 < interval.high <= 16
    # the score scales as 1 / median: its interval is the fraction times 11 over the median's bounds
    assert abs(score.low - 0.4 * 11 / interval.high) < 1e-12 and abs(score.high - 0.4 * 11 / interval.low) < 1e-12
    assert bootstrap_intervals([_shape(0, [2.0] * 9)])[0][0].model_dump() == {"low": 2.0, "high": 2.0,
                                                                              "confidence": 0.95}
