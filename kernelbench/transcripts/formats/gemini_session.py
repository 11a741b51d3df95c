"""Gemini CLI chat recording: `~/.gemini/tmp/<hash>/chats/session-*.json`,
`{sessionId, startTime, lastUpdated, messages[{id, timestamp, type, content, thoughts, tokens, model, toolCalls}]}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelbench.transcripts import diffs
from kernelbench.transcripts.builder import RECORD_ERRORS, SessionBuilder, to_epoch, token_count
from kernelbench.transcripts.formats.claude_session import ends_with_answer
from kernelbench.transcripts.model import Kind, Session, Usage

NAME = "gemini-session"


def detect_document(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("messages"), list) and (
        "sessionId" in doc or "projectHash" in doc or "startTime" in doc)


def parse_document(path: Path, doc: dict, *, fmt: str = NAME, lines: dict[int, int] | None = None) -> Session:
    builder = SessionBuilder(path, fmt, harness="gemini")
    session = builder.session
    session.session_id = doc.get("sessionId")
    session.start, session.end = to_epoch(doc.get("startTime")), to_epoch(doc.get("lastUpdated"))
    for index, message in enumerate(doc["messages"], start=1):
        session.records += 1
        line = (lines or {}).get(index - 1, index)
        if isinstance(message, dict):
            try:
                add_message(builder, message, line)
            except RECORD_ERRORS as exc:
                builder.unreadable(message, line, exc)
        else:
            builder.unknown(message, line, record_type="message")
    session.complete = ends_with_answer(session.events)
    return builder.finish()


def gemini_usage(tokens: Any) -> Usage | None:
    """Gemini's `input` includes cached tokens; thoughts are billed as output."""
    if not isinstance(tokens, dict):
        return None
    cached = token_count(tokens.get("cached"))
    thoughts = token_count(tokens.get("thoughts"))
    return Usage(input=max(0, token_count(tokens.get("input")) - cached) + token_count(tokens.get("tool")),
                 cache_read=cached, output=token_count(tokens.get("output")) + thoughts, reasoning=thoughts)


def add_message(builder: SessionBuilder, message: dict, line: int) -> None:
    mtype, ts = message.get("type"), to_epoch(message.get("timestamp"))
    text = content_text(message.get("content"))
    model = message.get("model") if isinstance(message.get("model"), str) else None
    if mtype == "user":
        builder.add(Kind.USER, ts=ts, line=line, text=text)
        return
    if mtype in ("info", "error", "warning"):
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type=mtype, text=text, is_error=mtype == "error" or None)
        return
    if mtype != "gemini":
        builder.unknown(message, line, record_type=f"message:{mtype}", ts=ts)
        return
    last = None
    for thought in message.get("thoughts") or []:
        if isinstance(thought, dict):
            last = builder.add(Kind.THINKING, ts=to_epoch(thought.get("timestamp")) or ts, line=line, model=model,
                               text=f"**{thought.get('subject', '')}** {thought.get('description', '')}".strip())
    if text:
        last = builder.add(Kind.ASSISTANT, ts=ts, line=line, text=text, model=model)
    for call in message.get("toolCalls") or []:
        if isinstance(call, dict):
            last = _tool_call(builder, call, line, ts, model) or last
    usage = gemini_usage(message.get("tokens"))
    if usage is not None:
        if last is None:
            last = builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="usage", text="Model response", model=model)
        last.usage = usage


def _tool_call(builder: SessionBuilder, call: dict, line: int, ts: float | None, model: str | None):
    call_id, name = call.get("id"), str(call.get("name"))
    event = builder.add(Kind.TOOL_CALL, ts=ts, line=line, name=name, call_id=call_id, input=call.get("args"),
                        model=model)
    status = call.get("status")
    output, error = _response(call.get("result"))
    if output is None and isinstance(call.get("resultDisplay"), str):
        output = call["resultDisplay"]
    builder.result(call_id, ts=to_epoch(call.get("timestamp")) or ts, line=line, output=output or error or "",
                   is_error=status in ("error", "cancelled") or bool(error))
    if status == "success":
        for path, diff in _edits(name, call.get("args"), call.get("resultDisplay")):
            builder.add(Kind.FILE_EDIT, ts=ts, line=line, path=path, diff=diff, call_id=call_id)
    return event


def _response(result: Any) -> tuple[str | None, str | None]:
    outputs, errors = [], []
    for item in result if isinstance(result, list) else [result]:
        response = ((item or {}).get("functionResponse") or {}).get("response") if isinstance(item, dict) else None
        if isinstance(response, dict):
            if "output" in response:
                outputs.append(str(response["output"]))
            if "error" in response:
                errors.append(str(response["error"]))
    return ("\n".join(outputs) if outputs else None), ("\n".join(errors) if errors else None)


def _edits(name: str, args: Any, display: Any) -> list[tuple[str, str]]:
    args = args if isinstance(args, dict) else {}
    path = args.get("file_path") or args.get("path")
    if not path and isinstance(display, dict):
        path = display.get("fileName")
    if not isinstance(path, str):
        return []
    if isinstance(display, dict) and isinstance(display.get("fileDiff"), str):
        return [(path, display["fileDiff"])]
    if name == "write_file" and isinstance(args.get("content"), str):
        return [(path, diffs.from_creation(path, args["content"]))]
    if name == "replace" and isinstance(args.get("old_string"), str):
        return [(path, diffs.from_strings(path, args["old_string"], str(args.get("new_string", ""))))]
    return []


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)
