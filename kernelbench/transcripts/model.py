"""The normalized transcript: one session and its events, whatever agent CLI wrote the log.

Every parser produces a `Session`; the viewer, `transcript show` and the results importer read only this model.
Events are flat (one class with optional fields per kind) so that millions of them stay cheap to build and dump.

The classes are msgspec Structs and a slotted dataclass rather than pydantic models: the transcript commands
import this module first, and pydantic's import and model construction cost them about 60 ms of start-up. Where
data comes from outside (the normalized file's event records), `Event.model_validate` converts it with msgspec,
strictly (no text for a number, no `true` for a count); the parsers build everything else from values they have
already checked, and `loader.check_values` drops, after any parse, the numbers no session holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from enum import StrEnum
from operator import attrgetter
from typing import Any

import msgspec

SCHEMA_VERSION = 1


class Kind(StrEnum):
    USER = "user"                # a prompt from the person (or the harness acting for them)
    ASSISTANT = "assistant"      # text the model wrote
    THINKING = "thinking"        # reasoning / thinking blocks (possibly only a summary)
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    FILE_EDIT = "file_edit"      # an edit shown as a unified diff
    SUBAGENT = "subagent"        # a span holding the events of a sub-agent
    COMPACTION = "compaction"    # the context was summarised / compacted
    SYSTEM = "system"            # notices: injected context, errors, turn boundaries the format records
    UNKNOWN = "unknown"          # a record no parser understood, kept verbatim


# The members as module constants for per-event code: on Python 3.11 every `Kind.X` read goes through EnumType's
# __getattr__ hook (a few hundred instructions), where a module global is one dict read
USER, ASSISTANT, THINKING = Kind.USER, Kind.ASSISTANT, Kind.THINKING
TOOL_CALL, TOOL_RESULT, FILE_EDIT = Kind.TOOL_CALL, Kind.TOOL_RESULT, Kind.FILE_EDIT
SUBAGENT, COMPACTION, SYSTEM, UNKNOWN = Kind.SUBAGENT, Kind.COMPACTION, Kind.SYSTEM, Kind.UNKNOWN


class Usage(msgspec.Struct, kw_only=True):
    """Token counts; the same names as `kernelbench.results.run.Tokens`."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, other: Usage | None) -> None:
        if other is None:
            return
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.reasoning += other.reasoning

    def is_zero(self) -> bool:
        return not (self.input or self.output or self.cache_read or self.cache_write or self.reasoning)

    @classmethod
    def sum_of(cls, usages: list[Usage]) -> Usage:
        """The counts of `usages` added up, a new object: what `add` of each into a `Usage()` makes (the counts
        are whole numbers), summed a field at a time in C rather than by a call per usage."""
        return cls(input=sum(map(_INPUT, usages)), output=sum(map(_OUTPUT, usages)),
                   cache_read=sum(map(_CACHE_READ, usages)), cache_write=sum(map(_CACHE_WRITE, usages)),
                   reasoning=sum(map(_REASONING, usages)))

    def model_dump(self) -> dict[str, int]:
        return {"input": self.input, "output": self.output, "cache_read": self.cache_read,
                "cache_write": self.cache_write, "reasoning": self.reasoning}


_INPUT, _OUTPUT, _CACHE_READ, _CACHE_WRITE, _REASONING = (
    attrgetter(name) for name in ("input", "output", "cache_read", "cache_write", "reasoning"))


