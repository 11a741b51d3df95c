"""Newer Gemini CLI sessions as JSON Lines: a header record, one line per message (a later line with the same id
replaces it) and `{"$set": {...}}` updates of the header."""

from __future__ import annotations

from pathlib import Path

from kernelbench.transcripts.formats.gemini_session import parse_document
from kernelbench.transcripts.model import Session
from kernelbench.transcripts.reader import iter_lines

NAME = "gemini-jsonl"


def detect(records: list[dict], head: bytes) -> bool:
    if not records:
        return False
    first = records[0]
    if ("sessionId" in first and "projectHash" in first) and "type" not in first:
        return True
    return any("$set" in r for r in records[:10]) and any(r.get("type") == "gemini" for r in records[:40])


def parse(path: Path) -> Session:
    doc: dict = {"messages": []}
    positions: dict[str, int] = {}
    lines: dict[int, int] = {}
    odd: list[tuple[int, object, str | None, bytes]] = []
    for line in iter_lines(path):
        record = line.record
        if line.problem or not isinstance(record, dict) or line.repaired:
            odd.append((line.number, record, line.problem, line.raw))
        elif "$set" in record and isinstance(record["$set"], dict):
            doc.update({k: v for k, v in record["$set"].items() if k != "messages"})
            if isinstance(record["$set"].get("messages"), list):
                doc["messages"] = list(record["$set"]["messages"])
        elif "type" in record and ("id" in record or "content" in record):
            _upsert(doc["messages"], positions, lines, record, line.number)
        else:
            doc.update(record)
    session = parse_document(path, doc, fmt=NAME, lines=lines)
    _keep_odd_lines(session, odd)
    return session


def _upsert(messages: list, positions: dict[str, int], lines: dict[int, int], record: dict, number: int) -> None:
    key = record.get("id")
    if isinstance(key, str) and key in positions:
        messages[positions[key]] = record
    else:
        if isinstance(key, str):
            positions[key] = len(messages)
        messages.append(record)
    lines[positions.get(key, len(messages) - 1) if isinstance(key, str) else len(messages) - 1] = number


def _keep_odd_lines(session: Session, odd: list) -> None:
    """Lines that were not records are reported and kept as unknown events at the end."""
    from kernelbench.transcripts.builder import SessionBuilder, number_events

    if not odd:
        return
    builder = SessionBuilder(session.source, session.format)
    builder.session = session
    builder._stack = [session.events]
    for number, record, problem, raw in odd:
        if problem:
            builder.bad_line(number, raw, problem)
        else:
            builder.unknown(record, number)
    number_events(session)
