"""The real adapters, driven against stand-in CLIs that replay real transcripts in each CLI's own format."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness_standins import calls
from kernelbench.errors import KernelBenchError
from kernelbench.harness import process
from kernelbench.harness.agents import get_adapter, registry
from kernelbench.harness.runner import launch_agent
from kernelbench.transcripts.loader import load

CLAUDE_STREAM = "claude-stream/claude-stream-json-simple.jsonl"
CODEX_EXEC = "codex-exec/stream-output-5.jsonl"
CODEX_ROLLOUT = "codex-rollout/rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"
OPENCODE_EXPORT = "opencode-export/session__jolly-eagle__ses_39b5d713cffeRgAoxPIwS3Plus.json"
GEMINI_SESSION = "gemini-session/session-2025-10-29T10-36-9c9a14e1.json"
KIMI_WIRE = "kimi-wire/small.jsonl"


def run(ctx, sandbox_ok=None, **kwargs):
    adapter = get_adapter(ctx.spec.harness)
    return launch_agent(adapter, ctx, sandboxed=True, **kwargs)


def test_every_cli_has_an_adapter():
    assert {"claude", "codex", "opencode", "gemini", "kimi", "cursor", "scripted"} <= set(registry())


# ---------------------------------------------------------------------------------------------- claude

def test_claude_replays_stream(shared_fixtures, sandbox_ok, standins, make_ctx):
    fixture = shared_fixtures / "transcripts" / CLAUDE_STREAM
    standins.add("claude", files={"stream.jsonl": fixture}, stdout="stream.jsonl")
    ctx = make_ctx("claude:claude-opus-4-7@max")
    proc, report = run(ctx)
    argv = calls(ctx.home)[0]["argv"]
    assert argv[1:3] == ["-p", ctx.prompt]  # the prompt verbatim, braces and all
    assert ["--output-format", "stream-json"] == argv[3:5] and "--verbose" in argv
    assert argv[argv.index("--model") + 1] == "claude-opus-4-7" and argv[argv.index("--effort") + 1] == "max"
    assert calls(ctx.home)[0]["cwd"] == str(ctx.workspace)
    assert (ctx.run_dir / "transcript.jsonl").read_bytes() == fixture.read_bytes()
    assert report.complete and report.provider_error is None
    assert report.session_id == "6170607e-7232-407c-82c3-7fc983d60064"
    assert report.cost_usd == pytest.approx(0.21085415)
    assert report.tokens.output > 0 and report.transcript_format.startswith("claude")


def test_claude_provider_error_on_stderr(shared_fixtures, sandbox_ok, standins, make_ctx):
    init = (shared_fixtures / "transcripts" / CLAUDE_STREAM).read_text().splitlines()[0] + "\n"
    standins.add("claude", files={"init.jsonl": init}, stdout="init.jsonl", exit_code=1,
                 stderr='API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n')
    ctx = make_ctx("claude:claude-opus-4-7")
    proc, report = run(ctx)
    assert proc.exit_code == 1 and not report.complete
    assert report.provider_error is not None and report.provider_error.retryable
    assert report.provider_error.source.startswith("stderr.log")


def test_error_text_the_agent_read_is_not_a_provider_error(sandbox_ok, standins, make_ctx):
    """A tool result quoting '429 rate limit' (a log the agent read) must not be taken for the provider's."""
    lines = [{"type": "system", "subtype": "init", "session_id": "s1", "model": "m", "cwd": "/w", "tools": [],
              "claude_code_version": "2.1.331"},
             {"type": "user", "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "t1",
                  "content": "API Error: 429 rate_limit_error: rate limit exceeded (from server.log)"}]}},
             {"type": "result", "subtype": "success", "is_error": False, "result": "done", "session_id": "s1",
              "total_cost_usd": 0.01, "usage": {"input_tokens": 5, "output_tokens": 7}}]
    standins.add("claude", files={"s.jsonl": "\n".join(json.dumps(x) for x in lines) + "\n"}, stdout="s.jsonl")
    proc, report = run(make_ctx("claude:claude-sonnet-4-5"))
    assert report.complete and report.provider_error is None


