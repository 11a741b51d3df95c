"""`runs/<run_id>/result.json`: the small header of one attempt (the bulky transcript lives beside it).

The model carries a `version`; older files are upgraded on load (`upgrade_result`), never rewritten in place.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

RESULT_VERSION = 1
RESULT_FILE = "result.json"

RUN_ID_RE = re.compile(r"^(?P<stamp>\d{8}_\d{6})_(?P<harness>[a-z0-9-]+)_(?P<model>.+)_(?P<problem>\d{2}_[a-z0-9_]+?)"
                       r"(?:_t(?P<trial>\d+))?$")


class Outcome(str, Enum):
    PASS = "pass"
    CHECK_FAILED = "check_failed"          # a solution, but wrong on some shape/seed
    NO_SOLUTION = "no_solution"
    TIMEOUT = "timeout"                    # budget ran out and nothing gradable was left
    INCOMPLETE_SESSION = "incomplete_session"
    HARNESS_ERROR = "harness_error"
    PROVIDER_ERROR = "provider_error"
    BENCHMARK_FAILED = "benchmark_failed"  # correct, but timing could not be taken
    INVALID = "invalid"                    # integrity finding of severity error


class Status(str, Enum):
    """What a leaderboard cell shows."""

    PASS = "PASS"
    FAIL = "FAIL"        # a solution, but wrong
    ERR = "ERR"          # no solution to grade
    INVALID = "INVALID"  # caught gaming the rubric


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Tokens(Model):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


class ProviderError(Model):
    message: str
    retryable: bool = False
    source: str = ""  # which structured event or stderr line said so


class Session(Model):
    """What the agent did: process facts, completeness, usage."""

    exit_code: int | None = None
    complete: bool = False
    timed_out: bool = False
    elapsed_s: float | None = None
    budget_s: float | None = None
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None
    cost_is_estimate: bool = False
    transcript: str | None = None         # file name inside the run directory
    transcript_format: str | None = None
    sandboxed: bool | None = None         # None: not recorded
    sandbox_note: str = ""
    provider_error: ProviderError | None = None
    notes: list[str] = Field(default_factory=list)  # what the harness noticed (e.g. a session file not found)
    cli_version: str | None = None        # what the agent CLI reported with --version
    model_server: str | None = None       # "stand-in <policy>" or a URL when the CLI was pointed at one


class SeedResult(Model):
    shape_index: int
    seed: int
    case: str = "base"                    # base | stress:<name> | property:<name>
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    worst_index: list[int] | None = None
    message: str = ""


class ShapeResult(Model):
    index: int
    shape: dict[str, Any]
    flops: float | None = None
    bytes: float | None = None
    median_ms: float | None = None
    spread_ms: float | None = None        # interquartile range of the samples
    samples_ms: list[float] = Field(default_factory=list)
    timing_method: str = ""               # events | cuda_graph
    # samples that are the host's time issuing the call, longer than the device's interval (a launch-bound call:
    # its time follows the host, e.g. Python or Triton launch overhead, more than the kernels); None: not recorded
    host_bound_samples: int | None = None
    tflops: float | None = None
    gbps: float | None = None
    fraction: float | None = None         # of the governing ceiling
    baselines_ms: dict[str, float] = Field(default_factory=dict)  # eager / compiled / sota on the same GPU


class Ceiling(Model):
    """The ceiling a score is a fraction of, and the roofs the roofline chart draws."""

    regime: Literal["compute", "memory"]
    dtype: str
    value: float                          # TFLOP/s for compute, GB/s for memory
    unit: Literal["TFLOP/s", "GB/s"]
    peak_tflops: float | None = None      # compute roof of the governing dtype
    dram_gbps: float | None = None        # bandwidth roof
    source: str = ""                      # datasheet or calibration


class Grading(Model):
    has_solution: bool = False
    correct: bool | None = None
    outcome: Outcome = Outcome.NO_SOLUTION
    reasons: list[str] = Field(default_factory=list)
    device: str = ""                      # cuda | cpu
    shapes_mode: str = "full"             # full | smoke
    ceiling: Ceiling | None = None
    checks: list[SeedResult] = Field(default_factory=list)
    shapes: list[ShapeResult] = Field(default_factory=list)
    peak_fraction: float | None = None
    baselines: dict[str, float | None] = Field(default_factory=dict)  # peak_fraction of eager/compiled/sota
    elapsed_s: float | None = None


class Finding(Model):
    """One integrity finding: which exploit class, what evidence, how bad."""

    check: str                            # the guard that produced it (ast_lint, launch_audit, fp8_sass, ...)
    klass: int | None = Field(None, alias="class", ge=1, le=16)  # row of docs/integrity.md
    class_name: str = ""
    severity: Literal["error", "warning", "info"] = "error"
    message: str
    evidence: str = ""                    # file:line, kernel name, measured number
    file: str | None = None
    line: int | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Environment(Model):
    gpu_name: str = ""
    gpu_key: str = ""
    driver: str = ""
    cuda: str = ""
    torch: str = ""
    triton: str = ""
    python: str = ""
    kernelbench: str = ""
    problem_hash: str = ""
    host: str = ""
    isolation: str = ""                   # how the candidate's stages ran: "bwrap", or "none: <why>"


class RunResult(Model):
    version: int = RESULT_VERSION
    run_id: str
    harness: str
    model: str
    effort: str | None = None
    problem: str
    gpu: str                              # hardware profile key (h100_sxm, rtx_pro_6000, ...)
    trial: int = 1
    started: datetime | None = None
    finished: datetime | None = None
    source: str = "harness"               # harness | import:<what> (imported cells have no transcript)
    scripted: bool = False                # a scripted baseline agent, not a model
    session: Session = Field(default_factory=Session)
    grading: Grading = Field(default_factory=Grading)
    integrity: list[Finding] = Field(default_factory=list)
    environment: Environment = Field(default_factory=Environment)

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgrade_result(data) if isinstance(data, dict) else data

    @property
    def agent(self) -> str:
        """harness/model[@effort]: one row of the leaderboard."""
        return agent_label(self.harness, self.model, self.effort)

    @property
    def status(self) -> Status:
        return status_of(self)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2, by_alias=True) + "\n"


def agent_label(harness: str, model: str, effort: str | None) -> str:
    return f"{harness}/{model}" + (f"@{effort}" if effort else "")


def upgrade_result(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older result.json up to RESULT_VERSION (there is only version 1 so far)."""
    version = data.get("version", 1)
    if version > RESULT_VERSION:
        raise ValueError(f"result.json version {version} is newer than this kernelbench understands "
                         f"({RESULT_VERSION}); upgrade kernelbench")
    return data


def status_of(result: RunResult) -> Status:
    grading = result.grading
    if grading.outcome is Outcome.INVALID or any(f.severity == "error" for f in result.integrity):
        return Status.INVALID
    if grading.outcome in (Outcome.PASS, Outcome.BENCHMARK_FAILED) and grading.correct:
        return Status.PASS
    if grading.has_solution:
        return Status.FAIL
    return Status.ERR


def load_result(run_dir: Path) -> RunResult:
    """Load `result.json` from a run directory; errors carry file and line."""
    from kernelbench.fileio import load_json, parse_model

    path = Path(run_dir) / RESULT_FILE
    return parse_model(path, RunResult, load_json(path))
