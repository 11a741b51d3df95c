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

from kernelbench.results.numbers import (
    Count,
    Finite,
    Fraction,
    Index,
    Int64,
    NonNegative,
    Positive,
    Seconds,
    ShapeValue,
    Trial,
    Usd,
    Version,
)

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
    input: Count = 0
    output: Count = 0
    cache_read: Count = 0
    cache_write: Count = 0
    reasoning: Count = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


class ProviderError(Model):
    message: str
    retryable: bool = False
    source: str = ""  # which structured event or stderr line said so


class Session(Model):
    """What the agent did: process facts, completeness, usage."""

    exit_code: Int64 | None = None
    complete: bool = False
    timed_out: bool = False
    elapsed_s: Seconds | None = None
    budget_s: Seconds | None = None
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: Usd | None = None
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
    shape_index: Index
    seed: Int64
    case: str = "base"                    # base | stress:<name> | property:<name>
    passed: bool
    max_abs_err: Finite | None = None
    max_rel_err: Finite | None = None
    worst_index: list[Int64] | None = None
    message: str = ""


class ShapeResult(Model):
    index: Index
    shape: dict[str, ShapeValue]
    flops: NonNegative | None = None
    bytes: NonNegative | None = None
    median_ms: NonNegative | None = None
    spread_ms: NonNegative | None = None  # interquartile range of the samples
    samples_ms: list[NonNegative] = Field(default_factory=list)
    timing_method: str = ""               # events | cuda_graph
    # samples that are the host's time issuing the call, longer than the device's interval (a launch-bound call:
    # its time follows the host, e.g. Python or Triton launch overhead, more than the kernels); None: not recorded
    host_bound_samples: Count | None = None
    tflops: NonNegative | None = None
    gbps: NonNegative | None = None
    fraction: Fraction | None = None      # of the governing ceiling
    baselines_ms: dict[str, NonNegative] = Field(default_factory=dict)  # eager / compiled / sota on the same GPU


class Ceiling(Model):
    """The ceiling a score is a fraction of, and the roofs the roofline chart draws."""

    regime: Literal["compute", "memory"]
    dtype: str
    value: Positive                       # TFLOP/s for compute, GB/s for memory
    unit: Literal["TFLOP/s", "GB/s"]
    peak_tflops: Positive | None = None   # compute roof of the governing dtype
    dram_gbps: Positive | None = None     # bandwidth roof
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
    peak_fraction: Fraction | None = None
    baselines: dict[str, Fraction | None] = Field(default_factory=dict)  # peak_fraction of eager/compiled/sota
    elapsed_s: Seconds | None = None


class Finding(Model):
    """One integrity finding: which exploit class, what evidence, how bad."""

    check: str                            # the guard that produced it (ast_lint, launch_audit, fp8_sass, ...)
    klass: int | None = Field(None, alias="class", ge=1, le=16)  # row of docs/integrity.md
    class_name: str = ""
    severity: Literal["error", "warning", "info"] = "error"
    message: str
    evidence: str = ""                    # file:line, kernel name, measured number
    file: str | None = None
    line: Int64 | None = None

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
    version: Version = RESULT_VERSION
    run_id: str
    harness: str
    model: str
    effort: str | None = None
    problem: str
    gpu: str                              # hardware profile key (h100_sxm, rtx_pro_6000, ...)
    trial: Trial = 1
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
    if isinstance(version, bool) or not isinstance(version, int):
        return data  # not a version: the field's own validation reports it, with its line
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
    from kernelbench.fileio import load_json_model

    return load_json_model(Path(run_dir) / RESULT_FILE, RunResult)
