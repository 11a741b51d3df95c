"""What every agent adapter provides, and the pieces they share.

An adapter knows one CLI: how to find it and say how to install it, its command line (model, effort, prompt),
its environment and config (copied into a per-run home, never the real one), where its transcript lands, how
completion is detected, and which of its structured events or stderr lines report a provider error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kernelbench.errors import KernelBenchError
from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.process import ProcessResult
from kernelbench.results.run import ProviderError, Tokens

if TYPE_CHECKING:
    from kernelbench.problems.problem import Problem
    from kernelbench.transcripts.model import Session

PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
              "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
# how the machine reaches its GPU and driver, and the settings its operators require of every program
GPU_VARS = ("CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS")
VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.]+)?")
STANDIN_KEY = "sk-kernelbench-stand-in"   # what a CLI pointed at the stand-in sends as its key
STDERR_NAME = "stderr.log"
TRANSCRIPT = "transcript.jsonl"   # the run dir's transcript, when it is a JSONL stream or session log
EVENTS = "events.jsonl"           # the CLI's stdout stream, kept beside a transcript found elsewhere


@dataclass
class AgentContext:
    """Everything an adapter needs to launch and read back one session."""

    spec: AgentSpec
    prompt: str
    workspace: Path
    home: Path                    # the agent's own home: copies of its config, its session files
    run_dir: Path                 # where stdout, stderr and the transcript are written (the staging run dir)
    problem: Problem
    budget_s: float
    run_id: str = ""
    shapes: str = "full"                                    # full | smoke: what the run is graded on
    options: dict[str, Any] = field(default_factory=dict)   # per-agent settings from the sweep file
    env: dict[str, str] = field(default_factory=dict)       # from the harness: CUDA_VISIBLE_DEVICES, ...
    model_server: str | None = None     # a model server's base URL (the stand-in): the CLI talks to it, not the API
    sandboxed: bool = True
    workspace_top: Path | None = None   # the folder the sandbox binds where it holds `workspace` deeper down

    @property
    def problem_id(self) -> str:
        return self.problem.id

    @property
    def stdout_path(self) -> Path:
        return self.run_dir / "stdout.jsonl"

    @property
    def stderr_path(self) -> Path:
        return self.run_dir / STDERR_NAME


@dataclass
class AgentReport:
    """What the adapter read back after the process ended."""

    transcript: str | None = None          # file name in the run dir
    transcript_format: str | None = None
    session_id: str | None = None
    complete: bool = False
    provider_error: ProviderError | None = None
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float | None = None
    cost_is_estimate: bool = False
    notes: list[str] = field(default_factory=list)


class AgentAdapter(ABC):
    name: ClassVar[str]
    executable: ClassVar[str]
    install_hint: ClassVar[str]
    efforts: ClassVar[tuple[str, ...] | None] = None   # None: any value is passed on; (): no effort setting
    config_files: ClassVar[tuple[str, ...]] = ()      # relative to the real home: copied into the agent's home
    env_keys: ClassVar[tuple[str, ...]] = ()          # credentials and settings passed through when set
    scripted: ClassVar[bool] = False
    # versions run end to end through `kernelbench run` against the model stand-in (pinned in clis/package.json)
    verified: ClassVar[tuple[str, ...]] = ()

    # ------------------------------------------------------------------ before the run

    def find_executable(self) -> Path:
        path = shutil.which(self.executable)
        if not path:
            raise KernelBenchError(f"the {self.name} agent needs `{self.executable}`, which is not on PATH",
                                   hint=f"install it: {self.install_hint}")
        return Path(path)

    def validate(self, spec: AgentSpec, options: dict[str, Any]) -> None:
        if spec.effort is None or self.efforts is None:
            return
        if not self.efforts:
            raise KernelBenchError(f"{self.name} has no reasoning-effort setting, but '@{spec.effort}' was given",
                                   hint=f"drop '@{spec.effort}' (choose a model variant instead)")
        if spec.effort not in self.efforts:
            raise KernelBenchError(f"{self.name} does not know effort '{spec.effort}'",
                                   hint=f"use one of: {', '.join(self.efforts)}")

    def version(self) -> str | None:
        """What `CLI --version` prints (its first version-like word), or None when it says nothing usable."""
        try:
            proc = subprocess.run([str(self.find_executable()), "--version"], capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        match = VERSION_RE.search(proc.stdout + "\n" + proc.stderr)
        return match.group(0) if match else None

    def unverified_note(self, version: str | None) -> str | None:
        """Why this version is not known to work, and what to do; None when it is one verified end to end."""
        if self.scripted or not self.verified or version in self.verified:
            return None
        return (f"{self.name} {version or '(version unknown)'} has not been verified end to end here (verified: "
                f"{', '.join(self.verified)}); its flags, session files or errors may differ. Install the verified "
                f"version (npm ci --prefix clis; PATH=$PWD/clis/node_modules/.bin:$PATH) or check this run's "
                f"transcript by hand")

    def prepare_home(self, ctx: AgentContext) -> None:
        """Copy this CLI's own config and credentials (nothing else of the real home) into the agent's home; or,
        pointed at a model server, write the config that sends it there (and no real credential)."""
        if ctx.model_server:
            ctx.env.update(self.use_model_server(ctx, ctx.model_server))
            return
        real_home = Path(os.environ.get("HOME") or Path.home())
        for rel in self.config_files:
            source = real_home / rel
            if source.is_file():
                target = ctx.home / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
                target.chmod(0o600)

    def use_model_server(self, ctx: AgentContext, url: str) -> dict[str, str]:
        """Point the CLI at the model server at `url`: write its config into `ctx.home`, return the variables it
        needs (a placeholder key: the stand-in checks none)."""
        raise KernelBenchError(f"the {self.name} agent cannot be pointed at a model server",
                               hint="use claude, codex, gemini, opencode or kimi with --model-server/--stand-in")

    @abstractmethod
    def command(self, ctx: AgentContext) -> list[str]:
        """The argv that starts one non-interactive session on `ctx.prompt`."""

    def stdin(self, ctx: AgentContext) -> str | None:
        return None

    def live(self, ctx: AgentContext) -> AbstractContextManager:
        """Entered while the agent runs (e.g. to write a transcript as its events arrive)."""
        return nullcontext()

    def environment(self, ctx: AgentContext) -> dict[str, str]:
        """Exactly the variables the agent sees: no inherited secrets besides its own credentials."""
        exe_dirs = [str(p.parent) for p in self.runtime_executables()]
        path = _unique(exe_dirs + [str(Path(sys.executable).parent), "/usr/local/cuda/bin", "/usr/local/bin",
                                   "/usr/bin", "/bin"])
        env = {"HOME": str(ctx.home), "PATH": os.pathsep.join(path), "TMPDIR": "/tmp", "LANG": "C.UTF-8",
               "LC_ALL": "C.UTF-8", "TERM": "dumb", "USER": os.environ.get("USER", "agent"), "NO_COLOR": "1",
               "XDG_CONFIG_HOME": str(ctx.home / ".config"), "XDG_DATA_HOME": str(ctx.home / ".local/share"),
               "XDG_CACHE_HOME": str(ctx.home / ".cache"), "XDG_STATE_HOME": str(ctx.home / ".local/state")}
        passed = (*PROXY_VARS, *GPU_VARS) + (() if ctx.model_server else self.env_keys)
        for key in passed:
            if os.environ.get(key):
                env[key] = os.environ[key]
        if ctx.model_server:   # the loopback must not go through a proxy
            env["NO_PROXY"] = env["no_proxy"] = ",".join(filter(None, [env.get("NO_PROXY"), "127.0.0.1,localhost"]))
        env.update(ctx.env)
        env.update(self.extra_env(ctx))
        return env

    def extra_env(self, ctx: AgentContext) -> dict[str, str]:
        return {}

    def runtime_executables(self) -> list[Path]:
        """Executables the CLI needs on PATH (itself and, for npm packages, node)."""
        found = [self.find_executable()]
        node = shutil.which("node")
        if node:
            found.append(Path(node))
        return found

    def runtime_paths(self) -> list[Path]:
        """Folders to mount read-only so the CLI can run inside the sandbox (its install, its runtime)."""
        paths = []
        for exe in self.runtime_executables():
            paths.append(exe.parent)
            paths.append(_install_root(Path(os.path.realpath(exe))))
        return paths

    # ------------------------------------------------------------------ after the run

    @abstractmethod
    def collect(self, ctx: AgentContext, proc: ProcessResult) -> AgentReport:
        """Place the transcript in the run dir and read completion, provider errors and usage."""

    # ------------------------------------------------------------------ shared helpers

    @staticmethod
    def keep_stdout_as_transcript(ctx: AgentContext, name: str = TRANSCRIPT) -> AgentReport:
        """For CLIs whose event stream on stdout is the transcript: move it into the run dir under `name`."""
        report = AgentReport()
        if ctx.stdout_path.is_file():
            ctx.stdout_path.rename(ctx.run_dir / name)
            report.transcript = name
        return report

    @staticmethod
    def keep_stdout_as_events(ctx: AgentContext) -> Path:
        """For CLIs whose transcript is a session file found after the run: keep the stream as `events.jsonl`."""
        events = ctx.run_dir / EVENTS
        if ctx.stdout_path.is_file():
            ctx.stdout_path.rename(events)
        return events

    @staticmethod
    def adopt_session_file(ctx: AgentContext, report: AgentReport, found: Path | None, missing_note: str) -> None:
        """Copy the CLI's own session file into the run dir as the transcript (keeping its suffix, .json or
        .jsonl); without one, the kept stream is the transcript and `missing_note` says why."""
        if found is not None:
            name = "transcript" + found.suffix
            (ctx.run_dir / name).write_bytes(found.read_bytes())
            report.transcript = name
        elif (ctx.run_dir / EVENTS).is_file():
            report.transcript = EVENTS
            report.notes.append(missing_note)

    def finish(self, ctx: AgentContext, report: AgentReport, proc: ProcessResult,
               stream: Session | None = None) -> AgentReport:
        """The end of every `collect`, from the transcript as the transcripts stage parsed it (the viewer reads the
        same): completion, the provider error the CLI recorded (in the transcript or, beside it, its `stream`),
        else one stderr reports; usage and cost."""
        session = self.parsed(ctx, report)
        # the stream beside the transcript (None where the stream is the transcript)
        beside = stream if stream is not None and report.transcript != EVENTS else None
        notices = [*((EVENTS, n) for n in (beside.provider_errors if beside is not None else [])),
                   *((report.transcript, n) for n in (session.provider_errors if session is not None else []))]
        if session is not None:
            # the stream beside the session file has a say too: Codex writes task_complete after a failed turn
            report.complete = self.completed(session, proc) and \
                (beside.complete if beside is not None else True)
            self.usage_from(report, session)
        report.provider_error = first_error(provider_error_of(notices, report.complete),
                                            stderr_provider_error(ctx.stderr_path))
        return report

    def completed(self, session: Session, proc: ProcessResult) -> bool:
        """Whether the session finished, as its transcript shows it."""
        return session.complete

    def parsed(self, ctx: AgentContext, report: AgentReport) -> Session | None:
        if not report.transcript:
            return None
        return parse_transcript(ctx.run_dir / report.transcript, report.notes)

    @staticmethod
    def usage_from(report: AgentReport, session: Session) -> None:
        report.transcript_format = session.format
        report.tokens = Tokens(**session.tokens.model_dump())
        if session.cost_usd is not None:
            report.cost_usd, report.cost_is_estimate = session.cost_usd, session.cost_is_estimate
        report.session_id = report.session_id or session.session_id


def parse_stream(path: Path, report: AgentReport) -> Session | None:
    """A CLI's event stream kept beside its session file, parsed like a transcript: it names the session (the
    session file is found by that id) and may record errors the session file does not."""
    if not path.is_file():
        return None
    stream = parse_transcript(path, report.notes)
    if stream is not None:
        report.session_id = stream.session_id
    return stream


def parse_transcript(path: Path, notes: list[str]) -> Session | None:
    """A transcript through the transcripts stage's parsers; a parser bug must not lose the run, so it is
    noted instead."""
    from kernelbench.transcripts.loader import load

    try:
        return load(path)
    except Exception as exc:
        notes.append(f"{path.name} could not be read: {type(exc).__name__}: {exc}")
        return None


def provider_error_of(notices: list[tuple[str | None, Any]], complete: bool) -> ProviderError | None:
    """The run's provider error from the CLI's own records, (file, notice) in order: its last error that it did not
    retry; or, when the session ended unfinished while the CLI was still retrying, that retry's error."""
    final = [(file, n) for file, n in notices if not n.retried]
    if final:
        file, notice = final[-1]
        retryable = notice.retryable if notice.retryable is not None else status_retryable(notice.status)
        return classify_error_text(notice.message, _where(file, notice.line), retryable)
    if notices and not complete:
        # some CLIs retry even a refused key: the status decides, not the CLI's persistence
        file, notice = notices[-1]
        retryable = status_retryable(notice.status)
        return ProviderError(message=f"the session ended while the CLI was retrying: {notice.message}"[:2000],
                             retryable=True if retryable is None else retryable, source=_where(file, notice.line))
    return None


