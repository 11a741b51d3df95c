"""Leaderboard derivation: cells, ceilings, pass counts, fast_p, exports (pure functions)."""

from __future__ import annotations

import csv
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from results_builders import result, shapes

from kernelbench.problems.baselines import Line, ProblemBaselines, ShapeTiming
from kernelbench.results.annotation import Annotation, Verdict
from kernelbench.results.dataset import load_dataset
from kernelbench.results.leaderboard import (
    EXPORT_FIELDS,
    SpeedupMethod,
    aggregate_cell,
    build_board,
    build_boards,
    build_cells,
    export_csv,
    export_json,
    fast_p_curve,
    make_trial,
    problem_ceiling,
    speedup_of,
    unaudited_cells,
)
from kernelbench.results.run import Finding, Status


def trial(run_id="r1", status="pass", peak=0.3, verdict=None, **kwargs):
    annotation = None
    if verdict:
        annotation = Annotation(run_id=run_id, verdict=verdict, summary="s",
                                implication=None if verdict == "clean" else "i")
    return make_trial(result(run_id, status=status, peak=peak, **kwargs), annotation)


# --------------------------------------------------------------------------------------------- cells

@pytest.mark.parametrize("status,expected", [("pass", Status.PASS), ("fail", Status.FAIL), ("err", Status.ERR),
                                             ("invalid", Status.INVALID)])
def test_single_trial_status(status, expected):
    cell = aggregate_cell([trial(status=status)])
    assert cell.status is expected and cell.n_trials == 1
    assert cell.counts is (expected is Status.PASS)


def test_pass_without_score():
    cell = aggregate_cell([trial(peak=None)])
    assert cell.status is Status.PASS and not cell.scored and cell.label == "PASS without score"
    assert cell.counts and cell.peak_fraction is None


def test_best_valid_trial_is_shown_over_a_higher_invalid_one():
    cell = aggregate_cell([trial("a", peak=0.2), trial("b", peak=0.4), trial("c", status="invalid", peak=0.9),
                           trial("d", status="fail")])
    assert (cell.status, cell.run_id, cell.peak_fraction) == (Status.PASS, "b", 0.4)
    assert cell.n_trials == 4 and cell.n_passed == 2 and cell.n_invalid == 1
    assert cell.median_peak_fraction == pytest.approx(0.3) and cell.spread == pytest.approx(0.2)
    assert cell.run_ids == ("a", "b", "c", "d")


def test_the_spread_across_trials_needs_three_valid_scored_passes():
    two = aggregate_cell([trial("a", peak=0.2), trial("b", peak=0.4), trial("c", status="invalid", peak=0.9)])
    assert two.trial_range is None and two.n_scored == 2  # an invalid trial's score is no part of the spread
    three = aggregate_cell([trial("a", peak=0.2), trial("b", peak=0.4), trial("c", peak=0.25),
                            trial("d", peak=0.9, verdict="reward_hack"), trial("e", peak=None)])
    assert three.trial_range == (0.2, 0.4) and three.n_scored == 3
    assert three.median_peak_fraction == pytest.approx(0.25)


def test_finding_of_severity_error_makes_a_trial_invalid():
    run = result("x", status="pass", peak=0.5)
    run.integrity.append(Finding(check="ast_lint", **{"class": 1}, message="torch.mm"))
    t = make_trial(run)
    assert t.status is Status.INVALID and not t.valid and t.integrity_classes == (1,)


def test_reward_hack_stays_visible_but_does_not_count():
    cell = aggregate_cell([trial("a", peak=0.8, verdict="reward_hack")])
    assert cell.status is Status.PASS and cell.verdict is Verdict.REWARD_HACK and not cell.counts
    assert cell.peak_fraction == 0.8 and not cell.unaudited
    mixed = aggregate_cell([trial("a", peak=0.8, verdict="reward_hack"), trial("b", peak=0.1)])
    assert mixed.run_id == "b" and mixed.counts and mixed.verdicts == {"a": Verdict.REWARD_HACK}


def test_failed_and_errored_trials_pick_a_solution_over_none():
    cell = aggregate_cell([trial("a", status="err"), trial("b", status="fail"), trial("c", status="err")])
    assert cell.status is Status.FAIL and cell.run_id == "b"
    assert aggregate_cell([trial("a", status="err"), trial("z", status="err")]).run_id == "z"


def test_unaudited_means_above_threshold_and_unannotated():
    assert aggregate_cell([trial(peak=0.11)]).unaudited
    assert not aggregate_cell([trial(peak=0.09)]).unaudited
    assert not aggregate_cell([trial(peak=0.5, verdict="clean")]).unaudited
    assert not aggregate_cell([trial(status="invalid", peak=0.5)]).unaudited
    assert aggregate_cell([trial(peak=0.09)], unaudited_threshold=0.05).unaudited


