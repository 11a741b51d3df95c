"""`kernelbench regrade --gpus`: cells spread over the GPUs, each grading's stages on its own GPU, each GPU's
measurements on its own lock, never more than --jobs gradings on one GPU."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.harness import regrade
from kernelbench.harness.cli import gpu_list


def _cells(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(run_id=f"cell{i}_regraded") for i in range(n)]


def test_cells_are_spread_over_the_gpus_and_each_stage_sees_its_own(monkeypatch):
    from kernelbench.eval.process import worker_env

    seen, running, most = [], {}, {}
    guard = threading.Lock()

    def fake_grade_cell(job, settings, runs_dir, exclusive):
        gpu = worker_env("cuda")["CUDA_VISIBLE_DEVICES"]  # what a stage of this grading would be given
        with guard:
            running[gpu] = running.get(gpu, 0) + 1
            most[gpu] = max(most.get(gpu, 0), running[gpu])
            seen.append((job.run_id, gpu, id(exclusive.lock)))  # each grading's turn on its GPU's lock
        time.sleep(0.05)
        with guard:
            running[gpu] -= 1
        return SimpleNamespace(status=SimpleNamespace(value="PASS"))

    monkeypatch.setattr(regrade, "grade_cell", fake_grade_cell)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    report = regrade.RegradeReport(board="toy", total=8)
    settings = SimpleNamespace(timeline=regrade.CellTimeline())
    regrade.grade_cells(_cells(8), settings, None, report, regrade.gpu_slots("cuda", None), 2, None, None)
    assert len(report.graded) == 8
    assert {gpu for _, gpu, _ in seen} == {"1", "3"}
    assert most == {"1": 2, "3": 2}  # --jobs 2: two at a time on each GPU, never three
    locks = {gpu: {lock for _, g, lock in seen if g == gpu} for gpu in ("1", "3")}
    assert len(locks["1"]) == len(locks["3"]) == 1 and locks["1"] != locks["3"]  # one lock per GPU


def test_a_stage_outside_any_assignment_keeps_the_first_visible_gpu(monkeypatch):
    from kernelbench.eval.process import on_gpu, worker_env

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert worker_env("cuda")["CUDA_VISIBLE_DEVICES"] == "2"
    with on_gpu("5"):
        assert worker_env("cuda")["CUDA_VISIBLE_DEVICES"] == "5"
        assert worker_env("cpu")["CUDA_VISIBLE_DEVICES"] == ""  # a CPU grading never sees a GPU
    assert worker_env("cuda")["CUDA_VISIBLE_DEVICES"] == "2"


def test_the_least_busy_gpu_gets_the_next_cell():
    assert regrade.least_busy(["0", "1", "2"], ["0", "0", "1"]) == "2"
    assert regrade.least_busy(["0", "1"], ["1"]) == "0"


def test_slots_on_the_cpu_and_without_a_gpu(monkeypatch):
    assert regrade.gpu_slots("cpu", ["0", "1"]) == [None]
    assert regrade.gpu_slots("cuda", ["2", "3"]) == ["2", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(KernelBenchError, match="no GPU to regrade on"):
        regrade.gpu_slots("cuda", None)


def test_the_gpus_option_wants_distinct_entries():
    assert gpu_list("0, 2,3") == ["0", "2", "3"]
    for bad in ("0,0", "1,,2", ""):
        with pytest.raises(Exception, match="distinct GPUs"):
            gpu_list(bad)


def test_the_log_follows_each_cell_through_its_stages_and_names_what_a_cut_short_cell_was_doing():
    """A cell that a call's end cuts short is thrown away: its log lines (and the cut-short line) are all that say
    where its time went, so the next call can be planned."""
    lines = []
    timeline = regrade.CellTimeline(lines.append)
    slow, quick = (SimpleNamespace(run_id=name) for name in ("slow_06", "quick_05"))
    timeline.start(slow, "1")
    timeline.start(quick, "2")
    timeline.stage(slow, "correctness", "12 cases")
    timeline.stage(slow, "correctness", "case 5 of 12 judged")  # how far: kept, not logged
    timeline.stage(quick, "timing")
    timeline.finish(quick, "PASS")
    assert any(line.endswith("gpu 1 slow_06: correctness (12 cases)") for line in lines)
    assert any(" gpu 2 quick_05: PASS after " in line for line in lines)
    (under_way,) = timeline.under_way()
    assert under_way.startswith("slow_06 gpu 1: ") and under_way.endswith("in correctness (case 5 of 12 judged)")
    assert not any("case 5" in line for line in lines)


def test_a_wait_for_the_gpus_measuring_turn_is_told():
    told = []
    lock = threading.Lock()
    turn = regrade.MeasuringTurn(lock, lambda: told.append("waiting"))
    with turn:
        assert told == []  # free: no wait to tell
    lock.acquire()
    releaser = threading.Timer(0.1, lock.release)
    releaser.start()
    with turn:
        assert told == ["waiting"]
    releaser.join()
    assert not lock.locked()


def test_cells_are_graded_in_the_order_only_names_them():
    def job(run_id, problem):
        return SimpleNamespace(cell=SimpleNamespace(run_id=run_id), problem=problem)

    only = ["b_06", "02_kda", "a_01"]
    jobs = [job("a_01", "01_fp8"), job("b_06", "06_moe"), job("c_02", "02_kda"), job("d_03", "03_paged")]
    assert sorted(jobs, key=lambda j: regrade._named_at(j, only))[0].cell.run_id == "b_06"
    assert [regrade._named_at(j, only) for j in jobs] == [2, 0, 1, 3]  # a cell not named goes after the named ones
    assert {regrade._named_at(j, None) for j in jobs} == {0}  # no --only: the board's order stands
