"""Broken and odd input: parsed around, counted, shown — never a crash, never silent loss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelbench.errors import KernelBenchError
from kernelbench.transcripts import Kind, load

CLAUDE_USER = {"type": "user", "sessionId": "s1", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",
               "message": {"role": "user", "content": "write a kernel"}}
CLAUDE_CALL = {"type": "assistant", "sessionId": "s1", "uuid": "u2", "timestamp": "2026-01-01T00:00:05Z",
               "requestId": "r1", "message": {"id": "m1", "model": "claude-sonnet-4-5", "content": [
                   {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "nvcc -O3 k.cu"}}],
                   "usage": {"input_tokens": 10, "output_tokens": 5}}}


def lines(*records) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)


def test_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(lines(CLAUDE_USER, CLAUDE_CALL) + b'{"type": "assistant", "message": {"id": "m2", "con')
    session = load(path)
    assert session.format == "claude-session"
    assert session.issue_counts == {"truncated_last_line": 1}
    assert session.unknown_records == {"<truncated_last_line>": 1}
    kept = session.events[-1]
    assert kept.kind is Kind.UNKNOWN and kept.line == 3 and kept.raw.startswith('{"type": "assistant"')
    assert not session.complete


def test_invalid_utf8_is_replaced_and_reported(tmp_path: Path) -> None:
    record = json.dumps({**CLAUDE_USER, "message": {"role": "user", "content": "caf\u00e9"}}).encode()
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(lines(record.replace("\u00e9".encode(), b"\xe9").replace(b"\\u00e9", b"\xe9"), CLAUDE_CALL))
    session = load(path)
    assert session.issue_counts == {"invalid_utf8": 1}
    assert session.events[0].text == "caf\ufffd"


def test_banner_bom_crlf_and_non_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "banner.jsonl"
    body = lines(b"Starting agent v1.2 ...", CLAUDE_USER, b"not json at all", CLAUDE_CALL).replace(b"\n", b"\r\n")
    path.write_bytes(b"\xef\xbb\xbf" + body)
    session = load(path)
    assert session.format == "claude-session"
    assert session.issue_counts == {"bad_json": 2}
    assert session.unknown_records == {"<bad_json>": 2}
    assert [e.kind for e in session.events] == [Kind.UNKNOWN, Kind.USER, Kind.UNKNOWN, Kind.TOOL_CALL]
    assert session.events[0].raw == "Starting agent v1.2 ..."


def test_unknown_record_type_is_kept_visible(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    future = {"type": "hologram", "sessionId": "s1", "payload": {"x": 1}}
    path.write_bytes(lines(CLAUDE_USER, future, CLAUDE_CALL))
    session = load(path)
    assert session.unknown_records == {"hologram": 1}
    (unknown,) = [e for e in session.events if e.kind is Kind.UNKNOWN]
    assert json.loads(unknown.raw) == future and unknown.line == 2


def test_orphan_tool_result(tmp_path: Path) -> None:
    orphan = {"type": "user", "sessionId": "s1", "uuid": "u3", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "never-called", "content": "output", "is_error": False}]}}
    path = tmp_path / "orphan.jsonl"
    path.write_bytes(lines(CLAUDE_USER, orphan))
    session = load(path)
    assert session.issue_counts == {"orphan_result": 1}
    result = session.events[-1]
    assert result.kind is Kind.TOOL_RESULT and result.output == "output" and result.call_id == "never-called"


def test_empty_and_blank_files(tmp_path: Path) -> None:
    for name, data in (("empty.jsonl", b""), ("blank.jsonl", b"\n\r\n  \n")):
        path = tmp_path / name
        path.write_bytes(data)
        session = load(path)
        assert session.format == "empty" and session.events == []
        assert session.issue_counts == {"empty_file": 1} and not session.complete


def test_unknown_format_keeps_every_record(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    path.write_bytes(lines({"kind": "x", "n": 1}, {"kind": "y", "n": 2}, [1, 2], b"garbage"))
    session = load(path)
    assert session.format == "unknown" and session.issue_counts["unknown_format"] == 1
    assert session.unknown_records == {"dict": 2, "list": 1, "<bad_json>": 1}
    assert len(session.events) == 4


def test_unknown_json_document(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"hello": "world"}, indent=2))
    session = load(path)
    assert session.format == "unknown" and session.unknown_records == {"document": 1}
    assert json.loads(session.events[0].raw) == {"hello": "world"}


def test_binary_garbage_does_not_crash(tmp_path: Path) -> None:
    path = tmp_path / "noise.bin"
    path.write_bytes(bytes(range(256)) * 40)
    session = load(path)
    assert session.format == "unknown" and sum(session.unknown_records.values()) >= 1


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KernelBenchError) as info:
        load(tmp_path / "nope.jsonl")
    assert "nope.jsonl" in str(info.value) and "session log" in str(info.value)


def test_codex_truncated_rollout_and_orphan(tx: Path, tmp_path: Path) -> None:
    source = tx / "codex-rollout" / "codex-rollout-2026-02-26T15-17-34-019c9b2b-a332-78f3-8bc1-206aefff157c.jsonl"
    data = source.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) // 2])
    session = load(cut)
    assert session.format == "codex-rollout" and not session.complete
    assert session.issue_counts.get("truncated_last_line") == 1


def test_every_fixture_survives_truncation(tx: Path, tmp_path: Path) -> None:
    """Cut each real JSON Lines fixture in the middle of a line: it still parses, and reports the cut."""
    for source in sorted(tx.glob("*/*.jsonl")):
        data = source.read_bytes()
        if len(data) < 200:
            continue
        cut = tmp_path / source.name
        cut.write_bytes(data[: int(len(data) * 0.6)])
        session = load(cut)
        assert session.format != "unknown", source
        last_newline = data[: int(len(data) * 0.6)].endswith(b"\n")
        assert last_newline or session.issue_counts.get("truncated_last_line") == 1, source
