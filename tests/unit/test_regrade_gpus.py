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
from kernelbench.results.run import Grading, Outcome, Provenance, RunResult


def _cells(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(run_id=f"cell{i}_regraded") for i in range(n)]


def _result(run_id: str, outcome: Outcome, reasons: tuple[str, ...] = (), note: str = "") -> RunResult:
    return RunResult(run_id=run_id, harness="claude", model="opus", problem="06_sonic_moe_swiglu", gpu="h100",
                     grading=Grading(has_solution=True, correct=outcome is not Outcome.CHECK_FAILED, outcome=outcome,
                                     reasons=list(reasons)),
                     provenance=Provenance(repository="https://github.com/example/board", commit="0" * 40,
                                           path="solutions/s.py", board="toy", published_run_id=run_id,
                                           published_status="PASS", graded_again_alone=note))


def test_cells_are_spread_over_the_gpus_and_each_stage_sees_its_own(monkeypatch):
    from kernelbench.eval.process import worker_env

    seen, running, most = [], {}, {}
    guard = threading.Lock()

    def fake_grade_cell(job, settings, runs_dir, turns, **publishing):
        gpu = worker_env("cuda")["CUDA_VISIBLE_DEVICES"]  # what a stage of this grading would be given
        with guard:
            running[gpu] = running.get(gpu, 0) + 1
            most[gpu] = max(most.get(gpu, 0), running[gpu])
            seen.append((job.run_id, gpu, id(turns[0].take.__self__)))  # each grading's turns on its GPU's
        time.sleep(0.05)
        with guard:
            running[gpu] -= 1
        result = _result(job.run_id, Outcome.PASS)
        assert publishing["final"](result)  # a clean pass is every cell's last word
        return result

    monkeypatch.setattr(regrade, "grade_cell", fake_grade_cell)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    report = regrade.RegradeReport(board="toy", total=8)
    settings = SimpleNamespace(timeline=regrade.CellTimeline())
    regrade.grade_cells(_cells(8), settings, None, report, regrade.gpu_slots("cuda", None), 2, None, None)
    assert len(report.graded) == 8
    assert {gpu for _, gpu, _ in seen} == {"1", "3"}
    assert most == {"1": 2, "3": 2}  # --jobs 2: two at a time on each GPU, never three
    locks = {gpu: {lock for _, g, lock in seen if g == gpu} for gpu in ("1", "3")}
    assert len(locks["1"]) == len(locks["3"]) == 1 and locks["1"] != locks["3"]  # one GpuTurns per GPU


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
    turns = regrade.GpuTurns()
    measuring = turns.measuring(lambda: told.append("waiting to measure"))
    with measuring:
        assert told == []  # free: no wait to tell
    other = turns.beside(lambda: None)
    other.__enter__()  # another grading's correctness stage under way
    releaser = threading.Timer(0.1, other.__exit__, (None, None, None))
    releaser.start()
    with measuring:
        assert told == ["waiting to measure"]
    releaser.join()


def test_nothing_else_runs_on_a_gpu_while_a_grading_measures():
    """Stages beside each other share the GPU; a measurement waits for them to end, and a stage asking to start
    once a measurement waits goes after it (the measurement is never starved)."""
    turns = regrade.GpuTurns()
    events, guard = [], threading.Lock()

    def note(what):
        with guard:
            events.append(what)

    first, second = turns.beside(lambda: note("wait")), turns.beside(lambda: note("wait"))
    first.__enter__()
    second.__enter__()  # two correctness stages side by side: no wait
    assert events == []

    def measure():
        with turns.measuring(lambda: note("measure waits")):
            note("measuring")
            time.sleep(0.1)
            note("measured")

    def late_beside():
        with turns.beside(lambda: note("late waits")):
            note("late runs")

    measurer = threading.Thread(target=measure)
    measurer.start()
    time.sleep(0.05)
    late = threading.Thread(target=late_beside)
    late.start()
    time.sleep(0.05)
    assert events == ["measure waits", "late waits"]  # the late stage queues behind the waiting measurement
    first.__exit__(None, None, None)
    time.sleep(0.05)
    assert "measuring" not in events  # one stage still beside: the measurement still waits
    second.__exit__(None, None, None)
    measurer.join(2)
    late.join(2)
    assert events == ["measure waits", "late waits", "measuring", "measured", "late runs"]


