"""Cursor agent `--output-format stream-json`: system/init, user, thinking (deltas), assistant, tool_call
(started / completed, the tool's name is the key of `tool_call`), result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelbench.transcripts import diffs
from kernelbench.transcripts.builder import SessionBuilder, sub_object, to_epoch, token_count
from kernelbench.transcripts.formats.claude_common import flatten_content
from kernelbench.transcripts.model import Event, Kind, Session, Usage

NAME = "cursor-stream"


def detect(records: list[dict], head: bytes) -> bool:
    if any(r.get("type") == "tool_call" and "call_id" in r for r in records[:40]):
        return True
    if any(r.get("type") == "thinking" and r.get("subtype") in ("delta", "completed") for r in records[:40]):
        return True
    return any(r.get("type") == "system" and r.get("subtype") == "init" and "apiKeySource" in r
               and "claude_code_version" not in r and "tools" not in r for r in records[:3])


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="cursor")
    last: list[Event | None] = [None]
    builder.read_records(path, lambda record, number: _record(builder, record, number, last))
    return builder.finish()


def _record(builder: SessionBuilder, record: dict, line: int, last: list[Event | None]) -> None:
    rtype, ts = record.get("type"), to_epoch(record.get("timestamp_ms") or record.get("timestamp"))
    if rtype == "thinking":
        _thinking(builder, record, line, ts, last)
        return
    if rtype == "assistant":
        text = flatten_content((record.get("message") or {}).get("content"))
        previous = last[0]
        if previous is not None and previous.kind is Kind.ASSISTANT and record.get("partial"):
            previous.text = (previous.text or "") + text
        else:
            last[0] = builder.add(Kind.ASSISTANT, ts=ts, line=line, text=text, model=_model(builder))
        return
    last[0] = None
    if rtype == "system" and record.get("subtype") == "init":
        session = builder.session
        session.session_id, session.cwd = record.get("session_id"), record.get("cwd")
        builder.note_model(record.get("model"))
        builder.ignore("system:init")
    elif rtype == "user":
        builder.add(Kind.USER, ts=ts, line=line, text=flatten_content((record.get("message") or {}).get("content")))
    elif rtype == "tool_call":
        _tool_call(builder, record, line, ts)
    elif rtype == "result":
        _result(builder, record, line, ts)
    else:
        builder.unknown(record, line, ts=ts)


def _thinking(builder: SessionBuilder, record: dict, line: int, ts: float | None, last: list[Event | None]) -> None:
    if record.get("subtype") == "completed":
        builder.ignore("thinking:completed")
        return
    previous = last[0]
    text = str(record.get("text") or "")
    if previous is not None and previous.kind is Kind.THINKING:
        previous.text = (previous.text or "") + text
    else:
        last[0] = builder.add(Kind.THINKING, ts=ts, line=line, text=text, model=_model(builder))


def _tool_call(builder: SessionBuilder, record: dict, line: int, ts: float | None) -> None:
    call_id = record.get("call_id")
    wrapper = sub_object(record, "tool_call")
    key = next(iter(wrapper), "tool")
    body = sub_object(wrapper, key)
    name = key.removesuffix("ToolCall")
    if record.get("subtype") == "started" or builder.call(call_id) is None:
        builder.add(Kind.TOOL_CALL, ts=ts, line=line, name=name, call_id=call_id, input=body.get("args"),
                    model=_model(builder))
    if record.get("subtype") != "completed":
        return
    result = sub_object(body, "result")
    is_error = "error" in result or "failure" in result
    payload = next((result[key] for key in ("error", "failure", "success") if key in result), result)
    output, exit_code = _output(payload)
    builder.result(call_id, ts=ts, line=line, output=output, is_error=is_error or exit_code not in (None, 0),
                   exit_code=exit_code)
    args = sub_object(body, "args")
    if not is_error and name in ("edit", "write") and isinstance(args.get("path"), str):
        _edit(builder, args, payload, line, ts, call_id)


def _output(payload: Any) -> tuple[str, int | None]:
    if isinstance(payload, dict):
        parts = [str(payload[k]) for k in ("stdout", "stderr", "content", "output", "message") if payload.get(k)]
        exit_code = payload.get("exitCode") if isinstance(payload.get("exitCode"), int) else None
        return ("\n".join(parts) if parts else flatten_content(str(payload))), exit_code
    return ("" if payload is None else str(payload)), None


def _edit(builder: SessionBuilder, args: dict, payload: Any, line: int, ts: float | None, call_id: Any) -> None:
    path = args["path"]
    if isinstance(payload, dict) and isinstance(payload.get("diffString"), str):
        diff = diffs.header(path) + payload["diffString"]
    elif isinstance(args.get("fileText"), str):
        diff = diffs.from_creation(path, args["fileText"])
    elif isinstance(args.get("oldString"), str):
        diff = diffs.from_strings(path, args["oldString"], str(args.get("newString", "")))
    else:
        return
    builder.add(Kind.FILE_EDIT, ts=ts, line=line, path=path, diff=diff, call_id=call_id)


def _result(builder: SessionBuilder, record: dict, line: int, ts: float | None) -> None:
    session = builder.session
    session.complete = record.get("subtype") == "success" and not record.get("is_error")
    if isinstance(record.get("duration_ms"), (int, float)):
        session.duration_s = record["duration_ms"] / 1000.0
    if isinstance(record.get("result"), str):
        session.final_message = record["result"]
    usage = record.get("usage")
    if isinstance(usage, dict):
        session.tokens = Usage(input=token_count(usage.get("inputTokens", usage.get("input_tokens"))),
                               output=token_count(usage.get("outputTokens", usage.get("output_tokens"))),
                               cache_read=token_count(usage.get("cacheReadTokens")),
                               cache_write=token_count(usage.get("cacheWriteTokens")))
    builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="result", text=f"Result: {record.get('subtype')}",
                is_error=bool(record.get("is_error")) or None)
    if record.get("is_error"):
        builder.provider_error(str(record.get("result") or record.get("subtype")), line=line, ts=ts, event=False)


def _model(builder: SessionBuilder) -> str | None:
    return next(reversed(builder.models), None) if builder.models else None
