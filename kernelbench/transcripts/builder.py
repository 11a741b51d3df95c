"""What every parser shares: numbering events, pairing tool calls with results, counting what was not understood."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import msgspec
import orjson

from kernelbench.transcripts.model import (
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    Kind,
    ParseIssue,
    ProviderNotice,
    Session,
    Usage,
    all_events,
    new_event,
    usages_of,
)
from kernelbench.transcripts.reader import BOM, Line, open_lines, parse_json_bytes, repair_line

MAX_STORED_ISSUES = 200
# What a parser raises on a record holding a value of a type its format never writes where the parser reads one
# (a list for an id, text for a token count, a number where blocks should be): each parser reads its records one
# by one under these, and a record that raises one is kept raw (`SessionBuilder.unreadable`) while the rest of
# the file is read as usual
RECORD_ERRORS = (TypeError, ValueError, AttributeError, LookupError, ArithmeticError, RecursionError, UnicodeError)


class LineText(str):
    """A line's text, for a line the typed decoding took but that is no JSON when read in full: kept raw as the
    text it is (not as a JSON string of it)."""

    problem: str

    def __new__(cls, text: str, problem: str) -> Self:
        line = super().__new__(cls, text)
        line.problem = problem
        return line


class SessionBuilder:
    """Accumulates events and problems while a parser walks a file, then hands back a `Session`."""

    def __init__(self, path: Path | str | None, fmt: str, harness: str | None = None):
        self.session = Session(format=fmt, harness=harness, source=str(path) if path is not None else None)
        # call_id → tool_call event, to pair results. Only text ids are kept: an id of another JSON type (a list,
        # an object) pairs with nothing, and `loader.check_values` turns it into text and reports it
        self.calls: dict[str, Event] = {}
        self.models: dict[str, None] = {}       # ordered set
        self._stack: list[list[Event]] = [self.session.events]
        self.records = 0                        # records read through `accept`, added to the session at the end
        self.current: bytes | None = None       # the line `typed_lines` handed over last, and its number
        self.current_number = 0

    # ------------------------------------------------------------------ events

    def add(self, kind: Kind, *, ts: float | None = None, line: int | None = None, text: str | None = None,
            name: str | None = None, call_id: str | None = None, input: Any = None, model: str | None = None,
            **fields: Any) -> Event:
        """A new event of `kind` where the parser stands (inside an open subagent span, if any). The fields
        most events have are named, so that the usual call builds no keyword dict."""
        event = new_event(kind, ts, line, text=text, name=name, call_id=call_id, input=input, model=model,
                          **fields)
        self._stack[-1].append(event)
        if kind is TOOL_CALL and call_id and type(call_id) is str:
            self.calls[call_id] = event
        if model and type(model) is str and model not in self.models:
            self.models[model] = None
        return event

    def result(self, call_id: str | None, *, ts: float | None = None, line: int | None = None,
               name: str | None = None, duration_s: float | None = None, **fields: Any) -> Event:
        """A tool result; one whose call never appeared is kept and reported as an orphan."""
        call = self.call(call_id)
        if call is None:
            self.issue("orphan_result", f"tool result {call_id!r} has no matching call", line)
        else:
            if name is None:
                name = call.name
            if duration_s is None and call.ts and ts:
                duration_s = max(0.0, ts - call.ts)
        event = new_event(TOOL_RESULT, ts, line, call_id=call_id, name=name, duration_s=duration_s, **fields)
        self._stack[-1].append(event)
        self.note_model(event.model)
        return event

    def call(self, call_id: Any) -> Event | None:
        """The tool call of this id, if one was seen; None for an id that is not text."""
        return self.calls.get(call_id) if type(call_id) is str else None

    def provider_error(self, message: str, *, line: int | None = None, ts: float | None = None,
                       status: Any = None, retryable: bool | None = None, retried: bool = False,
                       event: bool = True) -> None:
        """A provider (API) error the CLI recorded: noted for the harness and, unless the parser already shows the
        record as an event, shown as a system event."""
        status = status if isinstance(status, int) and not isinstance(status, bool) else None
        self.session.provider_errors.append(ProviderNotice(message=message[:2000], status=status,
                                                           retryable=retryable, retried=retried, line=line))
        if event:
            self.add(Kind.SYSTEM, ts=ts, line=line, record_type="api_retry" if retried else "provider_error",
                     text=message, is_error=True)

    def unknown(self, record: Any, line: int | None, record_type: str | None = None, **fields: Any) -> Event:
        if type(record) is LineText:            # shown as the line's text, as a line that is no JSON is
            rtype, raw = record_type or f"<{record.problem}>", str(record)
        else:
            rtype = record_type or (str(record.get("type")) if isinstance(record, dict) and "type" in record
                                    else type(record).__name__)
            raw = dump_raw(record)
        counts = self.session.unknown_records
        counts[rtype] = counts.get(rtype, 0) + 1
        return self.add(Kind.UNKNOWN, line=line, record_type=rtype, raw=raw, **fields)

    def unreadable(self, record: Any, line: int | None, error: BaseException) -> Event:
        """A record the parser tripped over (one of `RECORD_ERRORS`): kept raw as an unknown event whose text
        says why, and reported as an issue. What the parser made of the record before it tripped stays; the parse
        goes on with the next record."""
        if isinstance(record, msgspec.Struct):      # a typed record holds only the fields read: take them all
            record = self.raw_record()
        why = _why_unreadable(error)
        where = f"line {line}" if line is not None else "a record"
        self.issue("unreadable_record", f"{where}: the {self.session.format} parser could not read this record "
                                        f"({why}); it is shown raw", line)
        return self.unknown(record, line, text=f"Not read: {why}")

    def ignore(self, record_type: str) -> None:
        counts = self.session.ignored_records
        counts[record_type] = counts.get(record_type, 0) + 1

    def issue(self, kind: str, message: str, line: int | None = None) -> None:
        counts = self.session.issue_counts
        counts[kind] = counts.get(kind, 0) + 1
        if len(self.session.issues) < MAX_STORED_ISSUES:
            self.session.issues.append(ParseIssue(line=line, kind=kind, message=message))

    def accept(self, line) -> dict | None:
        """The record of one line when it is a JSON object; anything else is counted and kept as unknown."""
        self.records += 1
        if line.problem:
            self.bad_line(line.number, line.raw, line.problem)
            return None
        if line.repaired:
            self.issue(line.repaired, f"line {line.number}: invalid UTF-8 replaced by U+FFFD", line.number)
        if not isinstance(line.record, dict):
            self.unknown(line.record, line.number)
            return None
        return line.record

    def lines(self, path: Path) -> Iterator[tuple[int, dict]]:
        """(line number, record) for every line of a JSON Lines file that holds a JSON object, in order; every
        other line is counted and kept as an unknown event where it stands, as `accept` does. The same reading as
        `iter_lines` + `accept` (banner lines, BOM, CRLF, repaired UTF-8, a cut-off last line) without an
        object per line: a good line is decoded and handed over at once, only a bad one waits for the next line
        to know whether it was the file's last."""
        loads, decode_error = orjson.loads, orjson.JSONDecodeError
        held: Line | None = None           # a line that did not parse, until we know whether it is the last
        with open_lines(path) as handle:
            number = 0
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(BOM):
                    raw = raw[len(BOM):]
                try:
                    record = loads(raw)
                except decode_error:
                    if raw.isspace() or not raw:
                        continue
                    if held is not None:
                        yield from self._held(held)
                    held = repair_line(number, raw)
                    continue
                if held is not None:
                    yield from self._held(held)
                    held = None
                self.records += 1
                if type(record) is dict:
                    yield number, record
                else:
                    self.unknown(record, number)
        yield from self._last_held(held)

    def typed_lines(self, path: Path, decode: Callable[[bytes], Any]) -> Iterator[tuple[int, Any]]:
        """Like `lines`, but each line is first decoded by `decode` (a `msgspec.json.Decoder` of the format's
        record type, which declares only the fields the parser reads: large fields it never reads are skipped
        without building Python objects). A line that does not fit the type (a field of another JSON type, not an
        object at all) is decoded as `lines` does, so the parser sees a plain dict for it, or the usual unknown
        event. `raw_record()` decodes the current line in full, for records kept raw as unknown events."""
        validation_error = msgspec.ValidationError
        held: Line | None = None
        with open_lines(path) as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(BOM):
                    raw = raw[len(BOM):]
                try:
                    record = decode(raw)
                except validation_error:
                    record = _plain_or_none(raw)
                except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                    record = None
                if record is None:           # not JSON: held until we know whether it is the last line
                    if raw.isspace() or not raw:
                        continue
                    if held is not None:
                        yield from self._held(held)
                    held = repair_line(number, raw)
                    continue
                if held is not None:
                    yield from self._held(held)
                    held = None
                self.records += 1
                if type(record) is list:       # JSON text that is not an object: decoded as a plain value
                    self.unknown(record[0], number)
                    continue
                self.current, self.current_number = raw, number
                yield number, record
        self.current = None
        yield from self._last_held(held)

    def read_records(self, path: Path, handle: Callable[[Any, int], object],
                     decode: Callable[[bytes], Any] | None = None) -> None:
        """The parse loop of every JSON Lines format: each record of the file, in order, handed to
        `handle(record, line number)` (records as `lines` reads them, or as `typed_lines` does with `decode`). A
        record its handler trips over (one of `RECORD_ERRORS`) is kept raw (`unreadable`) and the next is read."""
        records = self.lines(path) if decode is None else self.typed_lines(path, decode)
        for number, record in records:
            try:
                handle(record, number)
            except RECORD_ERRORS as exc:
                self.unreadable(record, number, exc)

    def raw_record(self) -> Any:
        """The line `typed_lines` handed over last, decoded in full (every field, as plain JSON values). The
        typed decoding checks only the fields it reads: bytes it skipped are checked here. Invalid UTF-8 is
        replaced and reported as for any other line; a line that is no JSON when read in full (a number beyond
        the float range, an unpaired surrogate, nesting past the reader's depth in a field the typed decoding
        skipped) is reported and handed back as its text, to be kept raw."""
        if self.current is None:
            return None
        record, problem = parse_json_bytes(self.current.rstrip(b"\r\n"))
        number = self.current_number
        if problem == "invalid_utf8":
            self.issue(problem, f"line {number}: invalid UTF-8 replaced by U+FFFD", number)
        elif problem is not None:
            self.issue(problem, f"line {number} is not a JSON record when read in full ({problem.replace('_', ' ')})"
                                "; kept as text", number)
            return LineText(self.current.rstrip(b"\r\n").decode("utf-8", "replace"), problem)
        return record

    def _last_held(self, held: Line | None) -> Iterator[tuple[int, dict]]:
        """The file's last unparsed line: an object cut off mid-way is a truncated last line, not bad JSON."""
        if held is not None:
            if held.problem == "bad_json" and not held.ended and held.raw.lstrip()[:1] in (b"{", b"["):
                held.problem = "truncated_last_line"
            yield from self._held(held)

    def _held(self, line: Line) -> Iterator[tuple[int, dict]]:
        record = self.accept(line)
        if record is not None:
            yield line.number, record

    def bad_line(self, number: int, raw: bytes, problem: str) -> None:
        """A line that is not JSON: counted, and kept as an unknown event so nothing is lost."""
        self.issue(problem, f"line {number} is not a JSON record ({problem.replace('_', ' ')})", number)
        text = raw.decode("utf-8", "replace")
        counts = self.session.unknown_records
        key = f"<{problem}>"
        counts[key] = counts.get(key, 0) + 1
        self.add(Kind.UNKNOWN, line=number, record_type=key, raw=text)

    # ------------------------------------------------------------------ subagents

    def open_subagent(self, **fields: Any) -> Event:
        span = self.add(Kind.SUBAGENT, events=[], **fields)
        assert span.events is not None  # given as a list just above
        self._stack.append(span.events)
        return span

    def close_subagent(self) -> None:
        if len(self._stack) > 1:
            self._stack.pop()

    # ------------------------------------------------------------------ session facts

    def note_model(self, model: Any) -> None:
        """A model the log names; a name that is not text is left out (the event keeps it, as text)."""
        if model and type(model) is str and model not in self.models:
            self.models[model] = None

    def finish(self) -> Session:
        session = self.session
        session.records += self.records
        self.records = 0
        # names in angle brackets (Claude's "<synthetic>") mark locally generated messages, not models
        session.models = [m for m in self.models if m and not m.startswith("<")] or session.models
        stamp_times(session, number_events(session))
        if session.tokens.is_zero():
            session.tokens = sum_usage(session.events)
        if session.final_message is None:
            session.final_message = last_assistant_text(session.events)
        return session