# ---------------------------------------------------------------------------------------------- codex

def test_codex_finds_rollout_by_session_id_not_mtime(shared_fixtures, sandbox_ok, standins, make_ctx):
    stream = shared_fixtures / "transcripts" / CODEX_EXEC
    rollout = shared_fixtures / "transcripts" / CODEX_ROLLOUT
    thread = json.loads(stream.read_text().splitlines()[0])["thread_id"]
    decoy = "rollout-2025-10-28T09-00-00-0199ffff-0000-7000-8000-000000000000.jsonl"
    standins.add("codex", files={"exec.jsonl": stream, "rollout.jsonl": rollout, "decoy.jsonl": "{}\n"},
                 stdout="exec.jsonl",
                 writes=[{"src": "rollout.jsonl", "dest": f".codex/sessions/2025/10/27/rollout-2025-10-27T10-00-00-"
                                                          f"{thread}.jsonl"},
                         # written last, so it is the newest file: it must not be picked
                         {"src": "decoy.jsonl", "dest": f".codex/sessions/2025/10/28/{decoy}"}])
    ctx = make_ctx("codex:gpt-5.5@high")
    proc, report = run(ctx)
    argv = calls(ctx.home)[0]["argv"]
    assert argv[1:3] == ["exec", "--json"] and argv[-1] == ctx.prompt
    assert "model_reasoning_effort=high" in argv and argv[argv.index("--model") + 1] == "gpt-5.5"
    assert "CODEX_HOME" in calls(ctx.home)[0]["env"]
    assert report.session_id == thread and report.complete
    assert report.transcript == "transcript.jsonl"
    assert (ctx.run_dir / "transcript.jsonl").read_bytes() == rollout.read_bytes()
    assert (ctx.run_dir / "events.jsonl").read_bytes() == stream.read_bytes()
    assert report.tokens.input > 0 and report.transcript_format.startswith("codex")


@pytest.mark.parametrize("message,retryable", [("stream disconnected: 429 Too Many Requests, rate limit", True),
                                               ("401 Unauthorized: invalid api key", False)])
def test_codex_turn_failed_is_a_provider_error(sandbox_ok, standins, make_ctx, message, retryable):
    events = [{"type": "thread.started", "thread_id": "t-1"}, {"type": "turn.started"},
              {"type": "turn.failed", "error": {"message": message}}]
    standins.add("codex", files={"e.jsonl": "".join(json.dumps(e) + "\n" for e in events)}, stdout="e.jsonl",
                 exit_code=1)
    proc, report = run(make_ctx("codex:gpt-5.5"))
    assert not report.complete
    assert report.provider_error.retryable is retryable
    assert report.provider_error.source == "events.jsonl line 3"   # the turn.failed record
    assert report.transcript == "events.jsonl"  # no rollout: the stream is kept as the transcript


# ---------------------------------------------------------------------------------------------- opencode

