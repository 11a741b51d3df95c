"""`load(path)`: detect a transcript's format by its content and parse it into a `Session`."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from operator import attrgetter
from pathlib import Path

import orjson

from kernelbench.errors import KernelBenchError
from kernelbench.transcripts.builder import SessionBuilder
from kernelbench.transcripts.formats import document_formats, line_formats
from kernelbench.transcripts.gcpause import gc_paused
from kernelbench.transcripts.model import ParseIssue, Session, Usage
from kernelbench.transcripts.pricing import estimate_cost
from kernelbench.transcripts.reader import (
    HEAD_BYTES,
    first_records,
    given,
    head_records,
    iter_lines,
    load_document,
)


def load(path: Path | str, *, estimate: bool = True, data: bytes | None = None) -> Session:
    """Parse any supported transcript. Unreadable parts become counted issues and unknown events, never errors;
    only a missing file (or a directory) raises `KernelBenchError`. Without a cost in the log, the cost is
    estimated from the dated price table and marked as an estimate.

    `data`: the file's bytes, already read by the caller (who hashed them, say): they are parsed instead of the
    file being read again; the files a format finds beside it (subagent logs) are still read beside `path`."""
    path = as_path(path)
    with gc_paused(), given(path, data) if data is not None else nullcontext():
        session = _parse_guarded(path, data is not None)
        check_values(session, texts=session.format not in TEXT_FIELDS_TYPED)
        if estimate:
            estimate_cost(session)
    return session


def _parse_guarded(path: Path, read: bool = False) -> Session:
    """`_parse`, where a parser that trips over a record it did not expect (a number where text should be, a
    list where a mapping should be) does not lose the transcript: every record is kept raw, as for an unknown
    format, and the failure is counted as an issue."""
    try:
        return _parse(path, read)
    except KernelBenchError:
        raise
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError, LookupError, AttributeError,
            UnicodeError) as exc:
        session = parse_unknown(path, report_unknown=False)
        kind = "parser_failed"
        message = f"the parser failed ({type(exc).__name__}: {str(exc)[:200]}); its records are shown raw"
        session.issue_counts = {kind: 1, **session.issue_counts}
        session.issues.insert(0, ParseIssue(kind=kind, message=message))
        return session


# Times outside these bounds (1970 to the year 3000) are no session's; nor are durations longer than that span.
EPOCH_MIN, EPOCH_MAX = 0.0, 32_503_680_000.0
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# Formats whose parser puts text (or None) in every text field of every event it builds, checked as it reads:
# the normalized reader takes a record's fields only where each has its declared type (typed decoding, the plain
# event's checks or msgspec's strict conversion) and keeps anything else raw, as text
# (`tests/transcripts/test_transcript_normalized.py`). Their events' text fields are not looked at again.
TEXT_FIELDS_TYPED = frozenset({"normalized"})


def check_values(session: Session, *, texts: bool = True) -> None:
    """Drop the numbers no log of a real session holds, whatever its parser passed on: a time that is not finite
    or lies outside 1970-3000, a negative or endless duration, a negative cost, an exit code or token count
    beyond 64 bits or below zero; and turn into text whatever stands where text belongs (a number or a mapping
    the log held in a text field). Each is counted in one issue, so the viewer's arithmetic and formatting, the
    totals and the JSON encoders only ever see what the model says. `texts=False`: the events' text fields are
    known to hold text already (`TEXT_FIELDS_TYPED`), and are not looked at."""
    dropped: dict[str, int] = {}
    texts_of = _texts_of
    for event in session.walk():  # one pass, comparisons inline: a 200 MB log has close to a million events
        ts, duration, code = event.ts, event.duration_s, event.exit_code
        if ts is not None and (type(ts) not in _REAL or not EPOCH_MIN <= ts <= EPOCH_MAX):
            event.ts = None
            dropped["timestamp"] = dropped.get("timestamp", 0) + 1
        if duration is not None and (type(duration) not in _REAL or not 0.0 <= duration <= EPOCH_MAX):
            event.duration_s = None
            dropped["duration"] = dropped.get("duration", 0) + 1
        if code is not None and (type(code) is not int or not INT64_MIN <= code <= INT64_MAX):
            event.exit_code = None
            dropped["exit code"] = dropped.get("exit code", 0) + 1
        if event.usage is not None and not _usage_ok(event.usage):
            event.usage = None
            dropped["token count"] = dropped.get("token count", 0) + 1
        if texts:
            for value in texts_of(event):
                if value is not None and type(value) is not str:
                    _texts_as_text(event, dropped)
                    break
    _check_session_numbers(session, dropped)
    if dropped:
        what = ", ".join(f"{name} ×{count}" for name, count in sorted(dropped.items()))
        session.issue_counts["bad_number"] = session.issue_counts.get("bad_number", 0) + 1
        session.issues.append(ParseIssue(kind="bad_number", message=f"numbers no session holds were left out: "
                                                                    f"{what}"))


_TEXT_FIELDS = ("text", "name", "call_id", "output", "path", "diff", "model", "record_type", "raw", "source")
_texts_of = attrgetter(*_TEXT_FIELDS)


_REAL = (float, int)


def _texts_as_text(event, dropped: dict[str, int]) -> None:
    for name in _TEXT_FIELDS:
        value = getattr(event, name)
        if value is not None and type(value) is not str:
            setattr(event, name, _as_text(value))
            dropped["text that was not text"] = dropped.get("text that was not text", 0) + 1
_SESSION_TEXT = ("format_version", "harness", "session_id", "cwd", "final_message", "cost_note")


def _as_text(value: object) -> str:
    """A value a parser passed on where text belongs (a number, a mapping), as the JSON it was written as."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _check_session_numbers(session: Session, dropped: dict[str, int]) -> None:
    for name in _SESSION_TEXT:
        value = getattr(session, name)
        if value is not None and type(value) is not str:
            setattr(session, name, _as_text(value))
            dropped["text that was not text"] = dropped.get("text that was not text", 0) + 1
    if any(type(m) is not str for m in session.models):
        session.models = [m for m in session.models if type(m) is str]
        dropped["model name"] = dropped.get("model name", 0) + 1
    for name in ("start", "end"):
        value = getattr(session, name)
        if value is not None and not _within(value, EPOCH_MIN, EPOCH_MAX):
            setattr(session, name, None)
            dropped["timestamp"] = dropped.get("timestamp", 0) + 1
    if session.duration_s is not None and not _within(session.duration_s, 0.0, EPOCH_MAX):
        session.duration_s = None
        dropped["duration"] = dropped.get("duration", 0) + 1
    if session.cost_usd is not None and not _within(session.cost_usd, 0.0, 1e12):
        session.cost_usd = None
        dropped["cost"] = dropped.get("cost", 0) + 1
    if not _usage_ok(session.tokens):
        session.tokens = Usage()
        dropped["token count"] = dropped.get("token count", 0) + 1


