"""Cursor agent: `cursor-agent -p --output-format stream-json --model MODEL --force PROMPT`.

The stream is the transcript (`system/init`, `user`, `thinking`, `assistant`, `tool_call`, `result`); a final
`result` that is not an error marks completion and carries the usage.
"""

from __future__ import annotations

from kernelbench.harness.agents.base import (AgentAdapter, AgentContext, AgentReport, classify_error_text,
                                             error_event, stream_json_records)
from kernelbench.harness.process import ProcessResult


class CursorAdapter(AgentAdapter):
    name = "cursor"
    executable = "cursor-agent"
    install_hint = "curl https://cursor.com/install -fsS | bash"
    efforts = ()   # effort is part of Cursor's model names (e.g. gpt-5-high)
    config_files = (".cursor/cli-config.json", ".config/cursor/auth.json")
    env_keys = ("CURSOR_API_KEY",)

    def command(self, ctx: AgentContext) -> list[str]:
        return [str(self.find_executable()), "-p", "--output-format", "stream-json", "--model", ctx.spec.model,
                "--force", ctx.prompt]

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = self.keep_stdout_as_transcript(ctx)
        result, error = None, None
        for event in stream_json_records(ctx, report):
            kind = event.get("type")
            if kind == "result":
                result = event
                if event.get("is_error"):
                    error = classify_error_text(str(event.get("result") or event.get("subtype")), "result.is_error")
            elif kind == "error":
                error = error_event(event)
        report.complete = result is not None and not result.get("is_error")
        return self.finish(ctx, report, error)


ADAPTER = CursorAdapter()
