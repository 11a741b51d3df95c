"""Held-out shapes of another benchmark's problems (docs/grading.md, "Held-out cases"): KernelBench-Hard's are
declared in this project (kernelbench/problems/layouts/heldout/kernelbench-hard/<problem folder>.yaml), checked
against their problem's shapes.py, carried in the grader's copy of the problem, and judged by `kernelbench
regrade` into the cell's Grading.held_out, which the diff page shows beside the published shapes' verdict."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kernelbench.errors import KernelBenchError
from kernelbench.problems.heldout import HELDOUT_YAML, heldout_hash
from kernelbench.problems.layouts import kernelbench_hard
from kernelbench.problems.layouts.kernelbench_hard import LAYOUT, load_shapes
from kernelbench.problems.loader import load_heldout
from kernelbench.problems.problem import open_problem

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FOREIGN_H100 = REPO / ".foreign" / "kernelbench.com" / "benchmarks" / "hard" / "problems-h100"
TOY_DECK = HERE / "decks" / "kbh-toy"
GEMM = TOY_DECK / "01_toy_scaled_gemm"
BOARD = HERE / "boards" / "kbh-toy"
HONEST = "20260101_000001_claude_opus_01_toy_scaled_gemm"
THEIR_PROBLEMS = ("01_fp8_gemm", "02_kda_cutlass", "03_paged_attention", "05_topk_bitonic", "06_sonic_moe_swiglu",
                  "07_w4a16_gemm")


@pytest.fixture
def declared_in(tmp_path, monkeypatch):
    """The layout's held-out declarations read from a folder of this test's own (`write(name, data)`)."""
    root = tmp_path / "heldout"
    root.mkdir()
    monkeypatch.setattr(LAYOUT, "heldout_root", root)

    def write(name: str, data: dict) -> Path:
        path = root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


def test_the_project_declares_held_out_shapes_for_each_of_their_problems():
    files = sorted(p.stem for p in kernelbench_hard.HELDOUT_ROOT.glob("*.yaml"))
    assert files == sorted(THEIR_PROBLEMS)


def test_they_load_against_the_published_deck_when_present():
    if not FOREIGN_H100.is_dir():
        pytest.skip(f"the kernelbench.com H100 deck is not fetched into {FOREIGN_H100} (it is never committed)")
    for name in THEIR_PROBLEMS:
        folder = FOREIGN_H100 / name
        problem = open_problem(folder)
        heldout = problem.layout.load_heldout(folder)
        assert heldout is not None and len(heldout.shapes) >= 3 and len(heldout.smoke_shapes) >= 1, name
        published = load_shapes(folder)
        keys = set(published[0])
        for shape in heldout.shapes + heldout.smoke_shapes:
            assert set(shape) == keys and shape not in published, (name, shape)
        # the grader's copy holds them under our names, and the result names them by hash
        assert kernelbench_hard.HELDOUT_ROOT / f"{name}.yaml" in problem.files
        assert LAYOUT.copy_name(folder, kernelbench_hard.HELDOUT_ROOT / f"{name}.yaml") == HELDOUT_YAML
        row = {r.concept: r for r in problem.mapping()}["held-out shapes"]
        assert f"{len(heldout.shapes)} shapes off their grid" in row.ours and f"{name}.yaml" in row.ours


def test_no_declaration_reaches_an_agents_workspace_of_their_deck(tmp_path):
    """Their workspace for agents (their problem folder's own files, their harness beside it): none of our held-out
    files, and none of their shapes as the files declare them."""
    if not FOREIGN_H100.is_dir():
        pytest.skip(f"the kernelbench.com H100 deck is not fetched into {FOREIGN_H100} (it is never committed)")
    from kernelbench.harness.workspace import prepare_workspace

    for name in THEIR_PROBLEMS:
        problem = open_problem(FOREIGN_H100 / name)
        heldout = problem.layout.load_heldout(problem.folder)
        declared = [", ".join(f"{k}: {v}" for k, v in s.items()) for s in heldout.shapes + heldout.smoke_shapes]
        root = tmp_path / name / "ws"
        prepare_workspace(problem, root, tmp_path / name / "pristine", device="cpu")
        files = [p for p in root.rglob("*") if p.is_file()]
        assert files and not [p for p in files if p.name in (HELDOUT_YAML, f"{name}.yaml")]
        for path in files:
            assert not [d for d in declared if d in path.read_text(errors="replace")], path


def test_a_problem_without_declarations_has_none(declared_in):
    assert load_heldout(GEMM) is None
    assert {r.concept: r for r in LAYOUT.mapping(GEMM)}["held-out shapes"].ours == "none declared"


def test_a_published_shape_is_refused_naming_the_file(declared_in):
    path = declared_in(GEMM.name, {"shapes": [{"M": 5, "N": 12, "K": 20}], "smoke_shapes": [{"M": 9, "N": 17,
                                                                                            "K": 33}]})
    with pytest.raises(KernelBenchError) as info:
        load_heldout(GEMM)
    assert str(path) in str(info.value) and "is a published shape" in str(info.value)
    assert "do not load" in {r.concept: r for r in LAYOUT.mapping(GEMM)}["held-out shapes"].ours


def test_a_shape_missing_a_key_is_refused_naming_the_file(declared_in):
    path = declared_in(GEMM.name, {"shapes": [{"M": 9, "N": 17}], "smoke_shapes": [{"M": 9, "N": 17, "K": 33}]})
    with pytest.raises(KernelBenchError) as info:
        load_heldout(GEMM)
    assert str(path) in str(info.value) and "['M', 'N']" in str(info.value) and "['K', 'M', 'N']" in str(info.value)


def test_shapes_that_no_longer_match_their_problem_are_reported_in_the_graders_copy(declared_in, tmp_path):
    """Their shapes.py gained a key after the declarations were written: the grading's copy says so, naming our
    file, rather than judging nothing."""
    path = declared_in(GEMM.name, {"shapes": [{"M": 9, "N": 17, "K": 33}], "smoke_shapes": [{"M": 7, "N": 15,
                                                                                            "K": 31}]})
    changed = tmp_path / "deck" / GEMM.name
    shutil.copytree(GEMM, changed)
    (changed / "shapes.py").write_text((changed / "shapes.py").read_text().replace('{"M"', '{"B": 1, "M"'))
    (changed / "reference.py").write_text((changed / "reference.py").read_text() + "\nB = 1\n")
    copy = open_problem(changed).pristine_copy(tmp_path / "copy")
    assert (copy / HELDOUT_YAML).is_file() and heldout_hash(copy)
    with pytest.raises(KernelBenchError) as info:
        load_heldout(copy)
    assert str(path) in str(info.value) and "the published shapes ['B', 'K', 'M', 'N']" in str(info.value)


@pytest.mark.slow
def test_a_regraded_cell_is_judged_on_them(declared_in, tmp_path):
    """`kernelbench regrade` of one published cell on the CPU: right on the published shapes, judged on the
    held-out ones too, apart from the verdict, and the diff page's row says both."""
    from kernelbench.harness.regrade import regrade_board
    from kernelbench.results.regraded import compare
    from kernelbench.results.run import load_result
    from kernelbench.sitegen.diffpage import _row, held_out_summary

    declared_in(GEMM.name, {"shapes": [{"M": 9, "N": 17, "K": 33}],
                            "smoke_shapes": [{"M": 7, "N": 15, "K": 31}, {"M": 9, "N": 16, "K": 32}]})
    runs = tmp_path / "data" / "runs"
    report = regrade_board(BOARD / "leaderboard.json", BOARD / "solutions", TOY_DECK, runs, device="cpu",
                           shapes="smoke", only=[HONEST], counters=False)
    assert report.graded == [f"{HONEST}_regraded"]
    result = load_result(runs / f"{HONEST}_regraded")
    held = result.grading.held_out
    assert result.status.value == "PASS" and held is not None and held.correct is True, held
    assert held.shapes == [{"M": 7, "N": 15, "K": 31}, {"M": 9, "N": 16, "K": 32}] and held.heldout_hash
    assert held.checks and all(c.passed for c in held.checks)
    row = _row(compare(result))
    assert (row["correct"], row["held_out"], row["held_out_cases"]) == (True, True, len(held.checks))
    assert held_out_summary([row]) == {"correct": 1, "judged": 1, "held_out_right": 1}
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "build.py", "--data", str(runs.parent), "--out", str(site), "--strict"],
                          check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (site / "boards" / "kbh-h100-cpu-diff.html").read_text()
    assert "correct on held-out shapes" in page and f"✓ {len(held.checks)}/{len(held.checks)}" in page
    assert "of 1 cells correct on the published shapes, 1 were judged on held-out shapes and 1 were correct" in page
