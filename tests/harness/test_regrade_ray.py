"""`kernelbench regrade --backend ray`: a board's cells as Ray tasks on a local Ray instance (CPU, smoke shapes),
each run brought home through the run-directory writer, as the local pool's would be."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelbench.harness.regrade_ray import regrade_board_on_ray
from kernelbench.results.run import load_result

FOREIGN = Path(__file__).resolve().parents[1] / "foreign"
BOARD = FOREIGN / "boards" / "kbh-toy"
DECK = FOREIGN / "decks" / "kbh-toy"
PASSING = "20260101_000001_claude_opus_01_toy_scaled_gemm"
WRONG = "20260101_000002_codex_gpt_01_toy_scaled_gemm"


@pytest.mark.slow
def test_a_regrade_on_ray_grades_each_cell_in_a_task_and_resumes(ray_local, tmp_path: Path):
    runs = tmp_path / "runs"
    board = dict(leaderboard=BOARD / "leaderboard.json", solutions_dir=BOARD / "solutions", deck_dir=DECK,
                 runs_dir=runs, device="cpu", shapes="smoke")
    report = regrade_board_on_ray(**board, only=[PASSING, WRONG])
    assert report.statuses == {f"{PASSING}_regraded": "PASS", f"{WRONG}_regraded": "FAIL"}, report
    assert not report.stopped and report.remaining == 0
    passing = load_result(runs / f"{PASSING}_regraded")
    assert passing.provenance is not None and passing.provenance.published_run_id == PASSING
    assert passing.gpu == "cpu" and (runs / f"{PASSING}_regraded" / "check.log").is_file()
    assert not [p.name for p in runs.iterdir() if p.name.startswith(".")]  # no staging or conflict left behind

    again = regrade_board_on_ray(**board, only=[PASSING, WRONG], resume=True)
    assert again.graded == [] and again.skipped == 2


def test_a_ray_regrade_without_ray_says_how_to_get_it(monkeypatch, tmp_path: Path):
    import builtins

    from kernelbench.errors import KernelBenchError
    from kernelbench.harness.regrade_ray import RayCell, grade_cells_on_ray

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no module named ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    cell = RayCell(leaderboard="b.json", solutions="s", deck="d", run_id="r", device="cpu")
    with pytest.raises(KernelBenchError, match="needs Ray") as caught:
        grade_cells_on_ray([cell], tmp_path)
    assert "pip install" in (caught.value.diagnostic.hint or "")
