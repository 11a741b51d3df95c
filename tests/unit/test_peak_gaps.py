"""A regraded cell's peak gap split into the parts a reader can check: the two boards' ceilings, the input
protocol, and the speed left."""

from __future__ import annotations

import math

import pytest

from kernelbench.base.models import Ceiling
from kernelbench.results.published import PublishedHardware
from kernelbench.results.regraded import Disagreement
from kernelbench.sitegen.diffpage import peak_gaps

H100_PCIE = PublishedHardware(name="NVIDIA H100 PCIe", peak_bandwidth_gb_s=2039.0)


def test_the_published_ceiling_is_the_boards_bandwidth_or_its_gpus_datasheet_throughput():
    memory = H100_PCIE.ceiling("memory", "dram")
    assert (memory.value, memory.unit) == (2039.0, "GB/s") and "peak_bandwidth_gb_s" in memory.source
    compute = H100_PCIE.ceiling("compute", "bf16")
    assert (compute.value, compute.unit, compute.dtype) == (756.0, "TFLOP/s", "bf16")
    assert H100_PCIE.ceiling("compute", "torch.float8_e4m3fn").value == 1513.0
    assert PublishedHardware(name="Some Accelerator 9000").ceiling("compute", "bf16") is None


def _cell(ratio_parts: dict, **extra) -> Disagreement:
    base = dict(run_id="r", agent="a", problem="p", published="PASS", ours="PASS", agrees=True, kind="agree",
                reason="")
    return Disagreement(**base, **ratio_parts, **extra)


def _roof(value: float, unit: str = "GB/s") -> Ceiling:
    return Ceiling(regime="memory" if unit == "GB/s" else "compute", dtype="dram" if unit == "GB/s" else "bf16",
                   value=value, unit=unit)


def test_the_three_parts_multiply_to_the_gap():
    cell = _cell(dict(published_peak=0.5, our_peak=0.3), peak_same_inputs=0.4, published_ceiling=_roof(2000.0),
                 our_ceiling=_roof(4000.0))
    assert cell.ceiling_factor == pytest.approx(0.5)  # the same speed would give half the fraction here
    assert cell.protocol_factor == pytest.approx(0.75)
    assert cell.speed_factor == pytest.approx(1.6)   # the kernel ran 1.6x as fast here as published
    assert cell.ceiling_factor * cell.protocol_factor * cell.speed_factor == pytest.approx(cell.peak_ratio)


def test_roofs_of_different_kinds_are_not_divided():
    cell = _cell(dict(published_peak=0.5, our_peak=0.3), published_ceiling=_roof(2000.0),
                 our_ceiling=_roof(989.0, "TFLOP/s"))
    assert cell.ceiling_factor is None and cell.speed_factor is None


def test_without_a_same_inputs_loop_the_speed_holds_the_protocol_too():
    cell = _cell(dict(published_peak=0.5, our_peak=0.3), published_ceiling=_roof(2000.0), our_ceiling=_roof(4000.0))
    assert cell.protocol_factor is None and cell.speed_factor == pytest.approx(1.2)


def test_the_largest_gaps_either_way_come_first():
    roofs = dict(published_ceiling=_roof(2000.0), our_ceiling=_roof(2000.0))
    cells = [_cell(dict(published_peak=0.5, our_peak=peak), **roofs) for peak in (0.45, 0.05, 2.5)]
    ratios = [g["ratio"] for g in peak_gaps(cells)]
    assert ratios == sorted(ratios, key=lambda r: -abs(math.log(r))) and ratios[0] == pytest.approx(0.1)  # 10x slower outranks 5x faster


def test_their_checker_here_is_counted_beside_the_board_and_ours():
    from kernelbench.sitegen.diffpage import three_way

    rows = [{"published": "PASS", "own_checker": "FAIL", "ours": "FAIL"},
            {"published": "PASS", "own_checker": "FAIL", "ours": "FAIL"},
            {"published": "PASS", "own_checker": "PASS", "ours": "INVALID"},
            {"published": "PASS", "own_checker": None, "ours": "PASS"}]  # not run there: left out
    assert three_way(rows) == [{"published": "PASS", "theirs_here": "FAIL", "ours": "FAIL", "cells": 2},
                               {"published": "PASS", "theirs_here": "PASS", "ours": "INVALID", "cells": 1}]


def test_a_cell_where_their_checker_disagrees_with_their_board_is_listed_with_its_reason():
    from kernelbench.results.regraded import reason_line
    from kernelbench.sitegen.diffpage import checker_disputes

    tail = "PROPERTY_SEED: 1\nFAIL: shape 0 property stress: PagedShortSequenceCase: tolerance exceeded\n"
    assert reason_line(tail) == "FAIL: shape 0 property stress: PagedShortSequenceCase: tolerance exceeded"
    assert reason_line("Traceback ...\nImportError: no module named x") == "ImportError: no module named x"
    assert reason_line("") == ""
    rows = [{"published": "PASS", "own_checker": "FAIL", "ours": "PASS"},
            {"published": "PASS", "own_checker": "PASS", "ours": "INVALID"},  # their checker agrees with their board
            {"published": "PASS", "own_checker": "error", "ours": "PASS"},    # a crash of the run, not a verdict
            {"published": "FAIL", "own_checker": "PASS", "ours": "PASS"}]
    assert checker_disputes(rows) == [rows[0], rows[3]]


def test_a_dispute_says_whether_our_grading_ever_ran_their_stress_cases():
    from pathlib import Path

    from kernelbench.base.models import SeedResult
    from kernelbench.results.regraded import compare
    from kernelbench.results.run import load_result

    runs = Path(__file__).resolve().parents[2] / "runs"
    regraded = next((d for d in sorted(runs.glob("*_regraded")) if (d / "result.json").is_file()), None)
    if regraded is None:
        pytest.skip("no regraded run directory in runs/")
    result = load_result(regraded)

    def with_cases(*cases: str):
        checks = [SeedResult(shape_index=0, seed=42, case=case, passed=True) for case in cases]
        return result.model_copy(update={"grading": result.grading.model_copy(update={"checks": checks})})

    before_the_adapter = with_cases("base", "base", "property:base@1", "property:base@2")
    assert compare(before_the_adapter).their_cases_checked == 0
    drawn = with_cases("base", "stress:small_hidden", "property:base@1",
                       "property:SonicRaggedMixedCase(receiver=0, donor=1, row_delta=129)", "repeat:s0_base_42")
    assert compare(drawn).their_cases_checked == 2


def test_their_timing_here_splits_a_gap_into_the_machine_and_the_grader():
    """Their benchmark.py run here: their peak here / published is the machine's part, ours / theirs here the
    grader's; the two multiply to the gap, and without their timing neither is claimed."""
    cell = Disagreement(run_id="r", agent="a", problem="05_topk_bitonic", published="PASS", ours="PASS",
                        published_peak=0.40, our_peak=0.05, agrees=True, kind="agree", reason="",
                        their_benchmark_peak=0.50)
    assert cell.machine_factor == pytest.approx(1.25) and cell.grader_factor == pytest.approx(0.1)
    assert cell.machine_factor * cell.grader_factor == pytest.approx(cell.peak_ratio)
    untimed = Disagreement(run_id="r", agent="a", problem="05_topk_bitonic", published="PASS", ours="PASS",
                           published_peak=0.40, our_peak=0.05, agrees=True, kind="agree", reason="")
    assert untimed.machine_factor is None and untimed.grader_factor is None
    gap = peak_gaps([cell])[0]
    assert (gap["theirs_here"], gap["machine"], gap["grader"]) == (0.50, cell.machine_factor, cell.grader_factor)