@dataclass(slots=True, kw_only=True)
class Event:
    """One thing that happened. Which optional fields are set depends on `kind`.

    A slotted dataclass: a long transcript holds hundreds of thousands of events, and a pydantic model instance
    costs about four times the memory and construction time. Parsers build events from values they have already
    checked; the normalized file (the one place events come from outside) is validated through
    `Event.model_validate`, and `model_dump` writes what it reads back.
    """

    id: int = 0                     # unique in the session (subagent events included): the anchor `#e-<id>`
    kind: Kind
    ts: float | None = None         # Unix seconds, where the format records time
    line: int | None = None         # 1-based line (record) of the source file it came from
    source: str | None = None       # file name, when the event came from another file (a subagent log)
    text: str | None = None         # user / assistant / thinking / system / compaction text
    name: str | None = None         # tool name (tool_call, tool_result), subagent name
    call_id: str | None = None      # pairs a tool_call with its tool_result
    input: Any = None               # tool_call arguments (usually a dict)
    output: str | None = None       # tool_result output
    is_error: bool | None = None
    exit_code: int | None = None
    duration_s: float | None = None  # tool_result: how long the call took, where known
    path: str | None = None         # file_edit
    diff: str | None = None         # file_edit: unified diff
    model: str | None = None        # assistant / thinking: which model wrote it
    usage: Usage | None = None      # tokens of the API response this event closes (counted once)
    record_type: str | None = None  # unknown: the record's type; system: its subtype
    raw: str | None = None          # unknown: the record as JSON text
    events: list[Event] | None = None  # subagent: its own events

    @classmethod
    def model_validate(cls, data: Any) -> Event:
        """An event from untrusted data (a normalized file's record), every field of its declared type: no text
        for a number, no `true` or `1.0` for an integer (a whole number is taken for a float); unknown keys are
        ignored. Raises `msgspec.ValidationError` (a ValueError) naming the field."""
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k in EVENT_FIELDS}
        return msgspec.convert(data, cls)

    def model_dump(self, *, exclude_none: bool = False, exclude: frozenset[str] | set[str] = frozenset()
                   ) -> dict[str, Any]:
        """The event as JSON values (`kind` as its text, `usage` and a subagent's events as objects), what
        `model_validate` reads back; `exclude_none` applies to the subagent's events too, `exclude` to this one."""
        data = msgspec.to_builtins(self)
        if exclude_none:
            _drop_none(data)
        for name in exclude:
            data.pop(name, None)
        return data


def _drop_none(data: dict[str, Any]) -> None:
    """Unset fields out of a dumped event and its subagent's events (never out of a tool's input)."""
    for name in [name for name, value in data.items() if value is None]:
        del data[name]
    for inner in data.get("events") or ():
        _drop_none(inner)


EVENT_FIELDS = frozenset(f.name for f in fields(Event))
_new_object = object.__new__
_NONE = type(None)
# the fields whose JSON value is stored as it is when it already has the field's type; a value of any other type
# (a whole number where a float belongs, a mapping for `usage`, a subagent's `events`) is msgspec's to convert
_TAKEN_AS_IS: dict[str, tuple[type, ...]] = {
    **{name: (str, _NONE) for name in ("source", "text", "name", "call_id", "output", "path", "diff", "model",
                                       "record_type", "raw")},
    "ts": (float, _NONE), "duration_s": (float, _NONE), "line": (int, _NONE), "exit_code": (int, _NONE),
    "is_error": (bool, _NONE),
}
_KIND_OF_TEXT = {kind.value: kind for kind in Kind}


def plain_event(data: dict[str, Any]) -> Event | None:
    """The event of a record (keys: Event fields) whose every value already has its field's type, as the
    normalized writer's own records do, built by slot stores; None for any other record, for
    `Event.model_validate` to convert or refuse. Both make the same event (a test holds them equal), but
    msgspec's conversion into a dataclass costs three times these stores and checks, and a 200 KB log has 500
    events."""
    kind = data.get("kind")
    if type(kind) is not str or kind not in _KIND_OF_TEXT:
        return None
    event = new_event(_KIND_OF_TEXT[kind])
    for name, value in data.items():
        if name == "input":  # any JSON value
            event.input = value
        elif name != "kind":
            types = _TAKEN_AS_IS.get(name)
            if types is None or type(value) not in types:
                return None
            setattr(event, name, value)
    return event


def plain_record_event(record: dict[str, Any], line: int) -> Event | None:
    """`plain_event` of a normalized file's event record as read: its `type`, its `id` and every key that is no
    Event field left out, and `line` the record's own line where it names none; None where `plain_event` of
    those fields would be None. One pass over the record: filtering it into a new dict first cost a third as
    much again as building the event."""
    kind = record.get("kind")
    if type(kind) is not str or kind not in _KIND_OF_TEXT:
        return None
    event = new_event(_KIND_OF_TEXT[kind], line=line)
    for name, value in record.items():
        if name == "input":  # any JSON value
            event.input = value
        elif name != "kind":
            types = _TAKEN_AS_IS.get(name)
            if types is None:
                if name == "id" or name not in EVENT_FIELDS:  # not read from the record
                    continue
                return None
            if type(value) not in types:
                return None
            setattr(event, name, value)
    return event