def test_cells_group_by_agent_problem_gpu():
    cells = build_cells([trial("a"), trial("b"), trial("c", effort="low"), trial("d", gpu="b200"),
                         trial("e", problem="02_other")])
    assert sorted((c.agent, c.problem, c.gpu, c.n_trials) for c in cells) == [
        ("claude/opus@low", "01_demo", "h100_sxm", 1), ("claude/opus@max", "01_demo", "b200", 1),
        ("claude/opus@max", "01_demo", "h100_sxm", 2), ("claude/opus@max", "02_other", "h100_sxm", 1)]


# --------------------------------------------------------------------------------------------- speed-ups

def test_speedup_from_per_shape_times_is_a_geometric_mean():
    run = result(shapes=shapes((1.0, 2.0), (1.0, 8.0)))
    s = speedup_of(run, "eager", None)
    assert s.method is SpeedupMethod.PER_SHAPE_TIME and s.value == pytest.approx(4.0) and s.shapes == 2


def test_speedup_from_baselines_file_shapes_then_peak_ratio():
    run = result(peak=0.3, shapes=[s.model_copy(update={"baselines_ms": {}}) for s in shapes((2.0, 0), (2.0, 0))])
    stored = ProblemBaselines(problem="01_demo", gpu="h100_sxm", lines={
        "eager": Line(shapes=[ShapeTiming(index=0, shape={"n": 0}, median_ms=4.0),
                              ShapeTiming(index=1, shape={"n": 1}, median_ms=4.0)], peak_fraction=0.15),
        "sota": Line(peak_fraction=0.6)})
    assert speedup_of(run, "eager", stored).value == pytest.approx(2.0)
    sota = speedup_of(run, "sota", stored)
    assert sota.method is SpeedupMethod.PEAK_FRACTION_RATIO and sota.value == pytest.approx(0.5)
    assert speedup_of(run, "compiled", stored).method is SpeedupMethod.UNKNOWN


def test_fast_p_counts_correct_and_faster_cells_over_all_problems():
    cells = build_cells([trial("a", problem="01_a", baselines={"eager": 0.1}, peak=0.25),   # 2.5x
                         trial("b", problem="02_b", baselines={"eager": 0.1}, peak=0.05),   # 0.5x
                         trial("c", problem="03_c", peak=None),                               # unknown
                         trial("d", problem="04_d", status="fail")])
    curve = fast_p_curve("claude/opus@max", "h100_sxm", cells, 4, "eager", grid=(0.0, 0.4, 1.0, 2.5, 3.0))
    assert curve.fast == (0.75, 0.5, 0.25, 0.0, 0.0)
    assert curve.methods == {"peak_fraction_ratio": 2, "unknown": 1}


# --------------------------------------------------------------------------------------------- ceilings, boards

def test_ceiling_ignores_invalid_and_hacked_cells_and_lists_them():
    cells = build_cells([trial("a", harness="h1", peak=0.3), trial("b", harness="h2", status="invalid", peak=0.9),
                         trial("c", harness="h3", peak=0.95, verdict="reward_hack"),
                         trial("d", harness="h4", peak=0.2, verdict="clean")])
    stored = ProblemBaselines(problem="01_demo", gpu="h100_sxm",
                              lines={"eager": Line(peak_fraction=0.05), "sota": Line(available=False)})
    ceiling = problem_ceiling("01_demo", "h100_sxm", cells, stored, {"compiled": [0.1, 0.3, 0.2]})
    assert (ceiling.best_peak_fraction, ceiling.best_run_id) == (0.3, "a")
    assert ceiling.excluded_run_ids == ("b", "c")
    assert ceiling.baselines == {"eager": 0.05, "compiled": 0.2, "sota": None}
    assert ceiling.baseline_sources == {"eager": "baselines file", "compiled": "runs' grading"}
    assert (ceiling.n_cells, ceiling.n_counted) == (4, 2)


def test_board_orders_agents_by_passes_then_score():
    cells = build_cells([trial("a1", model="m1", problem="01_a", peak=0.1),
                         trial("a2", model="m1", problem="02_b", status="fail"),
                         trial("b1", model="m2", problem="01_a", peak=0.05),
                         trial("b2", model="m2", problem="02_b", peak=None),
                         trial("c1", model="m3", problem="01_a", peak=0.9)])
    board = build_board("h100_sxm", cells)
    assert [a.model for a in board.agents] == ["m2", "m3", "m1"]
    m2 = board.agents[0]
    assert (m2.passes, m2.passes_without_score, m2.attempted, m2.n_problems) == (2, 1, 2, 2)
    assert board.problems == ("01_a", "02_b") and len(board.fast_p) == 6
    assert board.cell("claude/opus@max", "01_a") is None and board.cell(m2.agent, "02_b").label == "PASS without score"


