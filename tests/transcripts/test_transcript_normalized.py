"""The project's own format: the writer a scripted agent uses, and convert → load round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelbench.transcripts import Kind, NormalizedWriter, load, write_session
from kernelbench.transcripts.summary import summarize


def test_writer_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with NormalizedWriter(path, harness="scripted", model="none", session_id="s-1", cwd="/w") as log:
        log.user("write a softmax")
        log.thinking("use a two-pass kernel")
        call = log.tool_call("Bash", {"command": "nvcc -O3 kernel.cu"})
        log.tool_result(call, "ok", exit_code=0)
        log.file_edit("solution.py", "--- a/solution.py\n+++ b/solution.py\n@@ -1 +1 @@\n-x\n+y\n")
        log.assistant("done")
        log.usage(input=100, output=20, cache_read=5)
    session = load(path)
    assert session.format == "normalized" and session.complete
    assert (session.harness, session.models, session.session_id, session.cwd) == ("scripted", ["none"], "s-1", "/w")
    assert [e.kind for e in session.events] == [Kind.USER, Kind.THINKING, Kind.TOOL_CALL, Kind.TOOL_RESULT,
                                                Kind.FILE_EDIT, Kind.ASSISTANT]
    assert session.events[3].name == "Bash" and session.events[3].exit_code == 0
    assert (session.tokens.input, session.tokens.output, session.tokens.cache_read) == (100, 20, 5)
    assert session.events[-1].usage.input == 100       # the usage belongs to the response it followed
    assert session.final_message == "done"


def test_writer_leaving_through_an_exception_is_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with pytest.raises(TimeoutError), NormalizedWriter(path, harness="scripted") as log:
        log.user("go")
        raise TimeoutError("budget exhausted")
    end = json.loads(path.read_text().splitlines()[-1])
    assert end["type"] == "end" and end["complete"] is False and "TimeoutError" in end["error"]
    assert not load(path).complete


def test_killed_writer_leaves_a_readable_incomplete_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    log = NormalizedWriter(path, harness="scripted")
    log.open()
    log.user("go")
    log.tool_call("Bash", {"command": "sleep 1000"})
    # no close(): the process was killed; every line so far was flushed
    session = load(path)
    assert not session.complete and [e.kind for e in session.events] == [Kind.USER, Kind.TOOL_CALL]


@pytest.mark.parametrize("field, value", [
    ("line", "3"), ("ts", "1767225600"), ("exit_code", True), ("exit_code", 1.0), ("is_error", 1),
    ("text", 5), ("text", {"a": 1}), ("kind", "bogus"), ("usage", {"input": "10"}), ("usage", {"input": True}),
    ("usage", [1, 2]), ("events", [{"kind": "user", "text": 7}]), ("duration_s", "2"),
])
def test_an_event_of_the_wrong_types_is_kept_raw_and_the_rest_reads(tmp_path: Path, field: str,
                                                                     value: object) -> None:
    """The normalized file is read strictly: a field of the wrong type (text for a number, `true` or `1.0` for an
    integer) makes its record a visible unknown event, never a coerced value, and the records around it read."""
    path = tmp_path / "t.jsonl"
    bad = {"type": "event", "kind": "tool_result", "call_id": "c1", "output": "ok", field: value}
    records = [{"type": "kernelbench-session", "version": 1, "harness": "scripted"},
               {"type": "event", "kind": "tool_call", "name": "Bash", "call_id": "c1", "input": {"command": "ls"}},
               bad,
               {"type": "event", "kind": "assistant", "text": "done"},
               {"type": "end", "complete": True}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    session = load(path)
    kinds = [e.kind for e in session.events]
    assert kinds == [Kind.TOOL_CALL, Kind.UNKNOWN, Kind.ASSISTANT], kinds
    unknown = session.events[1]
    assert unknown.record_type == f"event:{bad['kind']}" and json.loads(unknown.raw) == bad
    assert session.complete and session.events[2].text == "done"


def test_an_event_of_the_declared_types_reads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    event = {"type": "event", "kind": "subagent", "ts": 1767225600, "name": "helper", "events": [
        {"kind": "tool_call", "name": "Bash", "call_id": "c1", "input": {"command": None, "n": [1, 2.5]},
         "usage": {"input": 3, "output": 4, "later": "ignored"}, "extra": "ignored"}]}
    path.write_text(json.dumps({"type": "kernelbench-session", "version": 1}) + "\n" + json.dumps(event) + "\n")
    span = load(path).events[0]
    assert span.kind is Kind.SUBAGENT and span.ts == 1767225600.0 and type(span.ts) is float
    inner = span.events[0]
    assert inner.input == {"command": None, "n": [1, 2.5]} and inner.usage.model_dump() == {
        "input": 3, "output": 4, "cache_read": 0, "cache_write": 0, "reasoning": 0}


@pytest.mark.parametrize("relative", [
    "claude-session/claude-35b94415-dd5e-4481-b179-5ae683b817cd.jsonl",
    "codex-rollout/rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08.jsonl",
    "opencode-export/session__quiet-meadow__ses_39c0a3da8ffeFQWvKTGUJWivpv.json",
    "gemini-session/session-2025-10-27T19-55-981c87cb.json",
    "kimi-wire/subagent_agent-0.jsonl",
    "claude-stream/claude-stream-json-simple.jsonl",
])
def test_convert_round_trip_keeps_everything(tx: Path, tmp_path: Path, relative: str) -> None:
    original = load(tx / relative)
    out = tmp_path / "n.jsonl"
    write_session(original, out)
    again = load(out)
    before, after = summarize(original), summarize(again)
    for key in ("events_by_kind", "tool_calls_by_name", "tokens", "complete", "models", "files_edited"):
        assert after[key] == before[key], key
    assert [e.model_dump(exclude={"line"}) for e in again.walk()] == \
        [e.model_dump(exclude={"line"}) for e in original.walk()]


def test_parsers_build_events_of_the_declared_types(tx: Path) -> None:
    """Events are built without validation on the parsing path: every field of every event of every fixture
    must already hold its declared type (msgspec's strict conversion, nothing coerced)."""
    import typing

    import msgspec

    from kernelbench.transcripts.model import Event, Usage

    hints = {name: hint for name, hint in typing.get_type_hints(Event).items() if name != "events"}
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert("3", hints["line"])                   # the check itself can fail
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(True, hints["exit_code"])
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(msgspec.to_builtins(Usage(input="3")), hints["usage"])
    checked = 0
    for path in sorted(p for p in tx.glob("*/*") if p.is_file()):
        for event in load(path).walk():
            for name, hint in hints.items():
                value = getattr(event, name)
                try:
                    msgspec.convert(msgspec.to_builtins(value), hint)   # (a Struct's own fields checked too)
                except msgspec.ValidationError as exc:
                    pytest.fail(f"{path.name} event {event.id} field {name}={value!r:.80}: {exc}")
            assert event.events is None or isinstance(event.events, list)
            checked += 1
    assert checked > 3_000


PLAIN_RECORDS = [
    {"kind": "user", "text": "go", "ts": 1767225600.5, "line": 2},
    {"kind": "tool_call", "name": "Bash", "call_id": "c1", "input": {"command": "ls", "n": [1, 2.5, None]}},
    {"kind": "tool_result", "call_id": "c1", "output": "ok", "is_error": False, "exit_code": 0, "duration_s": 0.25},
    {"kind": "file_edit", "path": "a.py", "diff": "-x\n+y\n", "model": "m", "source": "sub.jsonl"},
    {"kind": "unknown", "record_type": "x", "raw": "{}", "text": None, "line": None},
    {"kind": "tool_call", "input": "a string", "exit_code": 2**64 - 1},
    {"kind": "assistant", "ts": float("nan")},
]
CONVERTED_RECORDS = [  # a value msgspec converts (an integer time) or refuses, a field it builds (usage, events)
    {"kind": "user", "ts": 1767225600},
    {"kind": "tool_result", "duration_s": 2},
    {"kind": "tool_result", "exit_code": True},
    {"kind": "tool_result", "exit_code": 1.0},
    {"kind": "tool_result", "is_error": 1},
    {"kind": "user", "text": 5},
    {"kind": "bogus"},
    {"kind": ["user"]},
    {"text": "no kind"},
    {"kind": "assistant", "usage": {"input": 3}},
    {"kind": "subagent", "events": [{"kind": "user", "text": "hi"}]},
]


@pytest.mark.parametrize("record", PLAIN_RECORDS)
def test_plain_event_is_the_event_msgspec_builds(record: dict) -> None:
    """Records of the declared types are built by slot stores (the fast path of the normalized reader): field for
    field the event msgspec's strict conversion makes."""
    import msgspec

    from kernelbench.transcripts.model import Event, plain_event

    built = plain_event(record)
    assert built is not None
    assert repr(built) == repr(msgspec.convert(record, Event))


@pytest.mark.parametrize("record", CONVERTED_RECORDS)
def test_plain_event_leaves_any_other_record_to_msgspec(record: dict) -> None:
    from kernelbench.transcripts.model import plain_event

    assert plain_event(record) is None


def test_normalized_log_reads_the_same_without_the_plain_event_path(tmp_path: Path, monkeypatch) -> None:
    from kernelbench.transcripts import normalized

    path = tmp_path / "t.jsonl"
    records = [{"type": "kernelbench-session", "version": 1, "harness": "scripted"},
               *({"type": "event", **r} for r in PLAIN_RECORDS + CONVERTED_RECORDS),
               {"type": "end", "complete": True}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    fast = load(path)
    monkeypatch.setattr(normalized, "plain_record_event", lambda record, line: None)
    slow = load(path)
    assert repr(fast.events) == repr(slow.events) and fast.issue_counts == slow.issue_counts


@pytest.mark.parametrize("record", PLAIN_RECORDS + CONVERTED_RECORDS)
def test_an_event_record_as_read_gives_the_event_of_its_fields(record: dict) -> None:
    """The reader's one-pass path (the record's type, id and unknown keys skipped, its line number put in where it
    names none) builds what `plain_event` builds from the filtered fields, and leaves to msgspec what it leaves."""
    from kernelbench.transcripts.model import EVENT_FIELDS, plain_event, plain_record_event

    as_read = {"type": "event", "id": 99, "extra": [1], **record}
    fields = {k: v for k, v in as_read.items() if k in EVENT_FIELDS - {"id"}}
    fields.setdefault("line", 7)
    assert repr(plain_record_event(as_read, 7)) == repr(plain_event(fields))


# Lines the typed decoding must read as the full decoding does: it takes a line only where every value has the
# type the plain event takes as it is, and leaves every other line to orjson (a number beyond 64 bits, a value
# orjson refuses inside `input`, `id` or a key it does not declare, `usage` or `events`, a repeated `type`)
ODD_LINES = [
    b'{"type":"event","kind":"tool_result","exit_code":123456789012345678901234567890}',
    b'{"type":"event","kind":"tool_result","exit_code":18446744073709551615}',
    b'{"type":"event","kind":"user","line":9223372036854775808}',
    b'{"type":"event","kind":"user","line":null}',
    b'{"type":"event","kind":"user","ts":1e400}',
    b'{"type":"event","kind":"user","ts":123456789012345678901234567890}',
    b'{"type":"event","kind":"tool_call","input":{"a":1e400}}',
    b'{"type":"event","kind":"tool_call","input":{"a":123456789012345678901234567890}}',
    b'{"type":"event","kind":"tool_call","input":{"a":"\xff"}}',
    b'{"type":"event","kind":"tool_call","input":"\\ud800"}',
    b'{"type":"event","kind":"user","other":"\xff"}',
    b'{"type":"event","kind":"user","other":123456789012345678901234567890}',
    b'{"type":"event","kind":"user","text":"\xed\xa0\x80"}',
    b'{"type":"event","kind":"user","text":"a","text":"b"}',
    b'{"type":"event","type":"usage","input":3,"kind":"user"}',
    b'{"type":"usage","type":"event","kind":"user"}',
    b'{"kind":"user","type":"event","id":"e-1","text":"last type key"}',
    b'{"type":"event","id":4,"kind":"assistant","text":"hi"}',
    b'{"type":"event","id":123456789012345678901234567890,"kind":"assistant","text":"hi"}',
    b'{"type":"event","id":[1e400],"kind":"assistant","text":"hi"}',
    b'{"type":"event","id":"\xff","kind":"assistant","text":"hi"}',
    b'{"type":"event","id":' + b"[" * 1010 + b"]" * 1010 + b',"kind":"assistant","text":"nested deeper than msgspec reads"}',
    b'{"type":"event","id":' + b"[" * 1030 + b"]" * 1030 + b',"kind":"assistant","text":"nested deeper than orjson reads"}',
    b'{"type":"event","kind":"system","text":"\\u0000\\u2028"}',
    b'{"type":"event","kind":"tool_result","call_id":"no-such-call","output":"orphan"}',
    b'{"type":"event","kind":"tool_call","name":"Bash","call_id":"c9","input":{"command":"ls"}}',
    b'{"type":"event","kind":"tool_result","call_id":"c9","output":"named by its call"}',
    b'{"type":"usage","input":1,"output":2,"cache_read":3,"cache_write":4,"reasoning":5}',
    b'{"type":"usage","input":-1}',
    b'{"type":"usage","input":true}',
    b'{"type":"usage","input":2.0}',
    b'{"type":"usage","input":18446744073709551615}',
    b'{"type":"usage","input":1,"total":1}',
    b'{"type":"usage","input":"\xff"}',
    b'{"type":"event","kind":"tool_call","input":{"a":"\xff"}',
]


def test_typed_lines_read_as_the_full_decoding_reads_them(tmp_path: Path, monkeypatch) -> None:
    """The normalized reader's typed decoding (msgspec, straight into the event's fields) gives the session that
    decoding every line in full with orjson gives: events, issues, unknown records, token counts."""
    from kernelbench.transcripts.builder import SessionBuilder

    records = [{"type": "kernelbench-session", "version": 1, "harness": "scripted"},
               *({"type": "event", **r} for r in PLAIN_RECORDS + CONVERTED_RECORDS if r.get("ts") == r.get("ts"))]
    head = "".join(json.dumps(r) + "\n" for r in records).encode()
    for last in (b"", b"\n"):            # the odd lines in the middle, and each one last (cut off or not)
        cases = [head + b"\n".join(ODD_LINES) + b'\n{"type":"end","complete":true}' + last]
        cases += [head + line + last for line in ODD_LINES]
        for number, data in enumerate(cases):
            path = tmp_path / f"t{number}.jsonl"
            path.write_bytes(data)
            typed = load(path)
            with monkeypatch.context() as patch:
                patch.setattr(SessionBuilder, "typed_lines", lambda self, p, decode: self.lines(p))
                plain = load(path)
            assert typed.model_dump() == plain.model_dump(), data[len(head):]
            assert repr(typed.events) == repr(plain.events)


def test_the_normalized_reader_puts_only_text_in_text_fields(tmp_path: Path) -> None:
    """`load` does not look at a normalized log's text fields again (`loader.TEXT_FIELDS_TYPED`): its reader
    alone, before `check_values`, leaves text or None in every one, whatever the records held there."""
    from kernelbench.transcripts import normalized
    from kernelbench.transcripts.loader import _TEXT_FIELDS, TEXT_FIELDS_TYPED

    assert normalized.FORMAT in TEXT_FIELDS_TYPED
    odd_values = [5, 2.5, True, [1], {"a": 1}, None, "text"]
    records = [{"type": "kernelbench-session", "version": 1, "harness": "scripted"},
               *({"type": "event", **r} for r in PLAIN_RECORDS + CONVERTED_RECORDS if r.get("ts") == r.get("ts")),
               *({"type": "event", "kind": "user", name: value} for name in _TEXT_FIELDS for value in odd_values),
               {"type": "event", "kind": "subagent", "events": [{"kind": "user", "text": 5, "name": [1]}]},
               {"type": "event", "kind": "tool_result", "call_id": "c1"}]
    path = tmp_path / "t.jsonl"
    path.write_bytes("".join(json.dumps(r) + "\n" for r in records).encode() + b"\n".join(ODD_LINES))
    session = normalized.parse(path)
    events = list(session.walk())
    assert len(events) > len(records)
    for event in events:
        for name in _TEXT_FIELDS:
            value = getattr(event, name)
            assert value is None or type(value) is str, (name, value)
