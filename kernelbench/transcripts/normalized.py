"""This project's own transcript format: normalized JSON Lines, written as events happen.

Layout, one JSON object per line:
    {"type": "kernelbench-session", "version": 1, "harness": ..., "model": ..., "session_id": ..., "cwd": ..., "ts": ...}
    {"type": "event", "kind": "user" | "assistant" | ..., "ts": ..., ...Event fields}
    {"type": "usage", "input": ..., "output": ..., ...}            # tokens of the response just finished
    {"type": "end", "complete": true, "ts": ..., "tokens": {...}, "cost_usd": ..., ...}
A file without its `end` record is a session that did not finish (the writer was killed). `convert` writes the
same layout, so any supported log can be turned into this one and read back.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Annotated, Any, Self

import msgspec
import orjson

from kernelbench.transcripts.builder import SessionBuilder, to_epoch
from kernelbench.transcripts.model import (
    ASSISTANT,
    EVENT_FIELDS,
    SCHEMA_VERSION,
    THINKING,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    Kind,
    Session,
    Usage,
    new_event,
    plain_record_event,
)

HEADER_TYPE = "kernelbench-session"
FORMAT = "normalized"


class NormalizedWriter:
    """Write a normalized transcript line by line; the closing record says whether the session completed.

    >>> with NormalizedWriter(path, harness="scripted", model="none") as log:
    ...     log.user("write a softmax")
    ...     call = log.tool_call("Bash", {"command": "nvcc -O3 kernel.cu"})
    ...     log.tool_result(call, "ok", exit_code=0)
    """

    def __init__(self, path: Path | str, *, harness: str | None = None, model: str | None = None,
                 session_id: str | None = None, cwd: str | Path | None = None):
        self.path = Path(path)
        self.harness, self.model, self.session_id = harness, model, session_id
        self.cwd = str(cwd) if cwd is not None else None
        self.tokens = Usage()
        self.final_message: str | None = None
        self._handle: IO[bytes] | None = None
        self._ids = itertools.count(1)

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(complete=exc_type is None,
                   error=None if exc is None or exc_type is None else f"{exc_type.__name__}: {exc}")

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "wb")   # noqa: SIM115 - closed by close(): records arrive over many calls
        self._write({"type": HEADER_TYPE, "version": SCHEMA_VERSION, "harness": self.harness,
                     "model": self.model, "session_id": self.session_id, "cwd": self.cwd, "ts": time.time()})

    def close(self, *, complete: bool = True, error: str | None = None) -> None:
        if self._handle is None:
            return
        self._write({"type": "end", "complete": complete, "ts": time.time(), "error": error,
                     "tokens": self.tokens.model_dump(), "final_message": self.final_message})
        self._handle.close()
        self._handle = None

    # ------------------------------------------------------------------ events

    def user(self, text: str) -> None:
        self._event(Kind.USER, text=text)

    def assistant(self, text: str) -> None:
        self.final_message = text
        self._event(Kind.ASSISTANT, text=text, model=self.model)

    def thinking(self, text: str) -> None:
        self._event(Kind.THINKING, text=text, model=self.model)

    def system(self, text: str) -> None:
        self._event(Kind.SYSTEM, text=text)

    def tool_call(self, name: str, input: dict[str, Any] | None = None) -> str:
        call_id = f"call-{next(self._ids)}"
        self._event(Kind.TOOL_CALL, name=name, input=input or {}, call_id=call_id)
        return call_id

    def tool_result(self, call_id: str, output: str, is_error: bool = False, exit_code: int | None = None) -> None:
        self._event(Kind.TOOL_RESULT, call_id=call_id, output=output, is_error=is_error, exit_code=exit_code)

    def file_edit(self, path: str | Path, diff: str) -> None:
        self._event(Kind.FILE_EDIT, path=str(path), diff=diff)

    def usage(self, input: int = 0, output: int = 0, cache_read: int = 0, cache_write: int = 0,
              reasoning: int = 0) -> None:
        usage = Usage(input=input, output=output, cache_read=cache_read, cache_write=cache_write,
                      reasoning=reasoning)
        self.tokens.add(usage)
        self._write({"type": "usage", **usage.model_dump()})

    def _event(self, kind: Kind, **fields: Any) -> None:
        self._write({"type": "event", "kind": kind.value, "ts": time.time(), **fields})

    def _write(self, record: dict[str, Any]) -> None:
        if self._handle is None:
            raise RuntimeError(f"{self.path}: the transcript writer is not open (use it as a context manager)")
        # one line per record, flushed, so a killed agent still leaves everything up to its last event
        self._handle.write(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS) + b"\n")
        self._handle.flush()


# ---------------------------------------------------------------------------------------------- writing a Session

def write_session(session: Session, path: Path | str) -> None:
    """Write a parsed session in the normalized layout (what `transcript convert` does)."""
    from kernelbench.fileio import atomic_write_bytes

    parts = [orjson.dumps({"type": HEADER_TYPE, "version": SCHEMA_VERSION, "harness": session.harness,
                           "models": session.models, "model": session.models[0] if session.models else None,
                           "session_id": session.session_id, "cwd": session.cwd, "ts": session.start,
                           "source_format": session.format, "source_format_version": session.format_version})]
    for event in session.events:
        parts.append(orjson.dumps({"type": "event", **event.model_dump(exclude_none=True)}))
    parts.append(orjson.dumps({"type": "end", "complete": session.complete, "ts": session.end,
                               "duration_s": session.duration_s, "tokens": session.tokens.model_dump(),
                               "cost_usd": session.cost_usd, "cost_is_estimate": session.cost_is_estimate,
                               "final_message": session.final_message,
                               "unknown_records": session.unknown_records}))
    atomic_write_bytes(Path(path), b"\n".join(parts) + b"\n")


# ---------------------------------------------------------------------------------------------- reading

def detect(records: list[dict], head: bytes) -> bool:
    return bool(records) and records[0].get("type") == HEADER_TYPE


# ---------------------------------------------------------------------------------------------- typed records

_INT64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_COUNT = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
_UNSET = msgspec.UNSET


class EventRecord(msgspec.Struct, tag_field="type", tag="event", forbid_unknown_fields=True):
    """An event record as the writer writes it, decoded by msgspec straight from its line: every field of the
    type `plain_record_event` takes as it is. A line that does not fit (another key, a value of another type, an
    integer beyond 64 bits, a `usage` or a subagent's `events`, a kind no event has) is decoded in full
    with orjson and read as before, and one whose `input` orjson rejects is read as a line that is no JSON: the
    event made is the one the full decoding gives (`tests/transcripts/test_transcript_normalized.py`)."""

    kind: Kind              # decoded by msgspec into its member; a kind no event has does not fit
    ts: float | None = None
    line: _INT64 | None | msgspec.UnsetType = _UNSET
    source: str | None = None
    text: str | None = None
    name: str | None = None
    call_id: str | None = None
    input: msgspec.Raw | msgspec.UnsetType = _UNSET     # any JSON value: decoded by orjson, as the full line was
    output: str | None = None
    is_error: bool | None = None
    exit_code: _INT64 | None = None
    duration_s: float | None = None
    path: str | None = None
    diff: str | None = None
    model: str | None = None
    record_type: str | None = None
    raw: str | None = None
    id: Any = _UNSET        # (`transcript convert` writes the events' ids: not read, events are numbered anew)


class UsageRecord(msgspec.Struct, tag_field="type", tag="usage", forbid_unknown_fields=True):
    """A usage record whose counts are all whole numbers in [0, 2**63-1] (any other is decoded in full); an
    absent count is 0, as `_usage` reads it. Its counts need no check of their own (`_typed_usage`)."""

    input: _COUNT = 0
    output: _COUNT = 0
    cache_read: _COUNT = 0
    cache_write: _COUNT = 0
    reasoning: _COUNT = 0


_decode_typed = msgspec.json.Decoder(EventRecord | UsageRecord).decode
_loads, _decode_error = orjson.loads, orjson.JSONDecodeError


def decode_line(raw: bytes) -> EventRecord | UsageRecord:
    """A line of a normalized transcript as a typed record (for `SessionBuilder.typed_lines`), its `input`
    decoded by orjson. Raises msgspec.ValidationError where the line is to be decoded in full instead, and
    msgspec.DecodeError where orjson rejects the input (the line is then read as the plain reader reads it)."""
    record = _decode_typed(raw)
    if type(record) is EventRecord:
        if record.input is not _UNSET:
            try:
                record.input = _loads(memoryview(record.input))
            except _decode_error as exc:
                raise msgspec.DecodeError(str(exc)) from None
    return record


def _typed_event(record: EventRecord, number: int) -> Event:
    """The event of a typed record: the one `plain_record_event` makes of the same record decoded in full."""
    line, value = record.line, record.input
    return new_event(record.kind, record.ts, number if line is _UNSET else line, record.source,
                     record.text, record.name, record.call_id, None if value is _UNSET else value, record.output,
                     record.is_error, record.exit_code, record.duration_s, record.path, record.diff, record.model,
                     None, record.record_type, record.raw, None)


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, FORMAT)
    session = builder.session
    usage_seen = Usage()
    ended = [False]      # the closing record was read (in a list: the handler below sets it)

    def read(record: dict | EventRecord | UsageRecord, number: int) -> None:
        if type(record) is EventRecord:
            _add_event(builder, _typed_event(record, number), number)
            return
        if type(record) is UsageRecord:
            _read_usage(builder, record, usage_seen, number)
            return
        assert isinstance(record, dict)     # a line the typed records do not fit: decoded in full
        rtype = record.get("type")
        if rtype == HEADER_TYPE:
            _read_header(builder, record)
        elif rtype == "event":
            _read_event(builder, record, number)
        elif rtype == "usage":
            _read_usage(builder, record, usage_seen, number)
        elif rtype == "end":
            ended[0] = _read_end(builder, record, number) or ended[0]
        else:
            builder.unknown(record, number)

    builder.read_records(path, read, decode_line)
    if session.tokens.is_zero() and not usage_seen.is_zero():
        session.tokens = usage_seen
    if not ended[0]:
        session.complete = False
    return builder.finish()


def _read_header(builder: SessionBuilder, record: dict) -> None:
    session = builder.session
    session.harness = _text(record.get("harness"))
    session.format_version = str(record.get("version", SCHEMA_VERSION))[:40]
    session.session_id = _text(record.get("session_id"))
    session.cwd = _text(record.get("cwd"))
    session.start = to_epoch(record.get("ts"))
    models = record.get("models")
    for model in models if isinstance(models, list) and models else [record.get("model")]:
        builder.note_model(_text(model))


def _text(value: object) -> str | None:
    """A header field that must be text (a number or a mapping in its place is left out)."""
    return value if isinstance(value, str) else None


# an event record's fields: not its type, nor an id (events are numbered as they are read)
_RECORD_FIELDS = EVENT_FIELDS - {"id"}


def _read_event(builder: SessionBuilder, record: dict, number: int) -> None:
    try:
        event = plain_record_event(record, number)
        if event is None:
            fields = {k: v for k, v in record.items() if k in _RECORD_FIELDS}
            fields.setdefault("line", number)
            event = Event.model_validate(fields)
    except ValueError:
        builder.unknown(record, number, record_type=f"event:{record.get('kind')}")
        return
    _add_event(builder, event, number)


def _add_event(builder: SessionBuilder, event: Event, number: int) -> None:
    builder._stack[-1].append(event)
    kind = event.kind
    if kind is TOOL_CALL and event.call_id:
        builder.calls[event.call_id] = event
    elif kind is TOOL_RESULT and event.call_id and event.call_id not in builder.calls:
        builder.issue("orphan_result", f"tool result {event.call_id!r} has no matching call", number)
    elif kind is TOOL_RESULT and event.name is None and event.call_id:
        event.name = builder.calls[event.call_id].name
    builder.note_model(event.model)


def _read_usage(builder: SessionBuilder, record: dict | UsageRecord, seen: Usage, number: int) -> None:
    if isinstance(record, UsageRecord):
        usage: Usage | None = _typed_usage(record)
    else:
        usage = _usage(record)
    if usage is None:
        assert isinstance(record, dict)   # (a typed record's counts are whole numbers in range: never None)
        _bad_record(builder, record, number, "a usage record whose token counts are not whole numbers from 0 up to "
                                             "2**63-1; left out of the totals")
        return
    seen.add(usage)
    events = builder.session.events
    # the usage belongs to the response that just finished: the last model-written event
    for event in reversed(events):
        if event.kind in _MODEL_WRITTEN:
            if event.usage is None:
                event.usage = usage  # a new object of this record's own, added to by any later usage record
            else:
                event.usage.add(usage)
            break


_MODEL_WRITTEN = (ASSISTANT, THINKING, TOOL_CALL)


def _read_end(builder: SessionBuilder, record: dict, number: int) -> bool:
    """The closing record; a field of the wrong kind is left out and reported, the rest is read."""
    session = builder.session
    session.complete = record.get("complete") is True
    session.end = to_epoch(record.get("ts"))
    duration, cost, tokens = record.get("duration_s"), record.get("cost_usd"), record.get("tokens")
    if duration is not None:
        if _amount(duration):
            session.duration_s = float(duration)
        else:
            builder.issue("bad_record", f"line {number}: duration_s {duration!r:.40} is not a number of seconds",
                          number)
    if tokens is not None:
        usage = _usage(tokens) if isinstance(tokens, dict) else None
        if usage is not None:
            session.tokens = usage
        else:
            builder.issue("bad_record", f"line {number}: tokens {tokens!r:.60} are not whole numbers from 0 "
                                        "up to 2**63-1", number)
    if cost is not None:
        if _amount(cost):
            session.cost_usd = float(cost)
            session.cost_is_estimate = record.get("cost_is_estimate") is True
        else:
            builder.issue("bad_record", f"line {number}: cost_usd {cost!r:.40} is not an amount of dollars", number)
    if isinstance(record.get("final_message"), str) and record["final_message"]:
        session.final_message = record["final_message"]
    return True


_INT64_MAX = 2**63 - 1


def _usage(record: dict) -> Usage | None:
    """The token counts of a usage (or end) record, or None when any is not a whole number in [0, 2**63-1]."""
    get = record.get
    counts = (get("input", 0), get("output", 0), get("cache_read", 0), get("cache_write", 0), get("reasoning", 0))
    for value in counts:
        if type(value) is not int or not 0 <= value <= _INT64_MAX:
            return None
    return Usage(input=counts[0], output=counts[1], cache_read=counts[2], cache_write=counts[3],
                 reasoning=counts[4])


def _typed_usage(record: UsageRecord) -> Usage:
    """The token counts of a typed usage record: msgspec held each to a whole number in [0, 2**63-1] as it
    decoded the line, so they are taken as they are (`_usage` reads and checks them one by one through the dict
    methods, five calls a record)."""
    return Usage(input=record.input, output=record.output, cache_read=record.cache_read,
                 cache_write=record.cache_write, reasoning=record.reasoning)


def _amount(value: object) -> bool:
    """A finite, non-negative number (not a bool, not text)."""
    return (type(value) is int or type(value) is float) and 0 <= value < float("inf")


def _bad_record(builder: SessionBuilder, record: dict, number: int, why: str) -> None:
    builder.issue("bad_record", f"line {number}: {why}", number)
    builder.unknown(record, number)
