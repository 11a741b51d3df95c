"""`opencode run --format json`: one `{type, timestamp (ms), sessionID, part}` object per line."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from kernelbench.transcripts.builder import SessionBuilder, amount, to_epoch
from kernelbench.transcripts.formats.opencode_common import add_part, note_opencode_error, opencode_usage
from kernelbench.transcripts.model import Kind, Session

NAME = "opencode-run"
RUN_TYPES = {"step_start", "step_finish", "text", "tool_use", "reasoning", "error"}


def detect(records: list[dict], head: bytes) -> bool:
    # a session that failed before its first step streams only its error record
    return any(r.get("type") in RUN_TYPES and "sessionID" in r
               and (isinstance(r.get("part"), dict) or isinstance(r.get("error"), dict)) for r in records[:10])


class _Finish(TypedDict):
    """What the step_finish records said: the last reason, and the cost summed over them."""

    reason: str | None
    cost: float


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="opencode")
    session = builder.session
    finish: _Finish = {"reason": None, "cost": 0.0}
    builder.read_records(path, lambda record, number: _record(builder, record, number, finish))
    session.complete = finish["reason"] == "stop"
    if finish["cost"] > 0:
        session.cost_usd = finish["cost"]
    return builder.finish()


def _record(builder: SessionBuilder, record: dict, line: int, finish: _Finish) -> None:
    rtype, part = record.get("type"), record.get("part")
    ts = to_epoch(record.get("timestamp"))
    builder.session.session_id = builder.session.session_id or record.get("sessionID")
    if rtype == "step_finish" and isinstance(part, dict):
        finish["reason"] = part.get("reason")
        finish["cost"] += amount(part.get("cost"))
        usage = opencode_usage(part.get("tokens"))
        if usage is not None and not usage.is_zero():
            builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="step_finish", usage=usage,
                        text=f"Step finished: {part.get('reason')}")
    elif rtype == "error":
        raw_error = record.get("error")
        error = raw_error if isinstance(raw_error, dict) else record
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="error", is_error=True,
                    text=str((error.get("data") or {}).get("message") if isinstance(error.get("data"), dict)
                             else error.get("message") or error))
        note_opencode_error(builder, error, line, ts)
    elif isinstance(part, dict):
        add_part(builder, part, role="assistant", line=line, ts=ts, model=None)
    else:
        builder.unknown(record, line, ts=ts)
