"""opencode: `opencode run --format json -m PROVIDER/MODEL PROMPT`, then `opencode export <sessionID>`.

The stream (`step_start | text | tool_use | step_finish | error` records carrying `sessionID`) names the
session; the export of that session (per-message tokens and cost) is the transcript, the stream is kept as
`events.jsonl`. Routed models (OpenRouter) are pinned: the provider order comes from the agent's options and
fallbacks are switched off, so a run either uses the named providers or fails loudly.
"""

from __future__ import annotations

import json
import subprocess

from kernelbench.errors import KernelBenchError
from kernelbench.harness.agents.base import (
    EVENTS,
    STANDIN_KEY,
    AgentAdapter,
    AgentContext,
    AgentReport,
    parse_stream,
)
from kernelbench.harness.process import ProcessResult

EXPORT = "transcript.json"   # one JSON document, not a stream
ROUTED = ("openrouter",)
STANDIN_PROVIDER = "kernelbench-standin"


class OpencodeAdapter(AgentAdapter):
    name = "opencode"
    executable = "opencode"
    install_hint = "npm install -g opencode-ai (or curl -fsSL https://opencode.ai/install | bash)"
    efforts = ("minimal", "low", "medium", "high", "xhigh", "max")
    verified = ("1.18.33",)
    config_files = (".local/share/opencode/auth.json",)
    env_keys = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                "GOOGLE_GENERATIVE_AI_API_KEY", "MOONSHOT_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
                "GROQ_API_KEY", "ZHIPU_API_KEY")

    def validate(self, spec, options) -> None:
        super().validate(spec, options)
        if options.get("model_server"):
            return   # the model is served by the stand-in's own provider
        provider, sep, _ = spec.model.partition("/")
        if not sep:
            raise KernelBenchError(f"opencode model '{spec.model}' has no provider",
                                   hint="write it as PROVIDER/MODEL, e.g. opencode:openrouter/moonshotai/kimi-k2")
        if provider in ROUTED and not options.get("provider_order"):
            raise KernelBenchError(f"'{spec.model}' is routed through {provider}, but no provider is pinned",
                                   hint="give the agent `options: {provider_order: [<provider>, ...]}` in the "
                                        "sweep file (or --provider-order): fallbacks to other providers are off")

    def command(self, ctx: AgentContext) -> list[str]:
        argv = [str(self.find_executable()), "run", "--format", "json", "--model", self.model_id(ctx)]
        return argv + [ctx.prompt]

    def model_id(self, ctx: AgentContext) -> str:
        return f"{STANDIN_PROVIDER}/{ctx.spec.model}" if ctx.model_server else ctx.spec.model

    def use_model_server(self, ctx: AgentContext, url: str) -> dict[str, str]:
        return {}   # the inline config (below) declares the server as an OpenAI-compatible provider

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        return {"OPENCODE_CONFIG_CONTENT": json.dumps(self.config(ctx)), "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_SHARE": "1"}

    def config(self, ctx: AgentContext) -> dict:
        """Inline config: every permission granted (the sandbox confines it), the model pinned to its provider."""
        provider, _, model = self.model_id(ctx).partition("/")
        options: dict = {}
        if ctx.spec.effort:
            options["reasoningEffort"] = ctx.spec.effort
        if provider in ROUTED:
            options["provider"] = {"order": list(ctx.options["provider_order"]), "allow_fallbacks": False}
        config: dict = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
                        "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"}}
        if ctx.model_server:
            config["provider"] = {provider: {
                "npm": "@ai-sdk/openai-compatible", "name": "KernelBench stand-in",
                "options": {"baseURL": ctx.model_server.rstrip("/") + "/v1", "apiKey": STANDIN_KEY},
                "models": {model: {"name": model, **({"options": options} if options else {})}}}}
        elif options:
            config["provider"] = {provider: {"models": {model: {"options": options}}}}
        return config

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = AgentReport()
        events_path = self.keep_stdout_as_events(ctx)
        stream = parse_stream(events_path, report)
        self._export(ctx, report)
        if report.transcript is None and events_path.is_file():
            report.transcript = EVENTS
        return self.finish(ctx, report, proc, stream)

    def completed(self, session, proc: ProcessResult) -> bool:
        return session.complete and proc.exit_code == 0

    def _export(self, ctx: AgentContext, report: AgentReport) -> None:
        if not report.session_id:
            return
        argv = [str(self.find_executable()), "export", report.session_id]
        proc = subprocess.run(argv, cwd=ctx.workspace, env=self.environment(ctx), capture_output=True, timeout=120)
        text = proc.stdout.decode("utf-8", "replace")
        start = text.find("{")  # the export may print a banner line before the JSON
        if proc.returncode != 0 or start < 0:
            report.notes.append(f"opencode export {report.session_id} failed (exit {proc.returncode}): "
                                f"{proc.stderr.decode('utf-8', 'replace')[-500:]}")
            return
        (ctx.run_dir / EXPORT).write_text(text[start:], encoding="utf-8")
        report.transcript = EXPORT


ADAPTER = OpencodeAdapter()
