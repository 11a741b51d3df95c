"""The policy played against one request: which step the conversation is at, and what the model says next.

The step is read from the conversation itself (the tool results it carries), so a retried request gets the same
answer and requests that are not the agent's loop (a title, a summary: no shell tool offered) get a short text.
The tools are called by the names and parameters the CLI advertised in this very request.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from kernelbench.harness.standin.policy import LoadedPolicy, Step

REJECTED_TOOL = "kb_standin_no_such_tool"   # what the `reject_tool` fault calls
REJECT_MARK = "kbreject"
SHELL_WAIT_MS = 300_000
SHELL_TOOLS = ("Bash", "exec_command", "shell", "shell_command", "run_shell_command", "bash", "Shell")
WRITE_TOOLS = ("Write", "write_file", "write", "WriteFile")
READ_TOOLS = ("Read", "read_file", "read", "ReadFile")
PATCH_TOOLS = ("apply_patch",)
SIDE_REPLY = "KernelBench stand-in session"
SYSTEM_NOTE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
VERDICT = re.compile(r"\b(PASS|FAIL(?:ED)?)\b")
WRAPPER_TAG = re.compile(r"^\s*</?[\w-]+>\s*$", re.M)   # a line that only opens or closes a wrapper
CWD_PATTERNS = (re.compile(r"<cwd>([^<\n]+)</cwd>"), re.compile(r"[Ww]orking directory: *(/[^\s`'\"]+)"),
                re.compile(r"current working directory[^/\n]*?(/[^\s`'\"]+)"),
                re.compile(r"working in the (?:following )?directory[^/\n]*?(/[^\s`'\"]+)"))


@dataclass
class Tool:
    name: str
    params: dict[str, Any] = field(default_factory=dict)   # JSON-schema properties
    required: list[str] = field(default_factory=list)
    freeform: bool = False                                   # a custom (grammar) tool taking raw text


@dataclass
class Call:
    id: str
    name: str


@dataclass
class Result:
    call_id: str | None
    name: str | None
    text: str


@dataclass
class Conversation:
    """What one request carries, whatever its wire format."""

    tools: dict[str, Tool] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    text: str = ""                 # every text of the request, for the cwd and the usage count

    @property
    def is_agent_loop(self) -> bool:
        return any(name in self.tools for name in SHELL_TOOLS)

    def step(self) -> int:
        """Results of calls the policy made (a rejected call's result does not move the policy on)."""
        names = {c.id: c.name for c in self.calls}
        return sum(1 for r in self.results if (r.name or names.get(r.call_id or "")) != REJECTED_TOOL
                   and REJECT_MARK not in (r.call_id or ""))

    def last_output(self) -> str:
        """The last tool result, without the notes some CLIs append for the model (`<system-reminder>`)."""
        return WRAPPER_TAG.sub("", SYSTEM_NOTE.sub("", self.results[-1].text)) if self.results else ""

    def cwd(self) -> str | None:
        for pattern in CWD_PATTERNS:
            match = pattern.search(self.text)
            if match:
                return match.group(1).rstrip(".,;:)")
        return None


@dataclass
class ToolCall:
    name: str
    args: dict[str, Any] | None = None     # a function tool's arguments
    raw: str | None = None                 # a freeform tool's input
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:24])

    @property
    def rejected(self) -> bool:
        return self.name == REJECTED_TOOL


@dataclass
class Turn:
    text: str | None
    call: ToolCall | None
    step: int
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    @property
    def finished(self) -> bool:
        return self.call is None


def next_turn(loaded: LoadedPolicy, conv: Conversation, *, reject: bool = False, problem: str = "",
              workspace: str | None = None) -> Turn:
    policy = loaded.policy
    if not conv.is_agent_loop:
        return _counted(loaded, conv, Turn(text=SIDE_REPLY, call=None, step=-1))
    index = min(conv.step(), len(policy.steps) - 1)
    step = policy.steps[index]
    text = _fill(step.say, conv, problem)
    if reject and step.action:
        # the id carries the mark too: some CLIs answer an unknown tool under a name of their own ("invalid")
        call = ToolCall(REJECTED_TOOL, {"reason": "a tool this CLI does not have"},
                        id=REJECT_MARK + uuid.uuid4().hex[:16])
    elif step.action:
        call = tool_call(step, loaded.contents.get(index), conv, workspace or conv.cwd())
    else:
        call, text = None, _join(text, _fill(step.finish, conv, problem))
    return _counted(loaded, conv, Turn(text=text, call=call, step=index))


