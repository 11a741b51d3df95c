"""The parsers' fast paths against the plain ones: typed decoding (msgspec records declaring only the fields read)
gives the same session as decoding every line in full with orjson on every real fixture, keeps unknown records
whole, still reads lines of other shapes and still reports bad bytes; the fast event constructor builds the same
events as the dataclass; apply_patch envelopes are found as the pattern finds them."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelbench.transcripts import Kind, load
from kernelbench.transcripts.builder import SessionBuilder
from kernelbench.transcripts.formats.codex_rollout import PATCH_RE, patch_envelopes
from kernelbench.transcripts.formats.records import ClaudeRecord, CodexRecord, claude_decode, codex_decode
from kernelbench.transcripts.model import Event, new_event

CLAUDE_USER = {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",
               "message": {"role": "user", "content": "write a kernel"}}
CODEX_META = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
              "payload": {"id": "c1", "cwd": "/w", "cli_version": "0.104.0", "timestamp": "2026-01-01T00:00:00Z",
                          "base_instructions": {"text": "long instructions"}}}


def lines(*records) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def plain_load(path: Path, monkeypatch: pytest.MonkeyPatch):
    """The session as read with every line decoded in full by orjson (the reader before typed decoding)."""
    with monkeypatch.context() as patch:
        patch.setattr(SessionBuilder, "typed_lines", lambda self, p, decode: self.lines(p))
        return load(path)


def fixture_files(tx: Path) -> list[Path]:
    return sorted(p for p in tx.glob("*/*") if p.is_file())


def test_typed_decoding_gives_the_same_session_on_every_fixture(tx: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = fixture_files(tx)
    assert len(files) >= 20
    for path in files:
        typed, plain = load(path), plain_load(path, monkeypatch)
        assert Counter(e.kind for e in typed.walk()) == Counter(e.kind for e in plain.walk()), path
        assert typed.tokens == plain.tokens, path
        assert [e.name for e in typed.walk() if e.kind is Kind.TOOL_CALL] == \
            [e.name for e in plain.walk() if e.kind is Kind.TOOL_CALL], path
        assert typed.model_dump() == plain.model_dump(), path      # everything else too: texts, raws, issues


@pytest.mark.parametrize(("folder", "decode", "shape"), [("claude-session", claude_decode, ClaudeRecord),
                                                           ("codex-rollout", codex_decode, CodexRecord)])
def test_the_typed_shape_fits_every_real_line(tx: Path, folder: str, decode, shape) -> None:
    """The fast path is the one taken on real logs (a line that does not fit falls back to the full decoding)."""
    count = 0
    for path in sorted((tx / folder).glob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            if raw.strip():
                assert isinstance(decode(raw), shape), (path.name, raw[:80])
                count += 1
    assert count > 500


def test_claude_unknown_record_type_is_kept_whole(tmp_path: Path) -> None:
    odd = {"type": "hologram", "sessionId": "s1", "uuid": "u9", "payload": {"big": "x" * 100}, "n": [1, 2]}
    path = tmp_path / "odd.jsonl"
    path.write_bytes(lines(CLAUDE_USER, odd))
    session = load(path)
    assert session.format == "claude-session"
    unknown = [e for e in session.events if e.kind is Kind.UNKNOWN]
    assert len(unknown) == 1 and unknown[0].record_type == "hologram" and unknown[0].line == 2
    assert json.loads(unknown[0].raw) == odd                  # fields the typed shape does not declare included
    assert session.unknown_records == {"hologram": 1}


def test_claude_field_of_another_json_type_is_read_from_the_full_record(tmp_path: Path) -> None:
    """`toolUseResult` as a number does not fit the typed shape: the line is read as a plain dict, not lost."""
    call = {"type": "assistant", "sessionId": "s1", "uuid": "u2", "timestamp": "2026-01-01T00:00:01Z",
            "message": {"id": "m1", "model": "claude-x", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}
    result = {"type": "user", "sessionId": "s1", "uuid": "u3", "timestamp": "2026-01-01T00:00:02Z",
              "toolUseResult": 5, "message": {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t1", "content": "a.cu"}]}}
    with pytest.raises(msgspec.ValidationError):
        claude_decode(json.dumps(result).encode())
    path = tmp_path / "shape.jsonl"
    path.write_bytes(lines(CLAUDE_USER, call, result))
    session = load(path)
    outputs = [e for e in session.events if e.kind is Kind.TOOL_RESULT]
    assert [(e.output, e.name, e.line) for e in outputs] == [("a.cu", "Bash", 3)]
    assert not session.unknown_records and not session.issue_counts


def test_claude_usage_of_any_shape_counts_as_in_the_full_record(tmp_path: Path, monkeypatch) -> None:
    """Typed usage reads four counts; odd values (a boolean, a string, a float, null, an array for the whole
    usage or message) count as they do in the plain decoding, and each response's last line counts once."""

    def answer(n: int, message_id: str | None, usage) -> dict:
        return {"type": "assistant", "sessionId": "s1", "uuid": f"a{n}", "requestId": "r1",
                "timestamp": f"2026-01-01T00:00:{n:02d}Z", "message": {
                    "id": message_id, "model": "claude-x", "usage": usage,
                    "content": [{"type": "text", "text": f"part {n}"}]}}

    usages = [{"input_tokens": 3, "output_tokens": 1, "cache_creation": {"ephemeral_5m_input_tokens": 9}},
              {"input_tokens": 3, "output_tokens": 7, "cache_read_input_tokens": 11,
               "cache_creation_input_tokens": 5, "server_tool_use": {"web_search_requests": 1}},
              {"input_tokens": True, "output_tokens": "4", "cache_read_input_tokens": 2.0},
              None, [1, 2], {"output_tokens": 13}]
    records = [answer(1, "m1", usages[0]), answer(2, "m1", usages[1]), answer(3, "m2", usages[2]),
               answer(4, "m3", usages[3]), answer(5, "m4", usages[4]), answer(6, None, usages[5]),
               {**answer(7, "m5", usages[1]), "message": ["not", "an", "object"]}]
    path = tmp_path / "usage.jsonl"
    path.write_bytes(lines(CLAUDE_USER, *records))
    typed, plain = load(path), plain_load(path, monkeypatch)
    assert typed.model_dump() == plain.model_dump()
    assert (typed.tokens.input, typed.tokens.output, typed.tokens.cache_read, typed.tokens.cache_write) == \
        (3, 7 + 13, 11, 5)


