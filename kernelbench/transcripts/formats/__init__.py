"""One module per log format. Each exposes `NAME`, `detect(records, head) -> bool` and `parse(path) -> Session`;
formats whose file is one JSON document (not JSON Lines) expose `detect_document(doc)` and
`parse_document(path, doc)` instead. Adding a format = adding a module and listing it here (order = priority).
`records` are the head's first records, decoded as the detector reaches them; `head` is the part of the head read
so far (its first 64 KB at least, or the whole file): a detector that needs later bytes reads them through
`records`.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

LINE_FORMATS = [
    "kernelbench.transcripts.normalized",
    "kernelbench.transcripts.formats.claude_stream",
    "kernelbench.transcripts.formats.claude_session",
    "kernelbench.transcripts.formats.codex_rollout",
    "kernelbench.transcripts.formats.codex_exec",
    "kernelbench.transcripts.formats.opencode_run",
    "kernelbench.transcripts.formats.gemini_jsonl",
    "kernelbench.transcripts.formats.gemini_stream",
    "kernelbench.transcripts.formats.kimi_wire",
    "kernelbench.transcripts.formats.kimi_cli_wire",
    "kernelbench.transcripts.formats.cursor_stream",
    "kernelbench.transcripts.formats.scripted_events",
]
DOCUMENT_FORMATS = [
    "kernelbench.transcripts.formats.opencode_export",
    "kernelbench.transcripts.formats.gemini_session",
]


def _modules(names: list[str]) -> list[ModuleType]:
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return modules


# looked up once per process: every load asks for the list, and eleven import_module calls cost more than
# detecting a small file's format
@cache
def line_formats() -> tuple[ModuleType, ...]:
    return tuple(_modules(LINE_FORMATS))


@cache
def document_formats() -> tuple[ModuleType, ...]:
    return tuple(_modules(DOCUMENT_FORMATS))
