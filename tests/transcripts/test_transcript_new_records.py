"""Record types of the pinned CLIs' current releases, read from real logs: `records/` holds a run of Codex 0.169
and one of Kimi Code 2.1 against the model stand-in (`kernelbench run --stand-in tests/harness/standin/eager.yaml`
on 04_kahan_softmax), trimmed (long texts and the CLIs' own instructions and tool descriptions left out, the
sandbox's workspace path written /w). The records that carry usage or messages are read; the others stay
visible as unknown."""

from __future__ import annotations

import json
from pathlib import Path

from kernelbench.transcripts import load
from kernelbench.transcripts.model import Kind, Usage

RECORDS = Path(__file__).parent / "records"
CODEX = RECORDS / "codex-0.169-rollout.jsonl"
KIMI = RECORDS / "kimi-code-2.1-wire.jsonl"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, kept: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in kept))
    return path


def usage_sum(rows: list[dict]) -> Usage:
    """The responses' own counts added up, read here independently of the parsers."""
    total = Usage()
    for usage in rows:
        cached = usage.get("cached_input_tokens", usage.get("inputCacheRead", 0))
        given = usage["input_tokens"] - cached if "input_tokens" in usage else usage["inputOther"]
        total.add(Usage(input=given, output=usage.get("output_tokens", usage.get("output")), cache_read=cached))
    return total


def shown(session) -> list[tuple]:
    return [(e.kind, e.text, e.call_id) for e in session.walk() if e.kind is not Kind.UNKNOWN]


# ------------------------------------------------------------------------------------------------------ codex

def test_codex_token_usage_records_count_once_beside_token_counts():
    session = load(CODEX)
    per_response = [r["payload"]["usage"] for r in records(CODEX) if r["type"] == "token_usage_record"]
    assert len(per_response) == 4
    assert session.tokens == usage_sum(per_response)
    # each response's usage on its own step: the four usages on the events are the four responses'
    assert [e.usage for e in session.walk() if e.usage is not None] == [usage_sum([u]) for u in per_response]
    assert "token_usage_record" not in session.unknown_records


def test_codex_token_usage_records_alone_or_token_counts_alone_give_the_same_totals(tmp_path):
    everything = load(CODEX)
    all_records = records(CODEX)
    only_new = [r for r in all_records if r.get("payload", {}).get("type") != "token_count"]
    only_old = [r for r in all_records if r["type"] != "token_usage_record"]
    for name, kept in (("new.jsonl", only_new), ("old.jsonl", only_old)):
        session = load(write(tmp_path / name, kept))
        assert session.tokens == everything.tokens, name
        assert [e.usage for e in session.walk() if e.usage] == [e.usage for e in everything.walk() if e.usage]


def test_codex_records_without_usage_or_messages_stay_visible_as_unknown():
    session = load(CODEX)
    assert session.format == "codex-rollout" and session.format_version == "0.169.0"
    assert session.unknown_records == {"world_state": 1, "event_msg:thread_settings_applied": 1}
    unknown = [e for e in session.walk() if e.kind is Kind.UNKNOWN]
    # the envelope's type, or the event message's own (kept as its payload)
    assert [json.loads(e.raw)["type"] for e in unknown] == ["world_state", "thread_settings_applied"]
    assert not session.issue_counts and session.complete


# ------------------------------------------------------------------------------------------------------- kimi

def test_kimi_appended_messages_are_twins_of_the_loop_events():
    """Kimi Code 2.1 writes every message again whole (`agent.message.appended`): nothing is shown twice."""
    session = load(KIMI)
    kinds = [e.kind for e in session.walk() if e.kind is not Kind.UNKNOWN]
    assert kinds.count(Kind.TOOL_CALL) == 3 and kinds.count(Kind.TOOL_RESULT) == 3
    assert kinds.count(Kind.ASSISTANT) == 4 and kinds.count(Kind.USER) == 1
    assert session.ignored_records["agent.message.appended"] == 8
    assert "agent.message.appended" not in session.unknown_records
    per_response = [r["usage"] for r in records(KIMI) if r["type"] == "usage.record"]
    assert session.tokens == usage_sum(per_response) and session.complete
    assert not session.issue_counts


def test_kimi_appended_messages_alone_give_the_conversation_and_its_usage(tmp_path):
    """Without the loop events (a writer that sends only whole messages), the appended ones are the
    conversation: the same user prompt, replies, tool calls with their arguments, results and usage."""
    everything = load(KIMI)
    kept = [r for r in records(KIMI) if r["type"] not in ("context.append_loop_event", "usage.record")]
    session = load(write(tmp_path / "messages.jsonl", kept))
    assert shown(session) == shown(everything)
    calls = [e for e in session.walk() if e.kind is Kind.TOOL_CALL]
    first = next(r for r in records(KIMI) if r["type"] == "context.append_loop_event"
                 and r["event"]["type"] == "tool.call")
    assert calls[0].input == first["event"]["args"]
    assert session.tokens == everything.tokens
    assert [e.usage for e in session.walk() if e.usage] == [e.usage for e in everything.walk() if e.usage]
    assert not any(i.kind == "orphan_result" for i in session.issues)


def test_kimi_records_without_usage_or_messages_stay_visible_as_unknown():
    session = load(KIMI)
    assert session.unknown_records == {"file_history.tracked": 1, "prompt.completed": 1,
                                       "file_history.checkpoint": 1}
