"""Typed record shapes for the large JSON Lines formats, decoded with msgspec.

Each type declares only the fields its parser reads; every other field of a line (Claude's `toolUseResult` file
copies and file-history snapshots, Codex's repeated instructions and encrypted reasoning) is skipped by the
decoder without building Python objects, which is most of the bytes of a real log. The types read like the
dicts they stand for (`get`, `in`), so one handler serves a record decoded either way: a line that does not fit
its type is decoded in full with orjson and handed over as a plain dict. A record the parser does not understand
is kept raw from the full decoding of its line (`SessionBuilder.raw_record`), never from these partial types.
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
import orjson

UNSET = msgspec.UNSET
_RAW = msgspec.Raw


class RecordLike(Protocol):
    """What a handler reads a record through: a plain dict, or a typed record (DictLike) read like one."""

    def get(self, key: str, default: Any = None, /) -> Any: ...

    def __getitem__(self, key: str, /) -> Any: ...

    def __contains__(self, key: str, /) -> bool: ...


class DictLike(msgspec.Struct):
    """A record read through the dict methods its parser uses; an absent field reads as absent."""

    def get(self, key: str, default: Any = None) -> Any:
        value = getattr(self, key, UNSET)
        if value is UNSET:
            return default
        if type(value) is _RAW:             # a field decoded only when asked for
            return orjson.loads(memoryview(value))
        return value

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, UNSET)
        if value is UNSET:
            raise KeyError(key)
        return value

    def __contains__(self, key: str) -> bool:
        return getattr(self, key, UNSET) is not UNSET


# ---------------------------------------------------------------------------------------------- Claude Code

class ClaudeToolUseResult(DictLike):
    """The CLI's own account of a tool call: only what makes a file edit (and the subagent link) is read; the
    file copies around it (`originalFile`, `file`) are skipped, and `content` is decoded only for a creation."""

    type: Any = UNSET
    filePath: Any = UNSET
    structuredPatch: Any = UNSET
    content: msgspec.Raw | msgspec.UnsetType = UNSET
    oldString: Any = UNSET
    newString: Any = UNSET
    interrupted: Any = UNSET
    agentId: Any = UNSET


class ClaudeUsage(DictLike):
    """An API response's token counts: the four that are counted. The rest of the usage object (nested cache and
    server-tool breakdowns, service tier) is skipped, and a response spans several lines that each repeat it."""

    input_tokens: Any = UNSET
    output_tokens: Any = UNSET
    cache_read_input_tokens: Any = UNSET
    cache_creation_input_tokens: Any = UNSET


class ClaudeMessage(DictLike):
    """The API message of a user or assistant line: its blocks are read in full; of the rest, only what
    identifies the response and its usage (thus not `stop_reason`, `container` and the like)."""

    id: Any = UNSET
    model: Any = UNSET
    content: Any = UNSET
    usage: ClaudeUsage | None | msgspec.UnsetType = UNSET


class ClaudeRecord(DictLike):
    """One line of a Claude Code session file (every record type in one shape)."""

    type: Any = UNSET
    sessionId: Any = UNSET
    version: Any = UNSET
    cwd: Any = UNSET
    isSidechain: Any = UNSET
    agentId: Any = UNSET
    timestamp: Any = UNSET
    message: ClaudeMessage | None | msgspec.UnsetType = UNSET   # any other JSON type: the line is read plain
    requestId: Any = UNSET
    isApiErrorMessage: Any = UNSET
    isCompactSummary: Any = UNSET
    isMeta: Any = UNSET
    toolUseResult: ClaudeToolUseResult | str | list | None | msgspec.UnsetType = UNSET
    # system, summary and queue-operation records
    subtype: Any = UNSET
    compactMetadata: Any = UNSET
    durationMs: Any = UNSET
    content: Any = UNSET
    level: Any = UNSET
    summary: Any = UNSET
    operation: Any = UNSET


claude_decode = msgspec.json.Decoder(ClaudeRecord).decode


# ---------------------------------------------------------------------------------------------- Codex rollouts

class CodexPayload(DictLike):
    """A rollout record's payload, whatever its type: response items, event messages, session meta and turn
    contexts share one shape. The repeated instructions of turn contexts and session meta, images, rate limits
    and encrypted reasoning (only its length is shown) are skipped."""

    type: Any = UNSET
    # response items
    role: Any = UNSET
    content: Any = UNSET
    summary: Any = UNSET
    encrypted_content: msgspec.Raw | msgspec.UnsetType = UNSET
    name: Any = UNSET
    call_id: Any = UNSET
    id: Any = UNSET
    arguments: Any = UNSET
    input: Any = UNSET
    action: Any = UNSET
    output: Any = UNSET
    # event messages
    message: Any = UNSET
    text: Any = UNSET
    info: Any = UNSET
    last_agent_message: Any = UNSET
    reason: Any = UNSET
    # session meta, turn context
    model: Any = UNSET
    cwd: Any = UNSET
    cli_version: Any = UNSET
    timestamp: Any = UNSET

    def encrypted_size(self) -> int:
        """Characters of the encrypted reasoning, without decoding it (base64 text holds no escapes)."""
        raw = self.encrypted_content
        if raw is UNSET:
            return 0
        data = bytes(raw)
        if data[:1] != b'"' or b"\\" in data:
            return len(self.get("encrypted_content") or "")
        return len(data) - 2


class CodexRecord(DictLike):
    """One line of a rollout: `{timestamp, type, payload}`."""

    type: Any = UNSET
    timestamp: Any = UNSET
    payload: CodexPayload | list | str | None | msgspec.UnsetType = UNSET


codex_decode = msgspec.json.Decoder(CodexRecord).decode
