"""Claude Code messages, shared by the session file and the stream-json output.

Usage is counted once per API response: one response spans several lines sharing `message.id` (+ `requestId`),
each repeating a usage object whose early copies hold partial output counts, so only the LAST line's usage counts.
"""

from __future__ import annotations

from typing import Any

from kernelbench.transcripts import diffs
from kernelbench.transcripts.builder import SessionBuilder, dump_raw, http_status, to_epoch
from kernelbench.transcripts.formats.records import (
    UNSET,
    ClaudeMessage,
    ClaudeToolUseResult,
    ClaudeUsage,
    RecordLike,
)
from kernelbench.transcripts.model import (
    ASSISTANT,
    COMPACTION,
    FILE_EDIT,
    SYSTEM,
    THINKING,
    TOOL_CALL,
    USER,
    Event,
    Usage,
)

SYNTHETIC_MODEL = "<synthetic>"   # locally generated messages (API errors), not a real model
EDIT_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def claude_usage(raw: Any) -> Usage | None:
    """A usage object (typed, or a plain dict) as counted tokens; a count that is not an int counts 0."""
    if type(raw) is ClaudeUsage:            # absent fields read as UNSET, which is not an int
        given, made = raw.input_tokens, raw.output_tokens
        read, written = raw.cache_read_input_tokens, raw.cache_creation_input_tokens
    elif isinstance(raw, dict):
        given, made = raw.get("input_tokens"), raw.get("output_tokens")
        read, written = raw.get("cache_read_input_tokens"), raw.get("cache_creation_input_tokens")
    else:
        return None
    # one per response: the int checks inline (type() is int also keeps booleans out)
    return Usage(input=given if type(given) is int else 0, output=made if type(made) is int else 0,
                 cache_read=read if type(read) is int else 0, cache_write=written if type(written) is int else 0)


def odd_count(raw: Any) -> Any:
    """The first of a usage object's four counts that is given but is no whole number (which `claude_usage`
    counts as 0, and the caller reports); UNSET when there is none."""
    counts: tuple[Any, ...]
    if type(raw) is ClaudeUsage:
        counts = (raw.input_tokens, raw.output_tokens, raw.cache_read_input_tokens, raw.cache_creation_input_tokens)
    elif isinstance(raw, dict):
        counts = tuple(raw.get(key) for key in USAGE_KEYS)
    else:
        return UNSET
    return next((value for value in counts if type(value) is not int and value is not UNSET and value is not None),
                UNSET)


def counted_usage(builder: SessionBuilder, raw: Any, line: int | None) -> Usage | None:
    """`claude_usage`, with a count that is no whole number reported (it counts 0)."""
    odd = odd_count(raw)
    if odd is not UNSET:
        builder.issue("bad_number", f"line {line}: a token count that is not a whole number "
                                    f"({dump_raw(odd)[:60]}) counts as 0", line)
    return claude_usage(raw)


