"""Cursor agent: `cursor-agent -p --output-format stream-json --model MODEL --force PROMPT`.

The stream is the transcript (`system/init`, `user`, `thinking`, `assistant`, `tool_call`, `result`); its parsed
form says whether the session finished (a final `result` of subtype success that is not an error), and carries
the usage.
"""

from __future__ import annotations

from kernelbench.harness.agents.base import AgentAdapter, AgentContext, AgentReport
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
        return self.finish(ctx, self.keep_stdout_as_transcript(ctx), proc)

ADAPTER = CursorAdapter()
