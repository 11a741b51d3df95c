"""Small pieces: agent specs, run ids, outcome precedence, prompt fields, run directories, plans, sweep files."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.fileio import ModelLoadError
from kernelbench.harness.agents.base import AgentReport, classify_error_text
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.outcome import classify, template_findings
from kernelbench.harness.plans import find_plan, load_plan, plan_sources, resolve_plan
from kernelbench.harness.process import ProcessResult
from kernelbench.harness.runids import make_run_id, unique_run_id
from kernelbench.harness.sweep import Sweep
from kernelbench.harness.workspace import TemplateChange, render_prompt
from kernelbench.results.run import RUN_ID_RE, Grading, Outcome, ProviderError

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text,expected", [
    ("claude:claude-opus-4-7@max", ("claude", "claude-opus-4-7", "max")),
    ("opencode:openrouter/moonshotai/kimi-k2", ("opencode", "openrouter/moonshotai/kimi-k2", None)),
    ("scripted:eager", ("scripted", "eager", None)),
])
def test_agent_spec_parses(text, expected):
    spec = AgentSpec.parse(text)
    assert (spec.harness, spec.model, spec.effort) == expected and str(spec) == text


@pytest.mark.parametrize("text", ["claude", "claude:", ":model", "Claude:x", "codex:gpt@", "codex:@high"])
def test_agent_spec_rejects(text):
    with pytest.raises(KernelBenchError):
        AgentSpec.parse(text)


def test_run_id_matches_the_shared_pattern():
    spec = AgentSpec.parse("opencode:openrouter/moonshotai/Kimi_K2@high")
    run_id = make_run_id(datetime(2026, 11, 21, 16, 5, 9), spec, "04_kahan_softmax", 3)
    assert run_id == "20261121_160509_opencode_openrouter-moonshotai-kimi-k2-high_04_kahan_softmax_t3"
    match = RUN_ID_RE.match(run_id)
    assert match and match["problem"] == "04_kahan_softmax" and match["trial"] == "3"


def test_a_run_id_moves_on_past_a_run_directory_or_staging_folder_of_that_name(tmp_path):
    spec, started = AgentSpec.parse("scripted:eager"), datetime(2026, 1, 1)
    first = unique_run_id(tmp_path, started, spec, "04_kahan_softmax", 1)
    (tmp_path / first).mkdir()
    second = unique_run_id(tmp_path, started, spec, "04_kahan_softmax", 1)
    assert second != first and second.startswith("20260101_000001_")
    (tmp_path / f".tmp-{second}-x").mkdir()  # being written
    assert unique_run_id(tmp_path, started, spec, "04_kahan_softmax", 1).startswith("20260101_000002_")


def test_prompt_fills_profile_fields_and_leaves_code_braces():
    from kernelbench.hardware import get_profile

    text = "Run it on the {hardware} ({sm_count} SMs). In C: for (;;) {{ x[{i}] = 0; }}"
    out = render_prompt(text, get_profile("h100_sxm"))
    assert out.startswith("Run it on the NVIDIA H100") and "132 SMs" in out and "x[{i}]" in out
    assert "{{ x" in out


def _proc(**kw) -> ProcessResult:
    return ProcessResult(exit_code=kw.pop("exit_code", 0), elapsed_s=1.0, **kw)


def test_outcome_precedence():
    retry = ProviderError(message="529 overloaded", retryable=True, source="stderr.log")
    cut = AgentReport(complete=False, provider_error=retry)
    done = AgentReport(complete=True)
    tamper = template_findings([TemplateChange("check.py", "modified", "-a\n+b\n")])
    assert classify(_proc(), done, None, [], has_solution=False).outcome is Outcome.NO_SOLUTION
    assert classify(_proc(timed_out=True), cut, None, [], has_solution=False).outcome is Outcome.PROVIDER_ERROR
    assert classify(_proc(timed_out=True), done, None, [], has_solution=False).outcome is Outcome.TIMEOUT
    assert classify(_proc(flooded=True), done, None, [], has_solution=False).outcome is Outcome.INCOMPLETE_SESSION
    assert classify(_proc(exit_code=1), AgentReport(), None, [], has_solution=False).outcome \
        is Outcome.INCOMPLETE_SESSION
    invalid = classify(_proc(), cut, None, tamper, has_solution=False)
    assert invalid.outcome is Outcome.INVALID and "check.py" in invalid.reasons[0]
    assert classify(None, None, None, tamper, has_solution=True, harness_error="boom").outcome \
        is Outcome.HARNESS_ERROR


def test_graded_outcome_is_kept_when_the_session_was_fine():
    class Report:
        grading = Grading(has_solution=True, correct=False, outcome=Outcome.CHECK_FAILED, reasons=["shape 0"])

    grading = classify(_proc(timed_out=True), AgentReport(complete=False), Report(), [], has_solution=True)
    assert grading.outcome is Outcome.CHECK_FAILED and "time budget" in grading.reasons[-1]


@pytest.mark.parametrize("message,retryable", [
    ("Error: 429 Too Many Requests", True), ("API Error: 529 overloaded_error", True),
    ("Error: 401 invalid x-api-key", False), ("error: insufficient_quota", False),
    ("No allowed providers are available for the selected model", False),
    # Claude Code's words for a stream cut mid-answer (seen under load, where the cut lands before the CLI's own
    # retry notice): transient, so retried
    ("API Error: Connection lost mid-response. The response above may be incomplete.", True),
])
def test_error_text_retryability(message, retryable):
    assert classify_error_text(message, "test").retryable is retryable


def test_demo_plans_resolve_for_every_problem_of_the_deck():
    problems = sorted(p.name for p in (REPO / "problems").glob("*/problem.yaml") for p in [p.parent])
    if not problems:
        pytest.skip("no problems in the deck yet")
    for name in ("eager", "triton", "cheat"):
        path = find_plan(name, [str(REPO)])
        plan = load_plan(path)
        assert plan_sources(plan)
        for problem in problems:
            resolved = resolve_plan(plan, path, problem, REPO)
            assert resolved["steps"]


def test_plan_with_a_missing_file_names_it(tmp_path):
    (tmp_path / "sweeps" / "plans").mkdir(parents=True)
    plan_file = tmp_path / "sweeps" / "plans" / "p.yaml"
    plan_file.write_text("name: p\nsteps:\n  - write: {from: 'nowhere/{problem}.py'}\n")
    with pytest.raises(KernelBenchError, match="nowhere/04_x.py"):
        resolve_plan(load_plan(plan_file), plan_file, "04_x", tmp_path)


def test_plan_step_with_two_actions_is_rejected(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nsteps:\n  - say: hi\n    sleep: 1\n")
    with pytest.raises(ModelLoadError, match="exactly one action"):
        load_plan(path)


def test_sweep_typo_names_file_and_line(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("name: s\nagents: [scripted:eager]\ntrails: 3\n")
    with pytest.raises(ModelLoadError) as info:
        Sweep.load(path)
    assert f"{path}:3" in str(info.value) and "unknown key 'trails'" in str(info.value)


def test_sweep_bad_agent_names_its_line(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("name: s\nagents:\n  - scripted:eager\n  - agent: 'claude'\n")
    with pytest.raises(ModelLoadError) as info:
        Sweep.load(path)
    assert f"{path}:4" in str(info.value) and "HARNESS:MODEL" in str(info.value)


def test_demo_sweep_file_loads():
    sweep = Sweep.load(REPO / "sweeps" / "demo-h100.yaml")
    assert sweep.runs_dir == (REPO / "runs").resolve() and sweep.spec.trials == 3
    assert [e.agent for e in sweep.spec.entries()] == ["scripted:eager", "scripted:triton", "scripted:cheat"]
