"""A guard that cannot load or run ends the grading as a harness error, never a pass: the whole grader is copied,
one guard module renamed, and an honest solution graded by the copy through the real `kernelbench grade`. The
renamed modules cover each place guards run: the grader's own process (the lint, loaded through the guard
surface), a candidate stage's arming (the namespace watch, before the solution is imported) and the judge's
comparison (the Kahan row-sum check, whose module the guard surface loads too)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kernelbench

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(kernelbench.__file__).resolve().parent

pytestmark = pytest.mark.slow


def grade_with_copy(tmp_path: Path, renamed: str, solution: Path, problem: Path) -> tuple[dict, str]:
    root = tmp_path / "grader"
    shutil.copytree(PACKAGE, root / "kernelbench", ignore=shutil.ignore_patterns("__pycache__"))
    module = root / renamed
    module.rename(module.with_name(module.stem + "_renamed.py"))
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "grade", str(solution), "--problem", str(problem),
                           "--device", "cpu", "--shapes", "smoke", "--json", "--held-out", "off"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("renamed, named", [
    ("kernelbench/eval/integrity/lint.py", "kernelbench.eval.integrity.lint"),
    ("kernelbench/eval/integrity/numerics.py", "kernelbench.eval.integrity.numerics"),
    ("kernelbench/eval/integrity/namespaces.py", "kernelbench.eval.integrity.namespaces"),
])
def test_a_renamed_guard_module_makes_the_grading_a_harness_error(tmp_path, renamed, named):
    solution, problem = REPO / "solutions" / "eager" / "04_kahan_softmax.py", REPO / "problems" / "04_kahan_softmax"
    report, stderr = grade_with_copy(tmp_path, renamed, solution, problem)
    grading = report["grading"]
    assert grading["outcome"] == "harness_error", (grading, stderr[-2000:])
    assert named in grading["reasons"][0] and "No module named" in grading["reasons"][0], grading["reasons"]
    assert "[grading aborted]" in report["check_log"]


def test_the_untouched_copy_grades_the_same_solution_pass(tmp_path):
    """The control: the copy itself grades (a renamed module is the only difference)."""
    root = tmp_path / "grader"
    shutil.copytree(PACKAGE, root / "kernelbench", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "grade",
                           str(REPO / "solutions" / "eager" / "04_kahan_softmax.py"), "--problem",
                           str(REPO / "problems" / "04_kahan_softmax"), "--device", "cpu", "--shapes", "smoke",
                           "--json", "--held-out", "off"], cwd=root, capture_output=True, text=True, timeout=600)
    report = json.loads(proc.stdout)
    assert report["grading"]["outcome"] == "pass", report["grading"]["reasons"]
