"""benchmarks/demo_trial_agreement.py: cells, spreads and counts from hand-made runs and from the committed runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.problems.loader import load_module
from kernelbench.results.run import Grading, Outcome, RunResult, ShapeResult, Status

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "demo_trial_agreement.py"


@pytest.fixture(scope="module")
def agreement():
    return load_module(SCRIPT, "demo_trial_agreement")  # registered in sys.modules, as its dataclasses need


def run(model: str, problem: str, trial: int, peak: float | None, medians: list[float], *,
        outcome: Outcome = Outcome.PASS) -> RunResult:
    shapes = [ShapeResult(index=i, shape={"n": i}, median_ms=ms) for i, ms in enumerate(medians)]
    return RunResult(run_id=f"20260101_00000{trial}_scripted_{model}_{problem}_t{trial}", harness="scripted",
                     model=model, problem=problem, gpu="h100_sxm", trial=trial,
                     grading=Grading(has_solution=True, correct=True, outcome=outcome, peak_fraction=peak,
                                     shapes=shapes))


def test_spread_is_max_over_min_minus_one_and_needs_every_trial_to_pass(agreement):
    runs = [run("triton", "01_x", 3, 0.33, [1.0, 3.0]), run("triton", "01_x", 1, 0.30, [1.0, 2.0]),
            run("triton", "01_x", 2, 0.31, [1.05, 2.0]),
            run("cheat", "01_x", 1, 0.5, [1.0]), run("cheat", "01_x", 2, 0.5, [1.0], outcome=Outcome.INVALID)]
    triton, = [cell for cell in agreement.group_cells(runs) if cell.agent == "scripted/triton"]
    cheat, = [cell for cell in agreement.group_cells(runs) if cell.agent == "scripted/cheat"]
    assert [r.trial for r in triton.runs] == [1, 2, 3]
    assert triton.spread == pytest.approx(0.10)
    assert triton.shape_spreads == pytest.approx([0.05, 0.5])
    assert cheat.statuses == [Status.PASS, Status.INVALID] and cheat.spread is None


def test_summary_counts_cells_and_shapes_within_thresholds(agreement):
    runs = [run("a", "01_x", t, pf, [1.0]) for t, pf in ((1, 1.0), (2, 1.005))]
    runs += [run("b", "01_x", t, pf, [1.0 + 0.2 * (t - 1)]) for t, pf in ((1, 1.0), (2, 1.02))]
    lines = agreement.summary_lines(agreement.group_cells(runs))
    assert lines[0].startswith("2 cells whose trials all PASS: 1 within 1%, 2 within 3%, 2 within 10%")
    assert "1 spread by more than 10%" in lines[1]
    table = agreement.markdown_table(agreement.group_cells(runs))
    assert "| `scripted/a` | 01_x | 1 | 1.005 | 0.5% | 0.0% |" in table


def test_a_broken_result_names_its_file(agreement, tmp_path):
    bad = tmp_path / "20260101_000000_scripted_x_01_x_t1"
    bad.mkdir()
    (bad / "result.json").write_text(json.dumps({"run_id": "r", "harness": "scripted"}))
    with pytest.raises(KernelBenchError, match="result.json"):
        agreement.load_runs(tmp_path)
    assert agreement.main(["--runs", str(tmp_path / "missing")]) == 2


def test_the_committed_h100_demo_passes_where_expected(agreement):
    """Every scripted eager and Triton cell passes all its trials except eager 01 (INVALID by design: no FP8
    tensor-core instruction); every cheat run is INVALID except the Kahan softmax of trial 1 (the leak, since closed)."""
    cells = agreement.group_cells(agreement.load_runs(ROOT / "runs"), harness="scripted", gpu="h100_sxm")
    if not cells:
        pytest.skip("no committed scripted H100 runs")
    departures = []
    for cell in cells:
        for result in cell.runs:
            expected = Status.PASS
            if cell.agent == "scripted/cheat":
                leak = cell.problem == "04_kahan_softmax" and result.trial == 1
                expected = Status.PASS if leak else Status.INVALID
            elif cell.agent == "scripted/eager" and cell.problem == "01_fp8_gemm":
                expected = Status.INVALID
            if result.status is not expected:
                departures.append((result.run_id, result.status))
    assert departures == []
