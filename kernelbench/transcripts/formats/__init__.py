"""One module per log format. Each exposes `NAME`, `detect(records, head) -> bool` and `parse(path) -> Session`;
formats whose file is one JSON document (not JSON Lines) expose `detect_document(doc)` and
`parse_document(path, doc)` instead. Adding a format = adding a module and listing it here (order = priority).
"""

from __future__ import annotations

import importlib
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


def line_formats() -> list[ModuleType]:
    return _modules(LINE_FORMATS)


def document_formats() -> list[ModuleType]:
    return _modules(DOCUMENT_FORMATS)