def new_event(kind: Kind, ts: float | None = None, line: int | None = None, source: str | None = None,
              text: str | None = None, name: str | None = None, call_id: str | None = None, input: Any = None,
              output: str | None = None, is_error: bool | None = None, exit_code: int | None = None,
              duration_s: float | None = None, path: str | None = None, diff: str | None = None,
              model: str | None = None, usage: Usage | None = None, record_type: str | None = None,
              raw: str | None = None, events: list[Event] | None = None) -> Event:
    """`Event(kind=..., ...)` for the parsers' hot paths: the dataclass `__init__`, reached through the type call
    with keyword-only arguments, costs three times these plain slot stores (measured: 2.0 µs against 0.7 µs per
    event, a tenth of a parse). Every field is set, as the dataclass would (a test holds the two equal)."""
    event = _new_object(Event)
    event.id = 0
    event.kind = kind
    event.ts = ts
    event.line = line
    event.source = source
    event.text = text
    event.name = name
    event.call_id = call_id
    event.input = input
    event.output = output
    event.is_error = is_error
    event.exit_code = exit_code
    event.duration_s = duration_s
    event.path = path
    event.diff = diff
    event.model = model
    event.usage = usage
    event.record_type = record_type
    event.raw = raw
    event.events = events
    return event


class ParseIssue(msgspec.Struct, kw_only=True):
    """Something in the file that could not be read as intended; it was parsed around, not lost."""

    line: int | None = None
    kind: str                       # bad_json | invalid_utf8 | truncated_last_line | orphan_result | not_an_object ...
    message: str

    def model_dump(self) -> dict[str, Any]:
        return {"line": self.line, "kind": self.kind, "message": self.message}


class ProviderNotice(msgspec.Struct, kw_only=True):
    """An error the model provider's API returned, as the CLI itself recorded it in a structured record (never
    text the agent merely read): the harness reads a run's provider error from these."""

    message: str
    status: int | None = None       # the HTTP status, where recorded
    retryable: bool | None = None   # as the CLI said, where it did
    retried: bool = False           # a retry notice: the CLI tried again after it
    line: int | None = None


class Session(msgspec.Struct, kw_only=True):
    """A whole transcript: what ran, how it ended, what it cost, and every event in order."""

    version: int = SCHEMA_VERSION
    format: str                     # e.g. claude-session, codex-rollout, normalized, unknown
    format_version: str | None = None  # the writing tool's version, where the log records it
    harness: str | None = None      # claude, codex, opencode, gemini, kimi, cursor, scripted...
    models: list[str] = msgspec.field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    source: str | None = None       # the path it was read from
    start: float | None = None      # Unix seconds
    end: float | None = None
    duration_s: float | None = None
    complete: bool = False          # the log shows the agent finished (not cut off, not aborted)
    final_message: str | None = None
    tokens: Usage = msgspec.field(default_factory=Usage)
    cost_usd: float | None = None
    cost_is_estimate: bool = False
    cost_note: str | None = None    # where an estimated cost came from (price table date)
    events: list[Event] = msgspec.field(default_factory=list)
    unknown_records: dict[str, int] = msgspec.field(default_factory=dict)  # record type → count
    # bookkeeping records understood and deliberately not shown (progress ticks, file snapshots): type → count
    ignored_records: dict[str, int] = msgspec.field(default_factory=dict)
    provider_errors: list[ProviderNotice] = msgspec.field(default_factory=list)  # in order; retries included
    issues: list[ParseIssue] = msgspec.field(default_factory=list)         # first ones, with lines
    issue_counts: dict[str, int] = msgspec.field(default_factory=dict)     # all of them, by kind
    records: int = 0                # records (lines / messages) read

    def walk(self) -> Iterator[Event]:
        """Every event, depth first, subagent events right after their span (`all_events`)."""
        return iter(all_events(self.events))

    def model_dump(self) -> dict[str, Any]:
        """Every field as JSON values, events and all (for comparing two parses)."""
        return msgspec.to_builtins(self)


_EVENTS_OF, _USAGE_OF = attrgetter("events"), attrgetter("usage")


def all_events(events: list[Event]) -> list[Event]:
    """`events` and every subagent's events, depth first, each subagent's right after its span. A log without
    subagent spans (most) is its list as it is, found so by one pass in C; the walks over every event (numbering,
    checks, totals) then iterate a list rather than resume a generator per event. Not to be changed by the
    caller: it may be the session's own list."""
    if not any(map(_EVENTS_OF, events)):
        return events
    out: list[Event] = []
    stack = list(reversed(events))
    while stack:
        event = stack.pop()
        out.append(event)
        if event.events:
            stack.extend(reversed(event.events))
    return out


def usages_of(events: list[Event]) -> list[Usage]:
    """The usage of each of `events` that has one, in order."""
    return [usage for usage in map(_USAGE_OF, events) if usage is not None]
