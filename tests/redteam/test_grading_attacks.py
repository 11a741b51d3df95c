"""Attacks on the grading itself, each a solution graded end to end as the grader grades (as root where the tests
run as root): the forged reply and the forged kept calls of the issue, the judge's reply path squatted, secrets
printed into the published log, the graded copy rewritten, the sandbox's init stopped, and floods of /dev/shm,
processes and memory. Each must end in the candidate's own verdict, never in its effect, a hang or a harness
error. The runtime defences are what is tested: the static lint, which would flag most of these files by
itself, is off."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelbench import confinement
from kernelbench.base.models import Outcome
from kernelbench.eval.grade import grade_solution
from kernelbench.eval.isolation import isolation_for

HERE = Path(__file__).resolve().parent
SOLUTIONS = HERE / "solutions"
TOY = HERE.parent / "eval" / "problems" / "00_toy_gemm"
# each attack is a grading end to end (5-60 s apiece on the CPU)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not isolation_for("cpu").sandboxed,
                                                   reason=f"no sandbox here: {isolation_for('cpu').note}")]


def grade(name: str, **limits):
    return grade_solution(solution_file(name), TOY, device="cpu", shapes="smoke", lint=False,
                          limits={"check": 120.0, "bench": 120.0, **limits})


# variants of lazy_bench_forged_kept, by its MODE
FORGED_KEPT_MODES = {"lazy_bench_own_seeds": "own", "lazy_bench_collides_kept": "collide"}


def solution_file(name: str) -> Path:
    """An attack's file; the names of FORGED_KEPT_MODES are lazy_bench_forged_kept in another MODE."""
    if name not in FORGED_KEPT_MODES:
        return SOLUTIONS / f"{name}.py"
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="kb-redteam-")) / f"{name}.py"
    text = (SOLUTIONS / "lazy_bench_forged_kept.py").read_text()
    path.write_text(text.replace('MODE = "nonce"', f'MODE = "{FORGED_KEPT_MODES[name]}"'))
    return path


def checks_of(report) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for f in report.integrity:
        if f.severity == "error":
            found.setdefault(f.check, []).append(f.message + " | " + f.evidence)
    return found


def test_a_reply_forged_inside_the_bench_process_is_caught_by_the_grader_s_clock(tmp_path):
    forged = grade("forged_reply")
    found = checks_of(forged)
    assert forged.grading.outcome is Outcome.INVALID, (forged.grading.reasons, found)
    assert "external_clock" in found, found
    assert "below what the grader's own clock allows" in found["external_clock"][0]
    # a suspicion is settled by a second timing: the lie, told again, convicts with both timings' evidence
    assert any(m.startswith(f"shape {i}: timed again") for m in found["external_clock"] for i in (0, 1)), found


def test_an_honest_kernel_timed_while_the_machine_was_busy_is_timed_again_not_convicted(monkeypatch):
    """A host busy with other work while the bench stage ran lengthens every span the grader's clock sees (here the
    grader's own pacer answers late in the first bench stage only, as a loaded host would): the honest toy kernel's
    median then falls below the clock's floor, and the second timing clears it."""
    import time

    from kernelbench.eval import pacing

    pacers: list = []
    init, answer = pacing.Pacer.__init__, pacing.Pacer.answer

    def counted(self, *args, **kwargs):
        init(self, *args, **kwargs)
        pacers.append(self)

    def late(self, kind, shape, value):
        if self is pacers[0] and kind == pacing.DONE:
            time.sleep(0.3)
        return answer(self, kind, shape, value)

    monkeypatch.setattr(pacing.Pacer, "__init__", counted)
    monkeypatch.setattr(pacing.Pacer, "answer", late)
    report = grade_solution(HERE.parent / "eval" / "solutions" / "honest.py", TOY, device="cpu", shapes="smoke",
                            lint=False)
    settled = [f for f in report.integrity if f.check == "external_clock"]
    assert report.grading.outcome is Outcome.PASS, (report.grading.reasons, checks_of(report))
    assert settled and all(f.severity == "warning" and "timed again it did not" in f.message for f in settled)
    first_spans = [float(re.search(r"took ([0-9.]+) ms", f.evidence).group(1)) for f in settled]
    assert all(span >= 300.0 for span in first_spans), first_spans  # the first timing's lengthened spans, shown
    assert all(s.external_span_ms < 300.0 for s in report.grading.shapes)  # published: the second timing


def test_a_lie_told_once_gains_nothing_the_second_timing_is_published():
    report = grade("forged_once")
    found = checks_of(report)
    assert report.grading.outcome is Outcome.PASS, (report.grading.reasons, found)
    settled = [f for f in report.integrity if f.check == "external_clock" and f.severity == "warning"]
    assert len(settled) == 1 and settled[0].message.startswith("shape 0: the first timing fell below"), settled
    shape0 = next(s for s in report.grading.shapes if s.index == 0)
    assert shape0.median_ms >= 90.0, shape0  # the honest 100 ms, not the forged 0.1 ms


