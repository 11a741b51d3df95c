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
from typing import Any, Literal

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
from kernelbench.base.decks import DECK_RE, MAIN_DECK, kbh_deck_for_gpu
from kernelbench.base.numbers import Fraction, Int64, Seconds, Trial, Usd, Version

__all__ = ["RESULT_FILE", "RESULT_VERSION", "RUN_ID_RE", "Ceiling", "Environment", "Finding", "Grading", "Model",
           "Outcome", "Provenance", "ProviderError", "RunResult", "SeedResult", "Session", "ShapeResult", "Status", "Tokens",
           "agent_label", "load_result", "status_of", "upgrade_result"]

RESULT_VERSION = 2  # 2: the problem's deck, and the provenance of a regraded solution
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


class MappedConcept(Model):
    """How one concept of a problem written for another benchmark maps onto this grader, and what is lost."""

    concept: str
    theirs: str
    ours: str
    lost: str = ""


CheckerOutcome = Literal["PASS", "FAIL", "error"]


class OwnCheckerRun(Model):
    """The published benchmark's own checker run on this machine over the same solution, set up the same way:
    what their harness says of the cell here (beside the board's verdict and ours)."""

    outcome: CheckerOutcome  # error: the checker did not finish (timed out, crashed at start)
    exit_code: int | None = None
    seconds: float = 0.0
    script: str = ""                            # the checker, inside the problem folder (check.py)
    output_tail: str = ""                        # the checker's last lines, as it printed them
    isolation: str = ""                          # how it was confined (as a grading's stages are, or not)


class OwnBenchmarkRun(Model):
    """The published benchmark's own timing script run on this machine over the same solution, set up the same way:
    their timer, their input protocol and their roof on this GPU, so that a peak gap splits into what changed with
    the machine (the board against this) and what changed with the grader (this against ours)."""

    outcome: Literal["timed", "error"]  # error: it did not finish, or printed no peak fraction
    exit_code: int | None = None
    seconds: float = 0.0
    script: str = ""                              # the timing script, inside the problem folder (benchmark.py)
    shape_ms: dict[int, float] = Field(default_factory=dict)  # each shape's median as their script printed it
    peak_fraction: float | None = None           # their geometric mean, of their roof for their GPU
    roof_of: str = ""                            # the GPU whose roof their script divides by (problem.yaml)
    output_tail: str = ""
    isolation: str = ""


class Provenance(Model):
    """Where a regraded solution comes from and what its own benchmark published about it. The solution's text is
    not kept (it is another project's code): its repository, commit, path and hash name it exactly."""

    repository: str                       # https://github.com/<owner>/<name>
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    path: str                             # the solution file inside that repository
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")  # None: the board names no file found there
    board: str                            # the published board the cell comes from (its folder or file name)
    published_run_id: str
    published_status: str                # PASS | FAIL | ERR as the board shows it
    published_peak_fraction: Fraction | None = None
    published_verdict: str | None = None  # the board's annotation verdict, where it gives one
    published_hardware: str = ""
    # the ceiling the board divided this cell's speed by (its GPU's roof for the problem's regime), so a reader can
    # tell how much of a peak gap is the two GPUs' ceilings and not the kernel
    published_ceiling: Ceiling | None = None
    layout: str = ""                      # the problem's folder layout (kernelbench-hard, stanford-kernelbench)
    mapping: list[MappedConcept] = Field(default_factory=list)
    # how the published file was set up to run as its authors had it (kernelbench.harness.rebuild), and what it
    # needs that could not be provided
    adaptations: list[str] = Field(default_factory=list)
    not_provided: list[str] = Field(default_factory=list)
    # why this grading is a second one, made with no other grading on its GPU ("": the cell was graded once): its
    # first grading ran out of memory while another grading shared the GPU, so that verdict was not the solution's own
    graded_again_alone: str = ""
    own_checker: OwnCheckerRun | None = None  # their own checker's verdict here (kernelbench regrade --own-checker)
    own_benchmark: OwnBenchmarkRun | None = None  # their own timing here (kernelbench regrade --own-benchmark)

    @property
    def upstream_url(self) -> str | None:
        """The solution file at its commit, on GitHub (None for a repository elsewhere)."""
        if not self.repository.startswith("https://github.com/"):
            return None
        return f"{self.repository.rstrip('/')}/blob/{self.commit}/{self.path.lstrip('/')}"


class RunResult(Model):
    version: Version = RESULT_VERSION
    run_id: str
    harness: str
    model: str
    effort: str | None = None
    deck: str = Field(MAIN_DECK, pattern=DECK_RE)  # problem identity is (deck, problem)
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
    provenance: Provenance | None = None  # a solution regraded from another benchmark's published board

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
    """Bring an older result.json up to RESULT_VERSION: version 1 had no deck (its problems were ours, or, for a
    cell imported from a KernelBench-Hard board, that board's deck)."""
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int):
        return data  # not a version: the field's own validation reports it, with its line
    if version > RESULT_VERSION:
        raise ValueError(f"result.json version {version} is newer than this kernelbench understands "
                         f"({RESULT_VERSION}); upgrade kernelbench")
    if version < 2 and "deck" not in data:
        imported = str(data.get("source", "")).startswith("import:kernelbench-hard")
        data = {**data, "deck": kbh_deck_for_gpu(str(data.get("gpu", ""))) if imported else MAIN_DECK}
    return {**data, "version": RESULT_VERSION} if version < RESULT_VERSION else data


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