def _stub_stages(monkeypatch, stage):
    """Every stage of grade.run_stages replaced by `stage(name, result)`'s stand-in."""
    from kernelbench.eval.stages import audits, correctness, heldout, heldout_timing, sanitizer, timing

    monkeypatch.setattr(audits, "lint", stage("lint"))
    monkeypatch.setattr(correctness, "check", stage("correctness", True))
    monkeypatch.setattr(audits, "problem_copy", stage("problem copy"))
    monkeypatch.setattr(audits, "launches", stage("launch audit"))
    monkeypatch.setattr(sanitizer, "check", stage("sanitizer", False))
    monkeypatch.setattr(audits, "counters", stage("counters"))
    monkeypatch.setattr(timing, "bench", stage("timing"))
    monkeypatch.setattr(audits, "speed_of_light", stage("speed of light"))
    monkeypatch.setattr(timing, "baseline_medians", stage("baseline medians"))
    monkeypatch.setattr(heldout, "check", stage("held-out"))
    monkeypatch.setattr(heldout_timing, "bench", stage("held-out timing"))


def _recording(calls, held):
    """A stage stand-in that records its name with the turns held as it runs."""
    def stage(name, result=None):
        def run(*args, **kwargs):
            calls.append((name, tuple(held)))
            return result
        return run
    return stage


def test_a_grading_takes_its_turns_around_its_stages(monkeypatch):
    """grade.run_stages holds `beside` around correctness, the audits, the sanitizer and held-out judging (taken
    again for each, so a neighbour's measurement can go between them) and `exclusive` around the measuring stages,
    one group after another, never one inside the other."""
    from kernelbench.eval import grade

    held: list[str] = []
    entered: list[str] = []
    calls: list[tuple[str, tuple[str, ...]]] = []

    class Held:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            assert not held, f"{self.name} entered inside {held}"
            held.append(self.name)
            entered.append(self.name)

        def __exit__(self, *exc):
            held.remove(self.name)

    _stub_stages(monkeypatch, _recording(calls, held))
    plan = SimpleNamespace(options=SimpleNamespace(timing=True, held_out=True), cases=[], shapes=[], heldout=[])
    assert grade.run_stages(plan, SimpleNamespace(), Held("measuring"), None, Held("beside"))
    assert calls == [("lint", ()), ("correctness", ("beside",)), ("problem copy", ("beside",)),
                     ("launch audit", ("beside",)), ("sanitizer", ("beside",)), ("counters", ("measuring",)),
                     ("timing", ("measuring",)), ("speed of light", ("measuring",)),
                     ("baseline medians", ("measuring",)), ("held-out", ("beside",)),
                     ("held-out timing", ("measuring",))]
    assert entered == ["beside", "beside", "beside", "measuring", "beside", "measuring"]


def test_a_grading_that_measures_nothing_never_asks_for_the_gpu_alone(monkeypatch):
    """Without the counter pass and the timing (a survey of the sanitizer, say) no stage measures, so the grading
    never waits for a neighbour's correctness to end."""
    from kernelbench.eval import grade

    calls: list[tuple[str, tuple[str, ...]]] = []

    class Refused:
        def __enter__(self):
            raise AssertionError("the measuring turn was asked for")

        def __exit__(self, *exc):
            return None

    _stub_stages(monkeypatch, _recording(calls, []))
    plan = SimpleNamespace(options=SimpleNamespace(timing=False, held_out=True, counters=False), cases=[],
                           shapes=[], heldout=[], device="cuda")
    assert grade.run_stages(plan, SimpleNamespace(), Refused(), None, None)
    assert [name for name, _ in calls] == ["lint", "correctness", "problem copy", "launch audit", "sanitizer",
                                           "counters", "held-out"]


