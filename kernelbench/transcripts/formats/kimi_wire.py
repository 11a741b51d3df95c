"""Kimi Code wire log: `sessions/.../agents/<id>/wire.jsonl`, records `{type, time (ms), ...}`; the agent loop's
own events arrive wrapped in `context.append_loop_event`. Usage is counted from `step.end` (one per model call);
`usage.record` repeats it and is used only when a file has no `step.end` usage. Kimi Code 2.1 also writes each
message whole (`agent.message.appended`), read where the loop events did not tell it already."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import orjson

from kernelbench import inputs
from kernelbench.transcripts.builder import SessionBuilder, sub_object, to_epoch, token_count
from kernelbench.transcripts.model import Event, Kind, Session, Usage
from kernelbench.transcripts.reader import head_records

NAME = "kimi-wire"
IGNORED = {"metadata", "tools.set_active_tools", "llm.tools_snapshot", "profile.bind", "permission.set_mode",
           "runtime.set_binding", "plugin.session_start", "token_counting.measured", "token_counting.turn_recorded",
           "config.update", "llm.request", "usage.record", "context.append_message",
           # Kimi Code 2.1's turn bounds: twins of turn.prompt and turn.ended
           "agent.turn.started", "agent.turn.ended"}
KIMI_PREFIXES = ("turn.", "context.", "llm.", "config.", "usage.", "tools.", "permission.", "token_counting.")


def detect(records: list[dict], head: bytes) -> bool:
    if any(r.get("type") == "metadata" and "protocol_version" in r for r in records[:3]) and \
            not any(isinstance(r.get("message"), dict) and "payload" in r["message"] for r in records[:10]):
        return True
    return sum(1 for r in records[:20] if str(r.get("type", "")).startswith(KIMI_PREFIXES) and "time" in r) >= 3


class _State(TypedDict):
    """What reading one file carries from record to record."""

    ended: str | None                  # how the last turn ended ("completed", "cancelled", the reason given)
    step_usage: Usage                  # summed over step.end
    record_usage: Usage                # summed over usage.record
    told: dict[tuple[str, str], int]   # pieces the loop events told, not yet paired with an appended one


def parse(path: Path, *, with_subagents: bool = True) -> Session:
    builder = SessionBuilder(path, NAME, harness="kimi")
    state: _State = {"ended": None, "step_usage": Usage(), "record_usage": Usage(), "told": {}}
    builder.read_records(path, lambda record, number: _dispatch(builder, record, number, state))
    session = builder.session
    session.tokens = state["step_usage"] if not state["step_usage"].is_zero() else state["record_usage"]
    session.complete = state["ended"] == "completed"
    if with_subagents:
        _attach_subagents(builder, path)
    return builder.finish()


def _dispatch(builder: SessionBuilder, record: dict, line: int, state: _State) -> None:
    rtype = str(record.get("type"))
    ts = to_epoch(record.get("time"))
    if rtype == "context.append_loop_event" and isinstance(record.get("event"), dict):
        _loop_event(builder, record["event"], line, ts, state)
    elif rtype in ("turn.prompt", "turn.steer"):
        text = _input_text(record.get("input"))
        builder.add(Kind.USER, ts=ts, line=line, text=text, record_type=None if rtype == "turn.prompt" else "steer")
        _told(state, "user", text)
        state["ended"] = None
    elif rtype == "turn.cancel":
        state["ended"] = "cancelled"
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type=rtype, is_error=True, text="Turn cancelled")
    elif rtype == "turn.ended":
        state["ended"] = record.get("reason")
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type=rtype,
                    text=f"Turn ended: {record.get('reason')} ({(record.get('durationMs') or 0) / 1000:.1f} s)")
    elif rtype == "agent.message.appended" and isinstance(record.get("message"), dict):
        _appended(builder, record["message"], line, ts, state)
    else:
        _bookkeeping(builder, record, rtype, line, ts, state)


def _bookkeeping(builder: SessionBuilder, record: dict, rtype: str, line: int, ts: float | None,
                 state: _State) -> None:
    if rtype == "metadata":
        builder.session.format_version = str(record.get("protocol_version"))
    elif rtype == "config.update" and isinstance(record.get("cwd"), str):
        builder.session.cwd = record["cwd"]
    elif rtype == "llm.request":
        builder.note_model(record.get("modelAlias") or record.get("model"))
        if record.get("attempt"):
            builder.add(Kind.SYSTEM, ts=ts, line=line, record_type="retry", is_error=True,
                        text=f"Model request retried (attempt {record['attempt']})")
            return
    elif rtype == "usage.record" and isinstance(record.get("usage"), dict):
        state["record_usage"].add(kimi_usage(record["usage"]))
    elif "compact" in rtype:
        builder.add(Kind.COMPACTION, ts=ts, line=line, record_type=rtype, text=f"Context compacted ({rtype})")
        return
    elif rtype == "permission.record_approval_result":
        result = sub_object(record, "result")
        builder.add(Kind.SYSTEM, ts=ts, line=line, record_type=rtype,
                    text=f"Permission {result.get('decision')}: {record.get('action')}")
        return
    elif rtype not in IGNORED:
        builder.unknown(record, line, ts=ts)
        return
    builder.ignore(rtype)


def _loop_event(builder: SessionBuilder, event: dict, line: int, ts: float | None, state: _State) -> None:
    etype = event.get("type")
    if etype == "content.part" and isinstance(event.get("part"), dict):
        part = event["part"]
        if part.get("type") == "think":
            builder.add(Kind.THINKING, ts=ts, line=line, text=str(part.get("think", "")), model=_model(builder))
            _told(state, "think", part.get("think"))
        elif part.get("type") == "text":
            builder.add(Kind.ASSISTANT, ts=ts, line=line, text=str(part.get("text", "")), model=_model(builder))
            _told(state, "text", part.get("text"))
        else:
            builder.unknown(event, line, record_type=f"content.part:{part.get('type')}", ts=ts)
    elif etype == "tool.call":
        builder.add(Kind.TOOL_CALL, ts=ts, line=line, name=str(event.get("name")), call_id=event.get("toolCallId"),
                    input=event.get("args"), model=_model(builder))
        _told(state, "call", event.get("toolCallId"))
    elif etype == "tool.result":
        result = event.get("result")
        output, is_error = _result_text(result)
        builder.result(event.get("toolCallId"), ts=ts, line=line, output=output, is_error=is_error)
        _told(state, "result", event.get("toolCallId"))
    elif etype == "step.end":
        if event.get("finishReason") == "end_turn":
            state["ended"] = "completed"     # the model answered; a later prompt or cancel resets this
        if isinstance(event.get("usage"), dict):
            usage = kimi_usage(event["usage"])
            state["step_usage"].add(usage)
            _attach(builder.session.events, usage)
        builder.ignore("step.end")
    elif etype == "step.begin":
        builder.ignore("step.begin")
    else:
        builder.unknown(event, line, record_type=f"loop:{etype}", ts=ts)


# ---------------------------------------------------------------------------------------------- appended messages
#
# Kimi Code 2.1 also writes each message of the conversation whole, as `agent.message.appended` (the prompt as the
# turn starts, the rest as it ends): the same text, tool calls, results and usage the loop events gave piece by
# piece. A piece the loop events already told is counted as their twin and left out; one they never told (a log
# cut before them, a writer that sends only messages) becomes its event here, so nothing is shown twice or lost.

def _told(state: _State, kind: str, value: Any) -> None:
    key = (kind, value if isinstance(value, str) else repr(value))
    told = state["told"]
    told[key] = told.get(key, 0) + 1


def _is_twin(state: _State, kind: str, value: Any) -> bool:
    """Whether the loop events already told this piece (each telling pairs with one appended piece)."""
    key = (kind, value if isinstance(value, str) else repr(value))
    told = state["told"]
    if told.get(key, 0) > 0:
        told[key] -= 1
        return True
    return False


def _appended(builder: SessionBuilder, wrapper: dict, line: int, ts: float | None, state: _State) -> None:
    message = sub_object(wrapper, "message")
    meta = sub_object(wrapper, "meta")
    role, parts = message.get("role"), message.get("content")
    parts = parts if isinstance(parts, list) else [] if parts is None else [{"type": "text", "text": parts}]
    texts = [p for p in parts if isinstance(p, dict) and p.get("type") in ("text", "think")]
    added = 0
    if role == "user":
        text = _input_text(parts)
        if not _is_twin(state, "user", text):
            builder.add(Kind.USER, ts=ts, line=line, text=text, record_type="agent.message.appended")
            added += 1
    elif role == "tool":
        call_id = message.get("toolCallId")
        if not _is_twin(state, "result", call_id):
            output = "\n".join(str(p.get("text", "")) for p in texts)
            builder.result(call_id, ts=ts, line=line, output=output, is_error=bool(message.get("isError")) or None)
            added += 1
    elif role == "assistant":
        added = _appended_reply(builder, message, texts, line, ts, state)
    else:
        builder.unknown(wrapper, line, record_type=f"agent.message.appended:{role}", ts=ts)
        return
    if added and role == "assistant" and isinstance(meta.get("usage"), dict):
        usage = kimi_usage(meta["usage"])
        state["step_usage"].add(usage)
        _attach(builder.session.events, usage)
    if not added:
        builder.ignore("agent.message.appended")


def _appended_reply(builder: SessionBuilder, message: dict, texts: list[dict], line: int, ts: float | None,
                    state: _State) -> int:
    """The reply's pieces the loop events did not tell, as events; how many there were."""
    added = 0
    model = _model(builder)
    for part in texts:
        kind, key = (Kind.THINKING, "think") if part.get("type") == "think" else (Kind.ASSISTANT, "text")
        if not _is_twin(state, key, part.get(key)):
            builder.add(kind, ts=ts, line=line, text=str(part.get(key, "")), model=model)
            added += 1
    calls = message.get("toolCalls")
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict) or _is_twin(state, "call", call.get("id")):
            continue
        builder.add(Kind.TOOL_CALL, ts=ts, line=line, name=str(call.get("name")), call_id=call.get("id"),
                    input=_arguments(call.get("arguments")), model=model)
        added += 1
    return added


