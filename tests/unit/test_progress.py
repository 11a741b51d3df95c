"""Progress of long commands: the grading's stages announced in order, shown on stderr (a bar on a terminal, one
line per step in a log), never on stdout."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from kernelbench.eval.grade import STAGES, run_stages
from kernelbench.eval.progress import StepProgress


def stub_stages(monkeypatch, correct: bool) -> None:
    from kernelbench.eval.stages import audits, correctness, heldout, heldout_timing, sanitizer, timing

    for module, names in ((audits, ("lint", "problem_copy", "launches", "counters", "speed_of_light")),
                          (timing, ("bench", "baseline_medians")), (heldout_timing, ("bench",))):
        for name in names:
            monkeypatch.setattr(module, name, lambda plan, state: None)
    monkeypatch.setattr(correctness, "check", lambda plan, state, announce=None: correct)
    monkeypatch.setattr(heldout, "check", lambda plan, state, correct: None)

    def sanitize(plan, state, correct, announce=None):  # announces itself where the checks passed, as the stage does
        if correct and announce is not None:
            announce("sanitizer", "memcheck and racecheck")
        return False
    monkeypatch.setattr(sanitizer, "check", sanitize)


PLAN = SimpleNamespace(options=SimpleNamespace(timing=True, held_out=True), cases=[1, 2, 3], shapes=[1, 2],
                       heldout=[1, 2, 3, 4])


def test_run_stages_announces_every_stage_in_order_with_its_work(monkeypatch):
    stub_stages(monkeypatch, correct=True)
    announced = []
    assert run_stages(PLAN, None, stage=lambda name, detail="": announced.append((name, detail)))
    assert [name for name, _ in announced] == list(STAGES)
    assert dict(announced)["correctness"] == "3 cases" and dict(announced)["timing"] == "2 shapes"
    assert dict(announced)["held-out"] == "4 cases"
    announced.clear()  # turned off by the grader's caller, the stage says so rather than "0 cases"
    off = SimpleNamespace(**{**vars(PLAN), "options": SimpleNamespace(timing=True, held_out=False), "heldout": []})
    run_stages(off, None, stage=lambda name, detail="": announced.append((name, detail)))
    assert dict(announced)["held-out"] == "turned off"


def test_a_failed_check_ends_the_stages_after_the_launch_audit(monkeypatch):
    stub_stages(monkeypatch, correct=False)
    announced = []
    assert not run_stages(PLAN, None, stage=lambda name, detail="": announced.append(name))
    assert announced == ["lint", "correctness", "problem copy", "launch audit"]


def test_a_log_gets_one_line_per_step(capsys):
    log = io.StringIO()
    with StepProgress("grading x", total=3, console=Console(file=log, force_terminal=False)) as progress:
        progress.step("lint")
        progress.step("correctness", "12 cases")
        progress.step("timing")
    lines = log.getvalue().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ["grading x 1/3: lint", "grading x 2/3: correctness (12 cases)",
                                                          "grading x 3/3: timing"]
    assert "\x1b" not in log.getvalue() and capsys.readouterr().out == ""


def test_a_terminal_gets_a_bar_with_the_step_and_an_estimate(capsys):
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    with StepProgress("baselines", total=2, estimate=True, console=console) as progress:
        progress.step("01_fp8_gemm")
        progress.note("01_fp8_gemm: done")
    shown = screen.getvalue()
    assert "baselines" in shown and "01_fp8_gemm" in shown and "0/2" in shown and "-:--:--" in shown
    assert capsys.readouterr().out == ""


def test_a_step_named_again_says_how_far_it_has_got_without_counting_a_new_step():
    log = io.StringIO()
    with StepProgress("grading x", total=3, console=Console(file=log, force_terminal=False)) as progress:
        progress.step("correctness", "12 cases")
        progress.step("correctness", "case 4 of 12 judged")
        progress.step("timing")
    lines = [line.split("] ", 1)[1] for line in log.getvalue().splitlines()]
    assert lines == ["grading x 1/3: correctness (12 cases)", "grading x 1/3: correctness (case 4 of 12 judged)",
                     "grading x 2/3: timing"]


def test_the_judges_count_of_settled_cases_is_announced_once_per_change(tmp_path):
    from kernelbench.eval.protocol import PROGRESS_FILE
    from kernelbench.eval.stages.correctness import cases_judged

    announced = []
    poll = cases_judged(tmp_path, lambda name, detail: announced.append((name, detail)))
    poll()  # nothing written yet: nothing shown
    (tmp_path / PROGRESS_FILE).write_text("3 15\n")
    poll()
    poll()
    (tmp_path / PROGRESS_FILE).write_text("not a count")
    poll()  # display only: a file that does not parse is not shown, and never raises
    (tmp_path / PROGRESS_FILE).write_text("4 15\n")
    poll()
    assert announced == [("correctness", "case 3 of 15 judged"), ("correctness", "case 4 of 15 judged")]
