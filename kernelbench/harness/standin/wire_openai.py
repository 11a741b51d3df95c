"""OpenAI's two wire formats: Responses (`POST /v1/responses`, what Codex speaks; function tools and custom
freeform tools such as apply_patch) and Chat Completions (`POST /v1/chat/completions`, what opencode's and Kimi
Code's OpenAI-compatible providers speak). Streaming answers are server-sent events."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from kernelbench.harness.standin.play import Call, Conversation, Result, Tool, Turn
from kernelbench.harness.standin.policy import FaultKind

ERRORS = {FaultKind.RATE_LIMIT: (429, "rate_limit_exceeded", "Rate limit reached for requests"),
          FaultKind.OVERLOADED: (503, "server_is_overloaded", "The server is overloaded; please retry"),
          FaultKind.UNAUTHORIZED: (401, "invalid_api_key", "Incorrect API key provided"),
          FaultKind.SERVER_ERROR: (500, "server_error", "The server had an error processing your request")}


def error(kind: FaultKind) -> tuple[int, dict[str, Any]]:
    status, code, text = ERRORS[kind]
    etype = "invalid_request_error" if status == 401 else ("requests" if status == 429 else "server_error")
    return status, {"error": {"message": text, "type": etype, "param": None, "code": code}}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content)
    return ""


# ---------------------------------------------------------------------------------------------- Responses

def read_responses(body: dict[str, Any]) -> Conversation:
    conv = Conversation()
    for tool in body.get("tools") or []:
        name = tool.get("name") or tool.get("type", "")
        params = tool.get("parameters") or {}
        conv.tools[name] = Tool(name, params.get("properties") or {}, params.get("required") or [],
                                freeform=tool.get("type") == "custom")
    texts = [_content_text(body.get("instructions"))]
    items = body.get("input")
    listed: list[Any] = items if isinstance(items, list) else [{"type": "message", "content": items}]
    for item in listed:
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            conv.calls.append(Call(item.get("call_id", ""), item.get("name", "")))
            texts.append(str(item.get("arguments") or item.get("input") or ""))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            text = output if isinstance(output, str) else _content_text(output)
            conv.results.append(Result(item.get("call_id"), None, text))
            texts.append(text)
        else:
            texts.append(_content_text(item.get("content")))
    conv.text = "\n".join(t for t in texts if t)
    return conv


def _response_items(turn: Turn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append({"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
    if turn.call is not None:
        call_id = f"call_{turn.call.id}"
        if turn.call.raw is not None:
            items.append({"type": "custom_tool_call", "id": f"ctc_{uuid.uuid4().hex[:24]}", "status": "completed",
                          "call_id": call_id, "name": turn.call.name, "input": turn.call.raw})
        else:
            items.append({"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "status": "completed",
                          "call_id": call_id, "name": turn.call.name, "arguments": json.dumps(turn.call.args)})
    return items


def response(turn: Turn, model: str) -> dict[str, Any]:
    return {"id": f"resp_{uuid.uuid4().hex[:24]}", "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model, "output": _response_items(turn),
            "usage": {"input_tokens": turn.input_tokens + turn.cached_tokens,
                      "input_tokens_details": {"cached_tokens": turn.cached_tokens},
                      "output_tokens": turn.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": turn.input_tokens + turn.cached_tokens + turn.output_tokens}}


def responses_events(turn: Turn, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    done = response(turn, model)
    created = dict(done, status="in_progress", output=[], usage=None)
    out: list[tuple[str | None, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": created}),
        ("response.in_progress", {"type": "response.in_progress", "response": created})]
    for index, item in enumerate(done["output"]):
        out.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                   "item": item}))
        if item["type"] == "message":
            out.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                       "output_index": index, "content_index": 0,
                                                       "delta": item["content"][0]["text"]}))
        out.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                                  "item": item}))
    out.append(("response.completed", {"type": "response.completed", "response": done}))
    return out


# ---------------------------------------------------------------------------------------------- Chat Completions

def read_chat(body: dict[str, Any]) -> Conversation:
    conv = Conversation()
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        params = function.get("parameters") or {}
        conv.tools[function.get("name", "")] = Tool(function.get("name", ""), params.get("properties") or {},
                                                    params.get("required") or [])
    texts = []
    for message in body.get("messages") or []:
        texts.append(_content_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            conv.calls.append(Call(call.get("id", ""), function.get("name", "")))
            texts.append(str(function.get("arguments") or ""))
        if message.get("role") == "tool":
            conv.results.append(Result(message.get("tool_call_id"), message.get("name"),
                                       _content_text(message.get("content"))))
    conv.text = "\n".join(t for t in texts if t)
    return conv


def _chat_usage(turn: Turn) -> dict[str, Any]:
    prompt = turn.input_tokens + turn.cached_tokens
    return {"prompt_tokens": prompt, "completion_tokens": turn.output_tokens,
            "total_tokens": prompt + turn.output_tokens, "prompt_tokens_details": {"cached_tokens": turn.cached_tokens}}


def _chat_calls(turn: Turn) -> list[dict[str, Any]]:
    if turn.call is None:
        return []
    return [{"index": 0, "id": f"call_{turn.call.id}", "type": "function",
             "function": {"name": turn.call.name, "arguments": json.dumps(turn.call.args or {})}}]


def chat_completion(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.call is not None:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in _chat_calls(turn)]
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": "stop" if turn.finished else "tool_calls"}],
            "usage": _chat_usage(turn)}


def chat_events(turn: Turn, model: str) -> list[tuple[str | None, dict[str, Any] | str]]:
    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    out: list[tuple[str | None, dict[str, Any] | str]] = [(None, chunk({"role": "assistant", "content": ""}))]
    if turn.text:
        out.append((None, chunk({"content": turn.text})))
    for call in _chat_calls(turn):
        out.append((None, chunk({"tool_calls": [call]})))
    out.append((None, chunk({}, "stop" if turn.finished else "tool_calls")))
    out.append((None, dict(base, choices=[], usage=_chat_usage(turn))))
    out.append((None, "[DONE]"))
    return out
