"""Small, valid transcripts of every supported format, written for the fuzz suite from the documented layouts
(../shared/docs/transcript-formats.md): the fuzzer mutates them record by record. Where the real fixtures sit
beside the checkout, the heads of the real files are added as seeds too (see `real_seeds`)."""

from __future__ import annotations

import json
from pathlib import Path

TS = "2026-01-01T00:00:00Z"
CALL = {"command": "nvcc -O3 kernel.cu"}

LINE_SEEDS: dict[str, list[dict]] = {
    "claude-session": [
        {"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": None, "timestamp": TS, "cwd": "/w",
         "version": "2.1.0", "message": {"role": "user", "content": "write a kernel"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u2", "parentUuid": "u1", "timestamp": TS,
         "requestId": "r1", "message": {"id": "m1", "model": "claude-opus-4-7", "role": "assistant",
                                        "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": CALL}],
                                        "usage": {"input_tokens": 10, "output_tokens": 5,
                                                  "cache_read_input_tokens": 3}}},
        {"type": "user", "sessionId": "s1", "uuid": "u3", "parentUuid": "u2", "timestamp": TS,
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok",
                                                  "is_error": False}]},
         "toolUseResult": {"stdout": "ok", "stderr": "", "interrupted": False}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u4", "parentUuid": "u3", "timestamp": TS,
         "requestId": "r2", "message": {"id": "m2", "model": "claude-opus-4-7", "role": "assistant",
                                        "content": [{"type": "text", "text": "done"}],
                                        "usage": {"input_tokens": 12, "output_tokens": 2}}},
        {"type": "system", "subtype": "turn_duration", "sessionId": "s1", "uuid": "u5", "durationMs": 5000},
    ],
    "claude-stream": [
        {"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/w", "model": "claude-opus-4-7",
         "tools": ["Bash"], "claude_code_version": "2.0.25"},
        {"type": "assistant", "parent_tool_use_id": None, "session_id": "s1",
         "message": {"id": "m1", "model": "claude-opus-4-7", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": CALL}], "usage": {"input_tokens": 4}}},
        {"type": "user", "parent_tool_use_id": None, "session_id": "s1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}]}},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200, "num_turns": 2,
         "result": "done", "total_cost_usd": 0.12, "usage": {"input_tokens": 4, "output_tokens": 9}},
    ],
    "codex-rollout": [
        {"timestamp": TS, "type": "session_meta", "payload": {"id": "s1", "cwd": "/w", "originator": "codex_cli",
                                                              "cli_version": "0.104.0", "model_provider": "openai"}},
        {"timestamp": TS, "type": "turn_context", "payload": {"model": "gpt-5.5", "effort": "high", "cwd": "/w"}},
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "user_message", "message": "write a kernel"}},
        {"timestamp": TS, "type": "response_item", "payload": {
            "type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "make"}),
            "call_id": "c1"}},
        {"timestamp": TS, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "c1", "output": "Process exited with code 0\nok"}},
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 100, "cached_input_tokens": 20, "output_tokens": 30,
                                  "reasoning_output_tokens": 5},
            "last_token_usage": {"input_tokens": 100, "output_tokens": 30}}}},
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "task_complete"}},
    ],
    "codex-exec": [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i1", "type": "agent_message", "text": "looking"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "command_execution", "command": "make",
                                            "aggregated_output": "ok", "exit_code": 0, "status": "completed"}},
        {"type": "item.completed", "item": {"id": "i3", "type": "file_change", "changes": [
            {"path": "kernel.cu", "kind": "update"}]}},
        {"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 10, "output_tokens": 7}},
    ],
    "opencode-run": [
        {"type": "step_start", "timestamp": 1767225600000, "sessionID": "s1", "part": {"type": "step-start"}},
        {"type": "tool_use", "timestamp": 1767225601000, "sessionID": "s1", "part": {
            "type": "tool", "callID": "c1", "tool": "bash", "state": {
                "status": "completed", "input": CALL, "output": "ok", "time": {"start": 1767225601000,
                                                                            "end": 1767225602000}}}},
        {"type": "text", "timestamp": 1767225603000, "sessionID": "s1", "part": {"type": "text", "text": "done"}},
        {"type": "step_finish", "timestamp": 1767225604000, "sessionID": "s1", "part": {
            "type": "step-finish", "reason": "stop", "cost": 0.01,
            "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 1, "write": 0}}}},
    ],
    "gemini-stream": [
        {"type": "init", "session_id": "s1", "model": "gemini-2.5-pro", "timestamp": TS},
        {"type": "message", "role": "user", "content": "write a kernel", "timestamp": TS},
        {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "c1", "parameters": CALL,
         "timestamp": TS},
        {"type": "tool_result", "tool_id": "c1", "status": "success", "output": "ok", "timestamp": TS},
        {"type": "result", "status": "success", "stats": {"total_tokens": 20, "input_tokens": 15,
                                                          "output_tokens": 5, "duration_ms": 900}},
    ],
    "gemini-jsonl": [
        {"sessionId": "s1", "projectHash": "abc", "startTime": TS, "lastUpdated": TS},
        {"id": "m1", "timestamp": TS, "type": "user", "content": "write a kernel"},
        {"id": "m2", "timestamp": TS, "type": "gemini", "content": "sure", "model": "gemini-2.5-pro",
         "tokens": {"input": 10, "output": 4, "cached": 0, "thoughts": 1, "tool": 0, "total": 15},
         "toolCalls": [{"id": "c1", "name": "run_shell_command", "args": CALL, "result": "ok",
                        "status": "success"}]},
        {"$set": {"lastUpdated": TS}},
    ],
    "kimi-wire": [
        {"type": "metadata", "protocol_version": "1.4", "time": 1767225600000},
        {"type": "turn.prompt", "time": 1767225600000, "input": "write a kernel"},
        {"type": "llm.request", "time": 1767225600100, "model": "kimi-k2.6"},
        {"type": "context.append_loop_event", "time": 1767225600200, "event": {
            "type": "tool.call", "toolCallId": "c1", "name": "Shell", "args": CALL}},
        {"type": "context.append_loop_event", "time": 1767225600300, "event": {
            "type": "tool.result", "toolCallId": "c1", "result": {"output": "ok"}}},
        {"type": "context.append_loop_event", "time": 1767225600400, "event": {
            "type": "step.end", "usage": {"inputOther": 10, "output": 4, "inputCacheRead": 2,
                                          "inputCacheCreation": 0}}},
        {"type": "usage.record", "time": 1767225600500, "usage": {"input": 10, "output": 4}},
    ],
    "kimi-cli-wire": [
        {"type": "metadata", "protocol_version": "1.0"},
        {"timestamp": 1767225600.0, "message": {"type": "TurnBegin", "payload": {"user_input": "write a kernel"}}},
        {"timestamp": 1767225600.1, "message": {"type": "StepBegin", "payload": {"n": 1}}},
        {"timestamp": 1767225600.2, "message": {"type": "ToolCall", "payload": {
            "id": "c1", "function": {"name": "Shell", "arguments": json.dumps(CALL)}}}},
        {"timestamp": 1767225600.3, "message": {"type": "ToolResult", "payload": {
            "tool_call_id": "c1", "return_value": {"output": "ok", "is_error": False}}}},
        {"timestamp": 1767225600.4, "message": {"type": "StatusUpdate", "payload": {
            "token_usage": {"input_other": 10, "output": 3}}}},
        {"timestamp": 1767225600.5, "message": {"type": "TurnEnd", "payload": {}}},
    ],
    "cursor-stream": [
        {"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/w", "session_id": "s1",
         "model": "gpt-5"},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "write a kernel"}]},
         "session_id": "s1"},
        {"type": "thinking", "subtype": "delta", "text": "hmm", "session_id": "s1"},
        {"type": "tool_call", "subtype": "started", "call_id": "c1", "tool_call": {
            "shellToolCall": {"args": CALL}}, "session_id": "s1"},
        {"type": "tool_call", "subtype": "completed", "call_id": "c1", "tool_call": {
            "shellToolCall": {"args": CALL, "result": {"success": {"stdout": "ok", "exitCode": 0}}}},
         "session_id": "s1"},
        {"type": "result", "subtype": "success", "duration_ms": 900, "is_error": False, "session_id": "s1",
         "usage": {"inputTokens": 10, "outputTokens": 3}},
    ],
    "normalized": [
        {"type": "kernelbench-session", "version": 1, "harness": "scripted", "model": "none", "session_id": "s1",
         "cwd": "/w", "ts": 1767225600.0},
        {"type": "event", "kind": "user", "ts": 1767225600.0, "text": "write a kernel"},
        {"type": "event", "kind": "tool_call", "ts": 1767225601.0, "name": "Bash", "input": CALL,
         "call_id": "call-1"},
        {"type": "event", "kind": "tool_result", "ts": 1767225602.0, "call_id": "call-1", "output": "ok",
         "is_error": False, "exit_code": 0},
        {"type": "usage", "input": 10, "output": 4, "cache_read": 0, "cache_write": 0, "reasoning": 0},
        {"type": "end", "complete": True, "ts": 1767225603.0, "tokens": {"input": 10, "output": 4},
         "cost_usd": 0.01, "final_message": "done"},
    ],
}

