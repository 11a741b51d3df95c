"""Gemini CLI: `gemini -p PROMPT -o stream-json -m MODEL --yolo`.

The stream (`init{session_id}`, `message`, `tool_use`, `tool_result`, `result`) names the session; the chat
recording it wrote under the agent's home (`~/.gemini/tmp/<project hash>/chats/session-*.json[l]`, the one whose
`sessionId` is that id) is the transcript, with per-message tokens. The stream is kept as `events.jsonl`.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelbench.harness.agents.base import STANDIN_KEY, AgentAdapter, AgentContext, AgentReport, parse_stream
from kernelbench.harness.process import ProcessResult


class GeminiAdapter(AgentAdapter):
    name = "gemini"
    executable = "gemini"
    install_hint = "npm install -g @google/gemini-cli"
    efforts = ()   # thinking is chosen by the model name
    verified = ("0.61.0",)
    config_files = (".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/settings.json")
    env_keys = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
                "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS")

    def command(self, ctx: AgentContext) -> list[str]:
        return [str(self.find_executable()), "-p", ctx.prompt, "-o", "stream-json", "-m", ctx.spec.model,
                "--yolo"]

    def use_model_server(self, ctx: AgentContext, url: str) -> dict[str, str]:
        """The API-key route with its base URL moved (set in settings: with GOOGLE_GEMINI_BASE_URL alone, 0.61
        takes the auth type for a gateway's and refuses it), the workspace trusted so --yolo holds."""
        settings = ctx.home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}) + "\n")
        return {"GEMINI_API_KEY": STANDIN_KEY, "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = AgentReport()
        stream = parse_stream(self.keep_stdout_as_events(ctx), report)
        self.adopt_session_file(ctx, report, find_recording(ctx.home / ".gemini" / "tmp", report.session_id),
                                f"no chat recording for session {report.session_id}: the stream is the transcript")
        return self.finish(ctx, report, proc, stream)

def find_recording(root: Path, session_id: str | None) -> Path | None:
    """The chat file of `session_id`: named after its first 8 characters, confirmed by its content."""
    if not session_id or not root.is_dir():
        return None
    for path in sorted(root.glob(f"*/chats/session-*{session_id[:8]}*.json*")):
        with open(path, "rb") as handle:
            if session_id.encode() in handle.read(4096):
                return path
    return None


ADAPTER = GeminiAdapter()
