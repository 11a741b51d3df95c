"""End-to-end: the real `kernelbench grade` / `kernelbench problem check` commands on the toy problem (CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.eval.grade import grade_solution
from kernelbench.results.run import Outcome

pytestmark = pytest.mark.slow


def kernelbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernelbench", *args], capture_output=True, text=True, timeout=300)


def grade_json(solution: Path, problem: Path, *extra: str) -> tuple[int, dict]:
    proc = kernelbench("grade", str(solution), "--problem", str(problem), "--device", "cpu", "--shapes", "smoke",
                       "--json", *extra)
    return proc.returncode, json.loads(proc.stdout)


def timed_stress_draws(problem: Path) -> int:
    """The checked cases the timed rotation adds on top of the base, stress and property ones."""
    from kernelbench.eval.cases import build_cases, timed_stress_cases
    from kernelbench.problems.loader import load_problem_spec

    spec = load_problem_spec(problem)
    cases = build_cases(spec, spec.smoke_shapes, 0, "smoke")
    return sum(c not in cases for c in timed_stress_cases(spec, spec.smoke_shapes, 0, cases, "smoke"))


def test_honest_solution_passes_with_logs_and_raw_samples(toy_problem, toy_solutions, tmp_path):
    code, report = grade_json(toy_solutions / "honest.py", toy_problem, "--out", str(tmp_path))
    grading = report["grading"]
    assert code == 0 and grading["outcome"] == "pass" and grading["correct"] is True
    stages = report["stages"]
    assert {"check", "judge", "bench", "total", "judge.reference", "judge.compare"} <= set(stages)
    assert stages["total"] >= stages["bench"] > 0 and "[stage seconds]" in report["check_log"]
    # 6 base (2 shapes x 3 seeds), stress, property and one repeat per shape
    assert len(grading["checks"]) == 12 + timed_stress_draws(toy_problem) and all(c["passed"] for c in
                                                                               grading["checks"])
    assert {c["case"].split(":")[0] for c in grading["checks"]} == {"base", "stress", "property", "repeat"}
    assert len(grading["shapes"]) == 2 and all(len(s["samples_ms"]) == 3 for s in grading["shapes"])
    cpu = {"measured": False, "reason": "the grading ran on the CPU"}  # no GPU to read: said so, nothing made up
    assert grading["conditions"].items() >= cpu.items()
    assert all(s["conditions"].items() >= cpu.items() and s["conditions"]["sm_clock_mhz"] is None
               for s in grading["shapes"])
    assert report["environment"]["problem_hash"] and report["environment"]["torch"]
    assert {p.name for p in tmp_path.iterdir()} >= {"check.log", "benchmark.log", "grade.json"}
    assert "PASS shape 0" in (tmp_path / "check.log").read_text()
    assert "memo probe ok" in (tmp_path / "benchmark.log").read_text()


def test_wrong_solution_fails_with_the_worst_element(toy_problem, toy_solutions):
    code, report = grade_json(toy_solutions / "wrong_last_column.py", toy_problem)
    assert code == 1 and report["grading"]["outcome"] == "check_failed"
    assert "worst at index" in report["grading"]["reasons"][0]
    assert report["grading"]["shapes"] == []  # nothing is timed once a check fails


def test_printing_pass_and_exiting_zero_is_not_a_pass(toy_problem, toy_solutions):
    code, report = grade_json(toy_solutions / "exit_pass.py", toy_problem)
    assert code == 1 and report["grading"]["outcome"] in ("check_failed", "invalid")  # the lint may flag os._exit
    assert any("without a result" in reason for reason in report["grading"]["reasons"])
    assert "PASS" in report["check_log"]  # what it printed is kept for the log, and ignored


def test_stale_buffer_input_mutation_and_template_edit_are_caught(toy_problem, toy_solutions, tmp_path):
    """One grading, three cheats: an uninitialised output, a zeroed input, an edited check.py beside it (which the
    sandbox refuses where bubblewrap runs: the lint names the write, and the file is unchanged either way)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "check.py").write_text("print('the real check')\n")
    solution = workspace / "solution.py"
    solution.write_text((toy_solutions / "stale_and_mutate.py").read_text().replace(
        "    def forward(self, x):\n",
        f"    def forward(self, x):\n        try:\n            open({str(workspace / 'check.py')!r}, 'w').write('print(1)')\n"
        "        except OSError:\n            pass\n"))
    code, report = grade_json(solution, toy_problem)
    assert code == 1 and report["grading"]["outcome"] == "invalid"
    classes = {f["class"] for f in report["integrity"]}
    assert {3, 12} <= classes
    assert any("modified by the candidate" in c["message"] for c in report["grading"]["checks"])
    assert (workspace / "check.py").read_text() == "print('the real check')\n"


