"""Every real fixture folder: concrete contents of specific files, checked against an independent reading of the
file (stdlib json, written here) or against facts verified by hand."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kernelbench.transcripts import Kind, load
from kernelbench.transcripts.summary import summarize


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def events_of(session, kind: Kind) -> list:
    return [e for e in session.walk() if e.kind is kind]


def all_files(tx: Path) -> list[Path]:
    return sorted(p for p in tx.glob("*/*") if p.is_file())


def test_every_fixture_parses_and_reports_unknowns(tx: Path) -> None:
    files = all_files(tx)
    assert len(files) >= 40
    for path in files:
        session = load(path)
        summary = summarize(session)
        assert summary["events_total"] == sum(summary["events_by_kind"].values())
        # nothing understood is silently dropped: every non-ignored record produced an event or a count
        if path.name != "state.json":
            assert session.format != "unknown", path
            assert summary["unknown_records_total"] == 0, (path, summary["unknown_records"])
    state = load(tx / "kimi-wire" / "state.json")   # a sidecar, not a transcript: kept raw, counted
    assert state.format == "unknown" and state.unknown_records == {"document": 1}


# ---------------------------------------------------------------------------------------------- Claude Code

def claude_reference(path: Path) -> tuple[Counter, dict[str, int]]:
    """Tool calls by name, and usage counted once per (message.id, requestId) from the last line."""
    tools: Counter = Counter()
    last_usage: dict[tuple, dict] = {}
    for record in jsonl(path):
        if record.get("type") != "assistant":
            continue
        message = record["message"]
        for block in message.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tools[block["name"]] += 1
        if message.get("usage"):
            last_usage[(message.get("id"), record.get("requestId"))] = message["usage"]
    totals = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    for usage in last_usage.values():
        totals["input"] += usage.get("input_tokens", 0)
        totals["output"] += usage.get("output_tokens", 0)
        totals["cache_read"] += usage.get("cache_read_input_tokens", 0)
        totals["cache_write"] += usage.get("cache_creation_input_tokens", 0)
    return tools, totals


@pytest.mark.parametrize("name", ["agentcmd-full-session-four.jsonl", "claude-ffb3ce9b-4e27-4cf1-889c-b7817ad140f3.jsonl",
                                  "claude-agent-a8713ee1a31d055b5.jsonl", "agentcmd-full-session-two.jsonl"])
def test_claude_session_tools_and_deduplicated_tokens(tx: Path, name: str) -> None:
    path = tx / "claude-session" / name
    session = load(path)
    tools, tokens = claude_reference(path)
    assert summarize(session)["tool_calls_by_name"] == dict(tools)
    assert {k: getattr(session.tokens, k) for k in tokens} == tokens


def test_claude_session_with_subagent_file_and_compaction(tx: Path) -> None:
    main = tx / "claude-session" / "claude-35b94415-dd5e-4481-b179-5ae683b817cd.jsonl"
    agent = tx / "claude-session" / "claude-agent-acompact-58860a275adabaec.jsonl"
    session = load(main)
    tools, tokens = claude_reference(main)
    _, agent_tokens = claude_reference(agent)
    assert summarize(session)["tool_calls_by_name"] == dict(tools)
    assert tools == {"Write": 64, "Bash": 27, "Read": 27, "TodoWrite": 17, "Edit": 6, "ExitPlanMode": 4,
                     "EnterPlanMode": 1}
    assert session.tokens.output == tokens["output"] + agent_tokens["output"] == 90481
    # without de-duplication (every line's usage) the output count would be far off
    naive = sum(r["message"]["usage"]["output_tokens"] for r in jsonl(main)
                if r.get("type") == "assistant" and r["message"].get("usage"))
    assert naive != tokens["output"]
    spans = events_of(session, Kind.SUBAGENT)
    assert [s.name for s in spans] == ["acompact-58860a275adabaec"]
    assert spans[0].source == agent.name and spans[0].events[0].text.startswith("Your task is to create a detailed")
    assert len(events_of(session, Kind.COMPACTION)) == 2
    assert session.events[0].text.startswith("<ide_selection>The user selected the lines 1 to 1115")
    assert session.models == ["claude-sonnet-4-6"]            # "<synthetic>" is not a model
    assert session.format_version == "2.1.59" and session.session_id == "35b94415-dd5e-4481-b179-5ae683b817cd"


def test_claude_session_named_edit_diff(tx: Path) -> None:
    session = load(tx / "claude-session" / "agentcmd-full-session-four.jsonl")
    edit = events_of(session, Kind.FILE_EDIT)[0]
    assert edit.path.endswith("apps/app/src/client/components/NavUser.tsx")
    assert "@@ -21,6 +21,24 @@" in edit.diff and "@@ -33,6 +51,7 @@" in edit.diff
    assert "+function getInitials(name: string): string {\n" in edit.diff
    assert "+  const initials = getInitials(user.name);\n" in edit.diff
    assert events_of(session, Kind.USER)[0].text.startswith("<command-name>/clear</command-name>")
    assert session.events[0].kind is Kind.SYSTEM and session.events[0].text.startswith("Caveat:")  # isMeta
    assert session.complete


def test_claude_session_first_prompt_and_write_as_creation(tx: Path) -> None:
    session = load(tx / "claude-session" / "claude-1e75cbed-074d-49db-862f-41e8be13a9e0.jsonl")
    users = events_of(session, Kind.USER)
    assert users[0].text.startswith("Implement the following plan:\n\n# Torre Swipe")
    # a resumed session begins with a record of the previous one; the id is the session's own
    assert session.session_id == "1e75cbed-074d-49db-862f-41e8be13a9e0"
    assert not events_of(session, Kind.SUBAGENT)
    (edit,) = events_of(session, Kind.FILE_EDIT)
    assert edit.path.endswith("/SPEC.md") and edit.diff.startswith("--- /dev/null\n+++ b/")
    errors = [e for e in events_of(session, Kind.TOOL_RESULT) if e.is_error]
    assert "exceeds maximum allowed size" in errors[0].output


def test_claude_stream(tx: Path) -> None:
    path = tx / "claude-stream" / "claude-stream-json-simple.jsonl"
    session = load(path)
    records = jsonl(path)
    tools, _ = claude_reference(path)
    assert summarize(session)["tool_calls_by_name"] == dict(tools)
    result = records[-1]
    assert session.complete and session.cost_usd == pytest.approx(result["total_cost_usd"])
    assert not session.cost_is_estimate
    assert session.duration_s == pytest.approx(result["duration_ms"] / 1000)
    per_model = result["modelUsage"].values()
    assert session.tokens.output == sum(m["outputTokens"] for m in per_model)
    assert session.format_version == "2.0.25"
    subagent_calls = sum(1 for r in records if r.get("parent_tool_use_id") and r["type"] == "assistant"
                         for b in r["message"]["content"] if b["type"] == "tool_use")
    in_spans = sum(1 for s in events_of(session, Kind.SUBAGENT) for e in s.events if e.kind is Kind.TOOL_CALL)
    assert in_spans == subagent_calls == 13


def test_claude_stream_without_result_is_incomplete(tx: Path, tmp_path: Path) -> None:
    lines = (tx / "claude-stream" / "claude-stream-json-simple.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")
    session = load(cut)
    assert not session.complete and session.cost_usd != pytest.approx(0.21085415)


# ---------------------------------------------------------------------------------------------- Codex

def codex_reference(path: Path) -> tuple[Counter, dict]:
    tools: Counter = Counter()
    last_total = None
    for record in jsonl(path):
        payload = record.get("payload") or {}
        if record["type"] == "response_item" and payload.get("type") in ("function_call", "custom_tool_call"):
            tools[payload["name"]] += 1
        if payload.get("type") == "token_count" and payload.get("info"):
            last_total = payload["info"]["total_token_usage"]
    return tools, last_total


@pytest.mark.parametrize("name", [
    "codex-rollout-2026-02-26T14-55-16-019c9b17-3a1b-7f72-99f4-fbc8348da5a8.jsonl",
    "codex-rollout-2026-02-26T16-35-55-019c9b73-606c-75e1-a986-6d5b8b99ef2e.jsonl",
    "rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
])
def test_codex_rollout_tools_and_tokens(tx: Path, name: str) -> None:
    path = tx / "codex-rollout" / name
    session = load(path)
    tools, total = codex_reference(path)
    assert summarize(session)["tool_calls_by_name"] == dict(tools)
    assert session.tokens.cache_read == total["cached_input_tokens"]
    assert session.tokens.input == total["input_tokens"] - total["cached_input_tokens"]
    assert session.tokens.output == total["output_tokens"]
    assert session.tokens.reasoning == total["reasoning_output_tokens"]


def test_codex_rollout_counter_restart_is_summed(tx: Path) -> None:
    session = load(tx / "codex-rollout" / "rollout-2025-09-25T08-02-05-0199812e-64f0-7f73-91fc-095dda01c36e.jsonl")
    # verified by hand: the cumulative counter reaches 1,355,071 input (1,307,776 cached) / 8,337 output,
    # then restarts and ends at 37,208 input (2,432 cached) / 335 output
    assert session.tokens.input == (1_355_071 - 1_307_776) + (37_208 - 2_432)
    assert session.tokens.cache_read == 1_307_776 + 2_432
    assert session.tokens.output == 8_337 + 335


def test_codex_040_shell_and_heredoc_patch(tx: Path) -> None:
    session = load(tx / "codex-rollout" / "rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl")
    assert session.format_version == "0.40.0" and session.models == ["gpt-5-codex"]
    users = events_of(session, Kind.USER)
    assert users[0].text.startswith("# Context from my IDE setup:")
    assert len(users) == 13                                  # no twin from the response_item copy
    edit = events_of(session, Kind.FILE_EDIT)[0]
    assert edit.path == "apps/spectora-labs/src/domain/teams/services/getTeamsWithStats.ts"
    assert "-    const teamsWithStats: TeamWithStats[] = teams.map(team => {\n" in edit.diff
    results = events_of(session, Kind.TOOL_RESULT)
    assert all(r.exit_code is not None or r.is_error for r in results if r.name == "shell")
    assert sum(1 for r in results if r.output == "patch rejected by user" and r.is_error) == 2
    assert any(r.exit_code not in (0, None) and r.is_error for r in results)
    assert not session.complete                               # the last turn was aborted
    assert any(e.record_type == "turn_aborted" for e in session.events)


def test_codex_0104_exec_command_and_apply_patch(tx: Path) -> None:
    session = load(tx / "codex-rollout" / "codex-rollout-2026-02-26T15-17-34-019c9b2b-a332-78f3-8bc1-206aefff157c.jsonl")
    assert session.format_version == "0.104.0-alpha.1" and session.complete
    result = events_of(session, Kind.TOOL_RESULT)[0]
    assert result.exit_code == 0 and result.output.startswith("9:## Architecture")   # header stripped
    (edit,) = events_of(session, Kind.FILE_EDIT)
    assert edit.path == "/Users/agurodriguez/Code/torre-ca/README.md"
    assert "+```mermaid\n" in edit.diff and "-torre-ca/ (monorepo — pnpm workspaces + Turborepo)\n" in edit.diff
    thinking = [e.text for e in events_of(session, Kind.THINKING)]
    assert len(thinking) == len(set(thinking))               # reasoning twins shown once


def test_codex_exec(tx: Path) -> None:
    five = load(tx / "codex-exec" / "stream-output-5.jsonl")
    assert five.complete and summarize(five)["tool_calls_by_name"] == {"shell": 1}
    result = events_of(five, Kind.TOOL_RESULT)[0]
    assert result.exit_code == 0 and "hello.txt" in result.output
    assert (five.tokens.input, five.tokens.cache_read, five.tokens.output) == (6086 - 2944, 2944, 223)
    three = load(tx / "codex-exec" / "stream-output-3.jsonl")
    assert [e.path for e in events_of(three, Kind.FILE_EDIT)] == ["/private/tmp/codex-research-test/hello.txt"]
    multi = load(tx / "codex-exec" / "stream-output-multi-1.jsonl")
    assert not multi.complete and multi.session_id == "019a2d7b-c0ed-75a0-8908-de832785d47f"


# ---------------------------------------------------------------------------------------------- opencode

@pytest.mark.parametrize("name", ["session__hidden-moon__ses_39b583141ffe5xDtTd3Mc1wh0o.json",
                                  "session__silent-nebula__ses_39b2e52e8ffeokU5mBDCeUvc8t.json",
                                  "session__jolly-eagle__ses_39b5d713cffeRgAoxPIwS3Plus.json"])
def test_opencode_export(tx: Path, name: str) -> None:
    path = tx / "opencode-export" / name
    doc = json.loads(path.read_text())
    session = load(path)
    tools = Counter(p["tool"] for m in doc["messages"] for p in m["parts"] if p["type"] == "tool")
    assert summarize(session)["tool_calls_by_name"] == dict(tools)
    tokens = [m["info"]["tokens"] for m in doc["messages"] if m["info"]["role"] == "assistant"]
    assert session.tokens.input == sum(t["input"] for t in tokens)
    assert session.tokens.output == sum(t["output"] for t in tokens)
    assert session.tokens.cache_read == sum(t["cache"]["read"] for t in tokens)
    first_user = next(p["text"] for m in doc["messages"] if m["info"]["role"] == "user"
                      for p in m["parts"] if p["type"] == "text" and not p.get("synthetic"))
    assert events_of(session, Kind.USER)[0].text == first_user
    assert session.format_version == "1.2.5" and session.models == ["gpt-5.3-codex"]


def test_opencode_named_edit_and_errors(tx: Path) -> None:
    session = load(tx / "opencode-export" / "session__silent-nebula__ses_39b2e52e8ffeokU5mBDCeUvc8t.json")
    edit = events_of(session, Kind.FILE_EDIT)[0]
    assert edit.path.endswith("scripts/export_opencode_sessions.sh.ts")
    assert "+#!/usr/bin/env bun\n" in edit.diff
    assert not session.complete                                # ends on a bash call still running
    assert any(e.record_type == "pending_tool" for e in session.events)
    aborted = load(tx / "opencode-export" / "session__clever-cabin__ses_39b5bd57fffeoHgocdtybSVa3d.json")
    assert [e.text for e in aborted.events if e.record_type == "error"] == \
        ["MessageAbortedError: The operation was aborted."]


# ---------------------------------------------------------------------------------------------- Gemini

def test_gemini_session(tx: Path) -> None:
    path = tx / "gemini-session" / "session-2025-10-27T19-55-981c87cb.json"
    doc = json.loads(path.read_text())
    session = load(path)
    calls = Counter(c["name"] for m in doc["messages"] for c in m.get("toolCalls") or [])
    assert summarize(session)["tool_calls_by_name"] == dict(calls)
    tokens = [m["tokens"] for m in doc["messages"] if m.get("tokens")]
    assert session.tokens.cache_read == sum(t["cached"] for t in tokens)
    assert session.tokens.total == sum(t["input"] + t["output"] + t["thoughts"] + t["tool"] for t in tokens)
    assert events_of(session, Kind.USER)[0].text == \
        "Can you make me an ai agent in python that I can execute built in pythin"
    edit = events_of(session, Kind.FILE_EDIT)[0]
    assert edit.path.endswith("test-project/main.py") and "+def main():\n" in edit.diff
    statuses = [e.is_error for e in events_of(session, Kind.TOOL_RESULT)]
    assert statuses.count(True) == 2                         # one cancelled, one error


def test_gemini_jsonl_variant(tx: Path, tmp_path: Path) -> None:
    """The newer JSONL layout (header, messages, $set updates) reads the same as the JSON document."""
    doc = json.loads((tx / "gemini-session" / "session-2025-10-29T10-36-9c9a14e1.json").read_text())
    header = {k: v for k, v in doc.items() if k != "messages"}
    lines = [json.dumps(header)] + [json.dumps(m) for m in doc["messages"]]
    lines.append(json.dumps({"$set": {"lastUpdated": doc["lastUpdated"]}}))
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    as_lines, as_doc = load(path), load(tx / "gemini-session" / "session-2025-10-29T10-36-9c9a14e1.json")
    assert as_lines.format == "gemini-jsonl"
    assert [(e.kind, e.text) for e in as_lines.events] == [(e.kind, e.text) for e in as_doc.events]
    assert as_lines.tokens == as_doc.tokens


# ---------------------------------------------------------------------------------------------- Kimi

def test_kimi_wire_subagent_log(tx: Path) -> None:
    path = tx / "kimi-wire" / "subagent_agent-0.jsonl"
    session = load(path)
    steps = [r["event"]["usage"] for r in jsonl(path)
             if r.get("type") == "context.append_loop_event" and r["event"]["type"] == "step.end"]
    assert session.tokens.input == sum(s["inputOther"] for s in steps) == 12905
    assert session.tokens.cache_read == sum(s["inputCacheRead"] for s in steps)
    assert summarize(session)["tool_calls_by_name"] == {"Glob": 1, "Bash": 1}
    bash = events_of(session, Kind.TOOL_RESULT)[1]
    assert bash.name == "Bash" and bash.output.strip() == "3124"
    assert events_of(session, Kind.ASSISTANT)[-1].text.startswith("**Exact count:** 3,124 Swift files")
    assert session.complete and session.format_version == "1.4"


def test_kimi_wire_cancelled_turns(tx: Path) -> None:
    session = load(tx / "kimi-wire" / "small.jsonl")
    assert [e.text for e in events_of(session, Kind.USER)] == ["hi", "stop", "hi"]
    assert sum(1 for e in session.events if e.record_type == "retry") == 11
    assert sum(1 for e in session.events if e.record_type == "turn.cancel") == 2


def test_kimi_cli_old_wire(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    records = [
        {"type": "metadata", "protocol_version": "0.3"},
        {"timestamp": 1760000000.0, "message": {"type": "TurnBegin", "payload": {"user_input": "list files"}}},
        {"timestamp": 1760000001.0, "message": {"type": "StepBegin", "payload": {"n": 1}}},
        {"timestamp": 1760000002.0, "message": {"type": "ContentPart", "payload": {"type": "think", "think": "ls"}}},
        {"timestamp": 1760000003.0, "message": {"type": "ToolCall", "payload": {
            "id": "c1", "function": {"name": "Shell", "arguments": "{\"command\": \"ls\"}"}}}},
        {"timestamp": 1760000004.0, "message": {"type": "ToolResult", "payload": {
            "tool_call_id": "c1", "return_value": {"is_error": False, "output": "a.py"}}}},
        {"timestamp": 1760000005.0, "message": {"type": "StatusUpdate", "payload": {
            "token_usage": {"input_other": 100, "output": 20, "input_cache_read": 50}}}},
        {"timestamp": 1760000006.0, "message": {"type": "ContentPart", "payload": {"type": "text", "text": "a.py"}}},
        {"timestamp": 1760000007.0, "message": {"type": "TurnEnd", "payload": {}}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    session = load(path)
    assert session.format == "kimi-cli-wire" and session.complete
    assert [e.kind for e in session.events] == [Kind.USER, Kind.THINKING, Kind.TOOL_CALL, Kind.TOOL_RESULT,
                                                Kind.ASSISTANT]
    assert session.events[2].input == {"command": "ls"}
    assert (session.tokens.input, session.tokens.output, session.tokens.cache_read) == (100, 20, 50)
    assert session.duration_s == pytest.approx(6.0)


# ---------------------------------------------------------------------------------------------- generations not in the fixtures

def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_codex_early_rollout_without_envelope(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "rollout.jsonl", [
        {"id": "0197-early", "timestamp": "2025-06-01T10:00:00Z", "instructions": None, "git": {"branch": "main"}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the test"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Reading the test**"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"bash\", \"-lc\", \"pytest -q\"]}",
         "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1",
         "output": "{\"output\": \"1 failed\", \"metadata\": {\"exit_code\": 1, \"duration_seconds\": 2.5}}"},
        {"record_type": "state"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It fails."}]},
    ])
    session = load(path)
    assert session.format == "codex-rollout" and session.session_id == "0197-early"
    assert [e.kind for e in session.events] == [Kind.USER, Kind.THINKING, Kind.TOOL_CALL, Kind.TOOL_RESULT,
                                                Kind.ASSISTANT]
    result = session.events[3]
    assert (result.exit_code, result.is_error, result.duration_s, result.output) == (1, True, 2.5, "1 failed")
    assert session.unknown_records == {} and session.ignored_records == {"state": 2}


def test_claude_inline_sidechain_becomes_a_subagent_span(tmp_path: Path) -> None:
    base = {"sessionId": "s", "cwd": "/w", "version": "1.0.80"}
    path = write_jsonl(tmp_path / "s.jsonl", [
        {**base, "type": "user", "uuid": "1", "isSidechain": False, "message": {"role": "user", "content": "go"}},
        {**base, "type": "assistant", "uuid": "2", "isSidechain": False, "requestId": "r1", "message": {
            "id": "m1", "model": "claude-opus-4-1", "content": [{"type": "tool_use", "id": "t1", "name": "Task",
                                                                 "input": {"description": "look"}}]}},
        {**base, "type": "user", "uuid": "3", "isSidechain": True, "message": {"role": "user", "content": "look"}},
        {**base, "type": "assistant", "uuid": "4", "isSidechain": True, "requestId": "r2", "message": {
            "id": "m2", "model": "claude-opus-4-1", "content": [{"type": "text", "text": "found it"}]}},
        {**base, "type": "user", "uuid": "5", "isSidechain": False, "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "found it"}]}},
        {**base, "type": "assistant", "uuid": "6", "isSidechain": False, "requestId": "r3", "message": {
            "id": "m3", "model": "claude-opus-4-1", "content": [{"type": "text", "text": "done"}]}},
    ])
    session = load(path)
    kinds = [e.kind for e in session.events]
    assert kinds == [Kind.USER, Kind.TOOL_CALL, Kind.SUBAGENT, Kind.TOOL_RESULT, Kind.ASSISTANT]
    span = session.events[2]
    assert [e.text for e in span.events] == ["look", "found it"] and session.complete
    assert [e.id for e in session.walk()] == list(range(1, 8))


def test_opencode_run_stream(tmp_path: Path) -> None:
    sid, t = "ses_x", 1771214900000
    path = write_jsonl(tmp_path / "run.jsonl", [
        {"type": "step_start", "timestamp": t, "sessionID": sid, "part": {"type": "step-start"}},
        {"type": "text", "timestamp": t + 1, "sessionID": sid, "part": {"type": "text", "text": "Looking."}},
        {"type": "tool_use", "timestamp": t + 2, "sessionID": sid, "part": {
            "type": "tool", "callID": "c1", "tool": "edit", "state": {
                "status": "completed", "input": {"filePath": "/w/a.py", "oldString": "x = 1", "newString": "x = 2"},
                "output": "ok", "time": {"start": t + 2, "end": t + 1500}}}},
        {"type": "step_finish", "timestamp": t + 1600, "sessionID": sid, "part": {
            "type": "step-finish", "reason": "stop", "cost": 0.0123,
            "tokens": {"input": 100, "output": 20, "reasoning": 5, "cache": {"read": 50, "write": 0}}}},
    ])
    session = load(path)
    assert session.format == "opencode-run" and session.complete and session.cost_usd == pytest.approx(0.0123)
    assert not session.cost_is_estimate
    (edit,) = events_of(session, Kind.FILE_EDIT)
    assert edit.path == "/w/a.py" and "-x = 1\n+x = 2\n" in edit.diff
    result = events_of(session, Kind.TOOL_RESULT)[0]
    assert result.duration_s == pytest.approx(1.498)
    assert (session.tokens.input, session.tokens.output, session.tokens.cache_read) == (100, 20, 50)


def test_cursor_stream(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "cursor.jsonl", [
        {"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/w", "session_id": "c1",
         "model": "gpt-5", "permissionMode": "default"},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "make it fast"}]}},
        {"type": "thinking", "subtype": "delta", "text": "Let me "},
        {"type": "thinking", "subtype": "delta", "text": "look."},
        {"type": "thinking", "subtype": "completed"},
        {"type": "tool_call", "subtype": "started", "call_id": "t1",
         "tool_call": {"shellToolCall": {"args": {"command": "ls"}}}},
        {"type": "tool_call", "subtype": "completed", "call_id": "t1", "tool_call": {"shellToolCall": {
            "args": {"command": "ls"}, "result": {"success": {"stdout": "a.py\n", "exitCode": 0}}}}},
        {"type": "tool_call", "subtype": "completed", "call_id": "t2", "tool_call": {"editToolCall": {
            "args": {"path": "a.py", "oldString": "x", "newString": "y"}, "result": {"success": {}}}}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234, "result": "Done."},
    ])
    session = load(path)
    assert session.format == "cursor-stream" and session.complete and session.duration_s == pytest.approx(1.234)
    assert events_of(session, Kind.THINKING)[0].text == "Let me look."
    assert summarize(session)["tool_calls_by_name"] == {"shell": 1, "edit": 1}
    assert events_of(session, Kind.TOOL_RESULT)[0].output == "a.py\n"
    assert "-x\n+y\n" in events_of(session, Kind.FILE_EDIT)[0].diff


def test_gemini_stream(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gemini.jsonl", [
        {"type": "init", "timestamp": "2025-10-29T10:00:00Z", "session_id": "g1", "model": "gemini-2.5-pro"},
        {"type": "message", "timestamp": "2025-10-29T10:00:01Z", "role": "user", "content": "read a.txt"},
        {"type": "tool_use", "timestamp": "2025-10-29T10:00:02Z", "tool_name": "read_file", "tool_id": "r1",
         "parameters": {"file_path": "a.txt"}},
        {"type": "tool_result", "timestamp": "2025-10-29T10:00:03Z", "tool_id": "r1", "status": "success",
         "output": "hello"},
        {"type": "message", "timestamp": "2025-10-29T10:00:04Z", "role": "assistant", "content": "It says ",
         "delta": True},
        {"type": "message", "timestamp": "2025-10-29T10:00:04Z", "role": "assistant", "content": "hello.",
         "delta": True},
        {"type": "result", "timestamp": "2025-10-29T10:00:05Z", "status": "success",
         "stats": {"input_tokens": 900, "output_tokens": 40, "duration_ms": 5000}},
    ])
    session = load(path)
    assert session.format == "gemini-stream" and session.complete and session.models == ["gemini-2.5-pro"]
    assert events_of(session, Kind.ASSISTANT)[0].text == "It says hello."
    assert events_of(session, Kind.TOOL_RESULT)[0].output == "hello"
    assert (session.tokens.input, session.tokens.output) == (900, 40)
