"""The model stand-in on its own: policy files (errors with file and line), the policy played against each wire
protocol over real HTTP, and the faults as a client sees them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("aiohttp", reason="aiohttp is not installed (pip install -e '.[standin]')")

from kernelbench.errors import KernelBenchError  # noqa: E402
from kernelbench.harness.standin.play import REJECTED_TOOL, verdict_line  # noqa: E402
from kernelbench.harness.standin.policy import Fault, load_policy  # noqa: E402
from kernelbench.harness.standin.server import StandIn  # noqa: E402

EAGER = Path(__file__).parent / "standin" / "eager.yaml"
BASH = {"name": "Bash", "input_schema": {"properties": {"command": {"type": "string"},
                                                         "description": {"type": "string"}}}}
WRITE = {"name": "Write", "input_schema": {"properties": {"file_path": {"type": "string"},
                                                           "content": {"type": "string"}}}}


def post(url: str, body: dict, timeout: float = 10) -> tuple[int, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def sse_data(raw: bytes) -> list:
    return [json.loads(line[6:]) for line in raw.decode().splitlines()
            if line.startswith("data: ") and line[6:] != "[DONE]"]


@pytest.fixture
def policy():
    return load_policy(EAGER, problem="04_kahan_softmax")


def anthropic_turn(messages: list, tools=(BASH, WRITE)) -> dict:
    return {"model": "m", "stream": True, "max_tokens": 100, "tools": list(tools), "messages": messages,
            "system": "Working directory: /work/space"}


def test_policy_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsteps:\n  - say: hi\n  - run: python check.py\n    write: {text: x}\n"
                   "  - finish: done\n")
    with pytest.raises(KernelBenchError) as info:
        load_policy(bad)
    assert str(bad) in str(info.value) and ":4" in str(info.value) and "at most one action" in str(info.value)
    unfinished = tmp_path / "unfinished.yaml"
    unfinished.write_text("name: x\nsteps:\n  - run: ls\n")
    with pytest.raises(KernelBenchError, match="finish"):
        load_policy(unfinished)
    missing = tmp_path / "missing.yaml"
    missing.write_text("name: x\nsteps:\n  - write: {from: nowhere.py}\n  - finish: done\n")
    with pytest.raises(KernelBenchError, match="nowhere.py"):
        load_policy(missing)


def test_the_policy_plays_over_anthropic_messages_with_the_cli_s_own_tools(policy):
    with StandIn(policy, problem="04_kahan_softmax") as server:
        status, raw = post(server.url + "/v1/messages", anthropic_turn([{"role": "user", "content": "go"}]))
        events = sse_data(raw)
        assert status == 200 and events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
        start = next(e for e in events if e["type"] == "content_block_start" and
                     e["content_block"]["type"] == "tool_use")
        assert start["content_block"]["name"] == "Bash"   # no Read tool offered: the task is read with cat
        assert events[0]["message"]["usage"]["input_tokens"] > 0
        # the answer to that call moves the policy on: the next turn writes solution.py with the Write tool
        call_id = start["content_block"]["id"]
        messages = [{"role": "user", "content": "go"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "Bash",
                                                       "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                                  "content": "the task"}]}]
        status, raw = post(server.url + "/v1/messages", {**anthropic_turn(messages), "stream": False})
        message = json.loads(raw)
        tool = next(b for b in message["content"] if b["type"] == "tool_use")
        assert tool["name"] == "Write" and tool["input"]["file_path"] == "/work/space/solution.py"
        assert "class Model" in tool["input"]["content"] and message["stop_reason"] == "tool_use"
        assert [e["step"] for e in server.log if e.get("agent_loop")] == [0, 1]


def test_requests_outside_the_agent_loop_get_a_short_text(policy):
    with StandIn(policy) as server:
        status, raw = post(server.url + "/v1/chat/completions",
                           {"model": "m", "messages": [{"role": "user", "content": "title this"}]})
        assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"]
        assert server.log[-1]["agent_loop"] is False


@pytest.mark.parametrize("path,body", [
    ("/v1/responses", {"model": "m", "stream": True, "input": "go",
                       "tools": [{"type": "function", "name": "exec_command",
                                  "parameters": {"properties": {"cmd": {"type": "string"}}}}]}),
    ("/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}],
                              "tools": [{"type": "function", "function": {
                                  "name": "bash", "parameters": {"properties": {"command": {}}}}}]}),
    ("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
     {"contents": [{"role": "user", "parts": [{"text": "go"}]}],
      "tools": [{"functionDeclarations": [{"name": "run_shell_command",
                                           "parametersJsonSchema": {"properties": {"command": {}}}}]}]}),
])
def test_each_wire_protocol_streams_a_tool_call_and_usage(policy, path, body):
    with StandIn(policy) as server:
        status, raw = post(server.url + path, body)
    assert status == 200
    text = raw.decode()
    assert "cat PROMPT.txt" in text and ("usage" in text or "usageMetadata" in text)
    assert sse_data(raw)


@pytest.mark.parametrize("fault,status", [("rate_limit", 429), ("overloaded", 529), ("unauthorized", 401),
                                          ("server_error", 500)])
def test_http_faults_answer_like_the_provider(policy, fault, status):
    policy.policy.faults = [Fault(fault=fault, step=0, times=1)]
    with StandIn(policy) as server:
        first, raw = post(server.url + "/v1/messages", anthropic_turn([{"role": "user", "content": "go"}]))
        second, _ = post(server.url + "/v1/messages", anthropic_turn([{"role": "user", "content": "go"}]))
    assert first == status and json.loads(raw)["type"] == "error" and second == 200   # `times: 1`
    assert [(e["attempt"], e["fault"]) for e in server.log] == [(1, fault), (2, None)]


def test_a_cut_stream_ends_in_the_middle_of_an_event(policy):
    policy.policy.faults = [Fault(fault="cut", step=0)]
    with StandIn(policy) as server:
        try:
            _, raw = post(server.url + "/v1/messages", anthropic_turn([{"role": "user", "content": "go"}]))
        except Exception as exc:    # the client may see the dropped connection itself
            raw = str(exc).encode()
    assert b"message_stop" not in raw


def test_a_rejected_tool_call_does_not_move_the_policy_on(policy):
    policy.policy.faults = [Fault(fault="reject_tool", step=0, times=1)]
    with StandIn(policy) as server:
        _, raw = post(server.url + "/v1/messages", {**anthropic_turn([{"role": "user", "content": "go"}]),
                                                    "stream": False})
        rejected = next(b for b in json.loads(raw)["content"] if b["type"] == "tool_use")
        assert rejected["name"] == REJECTED_TOOL
        messages = [{"role": "user", "content": "go"},
                    {"role": "assistant", "content": [rejected]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": rejected["id"],
                                                  "is_error": True, "content": "No such tool available"}]}]
        _, raw = post(server.url + "/v1/messages", {**anthropic_turn(messages), "stream": False})
    retried = next(b for b in json.loads(raw)["content"] if b["type"] == "tool_use")
    assert retried["name"] == "Bash" and server.log[-1]["step"] == 0


def test_the_model_reads_back_check_py_s_verdict():
    assert verdict_line("PASS shape 0\nPASS shape 1\n<notes>\nProcess Group PGID: 31\n") == "PASS shape 1"
    assert verdict_line("Exit code 2\nboom") == "boom"
