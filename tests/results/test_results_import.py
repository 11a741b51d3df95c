"""`kernelbench import kernelbench-hard` on the real published boards (read in place from shared fixtures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelbench.cli import main
from kernelbench.results.dataset import QuoteState, load_dataset
from kernelbench.results.importer import ImportReport, convert_annotation, gpu_key_for
from kernelbench.results.leaderboard import build_boards, export_rows
from kernelbench.results.published import parse_raw_baselines
from kernelbench.results.run import Status

RTX = "published/kernelbench-hard-rtxpro6000-2026-04"
H100 = "published/kernelbench-hard-h100-2026-08"


def published_status(cell: dict) -> str:
    """The published board's own encoding of a cell."""
    if cell["correct"]:
        return "PASS"
    return "FAIL" if cell["has_solution"] else "ERR"


@pytest.fixture(scope="module")
def rtx_import(shared_fixtures: Path, tmp_path_factory) -> Path:
    src = shared_fixtures / RTX
    out = tmp_path_factory.mktemp("rtx")
    code = main(["import", "kernelbench-hard", str(src / "leaderboard.json"), "--annotations",
                 str(src / "annotations"), "--baselines", str(src / "problem_baselines.json"), "--out", str(out)])
    assert code == 0
    return out


def test_all_84_cells_match_the_published_board(rtx_import: Path, shared_fixtures: Path):
    published = json.loads((shared_fixtures / RTX / "leaderboard.json").read_text())
    dataset = load_dataset(rtx_import)
    assert [d for d in dataset.diagnostics] == []
    [board] = build_boards(dataset)
    assert board.gpu == "rtx_pro_6000" and len(board.cells) == 84 and len(board.problems) == 7
    rows = {r["run_id"]: r for r in export_rows([board])}
    statuses = set()
    for agent in published["models"]:
        for problem, cell in agent["results"].items():
            row = rows[cell["run_id"]]
            assert (row["harness"], row["model"], row["effort"], row["problem"]) == (
                agent["harness"], agent["model"], agent["effort"] or None, problem)
            assert row["status"] == published_status(cell), cell["run_id"]
            assert row["peak_fraction"] == cell["peak_fraction"]
            outcome = dataset.runs[cell["run_id"]].result.grading.outcome.value
            assert outcome == {"PASS": "pass", "FAIL": "check_failed", "ERR": "no_solution"}[row["status"]]
            statuses.add((row["status"], row["peak_fraction"] is None))
    assert statuses == {("PASS", False), ("PASS", True), ("FAIL", True), ("ERR", True)}
    # the published board counted passes its own auditors had flagged; ours shows them and does not count them
    flagged = {run_id for run_id, record in dataset.annotations.items()
               if record.annotation.verdict.value in ("rubric_leak", "reward_hack")}
    for summary in board.agents:
        label = next(a for a in published["models"] if a["model"] == summary.model)
        leaked = sum(1 for cell in label["results"].values()
                     if cell["run_id"] in flagged and published_status(cell) == "PASS")
        assert summary.passes == label["pass_count"] - leaked and summary.attempted == label["total_runs"]
    codex = next(a for a in board.agents if a.agent == "codex/gpt-5.5@xhigh")
    assert codex.passes == 5  # 7 on the published board, two of them flagged rubric leaks


def test_pass_without_score_and_fail_vs_err(rtx_import: Path):
    [board] = build_boards(load_dataset(rtx_import))
    opus = board.cell("claude/claude-opus-4-7@max", "02_kda_cutlass")
    assert opus.status is Status.PASS and opus.label == "PASS without score" and opus.counts
    assert board.cell("claude/claude-opus-4-7@max", "06_sonic_moe_swiglu").status is Status.FAIL
    assert board.cell("opencode/openrouter-pinned/qwen/qwen3.6-plus", "02_kda_cutlass").status is Status.ERR


