"""`runs/<run_id>/result.json`: the small header of one attempt (the bulky transcript lives beside it).

The model carries a `version`; older files are upgraded on load (`upgrade_result`), never rewritten in place.
The parts every stage shares (`Grading`, `Finding`, `Outcome`, `Tokens`, `Environment`, ...) are defined in
`kernelbench.base.models` and importable from here too.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from kernelbench.base.models import (
    Ceiling,
    Environment,
    Finding,
    Grading,
    Model,
    Outcome,
    SeedResult,
    ShapeResult,
    Tokens,
)
from kernelbench.base.numbers import Int64, Seconds, Trial, Usd, Version

__all__ = ["RESULT_FILE", "RESULT_VERSION", "RUN_ID_RE", "Ceiling", "Environment", "Finding", "Grading", "Model",
           "Outcome", "ProviderError", "RunResult", "SeedResult", "Session", "ShapeResult", "Status", "Tokens",
           "agent_label", "load_result", "status_of", "upgrade_result"]

RESULT_VERSION = 1
RESULT_FILE = "result.json"

RUN_ID_RE = re.compile(r"^(?P<stamp>\d{8}_\d{6})_(?P<harness>[a-z0-9-]+)_(?P<model>.+)_(?P<problem>\d{2}_[a-z0-9_]+?)"
                       r"(?:_t(?P<trial>\d+))?$")


class Status(str, Enum):
    """What a leaderboard cell shows."""

    PASS = "PASS"
    FAIL = "FAIL"        # a solution, but wrong
    ERR = "ERR"          # no solution to grade
    INVALID = "INVALID"  # caught gaming the rubric


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
