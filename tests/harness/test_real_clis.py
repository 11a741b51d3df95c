"""The real agent CLIs, end to end and offline: `kernelbench run` drives each CLI pinned in clis/package.json
against the model stand-in, inside the sandbox; the run is graded on the CPU and its page built from it.

Install them with `npm install --prefix clis` (CI does); without them these tests skip, saying so.
"""

from __future__ import annotations

import json
import shutil
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelbench.harness.agents import get_adapter
from kernelbench.transcripts.loader import load

REPO = Path(__file__).resolve().parents[2]
CLIS_BIN = REPO / "clis" / "node_modules" / ".bin"
POLICY = Path(__file__).parent / "standin" / "eager.yaml"
PROBLEM = REPO / "problems" / "04_kahan_softmax"

# agent, the transcript format its run keeps, the tools the stand-in calls by the CLI's own names
CLIS = {
    "claude": ("claude:stand-in", "claude-stream", {"Read", "Write", "Bash"}),
    # Codex offers apply_patch only to models it knows: the stand-in takes a real model's name
    "codex": ("codex:gpt-5.5", "codex-rollout", {"exec_command", "apply_patch"}),
    "gemini": ("gemini:gemini-2.5-pro", "gemini-jsonl", {"read_file", "write_file", "run_shell_command"}),
    "opencode": ("opencode:stand-in", "opencode-export", {"read", "write", "bash"}),
    "kimi": ("kimi:stand-in", "kimi-wire", {"Read", "Write", "Bash"}),
}


@pytest.fixture(scope="module")
def clis_env(sandbox_ok, pipeline) -> dict[str, str]:
    if not CLIS_BIN.is_dir():
        pytest.skip("the agent CLIs are not installed: npm install --prefix clis")
    return {**os.environ, "PATH": f"{CLIS_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def installed(env: dict[str, str], name: str) -> None:
    executable = get_adapter(name).executable
    if not (CLIS_BIN / executable).exists():
        pytest.skip(f"{executable} is not installed in clis/node_modules (npm install --prefix clis)")


def kernelbench_run(env: dict[str, str], agent: str, runs: Path, policy: Path = POLICY,
                    budget: float = 180) -> tuple[subprocess.CompletedProcess, Path, dict]:
    argv = [sys.executable, "-m", "kernelbench", "run", "--agent", agent, "--stand-in", str(policy),
            "--problem", str(PROBLEM), "--device", "cpu", "--shapes", "smoke", "--budget", str(budget),
            "--runs", str(runs), "--held-out", "off"]  # these test the CLIs; the held-out stage has tests of its own
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=budget + 240)
    found = sorted(p for p in runs.iterdir() if not p.name.startswith("."))
    assert len(found) == 1, (proc.stdout, proc.stderr)
    return proc, found[0], json.loads((found[0] / "result.json").read_text())


def served(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "model_server.jsonl").read_text().splitlines()]


def build_run_page(run_dir: Path, tmp_path: Path) -> str:
    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    (data / "annotations").mkdir()
    # a copy, not a link: the site build refuses run folders that are links out of the data tree
    shutil.copytree(run_dir, data / "runs" / run_dir.name)
    out = tmp_path / "site"
    proc = subprocess.run([sys.executable, str(REPO / "build.py"), "--data", str(data), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return (out / "runs" / run_dir.name / "index.html").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CLIS))
def test_each_cli_makes_a_graded_run_whose_page_shows_its_real_transcript(clis_env, tmp_path, name):
    installed(clis_env, name)
    agent, transcript_format, tools = CLIS[name]
    proc, run_dir, result = kernelbench_run(clis_env, agent, tmp_path / "runs")
    session, grading = result["session"], result["grading"]
    assert grading["outcome"] == "pass", (grading, proc.stderr[-2000:])
    assert session["complete"] and session["sandboxed"] and session["provider_error"] is None
    assert session["cli_version"] in get_adapter(name).verified, session["cli_version"]
    assert session["model_server"] == "stand-in eager.yaml" and session["transcript_format"] == transcript_format
    assert session["tokens"]["input"] > 0 and session["tokens"]["output"] > 0   # the stand-in's usage, as read
    # the policy ran to its end, one step per request of the agent's loop, nothing refused
    loop = [entry for entry in served(run_dir) if entry.get("agent_loop")]
    assert [entry["step"] for entry in loop] == [0, 1, 2, 3] and all(e["status"] == 200 for e in loop)
    # the CLI's own transcript, parsed like the viewer parses it, holds the calls by the CLI's own tool names,
    # the edit that wrote solution.py, and check.py's verdict read back by the model
    parsed = load(run_dir / session["transcript"])
    assert parsed.complete and {e.name for e in parsed.walk() if e.kind == "tool_call"} == tools
    assert any(e.kind == "file_edit" and (e.path or "").endswith("solution.py") for e in parsed.walk()) \
        or name == "kimi"   # Kimi Code's wire log records the Write call and its result, not a diff
    assert "check.py said: PASS" in (parsed.final_message or "")
    page = build_run_page(run_dir, tmp_path)
    for tool in tools:
        assert tool in page
    assert "solution.py" in page and "check.py said: PASS" in page
    assert page.count('class="ev ev-unknown"') == sum(parsed.unknown_records.values())   # shown, not dropped