def status_retryable(status: int | None) -> bool | None:
    """What an HTTP status says: 408, 409, 429 and 5xx are worth retrying, other 4xx are not."""
    if status is None:
        return None
    return status in (408, 409, 429) or status >= 500


def _where(transcript: str | None, line: int | None) -> str:
    return f"{transcript or 'transcript'}" + (f" line {line}" if line else "")


def _install_root(real: Path) -> Path:
    """An npm package needs its whole node_modules tree; a single binary needs its folder."""
    parts = real.parts
    if "node_modules" in parts:
        return Path(*parts[: parts.index("node_modules") + 1])
    if real.parent.name == "bin":
        return real.parent.parent if real.parent.parent != Path("/usr") else real.parent
    return real.parent


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


# ---------------------------------------------------------------------------------------------- streams

def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL stream, through the transcripts stage's line reader (banner lines and a
    half-written last line are skipped)."""
    from kernelbench.transcripts.reader import iter_lines

    if not path.is_file():
        return
    for line in iter_lines(path):
        if line.problem is None and isinstance(line.record, dict):
            yield line.record


RETRYABLE = re.compile(r"\b(429|500|502|503|504|529)\b|rate.?limit|overloaded|too many requests|timed? ?out|"
                       r"ECONNRESET|ETIMEDOUT|ECONNREFUSED|socket hang up|service unavailable|"
                       r"internal server error|temporarily unavailable|RESOURCE_EXHAUSTED|UNAVAILABLE|"
                       r"connection (reset|error|refused|lost|closed)|network error", re.IGNORECASE)
FATAL = re.compile(r"\b(401|403)\b|invalid.{0,20}api.?key|authenticat|unauthori[sz]ed|insufficient_quota|"
                   r"billing|credit balance|not_found_error|model.{0,40}not (found|exist|available|supported)|"
                   r"no (allowed|available) providers?|permission denied|PERMISSION_DENIED|forbidden", re.IGNORECASE)
ERROR_WORD = re.compile(r"error|fail|exception|denied|refused|unavailable|exceeded|overloaded|limit", re.IGNORECASE)


def classify_error_text(message: str, source: str, retryable: bool | None = None) -> ProviderError:
    """A provider error from a structured event or a stderr line; `retryable` from the event when it says."""
    if retryable is None:
        retryable = bool(RETRYABLE.search(message)) and not FATAL.search(message)
    return ProviderError(message=message[:2000], retryable=retryable, source=source)


def message_of(payload: object) -> str:
    """The text of an error payload: its `message`, else its `error`, else the whole of it."""
    if isinstance(payload, dict):
        return str(payload.get("message") or payload.get("error") or payload)
    return str(payload)


def error_event(event: dict[str, Any]) -> ProviderError:
    """A provider error from a stream's `error` record."""
    return classify_error_text(message_of(event), "error event")


def stderr_provider_error(path: Path, tail_bytes: int = 256 << 10) -> ProviderError | None:
    """The last stderr line that reports an API/provider failure (the agent's own tools do not write here)."""
    if not path.is_file():
        return None
    with open(path, "rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - tail_bytes))
        lines = handle.read().decode("utf-8", "replace").splitlines()
    for number, line in reversed(list(enumerate(lines))):
        if ERROR_WORD.search(line) and (RETRYABLE.search(line) or FATAL.search(line)):
            return classify_error_text(line.strip(), f"{STDERR_NAME} (line {number + 1} of the tail)")
    return None


def first_error(*candidates: ProviderError | None) -> ProviderError | None:
    return next((c for c in candidates if c is not None), None)
