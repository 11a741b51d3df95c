"""`scripted:<plan>`: an offline agent that follows a fixed plan, for baselines and for testing the pipeline.

It goes through the same workspace, sandbox, budget and grading path as the real CLIs: its program runs inside
the sandbox and streams events on stdout, which the adapter writes as this project's normalized transcript
(`NormalizedWriter`). A stream without its final `done` record is an incomplete session.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import orjson

from kernelbench.harness.agents.base import TRANSCRIPT, AgentAdapter, AgentContext, AgentReport
from kernelbench.harness.plans import find_plan, load_plan, resolve_plan
from kernelbench.harness.process import ProcessResult
from kernelbench.transcripts.formats.scripted_events import edit_diff
from kernelbench.transcripts.normalized import NormalizedWriter

PROGRAM = Path(__file__).resolve().parents[1] / "scripted_program.py"
AGENT_DIR = ".scripted-agent"


class ScriptedAdapter(AgentAdapter):
    name = "scripted"
    executable = "python"
    install_hint = "nothing to install: it runs with the current Python"
    efforts = ()
    scripted = True

    def __init__(self) -> None:
        self._live: dict[Path, _LiveTranscript] = {}

    def find_executable(self) -> Path:
        return Path(sys.executable)

    def runtime_executables(self) -> list[Path]:
        return [Path(sys.executable)]

    def validate(self, spec, options) -> None:
        super().validate(spec, options)
        load_plan(find_plan(spec.model, options.get("plan_search")))

    def prepare_home(self, ctx: AgentContext) -> None:
        plan_path = find_plan(ctx.spec.model, ctx.options.get("plan_search"))
        root = Path(ctx.options.get("project_root") or ctx.problem.folder.parent.parent)
        resolved = resolve_plan(load_plan(plan_path), plan_path, ctx.problem_id, root,
                                ctx.shapes)
        folder = ctx.home / AGENT_DIR
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROGRAM, folder / "agent.py")
        (folder / "plan.json").write_text(json.dumps(resolved), encoding="utf-8")

    def command(self, ctx: AgentContext) -> list[str]:
        folder = ctx.home / AGENT_DIR
        # -I: isolated mode, so nothing from the environment or the current folder is imported by accident
        return [str(self.find_executable()), "-I", str(folder / "agent.py"), str(folder / "plan.json")]

    def stdin(self, ctx: AgentContext) -> str | None:
        return ctx.prompt

    def live(self, ctx: AgentContext) -> "_LiveTranscript":
        live = _LiveTranscript(ctx, NormalizedWriter(ctx.run_dir / TRANSCRIPT, harness=self.name,
                                                     model=ctx.spec.model, session_id=ctx.run_id,
                                                     cwd=str(ctx.workspace)))
        self._live[ctx.run_dir] = live
        return live

    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        report = AgentReport(transcript=TRANSCRIPT, transcript_format="normalized")
        live = self._live.pop(ctx.run_dir, None)
        if live is None:  # collected without having run live: convert the whole stream now
            live = self.live(ctx)
            self._live.pop(ctx.run_dir)
            with live:
                pass
        live.writer.close(complete=live.done, error=None if live.done else _why_incomplete(proc))
        if ctx.stdout_path.is_file():
            ctx.stdout_path.replace(ctx.run_dir / "events.jsonl")
        session = self.parsed(ctx, report)   # the normalized transcript just written, as the viewer reads it
        report.complete = session is not None and session.complete and proc.exit_code == 0
        if session is not None:
            self.usage_from(report, session)
        return report


class _LiveTranscript:
    """Tails the program's stdout while it runs and writes each event as it arrives, so timestamps are real."""

    def __init__(self, ctx: AgentContext, writer: NormalizedWriter):
        self.ctx, self.writer = ctx, writer
        self.done = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._call_ids: dict[str, str] = {}   # the program's ids → the writer's

    def __enter__(self) -> "_LiveTranscript":
        self.writer.open()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _follow(self) -> None:
        handle, pending = None, b""
        while True:
            stopping = self._stop.is_set()
            if handle is None and self.ctx.stdout_path.is_file():
                handle = open(self.ctx.stdout_path, "rb")
            chunk = handle.read() if handle is not None else b""
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._line(line)
            if stopping:
                break
            if not chunk:
                self._stop.wait(0.05)
        if pending.strip():
            self._line(pending)
        if handle is not None:
            handle.close()

    def _line(self, line: bytes) -> None:
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if isinstance(event, dict):
            self.done = self.done or event.get("type") == "done"
            _write_event(self.writer, event, self._call_ids)


def _write_event(writer: NormalizedWriter, event: dict, call_ids: dict[str, str]) -> None:
    kind = event.get("type")
    if kind == "user":
        writer.user(event.get("text", ""))
    elif kind == "assistant":
        writer.assistant(event.get("text", ""))
    elif kind == "thinking":
        writer.thinking(event.get("text", ""))
    elif kind == "tool_call":
        call_ids[str(event.get("id"))] = writer.tool_call(event.get("name", "?"), event.get("input") or {})
    elif kind == "tool_result":
        call_id = call_ids.get(str(event.get("id")), str(event.get("id")))
        writer.tool_result(call_id, event.get("output", ""), is_error=bool(event.get("is_error")),
                           exit_code=event.get("exit_code"))
    elif kind == "file_edit":
        writer.file_edit(event.get("path", "?"), edit_diff(event))
    elif kind == "start":
        writer.system(f"scripted agent, plan '{event.get('plan')}', in {event.get('cwd')}")


def _why_incomplete(proc: ProcessResult) -> str:
    if proc.timed_out:
        return "stopped at the end of its time budget"
    if proc.flooded:
        return "stopped: its output passed the size limit"
    return f"the plan did not finish (exit code {proc.exit_code})"


ADAPTER = ScriptedAdapter()
