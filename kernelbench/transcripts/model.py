"""The normalized transcript: one session and its events, whatever agent CLI wrote the log.

Every parser produces a `Session`; the viewer, `transcript show` and the results importer read only this model.
Events are flat (one model with optional fields per kind) so that millions of them stay cheap to build and dump.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

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


class _PlainAssignment(BaseModel):
    """Field assignment without pydantic's generic path (which costs several times a dict write): parsers set
    session facts and token counts once per record, assignment is not validated anyway."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).__pydantic_fields__:      # a plain dict (model_fields is a property)
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        else:
            super().__setattr__(name, value)


class Usage(_PlainAssignment):
    """Token counts; the same names as `kernelbench.results.run.Tokens`."""

    model_config = ConfigDict(extra="ignore")

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
        mine, theirs = self.__dict__, other.__dict__     # ints added to ints: no validation to run
        mine["input"] += theirs["input"]
        mine["output"] += theirs["output"]
        mine["cache_read"] += theirs["cache_read"]
        mine["cache_write"] += theirs["cache_write"]
        mine["reasoning"] += theirs["reasoning"]

    def is_zero(self) -> bool:
        return not (self.input or self.output or self.cache_read or self.cache_write or self.reasoning)


@dataclass(slots=True, kw_only=True)
class Event:
    """One thing that happened. Which optional fields are set depends on `kind`.

    A slotted dataclass rather than a pydantic model: a long transcript holds hundreds of thousands of events,
    and a model instance costs about four times the memory and construction time. Parsers build events from
    values they have already checked; the normalized file (the one place events come from outside) is validated
    through `Event.model_validate`, and `model_dump` serializes with the same schema.
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
        """An event from untrusted data (a normalized file's record), with pydantic's checks and coercions;
        unknown keys are ignored."""
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k in EVENT_FIELDS}
        return _event_adapter().validate_python(data)

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return _event_adapter().dump_python(self, **options)


EVENT_FIELDS = frozenset(f.name for f in fields(Event))
_new_object = object.__new__


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


@lru_cache(maxsize=1)
def _event_adapter() -> TypeAdapter[Event]:
    return TypeAdapter(Event)




class ParseIssue(BaseModel):
    """Something in the file that could not be read as intended; it was parsed around, not lost."""

    line: int | None = None
    kind: str                       # bad_json | invalid_utf8 | truncated_last_line | orphan_result | not_an_object ...
    message: str


class ProviderNotice(BaseModel):
    """An error the model provider's API returned, as the CLI itself recorded it in a structured record (never
    text the agent merely read): the harness reads a run's provider error from these."""

    message: str
    status: int | None = None       # the HTTP status, where recorded
    retryable: bool | None = None   # as the CLI said, where it did
    retried: bool = False           # a retry notice: the CLI tried again after it
    line: int | None = None


class Session(_PlainAssignment):
    """A whole transcript: what ran, how it ended, what it cost, and every event in order."""

    model_config = ConfigDict(extra="ignore")

    version: int = SCHEMA_VERSION
    format: str                     # e.g. claude-session, codex-rollout, normalized, unknown
    format_version: str | None = None  # the writing tool's version, where the log records it
    harness: str | None = None      # claude, codex, opencode, gemini, kimi, cursor, scripted...
    models: list[str] = Field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    source: str | None = None       # the path it was read from
    start: float | None = None      # Unix seconds
    end: float | None = None
    duration_s: float | None = None
    complete: bool = False          # the log shows the agent finished (not cut off, not aborted)
    final_message: str | None = None
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    cost_is_estimate: bool = False
    cost_note: str | None = None    # where an estimated cost came from (price table date)
    events: list[Event] = Field(default_factory=list)
    unknown_records: dict[str, int] = Field(default_factory=dict)  # record type → count
    # bookkeeping records understood and deliberately not shown (progress ticks, file snapshots): type → count
    ignored_records: dict[str, int] = Field(default_factory=dict)
    provider_errors: list[ProviderNotice] = Field(default_factory=list)  # in order; retries included
    issues: list[ParseIssue] = Field(default_factory=list)         # first ones, with lines
    issue_counts: dict[str, int] = Field(default_factory=dict)     # all of them, by kind
    records: int = 0                # records (lines / messages) read

    def walk(self):
        """Every event, depth first, subagent events right after their span."""
        stack = list(reversed(self.events))
        while stack:
            event = stack.pop()
            yield event
            if event.events:
                stack.extend(reversed(event.events))
