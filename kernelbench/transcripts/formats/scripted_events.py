"""The scripted agent's event stream (`events.jsonl` of a `scripted:<plan>` run, written by
`kernelbench/harness/scripted_program.py`): start, user, assistant, thinking, tool_call, tool_result, file_edit
(the file before and after), done. No timestamps: the run's `transcript.jsonl` has them, stamped as it ran."""

from __future__ import annotations

import difflib
from pathlib import Path

from kernelbench.transcripts.builder import SessionBuilder
from kernelbench.transcripts.model import Kind, Session

NAME = "scripted-events"
TEXT_KINDS = {"user": Kind.USER, "assistant": Kind.ASSISTANT, "thinking": Kind.THINKING}


def detect(records: list[dict], head: bytes) -> bool:
    first = records[0] if records else None
    return isinstance(first, dict) and first.get("type") == "start" and "plan" in first and "cwd" in first


def edit_diff(record: dict) -> str:
    """A file_edit record's before and after as a unified diff."""
    path = record.get("path", "?")
    return "".join(difflib.unified_diff(str(record.get("before", "")).splitlines(keepends=True),
                                        str(record.get("after", "")).splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="scripted")
    builder.read_records(path, lambda record, number: _record(builder, record, number))
    return builder.finish()


def _record(builder: SessionBuilder, record: dict, line: int) -> None:
    rtype = record.get("type")
    if rtype in TEXT_KINDS:
        builder.add(TEXT_KINDS[rtype], line=line, text=str(record.get("text", "")))
    elif rtype == "tool_call":
        builder.add(Kind.TOOL_CALL, line=line, name=str(record.get("name", "?")), call_id=str(record.get("id")),
                    input=record.get("input") or {})
    elif rtype == "tool_result":
        builder.result(str(record.get("id")), line=line, output=str(record.get("output", "")),
                       is_error=bool(record.get("is_error")), exit_code=record.get("exit_code"))
    elif rtype == "file_edit":
        builder.add(Kind.FILE_EDIT, line=line, path=str(record.get("path", "?")), diff=edit_diff(record))
    elif rtype == "start":
        builder.session.cwd = record.get("cwd")
        builder.note_model(record.get("plan"))
        builder.add(Kind.SYSTEM, line=line, text=f"scripted agent, plan '{record.get('plan')}', in {record.get('cwd')}")
    elif rtype == "done":
        builder.session.complete = True
        builder.ignore("done")
    else:
        builder.unknown(record, line)