def test_all_30_annotations_load_and_quotes_are_unverifiable(rtx_import: Path):
    dataset = load_dataset(rtx_import)
    assert len(dataset.annotations) == 30 and all(r.run_known for r in dataset.annotations.values())
    states = [c.state for r in dataset.annotations.values() for c in r.quote_checks]
    assert len(states) == 14 and set(states) == {QuoteState.UNVERIFIABLE}
    opus = dataset.annotations["20260428_040539_claude_claude-opus-4-7_01_fp8_gemm"].annotation
    assert opus.verdict.value == "rubric_leak" and opus.quotes[1].text == "using SmArch = cutlass::arch::Sm80;\n"
    codex = dataset.annotations["20260427_230711_codex_gpt-5.5_01_fp8_gemm"].annotation
    assert codex.quotes == [] and "Pinned to Ampere" in codex.summary
    assert dataset.annotations["20260427_094004_opencode_deepseek_deepseek-v4-flash_04_kahan_softmax"] \
        .annotation.model == "deepseek/deepseek-v4-flash"


def test_ceilings_use_baselines_derived_from_raw_output(rtx_import: Path, shared_fixtures: Path):
    [board] = build_boards(load_dataset(rtx_import))
    kahan = board.ceiling("04_kahan_softmax")
    # codex's 0.3634 is the published "Kahan without compensation": annotated rubric_leak, shown but not the ceiling
    assert kahan.best_peak_fraction == 0.1011 and kahan.best_agent.endswith("deepseek-v4-pro")
    assert "20260427_230711_codex_gpt-5.5_04_kahan_softmax" in kahan.excluded_run_ids \
        or any("codex" in r for r in kahan.excluded_run_ids)
    # memory-bound: eager's published geomean bandwidth over the card's 1800 GB/s gives the same fraction
    assert kahan.baselines["eager"] == pytest.approx(68.551 / 1800, rel=0.01)
    assert kahan.baselines["sota"] is not None and board.ceiling("01_fp8_gemm").baselines["sota"] is None
    codex = board.cell("codex/gpt-5.5@xhigh", "04_kahan_softmax")
    assert codex.speedups["eager"].method.value == "peak_fraction_ratio"
    assert codex.speedups["eager"].value == pytest.approx(0.3634 / kahan.baselines["eager"])


def test_annotate_check_passes_on_the_import(rtx_import: Path, capsys):
    assert main(["annotate", "check", "--data", str(rtx_import)]) == 0
    out = capsys.readouterr().out
    assert "30 annotations" in out and "14 unverifiable" in out and "0 errors" in out


def test_h100_board_imports_with_inline_verdicts(shared_fixtures: Path, tmp_path: Path):
    src = shared_fixtures / H100
    assert main(["import", "kernelbench-hard", str(src / "leaderboard.json"), "--baselines",
                 str(src / "problem_baselines.json"), "--out", str(tmp_path)]) == 0
    published = json.loads((src / "leaderboard.json").read_text())
    cells = [c for a in published["models"] for c in a["results"].values()]
    dataset = load_dataset(tmp_path)
    assert dataset.diagnostics == []
    [board] = build_boards(dataset)
    assert board.gpu == "h100_pcie" and len(board.cells) == len(cells) == 111
    rows = {r["run_id"]: r for r in export_rows([board])}
    for cell in cells:
        assert rows[cell["run_id"]]["status"] == published_status(cell)
        assert rows[cell["run_id"]]["verdict"] == cell.get("annotation_verdict")
    eager = board.ceiling("01_fp8_gemm").baselines["eager"]
    assert eager is None  # geomean figures only: no peak_fraction is invented


def test_both_boards_in_one_directory_give_two_boards(shared_fixtures: Path, tmp_path: Path):
    for board in (RTX, H100):
        assert main(["import", "kernelbench-hard", str(shared_fixtures / board / "leaderboard.json"),
                     "--out", str(tmp_path)]) == 0
    assert [b.gpu for b in build_boards(load_dataset(tmp_path))] == ["h100_pcie", "rtx_pro_6000"]