def test_hang_is_contained_by_the_stage_limit_given_on_the_command_line(toy_problem, toy_solutions):
    code, report = grade_json(toy_solutions / "hang.py", toy_problem, "--limit", "check=15")
    assert code == 1 and report["grading"]["outcome"] == "check_failed"
    assert "exceeded its limit of 15 s" in report["grading"]["reasons"][0]
    assert report["stages"]["check"] < 40


def test_deleting_grading_files_neither_hangs_nor_touches_the_source_folder(toy_problem, toy_solutions, tmp_path):
    """A candidate that deletes everything below its working folder and edits the source problem's reference:
    the judge publishes the inputs again and reports it, the grader's copy is reported, the source folder is
    left as the candidate made it (never written by the grader), and the grading ends well before any limit."""
    problem = tmp_path / toy_problem.name
    problem.mkdir()
    for f in toy_problem.iterdir():
        if f.is_file():
            (problem / f.name).write_bytes(f.read_bytes())
    solution = tmp_path / "ws" / "solution.py"
    solution.parent.mkdir()
    edit = (f"try:\n            open({str(problem / 'reference.py')!r}, 'a').write('# edited')\n"
            "        except OSError:\n            pass\n")
    solution.write_text((toy_solutions / "honest.py").read_text().replace(
        "    def forward(self, x):\n",
        "    def forward(self, x):\n        import pathlib\n        " + edit +
        "        [p.unlink() for p in pathlib.Path.cwd().rglob('*') if p.is_file()]\n"))
    report = grade_solution(solution, problem, device="cpu", shapes="smoke", lint=False,
                            limits={"check": 120.0, "bench": 120.0})
    checks = {(f.check, f.severity) for f in report.integrity}
    sandboxed = report.environment.isolation == "bwrap"  # then the source folder is read-only to the candidate
    if sandboxed:  # the grading's files are read-only to the candidate: its deleting call fails, nothing is lost
        assert report.grading.outcome is Outcome.CHECK_FAILED, report.grading.reasons
        assert "Read-only file system" in " ".join(report.grading.reasons), report.grading.reasons
        assert ("grading_files", "error") not in checks
    else:
        assert ("grading_files", "error") in checks and ("template_hash", "warning") in checks
        assert report.grading.outcome is Outcome.INVALID
    assert (problem / "reference.py").read_text().endswith("# edited") is not sandboxed
    assert report.grading.elapsed_s < 100


def test_problem_check_command(toy_problem):
    proc = kernelbench("problem", "check", str(toy_problem), "--device", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "reference passes its own check" in proc.stdout and "all zeros is rejected" in proc.stdout


def test_missing_solution_is_no_solution(toy_problem, tmp_path):
    report = grade_solution(tmp_path / "solution.py", toy_problem, device="cpu", shapes="smoke")
    assert report.grading.outcome is Outcome.NO_SOLUTION and not report.grading.has_solution


def test_a_candidate_that_saves_no_output_does_not_stall_the_judge(toy_problem, toy_solutions, tmp_path):
    """Raising (or returning a refused type) saves nothing; the judge must move on at once, not wait for the
    check stage's limit while the candidate waits for its next inputs."""
    solution = tmp_path / "solution.py"
    solution.write_text((toy_solutions / "honest.py").read_text().replace(
        "    def forward(self, x):\n", "    def forward(self, x):\n        raise ValueError('not today')\n"))
    report = grade_solution(solution, toy_problem, device="cpu", shapes="smoke", lint=False, timing=False)
    assert report.grading.outcome is Outcome.CHECK_FAILED
    assert all("not today" in c.message for c in report.grading.checks)
    assert report.stages["check"] < 60
