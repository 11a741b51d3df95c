"""Agents on another benchmark's deck: `kernelbench run --problem` on a problem laid out as kernelbench.com lays
its problems out (their check.py importing their harness package two folders up) gives the agent their workspace as
they lay it out, their prompt, their scripts, their harness where the scripts find it, inside the sandbox, and
grades what it leaves with every guard; the run appears on the site under that deck's problem page. A layout that
ships no workspace for agents is refused with the reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.harness.agents import get_adapter
from kernelbench.harness.workspace import copy_workspace, prepare_workspace
from kernelbench.problems.problem import open_problem
from kernelbench.transcripts.loader import load
from tests.support.foreign_tree import lay_out_their_tree

REPO = Path(__file__).resolve().parents[2]
CLIS_BIN = REPO / "clis" / "node_modules" / ".bin"
SOLUTION = REPO / "tests" / "foreign" / "solutions" / "kbh_gemm_honest.py"
PROBLEM = "01_toy_scaled_gemm"


@pytest.fixture
def their_problem(tmp_path: Path) -> Path:
    return lay_out_their_tree(tmp_path / "hard") / PROBLEM


def test_their_workspace_is_laid_out_as_theirs_with_every_file_a_template(their_problem: Path, tmp_path: Path):
    ws = prepare_workspace(open_problem(their_problem), tmp_path / "ws", tmp_path / "pristine", device="cpu", shapes="smoke")
    assert ws.top == tmp_path / "ws" and ws.root == ws.top / "problems-toy" / PROBLEM
    assert sorted(p.name for p in ws.root.iterdir()) == ["PROMPT.txt", "benchmark.py", "check.py", "problem.yaml",
                                                          "reference.py", "shapes.py"]
    assert (ws.top / "src" / "eval" / "verdict.py").is_file()  # where their check.py imports it from
    assert not (ws.root / "kb_eval").exists() and "PASS" in ws.prompt  # their scripts and prompt, not ours
    assert "src/eval/verdict.py" in ws.template_names() and f"problems-toy/{PROBLEM}/check.py" in ws.template_names()
    # editing their harness is editing the checker: a template change, with its diff
    (ws.top / "src" / "eval" / "verdict.py").write_text("def close(a, b):\n    return True\n")
    (ws.root / "solution.py").write_text("import torch\n")
    [change] = ws.template_changes()
    assert change.path == "src/eval/verdict.py" and "return True" in change.diff
    kept = tmp_path / "kept"
    assert copy_workspace(ws, kept) == []
    assert (kept / "problems-toy" / PROBLEM / "solution.py").is_file() and (kept / "src/eval/verdict.py").is_file()
    assert not (kept / "problems-toy" / PROBLEM / "reference.py").exists()  # unchanged templates stay out


def test_a_layout_without_a_workspace_for_agents_is_refused_with_the_reason(tmp_path: Path):
    stanford = REPO / "tests" / "foreign" / "decks" / "stanford-toy" / "2_Toy_Softmax.py"
    with pytest.raises(KernelBenchError, match="ships no workspace of its own for agents"):
        prepare_workspace(open_problem(stanford), tmp_path / "ws", tmp_path / "pristine", device="cpu", shapes="smoke")
    bare = tmp_path / "problems-toy" / PROBLEM  # their layout, but no harness beside the deck
    shutil.copytree(REPO / "tests" / "foreign" / "decks" / "kbh-toy" / PROBLEM, bare)
    with pytest.raises(KernelBenchError, match="kernelbench.com's with their harness package"):
        prepare_workspace(open_problem(bare), tmp_path / "ws2", tmp_path / "pristine2", device="cpu", shapes="smoke")


@pytest.mark.slow
def test_a_real_cli_runs_on_their_problem_with_their_checker_and_is_graded(sandbox_ok, pipeline, their_problem,
                                                                           tmp_path):
    """Claude Code against the stand-in, in the sandbox: it reads their prompt, writes solution.py, runs their
    check.py (which imports their harness from the workspace's top), and the run is graded and shown."""
    if not (CLIS_BIN / get_adapter("claude").executable).exists():
        pytest.skip("claude is not installed in clis/node_modules (npm install --prefix clis)")
    policy = tmp_path / "theirs.yaml"
    policy.write_text(
        "name: theirs\ndescription: read their prompt, write an honest solution, run their check.py\nsteps:\n"
        "  - say: \"Reading the task.\"\n    read: PROMPT.txt\n"
        f"  - say: \"Writing the solution.\"\n    write: {{path: solution.py, from: {SOLUTION}}}\n"
        "  - say: \"Running their checker.\"\n    run: python check.py\n"
        "  - finish: \"check.py said: {last_output}\"\n")
    env = {**os.environ, "PATH": f"{CLIS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    runs = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "run", "--agent", "claude:stand-in", "--stand-in",
                           str(policy), "--problem", str(their_problem), "--device", "cpu", "--shapes", "smoke",
                           "--budget", "180", "--runs", str(runs), "--held-out", "off"],
                          env=env, check=False, capture_output=True, text=True, timeout=480)
    [run_dir] = [p for p in runs.iterdir() if not p.name.startswith(".")]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["grading"]["outcome"] == "pass", (result["grading"], proc.stderr[-2000:])
    assert result["problem"] == PROBLEM and result["deck"].startswith("kbh-") and result["session"]["sandboxed"]
    assert (run_dir / "workspace" / "problems-toy" / PROBLEM / "solution.py").is_file()
    parsed = load(run_dir / result["session"]["transcript"])  # the CLI's own transcript, as the viewer reads it
    assert parsed.final_message == "check.py said: PASS"  # their check.py ran, with their harness, and passed
    data = tmp_path / "data"
    (data / "annotations").mkdir(parents=True)
    shutil.copytree(runs, data / "runs")
    site = subprocess.run([sys.executable, str(REPO / "build.py"), "--data", str(data), "--out", str(tmp_path / "site"),
                           "--quiet"], check=False, capture_output=True, text=True, timeout=300)
    assert site.returncode == 0, site.stderr
    page = tmp_path / "site" / "problems" / result["deck"] / f"{PROBLEM}.html"
    assert page.is_file() and run_dir.name in page.read_text()


def test_a_run_on_a_layout_without_a_workspace_is_refused_before_it_starts(tmp_path: Path):
    from kernelbench.harness.agentspec import AgentSpec
    from kernelbench.harness.runner import RunRequest, execute_run

    stanford = REPO / "tests" / "foreign" / "decks" / "stanford-toy" / "2_Toy_Softmax.py"
    request = RunRequest(agent=AgentSpec.parse("scripted:giveup"), problem=open_problem(stanford),
                         runs_dir=tmp_path / "runs", device="cpu", shapes="smoke", sandboxed=False)
    with pytest.raises(KernelBenchError, match="ships no workspace of its own for agents"):
        execute_run(request)
    assert not (tmp_path / "runs").exists()
