"""The agent's workspace copies: self-contained (no kernelbench import), the grader's own comparison code."""

import shutil
import subprocess
import sys

import pytest

from kernelbench.eval.agent_files import write_agent_files


@pytest.mark.slow
def test_workspace_check_runs_without_the_package(toy_problem, toy_solutions, tmp_path):
    written = write_agent_files(toy_problem, tmp_path)
    assert {p.name for p in written} >= {"check.py", "benchmark.py", "problem.json", "compare.py", "timing.py",
                                        "workspace.py"}
    sources = "".join(p.read_text() for p in (tmp_path / "kb_eval").iterdir() if p.suffix == ".py")
    assert "import kernelbench" not in sources and "from kernelbench" not in sources
    shutil.copy(toy_problem / "reference.py", tmp_path / "reference.py")
    shutil.copy(toy_solutions / "wrong_last_column.py", tmp_path / "solution.py")
    env = {"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    wrong = subprocess.run([sys.executable, "-I", "check.py", "--smoke"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120, env=env)
    assert wrong.returncode == 1 and "worst at index" in wrong.stdout
    shutil.copy(toy_solutions / "honest.py", tmp_path / "solution.py")
    honest = subprocess.run([sys.executable, "-I", "check.py", "--smoke"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, env=env)
    assert honest.returncode == 0, honest.stdout + honest.stderr
