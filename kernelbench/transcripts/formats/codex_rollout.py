"""Codex CLI rollout: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, every line `{timestamp, type, payload}`.

The file says most things twice: `response_item`s (what the model saw and wrote) and `event_msg`s (what the UI
showed). Messages and reasoning are taken from whichever comes first and the twin is skipped by its text.
Token totals come from `token_count` (cumulative): per-response usage is the step between two of them, and the
session total is the sum of steps, so a counter that restarts mid-file (a resumed session) is not lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from kernelbench.transcripts import diffs
from kernelbench.transcripts.builder import (
    SessionBuilder,
    http_status,
    is_retry_notice,
    sub_object,
    to_epoch,
    token_count,
)
from kernelbench.transcripts.formats.claude_session import ends_with_answer
from kernelbench.transcripts.formats.records import UNSET, CodexPayload, CodexRecord, DictLike, codex_decode
from kernelbench.transcripts.model import (
    ASSISTANT,
    COMPACTION,
    FILE_EDIT,
    SYSTEM,
    THINKING,
    TOOL_CALL,
    USER,
    Event,
    Session,
    Usage,
)

NAME = "codex-rollout"
USAGE_FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning")
Counts = tuple[int, int, int, int, int]       # token counts in the order of USAGE_FIELDS
ROLLOUT_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
# UI twins of response items, or progress ticks: understood, not shown twice
IGNORED_EVENTS = {"exec_command_begin", "exec_command_end", "exec_command_output_delta", "patch_apply_begin",
                  "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin",
                  "web_search_end", "turn_diff", "agent_message_delta", "agent_reasoning_delta",
                  "background_event", "get_history_entry_response", "mcp_list_tools_response",
                  "list_custom_prompts_response", "plan_update", "view_image_tool_call", "item_started",
                  "item_completed", "reasoning_content_delta", "agent_reasoning_section_break"}
CONTEXT_PREFIXES = ("<environment_context", "<user_instructions", "# AGENTS.md instructions", "<permissions",
                    "<INSTRUCTIONS", "<collaboration_mode", "<user_shell_command", "<turn_aborted")
EXIT_RE = re.compile(r"(?:Process exited with code|exit code:)\s*(-?\d+)", re.IGNORECASE)
WALL_RE = re.compile(r"Wall time:\s*([0-9.]+)\s*seconds")
# plain-text outputs of a command that never ran (no exit code): the CLI refused or the sandbox failed it
REFUSALS = ("patch rejected", "failed in sandbox", "execution error", "command rejected", "aborted", "error:")
PATCH_RE = re.compile(r"\*\*\* Begin Patch.*?(?:\*\*\* End Patch|$)", re.DOTALL)   # patch_envelopes' rule
PATCH_BEGIN, PATCH_END = "*** Begin Patch", "*** End Patch"


ITEM_TYPES = {"message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
              "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "web_search_call"}


def detect(records: list[dict], head: bytes) -> bool:
    # among the first ten records: an enveloped rollout record, and one of the types only rollouts have (records
    # are looked at one by one, so a rollout is told by its first record without decoding nine more)
    enveloped = typical = False
    for record in islice(records, 10):       # decoded one by one, as far as needed
        rtype = record.get("type")
        enveloped = enveloped or (rtype in ROLLOUT_TYPES and isinstance(record.get("payload"), dict))
        typical = typical or rtype in ("session_meta", "response_item", "turn_context")
        if enveloped and typical:
            return True
    return _is_early_rollout(records)


def _is_early_rollout(records: list[dict]) -> bool:
    """Rollouts before the `{timestamp, type, payload}` envelope (mid-2025): a meta line, then bare response
    items and `{"record_type": "state"}` lines."""
    if not records or "payload" in records[0]:
        return False
    meta = records[0]
    bare = sum(1 for r in records[1:20] if r.get("type") in ITEM_TYPES and "payload" not in r)
    return ("id" in meta and "timestamp" in meta and ("instructions" in meta or "git" in meta)) and bare >= 1


def parse(path: Path) -> Session:
    builder = SessionBuilder(path, NAME, harness="codex")
    state = _State()
    builder.read_records(path, lambda record, number: _record(builder, state, record, number), codex_decode)
    _finish(builder, state)
    return builder.finish()


def _record(builder: SessionBuilder, state: _State, record: Any, number: int) -> None:
    if type(record) is CodexRecord and record.payload is not UNSET:
        rtype, stamp, payload = record.type, record.timestamp, record.payload
    else:                                   # a line of another shape, or an early rollout's bare record
        if "payload" not in record:
            whole = _whole(builder, record)
            if type(whole) is not dict:     # the line's text: no JSON when read in full (reported)
                builder.unknown(whole, number)
                return
            record = _envelope(whole, builder.records == 1)
        rtype, stamp, payload = record.get("type"), record.get("timestamp"), record.get("payload")
    if isinstance(payload, (CodexPayload, dict, list, str)):
        _dispatch(builder, state, record, (rtype, stamp, payload), number)
    else:
        builder.unknown(_whole(builder, record), number)


def _whole(builder: SessionBuilder, record: Any) -> Any:
    """The record with every field, for what is kept raw or re-shaped: a typed record holds only the fields
    read."""
    return builder.raw_record() if isinstance(record, DictLike) else record


def _raw_payload(builder: SessionBuilder, payload: Any) -> Any:
    """The payload with every field (see `_whole`)."""
    if isinstance(payload, DictLike):
        whole = builder.raw_record()
        return whole.get("payload", whole) if isinstance(whole, dict) else whole
    return payload


def _envelope(record: dict, first: bool) -> dict:
    """Early rollouts wrote bare records: give them the envelope later versions use."""
    if "payload" in record:
        return record
    if record.get("type") in ITEM_TYPES:
        return {"type": "response_item", "timestamp": record.get("timestamp"), "payload": record}
    if record.get("record_type") == "state":
        return {"type": "state", "payload": record}
    if first and "id" in record and "timestamp" in record:
        return {"type": "session_meta", "timestamp": record.get("timestamp"), "payload": record}
    return record


class _State:
    def __init__(self) -> None:
        self.twins: dict[str, dict[str, int]] = {"item": {}, "event": {}}   # text → times seen, by source
        self.total: Counts | None = None     # last cumulative token_count
        self.spent: Counts = (0, 0, 0, 0, 0)  # sum of steps: survives the counter restarting mid-file
        self.task_status: str | None = None  # started | complete | aborted
        self.effort: str | None = None
        self.stamp: Any = None               # the last record's timestamp, and its time
        self.ts: float | None = None


def _time(state: _State, stamp: Any) -> float | None:
    """The record's time. Nearly a third of a rollout's timed records carry the stamp of the record before them
    (a response item and its UI twin): converted once."""
    if stamp != state.stamp:
        state.stamp, state.ts = stamp, to_epoch(stamp)
    return state.ts


def _dispatch(builder: SessionBuilder, state: _State, record: Any, envelope: tuple, line: int) -> None:
    rtype, stamp, payload = envelope
    is_dict = type(payload) is CodexPayload or isinstance(payload, dict)
    # the most frequent records first; token counts and turn contexts make no event (no time needed)
    if rtype == "response_item" and is_dict:
        _response_item(builder, state, payload, line, _time(state, stamp))
    elif rtype == "event_msg" and is_dict:
        if payload.get("type") == "token_count":
            _token_count(builder, state, payload)
        else:
            _event_msg(builder, state, payload, line, _time(state, stamp))
    elif rtype == "token_usage_record" and is_dict:
        _token_usage_record(builder, state, _raw_payload(builder, payload))   # (a rare record: fields untyped)
    elif rtype == "turn_context" and is_dict:
        builder.note_model(payload.get("model"))
        builder.ignore("turn_context")
    elif rtype == "session_meta" and is_dict:
        _session_meta(builder.session, payload)
    elif rtype == "state":
        builder.ignore("state")
    elif rtype == "compacted":
        message = payload.get("message") if is_dict else payload
        builder.add(COMPACTION, ts=_time(state, stamp), line=line,
                    text=str(message or "Context compacted"))
    else:
        builder.unknown(_whole(builder, record), line, ts=_time(state, stamp))


def _session_meta(session: Session, payload: dict) -> None:
    session.session_id = payload.get("id") or session.session_id
    session.cwd = payload.get("cwd") or session.cwd
    session.format_version = payload.get("cli_version") or session.format_version
    session.start = to_epoch(payload.get("timestamp")) if session.start is None else session.start


# ---------------------------------------------------------------------------------------------- response items

def _response_item(builder: SessionBuilder, state: _State, item: dict, line: int, ts: float | None) -> None:
    itype = item.get("type")
    if itype == "message":
        _message(builder, state, item, line, ts)
    elif itype == "reasoning":
        _reasoning(builder, state, item, line, ts)
    elif itype in ("function_call", "local_shell_call"):
        builder.add(TOOL_CALL, ts=ts, line=line, name=str(item.get("name") or itype),
                    call_id=item.get("call_id") or item.get("id"), input=_arguments(item))
    elif itype == "custom_tool_call":
        builder.add(TOOL_CALL, ts=ts, line=line, name=str(item.get("name")), call_id=item.get("call_id"),
                    input={"input": item.get("input")} if item.get("name") != "apply_patch"
                    else {"patch": item.get("input")})
    elif itype in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        _output(builder, item, line, ts)
    elif itype == "web_search_call":
        builder.add(TOOL_CALL, ts=ts, line=line, name="web_search", call_id=item.get("id"),
                    input=sub_object(item, "action"))
    else:
        builder.unknown(_raw_payload(builder, item), line, record_type=f"response_item:{itype}", ts=ts)


def _message(builder: SessionBuilder, state: _State, item: dict, line: int, ts: float | None) -> None:
    text = "\n".join(str(part.get("text", "")) for part in item.get("content") or []
                     if isinstance(part, dict) and "text" in part)
    role = item.get("role")
    if role == "assistant":
        if _is_twin(state, "item", "a:" + text):
            return
        builder.add(ASSISTANT, ts=ts, line=line, text=text, model=_model(builder))
    elif role in ("user", "developer", "system"):
        if role == "user" and not text.lstrip().startswith(CONTEXT_PREFIXES):
            if not _is_twin(state, "item", "u:" + text):
                builder.add(USER, ts=ts, line=line, text=text)
        else:
            builder.add(SYSTEM, ts=ts, line=line, text=text, record_type=f"context:{role}")
    else:
        builder.unknown(_raw_payload(builder, item), line, record_type=f"message:{role}", ts=ts)


def _reasoning(builder: SessionBuilder, state: _State, item: CodexPayload | dict, line: int,
               ts: float | None) -> None:
    parts = [str(p.get("text", "")) for p in item.get("summary") or [] if isinstance(p, dict)]
    parts += [str(p.get("text", "")) for p in item.get("content") or [] if isinstance(p, dict)]
    text = "\n\n".join(p for p in parts if p)
    shown = [_is_twin(state, "item", "r:" + part) for part in parts if part]
    if shown and all(shown):
        return                      # the UI's agent_reasoning events already showed every part
    if not text:
        size = item.encrypted_size() if isinstance(item, CodexPayload) else \
            len(item.get("encrypted_content") or "")
        text = f"(encrypted reasoning, {size} characters)" if size else "(reasoning without a summary)"
    builder.add(THINKING, ts=ts, line=line, text=text, model=_model(builder))


def _arguments(item: dict) -> Any:
    args = item.get("arguments")
    if isinstance(args, str):
        try:
            return orjson.loads(args)
        except orjson.JSONDecodeError:
            return {"arguments": args}
    if item.get("action") is not None:
        return item.get("action")
    return args


def _output(builder: SessionBuilder, item: dict, line: int, ts: float | None) -> None:
    text, exit_code, duration = _split_output(item.get("output"))
    refused = exit_code is None and text.lstrip()[:40].lower().startswith(REFUSALS)
    result = builder.result(item.get("call_id"), ts=ts, line=line, output=text, exit_code=exit_code,
                            is_error=exit_code not in (None, 0) or refused, duration_s=duration)
    if not result.is_error:
        _patch_edits(builder, result, line, ts)


def _split_output(output: Any) -> tuple[str, int | None, float | None]:
    """0.40 writes `{"output", "metadata": {exit_code, duration_seconds}}` as a JSON string; 0.104 plain text
    with a header ("Process exited with code N", "Wall time", then "Output:")."""
    if isinstance(output, dict):
        output = orjson.dumps(output).decode()
    if not isinstance(output, str):
        return ("" if output is None else str(output)), None, None
    if output.startswith("{"):
        try:
            data = orjson.loads(output)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, dict) and "output" in data:
            meta = sub_object(data, "metadata")
            return str(data["output"]), meta.get("exit_code"), meta.get("duration_seconds")
    head = output[:400]
    # the patterns only where their words are: a case-blind pattern scans character by character
    exit_match = EXIT_RE.search(head) if "xit" in head.lower() else None
    wall_match = WALL_RE.search(head) if "Wall time:" in head else None
    if exit_match and "\nOutput:\n" in output:
        body = output.split("\nOutput:\n", 1)[1]
    else:
        body = output
    return (body, int(exit_match.group(1)) if exit_match else None,
            float(wall_match.group(1)) if wall_match else None)


def _patch_edits(builder: SessionBuilder, result: Event, line: int, ts: float | None) -> None:
    """apply_patch, as its own tool or inside a shell command, becomes one file edit per file."""
    call = builder.call(result.call_id)
    if call is None or not isinstance(call.input, dict):
        return
    source = call.input.get("patch") if call.name == "apply_patch" else command_text(call.input)
    if not isinstance(source, str) or PATCH_BEGIN not in source:
        return
    for envelope in patch_envelopes(source):
        for path, diff in diffs.from_apply_patch(envelope):
            builder.add(FILE_EDIT, ts=ts, line=line, path=path, diff=diff, call_id=result.call_id)


def patch_envelopes(source: str) -> Iterator[str]:
    """Each `*** Begin Patch` ... `*** End Patch` in the text (an unclosed one runs to the end): what PATCH_RE
    matches, found with two substring searches per envelope where the lazy pattern tests both ends at every
    character (a tenth of parsing an older rollout, whose patches run inside shell commands)."""
    start = source.find(PATCH_BEGIN)
    while start >= 0:
        end = source.find(PATCH_END, start + len(PATCH_BEGIN))
        if end < 0:                         # as `$` matches: at the end, or before a final line end
            yield source[start:len(source) - 1 if source.endswith("\n") else len(source)]
            return
        end += len(PATCH_END)
        yield source[start:end]
        start = source.find(PATCH_BEGIN, end)


def command_text(args: dict) -> str | None:
    command = args.get("command", args.get("cmd"))
    if isinstance(command, list):
        return " ".join(str(part) for part in command)
    return command if isinstance(command, str) else None


# ---------------------------------------------------------------------------------------------- event messages

def _event_msg(builder: SessionBuilder, state: _State, msg: dict, line: int, ts: float | None) -> None:
    mtype = msg.get("type")
    if mtype == "user_message":
        text = str(msg.get("message", ""))
        if not _is_twin(state, "event", "u:" + text):
            builder.add(USER, ts=ts, line=line, text=text)
    elif mtype == "agent_message":
        text = str(msg.get("message", ""))
        if not _is_twin(state, "event", "a:" + text):
            builder.add(ASSISTANT, ts=ts, line=line, text=text, model=_model(builder))
    elif mtype in ("agent_reasoning", "agent_reasoning_raw_content"):
        text = str(msg.get("text", ""))
        if not _is_twin(state, "event", "r:" + text):
            builder.add(THINKING, ts=ts, line=line, text=text, model=_model(builder))
    elif mtype == "token_count":
        _token_count(builder, state, msg)
    else:
        _lifecycle(builder, state, msg, line, ts)


def _lifecycle(builder: SessionBuilder, state: _State, msg: dict, line: int, ts: float | None) -> None:
    mtype = msg.get("type")
    if mtype == "task_started":
        state.task_status = "started"
        builder.ignore("task_started")
    elif mtype == "task_complete":
        state.task_status = "complete"
        if isinstance(msg.get("last_agent_message"), str):
            builder.session.final_message = msg["last_agent_message"]
        builder.ignore("task_complete")
    elif mtype == "turn_aborted":
        state.task_status = "aborted"
        builder.add(SYSTEM, ts=ts, line=line, record_type="turn_aborted", is_error=True,
                    text=f"Turn aborted: {msg.get('reason', 'unknown reason')}")
    elif mtype in ("context_compacted", "compacted"):
        builder.add(COMPACTION, ts=ts, line=line, text="Context compacted")
    elif mtype in ("error", "stream_error", "warning"):
        message = str(msg.get("message", mtype))
        builder.add(SYSTEM, ts=ts, line=line, record_type=mtype, is_error=mtype != "warning", text=message)
        if mtype != "warning":   # a stream error is followed by a reconnection
            builder.provider_error(message, line=line, ts=ts, status=http_status(message), event=False,
                                   retried=mtype == "stream_error" or is_retry_notice(message))
    elif mtype in IGNORED_EVENTS:
        builder.ignore(f"event_msg:{mtype}")
    else:
        builder.unknown(_raw_payload(builder, msg), line, record_type=f"event_msg:{mtype}", ts=ts)


def _token_count(builder: SessionBuilder, state: _State, msg: dict) -> None:
    info = msg.get("info")
    if not isinstance(info, dict) or not isinstance(info.get("total_token_usage"), dict):
        builder.ignore("token_count:empty")
        return
    # counts as plain tuples: one record in ten is a token count, and a Usage model costs several of these
    _count_total(builder, state, openai_counts(info["total_token_usage"]), info.get("last_token_usage"))


def _count_total(builder: SessionBuilder, state: _State, total: Counts, last: Any) -> None:
    """A running total of the thread's tokens: what it adds to the one before is the step's usage, put on the
    step's last event; `last` (the step's own counts) stands in where the counter restarted (a resumed session)."""
    before = state.total
    step = total if before is None else _difference(total, before)
    if step is None and isinstance(last, dict):
        step = openai_counts(last)
    state.total = total
    if step is not None and any(step):
        state.spent = _sum(state.spent, step)
        _attach_usage(builder.session.events, step)


def _token_usage_record(builder: SessionBuilder, state: _State, payload: dict) -> None:
    """Codex 0.169 writes one per model response, beside the token_count event that follows it: the response's
    `usage` and the thread's running `thread_token_usage`. Both feed the same running total, so the pair counts
    once (the second of them adds nothing), and a rollout holding only one kind is counted in full."""
    thread = payload.get("thread_token_usage") if isinstance(payload, dict) else None
    if not isinstance(thread, dict):
        builder.ignore("token_usage_record:empty")
        return
    _count_total(builder, state, openai_counts(thread), payload.get("usage"))


def openai_counts(raw: dict) -> Counts:
    """(input, output, cache read, cache write, reasoning): OpenAI counts cached input inside input_tokens and
    reasoning inside output_tokens."""
    cached = token_count(raw.get("cached_input_tokens"))
    return (max(0, token_count(raw.get("input_tokens")) - cached), token_count(raw.get("output_tokens")), cached, 0,
            token_count(raw.get("reasoning_output_tokens")))


def openai_usage(raw: dict) -> Usage:
    return _usage(openai_counts(raw))


def _usage(counts: Counts) -> Usage:
    given, made, read, written, reasoning = counts
    return Usage(input=given, output=made, cache_read=read, cache_write=written, reasoning=reasoning)


def _sum(a: Counts, b: Counts) -> Counts:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4]


def _difference(now: Counts, before: Counts) -> Counts | None:
    step = (now[0] - before[0], now[1] - before[1], now[2] - before[2], now[3] - before[3], now[4] - before[4])
    return None if min(step) < 0 else step


def _attach_usage(events: list[Event], step: Counts) -> None:
    for event in reversed(events):
        if event.kind in (ASSISTANT, THINKING, TOOL_CALL):
            if event.usage is None:
                event.usage = _usage(step)
            else:
                event.usage.add(_usage(step))
            return


# ---------------------------------------------------------------------------------------------- helpers

def _is_twin(state: _State, source: str, key: str) -> bool:
    """True when the other source already gave this text (then it is skipped); else remember it."""
    other = state.twins["event" if source == "item" else "item"]
    if other.get(key, 0) > 0:
        other[key] -= 1
        return True
    mine = state.twins[source]
    mine[key] = mine.get(key, 0) + 1
    return False


def _model(builder: SessionBuilder) -> str | None:
    return next(reversed(builder.models), None) if builder.models else None


def _finish(builder: SessionBuilder, state: _State) -> None:
    session = builder.session
    if state.total is not None:
        session.tokens = _usage(state.spent)
    if state.task_status is not None:
        session.complete = state.task_status == "complete"
    else:
        session.complete = ends_with_answer(session.events)
