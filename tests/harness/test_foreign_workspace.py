"""Agents on another benchmark's deck: `kernelbench run --problem` on a problem laid out as kernelbench.com lays
its problems out (their check.py importing their harness package two folders up) gives the agent their workspace as
they lay it out, their prompt, their scripts, their harness where the scripts find it, inside the sandbox, and
grades what it leaves with every guard; the run appears on the site under that deck's problem page. A layout that
ships no workspace of its own and that ours cannot serve is refused with the reason; Stanford KernelBench's single
file gets ours."""

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
LINEAR_RELU = REPO / "tests" / "foreign" / "decks" / "stanford-toy" / "1_Toy_Linear_ReLU.py"


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
    bare = tmp_path / "problems-toy" / PROBLEM  # their layout, but no harness beside the deck
    shutil.copytree(REPO / "tests" / "foreign" / "decks" / "kbh-toy" / PROBLEM, bare)
    with pytest.raises(KernelBenchError, match="kernelbench.com's with their harness package"):
        prepare_workspace(open_problem(bare), tmp_path / "ws2", tmp_path / "pristine2", device="cpu", shapes="smoke")


def _script(workspace: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args, "--device", "cpu"], cwd=workspace, capture_output=True, text=True,
                          timeout=300, check=False)


def test_a_single_file_problem_gets_our_workspace_with_its_file_as_the_reference(tmp_path: Path):
    """Stanford KernelBench ships no scripts for agents: our workspace serves it, its file as reference.py, a prompt
    written from the problem, and our check.py and benchmark.py following its conventions (ModelNew, positional
    construction, weights by seed, inputs drawn after a seed)."""
    ws = prepare_workspace(open_problem(LINEAR_RELU), tmp_path / "ws", tmp_path / "pristine", device="cpu",
                           shapes="smoke")
    assert ws.top is None and sorted(p.name for p in ws.root.iterdir()) == [
        "PROMPT.txt", "benchmark.py", "check.py", "kb_eval", "problem.json", "reference.py", "shapes.json"]
    assert (ws.root / "reference.py").read_bytes() == LINEAR_RELU.read_bytes()
    assert "class ModelNew" in ws.prompt and "batch_size = 8" in ws.prompt and "{gpu_name}" not in ws.prompt
    config = json.loads((ws.root / "problem.json").read_text())
    assert config["reference"] == "seeded-module" and config["solution_classes"] == ["ModelNew", "Model"]
    for name in ("stanford_linear_relu_same_names.py", "stanford_linear_relu_own_names.py"):
        shutil.copyfile(REPO / "tests" / "foreign" / "solutions" / name, ws.root / "solution.py")
        checked = _script(ws.root, "check.py")
        assert checked.returncode == 0 and checked.stdout.rstrip().endswith("PASS"), (name, checked.stderr)
    wrong = ws.root / "solution.py"
    wrong.write_text(wrong.read_text().replace("torch.clamp_min(y, 0.0)", "y"))  # the ReLU left out
    failed = _script(ws.root, "check.py")
    assert failed.returncode == 1 and "FAIL" in failed.stdout, failed.stderr
    shutil.copyfile(REPO / "tests" / "foreign" / "solutions" / "stanford_linear_relu_own_names.py", wrong)
    timed = _script(ws.root, "benchmark.py")
    assert timed.returncode == 0 and "solution :" in timed.stdout and "TFLOP/s" not in timed.stdout, timed.stderr
    assert ws.template_changes() == []


def test_our_problem_s_workspace_is_unchanged_by_the_conventions(tmp_path: Path):
    kahan = open_problem(REPO / "problems" / "04_kahan_softmax")
    ws = prepare_workspace(kahan, tmp_path / "ws", tmp_path / "pristine", device="cpu", shapes="smoke")
    config = json.loads((ws.root / "problem.json").read_text())
    assert config["reference"] == "ours" and config["solution_classes"] == ["Model"] and not config["weights_by_seed"]
    assert ws.prompt.startswith(kahan.prompt[:40])


@pytest.mark.slow
def test_a_real_cli_runs_on_their_problem_with_their_checker_and_is_graded(sandbox_ok, pipeline, their_problem,
                                                                           tmp_path):
    """Claude Code against the stand-in, in the sandbox: it reads their prompt, writes solution.py, runs their
    check.py (which imports their harness from the workspace's top), and the run is graded and shown."""
    runs = tmp_path / "runs"
    run_dir, result, stderr = run_the_stand_in(their_problem, SOLUTION, "their checker", runs, tmp_path)
    assert result["grading"]["outcome"] == "pass", (result["grading"], stderr[-2000:])
    assert result["problem"] == PROBLEM and result["deck"].startswith("kbh-") and result["session"]["sandboxed"]
    assert (run_dir / "workspace" / "problems-toy" / PROBLEM / "solution.py").is_file()
    parsed = load(run_dir / result["session"]["transcript"])  # the CLI's own transcript, as the viewer reads it
    assert parsed.final_message == "check.py said: PASS"  # their check.py ran, with their harness, and passed
    run_on_the_site(runs, run_dir, tmp_path)


