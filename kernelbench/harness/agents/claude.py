"""Claude Code: `claude -p PROMPT --output-format stream-json --verbose`.

The stream is the transcript (system/init … result). Completion, provider errors (API error messages, `api_retry`
records, an error `result`), usage and cost are read from it through the transcripts stage's parser.
"""

from __future__ import annotations

from kernelbench.harness.agents.base import STANDIN_KEY, AgentAdapter, AgentContext, AgentReport
from kernelbench.harness.process import ProcessResult


class ClaudeAdapter(AgentAdapter):
    name = "claude"
    executable = "claude"
    install_hint = "npm install -g @anthropic-ai/claude-code (or curl -fsSL https://claude.ai/install.sh | bash)"
    efforts = ("low", "medium", "high", "xhigh", "max")
    verified = ("2.1.331",)
    config_files = (".claude/.credentials.json",)
    env_keys = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID",
                "CLOUD_ML_REGION", "AWS_REGION", "AWS_BEARER_TOKEN_BEDROCK")

    def command(self, ctx: AgentContext) -> list[str]:
        argv = [str(self.find_executable()), "-p", ctx.prompt, "--output-format", "stream-json", "--verbose",
                "--model", ctx.spec.model, "--dangerously-skip-permissions"]
        if ctx.spec.effort:
            argv += ["--effort", ctx.spec.effort]
        return argv

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        # no auto-updates, telemetry or error reporting from inside a benchmark run
        env = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_ERROR_REPORTING": "1", "DISABLE_TELEMETRY": "1"}
        if ctx.sandboxed:
            # as root (a container, CI) Claude Code refuses --dangerously-skip-permissions outside a sandbox it is
            # told about; bubblewrap confines it here
            env["IS_SANDBOX"] = "1"
        return env

    def use_model_server(self, ctx: AgentContext, url: str) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": STANDIN_KEY}

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        return self.finish(ctx, self.keep_stdout_as_transcript(ctx), proc)

ADAPTER = ClaudeAdapter()
