"""`opencode export` JSON: `{info, messages[{info, parts[]}]}`; tokens and cost per assistant message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelbench.transcripts.builder import RECORD_ERRORS, SessionBuilder, amount, sub_object, to_epoch
from kernelbench.transcripts.formats.opencode_common import add_part, note_opencode_error, opencode_usage
from kernelbench.transcripts.model import Kind, Session

NAME = "opencode-export"


def detect_document(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("info"), dict) and isinstance(doc.get("messages"), list)


def parse_document(path: Path, doc: dict) -> Session:
    builder = SessionBuilder(path, NAME, harness="opencode")
    info = doc["info"]
    session = builder.session
    session.session_id, session.cwd = info.get("id"), info.get("directory")
    session.format_version = info.get("version")
    times = sub_object(info, "time")
    session.start, session.end = to_epoch(times.get("created")), to_epoch(times.get("updated"))
    if info.get("title"):
        builder.add(Kind.SYSTEM, ts=session.start, record_type="title", text=f"Session title: {info['title']}")
    cost = 0.0
    for index, message in enumerate(doc["messages"], start=1):
        session.records += 1
        if not isinstance(message, dict) or not isinstance(message.get("info"), dict):
            builder.unknown(message, index, record_type="message")
            continue
        try:
            cost += _message(builder, message, index)
        except RECORD_ERRORS as exc:
            builder.unreadable(message, index, exc)
    if cost > 0:
        session.cost_usd = cost
    session.complete = _finished(doc["messages"])
    return builder.finish()


def _message(builder: SessionBuilder, message: dict, index: int) -> float:
    """Events of one message; returns the cost the message records."""
    info = message["info"]
    role = info.get("role")
    times = sub_object(info, "time")
    ts = to_epoch(times.get("created"))
    model = info.get("modelID") or (info.get("model") or {}).get("modelID") if role == "assistant" else None
    builder.note_model(model)
    if role == "user" and (info.get("summary") or {}).get("diffs"):
        builder.ignore("summary.diffs")     # the net change of the turn; its edits are shown where they happen
    first = len(builder._stack[-1])
    for part in message.get("parts") or []:
        if isinstance(part, dict):
            add_part(builder, part, role=str(role), line=index, ts=ts, model=model)
        else:
            builder.unknown(part, index, record_type="part")
    if isinstance(info.get("error"), dict):
        error = info["error"]
        text = (error.get("data") or {}).get("message") if isinstance(error.get("data"), dict) else None
        builder.add(Kind.SYSTEM, ts=to_epoch(times.get("completed")) or ts, line=index, record_type="error",
                    is_error=True, text=f"{error.get('name')}: {text or ''}")
        note_opencode_error(builder, error, index, ts)
    _attach_usage(builder, first, opencode_usage(info.get("tokens")))
    return amount(info.get("cost"))


def _attach_usage(builder: SessionBuilder, first: int, usage) -> None:
    if usage is None or usage.is_zero():
        return
    events = builder._stack[-1][first:]
    owner = next((e for e in reversed(events) if e.kind in (Kind.ASSISTANT, Kind.THINKING, Kind.TOOL_CALL)), None)
    if owner is None:
        owner = builder.add(Kind.SYSTEM, record_type="usage", text="Model response without content")
    owner.usage = usage


def _finished(messages: list) -> bool:
    for message in reversed(messages):
        info = message.get("info") if isinstance(message, dict) else None
        if isinstance(info, dict) and info.get("role") == "assistant":
            return info.get("finish") == "stop" and not info.get("error")
    return False