def test_a_measurement_goes_between_a_slow_neighbour_s_stages(monkeypatch):
    """Two gradings on one GPU's turns: the first's check stage runs long; the second, checked meanwhile, measures
    as soon as that stage ends, before the first's launch audit, not after all of its side-by-side stages."""
    from kernelbench.eval import grade
    from kernelbench.harness.regrade import GpuTurns

    turns = GpuTurns()
    events: list[str] = []
    release_slow_check = threading.Event()

    def tagged(name, result=None):
        def run(plan, *args, **kwargs):
            if name == "correctness" and plan.name == "slow":
                release_slow_check.wait(5)
            events.append(f"{plan.name} {name}")
            return result
        return run

    _stub_stages(monkeypatch, tagged)

    def grading(name):
        plan = SimpleNamespace(name=name, options=SimpleNamespace(timing=True, held_out=True), cases=[],
                               shapes=[], heldout=[])
        grade.run_stages(plan, SimpleNamespace(), turns.measuring(lambda: events.append(f"{name} waits")), None,
                         turns.beside(lambda: None))

    slow = threading.Thread(target=grading, args=("slow",))
    slow.start()
    time.sleep(0.05)
    quick = threading.Thread(target=grading, args=("quick",))
    quick.start()
    deadline = time.monotonic() + 5
    while "quick waits" not in events and time.monotonic() < deadline:
        time.sleep(0.01)
    release_slow_check.set()
    slow.join(5)
    quick.join(5)
    assert events.index("quick timing") < events.index("slow launch audit"), events


def test_cells_are_graded_in_the_order_only_names_them():
    def job(run_id, problem):
        return SimpleNamespace(cell=SimpleNamespace(run_id=run_id), problem=problem)

    only = ["b_06", "02_kda", "a_01"]
    jobs = [job("a_01", "01_fp8"), job("b_06", "06_moe"), job("c_02", "02_kda"), job("d_03", "03_paged")]
    assert sorted(jobs, key=lambda j: regrade.named_at(j, only))[0].cell.run_id == "b_06"
    assert [regrade.named_at(j, only) for j in jobs] == [2, 0, 1, 3]  # a cell not named goes after the named ones
    assert {regrade.named_at(j, None) for j in jobs} == {0}  # no --only: the board's order stands


# ------------------------------------------------------------------- out of memory beside another grading

OUT_OF_MEMORY = ("timing failed on shape 0: OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB "
                 "(GPU 0; 79.11 GiB total; this process has 33.96 GiB memory in use)")


class MemoryHungryGradings:
    """`grade_cell` as the scheduler sees it (published unless `final` says otherwise, the note recorded in the
    provenance) over cells whose solutions need memory: a cell of `hungry` runs out of GPU memory whenever another
    grading is on its GPU while it runs, a cell of `too_big` runs out even alone, the rest pass. It keeps what each
    grading saw and what was published."""

    def __init__(self, hungry=(), too_big=(), outcome=Outcome.CHECK_FAILED):
        from kernelbench.eval.process import worker_env

        self.gpu_of = lambda: worker_env("cuda")["CUDA_VISIBLE_DEVICES"]
        self.hungry, self.too_big, self.outcome = set(hungry), set(too_big), outcome
        self.guard = threading.Lock()
        self.running: dict[str, set[str]] = {}
        self.crowded: set[int] = set()  # the gradings (by number) that had another on their GPU at some moment
        self.gradings: list[tuple[str, str, str]] = []  # run id, GPU, its note
        self.published: dict[str, RunResult] = {}

    def __call__(self, job, settings, runs_dir, exclusive, *, final=None, graded_again_alone=""):
        gpu = self.gpu_of()
        with self.guard:
            number = len(self.gradings)
            self.gradings.append((job.run_id, gpu, graded_again_alone))
            here = self.running.setdefault(gpu, set())
            here.add(number)
            if len(here) > 1:
                self.crowded |= here
        time.sleep(0.15)
        with self.guard:
            here.discard(number)
            crowded = number in self.crowded
        if job.run_id in self.too_big or (job.run_id in self.hungry and crowded):
            result = _result(job.run_id, self.outcome, ("1 of 12 checks failed", OUT_OF_MEMORY), graded_again_alone)
        else:
            result = _result(job.run_id, Outcome.PASS, (), graded_again_alone)
        if final is None or final(result):
            with self.guard:
                self.published[job.run_id] = result
        return result

    def alone(self, number: int) -> bool:
        return number not in self.crowded


