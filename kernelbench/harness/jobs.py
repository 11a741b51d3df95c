"""One unit of sweep work (agent × problem × trial), runnable in this process, a child process or a Ray task.

`python -m kernelbench.harness.jobs JOB.json` runs one job in a fresh process (the local pool uses it so each
run has its own CUDA_VISIBLE_DEVICES) and prints its summary as the last line of stdout.
"""

from __future__ import annotations

import ctypes
import io
import signal
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kernelbench.harness.agentspec import AgentSpec
from kernelbench.harness.runner import RunRequest, execute_run
from kernelbench.results.run import Outcome, load_result


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str
    options: dict[str, Any] = Field(default_factory=dict)
    problem_dir: str                    # the folder, opened by the process that runs the job
    problem: str = ""                   # its name, as the run will record it ("": the folder's name)
    trial: int
    runs_dir: str
    budget_s: float
    device: str = "cuda"
    shapes: str = "full"
    held_out: bool = True
    sanitizer: bool = False  # the sanitizer stage: off by default until validated on a GPU (docs/grading.md)
    sandboxed: bool = True
    network: bool = True
    gpu: str | None = None
    stand_in: str | None = None         # a model stand-in policy file the CLI is pointed at
    attempt: int = 1

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.agent, self.problem_name, self.trial)

    @property
    def problem_name(self) -> str:
        return self.problem or Path(self.problem_dir).name

    def request(self, runs_dir: Path | None = None, env: dict[str, str] | None = None) -> RunRequest:
        from kernelbench.problems.problem import open_problem

        return RunRequest(agent=AgentSpec.parse(self.agent), problem=open_problem(self.problem_dir),
                          runs_dir=runs_dir or Path(self.runs_dir), budget_s=self.budget_s, trial=self.trial,
                          device=self.device, shapes=self.shapes, held_out=self.held_out,
                          sanitizer=self.sanitizer,
                          sandboxed=self.sandboxed, network=self.network,
                          gpu=self.gpu, options=dict(self.options), env=env or {},
                          stand_in=Path(self.stand_in) if self.stand_in else None)


class JobSummary(BaseModel):
    run_id: str | None = None
    run_dir: str | None = None
    status: str = "ERR"                  # PASS | FAIL | ERR | INVALID
    outcome: str = Outcome.HARNESS_ERROR.value
    peak_fraction: float | None = None
    retryable: bool = False
    error: str | None = None             # the harness could not run it at all

    @classmethod
    def of_run(cls, run_dir: Path) -> "JobSummary":
        result = load_result(run_dir)
        error = result.session.provider_error
        retryable = result.grading.outcome is Outcome.PROVIDER_ERROR and bool(error and error.retryable)
        return cls(run_id=result.run_id, run_dir=str(run_dir), status=result.status.value,
                   outcome=result.grading.outcome.value, peak_fraction=result.grading.peak_fraction,
                   retryable=retryable)


def run_job(job: Job, env: dict[str, str] | None = None) -> JobSummary:
    return JobSummary.of_run(execute_run(job.request(env=env)))


def run_job_packed(job: Job) -> tuple[JobSummary, bytes]:
    """Run into a private folder and return the run directory as a tar archive (for Ray workers, whose disk
    the driver may not share); the driver unpacks it into the real runs folder."""
    with tempfile.TemporaryDirectory(prefix="kernelbench-job-") as tmp:
        run_dir = execute_run(job.request(runs_dir=Path(tmp)))
        summary = JobSummary.of_run(run_dir)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(run_dir, arcname=run_dir.name)
        return summary, buffer.getvalue()


def _die_with_parent() -> None:
    """Linux: SIGTERM this job when the sweep that started it dies, so no orphan keeps writing runs."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _interrupt_once(signum, frame) -> None:
    """The first SIGINT/SIGTERM stops the run through its cleanup (agent group stopped, half-written run
    removed); later ones, e.g. the sweep's SIGTERM after the terminal's Ctrl-C, must not cut that cleanup short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _die_with_parent()
    signal.signal(signal.SIGTERM, _interrupt_once)
    signal.signal(signal.SIGINT, _interrupt_once)
    job = Job.model_validate_json(Path(argv[0]).read_text())
    from kernelbench.errors import KernelBenchError

    try:
        summary = run_job(job)
    except KernelBenchError as exc:
        summary = JobSummary(error=str(exc))
    except KeyboardInterrupt:
        return 130
    print(summary.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
