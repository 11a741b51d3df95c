"""`kernelbench regrade --own-checker`: the published benchmark's own check.py run over each cell, confined, its
verdict kept beside the board's and ours. A deck laid out as kernelbench.com's (problems two folders below the
harness package their check.py imports), with a check.py written here that runs on the CPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.harness.own_checker import verdict_of
from kernelbench.results.run import load_result
from tests.support.foreign_tree import BENCHMARK, CHECK, DECK, lay_out_their_tree

HERE = Path(__file__).resolve().parent
BOARD = HERE / "boards" / "kbh-toy"
PASSING = "20260101_000001_claude_opus_01_toy_scaled_gemm"
WRONG = "20260101_000002_codex_gpt_01_toy_scaled_gemm"


@pytest.fixture(scope="module")
def their_tree(tmp_path_factory) -> Path:
    """kernelbench.com's layout: hard/problems-toy/<problem>/check.py and hard/src/eval/."""
    return lay_out_their_tree(tmp_path_factory.mktemp("hard"))


@pytest.mark.slow
def test_their_checker_and_benchmark_give_their_results_beside_ours(their_tree: Path, tmp_path: Path):
    """A cell graded by an earlier call without their checker gets its verdict from the next call's pass (our
    grading of it untouched), and a cell graded in that call gets it after its grading. Their timing script then
    times the cell that passed our checks (its milliseconds and peak kept); the failing cell is not timed."""
    runs = tmp_path / "runs"
    regrade = [sys.executable, "-m", "kernelbench", "regrade", str(BOARD / "leaderboard.json"),
               "--solutions", str(BOARD / "solutions"), "--deck", str(their_tree), "--runs", str(runs),
               "--device", "cpu", "--shapes", "smoke", "--only", PASSING]
    proc = subprocess.run(regrade, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    earlier = load_result(runs / f"{PASSING}_regraded")
    assert earlier.provenance.own_checker is None
    proc = subprocess.run(regrade + ["--resume", "--own-checker", "--own-benchmark", "--only", WRONG],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "their checker: PASS" in proc.stderr and "their checker: FAIL" in proc.stderr
    assert "their benchmark: timed, peak 0.0100" in proc.stderr
    passing, wrong = (load_result(runs / f"{run_id}_regraded") for run_id in (PASSING, WRONG))
    assert passing.grading == earlier.grading
    assert passing.provenance.own_checker.outcome == "PASS", passing.provenance.own_checker
    assert wrong.provenance.own_checker.outcome == "FAIL", wrong.provenance.own_checker
    assert "differs" in wrong.provenance.own_checker.output_tail
    assert passing.provenance.own_checker.script == "check.py"
    document = json.loads((runs / f"{PASSING}_regraded" / "result.json").read_text())
    assert document["provenance"]["own_checker"]["outcome"] == "PASS"
    timing = passing.provenance.own_benchmark
    assert timing.outcome == "timed" and timing.peak_fraction == pytest.approx(0.01), timing
    assert timing.script == "benchmark.py" and timing.roof_of == "H100" and 0 in timing.shape_ms
    assert wrong.provenance.own_benchmark is None  # its checks failed: no peak to explain


def test_a_problem_without_their_harness_has_no_checker(tmp_path: Path):
    from kernelbench.problems.problem import open_problem

    copy = tmp_path / "problems-toy" / "01_toy_scaled_gemm"
    shutil.copytree(DECK / "01_toy_scaled_gemm", copy)
    (copy / "check.py").write_text(CHECK)
    problem = open_problem(copy)
    assert problem.own_checker() is None  # no src/eval two folders up: their check.py could not import it
    (tmp_path / "src" / "eval").mkdir(parents=True)
    assert problem.own_checker().script == "check.py"
    assert problem.own_benchmark() is None  # the problem ships no benchmark.py
    (copy / "benchmark.py").write_text(BENCHMARK)
    assert problem.own_benchmark().script == "benchmark.py"


def test_the_verdict_is_what_the_checker_said_and_how_it_ended():
    assert verdict_of(0, b"shape 0 ok\nPASS\n") == "PASS"
    assert verdict_of(1, b"FAIL: forbidden op used: torch.matmul\n") == "FAIL"
    assert verdict_of(1, b"Traceback (most recent call last):\n") == "error"
    assert verdict_of(0, b"") == "error"


def test_their_timing_lines_become_each_shapes_milliseconds_and_their_peak():
    """The lines their benchmark.py's docstring says the harness picks up; anything else is ignored, and a number
    that is not a plain non-negative one is left out (the output is the candidate process's too)."""
    from kernelbench.harness.own_checker import timing_of

    out = (b"shape=0 variant=solution tflops=812.345 gbps=401.000 ms=0.169\n"
           b"shape=0 solution_peak_fraction=0.4104\n"
           b"shape=1 variant=eager tflops=1.0 gbps=1.0 ms=9.000\n"
           b"shape=1 variant=solution tflops=1.0 gbps=1.0 ms=nan\n"
           b"shape=2 variant=solution tflops=1.0 gbps=1.0 ms=-3\n"
           b"peak_fraction: 0.2965\nRESULT: OK\n")
    assert timing_of(out) == ({0: 0.169}, 0.2965)
    assert timing_of(b"Traceback (most recent call last):\n") == ({}, None)