def tool_call(step: Step, content: str | None, conv: Conversation, cwd: str | None) -> ToolCall:
    if step.run is not None:
        return shell_call(conv, step.run)
    if step.read is not None:
        return read_call(conv, step.read, cwd)
    assert step.write is not None  # a step with an action that is neither run nor read writes
    return write_call(conv, step.write.path, content or "", cwd)


def shell_call(conv: Conversation, command: str) -> ToolCall:
    tool = _first(conv, SHELL_TOOLS)
    args: dict[str, Any] = {}
    key = _param(tool, ("command", "cmd"))
    spec = tool.params.get(key, {})
    args[key] = ["bash", "-lc", command] if spec.get("type") == "array" else command
    if "description" in tool.params:
        args["description"] = f"Run {command}"
    if "is_background" in tool.required:
        args["is_background"] = False
    if "yield_time_ms" in tool.params:
        # codex's exec_command returns after this long with the process still running (default 10 s): a plan's
        # command is a check that imports torch, which a loaded machine can take longer than that to finish, and
        # the plan's next step reads its verdict, so ask for the wait a model gives a test run
        args["yield_time_ms"] = SHELL_WAIT_MS
    return ToolCall(tool.name, args)


def read_call(conv: Conversation, path: str, cwd: str | None) -> ToolCall:
    tool = _first(conv, READ_TOOLS, required=False)
    if tool is None:
        return shell_call(conv, f"cat {path}")
    key = _param(tool, ("file_path", "filePath", "absolute_path", "path"))
    return ToolCall(tool.name, {key: _absolute(path, cwd)})


def write_call(conv: Conversation, path: str, content: str, cwd: str | None) -> ToolCall:
    tool = _first(conv, WRITE_TOOLS, required=False)
    if tool is not None:
        key = _param(tool, ("file_path", "filePath", "absolute_path", "path"))
        return ToolCall(tool.name, {key: _absolute(path, cwd), "content": content})
    patch = _first(conv, PATCH_TOOLS, required=False)
    if patch is not None:
        body = "".join(f"+{line}\n" for line in content.splitlines())
        text = f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"
        if patch.freeform:
            return ToolCall(patch.name, raw=text)
        return ToolCall(patch.name, {_param(patch, ("input", "patch")): text})
    return shell_call(conv, f"cat > {path} <<'KB_STANDIN_EOF'\n{content}\nKB_STANDIN_EOF")


@overload
def _first(conv: Conversation, names: tuple[str, ...], required: Literal[True] = True) -> Tool: ...


@overload
def _first(conv: Conversation, names: tuple[str, ...], required: bool) -> Tool | None: ...


def _first(conv: Conversation, names: tuple[str, ...], required: bool = True) -> Tool | None:
    for name in names:
        if name in conv.tools:
            return conv.tools[name]
    if required:
        raise LookupError(f"the request offers none of the tools {', '.join(names)}")
    return None


def _param(tool: Tool, names: tuple[str, ...]) -> str:
    return next((n for n in names if n in tool.params), names[0])


def _absolute(path: str, cwd: str | None) -> str:
    return path if path.startswith("/") or not cwd else f"{cwd.rstrip('/')}/{path}"


def _fill(text: str | None, conv: Conversation, problem: str) -> str | None:
    if text is None:
        return None
    return text.replace("{last_output}", verdict_line(conv.last_output())).replace("{problem}", problem)


def verdict_line(output: str) -> str:
    """What the model reads back from a command's output: its last line saying PASS or FAIL, else its last line
    (CLIs append their own notes: exit codes, process groups)."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    verdicts = [line for line in lines if VERDICT.search(line)]
    return (verdicts or lines or ["(nothing)"])[-1][:300]


def _join(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)


def _counted(loaded: LoadedPolicy, conv: Conversation, turn: Turn) -> Turn:
    rate = loaded.policy.usage
    reply = (turn.text or "") + (json.dumps(turn.call.args) if turn.call and turn.call.args else "")
    reply += turn.call.raw or "" if turn.call else ""
    total_in = max(1, round(len(conv.text) / rate.chars_per_token))
    turn.cached_tokens = round(total_in * rate.cached_fraction)
    turn.input_tokens = total_in - turn.cached_tokens
    turn.output_tokens = max(1, round(len(reply) / rate.chars_per_token))
    return turn
