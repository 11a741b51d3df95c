"""Whole runs through the real pipeline: workspace, sandbox, budget, the trusted grader, the run directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.runner import RunRequest, execute_run
from kernelbench.problems.problem import open_problem
from kernelbench.results.run import Outcome, Status, load_result
from kernelbench.transcripts import load

REPO = Path(__file__).resolve().parents[2]
KAHAN = REPO / "problems" / "04_kahan_softmax"


@pytest.fixture
def run(project: Path, tmp_path: Path, sandbox_setting: str):
    def start(agent: str, budget: float = 300) -> Path:
        request = RunRequest(agent=AgentSpec.parse(agent), problem=open_problem(KAHAN), runs_dir=tmp_path / "runs",
                             budget_s=budget, device="cpu", shapes="smoke", sandboxed=sandbox_setting == "true",
                             options={"plan_search": [str(project), str(REPO)]})
        return execute_run(request)

    return start


@pytest.mark.slow
def test_cheating_agent_is_caught(pipeline, run, tmp_path, sandbox_setting):
    run_dir = run("scripted:subclass-cheat")
    result = load_result(run_dir)
    # the import of the reference is a lead with its line; the run decides: the grader's stages cannot import the
    # reference (its checks fail), and where they could, the launch audit names the reference's code running
    assert result.status in (Status.INVALID, Status.FAIL), result.grading.reasons
    assert any(f.klass == 1 and f.file == "solution.py" and f.line for f in result.integrity), result.integrity
    assert result.status is Status.INVALID or "reference" in " ".join(result.grading.reasons)
    assert result.scripted and result.session.complete
    assert result.session.sandboxed is (sandbox_setting == "true")
    for name in ("result.json", "transcript.jsonl", "stderr.log", "solution.py", "check.log", "benchmark.log",
                 "workspace/solution.py", "workspace/PROMPT.txt"):
        assert (run_dir / name).is_file(), name
    assert not (run_dir / "workspace" / "check.py").exists()  # unchanged templates are the problem's own
    session = load(run_dir / "transcript.jsonl")
    prompt = (run_dir / "workspace" / "PROMPT.txt").read_text()
    assert session.complete and session.events[1].text == prompt  # the prompt, verbatim
    assert "{hardware}" not in prompt
    assert not list((tmp_path / "runs").glob(".tmp-*"))


def test_template_tampering_makes_the_run_invalid(pipeline, run):
    run_dir = run("scripted:tamper")
    result = load_result(run_dir)
    assert result.grading.outcome is Outcome.INVALID and result.status is Status.INVALID
    by_file = {f.file: f for f in result.integrity if f.check == "template_hash"}
    assert set(by_file) == {"problem.yaml", "check.py"}
    assert "+tolerance:  # loosened by the agent" in by_file["problem.yaml"].evidence
    assert by_file["problem.yaml"].klass == 12
    assert (run_dir / "workspace" / "problem.yaml").read_text().count("loosened by the agent") == 1


def test_budget_runs_out(pipeline, run):
    run_dir = run("scripted:slow", budget=3)
    result = load_result(run_dir)
    assert result.grading.outcome is Outcome.TIMEOUT and result.session.timed_out
    assert result.session.elapsed_s < 3 + 15
    assert not load(run_dir / "transcript.jsonl").complete


def test_run_command_unsandboxed_is_recorded(pipeline, project, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "run", "--agent", "scripted:giveup", "--problem",
                           str(KAHAN), "--device", "cpu", "--shapes", "smoke", "--runs", str(tmp_path / "runs"),
                           "--no-sandbox"], capture_output=True, text=True, cwd=project, timeout=300)
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    result = load_result(run_dir)
    assert proc.returncode == 1  # not a PASS
    assert result.grading.outcome is Outcome.NO_SOLUTION
    assert result.session.sandboxed is False and "not sandboxed" in result.session.sandbox_note


@pytest.mark.slow
@pytest.mark.parametrize("args,message", [
    (["--agent", "scripted:giveup", "--problem", "problems/99_nothing"], "no such problem folder"),
    (["--agent", "scripted:giveup", "--problem", str(KAHAN), "--budget", "0"], "leaves the agent no time"),
    (["--agent", "gemini:gemini-2.5-pro", "--problem", str(KAHAN)], "npm install -g @google/gemini-cli"),
    (["--agent", "claude", "--problem", str(KAHAN)], "HARNESS:MODEL"),
])
def test_bad_input_is_a_clear_error(args, message, tmp_path):
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "run", *args, "--runs", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_result_json_is_the_shared_model(pipeline, run):
    run_dir = run("scripted:giveup")
    data = json.loads((run_dir / "result.json").read_text())
    assert data["run_id"] == run_dir.name and data["harness"] == "scripted" and data["model"] == "giveup"
    assert data["session"]["transcript"] == "transcript.jsonl" and data["session"]["budget_s"] == 300


def test_a_cli_that_exits_at_once_is_named_with_its_version_and_the_fix(pipeline, standins, tmp_path,
                                                                        sandbox_setting):
    """A CLI that refuses to start (an unknown flag, a missing config): the run says which CLI, which version,
    what it said and what to do, and notes that the version was never verified."""
    standins.add("codex", stderr="error: unexpected argument '--skip-git-repo-check' found\n", exit_code=2,
                 subcommands={"--version": {"stdout": "version.txt"}}, files={"version.txt": "codex-cli 0.12.0\n"})
    request = RunRequest(agent=AgentSpec.parse("codex:gpt-5.5"), problem=open_problem(KAHAN), runs_dir=tmp_path / "runs",
                         budget_s=60, device="cpu", shapes="smoke", sandboxed=sandbox_setting == "true")
    result = load_result(execute_run(request))
    assert result.grading.outcome is Outcome.INCOMPLETE_SESSION
    reason = result.grading.reasons[0]
    assert reason.startswith("codex 0.12.0 exited at once (exit code 2") and "unexpected argument" in reason
    assert "npm install --prefix clis" in reason and result.session.cli_version == "0.12.0"
    assert any("0.12.0 has not been verified end to end" in note for note in result.session.notes)


def test_one_run_command_opens_its_problem_once(pipeline, project, tmp_path, monkeypatch):
    """`kernelbench run` opens the problem once and hands the value on: the workspace, the agent's context, the
    grading and the run directory all take it, so the layout is detected once in this process (the grader's
    stage processes open their pristine copy in their own)."""
    from kernelbench.cli import main
    from kernelbench.problems import layouts

    seen, detect = [], layouts.layout_of
    monkeypatch.setattr(layouts, "layout_of", lambda path: seen.append(Path(path)) or detect(path))
    monkeypatch.chdir(project)
    plan = REPO / "tests" / "harness" / "plans" / "fast-eager.yaml"
    code = main(["run", "--agent", f"scripted:{plan}", "--problem", str(KAHAN), "--device", "cpu", "--shapes",
                 "smoke", "--held-out", "off", "--runs", str(tmp_path / "runs"), "--no-sandbox"])
    [run_dir] = list((tmp_path / "runs").iterdir())
    result = load_result(run_dir)
    assert code in (0, 1) and result.grading.has_solution and result.grading.checks, result.grading.reasons
    assert result.problem == "04_kahan_softmax" and result.deck == "main"
    assert seen == [KAHAN]