def flatten_content(content: Any) -> str:
    """A tool result's content (a string, or blocks of text/images) as text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "image":
                    parts.append("[image]")
                else:
                    parts.append(str(block.get("text") or block.get("content") or f"[{block.get('type')}]"))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return str(content)


class ClaudeMessages:
    """Turns Claude `user`/`assistant` records into events; one instance per file."""

    def __init__(self, builder: SessionBuilder):
        self.b = builder
        # (message.id, requestId) → the event of the response's last line so far, and that line's usage (ids that
        # are not text do not de-duplicate: such a line's usage is its own)
        self.usage_owner: dict[tuple, tuple[Event, ClaudeUsage | dict]] = {}
        self.agent_results: dict[str, Event] = {}   # subagent id → the Task result that reported it

    # ------------------------------------------------------------------ assistant

    def assistant(self, record: RecordLike, line: int, ts: float | None) -> None:
        message = record.get("message")
        if type(message) is not ClaudeMessage and type(message) is not dict:
            message = {}
        model = message.get("model")
        if type(model) is not str:
            model = None
        elif model != SYNTHETIC_MODEL:
            self.b.note_model(model)
        last: Event | None = None
        content = message.get("content")
        if type(content) is str:
            content = [{"type": "text", "text": content}]
        elif type(content) is not list:
            content = ()
        add = self.b.add
        for block in content:
            btype = block.get("type") if type(block) is dict else None
            if btype == "text":
                last = add(ASSISTANT, ts=ts, line=line, text=str(block.get("text", "")), model=model)
            elif btype == "tool_use":
                last = add(TOOL_CALL, ts=ts, line=line, name=str(block.get("name")), call_id=block.get("id"),
                           input=block.get("input"), model=model)
            else:
                last = self._assistant_block(block, record, line, ts, model) or last
        if last is None:
            last = add(SYSTEM, ts=ts, line=line, record_type="empty_assistant",
                       text="(assistant message without content)", model=model)
        if model == SYNTHETIC_MODEL or record.get("isApiErrorMessage"):
            last.is_error = True
        if record.get("error") or record.get("isApiErrorMessage") or record.get("is_api_error_message"):
            self.b.provider_error(last.text or str(record.get("error")), line=line, ts=ts, event=False,
                                  status=record.get("api_error_status") or http_status(last.text or ""))
        self._count_usage(message, record, last)

    def _assistant_block(self, block: Any, record: RecordLike, line: int, ts: float | None,
                         model: str | None) -> Event | None:
        if not isinstance(block, dict):
            return self.b.unknown(block, line, record_type="assistant:block")
        btype = block.get("type")
        if btype == "text":
            return self.b.add(ASSISTANT, ts=ts, line=line, text=str(block.get("text", "")), model=model)
        if btype == "thinking":
            return self.b.add(THINKING, ts=ts, line=line, text=str(block.get("thinking", "")), model=model)
        if btype == "redacted_thinking":
            return self.b.add(THINKING, ts=ts, line=line, text="(redacted thinking)", model=model)
        if btype in ("tool_use", "server_tool_use"):
            return self.b.add(TOOL_CALL, ts=ts, line=line, name=str(block.get("name")),
                              call_id=block.get("id"), input=block.get("input"), model=model)
        return self.b.unknown(block, line, record_type=f"assistant:{btype}", ts=ts)

    def _count_usage(self, message: ClaudeMessage | dict, record: RecordLike, event: Event) -> None:
        raw = message.get("usage")
        if type(raw) is not ClaudeUsage and type(raw) is not dict:
            return
        message_id, request_id = message.get("id"), record.get("requestId")
        if type(message_id) is not str:     # no id to de-duplicate by: every line is its own response
            event.usage = counted_usage(self.b, raw, event.line)
        else:                               # the response's last line so far; counted in `finish`
            self.usage_owner[message_id, request_id if type(request_id) is str else None] = (event, raw)

    def finish(self) -> None:
        """Usage onto the event of each response's last line (earlier lines repeat partial counts)."""
        for event, raw in self.usage_owner.values():
            event.usage = counted_usage(self.b, raw, event.line)
        self.usage_owner.clear()

    # ------------------------------------------------------------------ user

    def user(self, record: RecordLike, line: int, ts: float | None) -> None:
        message = record.get("message")
        content = message.get("content") if type(message) is ClaudeMessage or type(message) is dict else None
        if type(content) is str:
            self._user_text(content, record, line, ts)
            return
        for block in content if type(content) is list else ():
            btype = block.get("type") if type(block) is dict else None
            if btype == "tool_result":          # the usual block of a user line
                self._tool_result(block, record, line, ts)
            elif btype == "text":
                self._user_text(str(block.get("text", "")), record, line, ts)
            elif btype == "image":
                self.b.add(USER, ts=ts, line=line, text="[image]")
            elif not isinstance(block, dict):
                self.b.unknown(block, line, record_type="user:block")
            else:
                self.b.unknown(block, line, record_type=f"user:{btype}", ts=ts)

    def _user_text(self, text: str, record: RecordLike, line: int, ts: float | None) -> None:
        if record.get("isCompactSummary"):
            self.b.add(COMPACTION, ts=ts, line=line, text=text)
        elif record.get("isMeta") or text.startswith("[Request interrupted"):
            self.b.add(SYSTEM, ts=ts, line=line, text=text, record_type="meta")
        else:
            self.b.add(USER, ts=ts, line=line, text=text)

    def _tool_result(self, block: dict, record: RecordLike, line: int, ts: float | None) -> None:
        call_id = block.get("tool_use_id")
        extra = record.get("toolUseResult")
        if not (type(extra) is ClaudeToolUseResult or isinstance(extra, dict)):
            extra = None                        # a string or list: the CLI's text, nothing more to read
        output = flatten_content(block.get("content"))
        exit_code = None
        if extra is not None and extra.get("interrupted"):
            output += "\n[interrupted]"
        result = self.b.result(call_id, ts=ts, line=line, output=output, is_error=bool(block.get("is_error")),
                               exit_code=exit_code)
        if extra is not None and isinstance(extra.get("agentId"), str):
            self.agent_results[extra["agentId"]] = result
        if result.is_error:
            return
        if not (extra is not None and self._edit_from_result(extra, result, line, ts)):
            self._edit_from_call(result, line, ts)

    def _edit_from_result(self, extra: RecordLike, result: Event, line: int, ts: float | None) -> bool:
        call = self.b.call(result.call_id)
        path = extra.get("filePath")
        if not isinstance(path, str) or (call is not None and call.name not in EDIT_TOOLS):
            return False
        hunks = extra.get("structuredPatch")
        if isinstance(hunks, list) and hunks:
            diff = diffs.from_hunks(path, hunks)
        elif extra.get("type") == "create" and isinstance(content := extra.get("content"), str):
            # read once: on a typed record each read decodes the file's whole text again
            diff = diffs.from_creation(path, content)
        elif isinstance(extra.get("oldString"), str) and isinstance(extra.get("newString"), str):
            diff = diffs.from_strings(path, extra["oldString"], extra["newString"])
        else:
            return False
        self.b.add(FILE_EDIT, ts=ts, line=line, path=path, diff=diff, call_id=result.call_id)
        return True

    def _edit_from_call(self, result: Event, line: int, ts: float | None) -> None:
        """Without the CLI's own patch (stream-json), the diff comes from the call's arguments."""
        call = self.b.call(result.call_id)
        if call is None or call.name not in EDIT_TOOLS or not isinstance(call.input, dict):
            return
        for path, diff in edits_from_input(call.name, call.input):
            self.b.add(FILE_EDIT, ts=ts, line=line, path=path, diff=diff, call_id=result.call_id)


def edits_from_input(tool: str, args: dict) -> list[tuple[str, str]]:
    path = args.get("file_path") or args.get("notebook_path")
    if not isinstance(path, str):
        return []
    if tool == "Write" and isinstance(args.get("content"), str):
        return [(path, diffs.from_creation(path, args["content"]))]
    edits = args.get("edits")
    pairs = edits if tool == "MultiEdit" and isinstance(edits, list) else [args]
    out = []
    for pair in pairs:
        old, new = pair.get("old_string"), pair.get("new_string")
        if isinstance(old, str) and isinstance(new, str):
            out.append((path, diffs.from_strings(path, old, new)))
    return out


def record_time(record: RecordLike) -> float | None:
    return to_epoch(record.get("timestamp"))