def _within(value: object, low: float, high: float) -> bool:
    """A real number (not a bool, not text) in [low, high]; NaN never is."""
    return (type(value) is float or type(value) is int) and low <= value <= high


def _usage_ok(usage: Usage) -> bool:
    # written out: a generator over the five counts cost twice as much, for every event with a usage
    a, b, c, d, e = _counts_of(usage)
    return (type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int
            and 0 <= a <= INT64_MAX and 0 <= b <= INT64_MAX and 0 <= c <= INT64_MAX and 0 <= d <= INT64_MAX
            and 0 <= e <= INT64_MAX)


_counts_of = attrgetter("input", "output", "cache_read", "cache_write", "reasoning")


def as_path(path: Path | str) -> Path:
    """`Path(path)`, without parsing a Path again (pathlib re-parses its argument: a few µs per file)."""
    return path if isinstance(path, Path) else Path(path)


def _parse(path: Path, read: bool = False) -> Session:
    """`read`: the file's bytes were read already (`reader.given`)."""
    if not read and not path.is_file():
        raise KernelBenchError(f"no transcript file at {path}", path=path,
                               hint="pass the session log (.jsonl or .json) the agent CLI wrote")
    head = head_records(path)                   # the head's first part; the rest is read if detection needs it
    if not head.head.strip() and not head.whole().strip():
        return _empty(path)
    records: Sequence[dict] = head
    if not head and len(head.whole()) >= HEAD_BYTES:
        records = first_records(path)           # the first lines are longer than the head
    for module in line_formats():
        if _detects(module.detect, records, head.head):   # (the head bytes read so far)
            return module.parse(path)
    if head.head.lstrip()[:1] in (b"{", b"["):  # the first byte that is not blank (the part read has one)
        doc, problem = load_document(path) if len(records) <= 1 else (None, None)
        if doc is not None and problem is None:
            for module in document_formats():
                if _detects(module.detect_document, doc):
                    return module.parse_document(path, doc)
            return _unknown_document(path, doc)
    return parse_unknown(path)


def _detects(detect, *args) -> bool:
    """A format's detector, where a record it did not expect (a list where a type name should be) means "not
    this format" rather than a failed load."""
    try:
        return bool(detect(*args))
    except (TypeError, AttributeError, ValueError, LookupError):
        return False


def _unknown_document(path: Path, doc: object) -> Session:
    builder = SessionBuilder(path, "unknown")
    builder.issue("unknown_format", f"{path.name}: a JSON document no parser recognises; shown raw")
    builder.session.records = 1
    builder.unknown(doc, 1, record_type="document")
    return builder.finish()


def _empty(path: Path) -> Session:
    builder = SessionBuilder(path, "empty")
    builder.issue("empty_file", f"{path.name} is empty: the agent wrote nothing")
    return builder.finish()


def parse_unknown(path: Path, report_unknown: bool = True) -> Session:
    """A file no parser recognises (or whose parser failed: `report_unknown=False`): every record kept as an
    unknown event, so it can still be read."""
    builder = SessionBuilder(path, "unknown")
    if report_unknown:
        builder.issue("unknown_format", f"{path.name}: no parser recognises this format; records are shown raw")
    for line in iter_lines(path):
        record = builder.accept(line)
        if record is not None:
            builder.unknown(record, line.number)
    return builder.finish()
