"""Anthropic Messages (`POST /v1/messages`): what Claude Code speaks. Streaming answers are server-sent events
(message_start, content_block_start/delta/stop, message_delta with the stop reason and usage, message_stop)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from kernelbench.harness.standin.play import Call, Conversation, Result, Tool, Turn
from kernelbench.harness.standin.policy import FaultKind

NAME = "anthropic"
ERRORS = {FaultKind.RATE_LIMIT: (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"),
          FaultKind.OVERLOADED: (529, "overloaded_error", "Overloaded"),
          FaultKind.UNAUTHORIZED: (401, "authentication_error", "invalid x-api-key"),
          FaultKind.SERVER_ERROR: (500, "api_error", "Internal server error")}


def read(body: dict[str, Any]) -> Conversation:
    conv = Conversation()
    for tool in body.get("tools") or []:
        schema = tool.get("input_schema") or {}
        conv.tools[tool.get("name", "")] = Tool(tool.get("name", ""), schema.get("properties") or {},
                                                schema.get("required") or [])
    texts = [_text(body.get("system"))]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for block in content or []:
            kind = block.get("type")
            if kind == "tool_use":
                conv.calls.append(Call(block.get("id", ""), block.get("name", "")))
                texts.append(json.dumps(block.get("input")))
            elif kind == "tool_result":
                output = _text(block.get("content"))
                conv.results.append(Result(block.get("tool_use_id"), None, output))
                texts.append(output)
            else:
                texts.append(_text(block))
    conv.text = "\n".join(t for t in texts if t)
    return conv


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return str(value.get("text") or value.get("content") or "")
    return ""


def _blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    if turn.call is not None:
        blocks.append({"type": "tool_use", "id": f"toolu_{turn.call.id}", "name": turn.call.name,
                       "input": turn.call.args or {}})
    return blocks


def _usage(turn: Turn, output: int) -> dict[str, int]:
    return {"input_tokens": turn.input_tokens, "output_tokens": output, "cache_read_input_tokens": turn.cached_tokens,
            "cache_creation_input_tokens": 0}


def message(turn: Turn, model: str) -> dict[str, Any]:
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
            "content": _blocks(turn), "stop_reason": "end_turn" if turn.finished else "tool_use",
            "stop_sequence": None, "usage": _usage(turn, turn.output_tokens)}


def events(turn: Turn, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    start = message(turn, model)
    start.update(content=[], stop_reason=None, usage=_usage(turn, 1))
    out: list[tuple[str | None, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(_blocks(turn)):
        if block["type"] == "text":
            opened, delta = dict(block, text=""), {"type": "text_delta", "text": block["text"]}
        else:
            opened, delta = dict(block, input={}), {"type": "input_json_delta",
                                                    "partial_json": json.dumps(block["input"])}
        out += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}),
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": index})]
    out += [("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "end_turn" if turn.finished else "tool_use",
                                         "stop_sequence": None},
                               "usage": {"output_tokens": turn.output_tokens}}),
            ("message_stop", {"type": "message_stop"})]
    return out


def error(kind: FaultKind) -> tuple[int, dict[str, Any]]:
    status, etype, text = ERRORS[kind]
    return status, {"type": "error", "error": {"type": etype, "message": text},
                    "request_id": f"req_{uuid.uuid4().hex[:24]}"}