def _arguments(raw: Any) -> Any:
    """A tool call's arguments, sent as JSON text: the object they encode, else the text as it is."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def kimi_usage(raw: dict) -> Usage:
    def num(*keys: str) -> int:
        return next((token_count(raw[k]) for k in keys if raw.get(k) is not None), 0)
    return Usage(input=num("inputOther", "input_other"), output=num("output"),
                 cache_read=num("inputCacheRead", "input_cache_read"),
                 cache_write=num("inputCacheCreation", "input_cache_creation"))


def _result_text(result: Any) -> tuple[str, bool]:
    if isinstance(result, dict):
        text = result.get("output", result.get("content", result.get("message", "")))
        error = bool(result.get("isError") or result.get("is_error") or result.get("error"))
        if not isinstance(text, str):
            text = str(text)
        if result.get("error") and not text:
            text = str(result["error"])
        return text, error
    return ("" if result is None else str(result)), False


def _input_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in value)
    return "" if value is None else str(value)


def _attach(events: list[Event], usage: Usage) -> None:
    for event in reversed(events):
        if event.kind in (Kind.ASSISTANT, Kind.THINKING, Kind.TOOL_CALL):
            event.usage = usage
            return


def _model(builder: SessionBuilder) -> str | None:
    return next(reversed(builder.models), None) if builder.models else None


def _attach_subagents(builder: SessionBuilder, path: Path) -> None:
    """`agents/main/wire.jsonl` has sibling `agents/<id>/wire.jsonl` files: fold each in where it started."""
    agents_dir = path.parent.parent
    if agents_dir.name != "agents" or path.parent.name != "main":
        return
    allowed, refused = inputs.sidecars(sorted(agents_dir.glob("*/wire.jsonl")), agents_dir)
    for exc in refused:
        builder.issue("sidecar_refused", f"subagent log {exc.diagnostic.path} {exc.diagnostic.message}")
    for wire in allowed:
        if wire == path or not head_records(wire, limit=1):
            continue
        sub = parse(wire, with_subagents=False)
        span = Event(kind=Kind.SUBAGENT, name=wire.parent.name, source=str(wire.relative_to(agents_dir)),
                     events=sub.events, ts=sub.start, duration_s=sub.duration_s,
                     text=next((e.text for e in sub.events if e.kind is Kind.USER), None))
        events = builder.session.events
        index = next((i for i, e in enumerate(events) if span.ts and e.ts and e.ts > span.ts), len(events))
        events.insert(index, span)
        builder.session.tokens.add(sub.tokens)
        for key, count in sub.unknown_records.items():
            builder.session.unknown_records[key] = builder.session.unknown_records.get(key, 0) + count
