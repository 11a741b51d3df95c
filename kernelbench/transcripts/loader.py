"""`load(path)`: detect a transcript's format by its content and parse it into a `Session`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernelbench.errors import KernelBenchError
from kernelbench.transcripts.builder import SessionBuilder
from kernelbench.transcripts.formats import document_formats, line_formats
from kernelbench.transcripts.gcpause import gc_paused
from kernelbench.transcripts.model import Session
from kernelbench.transcripts.pricing import estimate_cost
from kernelbench.transcripts.reader import (
    HEAD_BYTES,
    first_records,
    head_records,
    iter_lines,
    load_document,
)


def load(path: Path | str, *, estimate: bool = True) -> Session:
    """Parse any supported transcript. Unreadable parts become counted issues and unknown events, never errors;
    only a missing file (or a directory) raises `KernelBenchError`. Without a cost in the log, the cost is
    estimated from the dated price table and marked as an estimate."""
    with gc_paused():
        session = _parse(as_path(path))
        if estimate:
            estimate_cost(session)
    return session


def as_path(path: Path | str) -> Path:
    """`Path(path)`, without parsing a Path again (pathlib re-parses its argument: a few µs per file)."""
    return path if isinstance(path, Path) else Path(path)


def _parse(path: Path) -> Session:
    if not path.is_file():
        raise KernelBenchError(f"no transcript file at {path}", path=path,
                               hint="pass the session log (.jsonl or .json) the agent CLI wrote")
    head = head_records(path)                   # the head's first part; the rest is read if detection needs it
    if not head.head.strip() and not head.whole().strip():
        return _empty(path)
    records: Sequence[dict] = head
    if not head and len(head.whole()) >= HEAD_BYTES:
        records = first_records(path)           # the first lines are longer than the head
    for module in line_formats():
        if module.detect(records, head.head):   # (the head bytes read so far)
            return module.parse(path)
    if head.head.lstrip()[:1] in (b"{", b"["):  # the first byte that is not blank (the part read has one)
        doc, problem = load_document(path) if len(records) <= 1 else (None, None)
        if doc is not None and problem is None:
            for module in document_formats():
                if module.detect_document(doc):
                    return module.parse_document(path, doc)
            return _unknown_document(path, doc)
    return parse_unknown(path)


def _unknown_document(path: Path, doc: object) -> Session:
    builder = SessionBuilder(path, "unknown")
    builder.issue("unknown_format", f"{path.name}: a JSON document no parser recognises; shown raw")
    builder.session.records = 1
    builder.unknown(doc, 1, record_type="document")
    return builder.finish()


def _empty(path: Path) -> Session:
    builder = SessionBuilder(path, "empty")
    builder.issue("empty_file", f"{path.name} is empty: the agent wrote nothing")
    return builder.finish()


def parse_unknown(path: Path) -> Session:
    """A file no parser recognises: every record kept as an unknown event, so it can still be read."""
    builder = SessionBuilder(path, "unknown")
    builder.issue("unknown_format", f"{path.name}: no parser recognises this format; records are shown raw")
    for line in iter_lines(path):
        record = builder.accept(line)
        if record is not None:
            builder.unknown(record, line.number)
    return builder.finish()
