"""One run: workspace → sandboxed agent under its budget → collect → grade → classify → run directory."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kernelbench
from kernelbench.errors import KernelBenchError
from kernelbench.harness import DEFAULT_BUDGET_S, sandbox
from kernelbench.harness.agents import AgentAdapter, AgentContext, AgentReport, get_adapter
from kernelbench.harness.agents.base import STDERR_NAME
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.outcome import classify, template_findings
from kernelbench.harness.process import ProcessResult, run_budgeted
from kernelbench.harness.runids import unique_run_id
from kernelbench.harness.workspace import (
    Workspace,
    check_agents_can_work_on,
    collect_submission,
    copy_workspace,
    prepare_workspace,
)
from kernelbench.problems.problem import Problem
from kernelbench.results.run import Environment, Finding, Outcome, RunResult, Session
from kernelbench.results.rundir import MODEL_SERVER_LOG, StagedRun, gpu_key, staged_run



@dataclass
class RunRequest:
    agent: AgentSpec
    problem: Problem                   # opened once by the command (kernelbench.problems.problem.open_problem)
    runs_dir: Path = Path("runs")
    budget_s: float = DEFAULT_BUDGET_S
    trial: int = 1
    device: str = "cuda"
    shapes: str = "full"
    held_out: bool = True              # the grading judges the held-out cases (off only where a caller opts out)
    sanitizer: bool = False            # the grading's sanitizer stage (CUDA; off by default until validated on a GPU)
    sandboxed: bool = True
    network: bool = True
    gpu: str | None = None                                   # profile key; detected when None
    options: dict[str, Any] = field(default_factory=dict)    # per-agent settings (provider order, plan search)
    env: dict[str, str] = field(default_factory=dict)        # e.g. CUDA_VISIBLE_DEVICES from the pool
    model_server: str | None = None    # the CLI talks to this base URL instead of its provider's API
    stand_in: Path | None = None       # or to a model stand-in started for the run, playing this policy file

    @property
    def agent_options(self) -> dict[str, Any]:
        served = bool(self.model_server or self.stand_in)
        return {**self.options, "model_server": True} if served else self.options


def validate_request(request: RunRequest) -> None:
    """Everything that can be checked before a workspace exists; each failure names the thing and the fix."""
    if not request.budget_s or request.budget_s <= 0:
        raise KernelBenchError(f"a budget of {request.budget_s} s leaves the agent no time",
                               hint="give --budget a positive number of seconds (default 2700 = 45 min)")
    check_agents_can_work_on(request.problem)
    adapter = get_adapter(request.agent.harness)
    adapter.find_executable()
    adapter.validate(request.agent, request.agent_options)
    if request.model_server and request.stand_in:
        raise KernelBenchError("give --model-server URL or --stand-in POLICY, not both",
                               hint="--stand-in starts a stand-in for the run; --model-server uses one running")
    if request.stand_in:
        from kernelbench.harness.standin.policy import load_policy

        load_policy(request.stand_in, problem=request.problem.name)
    if request.sandboxed:
        sandbox.probe()
    if request.device not in ("cuda", "cpu") or request.shapes not in ("full", "smoke"):
        raise KernelBenchError(f"unknown device/shapes '{request.device}'/'{request.shapes}'",
                               hint="use --device cuda|cpu and --shapes full|smoke")


def execute_run(request: RunRequest) -> Path:
    """Run the agent once and write `runs/<run_id>/`; returns that folder."""
    validate_request(request)
    started = datetime.now(UTC)
    run_id = unique_run_id(request.runs_dir, started, request.agent, request.problem.id, request.trial)
    scratch = None
    try:
        with staged_run(request.runs_dir, run_id) as run:
            scratch = Path(tempfile.mkdtemp(prefix=f"kernelbench-{run_id}-"))
            return run.publish(_run_in(request, run_id, started, run, scratch))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)  # holds the copies of the agent's credentials


def _run_in(request: RunRequest, run_id: str, started: datetime, run: StagedRun, scratch: Path) -> RunResult:
    profile = _profile(request)
    result = RunResult(run_id=run_id, harness=request.agent.harness, model=request.agent.model,
                       effort=request.agent.effort, deck=request.problem.deck, problem=request.problem.name,
                       gpu=gpu_key(request.device, expected=profile.key if profile else None),
                       trial=request.trial,
                       started=started, scripted=get_adapter(request.agent.harness).scripted,
                       session=Session(budget_s=request.budget_s, sandboxed=request.sandboxed,
                                       sandbox_note=_sandbox_note(request)),
                       environment=_environment(request))
    ws = prepare_workspace(request.problem, scratch / "workspace", scratch / "pristine", profile=profile,
                           device=request.device, shapes=request.shapes)
    _record_cli(result.session, request)
    proc, report, error = None, None, None
    try:
        with _model_server(request, ws, run) as url:
            proc, report = _run_agent(request, run_id, ws, scratch / "home", run.path, url)
    except KernelBenchError:
        raise
    except Exception as exc:  # the run is still written, as a harness error with its traceback
        error = f"{type(exc).__name__}: {exc}"
        run.write_harness_error(traceback.format_exc())
    _record_session(result.session, proc, report)
    _grade_and_classify(request, ws, run, result, proc, report, error, profile.key if profile else None)
    run.note_left_out(copy_workspace(ws, run.workspace_dir))
    result.finished = datetime.now(UTC)
    return result


@contextmanager
def _model_server(request: RunRequest, ws: Workspace, run: StagedRun) -> Iterator[str | None]:
    """The URL the CLI is pointed at: a stand-in started for this run (its request log kept in the run
    directory), the one given, or none (the provider's real API)."""
    if not request.stand_in:
        yield request.model_server
        return
    from kernelbench.harness.standin.policy import load_policy
    from kernelbench.harness.standin.server import StandIn

    server = StandIn(load_policy(request.stand_in, problem=ws.spec.id), problem=ws.spec.id,
                     workspace=os.path.realpath(ws.root))
    try:
        yield server.start()
    finally:
        server.stop()
        run.write_text(MODEL_SERVER_LOG, server.log_jsonl())


def _record_cli(session: Session, request: RunRequest) -> None:
    adapter = get_adapter(request.agent.harness)
    if request.stand_in:
        session.model_server = f"stand-in {Path(request.stand_in).name}"
    elif request.model_server:
        session.model_server = request.model_server
    if adapter.scripted:
        return
    session.cli_version = adapter.version()
    note = adapter.unverified_note(session.cli_version)
    if note:
        session.notes.append(note)


def _run_agent(request: RunRequest, run_id: str, ws: Workspace, home: Path, staging: Path,
               model_server: str | None = None) -> tuple[ProcessResult, AgentReport]:
    adapter = get_adapter(request.agent.harness)
    home.mkdir(parents=True)
    ctx = AgentContext(spec=request.agent, prompt=ws.prompt, workspace=ws.root, home=home, run_dir=staging,
                       problem=request.problem, budget_s=request.budget_s,
                       run_id=run_id, shapes=request.shapes, options=request.agent_options, env=dict(request.env),
                       model_server=model_server, sandboxed=request.sandboxed, workspace_top=ws.top)
    hidden = [Path(request.runs_dir).resolve(), request.problem.folder]
    return launch_agent(adapter, ctx, sandboxed=request.sandboxed, network=request.network, hidden=hidden)


def launch_agent(adapter: AgentAdapter, ctx: AgentContext, *, sandboxed: bool = True, network: bool = True,
                 hidden: list[Path] | None = None) -> tuple[ProcessResult, AgentReport]:
    """Prepare the agent's home, start its CLI (in the sandbox) under the budget, and read back its session."""
    ctx.sandboxed = sandboxed
    adapter.prepare_home(ctx)
    argv, env = adapter.command(ctx), adapter.environment(ctx)
    wrapped = None
    if sandboxed:
        box = sandbox.SandboxSpec(workspace=ctx.workspace_top or ctx.workspace, home=ctx.home, network=network,
                                  extra_ro=adapter.runtime_paths(), hidden=list(hidden or []), cwd=ctx.workspace)
        wrapped = sandbox.wrap(argv, box, env)
        argv, env = wrapped.argv, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    try:
        with adapter.live(ctx):
            proc = run_budgeted(argv, cwd=ctx.workspace, env=env, budget_s=ctx.budget_s,
                                stdout_path=ctx.stdout_path, stderr_path=ctx.stderr_path,
                                stdin_text=adapter.stdin(ctx), confined=wrapped)
    finally:
        if wrapped is not None:
            wrapped.close()
    return proc, adapter.collect(ctx, proc)


def _record_session(session: Session, proc: ProcessResult | None, report: AgentReport | None) -> None:
    if proc is not None:
        session.exit_code, session.timed_out, session.elapsed_s = proc.exit_code, proc.timed_out, proc.elapsed_s
    if report is not None:
        session.complete = report.complete and not (proc and proc.stopped)
        session.tokens, session.cost_usd = report.tokens, report.cost_usd
        session.cost_is_estimate = report.cost_is_estimate
        session.transcript, session.transcript_format = report.transcript, report.transcript_format
        session.provider_error = report.provider_error
        session.notes += list(report.notes)
        if proc is not None and proc.flooded:
            session.notes.append("stopped: its output passed the size limit")


def _grade_and_classify(request: RunRequest, ws: Workspace, run: StagedRun, result: RunResult,
                        proc: ProcessResult | None, report: AgentReport | None, error: str | None,
                        expected_gpu: str | None) -> None:
    findings: list[Finding] = template_findings(ws.template_changes())
    submission = collect_submission(ws, run.submission_dir)
    grade = None
    if submission is not None and error is None:
        run.keep_solution(submission)
        try:
            grade = _grade(submission, request)
        except Exception as exc:  # a grader failure is the harness's, not the agent's
            error = f"grading failed: {type(exc).__name__}: {exc}"
            run.write_harness_error(traceback.format_exc())
    if grade is not None:
        findings = [*grade.integrity, *findings]
        result.environment = grade.environment.model_copy(update={"host": result.environment.host})
        result.gpu = gpu_key(request.device, grade.environment.gpu_key, expected_gpu)  # what the grader measured on
        run.write_grade_logs(grade.check_log, grade.benchmark_log)
    result.integrity = findings
    result.grading = classify(proc, report, grade, findings, has_solution=submission is not None,
                              harness_error=error)
    early = early_exit_reason(request, result.session, proc, run.path)
    if early and result.grading.outcome not in (Outcome.PASS, Outcome.INVALID):
        result.grading.reasons.insert(0, early)
    run.keep_submission()


EARLY_EXIT_S = 15.0   # a CLI that ends this soon with an error never started its session


def early_exit_reason(request: RunRequest, session: Session, proc: ProcessResult | None,
                      staging: Path) -> str | None:
    """A CLI that exited at once with an error (a refused key, a missing config, an unknown flag): which CLI, its
    version, what it said last, and what to do."""
    if proc is None or proc.exit_code in (0, None) or proc.stopped or proc.elapsed_s > EARLY_EXIT_S:
        return None
    adapter = get_adapter(request.agent.harness)
    if adapter.scripted:
        return None
    said = _last_line(staging / STDERR_NAME) or "(nothing on stderr)"
    return (f"{adapter.name} {session.cli_version or '(version unknown)'} exited at once (exit code "
            f"{proc.exit_code} after {proc.elapsed_s:.1f} s): {said[:300]} — check its credentials and config "
            f"(`{adapter.executable} --version`; stderr.log), or install a verified version "
            f"({', '.join(adapter.verified) or 'none recorded'}: npm install --prefix clis)")


def _last_line(path: Path) -> str | None:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()[-50:] if line.strip()]
    except OSError:
        return None
    return lines[-1] if lines else None


def _grade(submission: Path, request: RunRequest):
    from kernelbench.eval.grade import grade_solution

    return grade_solution(submission, request.problem, device=request.device, shapes=request.shapes,
                          held_out=request.held_out, sanitizer=request.sanitizer)


def _profile(request: RunRequest):
    from kernelbench import hardware

    if request.gpu:
        return hardware.get_profile(request.gpu)
    return hardware.detect_profile() if request.device == "cuda" else None


def _sandbox_note(request: RunRequest) -> str:
    if not request.sandboxed:
        return "not sandboxed (--no-sandbox): the agent could read the whole machine"
    return "bubblewrap; network " + ("on" if request.network else "off")


def _environment(request: RunRequest) -> Environment:
    return Environment(python=platform.python_version(), kernelbench=kernelbench.__version__,
                       host=platform.node(), problem_hash=request.problem.content_hash)
