"""Claude Code: `claude -p PROMPT --output-format stream-json --verbose`.

The stream is the transcript (system/init … result). Completion: a final `result` record that is not an error.
Usage and cost: the `result` record's totals, read through the transcripts stage's parser.
"""

from __future__ import annotations

from kernelbench.harness.agents.base import (STANDIN_KEY, AgentAdapter, AgentContext, AgentReport, classify_error_text,
                                             stream_json_records)
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
        report = self.keep_stdout_as_transcript(ctx)
        result, event_error = None, None
        for event in stream_json_records(ctx, report):
            kind = event.get("type")
            if kind == "result":
                result = event
            elif kind == "assistant" and event.get("error"):
                # API failures surface as synthetic assistant records carrying an `error` code
                event_error = classify_error_text(f"{event['error']}: {_text_of(event)}", "assistant.error")
        if result is not None:
            report.complete = not result.get("is_error") and result.get("subtype") == "success"
            if result.get("is_error"):
                event_error = event_error or classify_error_text(
                    f"{result.get('subtype')}: {result.get('result') or ''}", "result.is_error")
        return self.finish(ctx, report, event_error)


def _text_of(event: dict) -> str:
    content = (event.get("message") or {}).get("content") or []
    return " ".join(b.get("text", "") for b in content if isinstance(b, dict))[:500]


ADAPTER = ClaudeAdapter()