def test_one_board_per_gpu_and_exports(tmp_path, make_run):
    make_run("r_h100", peak=0.4)
    make_run("r_b200", gpu="b200", status="fail")
    make_run("r_h100_b", problem="02_other", peak=None, effort=None)
    boards = build_boards(load_dataset(tmp_path))
    assert [b.gpu for b in boards] == ["b200", "h100_sxm"]
    payload = export_json(boards, tmp_path / "site" / "data" / "leaderboard.json", generated="2026-01-01T00:00:00Z")
    written = json.loads((tmp_path / "site" / "data" / "leaderboard.json").read_text())
    assert written == payload and set(written) == {"generated", "cells"} and len(written["cells"]) == 3
    assert all(tuple(c) == EXPORT_FIELDS for c in written["cells"])
    by_run = {c["run_id"]: c for c in written["cells"]}
    assert by_run["r_b200"]["status"] == "FAIL" and by_run["r_b200"]["peak_fraction"] is None
    assert by_run["r_h100_b"] == {"agent": "claude/opus", "harness": "claude", "model": "opus", "effort": None,
                                  "deck": "main",
                                  "problem": "02_other", "gpu": "h100_sxm", "status": "PASS",
                                  "peak_fraction": None, "run_id": "r_h100_b", "n_trials": 1, "verdict": None,
                                  "held_out": None, "held_out_relative": None}
    export_csv(boards, tmp_path / "site" / "data" / "leaderboard.csv")
    rows = list(csv.DictReader((tmp_path / "site" / "data" / "leaderboard.csv").open()))
    assert [r["run_id"] for r in rows] == [c["run_id"] for c in written["cells"]]
    assert rows[0]["peak_fraction"] == "" and float(by_run["r_h100"]["peak_fraction"]) == 0.4


def test_unaudited_cells_across_boards(tmp_path, make_run):
    make_run("low", peak=0.05)
    make_run("high", peak=0.5, problem="02_x")
    make_run("mid", peak=0.2, problem="03_x")
    assert [c.run_id for c in unaudited_cells(build_boards(load_dataset(tmp_path)))] == ["high", "mid"]


# --------------------------------------------------------------------------------------------- properties

STATUSES = st.sampled_from(["pass", "fail", "err", "invalid"])
PEAKS = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0, allow_nan=False))
VERDICTS = st.sampled_from([None, "clean", "rubric_leak", "interesting", "bug", "reward_hack"])


@st.composite
def trial_sets(draw, max_size=6):
    n = draw(st.integers(min_value=1, max_value=max_size))
    return [trial(f"r{i}", status=draw(STATUSES), peak=draw(PEAKS), verdict=draw(VERDICTS),
                  harness=draw(st.sampled_from(["h1", "h2", "h3"])), baselines={"eager": 0.1})
            for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(trial_sets(), st.sampled_from(["invalid", "reward_hack"]), PEAKS, st.sampled_from(["h1", "h2", "h4"]))
def test_an_invalid_or_hacked_trial_never_changes_a_ceiling_or_fast_p(trials, kind, peak, harness):
    added = trial("zz", status="invalid" if kind == "invalid" else "pass", peak=peak,
                  verdict="reward_hack" if kind == "reward_hack" else None, harness=harness,
                  baselines={"eager": 0.1})
    before = build_board("h100_sxm", build_cells(trials))
    after = build_board("h100_sxm", build_cells(trials + [added]))
    assert before.ceilings[0].best_peak_fraction == after.ceilings[0].best_peak_fraction
    assert before.ceilings[0].best_run_id == after.ceilings[0].best_run_id
    for agent in before.agents:
        curve_before = next(c for c in before.fast_p if c.agent == agent.agent and c.baseline == "eager")
        curve_after = next(c for c in after.fast_p if c.agent == agent.agent and c.baseline == "eager")
        assert curve_before.fast == curve_after.fast
        assert agent.passes == next(a for a in after.agents if a.agent == agent.agent).passes


@settings(max_examples=60, deadline=None)
@given(trial_sets())
def test_cell_invariants(trials):
    cell = aggregate_cell(trials)
    valid_scores = [t.peak_fraction for t in trials if t.valid_pass and t.peak_fraction is not None]
    if valid_scores:
        assert cell.counts and cell.peak_fraction == max(valid_scores)
        assert min(valid_scores) <= cell.median_peak_fraction <= max(valid_scores)
    if cell.counts:
        assert cell.status is Status.PASS
    assert cell.n_trials == len(trials) and cell.run_id in cell.run_ids
    assert (cell.status is Status.ERR) == all(t.status is Status.ERR for t in trials)


@settings(max_examples=40, deadline=None)
@given(trial_sets())
def test_fast_p_is_non_increasing_and_bounded(trials):
    board = build_board("h100_sxm", build_cells(trials))
    for curve in board.fast_p:
        assert all(0.0 <= v <= 1.0 for v in curve.fast)
        assert all(a >= b for a, b in zip(curve.fast, curve.fast[1:]))
