"""Kimi Code CLI (npm `@moonshot-ai/kimi-code`, 2.x): `kimi -p PROMPT --output-format stream-json -m MODEL`.

Prompt mode runs in the working folder (the workspace) without asking, streams `{role, content, tool_calls}`
messages and ends with a `meta` record holding the session id (`session.resume_hint`). The session's wire log
under the agent's home (`~/.kimi-code/sessions/.../session_<id>/agents/main/wire.jsonl`, located by that id) is the
transcript, with per-step usage; the stream is kept as `events.jsonl`. Models are aliases of `config.toml`
(thinking and effort are set there, per alias). The older Python kimi-cli is archived; its wire logs still parse.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelbench.harness.agents.base import STANDIN_KEY, AgentAdapter, AgentContext, AgentReport, read_events
from kernelbench.harness.process import ProcessResult


class KimiAdapter(AgentAdapter):
    name = "kimi"
    executable = "kimi"
    install_hint = "npm install -g @moonshot-ai/kimi-code (needs Node.js >= 22.19)"
    efforts = ()   # thinking and effort belong to the model alias in config.toml
    verified = ("2.1.0",)
    config_files = (".kimi-code/config.toml", ".kimi-code/credentials.json", ".kimi/config.toml",
                    ".kimi/credentials.json")
    env_keys = ("MOONSHOT_API_KEY", "KIMI_API_KEY", "KIMI_BASE_URL", "KIMI_MODEL_NAME")

    def command(self, ctx: AgentContext) -> list[str]:
        return [str(self.find_executable()), "-p", ctx.prompt, "--output-format", "stream-json", "-m",
                ctx.spec.model]

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        return {"KIMI_CODE_NO_AUTO_UPDATE": "1"}

    def use_model_server(self, ctx: AgentContext, url: str) -> dict[str, str]:
        """A Kimi-protocol provider (OpenAI Chat Completions) at the server, and the model as an alias of it."""
        config = ctx.home / ".kimi-code" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        alias = json.dumps(ctx.spec.model)
        config.write_text(f'default_model = {alias}\n\n[providers.kernelbench-standin]\ntype = "kimi"\n'
                          f'base_url = {json.dumps(url.rstrip("/") + "/v1")}\napi_key = "{STANDIN_KEY}"\n\n'
                          f'[models.{alias}]\nprovider = "kernelbench-standin"\nmodel = {alias}\n'
                          f'max_context_size = 262144\n')
        return {}

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = AgentReport()
        for event in read_events(self.keep_stdout_as_events(ctx)):
            if event.get("role") == "meta" and event.get("session_id"):
                report.session_id = event["session_id"]    # the resume hint closing the stream
        self.adopt_session_file(ctx, report, find_wire(ctx.home, report.session_id),
                                f"no wire log for session {report.session_id}: the stream is the transcript")
        return self.finish(ctx, report, proc)

    def completed(self, session, proc: ProcessResult) -> bool:
        return session.complete and proc.exit_code == 0

def find_wire(home: Path, session_id: str | None) -> Path | None:
    """The main agent's wire.jsonl inside the session folder named after `session_id`."""
    if not session_id:
        return None
    bare = session_id.removeprefix("session_")
    for root in (home / ".kimi-code" / "sessions", home / ".kimi" / "sessions"):
        if not root.is_dir():
            continue
        for folder in sorted(root.rglob(f"*{bare}*")):
            if not folder.is_dir():
                continue
            for candidate in (folder / "agents" / "main" / "wire.jsonl", folder / "wire.jsonl"):
                if candidate.is_file():
                    return candidate
    return None


ADAPTER = KimiAdapter()