def test_the_same_slow_solution_unforged_passes(tmp_path):
    honest = tmp_path / "slow_honest.py"
    text = (SOLUTIONS / "forged_reply.py").read_text()
    honest.write_text(text.replace("pathlib.Path.write_bytes = _forging_write\n", ""))
    report = grade_solution(honest, TOY, device="cpu", shapes="smoke", lint=False)
    assert report.grading.outcome is Outcome.PASS, (report.grading.reasons, checks_of(report))
    # each call sleeps 100 ms; the grader stamps a nonce once its send has returned (eval.pacing), so a pacer thread
    # descheduled on a loaded machine stamps late and the span comes out shorter, never longer, by that delay
    assert all(s.paced_calls and s.external_span_ms >= 90.0 for s in report.grading.shapes), [
        (s.index, s.paced_calls, s.external_span_ms, s.median_ms) for s in report.grading.shapes]


def test_kept_outputs_computed_after_the_fact_break_their_commitment():
    report = grade("lazy_bench_forged_kept")
    found = checks_of(report)
    assert report.grading.outcome is Outcome.INVALID, (report.grading.reasons, found)
    assert any("committed to" in m for m in found.get("external_clock", [])), found


def test_kept_outputs_nudged_to_hit_their_commitment_still_break_it():
    """Told a call is kept, the candidate computes the right answer and moves eight of its elements by a few ulps
    each until a weighted sum of its bits equals what its zeros committed to (a lattice reduction: a linear
    fingerprint is forged this way in seconds). The commitment is not linear, so the kept output still breaks it."""
    report = grade("lazy_bench_collides_kept")
    found = checks_of(report)
    assert report.grading.outcome is Outcome.INVALID, (report.grading.reasons, found)
    assert any("committed to" in m for m in found.get("external_clock", [])), found


def test_kept_calls_on_seeds_of_the_candidate_s_choosing_are_refused():
    report = grade("lazy_bench_own_seeds")
    found = checks_of(report)
    assert report.grading.outcome is Outcome.INVALID, (report.grading.reasons, found)
    assert any("inputs the grader drew" in m for m in found.get("external_clock", [])), found


def test_squatting_the_judge_s_reply_path_leaves_the_candidate_s_own_failure():
    report = grade("squat_judge")
    assert report.grading.outcome is Outcome.CHECK_FAILED, report.grading.reasons


def test_no_secret_of_the_grader_s_environment_reaches_the_published_log(monkeypatch):
    secrets = {"ANTHROPIC_API_KEY": "sk-ant-redteam-0001", "OPENAI_API_KEY": "sk-redteam-0002",
               "GITHUB_TOKEN": "ghp_redteam_0003", "KERNELBENCH_SECRET_SEED": "987654321"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    report = grade("print_environment")
    log = report.check_log + report.benchmark_log
    assert "ENVIRONMENT" in log  # the candidate did print what it saw
    assert not [name for name, value in secrets.items() if value in log]
    assert report.grading.outcome is Outcome.PASS, report.grading.reasons


def test_the_graded_copy_cannot_be_rewritten_between_stages():
    report = grade("rewrite_graded_copy")
    assert report.grading.outcome is Outcome.PASS, (report.grading.reasons, checks_of(report))
    assert "launch_audit" not in checks_of(report)  # the bench stage ran the linted code, not addmm


def test_stopping_the_sandbox_s_init_does_not_hang_the_grading():
    report = grade("ptrace_init")
    assert report.grading.outcome is Outcome.PASS, report.grading.reasons
    assert report.grading.elapsed_s < 90


def test_a_shm_flood_is_stopped_at_the_sandbox_s_bound(monkeypatch):
    monkeypatch.setenv(confinement.DISK_ENV, "0.25")
    report = grade("shm_flood")
    assert report.grading.outcome is Outcome.CHECK_FAILED, report.grading.reasons
    assert "over the sandbox's bound" in " ".join(report.grading.reasons), report.grading.reasons
    assert report.grading.elapsed_s < 90


def test_a_fork_bomb_ends_with_its_stage(monkeypatch):
    monkeypatch.setenv(confinement.PROCESSES_ENV, "64")
    report = grade("fork_bomb")
    assert report.grading.outcome is not Outcome.HARNESS_ERROR
    assert report.grading.elapsed_s < 150


def test_a_memory_flood_fails_the_candidate_alone(monkeypatch):
    # 1.5 GiB holds the check stage (torch imported and a toy call: about 0.65 GiB of address space) and leaves the
    # flood little to write before it is refused: at 3 GiB each of the 17 checked calls zero-filled over 2 GiB, and
    # on a loaded 2-core machine the stage ran into its 120 s limit before the MemoryError (ci_time.md)
    monkeypatch.setenv(confinement.MEMORY_ENV, "1.5")
    report = grade("memory_flood")
    assert report.grading.outcome is Outcome.CHECK_FAILED, report.grading.reasons
    assert "MemoryError" in " ".join(report.grading.reasons), report.grading.reasons


def test_without_a_sandbox_a_rewritten_copy_is_reported_and_put_back(monkeypatch):
    """Where no sandbox runs (KERNELBENCH_ISOLATION=none), the bytes each stage imports are still the lint's."""
    monkeypatch.setenv("KERNELBENCH_ISOLATION", "none")
    report = grade("rewrite_graded_copy")
    found = checks_of(report)
    assert report.grading.outcome is Outcome.INVALID, report.grading.reasons
    assert any("rewritten during grading" in m for m in found.get("grading_files", [])), found
    assert "launch_audit" not in found  # the bench stage imported the bytes put back, not the library GEMM
