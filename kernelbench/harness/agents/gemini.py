"""Gemini CLI: `gemini -p PROMPT -o stream-json -m MODEL --yolo`.

The stream (`init{session_id}`, `message`, `tool_use`, `tool_result`, `result`) names the session; the chat
recording it wrote under the agent's home (`~/.gemini/tmp/<project hash>/chats/session-*.json[l]`, the one whose
`sessionId` is that id) is the transcript, with per-message tokens. The stream is kept as `events.jsonl`.
"""

from __future__ import annotations

from pathlib import Path

from kernelbench.harness.agents.base import (AgentAdapter, AgentContext, AgentReport, classify_error_text,
                                             first_error, read_events, stderr_provider_error)
from kernelbench.harness.process import ProcessResult

EVENTS = "events.jsonl"


class GeminiAdapter(AgentAdapter):
    name = "gemini"
    executable = "gemini"
    install_hint = "npm install -g @google/gemini-cli"
    efforts = ()   # thinking is chosen by the model name
    config_files = (".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".gemini/settings.json")
    env_keys = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
                "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS")

    def command(self, ctx: AgentContext) -> list[str]:
        return [str(self.find_executable()), "-p", ctx.prompt, "-o", "stream-json", "-m", ctx.spec.model,
                "--yolo"]

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = AgentReport()
        events_path = ctx.run_dir / EVENTS
        if ctx.stdout_path.is_file():
            ctx.stdout_path.rename(events_path)
        result, error = None, None
        for event in read_events(events_path):
            kind = event.get("type")
            if kind == "init":
                report.session_id = event.get("session_id") or event.get("sessionId")
            elif kind == "result":
                result = event
                if event.get("status") == "error":
                    error = classify_error_text(str(event.get("error") or event), "result.status")
            elif kind == "error":
                error = classify_error_text(str(event.get("message") or event.get("error") or event),
                                            "error event")
        report.complete = result is not None and result.get("status", "success") == "success"
        report.provider_error = first_error(error, stderr_provider_error(ctx.stderr_path))
        recording = find_recording(ctx.home / ".gemini" / "tmp", report.session_id)
        if recording is not None:
            name = "transcript" + recording.suffix
            (ctx.run_dir / name).write_bytes(recording.read_bytes())
            report.transcript = name
        elif events_path.is_file():
            report.transcript = EVENTS
            report.notes.append(f"no chat recording for session {report.session_id}: the stream is the transcript")
        self.usage_from(report, ctx)
        return report


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