def test_invalid_utf8_is_reported_in_a_read_field_and_in_a_record_kept_raw(tmp_path: Path) -> None:
    prompt = json.dumps({**CLAUDE_USER, "message": {"role": "user", "content": "caf@"}}).encode()
    odd = json.dumps({"type": "hologram", "sessionId": "s1", "note": "na@ve"}).encode()
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(lines(prompt.replace(b"@", b"\xe9"), odd.replace(b"@", b"\xef")))
    session = load(path)
    assert session.issue_counts == {"invalid_utf8": 2}
    assert [e.text for e in session.events if e.kind is Kind.USER] == ["caf\ufffd"]
    kept = [e for e in session.events if e.kind is Kind.UNKNOWN]
    assert len(kept) == 1 and json.loads(kept[0].raw)["note"] == "na\ufffdve"


def test_codex_unknown_items_and_events_keep_their_whole_payload(tmp_path: Path) -> None:
    item = {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
            "payload": {"type": "hologram_call", "extra": {"deep": [1, 2, 3]}, "call_id": "h1"}}
    event = {"timestamp": "2026-01-01T00:00:02Z", "type": "event_msg",
             "payload": {"type": "hologram_event", "images": ["data:x"], "message": "hi"}}
    record = {"timestamp": "2026-01-01T00:00:03Z", "type": "hologram_record", "payload": {"rate_limits": {"a": 1}}}
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(lines(CODEX_META, item, event, record))
    session = load(path)
    assert session.format == "codex-rollout" and session.format_version == "0.104.0"
    kept = {e.record_type: json.loads(e.raw) for e in session.events if e.kind is Kind.UNKNOWN}
    assert kept == {"response_item:hologram_call": item["payload"], "event_msg:hologram_event": event["payload"],
                    "hologram_record": record}


def test_codex_encrypted_reasoning_is_measured_without_being_decoded(tmp_path: Path) -> None:
    secret = "gAAAA" + "QUJD" * 300
    reasoning = {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
                 "payload": {"type": "reasoning", "summary": [], "content": None, "encrypted_content": secret}}
    escaped = {**reasoning, "payload": {**reasoning["payload"], "encrypted_content": "a\"b"}}
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(lines(CODEX_META, reasoning, escaped))
    thinking = [e.text for e in load(path).events if e.kind is Kind.THINKING]
    assert thinking == [f"(encrypted reasoning, {len(secret)} characters)", "(encrypted reasoning, 3 characters)"]


def test_new_event_sets_every_field_as_the_dataclass_does() -> None:
    """The parsers' fast constructor names every field of `Event` (a field added to one and not the other
    fails here) and gives the same event."""
    names = [f.name for f in dataclasses.fields(Event) if f.name not in ("id", "kind")]
    assert list(inspect.signature(new_event).parameters) == ["kind", *names]
    for kind in Kind:
        assert new_event(kind) == Event(kind=kind)
    values = {name: f"value of {name}" for name in names}
    assert new_event(Kind.TOOL_CALL, **values) == Event(kind=Kind.TOOL_CALL, **values)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["*** Begin Patch", "*** End Patch", "\n", "a", "*", "***", " "]), max_size=12))
def test_patch_envelopes_match_what_the_pattern_matches(tokens: list[str]) -> None:
    source = "".join(tokens)
    assert list(patch_envelopes(source)) == [m.group(0) for m in PATCH_RE.finditer(source)]