def _opencode_stream(export: dict) -> str:
    sid = export["info"]["id"]
    records = [{"type": "step_start", "timestamp": 1, "sessionID": sid, "part": {"type": "step-start"}},
               {"type": "text", "timestamp": 2, "sessionID": sid, "part": {"type": "text", "text": "done"}},
               {"type": "step_finish", "timestamp": 3, "sessionID": sid,
                "part": {"type": "step-finish", "reason": "stop", "cost": 0.01,
                         "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}}}]
    return "".join(json.dumps(r) + "\n" for r in records)


def test_opencode_exports_session_and_pins_provider(shared_fixtures, sandbox_ok, standins, make_ctx):
    fixture = shared_fixtures / "transcripts" / OPENCODE_EXPORT
    export = json.loads(fixture.read_text())
    standins.add("opencode", files={"stream.jsonl": _opencode_stream(export), "export.json": fixture},
                 stdout="stream.jsonl",
                 subcommands={"run": {"stdout": "stream.jsonl"},
                              "export": {"banner": "Exporting session: " + export["info"]["id"],
                                         "stdout": "export.json"}})
    ctx = make_ctx("opencode:openrouter/moonshotai/kimi-k2@high", options={"provider_order": ["moonshotai"]})
    adapter = get_adapter("opencode")
    adapter.validate(ctx.spec, ctx.options)
    proc, report = run(ctx)
    run_call, export_call = calls(ctx.home)
    assert run_call["argv"][1:4] == ["run", "--format", "json"] and run_call["argv"][-1] == ctx.prompt
    assert export_call["argv"][1:] == ["export", export["info"]["id"]]
    config = adapter.config(ctx)
    options = config["provider"]["openrouter"]["models"]["moonshotai/kimi-k2"]["options"]
    assert options["provider"] == {"order": ["moonshotai"], "allow_fallbacks": False}
    assert options["reasoningEffort"] == "high" and "OPENCODE_CONFIG_CONTENT" in run_call["env"]
    assert report.complete and report.transcript == "transcript.json"
    assert json.loads((ctx.run_dir / "transcript.json").read_text()) == export
    assert report.tokens.total > 0 and report.transcript_format.startswith("opencode")


def test_opencode_routed_model_without_pinning_fails_loudly(make_ctx):
    with pytest.raises(KernelBenchError, match="no provider is pinned"):
        get_adapter("opencode").validate(make_ctx("opencode:openrouter/x/y").spec, {})


def test_opencode_structured_error_event(sandbox_ok, standins, make_ctx):
    error = {"type": "error", "timestamp": 1, "sessionID": "ses_x",
             "error": {"name": "APIError", "data": {"message": "Provider returned error", "statusCode": 503,
                                                      "isRetryable": True}}}
    standins.add("opencode", files={"e.jsonl": json.dumps(error) + "\n"}, exit_code=1,
                 subcommands={"run": {"stdout": "e.jsonl", "exit_code": 1}, "export": {"exit_code": 1}})
    proc, report = run(make_ctx("opencode:anthropic/claude-sonnet-4-5"))
    assert not report.complete and report.provider_error.retryable
    assert "Provider returned error" in report.provider_error.message


# ---------------------------------------------------------------------------------------------- gemini

def test_gemini_finds_recording_by_session_id(shared_fixtures, sandbox_ok, standins, make_ctx):
    fixture = shared_fixtures / "transcripts" / GEMINI_SESSION
    session = json.loads(fixture.read_text())
    sid = session["sessionId"]
    stream = [{"type": "init", "session_id": sid, "model": "gemini-2.5-pro"},
              {"type": "message", "role": "assistant", "content": "done"},
              {"type": "result", "status": "success", "stats": {"total_tokens": 10}}]
    other = {**session, "sessionId": "9c9a14e1-0000-0000-0000-000000000000"}  # same name prefix, other session
    chats = f".gemini/tmp/{session['projectHash']}/chats"
    standins.add("gemini", files={"s.jsonl": "".join(json.dumps(r) + "\n" for r in stream), "chat.json": fixture,
                                  "other.json": json.dumps(other)}, stdout="s.jsonl",
                 writes=[{"src": "other.json", "dest": f"{chats}/session-2025-10-29T10-30-9c9a14e1.json"},
                         {"src": "chat.json", "dest": f"{chats}/{fixture.name}"}])
    ctx = make_ctx("gemini:gemini-2.5-pro")
    proc, report = run(ctx)
    argv = calls(ctx.home)[0]["argv"]
    assert argv[1:3] == ["-p", ctx.prompt] and ["-o", "stream-json"] == argv[3:5] and "--yolo" in argv
    assert report.complete and report.session_id == sid
    assert (ctx.run_dir / "transcript.json").read_bytes() == fixture.read_bytes()
    assert report.tokens.total > 0 and report.transcript_format.startswith("gemini")


def test_gemini_rejects_an_effort(make_ctx):
    with pytest.raises(KernelBenchError, match="no reasoning-effort"):
        get_adapter("gemini").validate(make_ctx("gemini:gemini-2.5-pro@high").spec, {})


# ---------------------------------------------------------------------------------------------- kimi

def test_kimi_finds_wire_by_session_id(shared_fixtures, sandbox_ok, standins, make_ctx):
    wire = shared_fixtures / "transcripts" / KIMI_WIRE
    sid = "session_9eb1bf57-c1af-48a5-b658-0e8d9fe794f5"
    stream = [{"role": "assistant", "content": "", "tool_calls": [
                  {"type": "function", "id": "c1", "function": {"name": "Shell", "arguments": "{\"command\":\"ls\"}"}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "solution.py"},
              {"role": "assistant", "content": "Done."},
              {"role": "meta", "type": "session.resume_hint", "session_id": sid, "content": f"kimi -r {sid}"}]
    standins.add("kimi", files={"s.jsonl": "".join(json.dumps(r) + "\n" for r in stream), "wire.jsonl": wire},
                 stdout="s.jsonl",
                 writes=[{"src": "wire.jsonl", "dest": f".kimi-code/sessions/wd_project_ac3bb318f98e/{sid}/agents/"
                                                       "main/wire.jsonl"}])
    ctx = make_ctx("kimi:kimi-k2.7-code")
    proc, report = run(ctx)
    argv = calls(ctx.home)[0]["argv"]
    assert argv[1:] == ["-p", ctx.prompt, "--output-format", "stream-json", "-m", "kimi-k2.7-code"]
    assert report.complete and report.session_id == sid
    assert (ctx.run_dir / "transcript.jsonl").read_bytes() == wire.read_bytes()
    assert report.transcript_format.startswith("kimi")


# ---------------------------------------------------------------------------------------------- cursor

CURSOR_SAMPLE = [
    {"type": "system", "subtype": "init", "session_id": "c-1", "model": "gpt-5", "cwd": "/w", "apiKeySource": "env"},
    {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "write solution.py"}]},
     "session_id": "c-1"},
    {"type": "thinking", "subtype": "delta", "text": "plan", "session_id": "c-1"},
    {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Writing it."}]},
     "session_id": "c-1"},
    {"type": "tool_call", "subtype": "started", "call_id": "k1", "session_id": "c-1",
     "tool_call": {"writeToolCall": {"args": {"path": "solution.py", "fileText": "x = 1\n"}}}},
    {"type": "tool_call", "subtype": "completed", "call_id": "k1", "session_id": "c-1",
     "tool_call": {"writeToolCall": {"args": {"path": "solution.py"}, "result": {"success": {"linesCreated": 1}}}}},
    {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200, "result": "Writing it.",
     "session_id": "c-1", "usage": {"inputTokens": 100, "outputTokens": 20}},
]


def test_cursor_hand_written_sample(sandbox_ok, standins, make_ctx):
    text = "".join(json.dumps(r) + "\n" for r in CURSOR_SAMPLE)
    standins.add("cursor-agent", files={"s.jsonl": text}, stdout="s.jsonl")
    ctx = make_ctx("cursor:gpt-5")
    proc, report = run(ctx)
    argv = calls(ctx.home)[0]["argv"]
    assert argv[1:4] == ["-p", "--output-format", "stream-json"] and argv[-1] == ctx.prompt and "--force" in argv
    assert report.complete and report.session_id == "c-1"
    assert (ctx.run_dir / "transcript.jsonl").read_text() == text
    assert report.transcript_format == "cursor-stream" and report.tokens.input == 100


# ---------------------------------------------------------------------------------------------- misbehaving CLIs

def _alive_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("sandboxed", [True, False])
def test_hanging_cli_is_killed_with_its_children(sandbox_ok, standins, make_ctx, monkeypatch, sandboxed):
    monkeypatch.setattr(process, "GRACE_S", 1.0)
    marker = f"kb-hang-marker-{os.getpid()}-{sandboxed}"
    standins.add("claude", hang=marker)  # ignores SIGTERM and leaves a sleeping child
    ctx = make_ctx("claude:m", budget_s=2.0)
    start = time.monotonic()
    proc, report = launch_agent(get_adapter("claude"), ctx, sandboxed=sandboxed)
    assert proc.timed_out and not report.complete
    assert time.monotonic() - start < 12
    time.sleep(0.5)
    assert _alive_with(marker) == []


def test_flooding_cli_is_stopped(sandbox_ok, standins, make_ctx, monkeypatch):
    monkeypatch.setattr(process, "MAX_STDOUT_BYTES", 2 << 20)
    monkeypatch.setattr(process, "GRACE_S", 1.0)
    standins.add("claude", flood=True)
    ctx = make_ctx("claude:m", budget_s=60.0)
    proc, report = run(ctx)
    assert proc.flooded and not proc.timed_out and not report.complete
    assert (ctx.run_dir / "transcript.jsonl").stat().st_size < 64 << 20


def test_missing_cli_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KernelBenchError) as info:
        get_adapter("gemini").find_executable()
    assert "npm install -g @google/gemini-cli" in str(info.value) and "`gemini`" in str(info.value)


# ---------------------------------------------------------------------------------------------- one reader

def _lines(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


CLAUDE_INIT = {"type": "system", "subtype": "init", "session_id": "s1", "model": "m", "cwd": "/w", "tools": [],
               "claude_code_version": "2.1.331"}
AGREEMENT = {
    # a result that is not an error, but not a success either: the session did not finish its task
    "cursor-max-turns": ("cursor", "cursor:gpt-5", "cursor-agent", [
        *CURSOR_SAMPLE[:-1], {**CURSOR_SAMPLE[-1], "subtype": "error_max_turns", "is_error": False}]),
    "cursor-success": ("cursor", "cursor:gpt-5", "cursor-agent", CURSOR_SAMPLE),
    # Claude Code 2.1 reports an API failure as subtype success with is_error, after a synthetic message
    "claude-api-error": ("claude", "claude:m", "claude", [
        CLAUDE_INIT,
        {"type": "assistant", "session_id": "s1", "error": "authentication_failed", "is_api_error_message": True,
         "api_error_status": 401, "message": {"id": "x", "model": "<synthetic>", "role": "assistant",
                                              "content": [{"type": "text", "text": "API Error: 401 invalid key"}]}},
        {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 401, "session_id": "s1",
         "result": "API Error: 401 invalid key", "usage": {"input_tokens": 0, "output_tokens": 0}}]),
    # cut off by the budget while retrying a rate limit: no result line, the retries say why
    "claude-retrying": ("claude", "claude:m", "claude", [
        CLAUDE_INIT,
        {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "retry_delay_ms": 500,
         "error_status": 429, "error": "rate_limit", "session_id": "s1"},
        {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10, "retry_delay_ms": 1100,
         "error_status": 429, "error": "rate_limit", "session_id": "s1"}]),
}


@pytest.mark.parametrize("case", sorted(AGREEMENT))
def test_the_run_and_the_viewer_read_completion_and_errors_from_the_same_parse(sandbox_ok, standins, make_ctx,
                                                                               case):
    name, agent, executable, records = AGREEMENT[case]
    standins.add(executable, files={"s.jsonl": _lines(records)}, stdout="s.jsonl")
    ctx = make_ctx(agent)
    proc, report = run(ctx)
    parsed = load(ctx.run_dir / report.transcript)
    assert report.complete == parsed.complete
    assert report.complete is (case == "cursor-success")
    if case == "claude-api-error":
        assert not report.provider_error.retryable and "401" in report.provider_error.message
        assert report.provider_error.source == "transcript.jsonl line 3"    # the error result
    if case == "claude-retrying":
        assert report.provider_error.retryable and "while the CLI was retrying" in report.provider_error.message
        assert [n.status for n in parsed.provider_errors] == [429, 429]
