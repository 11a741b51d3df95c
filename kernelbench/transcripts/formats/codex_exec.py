"""`codex exec --json`: thread/turn/item events, no timestamps, no model name. A run that never reaches
`turn.completed` (or ends in `turn.failed`) did not finish."""

from __future__ import annotations

from pathlib import Path

from kernelbench.transcripts import diffs
from kernelbench.transcripts.builder import SessionBuilder, http_status, is_retry_notice
from kernelbench.transcripts.formats.codex_rollout import openai_usage
from kernelbench.transcripts.model import Kind, Session

NAME = "codex-exec"
EXEC_TYPES = {"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started", "item.updated",
              "item.completed", "error"}


def detect(records: list[dict], head: bytes) -> bool:
    return any(r.get("type") in ("thread.started", "turn.started") for r in records[:5]) or \
        any(r.get("type", "").startswith("item.") and isinstance(r.get("item"), dict) for r in records[:10])


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="codex")
    status = {"turn": None}
    builder.read_records(path, lambda record, number: _dispatch(builder, record, number, status))
    builder.session.complete = status["turn"] == "completed"
    return builder.finish()


def _dispatch(builder: SessionBuilder, record: dict, line: int, status: dict) -> None:
    rtype = record.get("type")
    if rtype == "thread.started":
        builder.session.session_id = record.get("thread_id")
        builder.ignore(rtype)
    elif rtype == "turn.started":
        status["turn"] = "started"
        builder.ignore(rtype)
    elif rtype == "turn.completed":
        status["turn"] = "completed"
        usage = openai_usage(record["usage"]) if isinstance(record.get("usage"), dict) else None
        if usage is not None:
            builder.session.tokens.add(usage)
            builder.add(Kind.SYSTEM, line=line, record_type=rtype, text="Turn completed", usage=usage)
    elif rtype in ("turn.failed", "error"):
        status["turn"] = "failed"
        raw_error = record.get("error")
        error = raw_error if isinstance(raw_error, dict) else record
        message = str(error.get("message"))
        builder.add(Kind.SYSTEM, line=line, record_type=rtype, is_error=True, text=message)
        builder.provider_error(message, line=line, status=http_status(message), event=False,
                               retried=rtype == "error" and is_retry_notice(message))
    elif rtype in ("item.started", "item.updated"):
        builder.ignore(rtype)        # the completed item repeats everything; a started-only item is shown below
        item = record.get("item")
        if isinstance(item, dict) and item.get("type") == "command_execution" and rtype == "item.started":
            builder.add(Kind.TOOL_CALL, line=line, name="shell", call_id=item.get("id"),
                        input={"command": item.get("command")})
    elif rtype == "item.completed" and isinstance(record.get("item"), dict):
        _item(builder, record["item"], line)
    else:
        builder.unknown(record, line)


def _item(builder: SessionBuilder, item: dict, line: int) -> None:
    itype, item_id = item.get("type"), item.get("id")
    if itype == "agent_message":
        builder.add(Kind.ASSISTANT, line=line, text=str(item.get("text", "")))
    elif itype == "reasoning":
        builder.add(Kind.THINKING, line=line, text=str(item.get("text", "")))
    elif itype == "command_execution":
        if builder.call(item_id) is None:
            builder.add(Kind.TOOL_CALL, line=line, name="shell", call_id=item_id,
                        input={"command": item.get("command")})
        exit_code = item.get("exit_code")
        builder.result(item_id, line=line, output=str(item.get("aggregated_output") or ""), exit_code=exit_code,
                       is_error=(exit_code not in (None, 0)) or item.get("status") == "failed")
    elif itype == "file_change":
        _file_change(builder, item, line)
    elif itype in ("mcp_tool_call", "web_search", "todo_list"):
        builder.add(Kind.TOOL_CALL, line=line, name=str(item.get("tool") or itype), call_id=item_id,
                    input={k: v for k, v in item.items() if k not in ("id", "type", "result", "error")})
        if "result" in item or "error" in item:
            builder.result(item_id, line=line, output=str(item.get("result") or item.get("error") or ""),
                           is_error=bool(item.get("error")))
    elif itype == "error":
        builder.add(Kind.SYSTEM, line=line, record_type="error", is_error=True, text=str(item.get("message")))
    else:
        builder.unknown(item, line, record_type=f"item:{itype}")


def _file_change(builder: SessionBuilder, item: dict, line: int) -> None:
    """The stream names changed files without their content: the edit shows the path and kind only."""
    for change in item.get("changes") or []:
        if isinstance(change, dict) and isinstance(change.get("path"), str):
            kind = change.get("kind", "update")
            path = change["path"]
            diff = diffs.header(path, created=kind == "add", deleted=kind == "delete") + f"# {kind} (no content)\n"
            builder.add(Kind.FILE_EDIT, line=line, path=path, diff=diff,
                        is_error=item.get("status") == "failed" or None)
