"""One bad record, one visible oddity: each record shape the fuzz suite found to trip a parser (an array or an
object where an id or a type goes, text or `true` where a count or a cost goes, null where a payload goes) is put
between good records of its format. The good records must parse exactly as without it, and the bad one must be
shown: kept raw as an unknown event saying why it was not read, or read with the odd value reported as an issue
on its line. None may make the parser give up on the whole log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelbench.transcripts import load
from kernelbench.transcripts.model import Kind

TS = "2026-01-01T00:00:00Z"
MS = 1767225600000
SHELL = {"command": "make"}

# a small good log per format, and the index at which the bad record goes
GOOD: dict[str, tuple[list[dict], int]] = {
    "claude-session": ([
        {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": TS, "version": "2.1.0",
         "message": {"role": "user", "content": "write a kernel"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u2", "timestamp": TS, "requestId": "r1",
         "message": {"id": "m1", "model": "claude-opus-4-7", "role": "assistant",
                     "content": [{"type": "text", "text": "done"}], "usage": {"input_tokens": 10, "output_tokens": 5}}},
    ], 1),
    "claude-stream": ([
        {"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-opus-4-7", "tools": ["Bash"]},
        {"type": "assistant", "parent_tool_use_id": None, "session_id": "s1", "message": {
            "id": "m1", "content": [{"type": "text", "text": "done"}], "usage": {"input_tokens": 4}}},
    ], 1),
    "codex-rollout": ([
        {"timestamp": TS, "type": "session_meta", "payload": {"id": "s1", "cwd": "/w", "cli_version": "0.104.0"}},
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "user_message", "message": "write a kernel"}},
        {"timestamp": TS, "type": "event_msg", "payload": {"type": "agent_message", "message": "done"}},
    ], 2),
    "cursor-stream": ([
        {"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/w", "session_id": "s1",
         "model": "gpt-5"},
        {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "write a kernel"}]},
         "session_id": "s1"},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
         "session_id": "s1"},
    ], 2),
    "opencode-run": ([
        {"type": "step_start", "timestamp": MS, "sessionID": "s1", "part": {"type": "step-start"}},
        {"type": "text", "timestamp": MS + 1000, "sessionID": "s1", "part": {"type": "text", "text": "done"}},
    ], 1),
    "gemini-stream": ([
        {"type": "init", "session_id": "s1", "model": "gemini-2.5-pro", "timestamp": TS},
        {"type": "message", "role": "user", "content": "write a kernel", "timestamp": TS},
    ], 2),
    "kimi-wire": ([
        {"type": "metadata", "protocol_version": "1.4", "time": MS},
        {"type": "turn.prompt", "time": MS, "input": "write a kernel"},
    ], 2),
}

# (name, format, bad record, how it shows: "raw" = an unknown event saying why; an issue kind = read, and that
# issue names its line)
CASES = [
    ("claude: a tool call id that is an array", "claude-session",
     {"type": "assistant", "sessionId": "s1", "uuid": "u9", "timestamp": TS, "message": {
         "id": "m9", "role": "assistant", "content": [{"type": "tool_use", "id": ["t1"], "name": "Bash",
                                                       "input": SHELL}]}}, "bad_number"),
    ("claude: a response id that is an object", "claude-session",
     {"type": "assistant", "sessionId": "s1", "uuid": "u9", "timestamp": TS, "requestId": ["r"], "message": {
         "id": {"x": 1}, "role": "assistant", "content": [{"type": "text", "text": "hm"}],
         "usage": {"input_tokens": "many"}}}, "bad_number"),
    ("claude: a token count that is text", "claude-session",
     {"type": "assistant", "sessionId": "s1", "uuid": "u9", "timestamp": TS, "requestId": "r9", "message": {
         "id": "m9", "role": "assistant", "content": [{"type": "text", "text": "hm"}],
         "usage": {"input_tokens": "many"}}}, "bad_number"),
    ("claude stream: a parent tool id that is an array", "claude-stream",
     {"type": "user", "parent_tool_use_id": ["t1"], "session_id": "s1", "message": {"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}, "bad_number"),
    ("claude stream: a cost that is text", "claude-stream",
     {"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": "free"}, "raw"),
    ("codex: an event type that is an array", "codex-rollout",
     {"timestamp": TS, "type": "event_msg", "payload": {"type": ["user_message"], "message": "x"}}, "raw"),
    ("codex: a call id that is an array", "codex-rollout",
     {"timestamp": TS, "type": "response_item", "payload": {"type": "function_call_output", "call_id": ["c1"],
                                                           "output": "ok"}}, "bad_number"),
    ("codex: a token count that is text", "codex-rollout",
     {"timestamp": TS, "type": "event_msg", "payload": {"type": "token_count", "info": {
         "total_token_usage": {"input_tokens": "many", "output_tokens": 3}}}}, "raw"),
    ("codex: a payload that is null", "codex-rollout", {"timestamp": TS, "type": "response_item", "payload": None},
     "unknown"),
    ("codex: a bare record that is no envelope", "codex-rollout", {"type": None, "record_type": ["state"]},
     "unknown"),
    ("cursor: a token count that is text", "cursor-stream",
     {"type": "result", "subtype": "success", "is_error": False, "session_id": "s1",
      "usage": {"inputTokens": "abc", "outputTokens": 3}}, "raw"),
    ("cursor: a call id that is an array", "cursor-stream",
     {"type": "tool_call", "subtype": "completed", "call_id": ["c1"], "session_id": "s1",
      "tool_call": {"shellToolCall": {"args": SHELL, "result": {"success": {"stdout": "ok", "exitCode": 0}}}}},
     "bad_number"),
    ("opencode: a cost that is text", "opencode-run",
     {"type": "step_finish", "timestamp": MS + 2000, "sessionID": "s1", "part": {
         "type": "step-finish", "reason": "stop", "cost": "free", "tokens": {"input": 1, "output": 1}}}, "raw"),
    ("gemini: a token count that is true", "gemini-stream",
     {"type": "result", "status": "success", "stats": {"input_tokens": 5, "cached": True}}, "raw"),
    ("kimi: a token count that is text", "kimi-wire",
     {"type": "context.append_loop_event", "time": MS + 1, "event": {"type": "step.end", "usage": {
         "inputOther": 1, "output": "many"}}}, "raw"),
]


def write_log(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def shape(events) -> list[tuple]:
    """The events as the viewer lists them; subagent spans are left out, since a record with a parent id that
    names no call (an array names none) opens one around the records that follow, as an unknown parent id does."""
    return [(e.kind, e.text, e.name) for e in events if e.kind is not Kind.SUBAGENT]


@pytest.mark.parametrize(("fmt", "bad", "shown"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_one_bad_record_is_shown_and_the_rest_parses(fmt, bad, shown, tmp_path):
    good, at = GOOD[fmt]
    clean = load(write_log(tmp_path / "good.jsonl", good))
    session = load(write_log(tmp_path / "bad.jsonl", good[:at] + [bad] + good[at:]))
    bad_line = at + 1

    assert session.format == fmt and clean.format == fmt
    assert "parser_failed" not in session.issue_counts, session.issues
    # the good records read as they do alone (their events in order; line numbers past the bad one shift by one)
    around = [e for e in session.walk() if e.line != bad_line]
    assert shape(around) == shape(clean.walk())
    on_line = [e for e in session.walk() if e.line == bad_line]
    if shown == "raw":
        assert [e.kind for e in on_line][-1] is Kind.UNKNOWN
        assert on_line[-1].text.startswith("Not read: ") and on_line[-1].raw
        assert any(i.kind == "unreadable_record" and i.line == bad_line for i in session.issues)
    elif shown == "unknown":
        assert [e.kind for e in on_line] == [Kind.UNKNOWN] and on_line[0].raw
    else:
        assert on_line and all(e.kind is not Kind.UNKNOWN for e in on_line)
        assert session.issue_counts.get(shown), session.issues


def test_a_record_with_an_unreadable_value_keeps_every_field(tmp_path):
    """The raw copy of a typed record holds the whole line, not only the fields the parser decoded."""
    good, at = GOOD["codex-rollout"]
    bad = {"timestamp": TS, "type": "event_msg", "payload": {"type": ["user_message"], "message": "x"},
           "extra": {"kept": [1, 2, 3]}}
    session = load(write_log(tmp_path / "bad.jsonl", good[:at] + [bad] + good[at:]))
    unknown = next(e for e in session.walk() if e.kind is Kind.UNKNOWN)
    assert json.loads(unknown.raw) == bad


@pytest.mark.parametrize("junk", ["1e999", '"\\ud800"'], ids=["a number beyond the float range", "a lone surrogate"])
def test_a_line_that_is_json_only_where_the_typed_decoding_looked_is_kept_as_its_text(junk, tmp_path):
    """The rollout parser decodes the fields it reads; a bare record whose other fields are no JSON once read in
    full (the whole line is needed to re-shape a bare record) is kept as the line's text, and the rest parses."""
    good, _ = GOOD["codex-rollout"]
    line = f'{{"type": "message", "junk": {junk}}}'
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in good) + line + "\n")
    session = load(path)
    assert session.format == "codex-rollout" and "parser_failed" not in session.issue_counts
    assert [e.kind for e in session.walk()] == [Kind.USER, Kind.ASSISTANT, Kind.UNKNOWN]
    assert session.events[-1].raw == line and session.issues[-1].line == 4