def test_reimport_is_idempotent_and_keeps_edits(shared_fixtures: Path, tmp_path: Path, capsys):
    src = shared_fixtures / RTX
    args = ["import", "kernelbench-hard", str(src / "leaderboard.json"), "--annotations", str(src / "annotations"),
            "--out", str(tmp_path)]
    assert main(args) == 0
    edited = tmp_path / "annotations" / "20260428_040539_claude_claude-opus-4-7_01_fp8_gemm.yaml"
    edited.write_text(edited.read_text().replace("verdict: rubric_leak", "verdict: interesting"))
    capsys.readouterr()
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "0 runs, 0 annotations" in captured.out and "1 differing files kept" in captured.out
    assert "verdict: interesting" in edited.read_text() and "--force" in captured.err
    assert main(args + ["--force"]) == 0 and "verdict: rubric_leak" in edited.read_text()


def test_raw_baselines_parse(shared_fixtures: Path):
    shapes, fractions = parse_raw_baselines(shared_fixtures / RTX / "raw_baselines" / "04_kahan_softmax.txt")
    assert len(shapes) == 20 and fractions[0] == 0.0085
    assert {s.variant for s in shapes} == {"eager", "compiled", "sota", "solution"}


def test_gpu_names_map_to_profile_keys():
    assert gpu_key_for("RTX PRO 6000 Blackwell Workstation") == "rtx_pro_6000"
    assert gpu_key_for("NVIDIA H100 PCIe") == "h100_pcie"
    assert gpu_key_for("H100_PCIE_HOPPER_SM90") == "h100_pcie"


def test_unknown_gpu_is_a_clear_error(tmp_path: Path, capsys):
    board = tmp_path / "leaderboard.json"
    board.write_text(json.dumps({"hardware": {"name": "Voodoo 2"}, "models": []}))
    assert main(["import", "kernelbench-hard", str(board), "--out", str(tmp_path / "out")]) == 2
    assert "--gpu" in capsys.readouterr().err
    assert main(["import", "kernelbench-hard", str(board), "--gpu", "b200", "--out", str(tmp_path / "out")]) == 0


def test_malformed_board_names_the_line(tmp_path: Path, capsys):
    board = tmp_path / "leaderboard.json"
    board.write_text('{\n "hardware": {"name": "NVIDIA H100 PCIe"},\n "models": [\n')
    assert main(["import", "kernelbench-hard", str(board), "--out", str(tmp_path / "out")]) == 2
    assert f"{board}:4" in capsys.readouterr().err


def test_published_annotation_with_unlocated_quote(tmp_path: Path):
    path = tmp_path / "a.yaml"
    path.write_text("run_id: r\neffort: ''\nverdict: clean\nsummary: ok\nquotes:\n  - file: solution.py\n"
                    "    lines: [0]\n    label: here\n    text: somewhere\n")
    report = ImportReport(gpu="h100_sxm")
    annotation = convert_annotation(path, report)
    assert annotation.effort is None and annotation.quotes == [] and "somewhere" in annotation.summary
    assert report.diagnostics[0].line == 6


def test_duplicate_runs_bad_annotations_and_unsafe_names(tmp_path: Path, capsys):
    cell = {"run_id": "20260101_000000_x_y_01_a", "correct": True, "has_solution": True, "peak_fraction": 0.2}
    board = {"hardware": {"name": "NVIDIA H100 PCIe"},
             "models": [{"harness": "x", "model": "y", "results": {"01_a": cell, "02_b": cell}}]}
    (tmp_path / "lb.json").write_text(json.dumps(board))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "broken.yaml").write_text("run_id: [\n")
    (notes / "ghost.yaml").write_text("run_id: ghost\nverdict: clean\nsummary: s\n")
    out = tmp_path / "out"
    assert main(["import", "kernelbench-hard", str(tmp_path / "lb.json"), "--annotations", str(notes),
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "appears in two cells" in err and "broken.yaml:" in err and "not on this board" in err
    assert [p.name for p in (out / "runs").iterdir()] == [cell["run_id"]]
    board["models"][0]["results"] = {"../escape": cell}
    (tmp_path / "lb.json").write_text(json.dumps(board))
    assert main(["import", "kernelbench-hard", str(tmp_path / "lb.json"), "--out", str(tmp_path / "o2")]) == 2
    assert "not a plain name" in capsys.readouterr().err and not (tmp_path / "o2").exists()