def _grade(monkeypatch, gradings, cells, jobs, gpus="0", stop_after=None):
    monkeypatch.setattr(regrade, "grade_cell", gradings)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", gpus)
    report = regrade.RegradeReport(board="toy", total=len(cells))
    settings = SimpleNamespace(timeline=regrade.CellTimeline(), device="cuda")
    regrade.grade_cells(cells, settings, None, report, regrade.gpu_slots("cuda", None), jobs, stop_after, None)
    return report


@pytest.mark.parametrize("outcome", [Outcome.CHECK_FAILED, Outcome.BENCHMARK_FAILED])
def test_a_cell_out_of_memory_beside_another_grading_is_graded_again_alone_and_that_grading_kept(monkeypatch,
                                                                                                 outcome):
    """Its failure (a failed check, or a shape left untimed under a PASS) may be the neighbour's doing: it is not
    published; after the queue the cell is graded with nothing else on its GPU, and that grading is the one kept."""
    big, small = _cells(3)[0], _cells(3)[1:]
    gradings = MemoryHungryGradings(hungry={big.run_id}, outcome=outcome)
    report = _grade(monkeypatch, gradings, [big, *small], jobs=3)
    assert sorted(report.graded) == sorted(c.run_id for c in [big, *small])  # each once
    assert report.statuses == {c.run_id: "PASS" for c in [big, *small]} and not report.stopped
    assert report.remaining == 0
    bigs = [n for n, (run_id, _, _) in enumerate(gradings.gradings) if run_id == big.run_id]
    assert len(bigs) == 2 and not gradings.alone(bigs[0]) and gradings.alone(bigs[1])
    assert len(gradings.gradings) == 4  # the cells that passed beside it were graded once
    note = gradings.published[big.run_id].provenance.graded_again_alone
    assert note == gradings.gradings[bigs[1]][2]
    assert "ran out of memory while another grading shared the GPU" in note and "33.96 GiB" in note
    assert all(not gradings.published[c.run_id].provenance.graded_again_alone for c in small)


def test_out_of_memory_alone_is_the_cells_verdict(monkeypatch):
    too_big, other = _cells(2)
    gradings = MemoryHungryGradings(too_big={too_big.run_id})
    report = _grade(monkeypatch, gradings, [too_big, other], jobs=2)
    assert report.statuses == {too_big.run_id: "FAIL", other.run_id: "PASS"}
    kept = gradings.published[too_big.run_id]
    assert OUT_OF_MEMORY in kept.grading.reasons and kept.provenance.graded_again_alone
    assert [gpu for run_id, gpu, _ in gradings.gradings if run_id == too_big.run_id] == ["0", "0"]


def test_out_of_memory_with_the_gpu_to_itself_is_graded_once(monkeypatch):
    """--jobs 1 on two GPUs: no grading ever shared a GPU, so nothing is graded twice."""
    too_big, other = _cells(2)
    gradings = MemoryHungryGradings(too_big={too_big.run_id})
    report = _grade(monkeypatch, gradings, [too_big, other], jobs=1, gpus="0,1")
    assert report.statuses == {too_big.run_id: "FAIL", other.run_id: "PASS"} and len(gradings.gradings) == 2
    assert not gradings.published[too_big.run_id].provenance.graded_again_alone


def test_a_call_that_ends_before_the_second_grading_leaves_the_cell_to_the_next(monkeypatch):
    """Held back, the cell is not published: the call's end leaves it ungraded, and --resume grades it afresh."""
    big, other = _cells(2)
    gradings = MemoryHungryGradings(hungry={big.run_id})
    report = _grade(monkeypatch, gradings, [big, other], jobs=2, stop_after=0.05)
    assert report.stopped and report.graded == [other.run_id] and report.remaining == 1
    assert set(gradings.published) == {other.run_id} and len(gradings.gradings) == 2
