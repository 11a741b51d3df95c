"""Codex CLI: `codex exec --json PROMPT`, then its session rollout located by the thread id it printed.

The rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<stamp>-<id>.jsonl`, here under the agent's own home) is the
transcript: it has timestamps, the model and token counts that the exec stream lacks. It is found by the id in
`thread.started`, never by modification time, so parallel runs cannot pick up each other's sessions. The exec
stream is kept beside it as `events.jsonl`.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelbench.harness.agents.base import STANDIN_KEY, AgentAdapter, AgentContext, AgentReport, parse_stream
from kernelbench.harness.process import ProcessResult


class CodexAdapter(AgentAdapter):
    name = "codex"
    executable = "codex"
    install_hint = "npm install -g @openai/codex"
    efforts = ("minimal", "low", "medium", "high", "xhigh")
    verified = ("0.169.0",)
    config_files = (".codex/auth.json",)
    env_keys = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY")

    def command(self, ctx: AgentContext) -> list[str]:
        argv = [str(self.find_executable()), "exec", "--json", "--model", ctx.spec.model,
                "--skip-git-repo-check", "--cd", str(ctx.workspace),
                # the harness's bubblewrap sandbox confines it; codex's own would block the GPU
                "--dangerously-bypass-approvals-and-sandbox"]
        if ctx.spec.effort:
            argv += ["-c", f"model_reasoning_effort={ctx.spec.effort}"]
        return argv + [ctx.prompt]

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        return {"CODEX_HOME": str(ctx.home / ".codex")}

    def use_model_server(self, ctx: AgentContext, url: str) -> dict[str, str]:
        """A provider of its own in CODEX_HOME/config.toml, speaking the Responses API to the server."""
        config = ctx.home / ".codex" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'model_provider = "kernelbench-standin"\n\n[model_providers.kernelbench-standin]\n'
                          f'name = "KernelBench stand-in"\nbase_url = {json.dumps(url.rstrip("/") + "/v1")}\n'
                          f'wire_api = "responses"\nenv_key = "KERNELBENCH_STANDIN_KEY"\n')
        return {"KERNELBENCH_STANDIN_KEY": STANDIN_KEY}

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = AgentReport()
        stream = parse_stream(self.keep_stdout_as_events(ctx), report)
        self.adopt_session_file(ctx, report, find_rollout(ctx.home / ".codex" / "sessions", report.session_id),
                                f"no rollout for session {report.session_id} under ~/.codex/sessions: "
                                "the exec stream is the transcript")
        return self.finish(ctx, report, proc, stream)

def find_rollout(sessions: Path, session_id: str | None) -> Path | None:
    """The rollout file whose name ends with the session id (exactly one is expected)."""
    if not session_id or not sessions.is_dir():
        return None
    matches = sorted(sessions.rglob(f"rollout-*{session_id}.jsonl"))
    return matches[0] if len(matches) == 1 else None


ADAPTER = CodexAdapter()
