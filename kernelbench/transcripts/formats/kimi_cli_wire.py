"""Older kimi-cli `wire.jsonl`: a metadata line, then `{timestamp, message: {type, payload}}` records
(TurnBegin, StepBegin, ContentPart, ToolCall, ToolResult, StatusUpdate, TurnEnd)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kernelbench.transcripts.builder import SessionBuilder, sub_object, to_epoch
from kernelbench.transcripts.formats.kimi_wire import kimi_usage
from kernelbench.transcripts.model import Event, Kind, Session

NAME = "kimi-cli-wire"


def detect(records: list[dict], head: bytes) -> bool:
    return any(isinstance(r.get("message"), dict) and "payload" in r["message"] and "type" in r["message"]
               for r in records[:10])


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="kimi")
    state = {"open_turn": False, "turns": 0}
    builder.read_records(path, lambda record, number: _record(builder, record, number, state))
    builder.session.complete = state["turns"] > 0 and not state["open_turn"]
    return builder.finish()


def _record(builder: SessionBuilder, record: dict, line: int, state: dict) -> None:
    if isinstance(record.get("message"), dict):
        _message(builder, record["message"], line, to_epoch(record.get("timestamp")), state)
    elif record.get("type") == "metadata" or "protocol_version" in record:
        builder.session.format_version = str(record.get("protocol_version") or record.get("version"))
        builder.ignore("metadata")
    else:
        builder.unknown(record, line)


def _message(builder: SessionBuilder, message: dict, line: int, ts: float | None, state: dict) -> None:
    mtype, payload = message.get("type"), message.get("payload")
    payload = payload if isinstance(payload, dict) else {"value": payload}
    if mtype == "TurnBegin":
        state["open_turn"] = True
        builder.add(Kind.USER, ts=ts, line=line, text=_text(payload.get("user_input")))
    elif mtype == "TurnEnd":
        state["open_turn"], state["turns"] = False, state["turns"] + 1
        builder.ignore(mtype)
    elif mtype == "ContentPart":
        kind = Kind.THINKING if payload.get("type") == "think" else Kind.ASSISTANT
        builder.add(kind, ts=ts, line=line, text=_text(payload.get("think") or payload.get("text")))
    elif mtype == "ToolCall":
        function = sub_object(payload, "function")
        builder.add(Kind.TOOL_CALL, ts=ts, line=line, name=str(function.get("name")), call_id=payload.get("id"),
                    input=_arguments(function.get("arguments")))
    elif mtype == "ToolResult":
        value = payload.get("return_value")
        value = value if isinstance(value, dict) else {"output": value}
        builder.result(payload.get("tool_call_id"), ts=ts, line=line, is_error=bool(value.get("is_error")),
                       output=_text(value.get("output") or value.get("message")))
    elif mtype == "StatusUpdate" and isinstance(payload.get("token_usage"), dict):
        _usage(builder, payload["token_usage"])
    elif mtype in ("StepBegin", "StepInterrupted", "StatusUpdate"):
        builder.ignore(str(mtype))
    else:
        builder.unknown(message, line, record_type=f"message:{mtype}", ts=ts)


def _usage(builder: SessionBuilder, raw: dict) -> None:
    usage = kimi_usage(raw)
    builder.session.tokens.add(usage)
    for event in reversed(builder.session.events):
        if event.kind in (Kind.ASSISTANT, Kind.THINKING, Kind.TOOL_CALL):
            event.usage = usage
            return


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"arguments": raw}
    return raw


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in value)
    return "" if value is None else str(value)


__all__ = ["NAME", "Event", "detect", "parse"]
