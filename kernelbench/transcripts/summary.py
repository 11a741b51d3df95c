"""What `transcript show` reports about a session: a plain dict, the same for text and `--json`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kernelbench.transcripts.model import Kind, Session


def summarize(session: Session) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    edited: Counter[str] = Counter()
    errors = subagents = 0
    for event in session.walk():
        kinds[event.kind.value] += 1
        if event.kind is Kind.TOOL_CALL:
            tools[event.name or "?"] += 1
        elif event.kind is Kind.FILE_EDIT and event.path:
            edited[event.path] += 1
        elif event.kind is Kind.SUBAGENT:
            subagents += 1
        if event.is_error:
            errors += 1
    tokens = session.tokens.model_dump()
    tokens["total"] = session.tokens.total
    return {
        "path": session.source,
        "format": session.format,
        "version": session.format_version,
        "harness": session.harness,
        "models": session.models,
        "session_id": session.session_id,
        "cwd": session.cwd,
        "records": session.records,
        "events_total": sum(kinds.values()),
        "events_by_kind": dict(sorted(kinds.items())),
        "tool_calls_total": sum(tools.values()),
        "tool_calls_by_name": dict(tools.most_common()),
        "files_edited": dict(edited.most_common()),
        "errors": errors,
        "subagents": subagents,
        "tokens": tokens,
        "cost_usd": session.cost_usd,
        "cost_is_estimate": session.cost_is_estimate,
        "cost_note": session.cost_note,
        "start": session.start,
        "end": session.end,
        "duration_s": session.duration_s,
        "duration": _duration_text(session.duration_s),
        "complete": session.complete,
        "final_message": (session.final_message or "")[:500] or None,
        "unknown_records_total": sum(session.unknown_records.values()),
        "unknown_records": dict(sorted(session.unknown_records.items())),
        "ignored_records": dict(sorted(session.ignored_records.items())),
        "issues": dict(sorted(session.issue_counts.items())),
        "issue_examples": [issue.model_dump() for issue in session.issues[:10]],
    }


def _duration_text(seconds: float | None) -> str | None:
    if seconds is None or not 0 <= seconds < float("inf"):
        return None
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"
