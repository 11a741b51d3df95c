"""The stand-in's HTTP server (aiohttp) on the loopback: one route per wire protocol, faults played per step.

`StandIn(loaded).start()` runs it in a thread of its own and returns its base URL; `stop()` ends it. Every request
is logged (path, wire, step, attempt, fault, status) so a test or a run directory can show what the CLI asked.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:
    from aiohttp import web
except ModuleNotFoundError as exc:   # an optional extra: only the stand-in needs it
    from kernelbench.errors import KernelBenchError

    raise KernelBenchError("the model stand-in needs aiohttp, which is not installed",
                           hint="pip install -e '.[standin]' (or '.[dev]')") from exc

from kernelbench.harness.standin import play, wire_anthropic, wire_gemini, wire_openai
from kernelbench.harness.standin.play import Conversation
from kernelbench.harness.standin.policy import FaultKind, LoadedPolicy

STALL_S = 3600.0          # a stalled stream sends nothing more for this long (the client gives up first)
HTTP_FAULTS = (FaultKind.RATE_LIMIT, FaultKind.OVERLOADED, FaultKind.UNAUTHORIZED, FaultKind.SERVER_ERROR)


@dataclass(frozen=True)
class Wire:
    """One protocol: how to read a request, and how to answer it whole or streamed."""

    name: str
    read: Callable[[dict[str, Any]], Conversation]
    whole: Callable[[play.Turn, str], dict[str, Any]]
    stream: Callable[[play.Turn, str], list[tuple[str | None, Any]]]
    error: Callable[[FaultKind], tuple[int, dict[str, Any]]]
    named_events: bool = True     # `event: NAME` lines before `data:` (Anthropic, Responses)


ANTHROPIC = Wire("anthropic", wire_anthropic.read, wire_anthropic.message, wire_anthropic.events,
                 wire_anthropic.error)
RESPONSES = Wire("openai-responses", wire_openai.read_responses, wire_openai.response, wire_openai.responses_events,
                 wire_openai.error)
CHAT = Wire("openai-chat", wire_openai.read_chat, wire_openai.chat_completion, wire_openai.chat_events,
            wire_openai.error, named_events=False)
GEMINI = Wire("gemini", wire_gemini.read, wire_gemini.response, wire_gemini.events, wire_gemini.error,
              named_events=False)


@dataclass
class StandIn:
    loaded: LoadedPolicy
    problem: str = ""
    workspace: str | None = None          # where relative paths of the policy land (else read from the request)
    host: str = "127.0.0.1"
    port: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    _attempts: Counter = field(default_factory=Counter)
    _thread: threading.Thread | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None
    _stopping: bool = False

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 << 20)
        app.router.add_post("/v1/messages", self._wire(ANTHROPIC))
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_post("/v1/responses", self._wire(RESPONSES))
        app.router.add_post("/v1/chat/completions", self._wire(CHAT))
        app.router.add_post("/chat/completions", self._wire(CHAT))
        app.router.add_post("/v1beta/models/{model}:streamGenerateContent", self._wire(GEMINI, stream=True))
        app.router.add_post("/v1beta/models/{model}:generateContent", self._wire(GEMINI, stream=False))
        app.router.add_post("/v1beta/models/{model}:countTokens", self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        return app

    def start(self) -> str:
        """Serve in a background thread; returns the base URL once the port is bound."""
        if not self.port:
            self.port = free_port(self.host)
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="kernelbench-standin", daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the model stand-in did not start within 30 s")
        return self.url

    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(self.app(), handle_signals=False)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, self.host, self.port).start())
        ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(asyncio.sleep(0.5))   # stalled handlers see `_stopping` and return
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def stop(self) -> None:
        self._stopping = True
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
        self._loop = self._thread = None

    def __enter__(self) -> StandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ handlers

    def _wire(self, wire: Wire, stream: bool | None = None):
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            model = request.match_info.get("model") or body.get("model") or "stand-in"
            conv = wire.read(body)
            streamed = body.get("stream", False) if stream is None else stream
            entry = {"t": round(time.time(), 3), "path": request.path, "wire": wire.name, "model": model,
                     "stream": bool(streamed), "agent_loop": conv.is_agent_loop}
            self.log.append(entry)
            fault = None
            if conv.is_agent_loop:
                step = min(conv.step(), len(self.loaded.policy.steps) - 1)
                self._attempts[step] += 1
                entry.update(step=step, attempt=self._attempts[step])
                fault = self.loaded.policy.fault_for(step, self._attempts[step])
                entry["fault"] = fault.fault.value if fault else None
            if fault is not None and fault.fault in HTTP_FAULTS:
                status, payload = wire.error(fault.fault)
                entry["status"] = status
                return web.json_response(payload, status=status, headers={"retry-after": "0",
                                                                          "retry-after-ms": "50"})
            try:
                turn = play.next_turn(self.loaded, conv, reject=fault is not None
                                      and fault.fault is FaultKind.REJECT_TOOL, problem=self.problem,
                                      workspace=self.workspace)
            except LookupError as exc:   # the CLI offers no tool the policy can use
                entry["status"] = 400
                return web.json_response({"error": {"type": "invalid_request_error", "message": str(exc)}},
                                         status=400)
            entry.update(status=200, tool=turn.call.name if turn.call else None, finished=turn.finished)
            if not streamed:
                return web.json_response(wire.whole(turn, model))
            return await self._stream(request, wire, wire.stream(turn, model), fault.fault if fault else None)

        return handle

    async def _stream(self, request: web.Request, wire: Wire, events: list[tuple[str | None, Any]],
                      fault: FaultKind | None) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        frames = [sse(name if wire.named_events else None, data) for name, data in events]
        if fault is FaultKind.STALL:
            await response.write(frames[0])
            deadline = time.monotonic() + STALL_S
            # until the client hangs up or the server stops (a sleeping handler would hold the shutdown)
            while time.monotonic() < deadline and not self._stopping and not _closed(request):
                await asyncio.sleep(0.2)
            return response
        if fault is FaultKind.CUT:
            keep = len(frames) // 2
            for frame in frames[:keep]:
                await response.write(frame)
            await response.write(frames[keep][: max(1, len(frames[keep]) // 2)])
            if request.transport is not None:  # (None once the client is gone)
                request.transport.close()      # the connection drops in the middle of an event
            return response
        for frame in frames:
            await response.write(frame)
        await response.write_eof()
        return response

    async def _count_tokens(self, request: web.Request) -> web.Response:
        body = await request.read()
        tokens = max(1, round(len(body) / self.loaded.policy.usage.chars_per_token))
        self.log.append({"t": round(time.time(), 3), "path": request.path, "status": 200})
        return web.json_response({"input_tokens": tokens, "totalTokens": tokens})

    async def _models(self, request: web.Request) -> web.Response:
        self.log.append({"t": round(time.time(), 3), "path": request.path, "status": 200})
        return web.json_response({"object": "list", "data": [{"id": "stand-in", "object": "model",
                                                              "created": 0, "owned_by": "kernelbench"}]})

    async def _unknown(self, request: web.Request) -> web.Response:
        self.log.append({"t": round(time.time(), 3), "path": request.path, "method": request.method,
                         "status": 404})
        return web.json_response({"error": {"message": f"the stand-in does not serve {request.method} "
                                                       f"{request.path}"}}, status=404)

    def log_jsonl(self) -> str:
        return "".join(json.dumps(entry) + "\n" for entry in list(self.log))


def _closed(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