@pytest.mark.slow
def test_a_sweep_entry_runs_its_cli_against_the_stand_in_it_names(clis_env, tmp_path):
    """`stand_in:` in a sweep's agent entry does what `kernelbench run --stand-in` does, for every run of the
    entry: two CLIs, each against a stand-in of its own, graded runs that pass."""
    names = [name for name in ("claude", "codex") if (CLIS_BIN / get_adapter(name).executable).exists()]
    if not names:
        pytest.skip("neither claude nor codex is installed in clis/node_modules (npm install --prefix clis)")
    policy = os.path.relpath(POLICY, tmp_path)       # relative to the sweep file, as a sweep in sweeps/ writes it
    entries = "".join(f"  - {{agent: '{CLIS[name][0]}', stand_in: {policy}}}\n" for name in names)
    sweep = tmp_path / "standin.yaml"
    sweep.write_text(f"name: standin\nagents:\n{entries}problems: [04_kahan_softmax]\n"
                     f"problems_dir: {REPO / 'problems'}\nruns: runs\ndevice: cpu\nshapes: smoke\nbudget_s: 180\n"
                     f"slots: 1\nretries: 0\nheld_out: false\n")
    proc = subprocess.run([sys.executable, "-m", "kernelbench", "sweep", str(sweep)], env=clis_env, check=False,
                          capture_output=True, text=True, timeout=240 * len(names) + 120)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / "runs").glob("*/result.json"))]
    assert sorted(r["harness"] for r in results) == sorted(names)
    for result in results:
        assert result["session"]["model_server"] == "stand-in eager.yaml", result["session"]
        assert result["grading"]["outcome"] == "pass", result["grading"]


def fault_policy(tmp_path: Path, fault: str, times: int | None) -> Path:
    """The eager policy with one fault on the step that writes solution.py."""
    text = POLICY.read_text().replace("../../../solutions", str(REPO / "solutions"))
    text += f"faults:\n  - {{fault: {fault}, step: 1{f', times: {times}' if times else ''}}}\n"
    path = tmp_path / f"{fault}.yaml"
    path.write_text(text)
    return path


# cli, fault, attempts it lasts (None: all), budget, outcome class, retryable, where the error was read. Measured
# with the pinned versions: Claude Code retries every API error with backoff (a 401 too) until the budget ends
# the run; Codex and opencode give up after their own retries; Kimi Code reports a refused key on stderr only
# (its wire log does not record it); a stalled stream is waited on until the budget runs out; Codex retries a 500
# without recording it anywhere (the stand-in's log shows it).
FAULTS = [
    ("claude", "unauthorized", None, 12, "provider_error", False, "transcript"),
    ("claude", "rate_limit", None, 12, "provider_error", True, "transcript"),
    ("claude", "overloaded", None, 12, "provider_error", True, "transcript"),
    ("claude", "server_error", 1, 120, "pass", None, None),
    ("claude", "stall", None, 10, "timeout", None, None),
    ("claude", "cut", None, 12, "provider_error", True, "transcript"),
    ("claude", "reject_tool", 1, 120, "pass", None, None),
    ("codex", "unauthorized", None, 60, "provider_error", False, "transcript"),
    ("codex", "rate_limit", None, 60, "provider_error", True, "transcript"),
    ("codex", "cut", None, 60, "provider_error", True, "transcript"),
    ("codex", "server_error", 1, 120, "pass", None, None),
    ("gemini", "unauthorized", None, 60, "provider_error", False, "transcript"),
    ("gemini", "reject_tool", 1, 120, "pass", None, None),
    ("opencode", "unauthorized", None, 60, "provider_error", False, "transcript"),
    ("opencode", "overloaded", None, 60, "provider_error", True, "transcript"),
    ("opencode", "reject_tool", 1, 120, "pass", None, None),
    ("kimi", "unauthorized", None, 60, "provider_error", False, "stderr"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,fault,times,budget,outcome,retryable,read_from", FAULTS,
                         ids=[f"{f[0]}-{f[1]}" for f in FAULTS])
def test_fault_modes_map_to_outcome_classes(clis_env, tmp_path, name, fault, times, budget, outcome, retryable,
                                            read_from):
    installed(clis_env, name)
    policy = fault_policy(tmp_path, fault, times)
    proc, run_dir, result = kernelbench_run(clis_env, CLIS[name][0], tmp_path / "runs", policy, budget)
    session, grading = result["session"], result["grading"]
    assert grading["outcome"] == outcome, (grading, session)
    faulted = [e for e in served(run_dir) if e.get("fault") == fault]
    assert faulted, "the stand-in never played the fault"
    if retryable is not None:
        assert session["provider_error"]["retryable"] is retryable, session["provider_error"]
        source = session["provider_error"]["source"]
        own_records = (session["transcript"], "events.jsonl")    # the session file, or the stream beside it
        assert source.startswith(own_records if read_from == "transcript" else "stderr.log"), source
    parsed = load(run_dir / session["transcript"])
    if fault == "server_error" and name != "codex":   # the retry is recorded and the session went on to finish
        beside = run_dir / "events.jsonl"
        notices = parsed.provider_errors + (load(beside).provider_errors if beside.is_file() else [])
        assert parsed.complete and notices and all(n.retried for n in notices)
    if fault == "reject_tool":       # the refused call and the CLI's answer are shown; the policy went on
        # (opencode turns an unknown tool into a call of its own `invalid` tool whose output names it)
        rejected = "kb_standin_no_such_tool"
        assert any(e.name == rejected or rejected in (e.output or "") for e in parsed.walk()
                   if e.kind in ("tool_call", "tool_result"))
    if outcome == "timeout":
        assert session["timed_out"] and not session["complete"]