_STATUS = re.compile(r"\b(4\d\d|5\d\d)\b")
_RETRY = re.compile(r"reconnecting|retrying|retry(?:ing)? in|attempt \d+ ?(?:/|of) ?\d+", re.IGNORECASE)


_JSON_TYPES = {"list": "an array", "dict": "an object"}


def _why_unreadable(error: BaseException) -> str:
    """What tripped the parser, in the log's terms where the error is the usual one."""
    text = str(error)
    if isinstance(error, TypeError) and text.startswith("unhashable type: '"):
        found = text.split("'")[1]
        return f"{_JSON_TYPES.get(found, found)} where the format writes a name, a type or an id"
    if isinstance(error, ValueError) and text.startswith(("a token count", "an amount")):
        return text[:200]
    return f"{type(error).__name__}: {text[:200]}"


_FLOAT_MAX = 1.7976931348623157e308


def sub_object(record: dict, key: str) -> dict:
    """`record[key]` where it is a JSON object; an empty one where it is absent or of another type."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int:
    """A token count as a log writes it: a whole number (or absent, read as 0). Anything else, text included
    (int() would take "12", `true` and 2.7), raises ValueError, and its record is kept raw."""
    if value is None:
        return 0
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise ValueError(f"a token count that is not a whole number: {dump_raw(value)[:60]}")


def amount(value: Any) -> float:
    """A cost or a duration as a log writes it: a finite number (or absent, read as 0). Anything else raises
    ValueError, as for `token_count`."""
    if value is None:
        return 0.0
    if type(value) is float and math.isfinite(value):
        return value
    if type(value) is int and -_FLOAT_MAX <= value <= _FLOAT_MAX:
        return float(value)
    raise ValueError(f"an amount that is not a finite number: {dump_raw(value)[:60]}")


def http_status(message: str) -> int | None:
    """The HTTP status an error message names (`429 Too Many Requests`, `status 503`), if any."""
    match = _STATUS.search(message)
    return int(match.group(1)) if match else None


def is_retry_notice(message: str) -> bool:
    """The CLI says it is trying again (`Reconnecting... 2/5`, `retrying in 4s`)."""
    return bool(_RETRY.search(message))


def _plain_or_none(raw: bytes) -> Any:
    """A line that did not fit the typed record: its plain decoding (a dict, or a list holding any other JSON
    value so that it cannot be mistaken for a record), or None when it is not valid JSON."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if type(value) is dict else [value]