DOCUMENT_SEEDS: dict[str, dict] = {
    "opencode-export": {
        "info": {"id": "s1", "title": "kernel", "version": "1.2.5", "directory": "/w",
                 "time": {"created": 1767225600000, "updated": 1767225609000}},
        "messages": [
            {"info": {"id": "m1", "role": "user", "time": {"created": 1767225600000}},
             "parts": [{"type": "text", "text": "write a kernel"}]},
            {"info": {"id": "m2", "role": "assistant", "modelID": "claude-opus-4-7", "providerID": "anthropic",
                      "cost": 0.02, "tokens": {"input": 10, "output": 5, "reasoning": 0,
                                                "cache": {"read": 1, "write": 0}},
                      "time": {"created": 1767225601000, "completed": 1767225605000}},
             "parts": [{"type": "step-start"},
                       {"type": "tool", "callID": "c1", "tool": "edit", "state": {
                           "status": "completed", "input": {"filePath": "k.cu", "oldString": "a", "newString": "b"},
                           "output": "ok", "time": {"start": 1767225602000, "end": 1767225603000}}},
                       {"type": "step-finish", "cost": 0.02, "tokens": {"input": 10, "output": 5}}]},
        ],
    },
    "gemini-session": {
        "sessionId": "s1", "projectHash": "abc", "startTime": TS, "lastUpdated": TS,
        "messages": [
            {"id": "m1", "timestamp": TS, "type": "user", "content": "write a kernel"},
            {"id": "m2", "timestamp": TS, "type": "gemini", "content": "sure", "model": "gemini-2.5-pro",
             "thoughts": [{"subject": "plan", "description": "tile it"}],
             "tokens": {"input": 10, "output": 4, "cached": 0, "thoughts": 1, "tool": 0, "total": 15},
             "toolCalls": [{"id": "c1", "name": "run_shell_command", "args": CALL, "result": "ok",
                            "status": "success"}]},
        ],
    },
}

# the real fixture folders whose files hold each format (a file's first records become a seed)
REAL_FOLDERS = {"claude-session": "claude-session", "claude-stream": "claude-stream",
                "codex-rollout": "codex-rollout", "codex-exec": "codex-exec", "kimi-wire": "kimi-wire"}


def real_seeds(fixtures: Path, records: int = 40) -> dict[str, list[dict]]:
    """The first records of one real file per line format, where the fixtures are present."""
    seeds: dict[str, list[dict]] = {}
    for fmt, folder in REAL_FOLDERS.items():
        files = sorted((fixtures / "transcripts" / folder).glob("*.jsonl"))
        if not files:
            continue
        lines = files[0].read_text(encoding="utf-8", errors="replace").splitlines()
        loaded = []
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                loaded.append(value)
            if len(loaded) >= records:
                break
        seeds[f"real-{fmt}"] = loaded
    return seeds
