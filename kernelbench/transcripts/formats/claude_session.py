"""Claude Code session file: `~/.claude/projects/<cwd>/<sessionId>.jsonl`, plus its subagent files."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from kernelbench import inputs
from kernelbench.transcripts.builder import SessionBuilder, to_epoch
from kernelbench.transcripts.formats.claude_common import ClaudeMessages, record_time
from kernelbench.transcripts.formats.records import ClaudeRecord, DictLike, RecordLike, claude_decode
from kernelbench.transcripts.model import Event, Kind, Session
from kernelbench.transcripts.reader import head_records

NAME = "claude-session"
CLAUDE_TYPES = {"user", "assistant", "summary", "file-history-snapshot", "queue-operation", "progress", "system"}
IGNORED = {"file-history-snapshot", "progress", "permission-mode", "last-prompt", "custom-title", "agent-name"}


def detect(records: list[dict], head: bytes) -> bool:
    for record in islice(records, 20):       # decoded one by one, as far as needed
        if record.get("type") in CLAUDE_TYPES and ("sessionId" in record or "uuid" in record
                                                   or "messageId" in record or "leafUuid" in record):
            return True
    return False


def parse(path: Path, *, with_subagents: bool = True) -> Session:
    builder = SessionBuilder(path, NAME, harness="claude")
    messages = ClaudeMessages(builder)
    state = _State()
    builder.read_records(path, lambda record, number: _record(builder, messages, state, record, number),
                         claude_decode)
    builder.close_subagent()
    messages.finish()
    if with_subagents and not state.is_agent_file:
        attach_subagent_files(builder, path, messages.agent_results)
    builder.session.complete = ends_with_answer(builder.session.events)
    return builder.finish()


def _record(builder: SessionBuilder, messages: ClaudeMessages, state: _State, record: ClaudeRecord | dict,
            number: int) -> None:
    session = builder.session
    if type(record) is ClaudeRecord:        # attributes: an absent field reads as UNSET, which is falsy
        rtype, session_id, version, cwd = record.type, record.sessionId, record.version, record.cwd
        sidechain, stamp = record.isSidechain, record.timestamp     # (to_epoch reads UNSET as no time)
    else:                                   # a line of another shape, decoded in full
        get = record.get
        rtype, session_id, version, cwd = get("type"), get("sessionId"), get("version"), get("cwd")
        sidechain, stamp = get("isSidechain"), get("timestamp")
    # session facts: the last one wins, since a resumed session starts with records carried over from the
    # one before it (compared first: the same values repeat on every record)
    if session_id and session_id != session.session_id and rtype in ("user", "assistant", "system"):
        session.session_id = session_id
    if version != session.format_version and isinstance(version, str):
        session.format_version = version
    if session.cwd is None and isinstance(cwd, str):
        session.cwd = cwd
    if rtype == "assistant" or rtype == "user":
        sidechain = bool(sidechain)
        if state.first:
            state.first = False
            state.is_agent_file = sidechain or "agentId" in record
        ts = to_epoch(stamp)
        if not state.is_agent_file and sidechain != state.in_sidechain:
            _toggle_sidechain(builder, state, ts)
        if rtype == "assistant":
            messages.assistant(record, number, ts)
        else:
            messages.user(record, number, ts)
    elif rtype in IGNORED:
        builder.ignore(rtype)
    else:
        _other_record(builder, record, rtype, number)


class _State:
    def __init__(self) -> None:
        self.first = True
        self.is_agent_file = False   # the whole file is one subagent's log: no span around it
        self.in_sidechain = False


def _toggle_sidechain(builder: SessionBuilder, state: _State, ts: float | None) -> None:
    """Older versions logged Task subagents inline as sidechain records: fold each run of them into a span."""
    if state.in_sidechain:
        builder.close_subagent()
    else:
        builder.open_subagent(name="sidechain", ts=ts, text="subagent (sidechain)")
    state.in_sidechain = not state.in_sidechain


def _other_record(builder: SessionBuilder, record: RecordLike, rtype: object, line: int) -> None:
    ts = record_time(record)
    if rtype == "system":
        system_record(builder, record, line, ts)
    elif rtype == "summary":
        builder.add(Kind.SYSTEM, line=line, record_type="summary", text=f"Session title: {record.get('summary')}")
    elif rtype == "queue-operation":
        _queue_operation(builder, record, line, ts)
    else:                               # kept whole: the typed record holds only the fields read
        builder.unknown(builder.raw_record() if isinstance(record, DictLike) else record, line, ts=ts)


def system_record(builder: SessionBuilder, record: RecordLike, line: int, ts: float | None) -> None:
    subtype = record.get("subtype")
    if subtype == "compact_boundary":
        meta = record.get("compactMetadata") or {}
        text = f"Context compacted ({meta.get('trigger', 'auto')}, {meta.get('preTokens', '?')} tokens before)"
        builder.add(Kind.COMPACTION, ts=ts, line=line, text=text, record_type=subtype)
    elif subtype == "api_retry":
        status = record.get("error_status")
        builder.provider_error(f"API error {status or ''} {record.get('error') or ''}: retrying (attempt "
                               f"{record.get('attempt')} of {record.get('max_retries')})".replace("  ", " "),
                               line=line, ts=ts, status=status, retried=True)
    elif subtype == "turn_duration" and isinstance(record.get("durationMs"), (int, float)):
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type=subtype,
                    text=f"Turn took {record['durationMs'] / 1000:.1f} s")
    else:
        content = record.get("content")
        text = content if isinstance(content, str) else str(subtype or "system")
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type=str(subtype), text=text,
                    is_error=record.get("level") == "error" or None)


def _queue_operation(builder: SessionBuilder, record: RecordLike, line: int, ts: float | None) -> None:
    content = record.get("content")
    if record.get("operation") == "enqueue" and isinstance(content, str) and content:
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="queued", text=f"Queued by the user: {content}")
    else:
        builder.ignore(f"queue-operation:{record.get('operation')}")


def ends_with_answer(events: list[Event]) -> bool:
    """No end record in this format: finished means the last model output is an answer, not a pending call."""
    for event in reversed(events):
        if event.kind is Kind.ASSISTANT:
            return not event.is_error
        if event.kind in (Kind.TOOL_CALL, Kind.TOOL_RESULT, Kind.THINKING, Kind.USER):
            return False
    return False


# ---------------------------------------------------------------------------------------------- subagent files

def subagent_files(path: Path, session_id: str | None) -> tuple[list[Path], list[inputs.InputRefused]]:
    """`<sessionId>/subagents/agent-*.jsonl` and sibling `agent-*.jsonl` files that name this session, each read
    only if the input policy allows it (a regular file inside the log's folder); and the ones refused."""
    if not isinstance(session_id, str) or not session_id or "/" in session_id or session_id in (".", ".."):
        return [], []  # a session id names a folder beside the log, never a path elsewhere
    found, refused = inputs.sidecars(sorted((path.parent / session_id / "subagents").glob("agent-*.jsonl")),
                                     path.parent)
    siblings, more = inputs.sidecars(sorted(path.parent.glob("*agent-*.jsonl")), path.parent)
    for candidate in siblings:
        if candidate == path or candidate in found:
            continue
        head = head_records(candidate, limit=3)
        if any(r.get("sessionId") == session_id for r in head):
            found.append(candidate)
    return found, refused + more


def attach_subagent_files(builder: SessionBuilder, path: Path, agent_results: dict[str, Event]) -> None:
    session = builder.session
    allowed, refused = subagent_files(path, session.session_id)
    for exc in refused:
        builder.issue("sidecar_refused", f"subagent log {exc.diagnostic.path} {exc.diagnostic.message}")
    for sub_path in allowed:
        sub = parse(sub_path, with_subagents=False)
        agent_id = _agent_id(sub_path)
        span = Event(kind=Kind.SUBAGENT, name=agent_id, source=sub_path.name, events=sub.events,
                     ts=sub.start, text=_first_prompt(sub.events), duration_s=sub.duration_s)
        for model in sub.models:
            builder.note_model(model)
        _merge_counts(session.unknown_records, sub.unknown_records)
        _merge_counts(session.issue_counts, sub.issue_counts)
        _place_span(session.events, span, agent_results.get(agent_id))


def _agent_id(sub_path: Path) -> str:
    head = head_records(sub_path, limit=1)
    if head and isinstance(head[0].get("agentId"), str):
        return head[0]["agentId"]
    return sub_path.stem.split("agent-", 1)[-1]


def _first_prompt(events: list[Event]) -> str | None:
    return next((e.text for e in events if e.kind is Kind.USER and e.text), None)


def _merge_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for key, value in counts.items():
        into[key] = into.get(key, 0) + value


def _place_span(events: list[Event], span: Event, after: Event | None) -> None:
    """Right after the Task result that launched it; otherwise where its first timestamp falls."""
    if after is not None:
        for index, event in enumerate(events):
            if event is after:
                events.insert(index + 1, span)
                return
    if span.ts is not None:
        for index, event in enumerate(events):
            if event.ts is not None and event.ts > span.ts:
                events.insert(index, span)
                return
    events.append(span)
