"""`claude -p --output-format stream-json --verbose`: init, messages (subagent work marked by
`parent_tool_use_id`), and a final `result` line that only a finished run writes."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from kernelbench.transcripts.builder import SessionBuilder, amount, http_status, token_count
from kernelbench.transcripts.formats.claude_common import ClaudeMessages, counted_usage
from kernelbench.transcripts.formats.claude_session import system_record
from kernelbench.transcripts.model import Kind, Session, Usage

NAME = "claude-stream"


def detect(records: list[dict], head: bytes) -> bool:
    for record in islice(records, 10):       # decoded one by one, as far as needed
        if record.get("type") == "system" and record.get("subtype") == "init" and (
                "claude_code_version" in record or "tools" in record or "mcp_servers" in record):
            return True
        if record.get("type") in ("assistant", "user") and "parent_tool_use_id" in record:
            return True
    return False


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="claude")
    messages = ClaudeMessages(builder)
    parent: list[str | None] = [None]
    builder.read_records(path, lambda record, number: _dispatch(builder, messages, record, number, parent))
    builder.close_subagent()
    messages.finish()
    return builder.finish()


def _dispatch(builder: SessionBuilder, messages: ClaudeMessages, record: dict, line: int,
              parent: list[str | None]) -> None:
    rtype = record.get("type")
    if rtype in ("assistant", "user"):
        _enter_subagent(builder, record.get("parent_tool_use_id"), parent)
        (messages.assistant if rtype == "assistant" else messages.user)(record, line, None)
    elif rtype == "system" and record.get("subtype") == "init":
        _init(builder, record, line)
    elif rtype == "system":
        system_record(builder, record, line, None)
    elif rtype == "result":
        _enter_subagent(builder, None, parent)
        _result(builder, record, line)
    elif rtype == "stream_event":
        builder.ignore("stream_event")   # partial deltas (--include-partial-messages); full messages follow
    else:
        builder.unknown(record, line)


def _enter_subagent(builder: SessionBuilder, parent_id: str | None, parent: list[str | None]) -> None:
    """Group consecutive messages of one Task call into one subagent span."""
    if parent_id == parent[0]:
        return
    if parent[0] is not None:
        builder.close_subagent()
    if parent_id is not None:
        call = builder.call(parent_id)
        title = None
        if call is not None and isinstance(call.input, dict):
            title = call.input.get("description") or call.input.get("subagent_type")
        builder.open_subagent(name=str(title or "subagent"), call_id=parent_id, text=call_prompt(call))
    parent[0] = parent_id


def call_prompt(call) -> str | None:
    if call is not None and isinstance(call.input, dict) and isinstance(call.input.get("prompt"), str):
        return call.input["prompt"]
    return None


def _init(builder: SessionBuilder, record: dict, line: int) -> None:
    session = builder.session
    session.session_id = record.get("session_id")
    session.cwd = record.get("cwd")
    session.format_version = record.get("claude_code_version")
    builder.note_model(record.get("model"))
    listed = record.get("tools")
    tools = listed if isinstance(listed, list) else []
    builder.add(Kind.SYSTEM, line=line, record_type="init",
                text=f"Session started: model {record.get('model')}, {len(tools)} tools, "
                     f"permission mode {record.get('permissionMode')}")


def _result(builder: SessionBuilder, record: dict, line: int) -> None:
    session = builder.session
    session.complete = record.get("subtype") == "success" and not record.get("is_error")
    if isinstance(record.get("duration_ms"), (int, float)):
        session.duration_s = record["duration_ms"] / 1000.0
    if record.get("total_cost_usd") is not None:
        session.cost_usd = amount(record["total_cost_usd"])
    if isinstance(record.get("result"), str):
        session.final_message = record["result"]
    tokens = tokens_of_result(builder, record, line)
    if tokens is not None:
        session.tokens = tokens
    builder.add(Kind.SYSTEM, line=line, record_type="result", is_error=bool(record.get("is_error")) or None,
                text=f"Result: {record.get('subtype')}, {record.get('num_turns')} turns")
    if record.get("is_error"):
        message = str(record.get("result") or record.get("subtype"))
        builder.provider_error(message, line=line, event=False,
                               status=record.get("api_error_status") or http_status(message))


def tokens_of_result(builder: SessionBuilder, record: dict, line: int) -> Usage | None:
    """The CLI's own totals: per model (subagent models included) where given, else the main usage."""
    per_model = record.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        total = Usage()
        for usage in per_model.values():
            if isinstance(usage, dict):
                total.add(Usage(input=token_count(usage.get("inputTokens")),
                                output=token_count(usage.get("outputTokens")),
                                cache_read=token_count(usage.get("cacheReadInputTokens")),
                                cache_write=token_count(usage.get("cacheCreationInputTokens"))))
        return total
    if isinstance(record.get("usage"), dict):
        return counted_usage(builder, record["usage"], line)
    return None