@pytest.mark.slow
def test_a_real_cli_runs_on_a_single_file_problem_in_our_workspace_and_is_graded(sandbox_ok, pipeline, tmp_path):
    """Claude Code against the stand-in, in the sandbox, on a Stanford KernelBench file: it reads the prompt written
    for it, writes a ModelNew, runs our check.py, and the run is graded by the grader and filed under the problem's
    name in that deck."""
    solution = REPO / "tests" / "foreign" / "solutions" / "stanford_linear_relu_own_names.py"
    runs = tmp_path / "runs"
    run_dir, result, stderr = run_the_stand_in(LINEAR_RELU, solution, "the checker", runs, tmp_path)
    assert result["grading"]["outcome"] == "pass", (result["grading"], stderr[-2000:])
    assert result["problem"] == "1_Toy_Linear_ReLU" and result["deck"] == "stanford-toy"
    assert result["session"]["sandboxed"] and (run_dir / "workspace" / "solution.py").is_file()
    parsed = load(run_dir / result["session"]["transcript"])
    assert parsed.final_message.startswith("check.py said: ") and parsed.final_message.endswith("PASS")
    assert run_on_the_site(runs, run_dir, tmp_path).parent.name == "stanford-toy"


def run_the_stand_in(problem: Path, solution: Path, checker: str, runs: Path, tmp_path: Path
                     ) -> tuple[Path, dict, str]:
    """`kernelbench run` of Claude Code against the stand-in on `problem`: it reads the prompt, writes `solution`,
    runs check.py and finishes with what it printed. The run's folder, its result.json and the command's stderr."""
    if not (CLIS_BIN / get_adapter("claude").executable).exists():
        pytest.skip("claude is not installed in clis/node_modules (npm install --prefix clis)")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "name: check\ndescription: read the prompt, write the solution, run check.py\nsteps:\n"
        "  - say: \"Reading the task.\"\n    read: PROMPT.txt\n"
        f"  - say: \"Writing the solution.\"\n    write: {{path: solution.py, from: {solution}}}\n"
        f"  - say: \"Running {checker}.\"\n    run: python check.py\n"
        "  - finish: \"check.py said: {last_output}\"\n")
    env = {**os.environ, "PATH": f"{CLIS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "run", "--agent", "claude:stand-in", "--stand-in",
                           str(policy), "--problem", str(problem), "--device", "cpu", "--shapes", "smoke",
                           "--budget", "180", "--runs", str(runs), "--held-out", "off"],
                          env=env, check=False, capture_output=True, text=True, timeout=480)
    [run_dir] = [p for p in runs.iterdir() if not p.name.startswith(".")]
    return run_dir, json.loads((run_dir / "result.json").read_text()), proc.stderr


def run_on_the_site(runs: Path, run_dir: Path, tmp_path: Path) -> Path:
    """The site built from these runs alone, and the problem page that lists the run (its deck's)."""
    result = json.loads((run_dir / "result.json").read_text())
    data = tmp_path / "data"
    (data / "annotations").mkdir(parents=True)
    shutil.copytree(runs, data / "runs")
    site = subprocess.run([sys.executable, str(REPO / "build.py"), "--data", str(data), "--out", str(tmp_path / "site"),
                           "--quiet"], check=False, capture_output=True, text=True, timeout=300)
    assert site.returncode == 0, site.stderr
    page = tmp_path / "site" / "problems" / result["deck"] / f"{result['problem']}.html"
    assert page.is_file() and run_dir.name in page.read_text()
    return page


def test_a_run_on_a_layout_without_a_workspace_is_refused_before_it_starts(tmp_path: Path):
    from kernelbench.harness.agentspec import AgentSpec
    from kernelbench.harness.runner import RunRequest, execute_run

    bare = tmp_path / "problems-toy" / PROBLEM  # their layout, but no harness beside the deck
    shutil.copytree(REPO / "tests" / "foreign" / "decks" / "kbh-toy" / PROBLEM, bare)
    request = RunRequest(agent=AgentSpec.parse("scripted:giveup"), problem=open_problem(bare),
                         runs_dir=tmp_path / "runs", device="cpu", shapes="smoke", sandboxed=False)
    with pytest.raises(KernelBenchError, match="ships no workspace of its own for agents"):
        execute_run(request)
    assert not (tmp_path / "runs").exists()
