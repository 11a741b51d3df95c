"""benchmarks/regrade_against_runs.py: which recorded runs it compares with, the ratio it prints, its errors."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.problems.loader import load_module

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "regrade_against_runs.py"


@pytest.fixture(scope="module")
def regrade():
    return load_module(SCRIPT, "regrade_against_runs")


def test_the_committed_triton_softmax_runs_are_three_trials_of_one_file(regrade):
    found = regrade.passing_runs(ROOT / "runs", "scripted:triton", "04")
    if not found:
        pytest.skip("no committed H100 runs in this checkout")
    assert [run.trial for _, run in found] == [1, 2, 3]
    assert {run.problem for _, run in found} == {"04_kahan_softmax"}
    assert regrade.same_file([d for d, _ in found])


def test_ratio_is_the_new_median_over_the_recorded_trials_median(regrade):
    def shape(index, median, samples=(), host_bound=None):
        return SimpleNamespace(index=index, median_ms=median, samples_ms=list(samples), host_bound_samples=host_bound)

    recorded = [SimpleNamespace(grading=SimpleNamespace(shapes=[shape(0, m)])) for m in (1.0, 1.2, 1.1)]
    report = SimpleNamespace(grading=SimpleNamespace(shapes=[shape(0, 1.21, [1.21] * 30, 4)]))
    [row] = regrade.compare_rows("p", recorded, report, full=True)
    assert row["recorded_ms"] == [1.0, 1.2, 1.1] and row["ratio"] == pytest.approx(1.1)
    assert (row["host_bound"], row["trials"]) == (4, 30)
    [smoke] = regrade.compare_rows("p", recorded, report, full=False)
    assert smoke["recorded_ms"] == [] and smoke["ratio"] is None  # smoke medians are not comparable


def test_an_agent_without_runs_is_named(regrade, tmp_path: Path):
    with pytest.raises(KernelBenchError, match="no PASS run of scripted:nobody"):
        regrade.main(["--out", str(tmp_path), "--runs", str(ROOT / "runs"), "--agent", "scripted:nobody",
                      "--problems", "04", "--device", "cpu", "--shapes", "smoke"])
