"""Merging a baselines file: a line measured again replaces the earlier one; one that could not be measured again
(a bench stage out of time on a slower run) leaves the earlier measurement in place."""

from kernelbench.eval.baselines import merged_lines
from kernelbench.problems.baselines import Line, ShapeTiming


def measured(ms: float) -> Line:
    return Line(source="torch eager", shapes=[ShapeTiming(index=0, shape={"n": 8}, median_ms=ms)], peak_fraction=0.1)


def unavailable(reason: str) -> Line:
    return Line(available=False, reason=reason)


def test_a_new_measurement_replaces_the_earlier_one():
    lines = merged_lines({"eager": measured(2.0)}, {"eager": measured(1.5)})
    assert lines["eager"].shapes[0].median_ms == 1.5


def test_a_failed_attempt_keeps_the_earlier_measurement():
    lines = merged_lines({"eager": measured(2.0), "sota": measured(0.5)},
                         {"eager": unavailable("bench stage exceeded its limit"), "sota": measured(0.4)})
    assert lines["eager"].available and lines["eager"].shapes[0].median_ms == 2.0
    assert lines["sota"].shapes[0].median_ms == 0.4


def test_an_unavailable_line_takes_the_latest_reason_and_new_lines_are_added():
    lines = merged_lines({"sota": unavailable("missing fla")},
                         {"sota": unavailable("bench stage exceeded its limit"), "compiled": measured(3.0)})
    assert lines["sota"].reason == "bench stage exceeded its limit"
    assert lines["compiled"].available
