"""opencode message parts, shared by `opencode export` JSON and `opencode run --format json`."""

from __future__ import annotations

from typing import Any

from kernelbench.transcripts import diffs
from kernelbench.transcripts.builder import SessionBuilder, http_status, sub_object, to_epoch, token_count
from kernelbench.transcripts.model import Kind, Usage

BOOKKEEPING_PARTS = {"step-start", "step-finish", "patch", "snapshot", "step_start", "step_finish"}


def opencode_usage(tokens: Any) -> Usage | None:
    """opencode's `input` excludes cached reads; reasoning is reported beside output."""
    if not isinstance(tokens, dict):
        return None
    cache = sub_object(tokens, "cache")
    return Usage(input=token_count(tokens.get("input")), output=token_count(tokens.get("output")),
                 reasoning=token_count(tokens.get("reasoning")), cache_read=token_count(cache.get("read")),
                 cache_write=token_count(cache.get("write")))


def note_opencode_error(builder: SessionBuilder, error: dict, line: int | None, ts: float | None,
                        retried: bool = False) -> None:
    """An API error as opencode records it: `{name, data{message, statusCode, isRetryable}}`."""
    data = sub_object(error, "data")
    message = f"{error.get('name', 'error')}: {data.get('message') or error.get('message') or ''}".strip()
    retryable = data.get("isRetryable")
    builder.provider_error(message, line=line, ts=ts, event=False, retried=retried,
                           status=data.get("statusCode") if data.get("statusCode") else http_status(message),
                           retryable=retryable if isinstance(retryable, bool) else None)


def add_part(builder: SessionBuilder, part: dict, *, role: str, line: int | None, ts: float | None,
             model: str | None) -> None:
    ptype = part.get("type")
    ts = to_epoch((part.get("time") or {}).get("start")) if isinstance(part.get("time"), dict) else ts
    if ptype == "text":
        _text_part(builder, part, role, line, ts, model)
    elif ptype == "reasoning":
        text = str(part.get("text") or "") or "(encrypted reasoning)"
        builder.add(Kind.THINKING, ts=ts, line=line, text=text, model=model)
    elif ptype == "tool":
        tool_part(builder, part, line, ts, model)
    elif ptype == "file":
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="file",
                    text=f"Attached {part.get('filename') or part.get('url')} ({part.get('mime')})")
    elif ptype == "agent":
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="agent", text=f"Mentioned agent @{part.get('name')}")
    elif ptype in ("compaction", "summary"):
        builder.add(Kind.COMPACTION, ts=ts, line=line, text=str(part.get("text") or "Context compacted"))
    elif ptype == "retry":
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="retry", is_error=True,
                    text=f"Retry {part.get('attempt')}: {part.get('error')}")
        raw_error = part.get("error")
        error = raw_error if isinstance(raw_error, dict) else {"message": str(raw_error)}
        note_opencode_error(builder, error, line, ts, retried=True)
    elif ptype in BOOKKEEPING_PARTS:
        builder.ignore(f"part:{ptype}")
    else:
        builder.unknown(part, line, record_type=f"part:{ptype}", ts=ts)


def _text_part(builder: SessionBuilder, part: dict, role: str, line: int | None, ts: float | None,
               model: str | None) -> None:
    text = str(part.get("text") or "")
    if role == "user":
        kind = Kind.SYSTEM if part.get("synthetic") else Kind.USER
        builder.add(kind, ts=ts, line=line, text=text, record_type="synthetic" if part.get("synthetic") else None)
    else:
        builder.add(Kind.ASSISTANT, ts=ts, line=line, text=text, model=model)


def tool_part(builder: SessionBuilder, part: dict, line: int | None, ts: float | None, model: str | None) -> None:
    """One tool part holds both the call and its result (state.status running | completed | error)."""
    state = sub_object(part, "state")
    timing = sub_object(state, "time")
    start, end = to_epoch(timing.get("start")), to_epoch(timing.get("end"))
    name, call_id = str(part.get("tool")), part.get("callID") or part.get("id")
    builder.add(Kind.TOOL_CALL, ts=start or ts, line=line, name=name, call_id=call_id, input=state.get("input"),
                model=model)
    status = state.get("status")
    if status not in ("completed", "error"):
        builder.add(Kind.SYSTEM, ts=start or ts, line=line, record_type="pending_tool",
                    text=f"{name} never finished (status {status})", is_error=True)
        return
    metadata = sub_object(state, "metadata")
    exit_code = _int_or_none(metadata.get("exit"))
    output = state.get("output") if status == "completed" else state.get("error")
    is_error = status == "error" or (exit_code not in (None, 0))
    builder.result(call_id, ts=end or start or ts, line=line, output="" if output is None else str(output),
                   is_error=is_error, exit_code=exit_code,
                   duration_s=(end - start) if start is not None and end is not None else None)
    if not is_error:
        for path, diff in edits_of(name, state.get("input"), metadata):
            builder.add(Kind.FILE_EDIT, ts=end or ts, line=line, path=path, diff=diff, call_id=call_id)


def edits_of(tool: str, args: Any, metadata: dict) -> list[tuple[str, str]]:
    args = args if isinstance(args, dict) else {}
    files = metadata.get("files")
    if isinstance(files, list) and files:
        return [(str(f.get("filePath") or f.get("relativePath")), str(f.get("diff") or ""))
                for f in files if isinstance(f, dict) and f.get("diff")]
    path = args.get("filePath") or args.get("file_path") or args.get("path")
    if isinstance(metadata.get("diff"), str) and metadata["diff"] and isinstance(path, str):
        return [(path, metadata["diff"])]
    if tool in ("apply_patch", "patch") and isinstance(args.get("patchText"), str):
        return diffs.from_apply_patch(args["patchText"])
    if tool == "edit" and isinstance(path, str) and isinstance(args.get("oldString"), str):
        return [(path, diffs.from_strings(path, args["oldString"], str(args.get("newString", ""))))]
    if tool == "write" and isinstance(path, str) and isinstance(args.get("content"), str):
        return [(path, diffs.from_creation(path, args["content"]))]
    return []


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None
