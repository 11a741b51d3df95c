"""Gemini's generateContent / streamGenerateContent (`POST /v1beta/models/MODEL:...`): what Gemini CLI speaks.
Streaming answers are server-sent events of whole GenerateContentResponse chunks (`?alt=sse`)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from kernelbench.harness.standin.play import Call, Conversation, Result, Tool, Turn
from kernelbench.harness.standin.policy import FaultKind

ERRORS = {FaultKind.RATE_LIMIT: (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
          FaultKind.OVERLOADED: (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
          FaultKind.UNAUTHORIZED: (401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
          FaultKind.SERVER_ERROR: (500, "INTERNAL", "An internal error has occurred.")}


def error(kind: FaultKind) -> tuple[int, dict[str, Any]]:
    status, code, text = ERRORS[kind]
    return status, {"error": {"code": status, "message": text, "status": code}}


def read(body: dict[str, Any]) -> Conversation:
    conv = Conversation()
    for group in body.get("tools") or []:
        for decl in group.get("functionDeclarations") or []:
            schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
            conv.tools[decl.get("name", "")] = Tool(decl.get("name", ""), schema.get("properties") or {},
                                                    schema.get("required") or [])
    texts = [_parts_text((body.get("systemInstruction") or {}).get("parts"))]
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if "functionCall" in part:
                call = part["functionCall"]
                conv.calls.append(Call(call.get("id") or "", call.get("name", "")))
                texts.append(json.dumps(call.get("args")))
            elif "functionResponse" in part:
                answer = part["functionResponse"]
                response = answer.get("response")
                text = response.get("output") or response.get("error") if isinstance(response, dict) else None
                text = text if isinstance(text, str) else json.dumps(response)
                conv.results.append(Result(answer.get("id"), answer.get("name"), text))
                texts.append(text)
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
    conv.text = "\n".join(t for t in texts if t)
    return conv


def _parts_text(parts: Any) -> str:
    return "\n".join(str(p.get("text") or "") for p in parts or [] if isinstance(p, dict))


def response(turn: Turn, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if turn.text:
        parts.append({"text": turn.text})
    if turn.call is not None:
        parts.append({"functionCall": {"name": turn.call.name, "args": turn.call.args or {},
                                       "id": f"call_{turn.call.id}"}})
    prompt = turn.input_tokens + turn.cached_tokens
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": turn.output_tokens,
                              "cachedContentTokenCount": turn.cached_tokens,
                              "totalTokenCount": prompt + turn.output_tokens},
            "modelVersion": model, "responseId": uuid.uuid4().hex[:20]}


def events(turn: Turn, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    return [(None, response(turn, model))]
