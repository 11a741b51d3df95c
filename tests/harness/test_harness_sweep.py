"""Sweeps: 2 scripted agents × 2 problems × 2 trials on the local pool and on a local Ray instance, CPU smoke
grading; an interrupted sweep resumes without losing or duplicating runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.harness.sweep import Sweep, finished_keys, pending_jobs, run_sweep
from kernelbench.results.run import load_result

REPO = Path(__file__).resolve().parents[2]

SWEEP = """name: test-{name}
agents:
  - scripted:giveup
  - agent: scripted:fast-eager
problems: [04_kahan_softmax, 05_topk_bitonic]
problems_dir: {problems}
runs: {runs}
trials: 2
budget_s: 300
device: cpu
shapes: smoke
held_out: false
slots: 2
network: false
sandbox: {sandbox}
"""


def write_sweep(project: Path, name: str, sandbox: str) -> Path:
    path = project / "sweeps" / f"{name}.yaml"
    path.write_text(SWEEP.format(name=name, problems=REPO / "problems", runs=project / f"runs-{name}",
                                 sandbox=sandbox))
    return path


def check_complete(runs: Path) -> None:
    results = [load_result(p.parent) for p in runs.glob("*/result.json")]
    keys = Counter((r.model, r.problem, r.trial) for r in results)
    assert len(keys) == 8 and set(keys.values()) == {1}, keys  # every cell once, none twice
    for result in results:
        if result.model == "fast-eager":  # graded for real (whether the deck's solution passes is the deck's test)
            assert result.grading.has_solution and result.grading.checks, (result.run_id, result.grading.reasons)
            assert result.status.value in ("PASS", "FAIL"), (result.run_id, result.grading.reasons)
            # the sweep file's `held_out: false` reached each grading (the sweep tests what runs, not held-out)
            held = result.grading.held_out
            assert held is not None and held.correct is None and "turned off" in held.note, held
        else:
            assert result.grading.outcome.value == "no_solution" and result.status.value == "ERR"
    assert not list(runs.glob(".tmp-*"))


@pytest.mark.slow
def test_interrupted_local_sweep_resumes_without_duplicates(pipeline, sandbox_setting, project):
    path = write_sweep(project, "local", sandbox_setting)
    runs = project / "runs-local"
    command = [sys.executable, "-m", "kernelbench", "sweep", str(path)]
    proc = subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while not list(runs.glob("*/result.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group gets it
    proc.communicate(timeout=120)
    done_before = finished_keys(runs)
    assert 1 <= len(done_before) < 8
    assert not list(runs.glob(".tmp-*")), "the interrupted runs were left half-written"

    with pytest.raises(KernelBenchError, match="--resume"):
        pending_jobs(Sweep.load(path), resume=False)
    resumed = subprocess.run(command + ["--resume"], cwd=project, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    check_complete(runs)
    assert done_before <= finished_keys(runs)


@pytest.mark.slow
def test_ray_sweep(pipeline, sandbox_setting, project, ray_local):
    path = write_sweep(project, "ray", sandbox_setting)
    finished = run_sweep(Sweep.load(path), backend="ray", progress=False)
    assert len(finished) == 8 and not [s for s in finished if s.error]
    check_complete(project / "runs-ray")


@pytest.mark.slow
def test_retryable_provider_error_is_retried_and_set_aside(pipeline, sandbox_setting, project, standins):
    standins.add("claude", exit_code=1, stderr="API Error: 529 overloaded_error: Overloaded\n")
    path = project / "sweeps" / "retry.yaml"
    path.write_text(f"name: retry\nagents: ['claude:claude-sonnet-4-5']\nproblems: [04_kahan_softmax]\n"
                    f"problems_dir: {REPO / 'problems'}\nruns: {project / 'runs-retry'}\ndevice: cpu\n"
                    f"shapes: smoke\nretries: 1\nbudget_s: 60\nsandbox: {sandbox_setting}\n")
    finished = run_sweep(Sweep.load(path), progress=False)
    assert [s.outcome for s in finished] == ["provider_error"] and finished[0].retryable
    kept = list((project / "runs-retry").glob("*/result.json"))
    retried = list((project / "runs-retry" / ".retried").glob("*/result.json"))
    assert len(kept) == 1 and len(retried) == 1  # the first attempt is kept as evidence, off the board
    assert finished_keys(project / "runs-retry") == {("claude:claude-sonnet-4-5", "04_kahan_softmax", 1)}


def test_resume_redoes_harness_errors_and_keeps_them_as_evidence(tmp_path):
    """A run that ended in a harness error (the grader or harness failed, not the agent) is moved under
    runs/.retried/ on --resume and its (agent, problem, trial) is pending again; other runs stay finished."""
    import json

    sweep_path = tmp_path / "sweep.yaml"
    runs = tmp_path / "runs"
    sweep_path.write_text(SWEEP.format(name="redo", problems=REPO / "problems", runs=runs, sandbox="false"))
    for name, trial, outcome in (("a", 1, "harness_error"), ("b", 2, "no_solution")):
        run = runs / f"run_{name}"
        run.mkdir(parents=True)
        (run / "result.json").write_text(json.dumps({
            "harness": "scripted", "model": "giveup", "problem": "04_kahan_softmax", "trial": trial,
            "grading": {"outcome": outcome}}))
    todo, skipped = pending_jobs(Sweep.load(sweep_path), resume=True)
    assert skipped == 1 and len(todo) == 7
    assert ("scripted:giveup", "04_kahan_softmax", 1) in {(j.agent, Path(j.problem_dir).name, j.trial) for j in todo}
    assert (runs / ".retried" / "run_a" / "result.json").is_file() and not (runs / "run_a").exists()
    assert (runs / "run_b").is_dir()


def test_an_agent_entry_names_its_stand_in_relative_to_the_sweep_file(tmp_path):
    """`stand_in:` in an agent entry is what `kernelbench run --stand-in POLICY` is for one run: each of the
    entry's jobs carries the policy file, resolved against the sweep file's folder, into its run request
    (also through the JSON a pool worker reads); the other entries point their CLI at nothing."""
    from kernelbench.harness.jobs import Job

    policy = tmp_path / "policies" / "eager.yaml"
    policy.parent.mkdir()
    policy.write_text((REPO / "tests" / "harness" / "standin" / "eager.yaml").read_text())
    sweep_path = tmp_path / "sweeps" / "standin.yaml"
    sweep_path.parent.mkdir()
    sweep_path.write_text(f"name: standin\nagents:\n  - {{agent: 'claude:stand-in', stand_in: ../policies/eager.yaml}}\n"
                          f"  - scripted:giveup\nproblems: [04_kahan_softmax]\nproblems_dir: {REPO / 'problems'}\n"
                          f"runs: {tmp_path / 'runs'}\ndevice: cpu\nshapes: smoke\n")
    jobs = Sweep.load(sweep_path).jobs()
    by_agent = {job.agent: job for job in jobs}
    assert by_agent["claude:stand-in"].stand_in == str(policy.resolve())
    assert by_agent["scripted:giveup"].stand_in is None
    request = Job.model_validate_json(by_agent["claude:stand-in"].model_dump_json()).request()
    assert request.stand_in == policy.resolve() and request.agent_options["model_server"] is True
    assert by_agent["scripted:giveup"].request().stand_in is None


def test_a_stand_in_entry_with_a_typo_is_an_error_naming_the_sweep_file(tmp_path):
    sweep_path = tmp_path / "sweep.yaml"
    sweep_path.write_text("name: typo\nagents:\n  - {agent: 'claude:stand-in', standin: eager.yaml}\n")
    with pytest.raises(KernelBenchError) as caught:
        Sweep.load(sweep_path)
    assert "sweep.yaml" in str(caught.value.diagnostic.path) and "standin" in caught.value.diagnostic.message