def dump_raw(record: Any) -> str:
    try:
        return orjson.dumps(record).decode()
    except TypeError:
        return repr(record)


def number_events(session: Session) -> tuple[float, float] | None:
    """Number every event (depth first); returns the first and last timestamp met, None without any (one walk
    for both: a long log has hundreds of thousands of events)."""
    first: float | None = None
    last = 0.0  # read only once `first` is set
    for index, event in enumerate(session.walk(), start=1):
        event.id = index
        ts = event.ts
        if ts is not None:
            if first is None:
                first = last = ts
            elif ts < first:
                first = ts
            elif ts > last:
                last = ts
    return None if first is None else (first, last)


def sum_usage(events: list[Event]) -> Usage:
    return Usage.sum_of(usages_of(all_events(events)))


def last_assistant_text(events: list[Event]) -> str | None:
    for event in reversed(events):
        if event.kind is Kind.ASSISTANT and event.text:
            return event.text
    return None


def stamp_times(session: Session, span: tuple[float, float] | None) -> None:
    """Start, end and duration from the first and last timestamps of the events (`span`, from
    `number_events`), unless the format said."""
    if span is not None:
        if session.start is None:
            session.start = span[0]
        if session.end is None:
            session.end = span[1]
    if session.duration_s is None and session.start is not None and session.end is not None:
        session.duration_s = max(0.0, session.end - session.start)


def to_epoch(value: Any) -> float | None:
    """Unix seconds from an ISO-8601 string, or from a number in seconds or milliseconds."""
    if isinstance(value, str):                  # the usual case first: one per record
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        # a time without a zone is taken as UTC, never as this machine's local time
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            seconds = value / 1000.0 if value > 1e11 else float(value)
        except OverflowError:                   # an integer of hundreds of digits is no time
            return None
        return seconds if math.isfinite(seconds) else None
    return None
