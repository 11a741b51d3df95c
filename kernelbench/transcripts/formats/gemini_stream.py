"""`gemini -o stream-json`: init, message (assistant text may arrive as deltas), tool_use, tool_result, result."""

from __future__ import annotations

from pathlib import Path

from kernelbench.transcripts.builder import SessionBuilder, http_status, sub_object, to_epoch, token_count
from kernelbench.transcripts.model import Event, Kind, Session, Usage

NAME = "gemini-stream"


def detect(records: list[dict], head: bytes) -> bool:
    return any(r.get("type") in ("tool_use", "tool_result") and ("tool_id" in r or "tool_name" in r)
               for r in records[:40]) or any(r.get("type") == "init" and "session_id" in r and "model" in r
                                            for r in records[:3])


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="gemini")
    last: list[Event | None] = [None]
    builder.read_records(path, lambda record, number: _record(builder, record, number, last))
    return builder.finish()


def _record(builder: SessionBuilder, record: dict, line: int, last: list[Event | None]) -> None:
    rtype, ts = record.get("type"), to_epoch(record.get("timestamp"))
    session = builder.session
    if rtype == "init":
        session.session_id, session.cwd = record.get("session_id"), record.get("cwd")
        builder.note_model(record.get("model"))
        builder.ignore("init")
    elif rtype == "message":
        text, role = str(record.get("content") or ""), record.get("role")
        previous = last[0]
        if record.get("delta") and previous is not None and previous.kind is Kind.ASSISTANT and role != "user":
            previous.text = (previous.text or "") + text
            return
        kind = Kind.USER if role == "user" else Kind.ASSISTANT
        last[0] = builder.add(kind, ts=ts, line=line, text=text)
        return
    elif rtype == "tool_use":
        builder.add(Kind.TOOL_CALL, ts=ts, line=line, name=str(record.get("tool_name")), call_id=record.get("tool_id"),
                    input=record.get("parameters"))
    elif rtype == "tool_result":
        output, error = record.get("output"), record.get("error")
        if output is None and error is not None:
            output = error.get("message") if isinstance(error, dict) else error
        builder.result(record.get("tool_id"), ts=ts, line=line, output="" if output is None else str(output),
                       is_error=record.get("status") not in (None, "success"))
    elif rtype == "result":
        _result(builder, record, line, ts)
    elif rtype == "error":
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="error", is_error=True,
                    text=str(record.get("message")))
        builder.provider_error(str(record.get("message")), line=line, ts=ts, event=False,
                               status=http_status(str(record.get("message"))))
    else:
        builder.unknown(record, line, ts=ts)
    last[0] = None


def _result(builder: SessionBuilder, record: dict, line: int, ts: float | None) -> None:
    session = builder.session
    session.complete = record.get("status") in (None, "success") and not record.get("error")
    stats = sub_object(record, "stats")
    if isinstance(stats.get("duration_ms"), (int, float)):
        session.duration_s = stats["duration_ms"] / 1000.0
    cached = token_count(stats.get("cached"))
    usage = Usage(input=max(0, token_count(stats.get("input_tokens", stats.get("input"))) - cached),
                  output=token_count(stats.get("output_tokens")), cache_read=cached)
    if not usage.is_zero():
        session.tokens = usage
    builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="result", text=f"Result: {record.get('status')}",
                is_error=record.get("status") not in (None, "success") or None)
    error = record.get("error")
    if error:
        message = str(error.get("message") if isinstance(error, dict) else error)
        builder.provider_error(message, line=line, ts=ts, event=False, status=http_status(message))
