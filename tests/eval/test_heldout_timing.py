"""Held-out timing (docs/grading.md, "Held-out timing"): the held-out shapes a passing candidate was judged right
on, timed in a bench stage of their own, and set against the published shapes; never part of the verdict."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelbench.base.models import Grading, HeldOut, SeedResult, ShapeResult
from kernelbench.eval.cases import Case
from kernelbench.eval.stages import heldout_timing
from kernelbench.problems.loader import load_problem_spec

REPO = Path(__file__).resolve().parents[2]
TOPK = REPO / "problems" / "05_topk_bitonic"
EAGER = REPO / "solutions" / "eager" / "05_topk_bitonic.py"
SLOW_OFF_GRID = Path(__file__).resolve().parent / "solutions" / "topk_slow_off_grid.py"


def timed(index: int, gbps: float | None, fraction: float | None = None) -> ShapeResult:
    median = None if gbps is None else 1.0
    return ShapeResult(index=index, shape={"batch": 1, "n": 8, "k": 1}, median_ms=median, gbps=gbps,
                       fraction=fraction)


def test_the_relative_figure_is_the_ratio_of_the_geometric_mean_fractions():
    """On a GPU the ceiling is one number for every shape: the throughputs' ratio is the fractions' ratio (0.5 for
    both here); the CPU has no fraction and gets the same figure from the throughputs."""
    spec = load_problem_spec(TOPK)  # memory-bound: GB/s
    grading = Grading(device="cuda", shapes=[timed(0, 100.0, 0.1), timed(1, 400.0, 0.4)])
    held = [timed(0, 50.0, 0.05), timed(1, 200.0, 0.2)]
    notes: list[str] = []
    assert heldout_timing.relative_peak_fraction(spec, grading, held, 2, notes) == pytest.approx(0.5)
    on_cpu = Grading(device="cpu", shapes=[timed(0, 100.0), timed(1, 400.0)])
    assert heldout_timing.relative_peak_fraction(spec, on_cpu, [timed(0, 50.0), timed(1, 200.0)], 2, notes) == \
        pytest.approx(0.5)
    assert notes == []


def test_no_relative_figure_unless_every_shape_judged_right_was_timed():
    spec = load_problem_spec(TOPK)
    grading = Grading(device="cpu", shapes=[timed(0, 100.0)])
    notes: list[str] = []
    assert heldout_timing.relative_peak_fraction(spec, grading, [timed(0, 50.0), timed(1, None)], 2, notes) is None
    assert notes == ["no relative figure: not every held-out shape judged right was timed"]


def test_only_held_out_shapes_all_of_whose_cases_passed_are_timed():
    """Property cases have shapes of their own in HeldOut.shapes; they are not held-out shapes and are not timed."""
    def case(shape_index: int, label: str) -> Case:
        return Case(id=f"c{shape_index}{label}", shape_index=shape_index, shape={}, public_seed=0, seed=1,
                    label=label, held_out=True)
    plan = SimpleNamespace(shapes=[{}, {}], heldout=[case(2, "heldout:shape"), case(3, "heldout:shape"),
                                                     case(4, "heldout:shape"), case(5, "heldout:tied_maxima")])
    checks = [SeedResult(shape_index=0, seed=1, passed=True), SeedResult(shape_index=1, seed=1, passed=True),
              SeedResult(shape_index=1, seed=2, case="heldout:stress:ties", passed=False),
              SeedResult(shape_index=2, seed=1, passed=True), SeedResult(shape_index=3, seed=1, passed=True)]
    assert heldout_timing.shapes_judged_right(plan, HeldOut(checks=checks)) == [0, 2]


def test_a_result_written_before_held_out_timing_still_loads():
    held = HeldOut.model_validate({"correct": True, "checks": [], "shapes": [], "weights_seeds": [], "note": "",
                                   "heldout_hash": "x"})
    assert held.timings == [] and held.relative_peak_fraction is None and held.timing_note == ""


def test_the_command_line_prints_the_relative_figure_and_escapes_the_timing_note():
    from kernelbench.eval.cli import held_out_line

    held = HeldOut(correct=True, checks=[SeedResult(shape_index=0, seed=5, passed=True)], relative_peak_fraction=0.25,
                   timings=[timed(0, 50.0)], timing_note="shape 1: not timed: raised \x1b[2Jboom")
    line = held_out_line(held)
    assert "0.25x the published shapes' peak fraction (1 shapes)" in line
    assert "\x1b" not in line and "\\x1b[2Jboom" in line


def test_a_grading_without_timing_times_no_held_out_shape():
    plan = SimpleNamespace(options=SimpleNamespace(line="candidate", timing=False))
    state = SimpleNamespace(grading=Grading(device="cpu", held_out=HeldOut(
        correct=True, checks=[SeedResult(shape_index=0, seed=1, passed=True)])))
    heldout_timing.bench(plan, state)  # a plan that cannot start a stage: nothing is started
    assert state.grading.held_out.timings == [] and state.grading.held_out.relative_peak_fraction is None


def test_a_grading_whose_published_shapes_were_not_all_timed_times_no_held_out_shape():
    from kernelbench.eval.grading import GradingState

    plan = SimpleNamespace(options=SimpleNamespace(line="candidate", timing=True), shapes=[{}, {}])
    held = HeldOut(correct=True, checks=[SeedResult(shape_index=0, seed=1, passed=True)])
    state = GradingState(Grading(device="cpu", shapes=[timed(0, 1.0), timed(1, None)], held_out=held))
    heldout_timing.bench(plan, state)  # a plan that cannot start a stage: nothing is started
    assert held.timings == [] and held.timing_note == "not timed: not every published shape was timed"


def grade(solution: Path):
    from kernelbench.eval.grade import grade_solution

    return grade_solution(solution, TOPK, device="cpu", shapes="smoke")


def test_a_passing_eager_solution_gets_held_out_timings_and_a_relative_figure():
    report = grade(EAGER)
    grading, held = report.grading, report.grading.held_out
    assert grading.outcome.value == "pass" and held is not None and held.correct is True, report.check_log
    smoke = [dict(s) for s in load_problem_spec(TOPK).smoke_shapes]
    shape_cases = {c.shape_index for c in held.checks if c.case == "heldout:shape"}
    assert [t.index for t in held.timings] == sorted(shape_cases) and len(held.timings) == 2
    for t in held.timings:
        assert t.shape == held.shapes[t.index] and t.shape not in smoke
        assert t.median_ms is not None and len(t.samples_ms) == 3 and t.gbps and t.bytes
    assert held.relative_peak_fraction is not None and held.relative_peak_fraction > 0.1, held.timing_note
    assert held.timing_note == "" and "heldout_bench" in report.stages
    assert "[held-out] shape 0" in report.benchmark_log


def test_a_solution_slow_only_off_the_published_shapes_gets_a_low_relative_figure():
    """Fast on the published shapes (its verdict and score untouched), 50 ms slower on every other row length:
    right on the held-out shapes, and there its relative figure is low."""
    report = grade(SLOW_OFF_GRID)
    grading, held = report.grading, report.grading.held_out
    assert grading.outcome.value == "pass" and grading.correct and not grading.reasons, report.check_log
    assert not any(f.severity == "error" for f in report.integrity)
    assert all(s.median_ms is not None and s.median_ms < heldout_timing_floor_ms() for s in grading.shapes)
    assert held is not None and held.correct is True and len(held.timings) == 2
    assert all(t.median_ms is not None and t.median_ms >= heldout_timing_floor_ms() for t in held.timings)
    assert held.relative_peak_fraction is not None and held.relative_peak_fraction < 0.1


def heldout_timing_floor_ms() -> float:
    from kernelbench.problems.loader import load_solution  # as a grading loads it: its helper module beside it

    return load_solution(SLOW_OFF_GRID, "slow_off_grid").FALLBACK_S * 1e3


def test_a_held_out_timing_stopped_at_its_limit_is_a_note_and_the_verdict_stands():
    """The stage's process killed at its limit (1 s here, before it can time a call): no timings, no relative
    figure, the reason in the timing note; the published verdict, reasons and findings are as without it."""
    from kernelbench.eval.grade import grade_solution

    report = grade_solution(SLOW_OFF_GRID, TOPK, device="cpu", shapes="smoke", limits={"heldout_bench": 1.0})
    grading, held = report.grading, report.grading.held_out
    assert grading.outcome.value == "pass" and grading.correct and not grading.reasons, report.check_log
    assert not any(f.severity == "error" for f in report.integrity)
    assert held is not None and held.correct is True and held.timings == [] and held.relative_peak_fraction is None
    assert held.timing_note.startswith("not timed:") and "limit" in held.timing_note, held.timing_note
